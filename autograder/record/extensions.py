"""Extensions: one student's own due date for one assignment.

The instructor gives either a moment (`--until '2025-02-10 23:00'`) or a duration (`--by 2d`);
the record keeps what was given (`COURSE/record/extensions.json`), so an `--until` stays at its
moment when the course's due date moves, and a `--by` moves with it. nbgrader keeps an
extension as a duration (`SubmittedAssignment.extension`, added to `Assignment.duedate` by its
`duedate` and `total_seconds_late`): `sync` writes each one there once the student has a
submission, and every output reads it from there, as formgrader does.
"""
from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from pathlib import Path

from autograder import config
from autograder.errors import AutograderError
from autograder.gradebook import open_course
from autograder.gradinglog import atomic_write
from coursenb.chapters import assignment_order

FILE = "extensions.json"
UNITS = {"w": 7 * 86_400, "d": 86_400, "h": 3600, "min": 60, "m": 60}
DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(w|d|h|min|m)\b\s*")


class ExtensionError(AutograderError, ValueError):
    """An extension that cannot be given as asked (a user-facing sentence)."""


@dataclass(frozen=True)
class Extension:
    """What the instructor gave one student for one assignment: a moment (`until`) or a duration (`by`)."""

    student: str
    assignment: str
    until: dt.datetime | None = None  # aware, UTC
    by: dt.timedelta | None = None

    def length(self, due: dt.datetime | None) -> dt.timedelta | None:
        """The extension as nbgrader keeps it (added to the course's due date `due`); never negative."""
        if self.by is not None:
            return self.by
        if self.until is None or due is None:
            return None
        return max(self.until - due, dt.timedelta(0))

    def to_json(self) -> dict:
        return {"until": self.until.strftime("%Y-%m-%dT%H:%M:%SZ") if self.until else None,
                "by_seconds": self.by.total_seconds() if self.by is not None else None}


@dataclass(frozen=True)
class StudentDue:
    """One student's due date for one assignment: the course's, the extension, and theirs (aware UTC)."""

    student: str
    assignment: str
    course_due: dt.datetime | None
    extension: dt.timedelta | None

    @property
    def due(self) -> dt.datetime | None:
        """The student's own due date (the course's plus the extension)."""
        if self.course_due is None:
            return None
        return self.course_due + (self.extension or dt.timedelta(0))


def parse_duration(text: str) -> dt.timedelta:
    """'2d', '36h', '1d 12h', '90min', '1w' as a timedelta ('0' is none); ExtensionError otherwise."""
    text = str(text).strip().lower()
    if text in ("0", "none"):
        return dt.timedelta(0)
    pos, seconds = 0, 0.0
    for m in DURATION.finditer(text):
        if m.start() != pos:
            break
        seconds += float(m[1]) * UNITS[m[2]]
        pos = m.end()
    if not text or pos != len(text) or not 0 <= seconds <= 366 * 86_400:
        raise ExtensionError(f"--by expects a duration such as 2d, 36h, '1d 12h' or 90min (at most a year), "
                             f"got {text!r}")
    return dt.timedelta(seconds=seconds)


def path(course_dir: Path) -> Path:
    """Where the course keeps the extensions it gave."""
    return Path(course_dir) / "record" / FILE


def read(course_dir: Path) -> dict[tuple[str, str], Extension]:
    """(assignment, student) -> the extension given (an empty dict before any; ExtensionError for a bad file)."""
    p = path(course_dir)
    if not p.is_file():
        return {}
    try:
        data = json.loads(p.read_text())
        out = {}
        for assignment, students in data.get("extensions", {}).items():
            for student, e in students.items():
                until = dt.datetime.fromisoformat(e["until"].replace("Z", "+00:00")) if e.get("until") else None
                by = dt.timedelta(seconds=float(e["by_seconds"])) if e.get("by_seconds") is not None else None
                out[assignment, student] = Extension(student, assignment, until, by)
        return out
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ExtensionError(f"{p} cannot be read ({type(exc).__name__}): fix or delete it") from None


