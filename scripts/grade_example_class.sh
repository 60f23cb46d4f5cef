#!/usr/bin/env bash
# Grade the bundled example class end to end with the instructor CLI:
# release -> example-class zip -> collect -> grade -> feedback -> export -> report -> gradebook.
# Usage: bash scripts/grade_example_class.sh [COURSE_DIR] [--chapters ch1 ch2 ...]
# Everything lands in COURSE_DIR (default _build/example_class/course); rerunning starts afresh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
export MPLBACKEND=Agg PYTHONHASHSEED=0
COURSE="${1:-_build/example_class/course}"
shift $(( $# > 0 ? 1 : 0 ))
CHAPTERS=("$@")
[ ${#CHAPTERS[@]} -gt 0 ] && [ "${CHAPTERS[0]}" = "--chapters" ] && CHAPTERS=("${CHAPTERS[@]:1}")
OUT="$(dirname "$COURSE")"
AG="$VENV/bin/autograder"
CH=()
[ ${#CHAPTERS[@]} -gt 0 ] && CH=(--chapters "${CHAPTERS[@]}")
rm -rf "$COURSE"
mkdir -p "$OUT"
start=$SECONDS

echo "== release -> $COURSE"
"$AG" release --course "$COURSE" "${CH[@]}"
echo "== example class -> $OUT/example_class.zip"
"$AG" example-class --course "$COURSE" --zip "$OUT/example_class.zip" "${CH[@]}"
echo "== collect"
"$AG" collect --course "$COURSE" "$OUT/example_class.zip"
echo "== grade"
"$AG" grade --course "$COURSE" --workers 2
echo "== feedback"
"$AG" feedback --course "$COURSE"
echo "== export"
"$AG" export --course "$COURSE" --format csv -o "$OUT/grades.csv"
"$AG" export --course "$COURSE" --format csv --cells -o "$OUT/grades_cells.csv"
"$AG" export --course "$COURSE" --format canvas -o "$OUT/grades_canvas.csv"
echo "== report"
"$AG" report --course "$COURSE"
echo "== gradebook"
"$AG" gradebook --course "$COURSE"
echo "== example class graded in $((SECONDS - start)) s: feedback in $COURSE/feedback, plots in $COURSE/report, CSVs in $OUT"
