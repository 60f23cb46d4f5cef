"""Tiny helpers to author chapter notebooks as Python (cells with nbgrader metadata)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook


def _src(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


def md(text: str, tags: tuple[str, ...] = ()) -> nbformat.NotebookNode:
    """A markdown cell (tag 'solution-text' for worked solutions: solutions edition only)."""
    cell = new_markdown_cell(_src(text))
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def code(text: str, tags: tuple[str, ...] = ()) -> nbformat.NotebookNode:
    """A plain code cell (demo, imports)."""
    cell = new_code_cell(_src(text))
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def solution(grade_id: str, text: str) -> nbformat.NotebookNode:
    """An autograded-answer cell: the student's stub, solution between BEGIN/END SOLUTION."""
    cell = code(text)
    cell.metadata["nbgrader"] = {"schema_version": 3, "grade": False, "locked": False,
                                 "solution": True, "grade_id": grade_id}
    return cell


def tests(grade_id: str, points: float, text: str) -> nbformat.NotebookNode:
    """An autograder-tests cell worth `points`: visible tests, then hidden ones."""
    cell = code(text)
    cell.metadata["nbgrader"] = {"schema_version": 3, "grade": True, "locked": True,
                                 "solution": False, "grade_id": grade_id, "points": points}
    return cell


def write(path: str | Path, cells: list[nbformat.NotebookNode], title: str) -> None:
    """Write an output-free notebook with the python3 kernel."""
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["title"] = title
    nbformat.validate(nb)
    nbformat.write(nb, str(path))
