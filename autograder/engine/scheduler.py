"""The run, in the grader's process: it only drives the queue and the workers.

Preparing a job (`prepare`), judging its result (`assess`, with the judge process of
`judging`) and recording it (`record`, `store`) live in their own modules; this one hands
prepared jobs to idle workers, costliest first (`CostlyFirst`), collects results, retries a
notebook whose worker died, and lets the next notebook run while the last one is judged and
written (one writer: this thread).
"""
from __future__ import annotations

import collections
import os
import secrets
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from autograder import config
from autograder.engine import assess, cgroups, sandbox, store
from autograder.engine.judging import JudgeClient
from autograder.engine.limits import Limits
from autograder.engine.pool import Pool, WorkerError
from autograder.engine.prepare import EngineError, Job, Preparer
from autograder.engine.record import Recorder
from autograder.gradebook import open_db
from autograder.gradinglog import NotebookLog

__all__ = ["Engine", "EngineError"]



def warm_up_failures(zygote: dict) -> str | None:
    """A sentence naming what the zygote failed to import or warm up (its notebooks inherit that state), or None.

    A failed warm-up can break notebooks, not only slow them (a half-imported module makes every notebook's own
    import fail: benchmarks/startup.md, "seen once"), so it is never silent."""
    failed = {**(zygote.get("import_failures") or {}), **(zygote.get("exercise_failures") or {})}
    if not failed:
        return None
    return ("the sandbox's warm-up failed (every notebook starts from that state, and may fail where a fresh process "
            "would not): " + "; ".join(f"{name}: {why}" for name, why in sorted(failed.items())))

