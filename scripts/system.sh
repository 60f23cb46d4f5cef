#!/usr/bin/env bash
# The Debian packages a README command needs, installed when missing: `bash scripts/system.sh LANE`, run first
# by scripts/main.sh (LANE main) and scripts/test.sh (LANE fast or test). Each package is checked by what the
# code uses, where it looks for it:
#   bubblewrap       bwrap on /usr/bin:/bin, the fixed PATH the grading workers search (autograder/engine)
#   libseccomp2      libseccomp.so.2 where the dynamic loader finds it: the sandbox's seccomp filter (pyseccomp)
#   python3-venv     `python3 -m venv` with ensurepip (Debian ships it apart), while .venv does not exist yet
#   chromium         $CHROMIUM (default /usr/bin/chromium), the browser test of the book (test lane only)
#   chromium-driver  $CHROMEDRIVER (default /usr/bin/chromedriver), the same test's driver
# Missing ones are installed with `apt-get update` then `apt-get install -y` (as root, or through sudo where it
# exists); where that cannot be done, one line names the packages and the command, and the status is 1.
# Only bash, so that it runs before the virtual environment exists.
set -uo pipefail
lane="${1:?usage: bash scripts/system.sh main|fast|test}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

missing() {  # the packages LANE needs that are not usable now
    [ -x /usr/bin/bwrap ] || [ -x /bin/bwrap ] || echo bubblewrap
    # grep reads all of ldconfig's output (grep -q would stop at the first match, and under pipefail ldconfig's
    # SIGPIPE would then count as "missing": it did, at random)
    /sbin/ldconfig -p 2>/dev/null | grep "libseccomp\.so\.2 " >/dev/null || echo libseccomp2
    if [ ! -x "${ATTNLAB_VENV:-$root/.venv}/bin/python" ] && ! "${PYTHON:-python3}" -c "import ensurepip, venv" 2>/dev/null
    then echo python3-venv
    fi
    if [ "$lane" = test ]; then
        [ -x "${CHROMIUM:-/usr/bin/chromium}" ] || echo chromium
        [ -x "${CHROMEDRIVER:-/usr/bin/chromedriver}" ] || echo chromium-driver
    fi
}

case "$lane" in main|fast|test) ;; *) echo "scripts/system.sh: no lane '$lane' (main, fast or test)" >&2; exit 2;; esac
mapfile -t packages < <(missing)
[ "${#packages[@]}" -eq 0 ] && exit 0
cannot() {  # one line: what is missing, what to run, why it was not done here
    local as=""
    [ "$(id -u)" -eq 0 ] || as="sudo "
    echo "scripts/$([ "$lane" = main ] && echo main || echo test).sh needs the Debian packages ${packages[*]}:" \
         "run \`${as}apt-get update && ${as}apt-get install -y ${packages[*]}\` ($1)" >&2
    exit 1
}
if [ "$(id -u)" -eq 0 ]; then sudo=()
elif command -v sudo >/dev/null; then sudo=(sudo)
else cannot "not root, and sudo is not here"
fi
command -v apt-get >/dev/null || cannot "apt-get is not here"
echo "== installing the Debian packages ${packages[*]} (apt-get update, apt-get install)" >&2
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
"${sudo[@]}" apt-get update -q >"$log" 2>&1 || cannot "apt-get update failed: $(tail -n 1 "$log")"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${packages[@]}" >"$log" 2>&1 \
    || cannot "apt-get install failed: $(tail -n 1 "$log")"
mapfile -t packages < <(missing)
[ "${#packages[@]}" -eq 0 ] || cannot "still not usable after apt-get install"
