"""The course directory and the gradebook: what to grade, what is done, and writing results.

Durability: a notebook's autograded copy and `grading_log.json` are written atomically
(write, then rename), then its grades are set in nbgrader's gradebook and committed,
before the next notebook is recorded. A notebook counts as graded when its log matches
the submission's and the source's checksums AND the gradebook holds an auto score for each
of its autograded cells; anything less is graded again (overwriting, never duplicating: the
gradebook has one Grade row per cell and submission).
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import warnings
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from autograder import gradinglog
from autograder.gradinglog import NotebookLog
from autograder.record import releases

if TYPE_CHECKING:  # imported where a graded notebook is written, after the sandboxes start
    import nbformat


@dataclass(frozen=True)
class Submission:
    """One student's file for one notebook of one assignment (the file may be missing)."""

    student: str
    assignment: str
    notebook: str
    course_dir: Path
    release_source: Path | None = None  # a kept older release's source it is graded by (autograder.record.releases)
    release_note: str | None = None  # what its grading log says about its release

    @property
    def path(self) -> Path:
        return self.course_dir / "submitted" / self.student / self.assignment / f"{self.notebook}.ipynb"

    @property
    def source_path(self) -> Path:
        if self.release_source is not None:
            return self.release_source
        return self.course_dir / "source" / self.assignment / f"{self.notebook}.ipynb"

    @property
    def out_dir(self) -> Path:
        return self.course_dir / "autograded" / self.student / self.assignment

    @property
    def key(self) -> str:
        return f"{self.student}/{self.assignment}/{self.notebook}"


def discover(course_dir: Path, assignment: str | None = None,
             student: str | Collection[str] | None = None) -> list[Submission]:
    """Every (student, assignment, notebook) with a submission folder, in a stable order (`student`: one id, or a
    collection of ids)."""
    students = {student} if isinstance(student, str) else set(student) if student is not None else None
    course_dir = Path(course_dir).resolve()
    submitted = course_dir / "submitted"
    other = releases.graded_by(course_dir)  # collect's record of the submissions of another release
    out = []
    for sdir in sorted(p for p in submitted.glob("*") if p.is_dir()) if submitted.is_dir() else []:
        if students is not None and sdir.name not in students:
            continue
        for adir in sorted(p for p in sdir.glob("*") if p.is_dir()):
            if assignment is not None and adir.name != assignment:
                continue
            for src in sorted((course_dir / "source" / adir.name).glob("*.ipynb")):
                sub = Submission(sdir.name, adir.name, src.stem, course_dir)
                found = other.get(sub.key)
                if found is not None and found.sha256 == sha256_file(sub.path):  # still the file collect recognised
                    sub = Submission(*sub.key.split("/"), course_dir, found.source, found.note)
                out.append(sub)
    return out


