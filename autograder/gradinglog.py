"""The grading log: what the engine decided for each notebook, and why.

`course/autograded/<student>/<assignment>/grading_log.json` holds one `NotebookLog` per
notebook of that assignment, and under "history" every earlier log of each notebook, oldest
first (a regrade keeps what was decided before). The engine writes it (one writer,
atomically, before the notebook's grades are committed); reports, exports and feedback read
the current logs through `read_all`, a notebook's earlier ones through `history`.
Every field is typed here and nowhere else: the JSON is made by `asdict` and read back by
`NotebookLog.from_dict`, which checks each value's type and never trusts a key it does not know.
"""
from __future__ import annotations

import json
import math
import os
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from autograder.errors import AutograderError

LOG_NAME = "grading_log.json"
ENGINE_VERSION = "2"  # a log of another version is graded again


# A behaviour check's figure, as its message carries it on a pass and on a fail: "(gap 0.071, bound 0.1, margin 0.029)".
_NUMBER = r"-?(?:\d[\d.]*(?:e[+-]?\d+)?|inf|nan)"
FIGURE = re.compile(rf"\((?P<name>[a-z][a-z \-]{{0,40}}?) (?P<value>{_NUMBER}), bound (?P<bound>{_NUMBER}), "
                    rf"margin (?P<margin>{_NUMBER})\)")


def figure(name: str, value: float, bound: float) -> str:
    """A statistic judged against an upper bound, as a message shows it: its value, the bound, and the margin
    (bound - value: how far inside the bound; negative or nan outside). The judge passes only on a finite
    value within its bound; the feedback page and the report read the figure back with `figures`."""
    margin = bound - value if math.isfinite(value) else math.nan
    return f"({name} {value:.3g}, bound {bound:g}, margin {margin:.3g})"


def figures(text: str) -> list[tuple[str, float, float, float]]:
    """Every figure in `text`: (statistic, value, bound, margin)."""
    return [(m["name"], float(m["value"]), float(m["bound"]), float(m["margin"])) for m in FIGURE.finditer(text)]


class LogError(AutograderError, ValueError):
    """A grading log that is not readable JSON of the expected shape."""


@dataclass(frozen=True)
class CellLog:
    """One graded cell: its score (None: left for the instructor), the reason, the failed hidden checks."""

    grade_id: str
    score: float | None
    max_score: float
    reason: str
    failed_checks: tuple[str, ...] = ()
    status: str = "ok"  # how its code ran: ok, error, killed, skipped, not run
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.score is not None and self.score >= self.max_score


@dataclass(frozen=True)
class Incident:
    """A code cell that raised, was stopped, or was not run (graded or not)."""

    cell: int  # index in the notebook
    grade_id: str | None
    status: str  # error, killed, skipped
    reason: str


@dataclass(frozen=True)
class NotebookLog:
    """The engine's account of one student's notebook."""

    student: str
    assignment: str
    notebook: str
    submission_sha256: str | None
    source_sha256: str | None
    graded_at: str  # UTC, ISO 8601
    cells: tuple[CellLog, ...]
    error: str | None = None  # why the notebook could not be run at all
    notes: tuple[str, ...] = ()  # repairs made to the submission before it ran
    incidents: tuple[Incident, ...] = ()
    restarts: int = 0
    execution_time: float = 0.0  # seconds its cells ran
    grading_time: float = 0.0  # seconds from reading the file to the committed grades
    sandbox: dict[str, str] = field(default_factory=dict)  # what the isolation achieved
    engine: str = ENGINE_VERSION

    @property
    def score(self) -> float:
        return sum(c.score or 0.0 for c in self.cells)

    @property
    def max_score(self) -> float:
        return sum(c.max_score for c in self.cells)

    def cell(self, grade_id: str) -> CellLog | None:
        """The log of graded cell `grade_id`, if it has one."""
        return next((c for c in self.cells if c.grade_id == grade_id), None)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (the derived totals and pass marks included, for people reading the file)."""
        data = asdict(self)
        for entry, cell in zip(data["cells"], self.cells):
            entry["passed"] = cell.passed
        return {**data, "score": self.score, "max_score": self.max_score}

    @classmethod
    def from_dict(cls, data: object) -> NotebookLog:
        """The inverse of `to_dict`; LogError naming the first value of the wrong type."""
        d = _record(data, "notebook")
        cells = tuple(CellLog(**_fields(CellLog, _record(c, "cell"))) for c in _list(d.get("cells"), "cells"))
        incidents = tuple(Incident(**_fields(Incident, _record(i, "incident"))) for i in _list(d.get("incidents", []),
                                                                                          "incidents"))
        values = _fields(cls, {k: v for k, v in d.items() if k not in ("cells", "incidents")})
        return cls(**{**values, "cells": cells, "incidents": incidents})


# ---------------------------------------------------------------- files


def write(folder: Path, log: NotebookLog) -> None:
    """Make `log` the current entry of `log.notebook` in folder/grading_log.json, the entry it replaces
    going to the notebook's history (atomically: write, then rename)."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        entries, history = _read_whole(folder / LOG_NAME)
    except LogError:
        entries, history = {}, {}
    if log.notebook in entries:
        history.setdefault(log.notebook, []).append(entries[log.notebook])
    entries[log.notebook] = log.to_dict()
    whole = {"student": log.student, "assignment": log.assignment, "notebooks": entries, "history": history}
    atomic_write(folder / LOG_NAME, json.dumps(whole, separators=(",", ":")).encode())  # compact: json's C encoder


