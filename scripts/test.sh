#!/usr/bin/env bash
# Every test: set up .venv on first use, lint (ruff) the code and the chapters, then pytest on
# the packages, the grader and (nbval, chapters/conftest.py) the chapters, made into notebooks
# from their text sources, in TEST_WORKERS (default 2) pytest-xdist processes that take whole
# files (tests/conftest.py). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
export MPLBACKEND=Agg PYTHONHASHSEED=0 OMP_WAIT_POLICY=PASSIVE
echo "== ruff: the packages, the tests and the chapters' code" >&2
"$VENV/bin/ruff" check .
"$VENV/bin/python" -m pytest tests chapters --nbval-lax --nbval-cell-timeout=600 \
    -n "${TEST_WORKERS:-2}" --dist loadfile -p no:cacheprovider "$@"
