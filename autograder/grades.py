"""Read grades back: nbgrader's gradebook (scores), with the engine's grading logs (`autograder.gradinglog`)
for the reasons.

Everything the instructor's reports, exports and feedback show comes from here. The one thing it writes
is derived from what it reads: the late penalties (`apply_late`), which depend on the raw scores.
"""
from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from autograder import config
from autograder.collect import Manifest
from autograder.config import LatePolicy
from autograder.gradebook import GradebookError, open_course
from autograder.late import Lateness, as_utc, lateness, own_due, penalty, sync_due_dates
from autograder.record import extensions
from coursenb.chapters import assignment_order


class ResultsError(GradebookError):
    """A clear, user-facing problem reading grades (e.g. nothing graded yet)."""

    remedy = "run `autograder collect` and `autograder grade` first"


@dataclass(frozen=True)
class CellGrade:
    """One graded cell of one student's notebook."""

    student: str
    assignment: str
    notebook: str
    grade_id: str
    score: float | None  # None: not scored (needs a manual grade)
    max_score: float
    manual: bool = False  # the score is the instructor's (manual_score)
    comment: str | None = None  # the instructor's comment (manual_comment)


@dataclass(frozen=True)
class Submitted:
    """When one student's assignment was submitted and how late, from the gradebook and collect's record."""

    timestamp: dt.datetime | None  # aware, UTC
    due: dt.datetime | None  # aware, UTC: the student's own due date (the assignment's plus their extension)
    lateness: Lateness
    penalties: dict[str, float]  # notebook -> late_submission_penalty (points)
    extension: dt.timedelta | None = None  # nbgrader's SubmittedAssignment.extension


@dataclass
class NotebookTotal:
    """One student's total on one notebook; status 'graded', 'ungraded' or 'missing'. `score` is the final
    score (raw score less the late penalty, times the attempt's credit), `raw_score` what the cells scored."""

    student: str
    assignment: str
    notebook: str
    score: float
    max_score: float
    status: str
    raw_score: float = 0.0
    penalty: float = 0.0
    credit: float = 1.0


@dataclass(frozen=True)
class AssignmentTotal:
    """One student's total on one assignment (all its notebooks): 'graded', 'ungraded' (some cell not
    scored yet) or 'missing' (nothing submitted). `score` is final, `raw_score` before the late penalty and the
    credit."""

    student: str
    assignment: str
    score: float
    max_score: float
    status: str
    raw_score: float = 0.0
    penalty: float = 0.0
    lateness: Lateness | None = None
    credit: float = 1.0


