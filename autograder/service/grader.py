"""The service's grader: one thread that takes the queue and grades it by `Course.grade`, the path of
`autograder grade` (the same engine, sandbox, judge, gradebook, late policy and feedback refresh).

Each round takes every queued attempt (a student has at most one pending: the service refuses a
second), puts each attempt's bytes back in submitted/ (another command, collect or finalize, may
have written there since it was accepted), and grades what changed in one engine run, so uploads that arrive together
share the run's workers. An attempt's result is its grading log when the log's checksum is the
attempt's, recorded as soon as the engine has committed that log and its grades (the run's late policy
and feedback refresh follow, as in `autograder grade`); an attempt the engine could not grade is tried
again (three gradings at most, a grader that stopped the server included), then reported failed with
the upload kept.
"""
from __future__ import annotations

import collections
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from autograder import config, courselock, gradebook, gradinglog
from autograder.course import Course, CourseError
from autograder.engine.scheduler import Engine
from autograder.engine.store import Submission
from autograder.service import settings as settings_mod
from autograder.service import views
from autograder.service.store import Attempt, Store, now

MAX_TRIES = 3
BUSY_WAIT_S = 5.0  # how long a round waits before it tries the course's lock again
FAILED = ("the grader could not grade this upload (it was tried {tries} times); your file is kept and the "
          "instructor can see this error; you may upload again")


@dataclass
class Status:
    """What the instructor's status page shows about the grader."""

    started_at: float = field(default_factory=time.time)
    rounds: int = 0
    graded: int = 0
    grading: list[str] = field(default_factory=list)  # attempt ids in the current round
    last_round_s: float | None = None
    workers: int = 0
    worker_start_s: float | None = None
    errors: collections.deque = field(default_factory=lambda: collections.deque(maxlen=20))

    def error(self, what: str) -> None:
        self.errors.appendleft((now().strftime("%Y-%m-%d %H:%M:%S UTC"), what))


