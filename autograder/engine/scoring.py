"""The rules of a graded cell, in the grader's process: outputs read back with caps, stock nbgrader's rule,
and the hidden checks' verdicts.

A test cell scores its points iff (1) it ran to the end in the sandbox, (2) stock nbgrader's
rule gives it points (no error output, no stderr beyond the course's ignored pattern, the same
partial-credit rule: `nbgrader.utils.determine_grade`), and (3) every hidden check named in its
(restored, trusted) source reported from inside THIS cell and passed the judge. The student's
process only ever sent plain data; anything that makes nbgrader's rule raise scores 0 with a
reason instead of stopping the run.
"""
from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from autograder.gradinglog import FIGURE
from coursenb.cells import SAFE_MIME, hidden_check_names, is_test

if TYPE_CHECKING:  # nbformat is imported at the first output, after a run's sandboxes start
    from nbformat import NotebookNode


def from_dict(d: dict) -> NotebookNode:
    """nbformat's `from_dict` (a NotebookNode, recursively)."""
    import nbformat

    return nbformat.from_dict(d)


PIECE_BYTES = 64  # what one output piece costs against the byte cap, besides its text


@dataclass
class CellScore:
    """One graded cell's result, as the log and the gradebook see it."""

    grade_id: str
    score: float | None
    max_score: float
    reason: str
    hidden_failed: list[str]
    status: str
    seconds: float


def outputs_from(blob: bytes, max_bytes: int, max_items: int, count: int | None = None) -> list[NotebookNode]:
    """Validated nbformat outputs from the student's process, at most `max_bytes` of text in at most
    `max_items` pieces (the rest dropped, with a note); anything that is not an output is dropped."""
    try:
        raw = json.loads(blob.decode())
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError):
        return [error_output("OutputError", "the cell's outputs could not be read")]
    out: list[NotebookNode] = []
    left = max_bytes
    items = raw if isinstance(raw, list) else []
    for at, o in enumerate(items):
        node = _output(o, count)
        if node is None:
            continue
        size = output_size(node) + PIECE_BYTES
        if len(out) >= max_items or size > left:
            error = node if node.output_type == "error" else next(
                (e for e in (_output(x, count) for x in items[at + 1:] if isinstance(x, dict)
                             and x.get("output_type") == "error") if e is not None), None)
            if error is not None and not any(x.output_type == "error" for x in out):
                error.traceback = []  # an error decides the grade: always kept, shortened
                out.append(error)
            out.append(from_dict({"output_type": "stream", "name": "stdout",
                                  "text": "\n... output truncated by the grader: the cell's output reached its limit ...\n"}))
            break
        left -= size
        out.append(node)
    return out


def _output(o: object, count: int | None) -> NotebookNode | None:
    if not isinstance(o, dict):
        return None
    kind = o.get("output_type")
    if kind == "stream" and o.get("name") in ("stdout", "stderr") and isinstance(o.get("text"), str):
        return from_dict({"output_type": "stream", "name": o["name"], "text": o["text"]})
    if kind in ("display_data", "execute_result") and isinstance(o.get("data"), dict):
        data = {k: v for k, v in o["data"].items() if k in SAFE_MIME and isinstance(v, str)}
        if not data:
            return None
        md = o.get("metadata") if isinstance(o.get("metadata"), dict) else {}
        node = {"output_type": kind, "data": data, "metadata": _metadata(md, data)}
        if kind == "execute_result":
            node["execution_count"] = count
        return from_dict(node)
    if kind == "error":
        tb = o.get("traceback")
        return error_output(str(o.get("ename", "Error"))[:200], str(o.get("evalue", ""))[:2000],
                            [str(x)[:4000] for x in tb[:100]] if isinstance(tb, list) else None)
    return None


def output_size(node: NotebookNode) -> int:
    """The characters an output holds (its text, its traceback, or its data), as the byte caps count them."""
    if node.output_type == "stream":
        return len(node.text)
    if node.output_type == "error":
        return len(node.evalue) + sum(map(len, node.traceback))
    return sum(len(v) for v in node.data.values())


def _metadata(md: dict, data: dict) -> dict:
    out = {}
    for mime, value in md.items():
        if mime in data and isinstance(value, dict):
            out[mime] = {k: v for k, v in value.items()
                         if k in ("width", "height") and type(v) in (int, float) and math.isfinite(v) and 0 <= v < 1e5}
    return out


