"""The notebook to grade: a submission with every locked and test cell restored from the source.

Like nbgrader's sanitize pass (ClearOutput, DeduplicateIds, OverwriteCells with
`add_missing_cells`), but stricter: a locked cell (every test cell) comes back from the
course's source notebook by `grade_id` with its source text, cell type and all its nbgrader
metadata (points, grade, solution, locked), whatever the student did to it: edited, deleted,
re-tagged, re-typed. A solution cell keeps the student's source and gets its metadata back.
Unknown or duplicate `grade_id`s make the cell an ordinary one. Nothing here raises on a
strange notebook: every repair is written down as a note for the grading log.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from autograder import notebook_guard
from autograder.notebook_guard import MAX_BYTES, MAX_CELLS, MAX_DEPTH, MAX_OBJECTS, UnreadableNotebook  # noqa: F401 (the engine's names)
from coursenb.cells import grade_id, has_hidden_tests, is_locked, is_solution, secret_lines, strip_hidden_tests

if TYPE_CHECKING:  # nbformat (and jsonschema with it) is imported where a notebook is read or made, so
    from nbformat import NotebookNode  # that a grading run starts its sandboxes before it


@dataclass
class Restored:
    """The notebook to run and what was repaired to get it."""

    nb: NotebookNode
    notes: list[str] = field(default_factory=list)
    missing_solutions: list[str] = field(default_factory=list)
    foreign: bool = False  # none of the source's graded or solution cells were found

    def code_cells(self) -> list[int]:
        """Indices (in nb.cells) of the code cells, in execution order."""
        return [k for k, c in enumerate(self.nb.cells) if c.cell_type == "code"]


def read_submission(path: Path) -> NotebookNode:
    """The submitted notebook at `path`, read through the one guard on notebook bytes, or UnreadableNotebook."""
    return notebook_guard.read_file(path)


def restore(submission: NotebookNode, source: NotebookNode, owned: bool = False) -> Restored:
    """The submission with the source's locked cells and metadata put back (see module doc). `owned`: the caller
    hands `submission` over (a notebook just read), so its cells are changed in place rather than copied."""
    import nbformat

    src = {gid: c for c in source.cells if (gid := grade_id(c))}
    order = [grade_id(c) for c in source.cells if grade_id(c)]
    result = Restored(nbformat.v4.new_notebook(metadata=copy.deepcopy(source.metadata)))
    seen: set[str] = set()
    for cell in submission.cells:
        cell = _clean(cell, owned)
        if cell is None:
            continue
        gid = grade_id(cell)
        if "nbgrader" in cell.metadata and (gid is None or gid not in src or gid in seen):
            why = "a duplicate" if gid in seen else "unknown" if gid else "malformed"
            result.notes.append(f"a cell with {why} nbgrader id {str(gid)[:40]!r} was graded as an ordinary cell")
            del cell.metadata["nbgrader"]
            gid = None
        if gid is not None:
            seen.add(gid)
            cell = _restore_cell(cell, src[gid], result.notes)
        result.nb.cells.append(cell)
    present = set(seen)
    _add_missing(result, src, order, seen)
    solutions = [g for g in order if is_solution(src[g])]
    result.foreign = bool(order) and not present
    result.missing_solutions = [g for g in solutions if g not in present]
    _unique_ids(result.nb)
    return result


def _clean(cell: NotebookNode, owned: bool = False) -> NotebookNode | None:
    """`cell` (a copy unless `owned`) without outputs; None for something that is not a cell."""
    import nbformat

    if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
        return None
    code = cell["cell_type"] == "code"
    if not owned:  # a deep copy of parsed JSON (new dicts and lists), the outputs not copied
        cell = {k: v for k, v in cell.items() if not (code and k == "outputs")}
    cell = nbformat.from_dict(cell) if not owned or not isinstance(cell, nbformat.NotebookNode) else cell
    cell.setdefault("metadata", nbformat.NotebookNode())
    if not isinstance(cell.metadata, dict):
        cell.metadata = nbformat.NotebookNode()
    src = cell.get("source", "")
    cell.source = "".join(src) if isinstance(src, list) else src if isinstance(src, str) else ""
    if code:
        cell.outputs, cell.execution_count = [], None
    return cell


def _restore_cell(cell: NotebookNode, original: NotebookNode, notes: list[str]) -> NotebookNode:
    """`cell` with the source's metadata, and for a locked cell the source's content too."""
    gid = grade_id(original)
    if is_locked(original):
        released = {original.source.rstrip(), strip_hidden_tests(original.source).rstrip()}
        if cell.source.rstrip() not in released or cell.cell_type != original.cell_type \
                or _essential(cell) != _essential(original):
            notes.append(f"locked cell {gid} was changed in the submission and was restored")
        restored = copy.deepcopy(original)
        if restored.cell_type == "code":
            restored.outputs, restored.execution_count = [], None
        restored.id = cell.get("id", restored.get("id"))
        return restored
    if cell.cell_type != original.cell_type:
        notes.append(f"solution cell {gid} had its type changed to {cell.cell_type}; it was changed back")
        cell = _retype(cell, original.cell_type)
    if _essential(cell) != _essential(original):
        notes.append(f"solution cell {gid} had its nbgrader metadata changed; it was restored")
    cell.metadata["nbgrader"] = copy.deepcopy(original.metadata.nbgrader)
    return cell


def _essential(cell: NotebookNode) -> dict:
    """The nbgrader metadata that matters (nbgrader's release adds a checksum and the cell type)."""
    meta = cell.metadata.get("nbgrader", {})
    keys = ("grade", "grade_id", "locked", "points", "solution", "task")
    return {k: meta.get(k) for k in keys} if isinstance(meta, dict) else {}


def _retype(cell: NotebookNode, cell_type: str) -> NotebookNode:
    import nbformat

    if cell_type == "code":
        return nbformat.v4.new_code_cell(cell.source, metadata=cell.metadata, id=cell.get("id"))
    if cell_type == "markdown":
        return nbformat.v4.new_markdown_cell(cell.source, metadata=cell.metadata, id=cell.get("id"))
    return nbformat.v4.new_raw_cell(cell.source, metadata=cell.metadata, id=cell.get("id"))


def _add_missing(result: Restored, src: dict[str, NotebookNode], order: list[str], seen: set[str]) -> None:
    """Insert every missing locked cell after the nearest earlier source cell that is present."""
    for k, gid in enumerate(order):
        if gid in seen or not is_locked(src[gid]):
            continue
        cell = copy.deepcopy(src[gid])
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        where = _anchor(result.nb.cells, order[:k][::-1], after=True)
        if where is None:
            where = _anchor(result.nb.cells, order[k + 1:], after=False)
        result.nb.cells.insert(len(result.nb.cells) if where is None else where, cell)
        seen.add(gid)
        result.notes.append(f"locked cell {gid} was missing from the submission and was put back")


def _anchor(cells: list[NotebookNode], candidates: list[str], after: bool) -> int | None:
    """Insertion index next to the first of `candidates` present in `cells`."""
    where = {grade_id(c): i for i, c in enumerate(cells) if grade_id(c)}
    for gid in candidates:
        if gid in where:
            return where[gid] + 1 if after else where[gid]
    return None


def _unique_ids(nb: NotebookNode) -> None:
    """Give every cell a unique, valid nbformat 4.5 id (students duplicate cells)."""
    nb.nbformat, nb.nbformat_minor = 4, max(5, int(nb.get("nbformat_minor", 5)))
    valid = re.compile(r"[a-zA-Z0-9-_]{1,64}")  # nbformat 4.5's cell id (fullmatch)
    seen: set[str] = set()
    for k, cell in enumerate(nb.cells):
        cid = cell.get("id")
        if not isinstance(cid, str) or not valid.fullmatch(cid) or cid in seen:
            cid = f"cell-{k}"
            while cid in seen:
                cid += "x"
            cell.id = cid
        seen.add(cid)


_TB_CODE = re.compile(r"^\s*(?:-*>)?\s*\d+\s(.*)$")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def scrub_traceback(traceback: list[str], secret: set[str]) -> list[str]:
    """`traceback` without the lines that quote hidden-test source (IPython shows code context)."""
    out = []
    for entry in traceback:
        lines = []
        for line in str(entry).split("\n"):
            m = _TB_CODE.match(_ANSI.sub("", line))
            if (m and m.group(1).strip() in secret) or _ANSI.sub("", line).strip() in secret:
                continue
            lines.append(line)
        out.append("\n".join(lines))
    return out


def for_feedback(nb: NotebookNode, copy_first: bool = True) -> NotebookNode:
    """The executed notebook with the test cells' hidden tests removed, from source and tracebacks
    (a copy, or `nb` itself changed in place with copy_first=False)."""
    nb = copy.deepcopy(nb) if copy_first else nb
    for cell in nb.cells:
        if has_hidden_tests(cell.get("source", "")):
            secret = secret_lines(cell.source)
            cell.source = strip_hidden_tests(cell.source)
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    output.traceback = scrub_traceback(output.get("traceback", []), secret)
    return nb
