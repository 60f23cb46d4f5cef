#!/usr/bin/env bash
# The main job: install the Debian packages it needs when missing (scripts/system.sh: bubblewrap, and
# python3-venv where ensurepip is missing), set up .venv on first use, build both editions of the book, then
# grade the bundled example class end to end and print its gradebook.
#   _build/html/index.html           -> links to both editions
#   _build/student/html, _build/solutions/html
#   _build/example_class/             the graded example class (feedback, report, CSVs)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/system.sh main
source scripts/venv.sh
export MPLBACKEND=Agg PYTHONHASHSEED=0 OMP_WAIT_POLICY=PASSIVE
start=$SECONDS
echo "== building the book: both editions, chapters executed once, the student edition audited"
book=0
attnbook "$@" || book=$?
if [ "$book" -eq 0 ]; then
    test -f _build/student/html/index.html && test -f _build/solutions/html/index.html
    test -f _build/html/index.html  # attnbook writes it (publish.build.write_landing)
    echo "== book built in $((SECONDS - start)) s: _build/html/index.html links _build/student/html and _build/solutions/html"
else
    rm -f _build/html/index.html  # nothing to publish: a chapter failed, Sphinx failed, or the student edition leaks
    echo "== the book FAILED (above: a chapter, Sphinx, or an answer the student edition shows); grading anyway" >&2
fi
bash scripts/grade_example_class.sh _build/example_class/course
echo "== main job done in $((SECONDS - start)) s"
exit "$book"