def history(folder: Path, notebook: str) -> list[NotebookLog]:
    """The earlier logs of `notebook` in folder/grading_log.json, oldest first (unreadable ones skipped)."""
    try:
        _, past = _read_whole(folder / LOG_NAME)
    except LogError:
        return []
    out = []
    for entry in past.get(notebook, []):
        try:
            out.append(NotebookLog.from_dict(entry))
        except (LogError, TypeError):
            continue
    return out


def read(folder: Path, notebook: str) -> NotebookLog | None:
    """The log of `notebook` in folder/grading_log.json; None if there is none or it is unreadable."""
    try:
        entry = _read_file(folder / LOG_NAME).get(notebook)
        return None if entry is None else NotebookLog.from_dict(entry)
    except (LogError, TypeError):
        return None


def read_all(course_dir: Path, students: list[str] | None = None) -> list[NotebookLog]:
    """Every notebook's log under course_dir/autograded (only `students`' when given), in a stable order; LogError
    on a damaged file."""
    out = []
    root = Path(course_dir) / "autograded"
    paths = root.glob(f"*/*/{LOG_NAME}") if students is None else \
        [p for s in students for p in (root / s).glob(f"*/{LOG_NAME}")]
    for path in sorted(paths):
        for entry in _read_file(path).values():
            try:
                out.append(NotebookLog.from_dict(entry))
            except (LogError, TypeError) as exc:
                raise LogError(f"{path}: {exc}") from None
    return out


def atomic_write(path: Path, data: bytes) -> None:
    """Write-then-rename: readers see the old file or the new one, never half of one. (No fsync: after a
    power loss a missing or stale file only means the notebook is graded again.)"""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _read_file(path: Path) -> dict[str, Any]:
    return _read_whole(path)[0]


def _read_whole(path: Path) -> tuple[dict[str, Any], dict[str, list]]:
    """(current entries by notebook, earlier entries by notebook) of a grading log file."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}, {}
    except (OSError, ValueError, RecursionError) as exc:
        raise LogError(f"{path} is not readable JSON ({str(exc)[:200]})") from None
    if not isinstance(data, dict) or not isinstance(data.get("notebooks"), dict):
        raise LogError(f"{path} is not a grading log")
    past = data.get("history")
    past = {k: v for k, v in past.items() if isinstance(v, list)} if isinstance(past, dict) else {}
    return data["notebooks"], past


# ---------------------------------------------------------------- checking what is read

_TYPES: dict[str, tuple[type, ...]] = {"str": (str,), "float": (int, float), "int": (int,), "bool": (bool,)}


def _record(x: object, what: str) -> dict[str, Any]:
    if not isinstance(x, dict):
        raise LogError(f"a {what} entry is not an object")
    return x


def _list(x: object, what: str) -> list:
    if not isinstance(x, list):
        raise LogError(f"{what} is not a list")
    return x


def _fields(cls: type, d: dict[str, Any]) -> dict[str, Any]:
    """The entries of `d` that are fields of dataclass `cls`, each checked against its annotation."""
    out = {}
    for f in fields(cls):
        if f.name not in d:
            continue
        value, kinds = d[f.name], str(f.type).replace(" ", "").split("|")
        if value is None and "None" in kinds:
            out[f.name] = None
        elif kinds[0].startswith("tuple["):
            out[f.name] = tuple(str(v) for v in _list(value, f.name))
        elif kinds[0].startswith("dict["):
            out[f.name] = {str(k): str(v) for k, v in _record(value, f.name).items()}
        elif any(isinstance(value, _TYPES.get(k, ())) and not (k != "bool" and isinstance(value, bool)) for k in kinds):
            out[f.name] = float(value) if "float" in kinds and not isinstance(value, str) else value
        else:
            raise LogError(f"{f.name} has a value of type {type(value).__name__}")
    return out
