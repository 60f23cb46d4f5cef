"""`autograder grade` scores the example class exactly as stock `nbgrader autograde` does.

For every chapter: the example class (correct, partly correct, empty, half-done, syntax
error, crashing work) is collected once, graded by the trusted engine through the CLI
in one copy of the course and by stock nbgrader in another, and every graded cell of
every honest student must get the same score. (Students who attack the grader, like one
whose code kills its own kernel, are graded differently on purpose: stock nbgrader
leaves that whole notebook unscored.)

Stock nbgrader grades each different file once: its cell scores are a function of the notebook's bytes in
one course (the same source cells restored, the same kernel; lateness is no cell score), so students who
submitted the same bytes (Chapter 1's ada, grace and linus: the correct notebook on time, late, misnamed)
share one stock grading, and each honest student's every cell is still compared with the engine's.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from autograder import collect, course, grades
from autograder import example_class as classes
from coursenb.chapters import select
from tests import nbgrader_support as nbs
from tests.conftest import ExampleClass

pytestmark = [pytest.mark.filterwarnings("ignore:Object of type"), pytest.mark.sandbox]
# Stock nbgrader pays ~5 s per notebook: CI checks Chapter 1's example class;
# ATTNLAB_EQUIVALENCE=all checks every chapter (about 8 minutes on 2 idle cores).
EQUIVALENCE_CHAPTERS = ([c.assignment for c in select()] if os.environ.get("ATTNLAB_EQUIVALENCE") == "all"
                        else ["ch1"])


def engine_ready() -> bool:
    """True once the grading engine is installed."""
    try:
        from autograder.engine import grade  # noqa: F401
    except ImportError:
        return False
    return True


def _collected_and_graded(assignment: str, shared: ExampleClass, tmp_path: Path) -> tuple[Path, Path]:
    """The example class of `assignment` as collected and as graded by the engine through the Course API (Chapter
    1's is graded once per run and shared, tests/conftest.py)."""
    if assignment == "ch1":
        return shared.collected, shared.course
    chapter = select([assignment])[0]
    base = tmp_path / "base"
    course.Course(base).release([assignment])
    zip_path = classes.write_zip(classes.build([chapter], base / "release"), tmp_path / "class.zip")
    course.Course(base).collect([zip_path])
    ours = nbs.course_copy(base, tmp_path / "ours")
    assert course.Course(ours).grade(workers=2, progress=False).failed == 0
    return base, ours


@pytest.mark.slow
@pytest.mark.skipif(not engine_ready(), reason="the grading engine (autograder.engine.grade) is not installed")
@pytest.mark.parametrize("assignment", EQUIVALENCE_CHAPTERS)
def test_engine_matches_stock_nbgrader_cell_by_cell(assignment: str, example_class: ExampleClass,
                                                    tmp_path: Path) -> None:
    chapter = select([assignment])[0]
    base, ours = _collected_and_graded(assignment, example_class, tmp_path)
    stock = nbs.course_copy(base, tmp_path / "stock")
    submitted = {p.student: base / "submitted" / p.student / assignment / f"{chapter.notebook}.ipynb"
                 for p in classes.PROFILES if p.honest}
    honest = sorted(s for s, path in submitted.items()  # stock nbgrader cannot open an unreadable file
                    if path.exists() and collect.check_notebook(path.read_bytes()) is None)
    auto = nbs.autograded_points(nbs.source_nb(chapter, base))  # a prose answer is the instructor's, not a grader's

    ours_scores = {(c.student, c.grade_id): c.score for c in grades.load(ours).cells}
    first = {}  # the notebook's bytes -> the first honest student who submitted them
    same_as = {s: first.setdefault(hashlib.sha256(submitted[s].read_bytes()).digest(), s) for s in honest}
    graded = nbs.autograde_stock_many(stock, chapter, sorted(set(same_as.values())))
    stock_scores = {(student, g): v for student in honest for g, v in graded[same_as[student]].items() if g in auto}
    assert stock_scores, "stock nbgrader graded nothing"
    differ = {k: (ours_scores.get(k), v) for k, v in stock_scores.items() if ours_scores.get(k) != v}
    assert not differ, f"(student, cell): (ours, stock) {differ}"
    full = grades.load(ours).cell_max[(assignment, chapter.notebook)]
    assert {gid: ours_scores.get(("ada", gid)) for gid in full} == full, "the correct student gets full marks"
