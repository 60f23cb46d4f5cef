"""The zygote: imports the notebooks' stack once, then only forks.

Started by a worker inside the sandbox (bubblewrap, a minimal environment), it never
receives a job: the worker sends it `fork` frames that carry two descriptors (the new
notebook's own socket to the worker, and a status pipe) and nothing else. Each fork runs
`child.keeper` with those descriptors; the job reaches the child through its socket,
never through here. So a child's memory holds the imported modules and nothing that
any notebook, the grader or the worker ever had.
"""
from __future__ import annotations

import gc
import importlib
import io
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


FONT_LISTS = os.path.join(sys.prefix, "share", "attnlab", "matplotlib")  # built by scripts/venv.sh


def font_list() -> bool:
    """Copy matplotlib's font list built with the venv into this sandbox's empty cache (MPLCONFIGDIR); True if
    copied. Without it matplotlib lists and reads every font again at each worker's start; a list that
    names a font this sandbox lacks is rebuilt by matplotlib the first time that font is looked up."""
    cache = os.environ.get("MPLCONFIGDIR")
    try:
        names = [n for n in os.listdir(FONT_LISTS) if n.startswith("fontlist-") and n.endswith(".json")]
    except OSError:
        return False
    if not cache or not names:
        return False
    os.makedirs(cache, exist_ok=True)
    for name in names:
        with open(os.path.join(FONT_LISTS, name), "rb") as src, open(os.path.join(cache, name), "wb") as dst:
            dst.write(src.read())
    return True


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


def exercise(many: bool = True) -> dict:
    """Pay the first-use costs that imports leave for later; returns timings and failures.

    Each step runs fixed instructor code on constant inputs (no job data, no global random
    state, no pyplot figure), so a child inherits warm caches and nothing else: torch's Python
    dispatcher and meta kernels as the book's profiler and kernel watch use them, the first
    `scaled_dot_product_attention` (`kernels`), sympy's lazily imported core (`sympy`).

    `many` (a zygote that forks many notebooks) adds what only some notebooks use, at a cost
    worth paying once: `torch._dynamo`, which the first TorchDispatchMode of a notebook's own and every
    optimizer import (`dynamo`: Chapter 4's optimizer), and a figure written as PNG
    (`figure`: grading draws none, `runner.make_shell`). A zygote that forks one notebook goes
    without them: that notebook imports what it uses, as it would anyway.

    It runs on one thread: an OpenMP parallel region here would start libgomp's thread
    pool in the zygote, and a forked child that enters a parallel region would then wait
    forever for threads that fork did not copy.
    """
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - warm_up has reported it
        return {"exercise_seconds": {}, "exercise_failures": {"torch": f"{type(exc).__name__}: {exc}"[:200]}}
    timings, failed = {}, {}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for step in (_kernels, _sympy, _dynamo, _figure) if many else (_kernels, _sympy):
            name, started = step.__name__.lstrip("_"), time.perf_counter()
            try:
                step()
            except Exception as exc:  # noqa: BLE001 - a failed warm-up only slows notebooks
                failed[name] = f"{type(exc).__name__}: {exc}"[:200]
            timings[name] = round(time.perf_counter() - started, 3)
    finally:
        torch.set_num_threads(threads)
    return {"exercise_seconds": timings, "exercise_failures": failed}


def _layer(q):
    """One attention layer on q[B, H, T, K] as keys and values too (scores, softmax, weighted sum)."""
    import torch

    return torch.einsum("bhtk,bhsk->bhts", q, q).softmax(-1) @ q


def _kernels() -> None:
    """One attention layer through the book's profiler (meta tensors) and kernel watch, in float64 and float32."""
    import torch
    import torch.nn.functional as F

    from attnlab.kernels import attention_backend, largest_tensor
    from attnlab.profiler import parallel_time

    for dtype in (torch.float64, torch.float32):
        q = torch.linspace(-1, 1, 24, dtype=dtype).reshape(1, 2, 4, 3)
        attention_backend(F.scaled_dot_product_attention, q, q, q)
        largest_tensor(_layer, q)
        parallel_time(_layer, torch.empty(1, 2, 4, 3, dtype=dtype, device="meta"))
        F.scaled_dot_product_attention(q[0], q[0], q[0])


def _dynamo() -> None:
    """`torch._dynamo` (about 800 modules), through the first TorchDispatchMode that does not opt out of it."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class Passthrough(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    q = torch.linspace(-1, 1, 24, dtype=torch.float32).reshape(1, 2, 4, 3)
    with Passthrough():
        _layer(q)


def _figure() -> None:
    """A small figure with text, lines and an image, written as PNG (not through pyplot)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 1))
    FigureCanvasAgg(fig)
    ax1, ax2 = fig.subplots(1, 2)
    ax1.plot([1, 2, 3], [1, 4, 9], "o-", label="$T^2$")
    ax1.set_xscale("log")
    ax1.legend()
    ax1.set_title("warm-up")
    ax2.imshow([[0.0, 1.0], [1.0, 0.0]])
    fig.savefig(io.BytesIO(), format="png", bbox_inches="tight")


def _sympy() -> None:
    """A sum of logarithms and powers: sympy imports its core lazily on first use."""
    import sympy

    T, L = sympy.symbols("T L", positive=True)
    sympy.simplify(L * sympy.log(T) + T**2 + sympy.log(T, 2))


def frozen() -> None:
    """Move everything the warm-up built out of the collector's reach (`gc.freeze`), then turn it on.

    The zygote's command turns the collector off before its first import: importing torch, the
    dispatcher and sympy with it on ran a full collection over the growing heap again and again.
    Frozen, those objects are never walked by a child's collection, so a child neither spends the
    time nor copies the pages a walk writes to (figures: benchmarks/startup.md).
    The handful of garbage cycles the imports leave stay, shared by every child."""
    gc.freeze()
    gc.enable()


def leaked_modules() -> list[str]:
    """Instructor modules present in this process (there must be none)."""
    return sorted(m for m in sys.modules if m.split(".")[0] in FORBIDDEN)


def main(control_fd: int, many: bool = True) -> None:
    """Warm up (`many`: see `exercise`), say hello, then fork one child per `fork` frame until the worker
    hangs up."""
    child.prctl(child.PR_SET_DUMPABLE, 0)
    child.prctl(child.PR_SET_PDEATHSIG, signal.SIGKILL)
    font_list()
    info = warm_up() | exercise(many)
    shell = runner.make_shell()
    frozen()
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
                child.keeper(fds[0], fds[1], lambda sock, plan: runner.main(sock, plan, shell))
            finally:
                os._exit(70)
        for fd in fds:
            os.close(fd)


if __name__ == "__main__":
    main(int(sys.argv[1]))
