"""How long and how much memory the parallel-time profiler takes.

1. First call against steady state: each case runs in RUNS fresh processes (the first
   ``parallel_time`` call of a process, after ``import torch`` and the profiler), and
   the median is printed beside the median of later calls in the same process, with
   whether the first call imported ``torch._dynamo``.
2. A book-sized model: a 12-layer transformer (solutions.ch1.transformer) with
   T = 1,000,000 tokens, J = 4096, H = 16 heads, K = I = 256, under both cost models,
   on meta tensors. A real run would need the attention scores alone, H T^2 floats =
   64 TB per layer.

Prints figures; it is not a timed test. Run from the repository root:

    .venv/bin/python benchmarks/bench_profiler.py
"""
from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import torch

from attnlab.profiler import parallel_time
from solutions import ch1
from solutions.depth import transformer_depth

ROOT = Path(__file__).resolve().parents[1]
RUNS = 5
L, T, J, H, K, I = 12, 1_000_000, 4096, 16, 256, 256

# name -> code defining fn and args (run in a fresh process)
FIRST_CALL_CASES = {
    "x @ W  (x[8], W[8,8])": "fn = lambda x, W: x @ W; args = ((8,), (8, 8))",
    "softmax(x @ W)": "fn = lambda x, W: torch.softmax(x @ W, -1); args = ((8,), (8, 8))",
    "x + FFN(x)  (Linear, GELU, Linear)": (
        "ffn = torch.nn.Sequential(torch.nn.Linear(64, 256, device='meta'), torch.nn.GELU(), "
        "torch.nn.Linear(256, 64, device='meta')); fn = lambda x: x + ffn(x); args = ((16, 64),)"),
    f"transformer, {L} layers, T={T:,}": (
        "from solutions import ch1; fn = ch1.transformer; "
        f"args = (({T}, {J}), [(({H}, {K}, {J}), ({H}, {K}, {J}), ({H}, {I}, {J}))] * {L})"),
}

PROBE = """
import sys, time, statistics, torch
from attnlab.profiler import parallel_time
{setup}
t0 = time.perf_counter(); parallel_time(fn, *args); first = time.perf_counter() - t0
later = []
for _ in range(5):
    t0 = time.perf_counter(); parallel_time(fn, *args); later.append(time.perf_counter() - t0)
print(first, statistics.median(later), "torch._dynamo" in sys.modules)
"""


def first_call(setup: str) -> tuple[float, float, bool]:
    """(first-call s, steady-state s, imported torch._dynamo) of one fresh process."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    out = subprocess.run([sys.executable, "-c", PROBE.format(setup=setup)], cwd=ROOT, env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1]), out[2] == "True"


def print_first_calls() -> None:
    """Median over RUNS fresh processes of the first call, beside the steady state."""
    print(f"first call (fresh process, median of {RUNS}) vs steady state (median of 5 later calls)")
    for name, setup in FIRST_CALL_CASES.items():
        runs = [first_call(setup) for _ in range(RUNS)]
        first = statistics.median(r[0] for r in runs)
        steady = statistics.median(r[1] for r in runs)
        dynamo = "imports torch._dynamo" if any(r[2] for r in runs) else "no torch._dynamo"
        print(f"  {name:<38} first {first * 1e3:7.0f} ms   steady {steady * 1e3:8.2f} ms   "
              f"({dynamo}; first calls {', '.join(f'{r[0]:.2f}' for r in runs)} s)")


def args() -> tuple:
    """Shapes of M[T,J] and L layers of (WQ, WK, WV)."""
    return (T, J), [((H, K, J), (H, K, J), (H, I, J))] * L


def rss_mib() -> float:
    """Peak resident set size of this process so far, MiB (Linux: ru_maxrss is KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    """First calls in fresh processes; then warm up, time each model (best of 5), measure memory."""
    print(f"torch {torch.__version__}")
    print_first_calls()
    print(f"transformer L={L} T={T:,} J={J} H={H} K={K} I={I}")
    rss_before = rss_mib()
    t0 = time.perf_counter()
    parallel_time(ch1.transformer, *args())
    print(f"first call in this process: {time.perf_counter() - t0:.2f} s")
    rss_warm = rss_mib()
    for model in ("serial", "log"):
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            r = parallel_time(ch1.transformer, *args(), model=model)
            times.append(time.perf_counter() - t0)
        assert r.depth == transformer_depth(L, T, J, K, model)
        print(f"{model:>6}: depth {r.depth:,}  work {r.work:.3e}  "
              f"time best {min(times) * 1e3:.1f} ms, median {sorted(times)[2] * 1e3:.1f} ms  "
              f"Brent on 10^6 processors: {r.brent(10 ** 6):.3e}")
    tracemalloc.start()
    parallel_time(ch1.transformer, *args())
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"tracemalloc peak (Python objects) during one call: {peak / 1024:.0f} KiB")
    print(f"peak RSS: {rss_before:.0f} MiB after importing torch, {rss_warm:.0f} MiB after the "
          f"first call (code torch loads), {rss_mib():.0f} MiB after 11 more calls "
          f"(+{rss_mib() - rss_warm:.0f} MiB); a real run would need "
          f"{H * T * T * 4 / 1e12:.0f} TB for one layer's scores")


if __name__ == "__main__":
    main()
