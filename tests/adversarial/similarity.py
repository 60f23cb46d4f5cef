"""Notebooks that attack `autograder similarity`'s cost: mallory's own code built so that comparing it with the
release costs far more than its size (every notebook stays within collect's caps)."""
from __future__ import annotations

import nbformat


def blank_cells(release: nbformat.NotebookNode, cells: int = 4, lines: int = 256 * 1024) -> nbformat.NotebookNode:
    """The release with `cells` added code cells of `lines` empty lines each (one cell's source cap) and one line of
    code: a diff of such a cell against the whole release visits each of its lines once per empty line of the
    release (minutes of CPU on main for one notebook)."""
    nb = nbformat.from_dict(release)
    nb.cells += [nbformat.v4.new_code_cell("\n" * (lines - 1) + f"x_{k} = {k}") for k in range(cells)]
    return nb
