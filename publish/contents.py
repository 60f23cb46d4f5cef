"""The table of contents: which documents each edition publishes, and their source files."""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import yaml

from coursenb import chapters
from publish.layout import EDITION_ONLY, ROOT, TOC

DOC_SUFFIXES = (".ipynb", ".md", ".rst")


def read_toc(toc: Path = TOC) -> dict:
    """The table of contents, parsed (read once per build: chapter authors edit it meanwhile)."""
    return yaml.safe_load(toc.read_text())


def toc_documents(data: dict | None = None) -> list[str]:
    """Every document the table of contents names, root first, in reading order (no suffix)."""
    data = read_toc() if data is None else data
    docs = [data["root"]]

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "file" in node:
                docs.append(str(node["file"]))
            for key in ("parts", "chapters", "sections"):
                walk(node.get(key, []))
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(data)
    return [_stem(d) for d in docs]


def _stem(doc: str) -> str:
    """A toc entry without its suffix, if it has one."""
    return doc.removesuffix(Path(doc).suffix) if Path(doc).suffix in DOC_SUFFIXES else doc


def source_of(doc: str) -> Path | None:
    """The source file of toc document `doc` (a chapter's text, a notebook, a page), or None when
    it does not exist (yet)."""
    chapter = ROOT / f"{doc}.py"
    if chapter.is_file() and chapters.is_chapter_source(chapter):
        return chapter
    for suffix in DOC_SUFFIXES:
        path = ROOT / f"{doc}{suffix}"
        if path.is_file():
            return path
    return None


def is_notebook(src: Path) -> bool:
    """Whether source `src` is a notebook (a chapter's text, or an .ipynb) rather than a page."""
    return src.suffix == ".ipynb" or chapters.is_chapter_source(src)


def read_notebook(src: Path) -> nbformat.NotebookNode:
    """The notebook of source `src` (a chapter's text is made into one)."""
    return chapters.read(src) if chapters.is_chapter_source(src) else nbformat.read(src, as_version=4)


def published_name(src: Path) -> str:
    """Where `src` goes in a staged edition, relative to the book's root (a notebook as .ipynb)."""
    rel = src.relative_to(ROOT)
    return (rel.with_suffix(".ipynb") if is_notebook(src) else rel).as_posix()


def published_toc(data: dict | None = None, edition: str | None = None) -> dict:
    """The table of contents `edition` publishes: without entries whose source does not exist
    (reported on stderr) and without the other edition's own pages (EDITION_ONLY)."""
    data = read_toc() if data is None else data

    def keep(entry: object) -> bool:
        if not (isinstance(entry, dict) and "file" in entry):
            return True
        doc = _stem(str(entry["file"]))
        if edition is not None and EDITION_ONLY.get(doc, edition) != edition:
            return False
        if source_of(doc) is None:
            print(f"book: {doc} is in _toc.yml but has no source file: left out", file=sys.stderr)
            return False
        return True

    def prune(node: object) -> object:
        if isinstance(node, dict):  # an emptied list of sections or chapters goes too
            pruned = {k: prune(v) if k in ("parts", "chapters", "sections") else v for k, v in node.items()}
            return {k: v for k, v in pruned.items() if v != []}
        if isinstance(node, list):
            return [prune(item) for item in node if keep(item)]
        return node

    return prune(data)


def notebook_docs(data: dict | None = None) -> list[str]:
    """The toc documents that are notebooks."""
    return [d for d in toc_documents(data) if (src := source_of(d)) is not None and is_notebook(src)]
