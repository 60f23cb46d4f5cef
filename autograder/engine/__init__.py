"""The grading engine: trusted, isolated, fast, durable grading of a class's notebooks.

    from autograder.engine import grade, Limits
    summary = grade(course_dir, assignment="ch1", workers=4)

Each submitted notebook gets its locked and test cells back from the source notebook
(`notebook`) and trial inputs of its own (`prepare`); a worker (`worker`, `driver`) runs it,
cell by cell, in a child forked from a zygote that only forks, inside bubblewrap with an
allowlisted filesystem, in its own PID, IPC and mount namespaces (`sandbox`, `inside/`,
`cgroups`, `seccomp`); only plain data comes back (`protocol`), and it is judged here against
`solutions/` in a judge process with a time budget (`assess`, `judging`, `scoring`). Scores go
into nbgrader's gradebook, one commit per notebook (`record`, `store`);
`course_dir/autograded/<student>/<assignment>/` receives the executed notebook (hidden tests
removed) and `grading_log.json`. The scheduler only drives the queue and the workers. See
docs/security.md for the threat model.

This module imports nothing heavy: the worker processes import the package too.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from autograder.engine.limits import Limits

__all__ = ["GradeSummary", "Limits", "grade", "EngineError"]


@dataclass
class GradeSummary:
    """What a grading run did.

    `graded`: notebooks whose scores were written this run (bad files included, at zero);
    `skipped`: already graded and unchanged; `failed`: notebooks the engine could not grade
    (a worker died twice on them; they are tried again next run). `per_notebook_overhead_s`
    is the mean, over notebooks that ran, of (time from preparing the notebook to its
    committed grades) minus (the time its cells ran): process fork and isolation, transfer,
    judging, writing files and the gradebook commit. Worker start-up is `worker_start_s`,
    paid once per run.
    """

    graded: int
    skipped: int
    failed: int
    seconds: float
    per_notebook_overhead_s: float | None
    workers: int = 0
    worker_start_s: float | None = None
    cell_seconds: float = 0.0
    notebooks: list[dict] = field(default_factory=list)
    isolation: dict = field(default_factory=dict)
    phases: dict = field(default_factory=dict)  # seconds spent per phase, summed over notebooks

    @property
    def throughput(self) -> float:
        """Notebooks graded per second of the whole run."""
        return self.graded / self.seconds if self.seconds > 0 else 0.0


def grade(course_dir: Path, *, assignment: str | None = None, student: str | list[str] | None = None, workers: int = 2,
          progress: bool = True, limits: Limits | None = None, seed: int | None = None,
          force: bool = False, scheduler: object = None, meanwhile: Callable[[], object] | None = None,
          engine: object = None) -> GradeSummary:
    """Grade every submitted notebook in course_dir/submitted/<student>/<assignment>/<nb>.ipynb not yet graded.

    Resumable: an interrupted run, run again, grades only what is not committed yet.
    `force` grades everything again. `seed` fixes the hidden tests' trial inputs (default:
    a fresh secret per run). `scheduler`: a dask.distributed Client or scheduler address
    ("tcp://host:8786") to run the notebooks on a Dask cluster, `workers` tasks at a time
    (the gradebook is still written here). `meanwhile` is called once while the sandboxes start (what the
    caller does after grading, prepared in time this process would spend waiting). `engine`: a kept
    `scheduler.Engine` (keep=True, the submission service's) whose workers and judge stay warm between runs; its
    own limits, workers and scheduler then apply, and each run draws a fresh secret. Raises EngineError for a course that cannot be
    graded (e.g. an assignment not released into the gradebook); never for a student's file.
    """
    from autograder.engine import store
    from autograder.engine.scheduler import Engine

    started = time.perf_counter()
    if engine is None:
        engine = Engine(Path(course_dir), limits, seed, workers, scheduler, meanwhile)
    subs = store.discover(engine.course_dir, assignment, student)
    if force:  # the run starts its sandboxes before the gradebook (nbgrader's import) is needed
        todo = subs
    else:
        from autograder.gradebook import open_db

        with open_db(engine.cfg.db_url, engine.cfg.course_id) as gb:
            todo = [s for s in subs if not store.is_graded(gb, s)]
    graded, failed = engine.run(todo, progress) if todo else (0, 0)
    ran = [s for s in engine.stats if s["run"]]
    overhead = sum(s["seconds"] - s["cells"] for s in ran) / len(ran) if ran else None
    return GradeSummary(graded=graded, skipped=len(subs) - len(todo), failed=failed,
                        seconds=time.perf_counter() - started, per_notebook_overhead_s=overhead,
                        workers=engine.pool_size, worker_start_s=engine.worker_start_s,
                        cell_seconds=sum(s["cells"] for s in ran), notebooks=engine.stats,
                        isolation=engine.sandbox, phases=dict(engine.phases))


def __getattr__(name: str):
    if name == "EngineError":
        from autograder.engine.prepare import EngineError

        return EngineError
    raise AttributeError(name)
