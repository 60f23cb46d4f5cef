#!/usr/bin/env bash
# Every test: set up .venv on first use, then pytest on the packages, the grader and
# (nbval) the chapters' source notebooks. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/venv.sh
export MPLBACKEND=Agg PYTHONHASHSEED=0 OMP_WAIT_POLICY=PASSIVE
"$VENV/bin/python" -m pytest tests chapters --nbval-lax --nbval-cell-timeout=600 \
    -p no:cacheprovider "$@"
