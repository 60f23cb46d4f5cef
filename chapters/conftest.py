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
