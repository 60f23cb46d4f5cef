"""The roster: who each student is, as the LMS names them.

`autograder roster import FILE` reads either the gradebook CSV an LMS exports (Canvas's:
`Student, ID, SIS User ID, SIS Login ID, Section, ...`, the student's name as "Last, First")
or nbgrader's own student CSV (`id, first_name, last_name, email`, as `nbgrader db student
import` takes it). A Canvas row is kept by its Canvas user id in `COURSE/record/roster.json`
(the name, SIS ids, section), and written into nbgrader's student table (first and last name)
for the student collect has given that user id, now or at a later collect; an nbgrader row
names the student of that id directly, as nbgrader does. The Canvas export then names each
student as Canvas does.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from autograder import export
from autograder.errors import AutograderError
from autograder.gradebook import open_course
from autograder.gradinglog import atomic_write

FILE = "roster.json"
CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


class RosterError(AutograderError, ValueError):
    """A roster that cannot be read (a user-facing sentence)."""


@dataclass
class Imported:
    """What `import_csv` did: people read, students named, and people no student has yet (named when collected)."""

    kind: str  # "canvas" or "nbgrader"
    people: int = 0
    named: list[str] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)  # LMS user ids collect has not seen yet


def path(course_dir: Path) -> Path:
    return Path(course_dir) / "record" / FILE


def people(course_dir: Path) -> dict[str, list[str]]:
    """Canvas user id -> [Student, ID, SIS User ID, SIS Login ID, Section] of every person the roster holds."""
    try:
        data = json.loads(path(course_dir).read_text())
    except (OSError, ValueError):
        return {}
    canvas = data.get("canvas") if isinstance(data, dict) else None
    return {str(k): [str(x) for x in v][:5] for k, v in (canvas or {}).items() if isinstance(v, list) and len(v) >= 5}


def split_name(name: str) -> tuple[str, str]:
    """(first, last) of a name as Canvas sorts it ('Kim, Alex') or writes it ('Alex Kim')."""
    name = " ".join(name.split())
    if "," in name:
        last, _, first = name.partition(",")
        return first.strip(), last.strip()
    first, _, last = name.rpartition(" ")
    return (first, last) if first else ("", last)


def import_csv(course_dir: Path, csv_path: Path) -> Imported:
    """Read a Canvas gradebook CSV or nbgrader's student CSV into the roster and nbgrader's student table."""
    try:
        header, rows, _ = export.read_csv(csv_path, expect="ID")
        if "ID" not in header:  # nbgrader's columns are lower case (and may be split on ; or tab)
            header, rows, _ = export.read_csv(csv_path, expect="id")
    except export.CsvError as exc:
        raise RosterError(f"the roster: {exc}") from None
    names = [h.strip() for h in header]
    if "Student" in names and "ID" in names:
        found = export.canvas_people(csv_path)
        kept = people(course_dir)
        kept.update(found)
        p = path(course_dir)
        p.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(p, (json.dumps({"canvas": dict(sorted(kept.items()))}, indent=1) + "\n").encode())
        done = Imported("canvas", len(found))
        named = sync(course_dir)
        done.named = sorted(s for s, lms in named.items() if lms in found)
        done.waiting = sorted(set(found) - set(named.values()))
        return done
    if "id" in names:
        at = {h: k for k, h in enumerate(names)}
        done = Imported("nbgrader")
        with open_course(course_dir) as gb:
            for row in rows:
                get = lambda col, row=row: export.unquote(row[at[col]].strip()) if col in at and at[col] < len(row) else ""  # noqa: E731
                student = get("id")
                if not student:
                    continue
                fields = {k: get(k) or None for k in ("first_name", "last_name", "email", "lms_user_id") if k in at}
                gb.update_or_create_student(student, **fields)
                done.people += 1
                done.named.append(student)
        return done
    raise RosterError(f"{csv_path} is neither an LMS gradebook (Canvas's starts Student, ID) nor nbgrader's student "
                      "CSV (id, first_name, last_name, email)")


def sync(course_dir: Path) -> dict[str, str]:
    """Name every student whose Canvas user id the roster holds (nbgrader's first and last name); returns
    {student: Canvas user id} of those it holds."""
    from nbgrader.api import Student

    held = people(course_dir)
    if not held:
        return {}
    out = {}
    with open_course(course_dir) as gb:
        for s in gb.db.query(Student).filter(Student.lms_user_id.isnot(None)).all():
            row = held.get(str(s.lms_user_id))
            if row is None:
                continue
            first, last = split_name(row[0])
            if (s.first_name, s.last_name) != (first or None, last or None):
                s.first_name, s.last_name = first or None, last or None
            out[s.id] = str(s.lms_user_id)
        gb.db.commit()
    return out
