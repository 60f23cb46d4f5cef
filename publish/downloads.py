"""What a student downloads from the book: each chapter's release notebook, the same with the kit
in a zip, and one zip of every chapter.

The notebooks are the course's release (`autograder.course.Course.release`, exactly what
`autograder release` hands out: stubs, no hidden tests, no worked solutions) and the zips are
`autograder.kit.write_release_zip`'s, so the book serves the files the grader expects and
never a source notebook. Both editions stage them under `downloads/`; the student edition's
chapter pages link them (`link_cell`) and the students page links the zip of every chapter.
The release is cached under `_build/.book_cache/release/`, keyed by the chapter sources, nbgrader's
version and the code that makes it (`autograder.course` and what it imports at module level:
`publish.deps`).
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import nbformat

from coursenb import chapters
from publish import deps
from publish.execute import version_of
from publish.layout import CACHE

FOLDER = "downloads"  # in each staged edition
ALL_CHAPTERS = "attention-in-parallel.zip"
RELEASE = "autograder.course"  # the module that makes the release (Course.release)


def release_files(chosen: list[chapters.Chapter]) -> list[Path]:
    """What the release of `chosen` depends on: their sources and the release code (module-level imports of
    RELEASE; Course's other steps import lazily and do not change a release)."""
    return sorted({c.path for c in chosen} | set(deps.closure([RELEASE], lazy=False)))


def _key(chosen: list[chapters.Chapter]) -> str:
    """sha256 over `release_files` and nbgrader's version."""
    return deps.digest(release_files(chosen), version_of("nbgrader"))[:16]


def release_notebooks(chosen: list[chapters.Chapter]) -> dict[str, Path]:
    """Chapter notebook name -> its release notebook (nbgrader generate_assignment), cached."""
    from autograder.course import Course

    folder = CACHE / "release" / _key(chosen)
    done = folder / "released"
    if not done.is_file():
        shutil.rmtree(folder, ignore_errors=True)
        with tempfile.TemporaryDirectory(prefix="book-release-", dir=CACHE) as tmp:
            course_dir = Path(tmp) / "course"
            released = Course(course_dir).release([c.assignment for c in chosen])
            folder.mkdir(parents=True, exist_ok=True)
            for path in released.notebooks:
                shutil.copy(path, folder / path.name)
        done.write_text("\n".join(c.notebook for c in chosen) + "\n")
        for old in (CACHE / "release").iterdir():
            if old != folder:
                shutil.rmtree(old, ignore_errors=True)
    return {c.notebook: folder / f"{c.notebook}.ipynb" for c in chosen}


def files(chosen: list[chapters.Chapter]) -> dict[str, bytes]:
    """The staged download files: downloads/<notebook>.ipynb and .zip per chapter, and the zip of all."""
    from autograder.kit import write_release_zip

    if not chosen:
        return {}
    notebooks = release_notebooks(chosen)
    out: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory(prefix="book-zips-") as tmp:
        for name, path in notebooks.items():
            out[f"{FOLDER}/{name}.ipynb"] = path.read_bytes()
            out[f"{FOLDER}/{name}.zip"] = write_release_zip([path], Path(tmp) / f"{name}.zip").read_bytes()
        everything = write_release_zip(list(notebooks.values()), Path(tmp) / ALL_CHAPTERS)
        out[f"{FOLDER}/{ALL_CHAPTERS}"] = everything.read_bytes()
    return out


def link_cell(notebook: str, depth: int = 1) -> nbformat.NotebookNode:
    """The markdown cell at the top of a chapter page that links its release notebook and zip."""
    up = "../" * depth
    return nbformat.v4.new_markdown_cell(
        ":::{admonition} Work this chapter\n:class: tip\n"
        f"Download {{download}}`{notebook}.ipynb <{up}{FOLDER}/{notebook}.ipynb>` (your notebook: the problems "
        f"with empty stubs and the visible tests) or {{download}}`{notebook}.zip <{up}{FOLDER}/{notebook}.zip>` "
        "(the notebook, the `attnlab` kit and a README). Set up once with "
        "`pip install ./attnlab --extra-index-url https://download.pytorch.org/whl/cpu`, fill in the stubs, "
        f"run the visible tests, check with `python -m attnlab.validate {notebook}.ipynb`, and submit the "
        f"notebook under its name: see [working a chapter]({up}front/students.md).\n:::",
        metadata={"tags": ["download-links"]}, id=f"download-{notebook}"[:64])
