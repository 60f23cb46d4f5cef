#!/usr/bin/env bash
# Create (first use) or refresh (what pyproject.toml installs changed) the project's virtual environment.
# Usage: source scripts/venv.sh   -> sets VENV and PY, puts .venv/bin first on PATH; returns non-zero if the set-up
# failed. Sourcing leaves the caller's shell options as they were (no `set -e` here: an interactive shell that
# sources this keeps running after a failing command), and defines nothing but VENV, PY and PATH.
_attnlab_venv() {
    local root python stamp log
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)" || return 1
    VENV="${ATTNLAB_VENV:-$root/.venv}"
    python="${PYTHON:-python3}"
    # What is installed depends on the two pyproject.toml files less their test and lint settings.
    stamp="$("$python" -c 'import hashlib, json, sys, tomllib
digest = hashlib.sha256()
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        data = tomllib.load(f)
    for tool in ("pytest", "ruff"):
        data.get("tool", {}).pop(tool, None)
    digest.update(json.dumps(data, sort_keys=True).encode())
print(digest.hexdigest()[:16])' "$root/pyproject.toml" "$root/attnlab/pyproject.toml")" \
        || { echo "scripts/venv.sh: \`$python\` cannot read pyproject.toml (Python 3.11 or later is needed)" >&2; return 1; }
    stamp="$VENV/.installed-$stamp"
    if [ ! -f "$stamp" ]; then
        echo "== setting up $VENV (first use, or what pyproject.toml installs changed)" >&2
        if [ ! -x "$VENV/bin/python" ]; then
            "$python" -m venv "$VENV" || { echo "scripts/venv.sh: \`$python -m venv $VENV\` failed" >&2; return 1; }
        fi
        log="$VENV/pip-install.log"
        _attnlab_pip() {  # quiet unless it fails; the full log stays in $VENV/pip-install.log
            "$VENV/bin/python" -m pip install -q "$@" >>"$log" 2>&1 || { tail -n 40 "$log" >&2; return 1; }
        }
        # torch first, pinned, so nothing resolves a CUDA build; the student kit is its own distribution.
        _attnlab_pip --upgrade pip && _attnlab_pip "torch==2.13.0" && _attnlab_pip -e "$root/attnlab" \
            && _attnlab_pip -e "$root[test]"
        local status=$?
        unset -f _attnlab_pip
        [ "$status" -eq 0 ] || { echo "scripts/venv.sh: pip install failed (log: $log)" >&2; return 1; }
        "$VENV/bin/python" -m ipykernel install --sys-prefix --name python3 >/dev/null 2>&1
        rm -f "$VENV"/.installed-*
        touch "$stamp"
    fi
    # matplotlib's font list, built once here: a grading sandbox starts with an empty cache and copies it in
    # (autograder/engine/inside/zygote.py; figures in benchmarks/startup.md)
    if [ ! -d "$VENV/share/attnlab/matplotlib" ]; then
        MPLCONFIGDIR="$VENV/share/attnlab/matplotlib" MPLBACKEND=Agg "$VENV/bin/python" -c "import matplotlib.font_manager" \
            >/dev/null 2>&1 || rm -rf "$VENV/share/attnlab/matplotlib"
    fi
    PY="$VENV/bin/python"
    export VENV PY PATH="$VENV/bin:$PATH"
}
# The status of the last command is the status of `source`: a caller with `set -e` stops on a failed set-up.
if _attnlab_venv; then unset -f _attnlab_venv; else unset -f _attnlab_venv; false; fi
