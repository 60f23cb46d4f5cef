"""`autograder grade` scores the example class exactly as stock `nbgrader autograde` does.

For every chapter: the example class (correct, partly correct, empty, half-done, syntax
error, crashing work) is collected once, graded by the trusted engine through the CLI
in one copy of the course and by stock nbgrader in another, and every graded cell of
every honest student must get the same score. (Students who attack the grader, like one
whose code kills its own kernel, are graded differently on purpose: stock nbgrader
leaves that whole notebook unscored.)
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from autograder import collect, course, example_class, grades
from coursenb.chapters import select
from tests import nbgrader_support as nbs

pytestmark = pytest.mark.filterwarnings("ignore:Object of type")
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


@pytest.mark.slow
@pytest.mark.skipif(not engine_ready(), reason="the grading engine (autograder.engine.grade) is not installed")
@pytest.mark.parametrize("assignment", EQUIVALENCE_CHAPTERS)
def test_engine_matches_stock_nbgrader_cell_by_cell(assignment: str, tmp_path: Path) -> None:
    chapter = select([assignment])[0]
    base = tmp_path / "base"
    course.Course(base).release([assignment])
    zip_path = example_class.write_zip(example_class.build([chapter], base / "release"), tmp_path / "class.zip")
    course.Course(base).collect([zip_path])
    ours, stock = nbs.course_copy(base, tmp_path / "ours"), nbs.course_copy(base, tmp_path / "stock")

    assert course.Course(ours).grade(workers=2, progress=False).failed == 0
    submitted = {p.student: base / "submitted" / p.student / assignment / f"{chapter.notebook}.ipynb"
                 for p in example_class.PROFILES if p.honest}
    honest = sorted(s for s, path in submitted.items()  # stock nbgrader cannot open an unreadable file
                    if path.exists() and collect.check_notebook(path.read_bytes()) is None)
    api = course.nbgrader_api(stock, stock_autograde=True)
    for student in honest:
        result = api.autograde(assignment, student, force=True, create=True)
        assert result["success"], f"stock nbgrader failed on {student}: {result['log'][-2000:]}"

    ours_scores = {(c.student, c.grade_id): c.score for c in grades.load(ours).cells}
    stock_scores = {(c.student, c.grade_id): c.score for c in grades.load(stock).cells if c.student in honest}
    assert stock_scores, "stock nbgrader graded nothing"
    differ = {k: (ours_scores.get(k), v) for k, v in stock_scores.items() if ours_scores.get(k) != v}
    assert not differ, f"(student, cell): (ours, stock) {differ}"
    full = grades.load(ours).cell_max[(assignment, chapter.notebook)]
    assert {gid: ours_scores.get(("ada", gid)) for gid in full} == full, "the correct student gets full marks"
