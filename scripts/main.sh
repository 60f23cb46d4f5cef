#!/usr/bin/env bash
# The main job: set up .venv on first use, build both editions of the book, then grade
# the bundled example class end to end and print its gradebook.
#   _build/html/index.html           -> links to both editions
#   _build/student/html, _build/solutions/html
#   _build/example_class/             the graded example class (feedback, report, CSVs)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
export MPLBACKEND=Agg PYTHONHASHSEED=0 OMP_WAIT_POLICY=PASSIVE
start=$SECONDS
echo "== building the book: both editions, chapters executed once"
"$PY" -m autograder.book "$@"
echo "== book built in $((SECONDS - start)) s: open _build/html/index.html"
bash scripts/grade_example_class.sh _build/example_class/course
echo "== main job done in $((SECONDS - start)) s"
