"""The nbgrader course directory: configuration, source notebooks, release.

A chapter notebook `chapters/chN_name.ipynb` is assignment `chN` holding one notebook
`chN_name`. The release strips worked solutions (cells tagged `solution-text`) before
nbgrader replaces solution regions with stubs and removes hidden tests.
"""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"
SOLUTION_TEXT_TAG = "solution-text"
COURSE_ID = "attention-book"
# nbgrader scores a test cell 0 on ANY stderr; library warnings must not cost points.
IGNORED_STDERR = r"(Warning|warn\()"


class CourseError(RuntimeError):
    """A clear, user-facing problem with the course directory or a chapter."""


@dataclass(frozen=True)
class Chapter:
    """One chapter notebook: assignment id `chN`, notebook id `chN_name`."""

    path: Path

    @property
    def assignment(self) -> str:
        return self.path.stem.split("_", 1)[0]

    @property
    def notebook(self) -> str:
        return self.path.stem


def chapters(names: Iterable[str] | None = None) -> list[Chapter]:
    """The chapters in book order, optionally only those whose assignment id is in `names`."""
    found = sorted((Chapter(p) for p in CHAPTERS.glob("ch*_*.ipynb")), key=lambda c: int(c.assignment[2:]))
    if names is None:
        return found
    wanted = set(names)
    unknown = wanted - {c.assignment for c in found}
    if unknown:
        raise CourseError(f"no chapter named {', '.join(sorted(unknown))}; "
                          f"chapters are {', '.join(c.assignment for c in found)}")
    return [c for c in found if c.assignment in wanted]


def config_text(course_dir: Path, db_url: str | None = None, timeout: int = 120) -> str:
    """The course's nbgrader_config.py."""
    db = db_url or f"sqlite:///{(course_dir / 'gradebook.db').as_posix()}"
    return "\n".join([
        "c = get_config()  # noqa: F821",
        f"c.CourseDirectory.course_id = {COURSE_ID!r}",
        f"c.CourseDirectory.root = {str(course_dir)!r}",
        f"c.CourseDirectory.db_url = {db!r}",
        f"c.ExecutePreprocessor.timeout = {timeout}",
        "c.Execute.timeout = %d" % timeout,
        "c.IgnorePattern.enabled = True",
        f"c.IgnorePattern.pattern = {IGNORED_STDERR!r}",
        "c.ClearSolutions.code_stub = {'python': '# YOUR CODE HERE\\nraise NotImplementedError()'}",
        "",
    ])


def strip_solution_text(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook without its worked-solution cells (tag `solution-text`)."""
    nb = nbformat.from_dict(nb)
    nb.cells = [c for c in nb.cells if SOLUTION_TEXT_TAG not in c.metadata.get("tags", [])]
    return nb


def init_course(course_dir: Path, names: Iterable[str] | None = None, db_url: str | None = None) -> list[Chapter]:
    """Write nbgrader_config.py and source/<chN>/<notebook>.ipynb for the chosen chapters."""
    course_dir = Path(course_dir).resolve()
    course_dir.mkdir(parents=True, exist_ok=True)
    (course_dir / "nbgrader_config.py").write_text(config_text(course_dir, db_url))
    chosen = chapters(names)
    for ch in chosen:
        nb = strip_solution_text(nbformat.read(ch.path, as_version=4))
        dest = course_dir / "source" / ch.assignment / f"{ch.notebook}.ipynb"
        dest.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(dest))
    return chosen


def nbgrader_api(course_dir: Path):  # -> nbgrader.apps.NbGraderAPI
    """An NbGraderAPI on the course directory's own configuration."""
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    _venv_bin_on_path()
    course_dir = Path(course_dir).resolve()
    config = PyFileConfigLoader("nbgrader_config.py", path=str(course_dir)).load_config()
    merged = Config()
    merged.merge(config)
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
    for ch in chapters(names):
        result = api.generate_assignment(ch.assignment, force=True, create=True)
        if not result["success"]:
            raise CourseError(f"nbgrader could not release {ch.assignment}: {_last_error(result)}\n{result.get('log', '')[-3000:]}")
        out.append(course_dir / "release" / ch.assignment / f"{ch.notebook}.ipynb")
    return out


def _last_error(result: dict) -> str:
    text = (result.get("error") or result.get("log") or "").strip().splitlines()
    return text[-1] if text else "unknown error"


GRADE_ID = re.compile(r"^[a-zA-Z0-9_\-]*$")
