"""Run stock nbgrader on a temporary course: submit notebooks, autograde, read the scores."""
from __future__ import annotations

import shutil
from pathlib import Path

import nbformat

from autograder import course, gradebook
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
    api = gradebook.api(course_dir, stock_autograde=True)
    result = api.autograde(chapter.assignment, student, force=True, create=True)
    assert result["success"], result["log"][-3000:]
    return scores(course_dir, chapter, student)


def _autograde_part(course_dir: Path, assignment: str, students: list[str]) -> dict[str, dict[str, float | None]]:
    """Stock `nbgrader autograde` of `students`, one after another, in this process."""
    from coursenb.chapters import select

    chapter = select([assignment])[0]
    return {student: autograde_stock(course_dir, chapter, student) for student in students}


def autograde_stock_many(course_dir: Path, chapter: Chapter, students: list[str],
                         workers: int = 2) -> dict[str, dict[str, float | None]]:
    """Stock `nbgrader autograde` of `students` -> {student: {grade_id: score}}, in `workers` processes at once,
    each grading its share in its own copy of the course (one gradebook each: nbgrader's SQLite gradebook is
    not written by two graders at once). `course_dir` itself is left as it was."""
    import concurrent.futures
    import multiprocessing

    parts = [students[k::workers] for k in range(workers) if students[k::workers]]
    copies = [course_copy(course_dir, course_dir.parent / f"{course_dir.name}.stock{k}") for k in range(len(parts))]
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: nothing of this process's threads
    with concurrent.futures.ProcessPoolExecutor(len(parts), mp_context=context) as pool:
        done = [pool.submit(_autograde_part, copy, chapter.assignment, part) for copy, part in zip(copies, parts)]
        out = {student: s for future in done for student, s in future.result().items()}
    return {student: out[student] for student in students}


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
