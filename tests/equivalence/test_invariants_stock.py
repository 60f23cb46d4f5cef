"""The three grading invariants under stock `nbgrader autograde`, on Chapter 1.

Stock nbgrader pays a kernel start and `import torch` per notebook (~4 s idle, ~20 s on a
loaded 2-core CI machine), so it runs on Chapter 1 only; every chapter goes through the
same invariants in test_invariants.py with the trusted engine, whose grades equal stock
nbgrader's cell by cell (test_engine_equivalence.py).

(i) the source notebook submitted as is gets full marks; (ii) the untouched release gets
zero, without a crash; (iii) every wrong implementation in solutions/mistakes loses exactly
the points of the cells it names, and every test cell is lost by at least one of them.
"""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from autograder import gradebook
from coursenb.chapters import Chapter, select
from solutions.mistakes import wrong_for
from tests import nbgrader_support as nbs
from tests.conftest import StockRun

CHAPTERS = select()


@pytest.fixture(scope="module")
def graded(stock_chapter1: StockRun) -> tuple[Chapter, Path, dict]:
    """Chapter 1 released; source, release and every wrong variant submitted and autograded by stock nbgrader
    (tests/conftest.py: one run shared with test_engine_equivalence.py)."""
    run = stock_chapter1
    return run.chapter, run.base, {"points": run.points, "scores": run.scores}


@pytest.mark.slow
def test_source_gets_full_marks(graded) -> None:
    _, _, r = graded
    assert r["scores"]["source"] == r["points"]


@pytest.mark.slow
def test_untouched_release_gets_zero(graded) -> None:
    _, _, r = graded
    assert r["scores"]["release"] == {name: 0.0 for name in r["points"]}


@pytest.mark.slow
def test_each_wrong_implementation_loses_exactly_its_cells(graded) -> None:
    chapter, _, r = graded
    for k, wrong in enumerate(wrong_for(chapter.assignment)):
        expected = {name: (0.0 if name in wrong.loses else pts) for name, pts in r["points"].items()}
        assert r["scores"][f"wrong{k}"] == expected, f"{wrong.why}: {r['scores'][f'wrong{k}']}"


def test_every_test_cell_has_a_wrong_implementation() -> None:
    for chapter in CHAPTERS:
        points = nbs.autograded_points(chapter.read())  # a prose answer is graded by hand
        lost_alone = {w.loses[0] for w in wrong_for(chapter.assignment) if len(w.loses) == 1}
        assert lost_alone == set(points), f"{chapter.assignment}: cells without a wrong implementation " \
                                          f"that loses only them: {set(points) - lost_alone}"


@pytest.mark.filterwarnings("ignore:Object of type")
def test_stock_autograde_refuses_in_the_course_unless_opted_in(tmp_path: Path) -> None:
    """`nbgrader autograde` (or formgrader's button) in the course runs no student cell: it stops with a
    sentence naming `autograder grade`. The project's own uses opt in (`stock_autograde=True`: the tests above)."""
    chapter = select(["ch0"])[0]
    course_dir = nbs.make_course(tmp_path / "course", ["ch0"])
    marker = tmp_path / "ran"
    nb = nbs.source_nb(chapter, course_dir)
    nb.cells.insert(0, nbformat.v4.new_code_cell(f"open({str(marker)!r}, 'w').close()"))
    nbs.submit(course_dir, chapter, "mallory", nb)
    result = gradebook.api(course_dir).autograde(chapter.assignment, "mallory", force=True, create=True)
    assert not result["success"]
    assert "autograder grade" in result["log"] and not marker.exists()
