"""Build speed of the book (the `publish` package), printed as figures.

    .venv/bin/python benchmarks/bench_book.py            # full executed build, then a cached rebuild
    .venv/bin/python benchmarks/bench_book.py --cached   # only the cached rebuild

1. Full build of the solutions edition: every chapter executed afresh (2 at a time, on 2
   cores), staged and built by Sphinx from nothing. Target: <= 6 minutes.
2. Cached rebuild: nothing changed, so no chapter runs and Sphinx is incremental.
   Target: <= 30 s.
3. Both editions from that execution (the student edition refreshed, nothing executed), then
   a cached rebuild of both (what `attnbook` costs when nothing changed).
4. The student edition's audit alone (`python -m publish.audit`): its figures (files,
   candidate expressions, judgements, call signatures, values) and its findings.

Leaks are counted, not raised, so that the timings print on chapters that still leak.

The machine's load average is printed with the figures: wall-clock times on a shared
machine are upper bounds.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import publish  # noqa: E402
from publish import contents, layout  # noqa: E402

TARGET_FULL_S = 360.0
TARGET_CACHED_S = 30.0


def timed_build(editions: tuple[str, ...], force: bool, jobs: int) -> tuple[float, dict[str, float]]:
    """Wall seconds of one `publish.build`, and its phase timings."""
    phases: dict[str, float] = {}
    start = time.perf_counter()
    publish.build(editions, jobs=jobs, force=force, log=lambda *_: None, timings=phases, fail_on_leaks=False)
    return time.perf_counter() - start, phases


def row(label: str, seconds: float, phases: dict[str, float], target: float | None) -> str:
    parts = ", ".join(f"{k} {v:.1f}" for k, v in phases.items())
    verdict = "" if target is None else (f"  [target <= {target:.0f} s: " + ("met]" if seconds <= target else "MISSED]"))
    return f"{label:<44} {seconds:7.1f} s  ({parts}){verdict}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cached", action="store_true", help="skip the full build")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) > 2:
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:2])  # the target is for 2 cores
    print(f"cores: {len(os.sched_getaffinity(0))}, load average at start: "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"chapters: {', '.join(Path(d).name for d in contents.notebook_docs())}")
    lines = []
    if not args.cached:
        edition = layout.Edition("solutions")
        shutil.rmtree(edition.out, ignore_errors=True)
        shutil.rmtree(edition.stage, ignore_errors=True)
        seconds, phases = timed_build(("solutions",), force=True, jobs=args.jobs)
        lines.append(row("full build, solutions edition (executed)", seconds, phases, TARGET_FULL_S))
        timings = json.loads((layout.CACHE / "timings.json").read_text())
        for stem in sorted(timings):
            lines.append(f"    {stem:<40} {timings[stem]:7.1f} s executing")
        print(*lines, sep="\n", flush=True)
        lines = []
    seconds, phases = timed_build(("solutions",), force=False, jobs=args.jobs)
    lines.append(row("cached rebuild, solutions edition", seconds, phases, TARGET_CACHED_S))
    seconds, phases = timed_build(layout.EDITIONS, force=False, jobs=args.jobs)
    lines.append(row("both editions (no execution; student refreshed)", seconds, phases, None))
    seconds, phases = timed_build(layout.EDITIONS, force=False, jobs=args.jobs)
    lines.append(row("cached rebuild, both editions", seconds, phases, TARGET_CACHED_S))
    from publish import audit, execute

    start = time.perf_counter()
    figures: list[str] = []
    findings = audit.audit_student(layout.Edition("student"), execute.executed_copies(), log=figures.append)
    lines.append(f"{'audit of the student edition':<44} {time.perf_counter() - start:7.1f} s  "
                 f"({len(findings)} findings)")
    lines += [f"    {line.removeprefix('book: ')}" for line in figures]
    print(*lines, sep="\n")
    print(f"load average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
