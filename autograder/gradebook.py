"""nbgrader's gradebook and API on a course directory: the one module that opens them.

The bottom layer of `autograder` (see `autograder.startup` for the layers and for why nbgrader
itself is imported inside these functions): the engine, the grades read model, the late policy's
writer and the writers below the `Course` façade all open the gradebook through `open_course`
or `open_db`, and the release step reaches nbgrader's apps through `api`.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from autograder import config
from autograder.errors import AutograderError


class GradebookError(AutograderError):
    """A course whose gradebook cannot be opened (no course, a configuration that does not hold)."""


def venv_bin_on_path() -> None:
    """nbgrader runs `alembic` (gradebook migrations) by name: put our interpreter's bin/ first."""
    bin_dir = str(Path(sys.executable).parent)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != bin_dir:
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")


@contextmanager
def open_db(db_url: str, course_id: str) -> Iterator:  # -> nbgrader.api.Gradebook
    """nbgrader's Gradebook at `db_url`, closed on exit."""
    from nbgrader.api import Gradebook

    venv_bin_on_path()
    gb = Gradebook(db_url, course_id=course_id)
    try:
        yield gb
    finally:
        gb.close()


@contextmanager
def open_course(course_dir: Path) -> Iterator:  # -> nbgrader.api.Gradebook
    """The Gradebook of the course at `course_dir`, closed on exit (GradebookError if there is no course)."""
    try:
        cfg = config.load(course_dir)
    except config.ConfigError as exc:
        raise GradebookError(str(exc)) from None
    with open_db(cfg.db_url, cfg.course_id) as gb:
        yield gb


def api(course_dir: Path, stock_autograde: bool = False):  # -> nbgrader.apps.NbGraderAPI
    """An NbGraderAPI on the course directory's own configuration; `stock_autograde` lets its `autograde` run
    (stock nbgrader, the in-process local judge: the project's equivalence tests and benchmarks, trusted
    notebooks only), which the course's configuration otherwise refuses (autograder/stock.py)."""
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config

    venv_bin_on_path()
    merged = Config()
    merged.merge(config.traitlets(course_dir))
    if stock_autograde:
        merged.RefuseStockAutograde.allow = True
    return NbGraderAPI(config=merged)
