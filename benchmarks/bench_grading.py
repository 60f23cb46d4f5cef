"""Grading throughput: `autograder grade --workers 2` against stock `nbgrader autograde`.

Both grade the same submissions, collected from the bundled example class (replicated
`--copies` times under new student names), in two copies of one released course. Ours
runs as the real command (`autograder grade`, a subprocess: interpreter start and
imports included). Stock nbgrader runs in-process through `NbGraderAPI.autograde`, one
student at a time, which spares it the per-student start of the `nbgrader` command (so
the ratio printed is conservative).

Per-notebook overhead = grading time minus the notebook's own execution time, from the
engine's grading_log.json (fields `grading_time` and `execution_time`); the amortized
figure, (wall time x workers - total execution time) / notebooks, is printed beside it.

The floor is what no engine can beat on the same workers: the notebooks' own execution
(the sum of `execution_time`) spread evenly over the workers with no overhead at all. It
bounds the ratio to stock nbgrader whatever the engine does; it is printed with each
assignment's share of the execution, so a chapter whose cells dominate is visible.

Prints figures side by side; it is not a timed test. From the repository root:

    .venv/bin/python benchmarks/bench_grading.py                  # ch1, 3 copies of the class
    .venv/bin/python benchmarks/bench_grading.py --chapters ch0 ch1 --copies 5
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autograder import example_class, gradebook, grades, gradinglog  # noqa: E402
from autograder.course import Course  # noqa: E402
from coursenb.chapters import Chapter, select  # noqa: E402
from tests import nbgrader_support as nbs  # noqa: E402


def class_zip(course_dir: Path, chapters: list[Chapter], copies: int, dest: Path) -> Path:
    """The example class, `copies` times over (students ada, ada2, ada3, ...)."""
    base = example_class.build(chapters, course_dir / "release")
    subs = [dataclasses.replace(s, student=s.student + (str(c + 1) if c else ""), user_id=s.user_id + 1000 * c,
                                attachment_id=s.attachment_id + 100_000 * c)
            for c in range(copies) for s in base]
    return example_class.write_zip(subs, dest)


def submissions(course_dir: Path) -> list[tuple[str, str]]:
    """(student, assignment) of every collected submission."""
    return sorted((p.parent.name, p.name) for p in (course_dir / "submitted").glob("*/*") if p.is_dir())


def run_ours(course_dir: Path, workers: int) -> tuple[float, float | None]:
    """Wall seconds of `autograder grade --workers N` (a subprocess, as an instructor runs it),
    and the worker start-up it reports (paid once per run)."""
    exe = Path(sys.executable).parent / "autograder"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "autograder"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd + ["grade", "--course", str(course_dir), "--workers", str(workers), "--quiet"],
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.exit(f"autograder grade failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    start = re.search(r"worker start ([\d.]+) s", proc.stdout)
    return wall, float(start[1]) if start else None


def run_stock(course_dir: Path, subs: list[tuple[str, str]]) -> tuple[float, list[float], list[str]]:
    """Stock nbgrader autograde of each submission: (wall seconds, per-submission seconds, failures)."""
    api = gradebook.api(course_dir, stock_autograde=True)
    api.log.setLevel("ERROR")
    per, failures = [], []
    saved = os.dup(2)  # the kernels' start-up warnings go to this process's stderr: silence them
    os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
    try:
        t0 = time.perf_counter()
        for student, assignment in subs:
            t = time.perf_counter()
            if not api.autograde(assignment, student, force=True, create=True)["success"]:
                failures.append(f"{student}/{assignment}")
            per.append(time.perf_counter() - t)
        wall = time.perf_counter() - t0
    finally:
        os.dup2(saved, 2)
    return wall, per, failures


def agreement(ours: Path, stock: Path, honest: set[str]) -> tuple[int, int, list[str]]:
    """Graded cells of honest students that stock nbgrader scored, scored alike by both:
    (agree, compared, disagreements)."""
    a = {(c.student, c.assignment, c.grade_id): c.score for c in grades.load(ours).cells}
    b = {(c.student, c.assignment, c.grade_id): c.score for c in grades.load(stock).cells}
    keys = [k for k in a if k in b and b[k] is not None and k[0].rstrip("0123456789") in honest]
    differ = [f"{k}: ours {a[k]} stock {b[k]}" for k in keys if a[k] != b[k]]
    return len(keys) - len(differ), len(keys), differ


def print_floor(logs: list[gradinglog.NotebookLog], workers: int, wall_ours: float, wall_stock: float) -> None:
    """The bound the notebooks' own execution sets: no engine grades faster than their cells run,
    spread evenly over the workers with no overhead at all; and each assignment's share of it."""
    by_assignment: dict[str, list[float]] = {}
    for lg in logs:
        by_assignment.setdefault(lg.assignment, []).append(lg.execution_time)
    total = sum(sum(times) for times in by_assignment.values())
    floor = total / workers
    print(f"floor: the cells' own execution, {total:.1f} s, over {workers} workers with no overhead = {floor:.1f} s; "
          f"ours is {wall_ours / floor:.2f}x the floor; with the cells running as fast as here, no engine on "
          f"{workers} workers exceeds {wall_stock / floor:.1f}x stock")
    print(f"{'execution by assignment':34}{'notebooks':>10}{'median (s)':>12}{'sum (s)':>10}{'share':>8}")
    for name, times in sorted(by_assignment.items()):
        print(f"{name:34}{len(times):>10}{statistics.median(times):>12.2f}{sum(times):>10.1f}"
              f"{sum(times) / total:>8.0%}")


