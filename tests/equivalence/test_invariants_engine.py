"""The three grading invariants for EVERY chapter, through the trusted engine in one batch.

(i) the source notebook submitted as is gets full marks; (ii) the untouched release gets
zero, without a crash; (iii) every wrong implementation in solutions/mistakes loses exactly the
points of the cells it names. These are the autograded cells; a manually graded answer (prose)
waits for the instructor. (Stock `nbgrader autograde` checks the same on Chapter 1 in
test_nbgrader_stock.py, and the engine's equality with it in test_engine_equivalence.py.)
ATTNLAB_CHAPTERS="ch1 ch3" grades those chapters only (a change to one chapter's mistakes).
"""
from __future__ import annotations

import pytest

from solutions.mistakes import wrong_for
from tests.conftest import EveryChapter, invariant_chapters

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:Object of type"), pytest.mark.sandbox]
CHAPTERS = invariant_chapters()


@pytest.fixture(scope="module")
def graded(every_chapter_graded: EveryChapter) -> dict:
    """All chapters released in one course; source, release and each Wrong submitted; one grading run
    (tests/conftest.py, shared with test_engine_equivalence.py)."""
    run = every_chapter_graded
    expected = {(a, s): want for a, students in run.expected.items() for s, want in students.items()}
    actual = {(a, s): {g: v for g, v in run.scores[a][s].items() if g in want} for (a, s), want in expected.items()}
    return {"expected": expected, "actual": actual, "summary": run, "manual": run.manual}


def test_the_batch_graded_everything(graded) -> None:
    assert graded["summary"].failed == 0
    assert graded["summary"].graded == len(graded["expected"])


@pytest.mark.parametrize("chapter", [c.assignment for c in CHAPTERS])
def test_source_full_release_zero(graded, chapter: str) -> None:
    for student in ("source", "release"):
        assert graded["actual"][(chapter, student)] == graded["expected"][(chapter, student)], student


@pytest.mark.parametrize("chapter", [c.assignment for c in CHAPTERS])
def test_prose_answers_wait_for_the_instructor(graded, chapter: str) -> None:
    cells, waiting = graded["manual"][chapter]
    assert cells <= waiting, f"manually graded answers not waiting for the instructor: {sorted(cells - waiting)}"


@pytest.mark.parametrize("chapter", [c.assignment for c in CHAPTERS])
def test_each_wrong_implementation_loses_exactly_its_cells(graded, chapter: str) -> None:
    for k, wrong in enumerate(wrong_for(chapter)):
        key = (chapter, f"wrong{k}")
        assert graded["actual"][key] == graded["expected"][key], f"{chapter} {wrong.why}"