def write(course_dir: Path, extensions: dict[tuple[str, str], Extension]) -> None:
    """Replace the record of extensions (atomically)."""
    data: dict[str, dict] = {}
    for (assignment, student), e in sorted(extensions.items()):
        data.setdefault(assignment, {})[student] = e.to_json()
    p = path(course_dir)
    p.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(p, (json.dumps({"extensions": data}, indent=1, sort_keys=True) + "\n").encode())


def give(course_dir: Path, extension: Extension, due: dt.datetime | None) -> Extension | None:
    """Record `extension` (replacing any earlier one of that student and assignment; a zero one removes it);
    ExtensionError for an assignment without a due date or a moment not after it. Returns what is kept."""
    if due is None:
        raise ExtensionError(f"{extension.assignment} has no due date: set one first "
                             f"(autograder deadlines --due '{extension.assignment}=YYYY-MM-DD HH:MM')")
    if extension.until is not None and extension.until <= due:
        raise ExtensionError(f"--until {extension.until:%Y-%m-%d %H:%M} UTC is not after {extension.assignment}'s due "
                             f"date ({due:%Y-%m-%d %H:%M} UTC): an extension gives more time")
    kept = read(course_dir)
    key = (extension.assignment, extension.student)
    remove = extension.until is None and not extension.by
    if remove:
        kept.pop(key, None)
    else:
        kept[key] = extension
    write(course_dir, kept)
    return None if remove else extension


def sync(gb, course_dir: Path, due: dict[str, dt.datetime], removed: tuple[tuple[str, str], ...] = ()) -> list[str]:
    """Write the record's extensions into nbgrader's `SubmittedAssignment.extension` (where the student has a
    submission), and clear those of `removed` (assignment, student); returns 'student/assignment' changed."""
    from nbgrader.api import MissingEntry

    changed = []
    wanted = {key: e.length(due.get(key[0])) for key, e in read(course_dir).items()}
    wanted.update({key: None for key in removed if key not in wanted})
    for (assignment, student), length in sorted(wanted.items()):
        try:
            sub = gb.find_submission(assignment, student)
        except MissingEntry:
            continue  # not submitted yet: written at the grading that creates the submission
        if sub.extension != (length or None):
            sub.extension = length or None
            changed.append(f"{student}/{assignment}")
    if changed:
        gb.db.commit()
    return changed


def due_for(course_dir: Path, student: str, assignment: str) -> StudentDue:
    """The student's own due date for `assignment`: the extension the record gives them (which `sync` writes into
    nbgrader), else the one nbgrader holds for their submission (set through its own API)."""
    from nbgrader.api import MissingEntry

    course_due = config.load(course_dir).due.get(assignment)
    given = read(course_dir).get((assignment, student))
    if given is not None:
        return StudentDue(student, assignment, course_due, given.length(course_due) or None)
    with open_course(course_dir) as gb:
        try:
            length = gb.find_submission(assignment, student).extension
        except MissingEntry:
            length = None
    return StudentDue(student, assignment, course_due, length or None)


def every(course_dir: Path) -> list[StudentDue]:
    """Every student's extension: those the record gives and those only nbgrader holds, by assignment."""
    from nbgrader.api import SubmittedAssignment

    due = config.load(course_dir).due
    given = read(course_dir)
    out = {key: StudentDue(e.student, e.assignment, due.get(e.assignment), e.length(due.get(e.assignment)) or None)
           for key, e in given.items()}
    with open_course(course_dir) as gb:
        for sub in gb.db.query(SubmittedAssignment).filter(SubmittedAssignment.extension.isnot(None)).all():
            key = (sub.assignment.name, sub.student.id)
            if key not in out and sub.extension:
                out[key] = StudentDue(sub.student.id, sub.assignment.name, due.get(key[0]), sub.extension)
    return [out[k] for k in sorted(out, key=lambda k: (assignment_order(k[0]), k[1]))]