def main() -> None:
    """Prepare one course, grade its copies both ways, print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chapters", nargs="+", default=["ch1"])
    ap.add_argument("--copies", type=int, default=3, help="copies of the example class (default 3)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--keep", type=Path, help="keep the graded courses in this folder")
    args = ap.parse_args()
    os.environ.setdefault("MPLBACKEND", "Agg")
    chapters = select(args.chapters)
    tmp = Path(args.keep or tempfile.mkdtemp(prefix="bench_grading_"))
    tmp.mkdir(parents=True, exist_ok=True)
    base = tmp / "base"
    shutil.rmtree(base, ignore_errors=True)
    quiet = open(os.devnull, "w")
    sys.stdout, real_stdout = quiet, sys.stdout
    try:
        Course(base).release(args.chapters)
        zip_path = class_zip(base, chapters, args.copies, tmp / "class.zip")
        Course(base).collect([zip_path])
    finally:
        sys.stdout = real_stdout
    for name in ("ours", "stock"):
        shutil.rmtree(tmp / name, ignore_errors=True)
    ours, stock = nbs.course_copy(base, tmp / "ours"), nbs.course_copy(base, tmp / "stock")
    subs = submissions(base)
    n_nb = sum(len(list((base / "submitted" / s / a).glob("*.ipynb"))) for s, a in subs)
    import torch

    print(f"grading benchmark: {', '.join(args.chapters)}, example class x{args.copies}: {len(subs)} submissions, "
          f"{n_nb} notebooks; {os.cpu_count()} CPUs; torch {torch.__version__}; python {sys.version.split()[0]}")

    wall_ours, worker_start = run_ours(ours, args.workers)
    logs = gradinglog.read_all(ours)
    wall_stock, per_stock, failed = run_stock(stock, subs)

    tput_ours, tput_stock = n_nb / wall_ours, n_nb / wall_stock
    print(f"{'':34}{'autograder grade':>18}{'stock nbgrader':>18}")
    print(f"{'workers':34}{args.workers:>18}{1:>18}")
    print(f"{'wall time (s)':34}{wall_ours:>18.1f}{wall_stock:>18.1f}")
    print(f"{'throughput (notebooks/s)':34}{tput_ours:>18.3f}{tput_stock:>18.3f}")
    print(f"{'seconds per notebook (wall / n)':34}{wall_ours / n_nb:>18.2f}{wall_stock / n_nb:>18.2f}")
    print(f"{'submissions not graded':34}{'0':>18}{len(failed):>18}")
    print(f"throughput ratio (ours / stock): {tput_ours / tput_stock:.1f}x   (target >= 10x)")
    if worker_start:
        steady = n_nb / (wall_ours - worker_start)
        print(f"without the workers' start-up ({worker_start:.1f} s, once per run): {steady:.3f} notebooks/s, "
              f"ratio {steady / tput_stock:.1f}x")
    if failed:
        print(f"stock nbgrader could not grade: {', '.join(failed)}")

    exec_times = [lg.execution_time for lg in logs if lg.execution_time is not None]
    overheads = [lg.grading_time - lg.execution_time for lg in logs
                 if lg.grading_time is not None and lg.execution_time is not None]
    if overheads:
        print(f"per-notebook overhead from grading_log.json (grading - execution), {len(overheads)} notebooks: "
              f"median {statistics.median(overheads):.3f} s, mean {statistics.fmean(overheads):.3f} s, "
              f"max {max(overheads):.3f} s   (target <= 0.2 s)")
    if exec_times:
        amortized = (wall_ours * args.workers - sum(exec_times)) / n_nb
        print(f"notebook execution time: median {statistics.median(exec_times):.3f} s; amortized overhead "
              f"(wall x workers - execution) / notebooks: {amortized:.3f} s (includes worker start-up)")
        print_floor(logs, args.workers, wall_ours, wall_stock)
    print(f"stock per submission: median {statistics.median(per_stock):.2f} s, max {max(per_stock):.2f} s")
    honest = {p.student for p in example_class.PROFILES if p.honest}
    agree, compared, differ = agreement(ours, stock, honest)
    print(f"cell scores, honest students: {agree}/{compared} agree with stock nbgrader")
    for line in differ[:10]:
        print(f"  differs: {line}")
    print(f"courses in {tmp}" if args.keep else "")
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
