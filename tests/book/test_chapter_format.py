"""Every chapter: a text source that makes the same notebook every time, a one-word edit is a one-line
diff, no outputs, valid nbgrader schema 3, hidden checks that exist."""
from __future__ import annotations

import difflib
import json

import nbformat
import pytest
from nbgrader.nbgraderformat.v3 import MetadataValidatorV3

from autograder.checks import CHECKS
from coursenb import cells, chapters
from coursenb.chapters import Chapter, select

CHAPTERS = select()


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.assignment)
def test_the_source_is_canonical_text(chapter: Chapter) -> None:
    """Writing the chapter's notebook back as text gives the source itself: no hidden state, no header."""
    text = chapter.path.read_text()
    assert chapters.writes(chapter.read()) == text, f"{chapter.path.name} is not in jupytext's percent form"
    assert not text.startswith("# ---"), "no notebook header: the kernel and ids are the loader's"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.assignment)
def test_no_markdown_line_opens_with_a_comment_and_goes_on(chapter: Chapter) -> None:
    """A line that opens with an HTML comment starts an HTML block in MyST: the rest of the line (and its math)
    is shown as raw text. A tag (<!-- claim -->, <!-- seed -->) goes after a word, never first on a line."""
    import re

    bad = [line.strip() for c in chapter.read().cells if c.cell_type == "markdown" for line in c.source.splitlines()
           if line.lstrip().startswith("<!--") and "-->" in line and re.sub(r"<!--.*?-->", "", line).strip()]
    assert not bad, f"{chapter.path.name}: lines opening with a comment, then text: {bad[:5]}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.assignment)
def test_regenerating_changes_nothing(chapter: Chapter, tmp_path) -> None:
    first = chapters.materialise(tmp_path / "a", [chapter.assignment])[0].read_bytes()
    second = chapters.materialise(tmp_path / "b", [chapter.assignment])[0].read_bytes()
    assert first == second
    nb = json.loads(first)
    ids = [c["id"] for c in nb["cells"]]
    assert len(set(ids)) == len(ids)
    graded = [c for c in nb["cells"] if "nbgrader" in c["metadata"]]
    assert all(c["id"] == c["metadata"]["nbgrader"]["grade_id"] for c in graded), "graded cells are named by grade_id"


def test_a_one_word_change_is_a_one_line_diff(tmp_path) -> None:
    chapter = CHAPTERS[1]
    text = chapter.path.read_text()
    edited = text.replace(" exact", " precise", 1)
    assert edited != text
    changed = [line for line in difflib.unified_diff(text.splitlines(), edited.splitlines(), lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert len(changed) == 2, changed  # one line out, one line in
    before, after = chapters.reads(text), chapters.reads(edited)
    assert [c.id for c in before.cells] == [c.id for c in after.cells], "no cell id moves"
    differ = [k for k, (a, b) in enumerate(zip(before.cells, after.cells)) if a.source != b.source]
    assert len(differ) == 1


def _nb(chapter: Chapter) -> nbformat.NotebookNode:
    return chapter.read()


def _grade_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if "nbgrader" in c.metadata]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.assignment)
def test_no_outputs_committed(chapter: Chapter) -> None:
    for k, cell in enumerate(_nb(chapter).cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"cell {k} of {chapter.path.name} carries outputs: clear them"
            assert cell.execution_count is None, f"cell {k} of {chapter.path.name} has an execution count"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.assignment)
def test_nbgrader_metadata_is_valid_schema_3(chapter: Chapter) -> None:
    nb = _nb(chapter)
    MetadataValidatorV3().validate_nb(nb)  # raises on any invalid cell
    ids = [c.metadata.nbgrader["grade_id"] for c in _grade_cells(nb)]
    assert len(ids) == len(set(ids)), f"duplicate grade_id in {chapter.path.name}"
    assert all(cells.GRADE_ID.fullmatch(i) for i in ids)
    for cell in _grade_cells(nb):
        meta = cell.metadata.nbgrader
        assert meta["schema_version"] == 3
        if meta["solution"]:
            assert cells.solution_lines(cell.source), f"{meta['grade_id']} has no solution region"
        if cells.is_test(cell):
            assert meta["locked"] and meta["points"] > 0
            assert not cell.source.rstrip().splitlines()[-1].startswith(("1", "2", "0.")), \
                "a test cell must not end in a number: nbgrader would read it as partial credit"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.assignment)
def test_every_test_cell_has_hidden_checks_that_exist(chapter: Chapter) -> None:
    for cell in _grade_cells(_nb(chapter)):
        if not cells.is_test(cell):
            continue
        hidden = "\n".join(cells.hidden_tests(cell.source))
        assert hidden, f"{cell.metadata.nbgrader['grade_id']} has no hidden tests"
        names = cells.hidden_check_names(hidden)
        assert names, f"{cell.metadata.nbgrader['grade_id']}: hidden tests call no hidden_check"
        for name in names:
            assert name in CHECKS, f"hidden_check({name!r}) is not in autograder.checks"
            assert name.startswith(chapter.assignment + "."), f"{name} belongs to another chapter"


def test_every_check_is_used_by_its_chapter() -> None:
    used = set()
    for chapter in CHAPTERS:
        used |= {name for c in _nb(chapter).cells for name in cells.hidden_check_names(c.source)}
    present = {c.assignment for c in CHAPTERS}
    unused = {n for n in CHECKS if n.split(".")[0] in present} - used
    assert not unused, f"checks defined but never called: {sorted(unused)}"


# The longest code line a chapter may have: what the book's article column shows without scrolling at 1366 px
# (_static/book.css sets the column and the code's size; tests/book/test_book_browser.py checks every block fits).
CODE_WIDTH = 100


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.assignment)
def test_every_code_line_fits_the_books_column(chapter: Chapter) -> None:
    """A longer line scrolls sideways on the page, hiding the end of a signature or a docstring."""
    long = [f"{len(line)}: {line.strip()[:60]}" for c in chapter.read().cells if c.cell_type == "code"
            for line in c.source.splitlines() if len(line) > CODE_WIDTH]
    assert not long, f"{chapter.path.name}: code lines over {CODE_WIDTH} characters: {long[:5]}"
