"""A single regrade: `autograder grade --student S --force` on one notebook, as an instructor runs it.

Times the whole command (a subprocess: interpreter start, imports, the engine, the late policy,
the feedback page it writes again, the gradebook it prints) on a graded course, and with
`--baseline DIR` the same command from another checkout of the repository (e.g. a worktree of
an earlier commit: its packages come first on PYTHONPATH, for the workers and the zygote too),
alternating the two so that both see the same load. Prints each run's wall time, the engine's
own line (worker start, cells) and the load average; it is not a timed test.

    bash scripts/grade_example_class.sh /tmp/ec/course --chapters ch0     # a graded course
    git worktree add /tmp/base <commit>
    .venv/bin/python benchmarks/bench_regrade.py /tmp/ec/course --student ada --baseline /tmp/base --runs 3

Issue 25.10's "before" is 99fbde0, the last commit before the issue-25 work (978f0fa is its first). It
grades today's Chapters 0 and 3 (`--chapters ch0`, `--chapters ch3`: the same notebook side by side), not
today's Chapter 1 (graded cells it has no checks for): that one is timed alone, and 99fbde0's Chapter 1 on a
course released from a checkout of 99fbde0. The notebook matters: one that enters a TorchDispatchMode of its
own (99fbde0's Chapter 1 did) imports torch._dynamo itself, 0.5 s, which a one-notebook sandbox no longer
does for every notebook. On a shared machine the ratio depends on the
load (each run prints it): under load every process of the command waits for a CPU, and the command's
CPU time counts more than how its processes overlap.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def regrade(checkout: Path, course: Path, student: str) -> tuple[float, str]:
    """(wall seconds, the engine's summary line) of one `autograder grade --student S --force` from `checkout`."""
    env = dict(os.environ, PYTHONPATH=str(checkout), MPLBACKEND="Agg", PYTHONHASHSEED="0")
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", "--course", str(course), "--student", student,
                           "--force", "--quiet"], capture_output=True, text=True, env=env, cwd=checkout)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"{checkout}: grade failed ({proc.returncode}): {proc.stderr[-2000:]}")
    line = next((x for x in proc.stdout.splitlines() if x.startswith("graded ")), "?")
    return wall, re.sub(r"\s+", " ", line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("course", type=Path, help="a graded course")
    ap.add_argument("--student", required=True, help="whose one notebook to regrade")
    ap.add_argument("--baseline", type=Path, help="another checkout to time side by side")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    checkouts = {"this": ROOT} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    walls: dict[str, list[float]] = {name: [] for name in checkouts}
    print(f"{os.cpu_count()} cores; regrading {args.student} in {args.course}")
    for run in range(args.runs):
        for name, checkout in (checkouts.items() if run % 2 == 0 else reversed(checkouts.items())):
            load = os.getloadavg()[0]
            wall, line = regrade(checkout, args.course, args.student)
            walls[name].append(wall)
            print(f"run {run + 1} {name:8s} wall {wall:5.1f} s  (load {load:.1f})  {line}", flush=True)
    for name, values in walls.items():
        print(f"{name:8s} median {statistics.median(values):.1f} s over {len(values)} runs: "
              + ", ".join(f"{v:.1f}" for v in values))
    if args.baseline:
        ratio = statistics.median(walls["this"]) / statistics.median(walls["baseline"])
        print(f"this / baseline = {ratio:.2f}")


if __name__ == "__main__":
    main()
