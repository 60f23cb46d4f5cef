"""nbval on the chapters' text sources: pytest with --nbval-lax makes each `chapters/chN_name.py`
into a notebook (`coursenb.chapters`, under _build/notebooks/) and hands that to nbval."""
from __future__ import annotations

from pathlib import Path

import pytest

from coursenb import chapters

NOTEBOOKS = chapters.ROOT / "_build" / "notebooks"


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A chapter source becomes nbval's notebook collector; anything else is left to pytest."""
    option = parent.config.option
    if not (getattr(option, "nbval", False) or getattr(option, "nbval_lax", False)):
        return None
    if not chapters.is_chapter_source(file_path):
        return None
    from nbval.plugin import IPyNbFile

    notebook = chapters.materialise(NOTEBOOKS, [chapters.Chapter(file_path).assignment])[0]
    return IPyNbFile.from_parent(parent, path=notebook)


OUTPUT_TIMEOUT_S = 120  # nbval waits 5 s for a cell's outputs after its reply: too short on a loaded machine


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """nbval's cells wait for their outputs as long as a loaded CI machine may need."""
    for item in items:
        if hasattr(item, "output_timeout"):
            item.output_timeout = max(item.output_timeout, OUTPUT_TIMEOUT_S)
