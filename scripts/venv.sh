#!/usr/bin/env bash
# Create (first use) or refresh (pyproject.toml changed) the project's virtual environment.
# Usage: source scripts/venv.sh   -> sets VENV and PY, puts .venv/bin first on PATH.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${ATTNLAB_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"
stamp="$VENV/.installed-$(sha256sum "$ROOT/pyproject.toml" | cut -c1-16)"
if [ ! -f "$stamp" ]; then
    echo "== setting up $VENV (first use or pyproject.toml changed)" >&2
    [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip >&2
    # torch first, pinned, so nothing resolves a CUDA build.
    "$VENV/bin/python" -m pip install -q "torch==2.13.0" >&2
    "$VENV/bin/python" -m pip install -q -e "$ROOT[dev]" >&2
    "$VENV/bin/python" -m ipykernel install --sys-prefix --name python3 >/dev/null 2>&1 || true
    rm -f "$VENV"/.installed-*
    touch "$stamp"
fi
export VENV PATH="$VENV/bin:$PATH"
PY="$VENV/bin/python"
export PY
