"""Resource limits of one notebook's sandboxed process (plain data, no heavy imports)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields


@dataclass(frozen=True)
class Limits:
    """What one student's notebook may use; every limit costs that student a cell, never the batch.

    Times are wall-clock seconds; sizes in MiB unless named otherwise. `memory_mb` bounds the
    private writable memory the notebook adds on top of the warm worker (RLIMIT_DATA);
    `procs` bounds the tasks (processes and threads) of the sandbox's user (RLIMIT_NPROC).
    """

    cell_seconds: float = 60.0
    notebook_seconds: float = 600.0
    grace_seconds: float = 2.0  # after the soft limit (an exception in the cell) before SIGKILL
    memory_mb: int = 4096
    disk_mb: int = 256  # the private /tmp (tmpfs) and the largest file the notebook may write
    procs: int = 256
    open_files: int = 256
    cell_output_bytes: int = 1 << 20  # outputs of one cell, truncated with a note beyond this
    total_output_bytes: int = 8 << 20  # outputs of one notebook
    files_bytes: int = 64 << 20  # the submission's other files copied into the sandbox
    max_restarts: int = 8  # crashed processes replaced per notebook before the rest is not run
    threads: int = 0  # torch threads in the notebook (0: cores / workers)
    network: bool = False  # True keeps the host's network (not recommended)
    hide_paths: tuple[str, ...] = ()  # more directories the notebook must not read (besides the defaults)

    def to_dict(self) -> dict:
        """Plain dict (sent to the worker as JSON)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Limits:
        """Inverse of `to_dict`, ignoring unknown keys."""
        names = {f.name for f in fields(cls)}
        d = {k: v for k, v in d.items() if k in names}
        if "hide_paths" in d:
            d["hide_paths"] = tuple(d["hide_paths"])
        return cls(**d)
