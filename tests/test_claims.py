"""Every figure the book's prose states is printed or asserted by the run that shows it.

The convention (also in front/instructors.md, "Claims"): in a chapter's markdown, a figure that a run
produces (an error, an accuracy, a percentage, a ratio, a power of ten) is followed in its paragraph by
an invisible tag, ``<!-- claim: ID -->``, and one line of a code cell of the same chapter carries the
comment ``# claim: ID`` on a statement that asserts it (``assert``, ``raise``, an ``expect_...`` helper)
or prints it (``print``). A figure that is part of the problem's setup (a seed's numbers, a bound the
grader applies, a size) is tagged ``<!-- given -->`` instead. A sentence that says what a model or a
function does carries a claim tag too; no regex can find such sentences, so for them the tag is the
author's duty and this test only checks that the tag points at a check.

The test reads the chapters' sources (no execution): `untagged` lists every figure with neither tag.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import pytest

from coursenb import cells
from coursenb.chapters import Chapter, select

CHAPTERS = select()

TAG = re.compile(r"<!--\s*(claim:\s*(?P<id>[\w.-]+)|given)\s*-->")
CODE_MARK = re.compile(r"#\s*claim:\s*(?P<id>[\w.-]+)\s*$")
CHECKS = re.compile(r"\b(assert|raise|print|expect_\w+|check_claims?)\b")
# Cross-references (Section 5.1, Problems 3.5 and 3.6, Problems 3.5-3.7) are not figures.
REFERENCE = re.compile(r"\b(?:Sections?|Problems?|Chapters?|part)\s+\d+(?:\.\d+)?"
                       r"(?:\s*(?:,|and|-|--|–)\s*\d+(?:\.\d+)?)*")
FIGURE = re.compile(
    r"(?<![\w.\\])(?:"
    r"\d+(?:\.\d+)?\s*\\times\s*10\^\{?[-−]?\d+\}?"            # 3.1 \times 10^{-5}
    r"|\d+(?:\.\d+)?\s*\\?%"                                # a percentage
    r"|10\^\{?[-−]?\d+\}?"                                  # a power of ten
    r"|\d+(?:\.\d+)?\s*(?:×|\\times|x)(?=\s+(?:faster|slower|more|fewer|less|larger|smaller))"  # a ratio
    r"|\d+(?:\.\d+)?\s+times\s+(?:faster|slower|more|fewer|less|larger|smaller|as)\b"
    r"|\d{1,3}(?:(?:\{,\}|,)\d{3})+(?!\d)"                     # a count written with thousands separators
    r"|\d+\.\d+"                                            # a decimal
    r")")


@dataclass(frozen=True)
class Figure:
    chapter: str
    text: str
    paragraph: str

    def __str__(self) -> str:
        return f"{self.chapter}: {self.text!r} in: {self.paragraph[:160]}"


def paragraphs(markdown: str) -> list[str]:
    """The prose paragraphs of a markdown cell: no headings, no code blocks, no inline code; lines joined."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)
    out = []
    for block in re.split(r"\n\s*\n", text):
        lines = [ln for ln in block.splitlines() if not ln.lstrip().startswith("#")]
        joined = re.sub(r"`[^`]*`", "``", " ".join(ln.strip() for ln in lines))
        if joined.strip():
            out.append(joined)
    return out


def untagged_figures(name: str, markdown: str) -> list[Figure]:
    """Figures in `markdown` that no claim or given tag follows in their paragraph."""
    found = []
    for paragraph in paragraphs(markdown):
        scrubbed = REFERENCE.sub(lambda m: " " * len(m.group(0)), paragraph)
        tags = [m.start() for m in TAG.finditer(scrubbed)]
        for m in FIGURE.finditer(scrubbed):
            if not any(t > m.start() for t in tags):
                found.append(Figure(name, m.group(0), paragraph))
    return found


def claim_tags(markdown: str) -> list[str]:
    return [m.group("id") for m in TAG.finditer(markdown) if m.group("id")]


