"""The grading engine against stock `nbgrader autograde` on the same Chapter 1 notebooks.

N students (default 24) submit the source notebook, the untouched release, or one of the
wrong implementations of solutions/mistakes (in turn). One course copy is graded by
`autograder.engine.grade(workers=W)` in this process, another by stock nbgrader's
`NbGraderAPI.autograde`, one student at a time. Prints wall time, throughput, the
engine's per-notebook overhead (grading time minus the notebook's own cell time) and a
per-phase breakdown, and checks that both agree cell by cell.

    .venv/bin/python benchmarks/bench_engine.py [--students 24] [--workers 2] [--no-stock]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
warnings.filterwarnings("ignore", message="Object of type")

from autograder import gradebook  # noqa: E402
from autograder.course import Course  # noqa: E402
from coursenb.chapters import select  # noqa: E402
from solutions.mistakes import apply, wrong_for  # noqa: E402
from tests import nbgrader_support as nbs  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", type=int, default=24)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-stock", action="store_true")
    args = ap.parse_args()
    chapter = select(["ch1"])[0]
    tmp = Path(tempfile.mkdtemp(prefix="bench_engine_"))
    base = nbs.make_course(tmp / "base", ["ch1"])
    src = nbs.source_nb(chapter, base)
    variants = [src, nbs.release_nb(chapter, base)] + [apply(src, w) for w in wrong_for("ch1")]
    students = [f"s{k:03d}" for k in range(args.students)]
    for k, student in enumerate(students):
        nbs.submit(base, chapter, student, variants[k % len(variants)])
    copies = {name: nbs.course_copy(base, tmp / name) for name in ("engine", "stock")}

    t0 = time.perf_counter()
    s = Course(copies["engine"]).grade(workers=args.workers, progress=False).summary
    wall = time.perf_counter() - t0
    ran = [n for n in s.notebooks if n["run"]]
    over = [n["seconds"] - n["cells"] for n in ran]
    print(f"engine: {s.graded} notebooks, {args.workers} workers, {os.cpu_count()} CPUs")
    print(f"  wall {wall:.1f} s (worker start-up {s.worker_start_s:.1f} s, paid once), "
          f"throughput {s.graded / wall:.3f} notebooks/s, {(wall - s.worker_start_s) / s.graded:.2f} s/notebook "
          f"after start-up")
    print(f"  cell execution per notebook: median {statistics.median(n['cells'] for n in ran):.3f} s")
    print(f"  per-notebook overhead (grading - cells): mean {statistics.fmean(over):.3f} s, "
          f"median {statistics.median(over):.3f} s, min {min(over):.3f} s, max {max(over):.3f} s")
    phases = {k: v / len(ran) for k, v in s.phases.items()}
    worker_over = phases.get("worker", 0) - s.cell_seconds / len(ran)
    print("  per notebook: " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in phases.items() if k != "worker")
          + f", worker outside cells {worker_over * 1000:.0f} ms")
    if args.no_stock:
        return
    api = gradebook.api(copies["stock"], stock_autograde=True)
    api.log.setLevel("ERROR")
    t0 = time.perf_counter()
    per = []
    for student in students:
        t = time.perf_counter()
        assert api.autograde("ch1", student, force=True, create=True)["success"]
        per.append(time.perf_counter() - t)
    stock_wall = time.perf_counter() - t0
    print(f"stock nbgrader autograde: wall {stock_wall:.1f} s, throughput {len(students) / stock_wall:.3f} "
          f"notebooks/s, median {statistics.median(per):.2f} s per notebook")
    print(f"throughput ratio engine/stock: {(s.graded / wall) / (len(students) / stock_wall):.1f}x "
          f"(after start-up: {(s.graded / (wall - s.worker_start_s)) / (len(students) / stock_wall):.1f}x)")
    ours = {(st, g): v for st in students for g, v in nbs.scores(copies["engine"], chapter, st).items()}
    theirs = {(st, g): v for st in students for g, v in nbs.scores(copies["stock"], chapter, st).items()}
    differ = {k: (ours[k], theirs[k]) for k in ours if ours[k] != theirs[k]}
    print(f"cell scores equal to stock: {len(ours) - len(differ)}/{len(ours)}" + (f"; differ: {differ}" if differ else ""))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