@dataclass
class Class:
    """The gradebook of a course: its notebooks, students and every graded cell."""

    notebooks: list[tuple[str, str, float]]  # (assignment, notebook, max score) in course order
    cell_max: dict[tuple[str, str], dict[str, float]]  # (assignment, notebook) -> {grade_id: points}
    students: dict[str, dict]  # id -> {first_name, last_name, lms_user_id}
    cells: list[CellGrade] = field(default_factory=list)
    submitted: dict[tuple[str, str], Submitted] = field(default_factory=dict)  # (student, assignment) ->
    late_policy: LatePolicy = LatePolicy()
    # (student, assignment) -> the share of its points the graded attempt earns (the service's decaying credit,
    # service.views.credit_in_gradebook, set by the command that shows it); 1 where absent
    credit: dict[tuple[str, str], float] = field(default_factory=dict)

    def totals(self) -> list[NotebookTotal]:
        """A total for every student and notebook, graded or not."""
        by_key: dict[tuple[str, str, str], list[CellGrade]] = {}
        for cell in self.cells:
            by_key.setdefault((cell.student, cell.assignment, cell.notebook), []).append(cell)
        out = []
        for student in sorted(self.students):
            for assignment, notebook, max_score in self.notebooks:
                cells = by_key.get((student, assignment, notebook))
                if cells is None:
                    out.append(NotebookTotal(student, assignment, notebook, 0.0, max_score, "missing"))
                    continue
                status = "graded" if all(c.score is not None for c in cells) else "ungraded"
                raw = sum(c.score or 0.0 for c in cells)
                info = self.submitted.get((student, assignment))
                penalty = min(raw, info.penalties.get(notebook, 0.0)) if info else 0.0
                credit = self.credit.get((student, assignment), 1.0)
                out.append(NotebookTotal(student, assignment, notebook, (raw - penalty) * credit, max_score, status,
                                         raw, penalty, credit))
        return out

    def assignments(self) -> list[str]:
        """The assignments in course order."""
        return list(dict.fromkeys(a for a, _, _ in self.notebooks))

    def assignment_max(self) -> dict[str, float]:
        """The points of each assignment (all its notebooks)."""
        out: dict[str, float] = {}
        for assignment, _, max_score in self.notebooks:
            out[assignment] = out.get(assignment, 0.0) + max_score
        return out

    def assignment_totals(self) -> dict[tuple[str, str], AssignmentTotal]:
        """(student, assignment) -> the student's total on it: the one place totals are added up."""
        parts: dict[tuple[str, str], list[NotebookTotal]] = {}
        for t in self.totals():
            parts.setdefault((t.student, t.assignment), []).append(t)
        out = {}
        for (student, assignment), ts in parts.items():
            submitted = [t for t in ts if t.status != "missing"]
            status = "missing" if not submitted else "ungraded" if any(t.status == "ungraded" for t in ts) else "graded"
            info = self.submitted.get((student, assignment))
            out[student, assignment] = AssignmentTotal(student, assignment, sum(t.score for t in submitted),
                                                       sum(t.max_score for t in ts), status,
                                                       sum(t.raw_score for t in submitted),
                                                       sum(t.penalty for t in submitted),
                                                       info.lateness if info and submitted else None,
                                                       self.credit.get((student, assignment), 1.0) if submitted else 1.0)
        return out

    def graded(self) -> bool:
        """True once at least one notebook has been graded."""
        return any(c.score is not None for c in self.cells)


def load(course_dir: Path) -> Class:
    """Every notebook, student, graded cell and submission of the course's gradebook (a few queries)."""
    from nbgrader.api import Assignment, Comment, Grade, GradeCell, Notebook, SolutionCell, Student, SubmittedAssignment, SubmittedNotebook

    cfg = config.load(course_dir)
    records, _ = Manifest.read(course_dir)
    with open_course(course_dir) as gb:
        assignments = sorted(gb.assignments, key=lambda a: assignment_order(a.name))
        if not assignments:
            raise ResultsError(f"the gradebook of {course_dir} has no assignments: run `autograder release` first")
        notebooks = [(a.name, nb.name, float(nb.max_score)) for a in assignments for nb in sorted(a.notebooks, key=lambda n: n.name)]
        cell_max = {(a.name, nb.name): _in_notebook_order(course_dir, a.name, nb.name,
                                                          {c.name: float(c.max_score) for c in nb.grade_cells})
                    for a in assignments for nb in a.notebooks}
        due = {a.name: as_utc(a.duedate) for a in assignments}
        students = {s.id: {"first_name": s.first_name, "last_name": s.last_name, "lms_user_id": s.lms_user_id}
                    for s in gb.students}
        rows = (gb.db.query(Student.id, Assignment.name, Notebook.name, GradeCell.name, Grade.score,
                            Grade.auto_score, Grade.manual_score, Grade.needs_manual_grade, GradeCell.max_score,
                            SubmittedNotebook.id, GradeCell.name)
                .select_from(Grade)
                .join(GradeCell, Grade.cell_id == GradeCell.id)
                .join(SubmittedNotebook, Grade.notebook_id == SubmittedNotebook.id)
                .join(Notebook, SubmittedNotebook.notebook_id == Notebook.id)
                .join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
                .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
                .join(Student, SubmittedAssignment.student_id == Student.id)
                .all())
        comments = {(nb_id, name): text for nb_id, name, text in
                    gb.db.query(Comment.notebook_id, SolutionCell.name, Comment.manual_comment)
                    .join(SolutionCell, Comment.cell_id == SolutionCell.id)
                    .filter(Comment.manual_comment.isnot(None)).all()}
        subs = (gb.db.query(Student.id, Assignment.name, SubmittedAssignment.timestamp, Notebook.name,
                            SubmittedNotebook.late_submission_penalty, SubmittedAssignment.extension)
                .select_from(SubmittedNotebook)
                .join(Notebook, SubmittedNotebook.notebook_id == Notebook.id)
                .join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
                .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
                .join(Student, SubmittedAssignment.student_id == Student.id)
                .all())
    cells = [CellGrade(student, a, nb, gid, None if auto is None and manual is None else float(score), float(mx),
                       manual is not None, comments.get((nb_id, name)) or None)
             for student, a, nb, gid, score, auto, manual, _needs, mx, nb_id, name in rows]
    position = {(a, nb, gid): k for (a, nb), ids in cell_max.items() for k, gid in enumerate(ids)}
    cells.sort(key=lambda c: (c.student, assignment_order(c.assignment), c.notebook,
                              position.get((c.assignment, c.notebook, c.grade_id), len(position)), c.grade_id))
    submitted: dict[tuple[str, str], Submitted] = {}
    for student, a, stamp, nb, pen, extension in subs:
        key = (student, a)
        if key not in submitted:
            lms_late = any(r.lms_late for k, r in records.items() if k.startswith(f"{student}/{a}/"))
            mine = own_due(due.get(a), extension)
            submitted[key] = Submitted(as_utc(stamp), mine, lateness(as_utc(stamp), mine, lms_late, cfg.late), {},
                                       extension or None)
        submitted[key].penalties[nb] = float(pen or 0.0)
    return Class(notebooks, cell_max, students, cells, submitted, cfg.late)


