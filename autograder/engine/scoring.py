"""The trusted decision, in the grader's process: trials out, outcomes in, `judge` decides.

A test cell scores its points iff (1) it ran to the end in the sandbox, (2) stock
nbgrader's rule gives it points (no error output, no stderr beyond the course's ignored
pattern, the same partial-credit rule: `nbgrader.utils.determine_grade`), and (3) every
hidden check named in its (restored, trusted) source reported from inside THIS cell and
passed `autograder.judge.judge` here. The student's process only ever sent plain data.
"""
from __future__ import annotations

import copy
import hashlib
import json
import re
from dataclasses import dataclass, field

from nbformat import NotebookNode, from_dict

from attnlab import wire
from attnlab.grading import Outcome
from coursenb.cells import SAFE_MIME, hidden_check_names, is_test


@dataclass
class Trials:
    """The run's trial inputs per hidden check, drawn once from the run's secret seed."""

    seed: int
    by_name: dict[str, list[tuple]] = field(default_factory=dict)
    encoded: dict[str, bytes] = field(default_factory=dict)

    def add(self, name: str) -> None:
        """Draw (once) and encode the trials of check `name`; KeyError for an unknown check."""
        from autograder.judge import make_trials, sent

        if name not in self.by_name:
            self.by_name[name] = make_trials(name, self.seed)
            self.encoded[name] = wire.encode(sent(name, self.by_name[name]))  # what only the judge sees stays here


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


class Judge:
    """Decides hidden checks from outcome blobs, caching verdicts by (check, outcomes)."""

    def __init__(self, trials: Trials) -> None:
        self.trials = trials
        self.cache: dict[tuple[str, str], tuple[bool, str]] = {}

    def verdict(self, name: str, blobs: list[bytes]) -> tuple[bool, str]:
        """(passed, message) for one report of check `name`."""
        key = (name, hashlib.sha256(b"\0".join(blobs) + str(len(blobs)).encode()).hexdigest())
        if key not in self.cache:
            self.cache[key] = self._decide(name, blobs)
            if len(self.cache) > 50_000:
                self.cache.clear()
        return self.cache[key]

    def _decide(self, name: str, blobs: list[bytes]) -> tuple[bool, str]:
        if name not in self.trials.by_name:
            return False, f"unknown check {name!r}"
        return self._decide_plain(name, [decode_outcome(b) for b in blobs])

    def _decide_plain(self, name: str, outcomes: list[Outcome]) -> tuple[bool, str]:
        from autograder.judge import judge

        try:
            v = judge(name, self.trials.by_name[name], outcomes)
        except Exception as exc:  # noqa: BLE001 - a strange value must not stop the run
            return False, f"the grader could not compare the result ({type(exc).__name__}: {str(exc)[:200]})"
        return bool(v.passed), str(v.message)


def decode_outcome(blob: bytes) -> Outcome:
    """One outcome from the student's process (plain data only; devices recorded)."""
    try:
        d = wire.decode(blob, record_device=True)
    except wire.WireError as exc:
        return Outcome(error=f"the result could not be read ({exc})")
    if not isinstance(d, dict) or set(d) != {"value", "error"} or not (d["error"] is None or isinstance(d["error"], str)):
        return Outcome(error="the result could not be read (malformed)")
    return Outcome(value=d["value"], error=d["error"])



