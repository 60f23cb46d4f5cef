#!/usr/bin/env bash
# Create (first use) or refresh (pyproject.toml changed) the project's virtual environment.
# Usage: source scripts/venv.sh   -> sets VENV and PY, puts .venv/bin first on PATH.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${ATTNLAB_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"
stamp="$VENV/.installed-$(cat "$ROOT/pyproject.toml" "$ROOT/attnlab/pyproject.toml" | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
    echo "== setting up $VENV (first use or pyproject.toml changed)" >&2
    [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
    log="$VENV/pip-install.log"
    pip_install() {  # quiet unless it fails; the full log stays in $VENV/pip-install.log
        "$VENV/bin/python" -m pip install -q "$@" >>"$log" 2>&1 || { tail -n 40 "$log" >&2; return 1; }
    }
    pip_install --upgrade pip
    # torch first, pinned, so nothing resolves a CUDA build.
    pip_install "torch==2.13.0"
    pip_install -e "$ROOT/attnlab"  # the student kit, its own distribution
    pip_install -e "$ROOT[dev]"
    "$VENV/bin/python" -m ipykernel install --sys-prefix --name python3 >/dev/null 2>&1 || true
    rm -f "$VENV"/.installed-*
    touch "$stamp"
fi
export VENV PATH="$VENV/bin:$PATH"
PY="$VENV/bin/python"
export PY
