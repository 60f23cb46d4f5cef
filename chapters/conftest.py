"""nbval on the chapters' text sources: pytest with --nbval-lax makes each `chapters/chN_name.py`
into a notebook (`coursenb.chapters`, under _build/notebooks/) and hands that to nbval.
Each chapter runs as the grader runs it: the long demonstrations skipped (attnlab.grading.is_grading() is true in
the kernel) and the slow visible checks too (attnlab.grading.runs_slow_check), the hidden checks judged locally.
The book's execution (publish) runs the demonstrations and the slow visible checks and fails on any error, so
between the two both branches of every chapter run; `--nbval-demos` runs them here too."""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from nbval.plugin import IPyNbFile

from attnlab.validate import QUICK_ENV
from coursenb import chapters

NOTEBOOKS = chapters.ROOT / "_build" / "notebooks"
AS_GRADED = {"NBGRADER_EXECUTION": "validate", QUICK_ENV: "1"}  # what `attnlab.validate --quick` sets


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--nbval-demos", action="store_true",
                     help="run the chapters' long demonstrations and slow visible checks too (by default they are "
                          "skipped, as the grader skips them)")


@contextlib.contextmanager
def _environment(changes: dict[str, str]) -> Iterator[None]:
    """`os.environ` with `changes` while the block runs (a kernel started in it inherits them)."""
    saved = {k: os.environ.get(k) for k in changes}
    os.environ.update(changes)
    try:
        yield
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


class ChapterNotebook(IPyNbFile):
    """nbval's notebook, whose kernel skips the long demonstrations and slow visible checks unless --nbval-demos."""

    def setup(self) -> None:
        with _environment({} if self.config.getoption("nbval_demos") else AS_GRADED):
            super().setup()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A chapter source becomes nbval's notebook collector; anything else is left to pytest."""
    option = parent.config.option
    if not (getattr(option, "nbval", False) or getattr(option, "nbval_lax", False)):
        return None
    if not chapters.is_chapter_source(file_path):
        return None
    notebook = chapters.materialise(NOTEBOOKS, [chapters.Chapter(file_path).assignment])[0]
    return ChapterNotebook.from_parent(parent, path=notebook)


OUTPUT_TIMEOUT_S = 120  # nbval waits 5 s for a cell's outputs after its reply: too short on a loaded machine


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """nbval's cells wait for their outputs as long as a loaded CI machine may need."""
    for item in items:
        if hasattr(item, "output_timeout"):
            item.output_timeout = max(item.output_timeout, OUTPUT_TIMEOUT_S)