def sha256_file(path: Path) -> str | None:
    """Hex digest of a file's bytes (None if it does not exist)."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def is_graded(gb, sub: Submission) -> bool:
    """The log matches the current files and every autograded (test) cell has an auto score in the gradebook.

    A manually graded answer has none until it is graded by hand (nbgrader's rule), so it does
    not count: otherwise such a notebook would be graded again on every run.
    """
    log = gradinglog.read(sub.out_dir, sub.notebook)
    if log is None or log.engine != gradinglog.ENGINE_VERSION or not (sub.out_dir / f"{sub.notebook}.ipynb").exists():
        return False
    if log.submission_sha256 != sha256_file(sub.path) or log.source_sha256 != sha256_file(sub.source_path):
        return False
    from nbgrader.api import MissingEntry

    try:
        nb = gb.find_submission_notebook(sub.notebook, sub.assignment, sub.student)
        answers = {c.name for c in gb.find_notebook(sub.notebook, sub.assignment).solution_cells}
    except MissingEntry:
        return False
    return all(g.auto_score is not None for g in nb.grades if g.name not in answers)


def release_checksums(gb, assignment: str, notebook: str) -> dict[str, str]:
    """{grade_id: checksum} of the released solution cells (nbgrader's "unchanged means no response")."""
    from nbgrader.api import MissingEntry

    try:
        source = gb.find_notebook(notebook, assignment)
    except MissingEntry:
        return {}
    return {c.name: c.checksum for c in source.source_cells if c.checksum}


def write_outputs(sub: Submission, nb: nbformat.NotebookNode, log: NotebookLog) -> None:
    """The autograded notebook and this notebook's entry of grading_log.json, each replaced atomically."""
    sub.out_dir.mkdir(parents=True, exist_ok=True)
    gradinglog.atomic_write(sub.out_dir / f"{sub.notebook}.ipynb", ipynb_bytes(nb))
    gradinglog.write(sub.out_dir, log)
    stamp = sub.path.parent / "timestamp.txt"
    if stamp.is_file():
        gradinglog.atomic_write(sub.out_dir / "timestamp.txt", stamp.read_bytes())


def ipynb_bytes(nb: nbformat.NotebookNode) -> bytes:
    """`nb` as nbformat's v4 writer writes it (sources and outputs split in lines, transient metadata dropped, keys
    sorted; no re-validation), but compact: without an indent json's C encoder writes it, several times faster."""
    import nbformat
    from nbformat.v4.nbjson import BytesEncoder
    from nbformat.v4.rwbase import split_lines, strip_transient

    nb = strip_transient(split_lines(nbformat.from_dict(nb)))  # from_dict: a copy (new dicts and lists), `nb` unchanged
    return json.dumps(nb, cls=BytesEncoder, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def timestamp(sub: Submission) -> dt.datetime | None:
    """The submission's timestamp.txt, parsed as nbgrader does (None if absent or unreadable)."""
    from nbgrader.utils import parse_utc

    stamp = sub.path.parent / "timestamp.txt"
    try:
        return parse_utc(stamp.read_text().strip())
    except Exception:  # noqa: BLE001 - nbgrader treats a bad timestamp as none
        return None


def ensure_submissions(gb, subs: list[Submission]) -> None:
    """Create every missing student and submission (nbgrader's add_submission) in ONE transaction.

    The rows start with no auto score, which is what "not graded yet" means to `is_graded`;
    per notebook only the scores are then written and committed.
    """
    from nbgrader.api import MissingEntry

    gb.db.commit = gb.db.flush  # nbgrader commits after each call; one commit for all of them instead
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Object of type")
            for student, assignment in dict.fromkeys((s.student, s.assignment) for s in subs):
                sub = next(s for s in subs if (s.student, s.assignment) == (student, assignment))
                stamp = timestamp(sub)
                try:
                    found = gb.find_submission(assignment, student)
                    if stamp is not None and found.timestamp != stamp:
                        found.timestamp = stamp
                except MissingEntry:
                    try:
                        gb.find_student(student)
                    except MissingEntry:
                        gb.add_student(student)
                    gb.add_submission(assignment, student, **({"timestamp": stamp} if stamp else {}))
    except BaseException:
        gb.db.rollback()
        raise
    finally:
        del gb.db.commit
    gb.db.commit()


def record_grades(gb, sub: Submission, scores: dict[str, float | None], responded: dict[str, bool],
                  cache: dict | None = None) -> None:
    """Set the auto scores (and "No response." comments) of one notebook, then commit.

    Plain UPDATEs on nbgrader's grade and comment rows, as SaveAutoGrades would set them, without loading every
    row's computed properties: the notebook's rows found by one SELECT each, then one executemany per table, by id.
    """
    from nbgrader.api import Comment, Grade, MissingEntry
    from sqlalchemy import bindparam, case, select, update

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Object of type")
        try:
            nb = gb.find_submission_notebook(sub.notebook, sub.assignment, sub.student)
        except MissingEntry:
            ensure_submissions(gb, [sub])
            nb = gb.find_submission_notebook(sub.notebook, sub.assignment, sub.student)
    cache = {} if cache is None else cache
    key = (sub.assignment, sub.notebook)
    if key not in cache:  # {grade_id: database id}: grades belong to grade cells, comments to solution cells
        source = gb.find_notebook(sub.notebook, sub.assignment)  # (a manual answer is both: one name, two ids)
        cache[key] = ({c.name: c.id for c in source.grade_cells}, {c.name: c.id for c in source.solution_cells})
    grade_ids, solution_ids = cache[key]
    grade, comment = Grade.__table__, Comment.__table__
    rows = dict(gb.db.execute(select(grade.c.cell_id, grade.c.id).where(grade.c.notebook_id == nb.id)).all())
    found = [(rows[cell], score) for gid, score in scores.items() if (cell := grade_ids.get(gid)) in rows]
    if len(found) != len(scores):
        gb.db.rollback()
        raise RuntimeError(f"{sub.key}: the gradebook has {len(found)} of the {len(scores)} graded cells; "
                           "was the assignment released again during grading?")
    if found:  # needs_manual_grade: an unscored cell needs one; a scored one only if a manual score overrides it
        gb.db.execute(update(grade).where(grade.c.id == bindparam("row")).values(
            auto_score=bindparam("score"),
            needs_manual_grade=case((bindparam("scored"), grade.c.manual_score.isnot(None)), else_=True)),
            [{"row": row, "score": score, "scored": score is not None} for row, score in found])
    rows = dict(gb.db.execute(select(comment.c.cell_id, comment.c.id).where(comment.c.notebook_id == nb.id)).all())
    said = [{"row": rows[cell], "said": None if answered else "No response."}
            for gid, answered in responded.items() if (cell := solution_ids.get(gid)) in rows]
    if said:
        gb.db.execute(update(comment).where(comment.c.id == bindparam("row")).values(auto_comment=bindparam("said")),
                      said)
    gb.db.commit()
