"""Grades out of the gradebook: a plain CSV, per-cell CSV, or a CSV Canvas's gradebook imports.

Canvas's importer (canvas-lms lib/gradebook_importer.rb) needs a header whose first
column contains "Student" and second "ID", with the student-information columns ending
in "Section": `Student, ID, Section` or `Student, ID, SIS User ID, SIS Login ID, Section`
(an `SIS User ID` column without `SIS Login ID` is rejected as an invalid header). It
finds a student by the Canvas user id in `ID`, then by SIS ids, then by name; an
assignment column is `Title (canvas id)` or a title it matches or creates. A row whose
first cell contains "Points Possible" gives the assignments' points; a blank score
leaves Canvas's grade unchanged.
"""
from __future__ import annotations

import csv
from pathlib import Path

from autograder.grades import Class

CANVAS_STUDENT_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def _num(x: float) -> str:
    return f"{round(x, 2):g}"


def write_totals(cls: Class, path: Path) -> int:
    """One row per student and notebook: totals and status; returns the row count."""
    rows = [[t.student, t.assignment, t.notebook, _num(t.score) if t.status != "missing" else "",
             _num(t.max_score), t.status] for t in cls.totals()]
    return _write(path, ["student_id", "assignment", "notebook", "score", "max_score", "status"], rows)


def write_cells(cls: Class, path: Path) -> int:
    """One row per student, notebook and graded cell."""
    rows = [[c.student, c.assignment, c.notebook, c.grade_id, "" if c.score is None else _num(c.score),
             _num(c.max_score)] for c in cls.cells]
    return _write(path, ["student_id", "assignment", "notebook", "grade_id", "score", "max_score"], rows)


def write_canvas(cls: Class, path: Path, canvas_ids: dict[str, str] | None = None) -> int:
    """Canvas gradebook import: one row per student, one column per assignment (blank = missing)."""
    canvas_ids = canvas_ids or {}
    assignments, max_by_assignment, totals = cls.assignments(), cls.assignment_max(), cls.assignment_totals()
    header = CANVAS_STUDENT_COLUMNS + [f"{a} ({canvas_ids[a]})" if a in canvas_ids else a for a in assignments]
    rows = [["    Points Possible", "", "", "", ""] + [_num(max_by_assignment[a]) for a in assignments]]
    for student in sorted(cls.students):
        info = cls.students[student]
        name = ", ".join(x for x in (info.get("last_name"), info.get("first_name")) if x) or student
        scores = ["" if totals[student, a].status == "missing" else _num(totals[student, a].score) for a in assignments]
        rows.append([name, info.get("lms_user_id") or "", "", "", ""] + scores)
    return _write(path, header, rows) - 1


def _write(path: Path, header: list[str], rows: list[list]) -> int:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return len(rows)
