"""Wrong implementations, one module per chapter: each loses exactly the named cells' points.

A `Wrong` replaces the source of one solution cell (by grade_id) in the chapter's source
notebook. Every test cell of every chapter must be lost by at least one `Wrong` alone.
"""
from __future__ import annotations

import importlib
import textwrap
from dataclasses import dataclass

import nbformat


@dataclass(frozen=True)
class Wrong:
    """A plausible mistake in solution cell `cell`; `loses` are the test cells it must fail."""

    cell: str
    source: str
    loses: tuple[str, ...]
    why: str


def wrong_for(assignment: str) -> list[Wrong]:
    """The wrong implementations of chapter `assignment` (e.g. 'ch1')."""
    return importlib.import_module(f"solutions.mistakes.{assignment}").WRONG


def apply(nb: nbformat.NotebookNode, wrong: Wrong) -> nbformat.NotebookNode:
    """A copy of `nb` with solution cell `wrong.cell` replaced by the wrong source."""
    nb = nbformat.from_dict(nb)
    cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == wrong.cell]
    if len(cells) != 1:
        raise KeyError(f"no single solution cell {wrong.cell!r}")
    cells[0].source = textwrap.dedent(wrong.source).strip("\n")
    return nb
