"""How a chapter reads as a page (both editions): what the book adds to or removes from a notebook's
cells for a reader, never what the notebook computes.

* the chapters' invisible tags (``<!-- claim: ID -->``, ``<!-- given -->``, ``<!-- seed -->``, ...)
  are removed with the spaces before them, so that none leaves "allows ." on the page;
* each problem (a paragraph opening ``**Problem 7.1.**``) becomes a heading, so that it has an
  anchor and a line in the page's contents;
* each code cell is labelled for what it is (`LABELS`, a tag that _static/book.css shows), and a
  long test or demonstration cell is collapsed (myst-nb's ``hide-input``);
* each figure's alt text is its description, measured on the figure as it was drawn (publish/kernel_startup.py),
  unless the chapter gives one (cell metadata ``mystnb: {image: {alt: ...}}``, beside the caption, ``mystnb:
  {figure: {caption: ...}}``, that says what to look at);
* in the student edition, a cell whose output is withheld (it shows answers) gets a note in its
  place saying what the reference run showed there and when the reader will see it.
"""
from __future__ import annotations

import re

import nbformat

from coursenb import cells

# <!-- ... -->, and the horizontal space before it (multi-line declarations included)
COMMENT = re.compile(r"[ \t]*<!--.*?-->", re.S)
# a paragraph that opens with a problem's bold name, "**Problem 7.1.**" (one or more numbered parts)
PROBLEM = re.compile(r"^\*\*(Problem \d+\.\d+[a-z]?(?: \([^)\n]*\))?)\.\*\*[ \t]*", re.M)
HEADING = re.compile(r"^(#{1,6})\s", re.M)
# cell tag -> what the label says (its text is in _static/book.css, under .tag_<tag>)
YOUR_CODE, SOLUTION = "book-your-code", "book-solution"  # a solution cell, in the student's and the instructor's edition
VISIBLE_TESTS, LOCKED = "book-visible-tests", "book-locked"
LABELS = (YOUR_CODE, SOLUTION, VISIBLE_TESTS, LOCKED)
WITHHELD = "book-withheld"  # the note in place of a withheld output
# A test or demonstration cell longer than this many lines is collapsed (the reader opens it).
COLLAPSE_LINES = 30


def without_comments(text: str) -> str:
    """Markdown `text` without HTML comments and the spaces before them ("outputs are <!-- x -->." -> "outputs are.")."""
    return COMMENT.sub("", text)


def problem_headings(text: str, level: int) -> str:
    """Markdown `text` with each "**Problem N.M.** ..." paragraph opened by a heading of `level` instead."""
    return PROBLEM.sub(lambda m: f"{'#' * level} {m.group(1)}\n\n", text)


def label(cell: nbformat.NotebookNode, student: bool) -> str | None:
    """The label tag of a code cell: the reader's code (the solution, in the instructor's edition), visible
    tests, a locked cell; None for another cell."""
    if cell.get("cell_type") != "code" or not cells.nbgrader_meta(cell):
        return None
    if cells.is_solution(cell):
        return YOUR_CODE if student else SOLUTION
    if cells.is_test(cell):
        return VISIBLE_TESTS
    return LOCKED if cells.is_locked(cell) else None


def withheld_note(outputs: list) -> str:
    """The note that stands for `outputs` (the reference run's, withheld): what kind of output, how much."""
    lines = sum(len(o.get("text", "").splitlines()) if o.get("output_type") == "stream"
                else len(o.get("data", {}).get("text/plain", "").splitlines())
                for o in outputs if not o.get("data", {}).get("image/png"))
    figures = sum(1 for o in outputs if o.get("data", {}).get("image/png"))
    shown = [f"{n} {word}{'s' if n != 1 else ''}" for n, word in ((lines, "line"), (figures, "figure")) if n]
    what = " and ".join(shown) or "its output"
    return (f":::{{admonition}} Output withheld\n:class: note {WITHHELD}\n"
            f"The reference run's output of the cell above ({what}) is made from the solutions, so this "
            "edition leaves it out. You will see your own when you run the cell in your notebook, once "
            "your functions above pass their tests; the text says what to look for.\n:::")


def described(cell: nbformat.NotebookNode) -> None:
    """Give a code cell's figures their alt text: the chapter's own, else the first figure's measured description."""
    found = [o.get("metadata", {}).get("book_description") for o in cell.get("outputs", [])
             if "image/png" in o.get("data", {})]
    image = cell.metadata.get("mystnb", {}).get("image", {})
    if found and "alt" not in image and found[0]:
        cell.metadata.setdefault("mystnb", {}).setdefault("image", {})["alt"] = "Figure: " + found[0]


def page_notebook(nb: nbformat.NotebookNode, student: bool,
                  withheld: dict[str, list] | None = None) -> nbformat.NotebookNode:
    """`nb` as a page of the student's (`student`) or the instructor's edition reads (module docstring).
    `withheld`: the outputs the student edition dropped, by cell id (a note stands after each such cell)."""
    nb = nbformat.from_dict(nb)
    withheld = withheld or {}
    out, level = [], 2
    for cell in nb.cells:
        out.append(cell)
        if cell.cell_type == "markdown":
            parts = re.split(r"(?m)^(?=#{1,6}\s)", without_comments(cell.source))
            for i, part in enumerate(parts):
                if head := HEADING.match(part):  # a problem sits one level below the heading above it
                    level = min(len(head.group(1)) + 1, 6)
                parts[i] = problem_headings(part, level)
            cell.source = "".join(parts)
        elif cell.cell_type == "code":
            tags = cells.tags(cell)
            tag = label(cell, student)
            if tag:
                tags.append(tag)
            if (len(cell.source.splitlines()) > COLLAPSE_LINES and tag not in (YOUR_CODE, SOLUTION)
                    and "hide-input" not in tags and "remove-input" not in tags):
                tags.append("hide-input")
            if tags:
                cell.metadata["tags"] = tags
            described(cell)
            if withheld.get(cell.get("id")):
                # its id made from the cell's: a fresh random id would make every staging differ, and with it
                # the edition's Sphinx build and its audit, in every process that builds the book
                out.append(nbformat.v4.new_markdown_cell(withheld_note(withheld[cell.id]),
                                                         id=f"{cell.id}-withheld"[-64:]))
    nb.cells = out
    return nb
