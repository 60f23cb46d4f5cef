"""Chapter sources are text; notebooks are made from them where they are needed.

Each chapter is a jupytext percent file, ``chapters/chN_name.py``: a ``# %%`` line starts a
code cell, ``# %% [markdown]`` a markdown cell whose lines are comments, and a cell's
nbgrader metadata and tags sit in its header::

    # %% nbgrader={"grade": true, "grade_id": "test_self_attention", "locked": true, "points": 4, ...}

`read` turns a source into an nbformat 4.5 notebook with the python3 kernel and
deterministic cell ids (the cell's grade_id, else its position), so that making the
notebook again changes nothing. The ``.ipynb`` is never committed: the release, nbval and
the book each make it from the text (`materialise`, ``python -m coursenb.chapters``).

A chapter is also an assignment: ``chapters/ch1_parallel_time.py`` is assignment ``ch1``
holding one notebook, ``ch1_parallel_time``.
"""
from __future__ import annotations

import argparse
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # nbformat (and nbgrader, through cells) are imported where a notebook is made: finding a
    from nbformat import NotebookNode  # chapter's path costs no import (solutions loads its text at import)

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"
FORMAT = "py:percent"
PATTERN = re.compile(r"ch(\d+)_\w+\.py")  # a chapter's file name (fullmatch)
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
# What the text keeps of a notebook: no notebook header, only these cell metadata.
TEXT_METADATA = {"notebook_metadata_filter": "-all", "cell_metadata_filter": "nbgrader,tags"}


class ChapterError(RuntimeError):
    """A clear, user-facing problem with a chapter (unknown name, unreadable source)."""


@dataclass(frozen=True)
class Chapter:
    """One chapter source: assignment id `chN`, notebook id `chN_name`."""

    path: Path

    @property
    def assignment(self) -> str:
        return self.path.stem.split("_", 1)[0]

    @property
    def notebook(self) -> str:
        return self.path.stem

    @property
    def number(self) -> int:
        return int(self.assignment[2:])

    @property
    def doc(self) -> str:
        """Its name in the book's table of contents (`chapters/ch1_parallel_time`)."""
        return self.path.relative_to(ROOT).with_suffix("").as_posix()

    def read(self) -> NotebookNode:
        """The chapter as a notebook (see `read`)."""
        return read(self.path)


def select(names: Iterable[str] | None = None, folder: Path = CHAPTERS) -> list[Chapter]:
    """The chapters in book order, optionally only those whose assignment id is in `names`."""
    found = sorted((Chapter(p) for p in folder.glob("ch*_*.py") if PATTERN.fullmatch(p.name)), key=lambda c: c.number)
    if names is None:
        return found
    wanted = set(names)
    unknown = wanted - {c.assignment for c in found}
    if unknown:
        raise ChapterError(f"no chapter named {', '.join(sorted(unknown))}; "
                           f"chapters are {', '.join(c.assignment for c in found)}")
    return [c for c in found if c.assignment in wanted]


def is_chapter_source(path: Path) -> bool:
    """Whether `path` is a chapter's text source."""
    path = Path(path)
    return bool(PATTERN.fullmatch(path.name)) and path.resolve().parent == CHAPTERS.resolve()


def reads(text: str) -> NotebookNode:
    """A chapter's text -> its notebook: python3 kernel, nbformat 4.5, deterministic cell ids."""
    import jupytext
    import nbformat

    nb = jupytext.reads(text, fmt=FORMAT)
    nb.metadata = nbformat.from_dict({"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}})
    nb.nbformat, nb.nbformat_minor = 4, 5
    used: set[str] = set()
    for k, cell in enumerate(nb.cells):
        cell.id = _cell_id(cell, k, used)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.validate(nb)
    return nb


def _cell_id(cell: NotebookNode, position: int, used: set[str]) -> str:
    """The cell's grade_id, else its position; unique within the notebook."""
    from coursenb import cells

    gid = cells.grade_id(cell)
    cid = gid if gid and re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", gid) else f"cell-{position}"
    while cid in used:
        cid = f"{cid}-{position}"
    used.add(cid)
    return cid


def read(path: Path) -> NotebookNode:
    """The notebook of chapter source `path`."""
    try:
        return reads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ChapterError(f"{path}: cannot be read as a chapter ({exc})") from None


def writes(nb: NotebookNode) -> str:
    """A notebook -> chapter text (the inverse of `reads`, outputs and ids dropped)."""
    import jupytext
    import nbformat

    nb = nbformat.from_dict(nb)
    nb.metadata = {"jupytext": dict(TEXT_METADATA)}
    return jupytext.writes(nb, fmt=FORMAT)


def materialise(folder: Path, names: Iterable[str] | None = None) -> list[Path]:
    """Write `folder/<chN_name>.ipynb` for each chapter; rewrite only what changed. Returns the paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    import nbformat

    for chapter in select(names):
        dest = folder / f"{chapter.notebook}.ipynb"
        data = nbformat.writes(chapter.read()) + "\n"
        if not dest.is_file() or dest.read_text(encoding="utf-8") != data:
            tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")  # whole or not at all (parallel test workers)
            tmp.write_text(data, encoding="utf-8")
            tmp.replace(dest)
        out.append(dest)
    return out


def assignment_order(name: str) -> tuple:
    """A sort key in book order: ch0 < ch1 < ... < ch10; any other assignment after them, by name."""
    m = re.fullmatch(r"ch(\d+)", name)
    return (0, int(m[1]), "") if m else (1, 0, name)


def main(argv: list[str] | None = None) -> int:
    """`python -m coursenb.chapters --out DIR [chN ...]`: make the chapters' notebooks."""
    parser = argparse.ArgumentParser(prog="python -m coursenb.chapters", description=main.__doc__)
    parser.add_argument("--out", type=Path, required=True, help="folder for the .ipynb files")
    parser.add_argument("names", nargs="*", metavar="CHAPTER", help="e.g. ch1 ch2 (default: all)")
    args = parser.parse_args(argv)
    for path in materialise(args.out, args.names or None):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
