"""Orchestration in the grader's process: prepare each notebook, hand it to a warm worker, judge
the result, write the autograded notebook and log, commit the grades; one writer (this thread).
"""
from __future__ import annotations

import collections
import copy
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder import config
from autograder.engine import notebook as nbmod
from autograder.engine import scoring, store
from autograder.engine.limits import Limits
from autograder.engine.pool import Pool, WorkerError
from autograder.gradinglog import CellLog, Incident, NotebookLog
from coursenb import cells

REPO_ROOT = Path(__file__).resolve().parents[2]


class EngineError(RuntimeError):
    """The course cannot be graded as it is (a user-facing sentence)."""


@dataclass
class Job:
    """One submission on its way through the engine."""

    sub: store.Submission
    restored: nbmod.Restored | None = None
    code: list[int] = field(default_factory=list)
    problem: str | None = None  # set: not run, every graded cell scores 0 for this reason
    header: dict = field(default_factory=dict)
    blobs: list[bytes] = field(default_factory=list)
    started: float = 0.0
    prepare_s: float = 0.0
    attempts: int = 0


@dataclass
class Source:
    """A source notebook, its checksum, its graded cells and the checks they call."""

    nb: nbformat.NotebookNode
    sha256: str | None
    points: dict[str, float]
    checks: list[str]


