"""The three grading invariants for EVERY chapter, through the trusted engine in one batch.

(i) the source notebook submitted as is gets full marks; (ii) the untouched release gets
zero, without a crash; (iii) every wrong implementation in solutions/mistakes loses exactly the
points of the cells it names. These are the autograded cells; a manually graded answer (prose)
waits for the instructor. (Stock `nbgrader autograde` checks the same on Chapter 1 in
test_nbgrader_stock.py, and the engine's equality with it in test_engine_equivalence.py.)
ATTNLAB_CHAPTERS="ch1 ch3" grades those chapters only (a change to one chapter's mistakes).
"""
from __future__ import annotations

import os

import pytest

from autograder.engine import grade
from coursenb.chapters import select
from solutions.mistakes import apply, wrong_for
from tests import nbgrader_support as nbs

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:Object of type")]
CHAPTERS = select(os.environ.get("ATTNLAB_CHAPTERS", "").split() or None)


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> dict:
    """All chapters released in one course; source, release and each Wrong submitted; one grading run."""
    names = [c.assignment for c in CHAPTERS]
    course_dir = nbs.make_course(tmp_path_factory.mktemp("invariants"), names)
    expected: dict[tuple[str, str], dict[str, float]] = {}
    for chapter in CHAPTERS:
        src = nbs.source_nb(chapter, course_dir)
        points = nbs.autograded_points(src)
        subs = {"source": (src, points), "release": (nbs.release_nb(chapter, course_dir), dict.fromkeys(points, 0.0))}
        for k, wrong in enumerate(wrong_for(chapter.assignment)):
            subs[f"wrong{k}"] = (apply(src, wrong), {g: (0.0 if g in wrong.loses else p) for g, p in points.items()})
        for student, (nb, scores) in subs.items():
            nbs.submit(course_dir, chapter, student, nb)
            expected[(chapter.assignment, student)] = scores
    summary = grade(course_dir, workers=2, progress=False)
    actual = {(ch.assignment, s): {g: v for g, v in nbs.scores(course_dir, ch, s).items() if g in expected[(a, s)]}
              for ch in CHAPTERS for (a, s) in expected if a == ch.assignment}
    manual = {ch.assignment: (nbs.manual_cells(nbs.source_nb(ch, course_dir)),
                              nbs.needs_manual_grade(course_dir, ch, "source")) for ch in CHAPTERS}
    return {"expected": expected, "actual": actual, "summary": summary, "manual": manual}


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
