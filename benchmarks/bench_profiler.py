"""How long and how much memory the parallel-time profiler takes on a book-sized model.

Profiles a 12-layer transformer (solutions.ch1.transformer) with T = 1,000,000 tokens,
J = 4096, H = 16 heads, K = I = 256, under both cost models, on meta tensors. A real
run would need the attention scores alone, H T^2 floats = 64 TB per layer.

Prints figures; it is not a timed test. Run from the repository root:

    .venv/bin/python benchmarks/bench_profiler.py
"""
from __future__ import annotations

import resource
import time
import tracemalloc

import torch

from attnlab.profiler import parallel_time
from solutions import ch1
from solutions.depth import transformer_depth

L, T, J, H, K, I = 12, 1_000_000, 4096, 16, 256, 256


def args() -> tuple:
    """Shapes of M[T,J] and L layers of (WQ, WK, WV)."""
    return (T, J), [((H, K, J), (H, K, J), (H, I, J))] * L


def rss_mib() -> float:
    """Peak resident set size of this process so far, MiB (Linux: ru_maxrss is KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    """Warm up, then time each model (best of 5) and measure memory."""
    print(f"torch {torch.__version__}; transformer L={L} T={T:,} J={J} H={H} K={K} I={I}")
    rss_before = rss_mib()
    t0 = time.perf_counter()
    parallel_time(ch1.transformer, *args())
    print(f"first call (torch lazily imports torch._dynamo for its meta kernels): "
          f"{time.perf_counter() - t0:.2f} s")
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
