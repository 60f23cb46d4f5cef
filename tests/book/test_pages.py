"""How a chapter reads as a page (`publish.pages`), what an edition ships (`publish.sphinx.prune`) and the landing
page (`publish.build.write_landing`), without building the book: tests/book/test_book_browser.py reads the built pages."""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

from publish import pages, sphinx

build = sys.modules["publish.build"]  # the module (the package's `build` is its function)


def _nbgrader(cell: nbformat.NotebookNode, grade_id: str, solution: bool, grade: bool, locked: bool) -> None:
    cell.metadata["nbgrader"] = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
                                 "solution": solution, **({"points": 1} if grade else {})}


def _chapter() -> nbformat.NotebookNode:
    """A small chapter: a section with a problem, a stub, its test, a locked demo that draws, a long test."""
    v4 = nbformat.v4
    nb = v4.new_notebook()
    nb.cells = [v4.new_markdown_cell("## 7.8 The block's time\n\nTake $K = J/H$ <!-- not a claim: a design -->.\n\n"
                                     "**Problem 7.7.** What is the order?\n<!-- letters:\n T:length -->"),
                v4.new_code_cell("BLOCK_TIME = 'log(T)'"), v4.new_code_cell("expect_answer(BLOCK_TIME)"),
                v4.new_code_cell("draw()"), v4.new_code_cell("\n".join(f"check({i})" for i in range(40))),
                v4.new_markdown_cell("### A subsection\n\n**Problem 7.8 (seed 002 P1).** And this?")]
    _nbgrader(nb.cells[1], "block_time", solution=True, grade=False, locked=False)
    _nbgrader(nb.cells[2], "test_block_time", solution=False, grade=True, locked=True)
    _nbgrader(nb.cells[4], "test_long", solution=False, grade=True, locked=True)
    _nbgrader(nb.cells[3], "demo", solution=False, grade=False, locked=True)
    nb.cells[3].outputs = [v4.new_output("stream", text="a\nb\n"),
                           v4.new_output("display_data", data={"image/png": "iVBOR"},
                                         metadata={"book_description": "a plot of depth against T."})]
    return nb


def test_the_chapters_tags_leave_no_space_before_punctuation() -> None:
    assert pages.without_comments("outputs are <!-- claim: ch7-x -->.") == "outputs are."
    assert pages.without_comments("$T = 64$ <!-- given --> (with") == "$T = 64$ (with"
    assert pages.without_comments("x <!-- letters:\n T:length\n t:position -->\ny") == "x\ny"


def test_a_page_labels_its_cells_heads_its_problems_and_describes_its_figures() -> None:
    page = pages.page_notebook(_chapter(), student=False)
    text = page.cells[0].source
    assert "<!--" not in text and "$K = J/H$." in text
    assert "### Problem 7.7\n\nWhat is the order?" in text, text
    assert page.cells[-1].source.endswith("#### Problem 7.8 (seed 002 P1)\n\nAnd this?"), "one level below ###"
    tags = [c.metadata.get("tags", []) for c in page.cells[1:5]]
    assert tags == [[pages.SOLUTION], [pages.VISIBLE_TESTS], [pages.LOCKED], [pages.VISIBLE_TESTS, "hide-input"]]
    assert page.cells[3].metadata["mystnb"]["image"]["alt"] == "Figure: a plot of depth against T."


def test_the_student_page_marks_each_withheld_output_and_labels_the_stub_as_yours() -> None:
    nb = _chapter()
    withheld = {nb.cells[3].id: nb.cells[3].outputs}
    nb.cells[3].outputs = []
    page = pages.page_notebook(nb, student=True, withheld=withheld)
    assert page.cells[1].metadata["tags"] == [pages.YOUR_CODE]
    note = page.cells[4]
    assert note.cell_type == "markdown" and pages.WITHHELD in note.source, note.source
    assert "(2 lines and 1 figure)" in note.source and "iVBOR" not in note.source


def test_an_edition_ships_only_the_mathjax_its_pages_load_and_no_source_maps(tmp_path: Path) -> None:
    static = tmp_path / "_static"
    files = {"mathjax/tex-chtml.js": "entry", "mathjax/tex-svg-full.js": "x", "mathjax/input/tex/extensions/a.js": "x",
             "mathjax/output/chtml/fonts/woff-v2/b.woff": "x", "mathjax/output/svg/c.js": "x",
             "mathjax/sre/mathmaps/en.json": "x", "mathjax/node-main.js": "x",
             "scripts/theme.js": "code();\n//# sourceMappingURL=theme.js.map\n", "scripts/theme.js.map": "{}",
             "styles/theme.css": "a{}\n/*# sourceMappingURL=theme.css.map*/", "styles/theme.css.map": "{}"}
    for rel, text in files.items():
        (static / rel).parent.mkdir(parents=True, exist_ok=True)
        (static / rel).write_text(text)
    sphinx.prune(tmp_path)
    left = sorted(p.relative_to(static).as_posix() for p in static.rglob("*") if p.is_file())
    assert left == ["mathjax/input/tex/extensions/a.js", "mathjax/output/chtml/fonts/woff-v2/b.woff",
                    "mathjax/sre/mathmaps/en.json", "mathjax/tex-chtml.js", "scripts/theme.js", "styles/theme.css"]
    assert not (static / "mathjax" / "output" / "svg").exists(), "emptied folders go too"
    assert "sourceMappingURL" not in (static / "scripts/theme.js").read_text() + (static / "styles/theme.css").read_text()


def test_the_landing_page_links_both_editions_with_a_viewport_and_a_favicon(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build, "LANDING", tmp_path / "html" / "index.html")
    build.write_landing()
    text = (tmp_path / "html" / "index.html").read_text()
    assert '<meta name="viewport"' in text and "<style>" in text
    assert '<link rel="icon" href="favicon.svg">' in text and (tmp_path / "html" / "favicon.svg").is_file()
    assert 'href="../student/html/index.html"' in text and 'href="../solutions/html/index.html"' in text
