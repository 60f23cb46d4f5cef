"""What starting one grading slot costs: the seccomp program's first build (libseccomp through pyseccomp, its
import included) and the zygote's start in bubblewrap (the program handed to bwrap, the zygote's imports and
warm-up, its hello), each in a fresh process, as a worker starts. Prints the median and range of N starts.

    .venv/bin/python benchmarks/bench_zygote.py [--starts 3]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

ONE_START = """
import os, time
from autograder.engine import seccomp  # pyseccomp is imported by the first build
t0 = time.perf_counter()
seccomp.program()
t1 = time.perf_counter()
from autograder.engine.worker import Zygote, make_plan
plan = make_plan({"uid": 1_500_000_123, "threads": 1, "limits": {}})
zygote = Zygote(plan, os.open(os.devnull, os.O_WRONLY))
zygote.wait_hello()
t2 = time.perf_counter()
zygote.close()
print(t1 - t0, t2 - t1)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=3)
    args = parser.parse_args()
    root = Path(__file__).resolve().parents[1]
    program, zygote = [], []
    for _ in range(args.starts):
        out = subprocess.run([sys.executable, "-c", ONE_START], cwd=root, capture_output=True, text=True, check=True)
        p, z = map(float, out.stdout.split())
        program.append(p)
        zygote.append(z)
    print(f"seccomp program (libseccomp, first build): {1e3 * statistics.median(program):.1f} ms "
          f"({1e3 * min(program):.1f}-{1e3 * max(program):.1f})")
    print(f"zygote start (bubblewrap, imports, warm-up): {statistics.median(zygote):.2f} s "
          f"({min(zygote):.2f}-{max(zygote):.2f}), {args.starts} starts")


if __name__ == "__main__":
    main()
