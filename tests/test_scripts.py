"""The README's commands set up what they need: scripts/system.sh installs the missing Debian packages (or says in
one line which, and how), and `source scripts/venv.sh` leaves the caller's shell as it was.

system.sh runs here in a private mount namespace (`unshare -m`, or `unshare -rm` in a user namespace when not
root) where /usr/bin/bwrap is covered by a file that cannot be executed, so the machine's packages stay as they
are; Chromium and its driver are looked for where $CHROMIUM and $CHROMEDRIVER say (here: nowhere yet), and a
fake apt-get on PATH records its calls and "installs" by uncovering or creating them.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SYSTEM = ROOT / "scripts" / "system.sh"
BWRAP = Path("/usr/bin/bwrap")

FAKE_APT = r"""#!/bin/bash
echo "$*" >> "$CALLS"
[ "$1" = install ] || exit 0
[ -n "${APT_FAILS:-}" ] && { echo "E: Unable to locate package $2" >&2; exit 100; }
for p in "$@"; do
    case "$p" in
        bubblewrap) umount /usr/bin/bwrap ;;
        chromium) printf '#!/bin/sh\n' > "$CHROMIUM"; chmod +x "$CHROMIUM" ;;
        chromium-driver) printf '#!/bin/sh\n' > "$CHROMEDRIVER"; chmod +x "$CHROMEDRIVER" ;;
    esac
done
"""


def _namespace() -> list[str]:
    """How to enter a private mount namespace here (skip where none can be made)."""
    if shutil.which("unshare") is None or not BWRAP.exists():
        pytest.skip("needs unshare and /usr/bin/bwrap to cover")
    for cmd in (["unshare", "-m"], ["unshare", "-rm"]):
        if subprocess.run([*cmd, "true"], capture_output=True).returncode == 0:
            return cmd
    pytest.skip("no mount namespace can be made here")


def system(lane: str, tmp_path: Path, *, apt_fails: bool = False, uid: int | None = None,
           cover_bwrap: bool = True) -> tuple[subprocess.CompletedProcess, list[str]]:
    """`bash scripts/system.sh LANE` with bwrap, Chromium and its driver absent: (the run, apt-get's calls)."""
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    (fake / "apt-get").write_text(FAKE_APT)
    (fake / "apt-get").chmod(0o755)
    if uid is not None:  # `id -u` says so; sudo is covered below
        (fake / "id").write_text(f"#!/bin/sh\necho {uid}\n")
        (fake / "id").chmod(0o755)
    cover = tmp_path / "not-executable"
    cover.write_text("")
    covered = ([BWRAP] if cover_bwrap else []) + ([Path(p) for p in ("/usr/bin/sudo", "/bin/sudo")
                                                  if uid is not None and Path(p).exists()])
    mounts = "".join(f"mount --bind {cover} {p} && " for p in covered)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "CALLS": str(tmp_path / "calls"),
           "CHROMIUM": str(tmp_path / "chromium"), "CHROMEDRIVER": str(tmp_path / "chromedriver"),
           "ATTNLAB_VENV": str(ROOT / ".venv")}
    if apt_fails:
        env["APT_FAILS"] = "1"
    run = subprocess.run([*_namespace(), "bash", "-c", f"{mounts}bash {SYSTEM} {lane} && "
                          "{ [ -x /usr/bin/bwrap ] || { echo 'bwrap still missing' >&2; exit 9; }; }"],
                         env=env, capture_output=True, text=True, timeout=120)
    calls = (tmp_path / "calls").read_text().splitlines() if (tmp_path / "calls").exists() else []
    return run, calls


def test_the_test_lane_installs_bubblewrap_chromium_and_its_driver(tmp_path: Path) -> None:
    run, calls = system("test", tmp_path)
    assert run.returncode == 0, run.stderr
    assert calls == ["update -q", "install -y -q bubblewrap chromium chromium-driver"]
    assert os.access(tmp_path / "chromium", os.X_OK) and os.access(tmp_path / "chromedriver", os.X_OK)


@pytest.mark.parametrize("lane", ["main", "fast"])
def test_the_main_job_and_the_fast_lane_install_only_bubblewrap(tmp_path: Path, lane: str) -> None:
    run, calls = system(lane, tmp_path)
    assert run.returncode == 0, run.stderr
    assert calls == ["update -q", "install -y -q bubblewrap"]


def test_nothing_missing_installs_nothing(tmp_path: Path) -> None:
    run, calls = system("main", tmp_path, cover_bwrap=False)
    assert run.returncode == 0 and calls == [] and run.stderr == ""


def _one_line(run: subprocess.CompletedProcess) -> str:
    """The error: one line on stderr after the progress line, no traceback or apt log."""
    lines = [line for line in run.stderr.splitlines() if not line.startswith("== ")]
    assert run.returncode == 1 and len(lines) == 1, run.stderr
    return lines[0]


def test_a_failed_install_stops_with_one_line_naming_the_packages(tmp_path: Path) -> None:
    run, calls = system("test", tmp_path, apt_fails=True)
    line = _one_line(run)
    assert line.startswith("scripts/test.sh needs the Debian packages bubblewrap chromium chromium-driver:")
    assert "apt-get install -y bubblewrap chromium chromium-driver" in line and "Unable to locate" in line
    assert calls[0] == "update -q"


def test_without_root_or_sudo_it_says_what_to_run_and_installs_nothing(tmp_path: Path) -> None:
    run, calls = system("main", tmp_path, uid=1000)
    line = _one_line(run)
    assert line.startswith("scripts/main.sh needs the Debian packages bubblewrap:")
    assert "`sudo apt-get update && sudo apt-get install -y bubblewrap`" in line and "sudo is not here" in line
    assert calls == []


# ----------------------------------------------------------------------------- scripts/venv.sh

SHELL_STATE = 'echo "$(set +o; shopt -p)"'


def _sourced(prelude: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """bash: PRELUDE, the shell's options, `source scripts/venv.sh`, its status, the options again, then a failing
    command and a line after it (an interactive shell that `set -e` leaked into would close there)."""
    script = (f"{prelude}\n{SHELL_STATE}\necho ---\nsource scripts/venv.sh\necho \"status $?\"\necho ---\n{SHELL_STATE}\n"
              "false\necho still running")
    return subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})


@pytest.mark.parametrize("prelude", ["set +euo pipefail", "set -u; shopt -s nullglob"])
def test_sourcing_venv_leaves_the_shell_options_as_they_were(prelude: str) -> None:
    run = _sourced(prelude)
    before, status, after = run.stdout.split("---\n")
    assert status.strip() == "status 0", run.stderr
    assert before == after.removesuffix("still running\n")
    assert run.stdout.endswith("still running\n")


def test_a_failed_set_up_returns_non_zero_and_the_shell_goes_on(tmp_path: Path) -> None:
    run = _sourced("set +e", env={"ATTNLAB_VENV": str(tmp_path / "venv"), "PYTHON": "false"})
    assert "status 1" in run.stdout and run.stdout.endswith("still running\n")
    assert run.stderr.startswith("scripts/venv.sh: `false` cannot read pyproject.toml"), run.stderr
