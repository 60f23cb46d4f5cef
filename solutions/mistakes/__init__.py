"""Wrong implementations, one module per chapter: each loses exactly the named cells' points.

A mistake changes one solution cell (by grade_id) of the chapter's source notebook. Most are
edits of the reference's own text, so they follow the chapter when it changes and cannot drift
from it:

* `Patch(cell, old, new, loses, why)`: the text `old`, found exactly once in the reference cell,
  becomes `new` (`Patch("self_attention", " / math.sqrt(K)", "", ...)`: the scale left out); with
  `line=True`, the whole line holding `old` becomes `new`;
* `Assign(cell, name, value, loses, why)`: the cell's assignment `name = ...` becomes
  `name = value` (a wrong symbolic answer, whatever the reference's is);
* `Wrong(cell, source, loses, why)`: the whole cell replaced, for a mistake that is another design
  (Chapter 4's heads, a layer that flattens the other way), not an edit.

A patch whose anchor is gone from the chapter, or found more than once, raises `StaleMistake`
naming the mistake and the anchor. The marker lines of the solution region go (as in a student's
submission). Every test cell of every chapter must be lost by at least one mistake alone.
"""
from __future__ import annotations

import ast
import importlib
import textwrap
from dataclasses import dataclass

import nbformat

from coursenb import cells


class StaleMistake(ValueError):
    """A mistake's anchor is not (exactly once) in the chapter's reference cell: update the mistake."""


@dataclass(frozen=True)
class Wrong:
    """A plausible mistake in solution cell `cell`, written out whole; `loses` are the test cells it must fail."""

    cell: str
    source: str
    loses: tuple[str, ...]
    why: str

    def wrong_source(self, reference: str) -> str:
        """The wrong cell (the reference's text is not used)."""
        return textwrap.dedent(self.source).strip("\n")


@dataclass(frozen=True)
class Patch:
    """A mistake as an edit of the reference cell: `old` (found exactly once) replaced by `new`; with
    `line=True` the whole line holding `old` is replaced by `new` (indented as it was)."""

    cell: str
    old: str
    new: str
    loses: tuple[str, ...]
    why: str
    line: bool = False

    def wrong_source(self, reference: str) -> str:
        """The reference cell with the edit made; StaleMistake if `old` is not in it exactly once."""
        found = reference.count(self.old)
        if found != 1:
            where = "is not in" if found == 0 else f"is {found} times in"
            raise StaleMistake(f"mistake {self.why!r}: its anchor {self.old!r} {where} the reference cell "
                               f"{self.cell!r}; update solutions/mistakes to the chapter's text")
        if not self.line:
            return cells.without_solution_markers(reference.replace(self.old, self.new))
        lines = reference.split("\n")
        k = next(k for k, text in enumerate(lines) if self.old in text)
        lines[k] = lines[k][:len(lines[k]) - len(lines[k].lstrip())] + self.new
        return cells.without_solution_markers("\n".join(lines))


@dataclass(frozen=True)
class Assign:
    """A mistake as another value of one answer: the cell's assignment `name = ...` becomes `name = value`."""

    cell: str
    name: str
    value: str
    loses: tuple[str, ...]
    why: str

    def wrong_source(self, reference: str) -> str:
        """The reference cell with `name`'s assignment replaced; StaleMistake if the cell does not assign it once."""
        found = [node for node in ast.parse(reference).body if isinstance(node, ast.Assign)
                 and [t.id for t in node.targets if isinstance(t, ast.Name)] == [self.name]]
        if len(found) != 1:
            raise StaleMistake(f"mistake {self.why!r}: the reference cell {self.cell!r} assigns {self.name} "
                               f"{len(found)} times, not once; update solutions/mistakes to the chapter's text")
        lines = reference.split("\n")
        node = found[0]
        lines[node.lineno - 1:node.end_lineno] = [f"{self.name} = {self.value!r}"]
        return cells.without_solution_markers("\n".join(lines))


Mistake = Wrong | Patch | Assign


def wrong_for(assignment: str) -> list[Mistake]:
    """The mistakes of chapter `assignment` (e.g. 'ch1')."""
    return importlib.import_module(f"solutions.mistakes.{assignment}").WRONG


def wrong_answers(assignment: str, name: str) -> list[str]:
    """The wrong values of symbolic answer `name` in chapter `assignment`'s mistakes (its `Assign`s)."""
    return [w.value for w in wrong_for(assignment) if isinstance(w, Assign) and w.name == name]


def _cell(nb: nbformat.NotebookNode, grade_id: str) -> nbformat.NotebookNode:
    found = [c for c in nb.cells if cells.grade_id(c) == grade_id]
    if len(found) != 1:
        raise KeyError(f"no single solution cell {grade_id!r}")
    return found[0]


def apply(nb: nbformat.NotebookNode, wrong: Mistake) -> nbformat.NotebookNode:
    """A copy of `nb` (a chapter's source notebook) with solution cell `wrong.cell` made wrong."""
    nb = nbformat.from_dict(nb)
    cell = _cell(nb, wrong.cell)
    cell.source = wrong.wrong_source(cell.source)
    return nb


def source_of(wrong: Mistake, assignment: str) -> str:
    """The wrong cell's text, made from chapter `assignment`'s reference cell."""
    from solutions.chapter import source_notebook

    return wrong.wrong_source(_cell(source_notebook(assignment), wrong.cell).source)
