#!/usr/bin/env bash
# The main job: set up .venv on first use, build the book to _build/html.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
start=$SECONDS
echo "== building the book (chapters executed) -> _build/html"
"$VENV/bin/jupyter-book" build . --path-output . --builder html -W --keep-going 2>&1 | grep -v "is ignored" | tail -n 25
test -f _build/html/index.html
echo "== book built in $((SECONDS - start)) s: open _build/html/index.html"
