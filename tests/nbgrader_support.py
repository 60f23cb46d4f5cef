"""Run stock nbgrader on a temporary course: submit notebooks, autograde, read the scores."""
from __future__ import annotations

import shutil
from pathlib import Path

import nbformat

from autograder import course
from coursenb.chapters import Chapter


def make_course(tmp: Path, names: list[str]) -> Path:
    """A released course directory for chapters `names`."""
    course.Course(tmp).release(names)
    return tmp


def course_copy(src: Path, dest: Path) -> Path:
    """A copy of a course directory (a course records no path: the copy is a course of its own)."""
    shutil.copytree(src, dest)
    return dest


def source_nb(chapter: Chapter, course_dir: Path) -> nbformat.NotebookNode:
    """The course's source notebook of `chapter` (solution text already stripped)."""
    return nbformat.read(course_dir / "source" / chapter.assignment / f"{chapter.notebook}.ipynb", as_version=4)


def release_nb(chapter: Chapter, course_dir: Path) -> nbformat.NotebookNode:
    """The student release notebook of `chapter`."""
    return nbformat.read(course_dir / "release" / chapter.assignment / f"{chapter.notebook}.ipynb", as_version=4)


def submit(course_dir: Path, chapter: Chapter, student: str, nb: nbformat.NotebookNode) -> None:
    """Place `nb` as `student`'s submission of `chapter`."""
    dest = course_dir / "submitted" / student / chapter.assignment / f"{chapter.notebook}.ipynb"
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(dest))


def autograde_stock(course_dir: Path, chapter: Chapter, student: str) -> dict[str, float | None]:
    """Stock `nbgrader autograde` of one submission -> {test grade_id: score}."""
    api = course.nbgrader_api(course_dir, stock_autograde=True)
    result = api.autograde(chapter.assignment, student, force=True, create=True)
    assert result["success"], result["log"][-3000:]
    return scores(course_dir, chapter, student)


def scores(course_dir: Path, chapter: Chapter, student: str) -> dict[str, float | None]:
    """{grade_id: score} from the gradebook (None: needs a manual grade)."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}", course_id=course.COURSE_ID) as gb:
        nb = gb.find_submission_notebook(chapter.notebook, chapter.assignment, student)
        return {g.name: g.score for g in nb.grades}


def max_points(nb: nbformat.NotebookNode) -> dict[str, float]:
    """{test grade_id: points} of a notebook's graded cells."""
    return {c.metadata.nbgrader["grade_id"]: float(c.metadata.nbgrader["points"])
            for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")}


def autograded_points(nb: nbformat.NotebookNode) -> dict[str, float]:
    """{grade_id: points} of a notebook's autograded test cells (manually graded answers left out)."""
    from coursenb.cells import is_test

    return {c.metadata.nbgrader["grade_id"]: float(c.metadata.nbgrader["points"]) for c in nb.cells if is_test(c)}


def manual_cells(nb: nbformat.NotebookNode) -> set[str]:
    """The grade_ids of a notebook's manually graded answers (prose, graded by the instructor)."""
    from coursenb.cells import is_manual

    return {c.metadata.nbgrader["grade_id"] for c in nb.cells if is_manual(c)}


def needs_manual_grade(course_dir: Path, chapter: Chapter, student: str) -> set[str]:
    """The grade_ids of `student`'s submission that wait for the instructor."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}", course_id=course.COURSE_ID) as gb:
        nb = gb.find_submission_notebook(chapter.notebook, chapter.assignment, student)
        return {g.name for g in nb.grades if g.needs_manual_grade}
