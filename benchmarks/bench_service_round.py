"""Where a warm service round spends its time beyond the notebook's cells, in process (no HTTP).

    .venv/bin/python benchmarks/bench_service_round.py [--runs 20] [--workers 2]

On a fresh Chapter 1 course (released into a temporary folder) it accepts one correct notebook at a time into the
service's store and grades it by `Grader.round` (the service's path: `Course.grade` on a kept engine, inside
`gradebook.kept` as the grader's thread runs), after one round that warms the workers. It prints the rounds' p50 and
p95 beside the floor (the cells' own seconds in each grading log) and the milliseconds per round of each phase,
timed with time.perf_counter around the functions named (nested: a phase includes those it calls). It is not a
timed test: figures go in commit messages. To compare two trees side by side, run it from each checkout in turn.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import importlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PHASES = [("autograder.course", "Course.grade"), ("autograder.engine.scheduler", "Engine.run"),
          ("autograder.engine.pool", "Pool.wait"), ("autograder.engine.scheduler", "Engine.finish"),
          ("autograder.engine.assess", "assess"), ("autograder.engine.judging", "JudgeClient.verdicts"),
          ("autograder.engine.judging", "JudgeClient.trials"), ("autograder.engine.judging", "JudgeClient.selfcheck"),
          ("autograder.engine.prepare", "Preparer.prepare"), ("autograder.engine.scheduler", "Engine._check"),
          ("autograder.engine.record", "Recorder.write"),
          ("autograder.engine.store", "write_outputs"), ("autograder.engine.store", "record_grades"),
          ("autograder.engine.store", "ensure_submissions"), ("autograder.grades", "apply_late"),
          ("autograder.course", "Course._sync_due_dates"), ("autograder.course", "Course._refresh_feedback"),
          ("autograder.config", "load"), ("autograder.service.store", "Store.place"),
          ("autograder.service.store", "Store.finish")]
SPENT: collections.Counter = collections.Counter()
CALLS: collections.Counter = collections.Counter()


def timed(module: str, qualname: str) -> None:
    """Wrap module.qualname so that its seconds and calls add up in SPENT and CALLS."""
    owner = importlib.import_module(module)
    *path, name = qualname.split(".")
    for part in path:
        owner = getattr(owner, part)
    f = getattr(owner, name, None)
    if f is None:  # a phase this tree does not have
        return

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return f(*args, **kwargs)
        finally:
            SPENT[qualname] += time.perf_counter() - t
            CALLS[qualname] += 1
    setattr(owner, name, wrapper)


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    for module, qualname in PHASES:
        timed(module, qualname)
    from autograder import gradebook
    from autograder.service.grader import Grader
    from autograder.service.store import Store, now

    course = Path(tempfile.mkdtemp(prefix="bench-round-")) / "course"
    subprocess.run([sys.executable, "-m", "autograder", "release", "--chapters", "ch1", "--course", str(course)],
                   check=True, cwd=ROOT, capture_output=True)
    correct = json.loads((course / "source" / "ch1" / "ch1_parallel_time.ipynb").read_bytes())
    store = Store(course)
    grader = Grader(course, store, workers=args.workers)

    def one(k: int) -> tuple[float, float]:
        nb = dict(correct, cells=[*correct["cells"], {"cell_type": "markdown", "id": f"bench-{k}", "metadata": {},
                                                      "source": f"upload {k}"}])  # a new file each time
        store.accept("bench", "ch1", "ch1_parallel_time", json.dumps(nb).encode(), now())
        attempt = store.next_queued()
        t = time.perf_counter()
        grader.round([attempt])
        seconds = time.perf_counter() - t
        got = store.attempt(attempt.id)
        if got.state != "done":
            raise SystemExit(f"round {k} did not grade: {got}")
        return seconds, got.result["execution_time"]

    kept = getattr(gradebook, "kept", None)
    with kept() if kept else contextlib.nullcontext():  # an older tree has no kept gradebook
        one(-1)  # the workers warm up
        SPENT.clear()
        CALLS.clear()
        rounds = [one(k) for k in range(args.runs)]
    grader.stop()
    store.close()
    latency, floor = [r for r, _ in rounds], [c for _, c in rounds]
    print(f"{args.runs} warm rounds, one correct Chapter 1 notebook each, {args.workers} workers ({ROOT}):")
    print(f"  round p50 {statistics.median(latency):.3f} s, p95 {pct(latency, 0.95):.3f} s; floor (cells) median "
          f"{statistics.median(floor):.3f} s -> p50 is {statistics.median(latency) / statistics.median(floor):.2f}x")
    print("  ms per round (nested):")
    for name, spent in SPENT.most_common():
        print(f"    {name:28s} {1000 * spent / args.runs:8.1f}  ({CALLS[name] / args.runs:g} calls)")


if __name__ == "__main__":
    main()