def error_output(ename: str, evalue: str, traceback: list[str] | None = None) -> NotebookNode:
    """An nbformat error output (what the feedback shows for a failure the grader found)."""
    return from_dict({"output_type": "error", "ename": ename, "evalue": evalue,
                      "traceback": traceback if traceback is not None else [f"{ename}: {evalue}"]})


def stock_grade(cell: NotebookNode, ignore: str | None) -> tuple[float | None, str]:
    """Stock nbgrader's grade of an executed cell (IgnorePattern, then determine_grade) and why.

    Where nbgrader itself would raise (a partial-credit value above the cell's points, a result
    without text/plain), the cell scores 0 with the reason: the run goes on.
    """
    from nbgrader.utils import determine_grade

    cell = copy.deepcopy(cell)
    if ignore:
        cell.outputs = [o for o in cell.outputs if not (o.output_type == "stream" and o.name == "stderr"
                                                        and re.search(ignore, o.text))]
    try:
        score, max_score = determine_grade(cell)
    except (KeyError, ValueError, TypeError, OverflowError) as exc:
        return 0.0, f"the cell's last value could not be read as a grade ({type(exc).__name__}: {_line(str(exc))})"
    if score is not None and not math.isfinite(score):
        return 0.0, "the cell's last value is not a finite number of points"
    if score == 0:
        for o in cell.outputs:
            if o.output_type == "error":
                return score, f"the cell raised {o.ename}: {_line(o.evalue)}"
            if o.output_type == "stream" and o.name == "stderr":
                return score, f"the cell wrote to stderr: {_line(o.text)}"
    if score is not None and score < max_score:
        return score, f"the cell's last value gave partial credit {score:g}/{max_score:g}"
    return score, "passed"


def _line(text: str) -> str:
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    return (lines[0] if lines else "")[:300]


Verdicts = Callable[[str, list[bytes]], tuple[bool, str]]


def score_cell(cell: NotebookNode, record: dict, reports: list[tuple[str, list[bytes]]], verdict: Verdicts,
               ignore: str | None, release: str | None = None) -> CellScore:
    """Score one graded cell whose outputs are already in place; appends the failure as an error output.

    `release` is the checksum of the released cell (from the gradebook): a manually graded answer
    whose checksum is unchanged scores 0, "no response" (nbgrader's rule), else waits for a person.
    """
    meta = cell.metadata.nbgrader
    gid, points = meta["grade_id"], float(meta.get("points", 0))
    status, seconds = record.get("status", "skipped"), float(record.get("seconds") or 0.0)
    if not is_test(cell):  # a manually graded answer: nbgrader's rule (None, or 0 if unchanged)
        answer = copy.deepcopy(cell)
        answer.metadata.nbgrader.pop("checksum", None)  # only the release's checksum is trusted
        if release:
            answer.metadata.nbgrader["checksum"] = release
        from nbgrader.utils import determine_grade

        score, _ = determine_grade(answer)
        return CellScore(gid, score, points, "needs manual grading" if score is None else "no response", [], status, seconds)
    if status in ("killed", "skipped"):
        reason = str(record.get("reason") or status)
        cell.outputs.append(error_output("CellStopped", reason))
        return CellScore(gid, 0.0, points, reason, [], status, seconds)
    score, reason = stock_grade(cell, ignore)
    if status == "error" and score:  # it raised, whatever its outputs say
        score, reason = 0.0, "the cell raised an error"
    failed: list[str] = []
    messages: list[str] = []
    shown: list[str] = []  # figures of passing checks (a statistic, its bound, the margin)
    for name in hidden_check_names(cell.source):
        mine = [blobs for n, blobs in reports if n == name]
        if not mine:
            if score:  # the cell ran to the end, yet the check never reported from it
                failed.append(name)
                messages.append(_fail(cell, name, "it did not report (was hidden_check replaced?)"))
            continue
        for blobs in mine:
            ok, message = verdict(name, blobs)
            if not ok:
                failed.append(name)
                messages.append(_fail(cell, name, message))
                break
            if FIGURE.search(message):
                shown.append(message)
    if score and not failed and reason == "passed" and shown:
        reason = f"passed: {'; '.join(shown)}"
    if failed and score:
        reason = f"hidden test {failed[0]} failed: {messages[0]}"
    if failed:
        score = 0.0
    return CellScore(gid, score, points, reason, failed, status, seconds)


def _fail(cell: NotebookNode, name: str, message: str) -> str:
    cell.outputs.append(error_output("HiddenTestFailed", f"hidden test {name} failed: {message}"))
    return message
