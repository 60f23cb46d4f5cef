#!/usr/bin/env bash
# Grade the bundled example class end to end with the instructor CLI:
# release -> deadlines and late policy -> example-class zip -> collect -> grade -> manual grading (export, a
# scripted instructor, import) -> feedback -> similarity -> export -> report -> gradebook.
# Usage: bash scripts/grade_example_class.sh [COURSE_DIR] [--chapters ch1 ch2 ...]
# Everything lands in COURSE_DIR (default _build/example_class/course); rerunning starts afresh.
# A manually graded prose question is added to the first chapter (until the chapters have their own);
# EXAMPLE_PROSE=0 leaves it out.
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
PROSE=()
[ "${EXAMPLE_PROSE:-1}" = "1" ] && PROSE=(--add-prose-question)
rm -rf "$COURSE"
mkdir -p "$OUT"
start=$SECONDS

echo "== release -> $COURSE"
"$AG" release --course "$COURSE" "${CH[@]}"
echo "== due dates and late policy (the example class is due 2025-01-31 23:00 UTC)"
"$AG" deadlines --course "$COURSE" --due "2025-01-31 23:00" --late per-day --per-day 10% --cap 50% --grace 15
echo "== example class -> $OUT/example_class.zip"
"$AG" example-class --course "$COURSE" --zip "$OUT/example_class.zip" "${CH[@]}" "${PROSE[@]}"
echo "== collect (grace's upload is late; linus's renamed notebook is placed by its content; ken's .py is not)"
"$AG" collect --course "$COURSE" "$OUT/example_class.zip"
echo "== grade (the late policy is applied)"
"$AG" grade --course "$COURSE" --workers 2
echo "== manual grading: export the answers, a scripted instructor fills the CSV, import it"
"$AG" manual export --course "$COURSE"
if [ -f "$COURSE/manual/manual_grades.csv" ]; then
    "$PY" -c "from autograder.example_class import grade_prose; import sys; print(grade_prose(sys.argv[1], sys.argv[2]), 'answers scored')" \
        "$COURSE/manual/manual_grades.csv" "$OUT/manual_grades_filled.csv"
    "$AG" manual import --course "$COURSE" "$OUT/manual_grades_filled.csv"
fi
echo "== feedback"
"$AG" feedback --course "$COURSE"
echo "== similar submissions (tim copied hedy's notebook and renamed everything)"
"$AG" similarity --course "$COURSE"
echo "== export"
"$AG" export --course "$COURSE" --format csv -o "$OUT/grades.csv"
"$AG" export --course "$COURSE" --format csv --cells -o "$OUT/grades_cells.csv"
"$AG" export --course "$COURSE" --format canvas -o "$OUT/grades_canvas.csv"
echo "== report"
"$AG" report --course "$COURSE"
echo "== gradebook"
"$AG" gradebook --course "$COURSE"
echo "== example class graded in $((SECONDS - start)) s: feedback in $COURSE/feedback, plots in $COURSE/report,"
echo "   similarity report in $COURSE/similarity/index.html, CSVs in $OUT"
