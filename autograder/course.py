"""The nbgrader course directory: configuration, source notebooks, release.

A chapter (`coursenb.chapters`, text source `chapters/chN_name.py`) is assignment `chN`
holding one notebook `chN_name`. The course's source notebook is the chapter without its
solutions-only cells (`coursenb.cells.without_solutions_only`); nbgrader's release then
replaces solution regions with stubs and removes hidden tests.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

import nbformat

from autograder import config
from coursenb import cells, chapters

ROOT = chapters.ROOT
COURSE_ID = "attention-book"
# nbgrader scores a test cell 0 on ANY stderr; library warnings must not cost points.
IGNORED_STDERR = r"(Warning|warn\()"


class CourseError(RuntimeError):
    """A clear, user-facing problem with the course directory."""


def config_text(course_dir: Path, db_url: str | None = None, timeout: int = 120) -> str:
    """The course's nbgrader_config.py."""
    db = db_url or f"sqlite:///{(course_dir / 'gradebook.db').as_posix()}"
    return "\n".join([
        "c = get_config()  # noqa: F821",
        f"c.CourseDirectory.course_id = {COURSE_ID!r}",
        f"c.CourseDirectory.root = {str(course_dir)!r}",
        f"c.CourseDirectory.db_url = {db!r}",
        f"c.ExecutePreprocessor.timeout = {timeout}",
        f"c.Execute.timeout = {timeout}",
        "c.IgnorePattern.enabled = True",
        f"c.IgnorePattern.pattern = {IGNORED_STDERR!r}",
        f"c.ClearSolutions.code_stub = {{'python': {cells.CODE_STUB!r}}}",
        "",
    ])


def source_notebook(chapter: chapters.Chapter) -> nbformat.NotebookNode:
    """The course's source notebook of `chapter`: the chapter without its worked solutions."""
    return cells.without_solutions_only(chapter.read())


def init_course(course_dir: Path, names: Iterable[str] | None = None,
                db_url: str | None = None) -> list[chapters.Chapter]:
    """Write nbgrader_config.py and source/<chN>/<notebook>.ipynb for the chosen chapters."""
    course_dir = Path(course_dir).resolve()
    course_dir.mkdir(parents=True, exist_ok=True)
    (course_dir / "nbgrader_config.py").write_text(config_text(course_dir, db_url))
    chosen = chapters.select(names)
    for ch in chosen:
        nb = source_notebook(ch)
        dest = course_dir / "source" / ch.assignment / f"{ch.notebook}.ipynb"
        dest.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(dest))
    return chosen


def nbgrader_api(course_dir: Path):  # -> nbgrader.apps.NbGraderAPI
    """An NbGraderAPI on the course directory's own configuration."""
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config

    _venv_bin_on_path()
    merged = Config()
    merged.merge(config.traitlets(course_dir))
    return NbGraderAPI(config=merged)


def _venv_bin_on_path() -> None:
    """nbgrader runs `alembic` (gradebook migrations) by name: put our interpreter's bin/ first."""
    bin_dir = str(Path(sys.executable).parent)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != bin_dir:
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")


def release(course_dir: Path, names: Iterable[str] | None = None) -> list[Path]:
    """nbgrader generate_assignment for each chapter; returns the release notebooks."""
    course_dir = Path(course_dir).resolve()
    api = nbgrader_api(course_dir)
    out = []
    for ch in chapters.select(names):
        result = api.generate_assignment(ch.assignment, force=True, create=True)
        if not result["success"]:
            raise CourseError(f"nbgrader could not release {ch.assignment}: {_last_error(result)}\n{result.get('log', '')[-3000:]}")
        out.append(course_dir / "release" / ch.assignment / f"{ch.notebook}.ipynb")
    return out


def _last_error(result: dict) -> str:
    text = (result.get("error") or result.get("log") or "").strip().splitlines()
    return text[-1] if text else "unknown error"

