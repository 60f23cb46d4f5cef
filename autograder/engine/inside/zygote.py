"""The zygote: imports the notebooks' stack once, then only forks.

Started by a worker inside the sandbox (bubblewrap, a minimal environment), it never
receives a job: the worker sends it `fork` frames that carry two descriptors (the new
notebook's own socket to the worker, and a status pipe) and nothing else. Each fork runs
`child.keeper` with those descriptors; the job reaches the child through its socket,
never through here. So a child's memory holds the imported modules and nothing that
any notebook, the grader or the worker ever had.
"""
from __future__ import annotations

import importlib
import os
import pkgutil
import signal
import socket
import sys
import time

from . import child, frames, runner

WARM_MODULES = ("numpy", "torch", "torch.nn", "torch.nn.functional", "matplotlib", "matplotlib.pyplot",
                "matplotlib_inline.backend_inline", "IPython", "IPython.display", "sympy", "attnlab")
FORBIDDEN = ("solutions", "autograder", "coursenb", "publish", "chapters", "tests")


def warm_up() -> dict:
    """Import the notebooks' stack (and every attnlab module); returns timings and failures."""
    started, failed = time.perf_counter(), {}
    for name in WARM_MODULES:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - a missing optional module only slows notebooks
            failed[name] = f"{type(exc).__name__}: {exc}"[:200]
    attnlab = sys.modules.get("attnlab")
    if attnlab is not None:
        for info in pkgutil.walk_packages(attnlab.__path__, "attnlab."):
            try:
                importlib.import_module(info.name)
            except Exception as exc:  # noqa: BLE001
                failed[info.name] = f"{type(exc).__name__}: {exc}"[:200]
    return {"import_seconds": round(time.perf_counter() - started, 3), "import_failures": failed}


def leaked_modules() -> list[str]:
    """Instructor modules present in this process (there must be none)."""
    return sorted(m for m in sys.modules if m.split(".")[0] in FORBIDDEN)


def main(control_fd: int) -> None:
    """Warm up, say hello, then fork one child per `fork` frame until the worker hangs up."""
    child.prctl(child.PR_SET_DUMPABLE, 0)
    child.prctl(child.PR_SET_PDEATHSIG, signal.SIGKILL)
    info = warm_up()
    shell = runner.make_shell()
    control = socket.socket(fileno=control_fd)
    frames.send(control_fd, {"k": "hello", "pid": os.getpid(), "leaked": leaked_modules(),
                             "environ": sorted(os.environ), **info})
    while True:
        child.reap()
        try:
            msg, fds = frames.recv_fds(control)
        except (OSError, frames.ProtocolError):
            return
        if msg is None:
            return
        if msg.kind != "fork" or len(fds) != 2:
            for fd in fds:
                os.close(fd)
            return
        pid = os.fork()
        if pid == 0:  # never returns
            try:
                os.close(control_fd)
                child.keeper(fds[0], fds[1], shell)
            finally:
                os._exit(70)
        for fd in fds:
            os.close(fd)


if __name__ == "__main__":
    main(int(sys.argv[1]))
