"""Resource limits of one notebook's sandbox (plain data, no heavy imports)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields


@dataclass(frozen=True)
class Limits:
    """What one student's notebook may use; every limit costs that student a cell, never the batch.

    Times are seconds; sizes in MiB unless named otherwise. Cell and notebook times count the
    time the notebook's process was not waiting for a CPU (a loaded machine does not use them up;
    its sleeps do), or the CPU time its processes took together over its `threads` when that is
    larger, never more than `wall_factor` times the limit in wall-clock time.
    `memory_mb` bounds the private memory one process adds to the warm zygote (RLIMIT_DATA, and
    the address space); with a cgroup, all of the notebook's processes, tmpfs and shared memory
    together. `procs` bounds its tasks (processes and threads).
    """

    cell_seconds: float = 60.0
    notebook_seconds: float = 600.0
    grace_seconds: float = 2.0  # after the soft limit (an exception in the cell) before SIGKILL
    wall_factor: float = 10.0  # a limit never stretches past this many times itself in wall-clock time
    memory_mb: int = 4096
    disk_mb: int = 256  # the private /tmp (tmpfs) and the largest file the notebook may write
    max_files: int = 10_000  # files (inodes) in the private /tmp and /dev/shm
    procs: int = 256
    open_files: int = 256
    cell_output_bytes: int = 1 << 20  # outputs of one cell, truncated with a note beyond this
    total_output_bytes: int = 8 << 20  # outputs of one notebook
    cell_output_items: int = 500  # output pieces (print calls merge; display() calls do not) of one cell
    total_output_items: int = 5000  # of one notebook
    report_bytes: int = 64 << 20  # hidden-check results one notebook may send
    reports_per_cell: int = 64  # hidden-check reports one cell may send
    max_outcomes: int = 1000  # results in one report (one per trial)
    judge_seconds: float = 60.0  # CPU time the grader may spend judging one notebook's results
    judge_memory_mb: int = 2048  # memory of the judge process (its cgroup's memory.max, else RLIMIT_DATA)
    files_bytes: int = 64 << 20  # the submission's other files copied into the sandbox
    max_restarts: int = 8  # crashed processes replaced per notebook before the rest is not run
    threads: int = 0  # torch threads in the notebook (0: cores / workers)
    network: bool = False  # True keeps the host's network (not recommended)
    sandbox: str = "auto"  # auto: bubblewrap, as root or in a user namespace; userns: the latter even as root;
    # none: NO isolation at all (unsafe; for machines without namespaces)
    cgroup: str | None = None  # a cgroup v2 directory for per-notebook cgroups (else $AUTOGRADER_CGROUP)
    allow_paths: tuple[str, ...] = ()  # more directories the notebook may read (read-only), e.g. a data set
    hide_paths: tuple[str, ...] = ()  # paths hidden even inside an allowed directory

    def to_dict(self) -> dict:
        """Plain dict (sent to the worker as JSON)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Limits:
        """Inverse of `to_dict`, ignoring unknown keys."""
        names = {f.name for f in fields(cls)}
        d = {k: v for k, v in d.items() if k in names}
        for key in ("hide_paths", "allow_paths"):
            if key in d:
                d[key] = tuple(d[key])
        return cls(**d)
