"""One cgroup (v2) per notebook: memory, processes and CPU share of all its processes together.

rlimits bound each process; a cgroup bounds the notebook: tmpfs and memfd pages, System V
shared memory, every process it forks (however it detaches), and its share of the CPU
against the notebook graded beside it (equal `cpu.weight`, whatever its number of processes).

The grader calls `setup` once per run. It needs a cgroup v2 directory that offers the memory,
pids and cpu controllers and holds no process of its own: `Limits.cgroup`, else
$AUTOGRADER_CGROUP, else the grader's own cgroup when its controllers are already enabled for
children (e.g. the root cgroup of a VM). Prepare one as root with, e.g.:

    mkdir /sys/fs/cgroup/grading && echo "+memory +pids +cpu" > /sys/fs/cgroup/cgroup.subtree_control
    AUTOGRADER_CGROUP=/sys/fs/cgroup/grading autograder grade

Without one (a cgroup v1 or hybrid host, a read-only cgroupfs, not root) `setup` says why, and
the engine relies on the namespaces and rlimits alone (docs/security.md says what that leaves).
"""
from __future__ import annotations

import os
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

NEEDED = ("memory", "pids", "cpu")
ENV = "AUTOGRADER_CGROUP"


@dataclass(frozen=True)
class Parent:
    """The run's cgroup (None: none available) and a sentence saying what holds."""

    path: str | None
    why: str


def v2_mount(mountinfo: str = "/proc/self/mountinfo") -> str | None:
    """Where the cgroup v2 hierarchy is mounted (None if it is not)."""
    try:
        lines = Path(mountinfo).read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        left, _, right = line.partition(" - ")
        if right.split(" ", 1)[0] == "cgroup2":
            return left.split()[4]
    return None


def own_cgroup(proc_cgroup: str = "/proc/self/cgroup") -> str | None:
    """This process's cgroup v2 path (relative to the hierarchy's root)."""
    try:
        for line in Path(proc_cgroup).read_text().splitlines():
            if line.startswith("0::"):
                return line[3:] or "/"
    except OSError:
        pass
    return None


def _words(path: Path) -> set[str]:
    try:
        return set(path.read_text().split())
    except OSError:
        return set()


def setup(explicit: str | None = None, mount: str | None = None) -> Parent:
    """Make this run's cgroup with the controllers enabled for per-notebook children."""
    mount = mount or v2_mount()
    if mount is None:
        return Parent(None, "no cgroup v2 hierarchy is mounted")
    chosen = explicit or os.environ.get(ENV)
    base = Path(chosen) if chosen else Path(mount) / (own_cgroup() or "/").lstrip("/")
    available = _words(base / "cgroup.controllers")
    missing = [c for c in NEEDED if c not in available]
    if missing:
        return Parent(None, f"the cgroup v2 at {base} offers no {', '.join(missing)} controller "
                            "(on a cgroup v1 or hybrid host they belong to v1)")
    if not all(c in _words(base / "cgroup.subtree_control") for c in NEEDED):
        try:
            (base / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in NEEDED))
        except OSError as exc:
            return Parent(None, f"cannot enable {', '.join(NEEDED)} for children of {base} ({exc.strerror}); "
                                f"name a delegated cgroup without processes in ${ENV}")
    run = base / f"autograder-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        run.mkdir()
        (run / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in NEEDED))
    except OSError as exc:
        _rmdir(run)
        return Parent(None, f"cannot create a cgroup under {base} ({exc.strerror})")
    return Parent(str(run), f"own cgroup per notebook under {run} (memory, pids, cpu)")


def teardown(parent: Parent) -> None:
    """Remove the run's cgroup (and any notebook group a crashed worker left)."""
    if parent.path is None:
        return
    run = Path(parent.path)
    for child in run.iterdir() if run.is_dir() else []:
        if child.is_dir():
            Group(str(child)).remove()
    _rmdir(run)


def _rmdir(path: Path, tries: int = 50) -> bool:
    for _ in range(tries):
        try:
            path.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            time.sleep(0.01)
    return False


@dataclass
class Group:
    """One notebook's cgroup."""

    path: str

    @classmethod
    def create(cls, parent: str, name: str, *, memory_bytes: int, pids: int) -> Group:
        """A new cgroup under `parent` with its limits set (OSError if it cannot be made)."""
        group = cls(os.path.join(parent, name))
        os.mkdir(group.path)
        try:
            group._write("memory.max", str(memory_bytes))
            group._write("memory.oom.group", "1")  # out of memory: the whole notebook goes, at once
            group._write("pids.max", str(pids))
            group._write("cpu.weight", "100")  # the same share as every other notebook
            for name, value in (("memory.swap.max", "0"),):
                try:
                    group._write(name, value)
                except OSError:
                    pass  # no swap accounting on this kernel
        except OSError:
            group.remove()
            raise
        return group

    def _write(self, name: str, value: str) -> None:
        with open(os.path.join(self.path, name), "w") as f:
            f.write(value)

    def add(self, pid: int) -> None:
        """Move process `pid` (and so everything it forks later) into this cgroup."""
        self._write("cgroup.procs", str(pid))

    def events(self) -> dict[str, int]:
        """memory.events as numbers (oom, oom_kill, max, ...)."""
        out = {}
        try:
            for line in Path(self.path, "memory.events").read_text().splitlines():
                key, _, value = line.partition(" ")
                out[key] = int(value)
        except (OSError, ValueError):
            pass
        return out

    def cpu_seconds(self) -> float | None:
        """CPU seconds every process of the cgroup took together (cpu.stat's usage_usec; None if unreadable)."""
        try:
            for line in Path(self.path, "cpu.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value) / 1e6
        except (OSError, ValueError):
            pass
        return None

    def kill(self) -> None:
        """SIGKILL every process in the cgroup."""
        try:
            self._write("cgroup.kill", "1")
            return
        except OSError:
            pass
        for _ in range(10):  # kernels before 5.14: kill what is listed until nothing is
            pids = _words(Path(self.path, "cgroup.procs"))
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
            time.sleep(0.01)

    def remove(self) -> None:
        """Kill what is left, then remove the cgroup."""
        if not os.path.isdir(self.path):
            return
        self.kill()
        _rmdir(Path(self.path))
