"""A memory bound for a trusted process that parses or judges student data.

The judge process, and the instructor's commands that read what students uploaded (collect,
feedback, similarity, the manual export), hold student data in a process of their own. A bound
on that process makes a blow-up (a message that decodes to gigabytes, a notebook that builds a
huge tree) cost only the data it was reading, as the judge's CPU budget does for time:

* a cgroup's `memory.max` where one can be made (under the run's cgroup, `$AUTOGRADER_CGROUP`, or
  this process's own cgroup when its controllers are enabled for children): the process and
  everything it forks, page cache and tmpfs included; the kernel kills the group past it;
* `RLIMIT_DATA` otherwise (private writable memory of the process: allocations fail with
  MemoryError). Never `RLIMIT_AS`: CUDA reserves far more address space than it uses.

    bound = memory_bound(2 << 30, "similarity")             # before starting the process
    proc = subprocess.Popen([...], preexec_fn=bound.preexec)  # or [..., *bound.argv()] and, first thing
    ...                                                       # in its main, MemoryBound.from_argv(...).enter()
    if bound.oom_killed(): ...                                # (a cgroup killed it for memory)
    bound.release()                                           # after it has exited

or, at the start of a process of one's own, `limit_this_process(2 << 30)`.
"""
from __future__ import annotations

import os
import resource
import secrets
from dataclasses import dataclass

from autograder.engine import cgroups


@dataclass(frozen=True)
class MemoryBound:
    """A memory bound for one process to be started: its own cgroup (path) or, without one, RLIMIT_DATA."""

    limit_bytes: int
    cgroup: str | None
    why: str
    made_parent: str | None = None  # a run cgroup made for this bound alone (removed with it)

    def enter(self, above_current: bool = False) -> None:
        """Put the calling process under the bound: enter the cgroup, or set RLIMIT_DATA. Call it first thing
        in the bounded process's main (`argv()` carries the bound there), or pass it as Popen's `preexec_fn`.
        `above_current`: the bound counts from what the process holds now (its imports, a CUDA context: a
        cgroup charges only what is allocated after entering it; RLIMIT_DATA is raised by what is mapped)."""
        if self.cgroup is not None:
            with open(os.path.join(self.cgroup, "cgroup.procs"), "w") as f:
                f.write("0")
        else:
            limit_this_process(self.limit_bytes + (data_bytes() if above_current else 0))

    preexec = enter

    def argv(self) -> list[str]:
        """Command-line words that carry this bound to a process of ours (`from_argv` reads them back)."""
        return ["--memory-bytes", str(self.limit_bytes), "--memory-cgroup", self.cgroup or ""]

    @classmethod
    def from_argv(cls, words: list[str]) -> MemoryBound | None:
        """The bound `argv()` wrote, or None if `words` carry none."""
        if "--memory-bytes" not in words:
            return None
        limit = int(words[words.index("--memory-bytes") + 1])
        cgroup = words[words.index("--memory-cgroup") + 1] if "--memory-cgroup" in words else ""
        return cls(limit, cgroup or None, "")

    def oom_killed(self) -> bool:
        """True if the cgroup killed the process for its memory (always False under RLIMIT_DATA)."""
        return self.cgroup is not None and cgroups.Group(self.cgroup).events().get("oom_kill", 0) > 0

    def release(self) -> None:
        """Remove the cgroup (killing what is left in it); nothing to do under RLIMIT_DATA."""
        if self.cgroup is not None:
            cgroups.Group(self.cgroup).remove()
        if self.made_parent is not None:
            cgroups.teardown(cgroups.Parent(self.made_parent, ""))


def data_bytes() -> int:
    """This process's private writable memory now (VmData, what RLIMIT_DATA counts); 0 if unknown."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) << 10
    except (OSError, ValueError, IndexError):
        pass
    return 0


def limit_this_process(limit_bytes: int) -> None:
    """Bound this process's private writable memory (RLIMIT_DATA; lowers only, never raises a hard limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    new = limit_bytes if hard == resource.RLIM_INFINITY else min(limit_bytes, hard)
    if soft == resource.RLIM_INFINITY or new < soft:
        resource.setrlimit(resource.RLIMIT_DATA, (new, hard))


def memory_bound(limit_bytes: int, name: str, parent: str | None = None, find: bool = True) -> MemoryBound:
    """A bound of `limit_bytes` for a process about to start: a cgroup of its own under `parent` (the run's
    cgroup) or, without `parent` and with `find`, under one `cgroups.setup` finds; else RLIMIT_DATA."""
    made: cgroups.Parent | None = None
    if parent is None and find:
        made = cgroups.setup()
        parent = made.path
    if parent is not None:
        try:
            group = cgroups.Group.create(parent, f"{name}-{os.getpid()}-{secrets.token_hex(3)}",
                                         memory_bytes=limit_bytes, pids=4096)
            return MemoryBound(limit_bytes, group.path, f"{name}: cgroup memory.max {limit_bytes >> 20} MiB",
                               made.path if made is not None else None)
        except OSError as exc:
            why = f"no cgroup ({exc.strerror})"
            if made is not None:
                cgroups.teardown(made)
    else:
        why = f"no cgroup ({made.why})" if made is not None else "no cgroup"
    return MemoryBound(limit_bytes, None, f"{name}: RLIMIT_DATA {limit_bytes >> 20} MiB ({why})")