def code_marks(source: str) -> dict[str, str]:
    """claim id -> the statement whose line carries it (without comments)."""
    lines = source.splitlines()
    try:
        statements = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.stmt)]
    except SyntaxError:
        statements = []
    marks = {}
    for number, line in enumerate(lines, start=1):
        if m := CODE_MARK.search(line):
            around = [n for n in statements if n.lineno <= number <= (n.end_lineno or n.lineno)]
            inner = min(around, key=lambda n: (n.end_lineno or n.lineno) - n.lineno, default=None)
            span = lines[inner.lineno - 1:inner.end_lineno] if inner else [line]
            marks[m.group("id")] = " ".join(ln.split("#")[0].strip() for ln in span)
    return marks


def chapter_parts(chapter: Chapter) -> tuple[list[str], list[str]]:
    nb = chapter.read()
    markdown = [c.source for c in nb.cells if c.cell_type == "markdown"]
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    return markdown, code


def problems(chapter: Chapter) -> list[str]:
    """Everything wrong with the chapter's claims, one line each."""
    markdown, code = chapter_parts(chapter)
    out = [f"untagged figure, {f}" for md in markdown for f in untagged_figures(chapter.notebook, md)]
    marks: dict[str, str] = {}
    for source in code:
        for cid, line in code_marks(source).items():
            if cid in marks:
                out.append(f"{chapter.notebook}: claim {cid} is marked on two code lines")
            marks[cid] = line
            if not CHECKS.search(line):
                out.append(f"{chapter.notebook}: the line marked claim {cid} neither asserts nor prints: {line[:120]}")
    used = {cid for md in markdown for cid in claim_tags(md)}
    out += [f"{chapter.notebook}: claim {cid} is tagged in the text but no code line checks it"
            for cid in sorted(used - set(marks))]
    out += [f"{chapter.notebook}: code line marked claim {cid} backs no claim of the text"
            for cid in sorted(set(marks) - used)]
    return out


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.assignment)
def test_every_figure_in_the_prose_is_printed_or_asserted(chapter: Chapter) -> None:
    found = problems(chapter)
    assert not found, "claims neither printed nor asserted (tag them, see tests/test_claims.py):\n" + "\n".join(found)


def test_the_scan_finds_figures_and_ignores_references() -> None:
    md = ("A layer holds $2{,}097{,}152$ parameters.\n"
          "Each token puts more than 99.99% of its weight on token 4, a gap of $9.2\\times 10^{-5}$ (Section 0.2).\n"
          "\nThe GRU is 3.5 times slower; see Problems 3.5 and 3.6 and Problems 3.5-3.7.")
    found = [f.text for f in untagged_figures("x", md)]
    assert found == ["2{,}097{,}152", "99.99%", "9.2\\times 10^{-5}", "3.5 times slower"], found
    tagged = md.replace("(Section 0.2)", "<!-- claim: a --> (Section 0.2)").replace("slower;", "slower <!-- given -->;")
    assert untagged_figures("x", tagged) == []
    assert claim_tags(tagged) == ["a"]


def test_a_tag_must_point_at_a_check(tmp_path) -> None:
    """A planted claim without a check, and a marked line that only computes, are both reported."""
    source = tmp_path / "ch9_planted.py"
    source.write_text('# %% [markdown]\n# It learns 97.5% of them. <!-- claim: ch9-acc -->\n\n'
                      '# %%\nacc = 0.975  # claim: ch9-acc\n\n'
                      '# %% [markdown]\n# Loss 0.25. <!-- claim: ch9-loss -->\n')
    found = problems(Chapter(source))
    assert any("ch9-acc neither asserts nor prints" in p for p in found), found
    assert any("ch9-loss is tagged in the text but no code line checks it" in p for p in found), found
    source.write_text(source.read_text().replace("acc = 0.975  # claim: ch9-acc",
                                                 "acc = 0.975\nassert acc >= 0.95  # claim: ch9-acc\n"
                                                 "print(f'{0.25}')  # claim: ch9-loss"))
    assert problems(Chapter(source)) == []


def test_solutions_only_cells_count_too() -> None:
    """The solutions edition's prose is the book's too: its cells are scanned like every other."""
    assert cells.SOLUTIONS_ONLY == "solutions-only"
    nb = CHAPTERS[5].read()
    assert any(cells.is_solutions_only(c) and c.cell_type == "markdown" for c in nb.cells)