class Grader:
    """Grades the store's queue in a background thread until `stop`."""

    def __init__(self, course_dir: Path, store: Store, workers: int = 2, scheduler: str | None = None,
                 accept_only: bool = False, keep_warm: bool = True) -> None:
        self.course_dir = Path(course_dir)
        self.store = store
        self.workers = workers
        self.scheduler = scheduler
        self.accept_only = accept_only
        self.keep_warm = keep_warm
        self.engine = None  # the kept engine (autograder.engine.scheduler.Engine), made on the first round
        self.status = Status(workers=workers)
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None
        self.listeners: list[Callable[[], None]] = []  # called (in the grader's thread) after each recorded result

    def start(self) -> None:
        resumed = self.store.resume()
        if resumed:
            self.status.error(f"resumed {resumed} upload(s) whose grading a stop interrupted")
        if self.accept_only:
            return
        self.thread = threading.Thread(target=self._loop, name="autograder-service-grader", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.wake.set()
        if self.thread is not None:
            self.thread.join(timeout=600)
        if self.engine is not None:
            self.engine.close()

    def _loop(self) -> None:
        with gradebook.kept(wal=True):  # the gradebook's engine stays open between rounds (its schema work paid once),
            self._rounds()  # its journal WAL (front/instructors.md)

    def _rounds(self) -> None:
        while not self.stopping.is_set():
            batch = []
            while (a := self.store.next_queued()) is not None:
                batch.append(a)
            if not batch:
                self.wake.wait(5.0)
                self.wake.clear()
                continue
            try:
                self.round(batch)
            except Exception as exc:  # noqa: BLE001 - the service outlives any one round
                self.status.error(f"round of {len(batch)} upload(s) failed: {type(exc).__name__}: {exc}")
                traceback.print_exc()
                self._requeue_or_fail(batch, f"{type(exc).__name__}: {exc}")
                self.stopping.wait(2.0)

    def round(self, batch: list[Attempt]) -> None:
        """Grade `batch` (attempts marked grading) through `Course.grade`, holding the course's lock as every writing
        command does; record each one's result. While another command holds the lock the batch waits, queued again
        with no try counted."""
        try:
            with courselock.hold(self.course_dir, "serve"):
                self._round(batch)
        except courselock.CourseBusy as exc:
            self.status.error(f"waiting for the course's lock: {exc}")
            with self.store.tx() as db:
                db.executemany("UPDATE attempts SET state = 'queued', tries = tries - 1 WHERE id = ? AND state = 'grading'",
                               [(a.id,) for a in batch])
            self.status.grading = []
            self.stopping.wait(BUSY_WAIT_S)

    def _round(self, batch: list[Attempt]) -> None:
        started = time.perf_counter()
        self.status.grading = [a.id for a in batch]
        for a in batch:  # the attempt's bytes are in submitted/ (again: another command may have written there since;
            data = self.store.upload_path(a.id, a.student, a.assignment).read_bytes()  # synced when it was accepted)
            self.store.place(a.student, a.assignment, a.notebook, data, a.received_at, resync=False)
        chapters = {a.assignment for a in batch}
        error = None
        waiting = {(a.student, a.assignment, a.notebook): a for a in batch}

        def recorded(sub, log) -> None:  # the engine committed a notebook's log and grades: its result is final,
            a = waiting.get((sub.student, sub.assignment, sub.notebook))  # told now (the late policy follows)
            if a is not None and log.submission_sha256 == a.sha256:
                del waiting[(a.student, a.assignment, a.notebook)]
                self._finish(a, log)
        options = self.engine_options()
        if "engine" in options:
            options["engine"].recorded = recorded
            first = batch[0]  # its trials are drawn while Course.grade reads the course
            options["engine"].expect(Submission(first.student, first.assignment, first.notebook,
                                                Path(options["engine"].course_dir).resolve()))
        try:  # force=False: what is graded already (a log committed before a stop) is not graded again
            done = Course(self.course_dir).grade(chapters.pop() if len(chapters) == 1 else None,
                                                 sorted({a.student for a in batch}),
                                                 workers=self.workers, force=False, progress=False, **options)
            start = getattr(done.summary, "worker_start_s", None)
            self.status.worker_start_s = start if start else self.status.worker_start_s
        except CourseError as exc:
            error = str(exc)
            self.status.error(f"grading stopped: {error}")
        finally:
            if "engine" in options:
                options["engine"].recorded = None
        left = []
        for a in waiting.values():
            log = gradinglog.read(self.course_dir / "autograded" / a.student / a.assignment, a.notebook)
            if log is not None and log.submission_sha256 == a.sha256:
                self._finish(a, log)
            else:
                left.append(a)
        if left:
            why = error or "the engine could not grade it"
            for a in left:
                self.status.error(f"upload {a.id} ({a.student}/{a.assignment}) not graded: {why}")
            self._requeue_or_fail(left, why)
        self.status.rounds += 1
        self.status.grading = []
        self.status.last_round_s = time.perf_counter() - started

    def _finish(self, a: Attempt, log: gradinglog.NotebookLog) -> None:
        self.store.finish(a.id, log.to_dict(), None)
        self.status.graded += 1
        self._recorded()

    def _recorded(self) -> None:
        for listener in self.listeners:
            listener()

    def engine_options(self) -> dict:
        """What `Course.grade` passes to the engine: a kept engine (`keep_warm`), whose workers and judge stay
        up between rounds, so a round pays no start-up; else the scheduler for a fresh one."""
        if not self.keep_warm:
            return {"scheduler": self.scheduler} if self.scheduler else {}
        if self.engine is None:  # a round that stopped part-way leaves it cold; the next warms it again
            self.engine = Engine(self.course_dir, None, None, self.workers, self.scheduler, keep=True)
        return {"engine": self.engine}

    def _requeue_or_fail(self, batch: list[Attempt], why: str) -> None:
        for a in batch:
            current = self.store.attempt(a.id)
            if current is None or current.state != "grading":
                continue
            if current.tries >= MAX_TRIES:
                self.store.finish(a.id, None, FAILED.format(tries=current.tries))
                self._recorded()
            else:
                with self.store.tx() as db:
                    db.execute("UPDATE attempts SET state = 'queued' WHERE id = ? AND state = 'grading'", (a.id,))


def finalize(course_dir: Path, assignment: str | None = None, workers: int = 2) -> list[tuple[str, str, str]]:
    """The attempts that count (service.toml's `final`: the course's rule or pin, or the best) put back in submitted/
    with their times, and graded by `Course.grade` where that changes the file (an attempt graded before is graded
    again, with a fresh secret: the gradebook then holds what counts). Run it once the service is stopped, after
    the due date. Returns (student, assignment, attempt id) of each attempt that counts."""
    with courselock.hold(Path(course_dir), "serve --finalize"):  # as every writing command: one at a time
        return _finalize(Path(course_dir), assignment, workers)


def _finalize(course_dir: Path, assignment: str | None, workers: int) -> list[tuple[str, str, str]]:
    course_dir = Path(course_dir)
    chosen = settings_mod.load(course_dir)
    cfg = config.load(course_dir)
    store = Store(course_dir)
    counted = []
    try:
        pairs = {(a.student, a.assignment) for a in store.attempts(limit=10**9)
                 if assignment is None or a.assignment == assignment}
        for student, chapter in sorted(pairs):
            a = views.counting(store, chosen, cfg, student, chapter)
            if a is None:
                continue
            data = store.upload_path(a.id, a.student, a.assignment).read_bytes()
            store.place(a.student, a.assignment, a.notebook, data, a.received_at)
            counted.append((student, chapter, a.id))
    finally:
        store.close()
    if counted:
        Course(course_dir).grade(assignment, sorted({s for s, _, _ in counted}), workers=workers, force=False)
    return counted