class Engine:
    """One grading run over a course directory."""

    def __init__(self, course_dir: Path, limits: Limits | None, seed: int | None, workers: int,
                 scheduler: object = None, meanwhile: Callable[[], object] | None = None, keep: bool = False) -> None:
        self.cfg = config.load(course_dir)
        self.course_dir = self.cfg.root
        default = Limits(cell_seconds=self.cfg.cell_timeout) if self.cfg.cell_timeout else Limits()
        self.limits = limits or default
        self.seed = seed if seed is not None else secrets.randbits(62)
        self.fresh_seed = seed is None  # a kept engine draws a fresh secret for each run
        self.drawn = False  # the next run's fresh secret is drawn already (`expect`)
        self.keep = keep  # the workers and the judge outlive a run, warm for the next (`close` ends them)
        self.pool = None
        self.workers = max(1, workers)
        self.scheduler = scheduler  # None: local workers; else a Dask Client or scheduler address
        self.meanwhile = meanwhile  # called once while the workers start
        self.threads = self.limits.threads or max(1, (os.cpu_count() or 1) // self.workers)
        self.judge = JudgeClient(self.limits.wall_factor, self.limits.judge_memory_mb << 20)
        self.preparer = Preparer(self.limits, self.seed, self.judge, self.threads)
        self.recorder = Recorder()
        self.stats = self.recorder.stats
        self.sandbox: dict = {}
        self.pool_size = 0
        self.phases: dict[str, float] = collections.defaultdict(float)
        self.worker_start_s: float | None = None
        self.cgroup = cgroups.Parent(None, "not set up")
        self.selfchecked: set[str] = set()  # checks whose reference a kept engine has judged against itself
        self.todo: list[store.Submission] = []  # the run's submissions
        self.checked = False  # whether the run's `_check` is done
        self.recorded: Callable[[store.Submission, NotebookLog], None] | None = None  # told each committed log

    # ---- the run -----------------------------------------------------------------------
    def run(self, todo: list[store.Submission], progress: bool) -> tuple[int, int]:
        """Grade `todo`; returns (graded, failed)."""
        self.graded = self.failed = 0
        if self.pool is not None and self.fresh_seed and not self.drawn:  # a warm engine's next run: trials no
            self._fresh_seed()  # earlier run drew
        self.drawn = False
        self.stats.clear()
        self.phases.clear()
        self.queue = CostlyFirst(todo)
        self.todo, self.checked = todo, False
        self.bar = _progress(len(todo), progress)
        pool, ready = self.pool, self.pool is not None  # a kept engine's workers are ready
        if ready:
            self.worker_start_s = 0.0
        if pool is None:
            self.cgroup = cgroups.setup(self.limits.cgroup) if self.limits.sandbox != "none" else \
                cgroups.Parent(None, "no cgroup (no sandbox)")
            self.judge.cgroup = self.cgroup.path  # the judge's memory bound: a cgroup of its own there, else RLIMIT_DATA
        finished = False
        try:  # the workers start their sandboxes (the longest start) first, then the judge imports the checks,
            if pool is None:  # while this process reads the gradebook
                pool = self._spawn_pool(self.workers if self.keep else min(self.workers, len(todo)),
                                        None if self.keep else len(todo))
                self.judge.start()
            with open_db(self.cfg.db_url, self.cfg.course_id) as gb:  # nbgrader imported after the start
                for a in sorted({s.assignment for s in todo}):
                    _require_assignment(gb, a)
                for sub in todo:
                    self.preparer.source(sub)
                while self.queue or (pool is not None and pool.busy()):
                    job = self._next(gb) if self.queue and (pool is None or pool.idle()) else None
                    if job is not None:
                        if not ready:
                            self._while_workers_start()
                            self._ready(pool)
                            ready = True
                        self._dispatch(pool, pool.idle()[0], job)
                        continue
                    if not self.checked:
                        self._check(gb, todo)
                        continue
                    for w, msg in pool.wait(1.0) if ready else []:
                        self._collect(gb, pool, w, msg)
                self._check(gb, todo)  # (done already, unless every notebook was a bad file)
            finished = True
        finally:
            self.pool = pool if self.keep and finished else None
            if self.pool is None:  # a run that stopped part-way leaves nothing warm: the next one starts afresh
                self._close(pool)
            self.bar.close()
        return self.graded, self.failed

    def _fresh_seed(self) -> None:
        self.seed = self.preparer.run_seed = secrets.randbits(62)
        self.preparer.asked.clear()

    def expect(self, sub: store.Submission) -> None:
        """A kept, warm engine told the notebook its next run grades first (the service's round, before
        `Course.grade` gets the run ready): that run's fresh secret is drawn now, and the judge process draws the
        notebook's trials meanwhile. Nothing for a notebook of a source this engine has not read yet."""
        if self.pool is None or not self.fresh_seed or sub.source_path not in self.preparer.sources:
            return
        self._fresh_seed()
        self.drawn = True
        self.preparer.ask(sub)

    def _check(self, gb, todo: list[store.Submission]) -> None:
        """Once per run, before anything is judged or recorded (the first notebooks run meanwhile): the gradebook's
        graded cells are the sources', their released checksums, the reference passes its own hidden checks (a kept
        engine: once per check), and every submission has its gradebook rows."""
        if self.checked:
            return
        for src in self.preparer.sources.values():  # today's source, and any older kept release's
            _require_same_cells(gb, src.assignment, src.notebook, set(src.points))
            src.release = store.release_checksums(gb, src.assignment, src.notebook)
        names = list(dict.fromkeys(n for src in self.preparer.sources.values() for n in src.checks))
        unchecked = [n for n in names if n not in self.selfchecked]
        problems = self.judge.selfcheck(self.seed, unchecked) if unchecked else []
        if problems:
            raise EngineError(f"the reference fails its own hidden check {problems[0]}")
        if self.keep:  # a kept engine checks the reference once per check: later runs' fresh trials are
            self.selfchecked.update(unchecked)  # judged against the reference's outputs on them all the same
        store.ensure_submissions(gb, todo)
        self.checked = True

    def close(self) -> None:
        """End a kept engine's workers, judge and cgroup."""
        pool, self.pool = self.pool, None
        self._close(pool)

    def _close(self, pool) -> None:
        if pool is not None:
            pool.close()
        self.judge.close()
        cgroups.teardown(self.cgroup)

    def init_message(self, notebooks: int | None = None) -> dict:
        """What every worker needs: its limits, threads, sandbox uids (root), the run's cgroup, and whether its
        zygote's warm-up pays for many notebooks (not when no worker runs more than one of the run's `notebooks`:
        zygote.exercise)."""
        root = os.geteuid() == 0
        return {"limits": self.limits.to_dict(), "threads": self.threads, "root": root,
                "uid_base": sandbox.fresh_uid_block(self.workers) if root else os.getuid(),
                "cgroup": self.cgroup.path, "cgroup_why": self.cgroup.why,
                "warm_many": notebooks is None or notebooks > self.workers}

    def _spawn_pool(self, n: int, notebooks: int | None = None):
        """Start the workers for a run of `notebooks` (they warm up in parallel; `_ready` waits for them)."""
        self.pool_started = time.perf_counter()
        try:
            if self.scheduler is None:
                return Pool(max(1, n), self.init_message(notebooks))
            from autograder.engine.distributed import DaskPool

            return DaskPool(self.scheduler, max(1, n), self.init_message(notebooks), self.threads)
        except WorkerError as exc:
            raise EngineError(f"the grading workers cannot start: {exc}") from None

    def _while_workers_start(self) -> None:
        """The caller's `meanwhile`, once; a failure there is the caller's step's to report, not the run's."""
        if self.meanwhile is not None:
            try:
                self.meanwhile()
            except Exception:  # noqa: BLE001 - preparation only: the step it prepares fails on its own
                pass
            self.meanwhile = None

    def _ready(self, pool) -> None:
        try:
            pool.ready()
        except WorkerError as exc:
            raise EngineError(f"the grading workers cannot start: {exc}") from None
        self.worker_start_s, self.pool_size = time.perf_counter() - self.pool_started, len(pool.workers)
        self.sandbox = dict(getattr(pool.workers[0], "isolation", {}) or {})
        failed = warm_up_failures(getattr(pool.workers[0], "zygote", {}) or {})
        if failed:  # in every grading log's sandbox entry, and said once to the instructor
            self.sandbox["warm_up"] = failed
            print(f"autograder grade: warning: {failed}", file=sys.stderr)

    def _next(self, gb) -> Job | None:
        """The next submission that needs running; bad files are recorded on the way (zero, with why)."""
        while self.queue:
            job = self.preparer.prepare(self.queue.popleft())
            if job.problem is None:
                return job
            self._check(gb, self.todo)
            self.finish(gb, job, None, [])
            self._done()
        return None

    def _collect(self, gb, pool, w, msg) -> None:
        """A worker answered (or died): give it the next notebook, then record this one (or retry it)."""
        job, w.job = w.job, None
        received = time.perf_counter()
        if msg is None or msg.kind != "result" or msg.header.get("id") != job.header["id"] or msg.header.get("infra"):
            fresh = pool.restart(w)
            if job.attempts < 2:
                self._dispatch(pool, fresh, job)
            else:
                self.failed += 1
                self.bar.update(1)
            return
        following = self._next(gb) if self.queue else None
        if following is not None:  # the worker runs the next notebook while this one is judged and written
            self._dispatch(pool, w, following)
        job.started += time.perf_counter() - received  # preparing the next notebook is not this one's overhead
        self.finish(gb, job, msg.header, msg.blobs)
        self._done()

    def finish(self, gb, job: Job, header: dict | None, blobs: list[bytes]) -> NotebookLog:
        """Judge, write the autograded notebook and log, commit the grades; returns the log."""
        t0 = time.perf_counter()
        src = self.preparer.source(job.sub)
        header = header or {}
        if job.problem is not None:
            done = assess.unrun(job, src)
        else:
            try:
                done = assess.assess(job, header, blobs, self.judge, self.limits, self.cfg.ignore_pattern, src)
            except Exception as exc:  # noqa: BLE001 - one notebook's disaster never stops the run
                job.problem = f"the grader could not score this notebook ({type(exc).__name__}: {str(exc)[:300]})"
                done = assess.unrun(job, src)
        if not self.sandbox and isinstance(header.get("sandbox"), dict):
            self.sandbox = dict(header["sandbox"])
        t1 = time.perf_counter()
        log = self.recorder.log(job, src, done, header)
        if header:
            self.queue.measured(job.sub, log.execution_time)
        write_s, gradebook_s = self.recorder.write(gb, job, done, log, src)
        if self.recorded is not None:  # the notebook's log and grades are committed: its result is final
            self.recorded(job.sub, log)
        worker_s = header.get("seconds") if type(header.get("seconds")) in (int, float) else 0.0
        ready_s = header.get("ready_seconds") if type(header.get("ready_seconds")) in (int, float) else 0.0
        for name, value in (("judge", t1 - t0), ("write", write_s), ("gradebook", gradebook_s),
                            ("prepare", job.prepare_s), ("worker", worker_s), ("sandbox_ready", ready_s)):
            self.phases[name] += value
        self.stats.append({"key": job.sub.key, "seconds": time.perf_counter() - job.started,
                           "cells": log.execution_time, "score": log.score, "run": job.problem is None,
                           "worker": worker_s, "judge": t1 - t0, "write": write_s, "gradebook": gradebook_s,
                           "prepare": job.prepare_s})
        return log

    def _done(self) -> None:
        self.graded += 1
        self.bar.update(1)

    def _dispatch(self, pool, w, job: Job) -> None:
        if job.attempts == 0:
            job.started = time.perf_counter() - job.prepare_s  # the wait for workers to start is not overhead
        job.attempts += 1
        try:
            pool.send(w, job, job.header, job.blobs)
        except WorkerError:
            w.job = job  # noticed as dead by the next wait()


class CostlyFirst:
    """The queue: a notebook of each kind (assignment, notebook) first, then the costliest kind.

    A kind's cost is the mean execution time of its notebooks run so far (unknown while its
    first one runs: costly until measured). Long notebooks early leave short ones for the end,
    so no worker idles while the last long one runs alone: longest-processing-time-first, with
    the times learned during the run.
    """

    def __init__(self, todo: list[store.Submission]) -> None:
        self.kinds: dict[tuple[str, str], collections.deque] = {}
        for sub in todo:
            self.kinds.setdefault((sub.assignment, sub.notebook), collections.deque()).append(sub)
        self.seconds: dict[tuple[str, str], list[float]] = collections.defaultdict(list)
        self.started: set[tuple[str, str]] = set()

    def __len__(self) -> int:
        return sum(map(len, self.kinds.values()))

    def popleft(self) -> store.Submission:
        """The next submission to run (IndexError when none is left)."""
        waiting = [kind for kind, subs in self.kinds.items() if subs]
        if not waiting:
            raise IndexError("no submission left")
        fresh = [kind for kind in waiting if kind not in self.started]
        kind = fresh[0] if fresh else max(waiting, key=self.cost)  # max keeps the first of equals
        self.started.add(kind)
        return self.kinds[kind].popleft()

    def cost(self, kind: tuple[str, str]) -> float:
        return statistics.fmean(self.seconds[kind]) if self.seconds[kind] else float("inf")

    def measured(self, sub: store.Submission, seconds: float) -> None:
        self.seconds[(sub.assignment, sub.notebook)].append(float(seconds))


def _require_assignment(gb, assignment: str) -> None:
    from nbgrader.api import MissingEntry

    try:
        gb.find_assignment(assignment)
    except MissingEntry:
        raise EngineError(f"assignment {assignment} is not in the gradebook: release it first") from None


def _require_same_cells(gb, assignment: str, notebook: str, graded: set[str]) -> None:
    from nbgrader.api import MissingEntry

    try:
        released = {c.name for c in gb.find_notebook(notebook, assignment).grade_cells}
    except MissingEntry:
        raise EngineError(f"notebook {notebook} of {assignment} is not in the gradebook: release it first") from None
    if released != graded:
        raise EngineError(f"the graded cells of {assignment}/{notebook} changed since it was released "
                          f"({sorted(released ^ graded)}): release it again before grading")


class _NoBar:
    def update(self, n: int) -> None:
        return None

    def close(self) -> None:
        return None


def _progress(total: int, show: bool):
    if not show or total == 0:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, unit="notebook", desc="grading")
