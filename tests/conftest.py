"""Fixtures shared by several test modules, and how pytest-xdist splits the run."""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest

from coursenb.chapters import Chapter, select
from solutions.mistakes import apply, wrong_for
from tests import nbgrader_support as nbs

# Test files that share a session fixture, and the file whose worker builds it (pytest-xdist).
SHARED_FIXTURES = {"tests/test_book_browser.py": "tests/test_book.py",  # the built book (`editions`)
                   "tests/test_nbgrader_stock.py": "tests/test_engine_equivalence.py"}  # `stock_chapter1`


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """pytest-xdist (`-n`, scripts/test.sh): a whole file to one worker, so module fixtures are built once
    and a notebook's cells run in one kernel, in order; a file in SHARED_FIXTURES goes with its partner."""
    from xdist.scheduler import LoadFileScheduling

    class ByFile(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = super()._split_scope(nodeid)
            return SHARED_FIXTURES.get(path, path)

    return ByFile(config, log)


class StockRun(NamedTuple):
    """Chapter 1 released, with the source, the untouched release and every wrong implementation submitted
    (`base`, never graded), and the same submissions graded by stock `nbgrader autograde` in a copy (`dir`)."""

    chapter: Chapter
    base: Path
    dir: Path
    points: dict[str, float]
    scores: dict[str, dict[str, float | None]]


@pytest.fixture(scope="session")
def stock_chapter1(tmp_path_factory) -> StockRun:
    """Stock nbgrader pays a kernel start and `import torch` per notebook (~4 s idle, ~20 s on a loaded CI
    machine): the invariants under stock nbgrader and the engine's equality with it share one such run."""
    chapter = select(["ch1"])[0]
    base = nbs.make_course(tmp_path_factory.mktemp("stock") / "base", [chapter.assignment])
    src = nbs.source_nb(chapter, base)
    subs = {"source": src, "release": nbs.release_nb(chapter, base)}
    subs.update({f"wrong{k}": apply(src, w) for k, w in enumerate(wrong_for(chapter.assignment))})
    for student, nb in subs.items():
        nbs.submit(base, chapter, student, nb)
    stock = nbs.course_copy(base, base.parent / "stock")
    scores = {s: nbs.autograde_stock(stock, chapter, s) for s in subs}
    return StockRun(chapter, base, stock, nbs.max_points(src), scores)