def outputs_from(blob: bytes) -> list[NotebookNode]:
    """Validated nbformat outputs from the student's process (anything else dropped)."""
    try:
        raw = json.loads(blob.decode())
    except (UnicodeDecodeError, json.JSONDecodeError):
        return [error_output("OutputError", "the cell's outputs could not be read")]
    out = []
    for o in raw if isinstance(raw, list) else []:
        if not isinstance(o, dict):
            continue
        kind = o.get("output_type")
        if kind == "stream" and o.get("name") in ("stdout", "stderr") and isinstance(o.get("text"), str):
            out.append(from_dict({"output_type": "stream", "name": o["name"], "text": o["text"]}))
        elif kind in ("display_data", "execute_result") and isinstance(o.get("data"), dict):
            data = {k: v for k, v in o["data"].items() if k in SAFE_MIME and isinstance(v, str)}
            if not data:
                continue
            md = o.get("metadata") if isinstance(o.get("metadata"), dict) else {}
            node = {"output_type": kind, "data": data, "metadata": _metadata(md, data)}
            if kind == "execute_result":
                node["execution_count"] = o.get("execution_count") if isinstance(o.get("execution_count"), int) else None
            out.append(from_dict(node))
        elif kind == "error":
            tb = o.get("traceback")
            out.append(error_output(str(o.get("ename", "Error"))[:200], str(o.get("evalue", ""))[:2000],
                              [str(x) for x in tb[:200]] if isinstance(tb, list) else None))
    return out


def _metadata(md: dict, data: dict) -> dict:
    out = {}
    for mime, value in md.items():
        if mime in data and isinstance(value, dict):
            out[mime] = {k: v for k, v in value.items() if k in ("width", "height") and isinstance(v, (int, float))}
    return out


def error_output(ename: str, evalue: str, traceback: list[str] | None = None) -> NotebookNode:
    """An nbformat error output (what the feedback shows for a failure the grader found)."""
    return from_dict({"output_type": "error", "ename": ename, "evalue": evalue,
                      "traceback": traceback if traceback is not None else [f"{ename}: {evalue}"]})


def stock_grade(cell: NotebookNode, ignore: str | None) -> tuple[float | None, str]:
    """Stock nbgrader's grade of an executed cell (IgnorePattern, then determine_grade) and why."""
    from nbgrader.utils import determine_grade

    cell = copy.deepcopy(cell)
    if ignore:
        cell.outputs = [o for o in cell.outputs if not (o.output_type == "stream" and o.name == "stderr"
                                                        and re.search(ignore, o.text))]
    score, max_score = determine_grade(cell)
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


def score_cell(cell: NotebookNode, record: dict, reports: list[tuple[str, list[bytes]]], judge: Judge,
               ignore: str | None) -> CellScore:
    """Score one graded cell whose outputs are already in place; appends the failure as an error output."""
    meta = cell.metadata.nbgrader
    gid, points = meta["grade_id"], float(meta.get("points", 0))
    status, seconds = record.get("status", "skipped"), float(record.get("seconds") or 0.0)
    if not is_test(cell):  # a manually graded answer: nbgrader's rule (None, or 0 if unchanged)
        score, _ = stock_grade(cell, ignore)
        return CellScore(gid, score, points, "needs manual grading" if score is None else "no response", [], status, seconds)
    if status in ("killed", "skipped"):
        reason = str(record.get("reason") or status)
        cell.outputs.append(error_output("CellStopped", reason))
        return CellScore(gid, 0.0, points, reason, [], status, seconds)
    score, reason = stock_grade(cell, ignore)
    failed: list[str] = []
    messages: list[str] = []
    for name in hidden_check_names(cell.source):
        mine = [blobs for n, blobs in reports if n == name]
        if not mine:
            if score:  # the cell ran to the end, yet the check never reported from it
                failed.append(name)
                messages.append(_fail(cell, name, "it did not report (was hidden_check replaced?)"))
            continue
        for blobs in mine:
            ok, message = judge.verdict(name, blobs)
            if not ok:
                failed.append(name)
                messages.append(_fail(cell, name, message))
                break
    if failed and score:
        reason = f"hidden test {failed[0]} failed: {messages[0]}"
    if failed:
        score = 0.0
    return CellScore(gid, score, points, reason, failed, status, seconds)


def _fail(cell: NotebookNode, name: str, message: str) -> str:
    cell.outputs.append(error_output("HiddenTestFailed", f"hidden test {name} failed: {message}"))
    return message