class Engine:
    """One grading run over a course directory."""

    def __init__(self, course_dir: Path, limits: Limits | None, seed: int | None, workers: int,
                 scheduler: object = None) -> None:
        self.cfg = config.load(course_dir)
        self.course_dir = self.cfg.root
        default = Limits(cell_seconds=self.cfg.cell_timeout) if self.cfg.cell_timeout else Limits()
        self.limits = limits or default
        self.trials = scoring.Trials(seed if seed is not None else secrets.randbits(62))
        self.judge = scoring.Judge(self.trials)
        self.sources: dict[tuple[str, str], Source] = {}
        self.workers = max(1, workers)
        self.scheduler = scheduler  # None: local warm workers; else a Dask Client or scheduler address
        self.threads = self.limits.threads or max(1, (os.cpu_count() or 1) // self.workers)
        self.ids = 0
        self.stats: list[dict] = []
        self.sandbox: dict = {}
        self.pool_size = 0
        self.checksums: dict[tuple[str, str], dict[str, str]] = {}
        self.cell_ids: dict[tuple[str, str], dict[str, str]] = {}
        self.phases: dict[str, float] = collections.defaultdict(float)
        self.worker_start_s: float | None = None

    # ---- sources and jobs -------------------------------------------------------------
    def source(self, sub: store.Submission) -> Source:
        key = (sub.assignment, sub.notebook)
        if key not in self.sources:
            nb = nbformat.read(sub.source_path, as_version=4)
            points = {cells.grade_id(c): cells.points(c) for c in nb.cells if cells.grade_id(c) and cells.is_graded(c)}
            checks = [n for c in nb.cells if cells.is_test(c) for n in cells.hidden_check_names(c.source)]
            for name in checks:
                try:
                    self.trials.add(name)
                except KeyError as exc:
                    raise EngineError(f"{sub.source_path.name} calls {exc.args[0]}") from None
            self.sources[key] = Source(nb, store.sha256_file(sub.source_path), points, checks)
        return self.sources[key]

    def prepare(self, sub: store.Submission) -> Job:
        """Read and restore the submission; a bad file becomes a job with a `problem`, never an exception."""
        job, src = Job(sub, started=time.perf_counter()), self.source(sub)
        if not sub.path.exists():
            job.problem = f"no {sub.notebook}.ipynb was submitted"
            return job
        try:
            job.restored = nbmod.restore(nbmod.read_submission(sub.path), src.nb)
        except nbmod.UnreadableNotebook as exc:
            job.problem = f"the submitted {sub.notebook}.ipynb could not be read: {exc}"
            return job
        if job.restored.foreign:
            job.problem = (f"the submitted {sub.notebook}.ipynb contains none of this notebook's graded or "
                           "solution cells (another chapter's notebook?)")
            return job
        job.code = job.restored.code_cells()
        sources = [job.restored.nb.cells[i].source for i in job.code]
        blobs: list[bytes] = []
        trials = {}
        for name in dict.fromkeys(src.checks):
            trials[name] = len(blobs)
            blobs.append(self.trials.encoded[name])
        files = []
        for rel, data in self._files(sub):
            files.append([rel, len(blobs)])
            blobs.append(data)
        self.ids += 1
        job.header = {"k": "job", "id": self.ids, "cells": sources, "trials": trials, "files": files,
                      "limits": self.limits.to_dict(), "threads": self.threads}
        job.blobs = blobs
        job.prepare_s = time.perf_counter() - job.started
        return job

    def _files(self, sub: store.Submission) -> list[tuple[str, bytes]]:
        """The submission's other files, then the source's (which win), within the size cap."""
        found: dict[str, Path] = {}
        for base in (sub.path.parent, sub.source_path.parent):
            for p in sorted(base.rglob("*")) if base.is_dir() else []:
                if p.is_file() and not p.is_symlink() and p.suffix != ".ipynb" and p.name != "timestamp.txt" \
                        and ".ipynb_checkpoints" not in p.parts:
                    found[p.relative_to(base).as_posix()] = p
        out, left = [], self.limits.files_bytes
        for rel, p in found.items():
            size = p.stat().st_size
            if size <= left:
                out.append((rel, p.read_bytes()))
                left -= size
        return out

    # ---- finishing a notebook ------------------------------------------------------------
    def finish(self, gb, job: Job, header: dict | None, blobs: list[bytes]) -> NotebookLog:
        """Judge, write the autograded notebook and log, commit the grades; returns the log."""
        t0 = time.perf_counter()
        src = self.source(job.sub)
        if job.problem is not None:
            nb, scored = self._unrun(job), [scoring.CellScore(g, 0.0, p, job.problem, [], "not run", 0.0)
                                           for g, p in src.points.items()]
            incidents: list[Incident] = []
        else:
            nb, scored, incidents = self._judge(job, header or {}, blobs)
        t1 = time.perf_counter()
        scores = {c.grade_id: c.score for c in scored}
        log = self._log(job, scored, incidents, header or {})
        store.write_outputs(job.sub, nbmod.for_feedback(nb, copy_first=False), log)
        t2 = time.perf_counter()
        store.record_grades(gb, job.sub, scores, self._responded(gb, job, nb), self.cell_ids)
        t3 = time.perf_counter()
        self.phases["judge"] += t1 - t0
        self.phases["write"] += t2 - t1
        self.phases["gradebook"] += t3 - t2
        self.phases["prepare"] += job.prepare_s
        self.phases["worker"] += float((header or {}).get("seconds") or 0.0)
        self.phases["sandbox_ready"] += float((header or {}).get("ready_seconds") or 0.0)
        self.stats.append({"key": job.sub.key, "seconds": time.perf_counter() - job.started,
                           "cells": log.execution_time, "score": log.score, "run": job.problem is None,
                           "worker": float((header or {}).get("seconds") or 0.0), "judge": t1 - t0,
                           "write": t2 - t1, "gradebook": t3 - t2, "prepare": job.prepare_s})
        return log

    def _judge(self, job: Job, header: dict, blobs: list[bytes]):
        nb = job.restored.nb
        records = header.get("cells") if isinstance(header.get("cells"), list) else []
        scored, incidents = [], []
        for p, idx in enumerate(job.code):
            cell = nb.cells[idx]
            rec = records[p] if p < len(records) and isinstance(records[p], dict) else {"status": "skipped"}
            cell.outputs = scoring.outputs_from(_blob(blobs, rec.get("outputs")))
            cell.execution_count = rec.get("count") if isinstance(rec.get("count"), int) else None
            reports = [(str(r[0]), [_blob(blobs, i) for i in r[1]]) for r in rec.get("reports", [])
                       if isinstance(r, list) and len(r) == 2 and isinstance(r[1], list)]
            gid = cells.grade_id(cell)
            if gid and cells.is_graded(cell):
                scored.append(scoring.score_cell(cell, rec, reports, self.judge, self.cfg.ignore_pattern))
            elif rec.get("status") in ("killed", "skipped"):
                cell.outputs.append(scoring.error_output("CellStopped", str(rec.get("reason"))))
            if rec.get("status") in ("killed", "skipped"):
                incidents.append(Incident(idx, gid, str(rec.get("status")), str(rec.get("reason"))[:500]))
            elif rec.get("status") == "error":
                err = next((o for o in cell.outputs if o.output_type == "error"), None)
                incidents.append(Incident(idx, gid, "error",
                                          f"raised {err.ename}: {err.evalue}"[:500] if err else "raised an error"))
        return nb, scored, incidents

    def _unrun(self, job: Job) -> nbformat.NotebookNode:
        """What the feedback shows for a notebook that was not run: its cells (or the source's, without
        solutions), each test cell carrying the reason."""
        if job.restored is not None:
            nb = job.restored.nb
        else:
            nb = copy.deepcopy(self.source(job.sub).nb)
            for cell in nb.cells:
                if cells.is_solution(cell):
                    cell.source = "# (nothing was graded: see the note in the test cells)"
        for cell in nb.cells:
            if cells.is_test(cell):
                cell.outputs = [scoring.error_output("NotGraded", job.problem)]
        return nb

    def _responded(self, gb, job: Job, nb: nbformat.NotebookNode) -> dict[str, bool]:
        """Per solution cell: did the student change the release stub? (nbgrader's "No response.")"""
        from nbgrader.utils import compute_checksum

        key = (job.sub.assignment, job.sub.notebook)
        if key not in self.checksums:
            try:
                stored_nb = gb.find_notebook(job.sub.notebook, job.sub.assignment)
                self.checksums[key] = {c.name: c.checksum for c in stored_nb.source_cells}
            except Exception:  # noqa: BLE001 - comments are a courtesy
                self.checksums[key] = {}
        stored = self.checksums[key]
        present = {cells.grade_id(c): c for c in nb.cells if cells.grade_id(c)}
        out = {}
        for gid, checksum in stored.items():
            cell = present.get(gid)
            if cell is not None and cells.is_solution(cell):
                out[gid] = job.problem is None and compute_checksum(cell) != checksum
        return out

    def _log(self, job: Job, scored: list[scoring.CellScore], incidents: list[Incident], header: dict) -> NotebookLog:
        src = self.source(job.sub)
        seconds_cells = sum(float(c.get("seconds") or 0) for c in header.get("cells", []) if isinstance(c, dict))
        if header.get("sandbox"):
            self.sandbox = header["sandbox"]
        restored = job.restored
        notes = (restored.notes if restored else []) + \
            [f"solution cell {g} is missing from the submission" for g in (restored.missing_solutions if restored else [])]
        return NotebookLog(
            student=job.sub.student, assignment=job.sub.assignment, notebook=job.sub.notebook,
            submission_sha256=store.sha256_file(job.sub.path), source_sha256=src.sha256,
            graded_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            cells=tuple(CellLog(c.grade_id, c.score, c.max_score, c.reason, tuple(c.hidden_failed), c.status,
                                round(c.seconds, 4)) for c in scored),
            error=job.problem, notes=tuple(notes), incidents=tuple(incidents),
            restarts=int(header.get("restarts") or 0), execution_time=seconds_cells,
            grading_time=time.perf_counter() - job.started,
            sandbox={str(k): str(v) for k, v in (header.get("sandbox") or {}).items()})

    # ---- the run -----------------------------------------------------------------------
    def init_message(self) -> dict:
        """What workers need to isolate notebooks: the paths to hide."""
        from autograder.engine import sandbox

        dirs, keep = sandbox.secret_paths(self.course_dir, REPO_ROOT, tuple(self.limits.hide_paths))
        files = []
        if self.cfg.db_url.startswith("sqlite:///"):
            db = Path(self.cfg.db_url.removeprefix("sqlite:///"))
            if db.exists() and not any(str(db.resolve()).startswith(d + os.sep) for d in dirs):
                files.append(str(db.resolve()))
        return {"hide": dirs, "keep": keep, "hide_files": files, "network": self.limits.network,
                "uid_base": sandbox.fresh_uid_block(self.workers) if os.geteuid() == 0 else os.getuid()}

    def run(self, todo: list[store.Submission], progress: bool) -> tuple[int, int]:
        """Grade `todo`; returns (graded, failed)."""
        import torch
        from nbgrader.api import Gradebook

        self.graded = self.failed = 0
        queue = collections.deque(todo)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # references on small trials: threads only contend with the workers
        self.bar = _progress(len(todo), progress)
        with Gradebook(self.cfg.db_url, course_id=self.cfg.course_id) as gb:
            for a in sorted({s.assignment for s in todo}):
                _require_assignment(gb, a)
            for sub in todo:
                self.source(sub)  # every check's trials are drawn before any student code runs
            for (assignment, notebook), src in self.sources.items():
                _require_same_cells(gb, assignment, notebook, set(src.points))
            store.ensure_submissions(gb, todo)
            self.queue = queue
            pool: Pool | None = None
            try:
                while queue or (pool is not None and pool.busy()):
                    job = self._next(gb, queue) if queue and (pool is None or pool.idle()) else None
                    if job is not None:
                        if pool is None:
                            t = time.perf_counter()
                            pool = self._pool(min(self.workers, len(queue) + 1))
                            self.warm_judge()  # while the workers import torch
                            try:
                                pool.ready()
                            except WorkerError as exc:
                                pool.close()
                                raise EngineError(f"the grading workers cannot start: {exc}") from None
                            self.worker_start_s, self.pool_size = time.perf_counter() - t, len(pool.workers)
                        self._dispatch(pool, pool.idle()[0], job)
                        continue
                    for w, msg in pool.wait(1.0) if pool is not None else []:
                        self._collect(gb, pool, w, msg)
            finally:
                if pool is not None:
                    pool.close()
                self.bar.close()
                torch.set_num_threads(threads)
        return self.graded, self.failed

    def _pool(self, n: int):
        """Local warm workers, or slots on a Dask cluster."""
        if self.scheduler is None:
            try:
                return Pool(n, self.init_message(), self.threads)
            except WorkerError as exc:
                raise EngineError(f"the grading workers cannot start: {exc}") from None
        from autograder.engine.distributed import DaskPool

        return DaskPool(self.scheduler, n, self.init_message(), self.threads)

    def warm_judge(self) -> None:
        """Judge the reference against itself once per check: warms the judge up, and catches a broken check."""
        from autograder.checks import CHECKS, AnswerCheck

        for name, trials in self.trials.by_name.items():
            check = CHECKS[name]
            if isinstance(check, AnswerCheck):
                outcomes = [scoring.Outcome(value=check.reference)]
            else:
                outcomes = [scoring.Outcome(value=check.reference(*args)) for args in trials]
            ok, message = self.judge._decide_plain(name, outcomes)
            if not ok:
                raise EngineError(f"the reference fails its own hidden check {name}: {message}")

    def _next(self, gb, queue: collections.deque) -> Job | None:
        """The next submission that needs running; bad files are recorded on the way (zero, with why)."""
        while queue:
            job = self.prepare(queue.popleft())
            if job.problem is None:
                return job
            self.finish(gb, job, None, [])
            self._done()
        return None

    def _collect(self, gb, pool: Pool, w, msg) -> None:
        """A worker answered (or died): give it the next notebook, then record this one (or retry it once)."""
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
        following = self._next(gb, self.queue) if self.queue else None
        if following is not None:  # the worker runs the next notebook while this one is judged and written
            self._dispatch(pool, w, following)
        job.started += time.perf_counter() - received  # preparing the next notebook is not this one's overhead
        self.finish(gb, job, msg.header, msg.blobs)
        self._done()

    def _done(self) -> None:
        self.graded += 1
        self.bar.update(1)

    def _dispatch(self, pool: Pool, w, job: Job) -> None:
        if job.attempts == 0:
            job.started = time.perf_counter() - job.prepare_s  # the wait for workers to start is not overhead
        job.attempts += 1
        try:
            pool.send(w, job, job.header, job.blobs)
        except WorkerError:
            w.job = job  # noticed as dead by the next wait()


def _blob(blobs: list[bytes], i: object) -> bytes:
    return blobs[i] if isinstance(i, int) and 0 <= i < len(blobs) else b"[]"


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

