"""Judging one notebook's result, in the grader: every value the worker relayed from the notebook is read
as data (validated, capped), the hidden checks are decided by the judge within the notebook's budget, and
each graded cell is scored (`scoring.score_cell`). Nothing here raises on what a student sent."""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from autograder.engine import scoring
from autograder.engine.judging import JudgeClient, digest
from autograder.engine.limits import Limits
from autograder.engine.prepare import Job, Source
from autograder.gradinglog import Incident
from coursenb import cells

if TYPE_CHECKING:
    import nbformat

STATUSES = ("ok", "error", "killed", "skipped")


@dataclass
class Assessed:
    """A notebook with its outputs in place, its graded cells' scores and its incidents."""

    nb: nbformat.NotebookNode
    scored: list[scoring.CellScore]
    incidents: list[Incident]
    execution_time: float = 0.0  # wall-clock seconds its cells ran (as the worker measured them)
    answers: list[scoring.CellScore] = field(default_factory=list)  # markdown answers: gradebook only (nothing ran)


def _blob(blobs: list[bytes], i: object) -> bytes:
    return blobs[i] if type(i) is int and 0 <= i < len(blobs) else b"[]"


def _record(rec: object) -> dict:
    """One cell's record as the worker sent it, with every value checked."""
    if not isinstance(rec, dict) or rec.get("status") not in STATUSES:
        return {"status": "skipped", "reason": "not run (no record of this cell)"}
    out = {"status": rec["status"], "reason": str(rec.get("reason") or "")[:1000]}
    seconds = rec.get("seconds")
    out["seconds"] = float(seconds) if type(seconds) in (int, float) and 0 <= seconds < 1e7 else 0.0
    count = rec.get("count")
    out["count"] = count if type(count) is int and 0 < count < 1 << 31 else None
    return out


def unrun(job: Job, src: Source) -> Assessed:
    """A notebook that was not run: its cells (or the source's, without solutions), each test cell with the reason."""
    if job.restored is not None:
        nb = job.restored.nb
    else:
        nb = copy.deepcopy(src.nb)
        for cell in nb.cells:
            if cells.is_solution(cell):
                cell.source = "# (nothing was graded: see the note in the test cells)"
    for cell in nb.cells:
        if cells.is_test(cell):
            cell.outputs = [scoring.error_output("NotGraded", job.problem)]
    prose = {cells.grade_id(c) for c in src.nb.cells if c.cell_type != "code" and cells.grade_id(c)}
    zero = [scoring.CellScore(g, 0.0, p, job.problem, [], "not run", 0.0) for g, p in src.points.items()]
    return Assessed(nb, [z for z in zero if z.grade_id not in prose], [], answers=[z for z in zero if z.grade_id in prose])


def assess(job: Job, header: dict, blobs: list[bytes], judge: JudgeClient, limits: Limits,
           ignore: str | None, src: Source | None = None) -> Assessed:
    """Score a notebook from its result frame (see module doc)."""
    nb = job.restored.nb
    raw = header.get("cells") if isinstance(header.get("cells"), list) else []
    ran = [raw[p] if p < len(raw) else None for p in range(len(job.code))]
    records, reports = [], []
    for rec_in in ran:
        records.append(_record(rec_in))
        mine = []
        for r in (rec_in.get("reports") if isinstance(rec_in, dict) and isinstance(rec_in.get("reports"), list) else []):
            if isinstance(r, list) and len(r) == 2 and isinstance(r[0], str) and isinstance(r[1], list):
                mine.append((r[0][:200], [_blob(blobs, i) for i in r[1][:limits.max_outcomes]]))
        reports.append(mine)
    wanted = [(name, outs) for p, idx in enumerate(job.code) if cells.is_test(nb.cells[idx])
              and records[p]["status"] not in ("killed", "skipped")
              for name, outs in reports[p] if name in cells.hidden_check_names(nb.cells[idx].source)]
    judged = judge.ask_verdicts(job.seed, job.trials, wanted, limits.judge_seconds) if wanted else list
    try:
        items_left, bytes_left = limits.total_output_items, limits.total_output_bytes
        for p, idx in enumerate(job.code):  # the cells' outputs, while the judge process judges
            rec_in, rec, cell = ran[p], records[p], nb.cells[idx]
            cell.outputs = scoring.outputs_from(_blob(blobs, rec_in.get("outputs") if isinstance(rec_in, dict) else None),
                                                min(limits.cell_output_bytes, max(bytes_left, 0)),
                                                min(limits.cell_output_items, max(items_left, 1)), rec["count"])
            items_left -= len(cell.outputs)
            bytes_left -= sum(scoring.output_size(o) for o in cell.outputs)
            cell.execution_count = rec["count"]
    finally:  # read, whatever happened here: the judge's answers never wait for the next notebook's request
        found = judged()
    decided = {(name, digest(outs)): (v.passed, v.message) for (name, outs), v in zip(wanted, found)}

    def verdict(name: str, outs: list[bytes]) -> tuple[bool, str]:
        return decided.get((name, digest(outs)), (False, "the result was not judged"))

    scored, incidents = [], []
    release = src.release if src is not None else {}
    for p, idx in enumerate(job.code):
        cell, rec = nb.cells[idx], records[p]
        gid = cells.grade_id(cell)
        if gid and cells.is_graded(cell):
            try:
                scored.append(scoring.score_cell(cell, rec, reports[p], verdict, ignore, release.get(gid)))
            except Exception as exc:  # noqa: BLE001 - this cell scores 0 with the reason; the others stand
                why = f"the grader could not score this cell ({type(exc).__name__}: {str(exc)[:300]})"
                cell.outputs.append(scoring.error_output("GradingError", why))
                scored.append(scoring.CellScore(gid, 0.0, cells.points(cell), why, [], rec["status"], rec["seconds"]))
        elif rec["status"] in ("killed", "skipped"):
            cell.outputs.append(scoring.error_output("CellStopped", rec["reason"]))
        if rec["status"] in ("killed", "skipped"):
            incidents.append(Incident(idx, gid, rec["status"], rec["reason"][:500]))
        elif rec["status"] == "error":
            err = next((o for o in cell.outputs if o.output_type == "error"), None)
            incidents.append(Incident(idx, gid, "error",
                                      f"raised {err.ename}: {err.evalue}"[:500] if err else "raised an error"))
    answers = [scoring.score_cell(cell, {"status": "ok"}, [], verdict, ignore, release.get(cells.grade_id(cell)))
               for cell in nb.cells if cells.grade_id(cell) and cell.cell_type != "code" and cells.is_graded(cell)]
    return Assessed(nb, scored, incidents, sum(r["seconds"] for r in records), answers)
