#!/usr/bin/env bash
# Every test: install the Debian packages the tests need when missing (scripts/system.sh: bubblewrap, chromium,
# chromium-driver, and python3-venv where ensurepip is missing), set up .venv on first use, lint (ruff) the code
# and the chapters, then pytest on the packages, the grader and (nbval, chapters/conftest.py) the chapters, made
# into notebooks from their text sources, in TEST_WORKERS (default: the cores, 2 to 4) pytest-xdist processes that each take
# whole files, long files first (tests/conftest.py). Extra arguments go to pytest.
#   bash scripts/test.sh          the full lane: every test; the slowest are listed at the end
#   bash scripts/test.sh --fast   ruff and the tests not marked slow: the unit tests, one engine grading run, and
#                                 every chapter once under nbval (as in the full lane: the long demonstrations
#                                 skipped, as the grader skips them; the book's execution runs them)
set -euo pipefail
cd "$(dirname "$0")/.."
lane=test
lane_args=(--durations=25)
if [ "${1:-}" = --fast ]; then
    shift
    lane=fast
    lane_args=(-m "not slow" --durations=10)
fi
bash scripts/system.sh "$lane"
source scripts/venv.sh
export MPLBACKEND=Agg PYTHONHASHSEED=0 OMP_WAIT_POLICY=PASSIVE
echo "== ruff: the packages, the tests and the chapters' code" >&2
"$VENV/bin/ruff" check .
workers=${TEST_WORKERS:-$(( $(nproc) < 2 ? 2 : ($(nproc) > 4 ? 4 : $(nproc)) ))}
"$VENV/bin/python" -m pytest tests chapters --nbval-lax --nbval-cell-timeout=600 \
    -n "$workers" --dist loadfile --no-loadscope-reorder -p no:cacheprovider "${lane_args[@]}" "$@"