def _in_notebook_order(course_dir: Path, assignment: str, notebook: str, points: dict[str, float]) -> dict[str, float]:
    """`points` ordered as the cells appear in the course's source notebook (by name if it is gone)."""
    import nbformat

    path = Path(course_dir) / "source" / assignment / f"{notebook}.ipynb"
    order: list[str] = []
    if path.exists():
        order = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nbformat.read(path, as_version=4).cells]
    rank = {gid: k for k, gid in enumerate(order)}
    return {gid: points[gid] for gid in sorted(points, key=lambda g: (rank.get(g, len(rank)), g))}


def apply_late(course_dir: Path, students: Collection[str] | None = None) -> list[tuple[str, str, str, Lateness, float]]:
    """Set every submitted notebook's late_submission_penalty from the policy (only `students`' when given: a
    grading of a few students in a large course); returns, for each late notebook, (student, assignment, notebook,
    lateness, penalty)."""
    from nbgrader.api import SubmittedAssignment

    cfg = config.load(course_dir)
    records, _ = Manifest.read(course_dir)
    out = []
    with open_course(course_dir) as gb:
        sync_due_dates(gb, cfg)
        extensions.sync(gb, course_dir, cfg.due)
        query = gb.db.query(SubmittedAssignment)
        if students is not None:
            query = query.filter(SubmittedAssignment.student_id.in_(sorted(students)))
        for sub in query.all():
            due = own_due(cfg.due.get(sub.assignment.name), sub.extension)
            for nb in sub.notebooks:
                record = records.get(f"{sub.student.id}/{sub.assignment.name}/{nb.notebook.name}")
                late = lateness(as_utc(sub.timestamp), due, bool(record and record.lms_late), cfg.late)
                raw = sum(float(g.score or 0.0) for g in nb.grades)
                points = penalty(cfg.late, late, raw, float(nb.max_score))
                if (nb.late_submission_penalty or 0.0) != points:
                    nb.late_submission_penalty = points or None
                if late.late:
                    out.append((sub.student.id, sub.assignment.name, nb.notebook.name, late, points))
        gb.db.commit()
    return out


def require_graded(cls: Class, course_dir: Path) -> None:
    """Raise a clear error if nothing has been graded yet."""
    if not cls.graded():
        raise ResultsError(f"nothing graded yet in {course_dir}: run `autograder collect` and `autograder grade` first")


def summary_stats(scores: list[float], max_score: float) -> dict[str, float | int]:
    """Students, mean, median, full marks and zero counts of a list of totals."""
    return {
        "students": len(scores),
        "mean": statistics.fmean(scores) if scores else float("nan"),
        "median": statistics.median(scores) if scores else float("nan"),
        "full": sum(1 for s in scores if max_score > 0 and s >= max_score - 1e-9),
        "zero": sum(1 for s in scores if s <= 1e-9),
    }
