"""Recording one judged notebook, in the grader (the one writer): its typed log (`NotebookLog`), the
autograded notebook (hidden tests removed) and its grades in nbgrader's gradebook, in that order."""
from __future__ import annotations

import time

from autograder.engine import notebook as nbmod
from autograder.engine import store
from autograder.engine.assess import Assessed
from autograder.engine.prepare import Job, Source
from autograder.gradinglog import CellLog, NotebookLog
from coursenb import cells


class Recorder:
    """Writes each notebook's results; keeps the per-notebook statistics of the run."""

    def __init__(self) -> None:
        self.cell_ids: dict[tuple[str, str], tuple[dict[str, str], dict[str, str]]] = {}
        self.stats: list[dict] = []

    def log(self, job: Job, src: Source, done: Assessed, header: dict) -> NotebookLog:
        """The notebook's grading log (what the feedback, reports and exports read)."""
        restored = job.restored
        notes = (restored.notes if restored else []) + \
            [f"solution cell {g} is missing from the submission" for g in (restored.missing_solutions if restored else [])]
        sandbox = header.get("sandbox") if isinstance(header.get("sandbox"), dict) else {}
        return NotebookLog(
            student=job.sub.student, assignment=job.sub.assignment, notebook=job.sub.notebook,
            submission_sha256=store.sha256_file(job.sub.path), source_sha256=src.sha256,
            graded_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            cells=tuple(CellLog(c.grade_id, c.score, c.max_score, c.reason, tuple(c.hidden_failed), c.status,
                                round(c.seconds, 4)) for c in done.scored),
            error=job.problem, notes=tuple(notes), incidents=tuple(done.incidents),
            restarts=_int(header.get("restarts")), execution_time=done.execution_time,
            grading_time=time.perf_counter() - job.started,
            sandbox={str(k)[:64]: str(v)[:2000] for k, v in list(sandbox.items())[:32]})

    def write(self, gb, job: Job, done: Assessed, log: NotebookLog, src: Source) -> tuple[float, float]:
        """Autograded notebook and log (atomically), then the gradebook (one commit); (write, gradebook) seconds."""
        t0 = time.perf_counter()
        store.write_outputs(job.sub, nbmod.for_feedback(done.nb, copy_first=False), log)
        t1 = time.perf_counter()
        scores = {c.grade_id: c.score for c in [*done.scored, *done.answers]}
        store.record_grades(gb, job.sub, scores, self._responded(job, done, src), self.cell_ids)
        return t1 - t0, time.perf_counter() - t1

    def _responded(self, job: Job, done: Assessed, src: Source) -> dict[str, bool]:
        """Per solution cell: did the student change the release stub? (nbgrader's "No response.")"""
        from nbgrader.utils import compute_checksum

        present = {cells.grade_id(c): c for c in done.nb.cells if cells.grade_id(c)}
        out = {}
        for gid, checksum in src.release.items():
            cell = present.get(gid)
            if cell is not None and cells.is_solution(cell):
                out[gid] = job.problem is None and compute_checksum(cell) != checksum
        return out


def _int(x: object) -> int:
    return x if type(x) is int and 0 <= x < 1 << 31 else 0
