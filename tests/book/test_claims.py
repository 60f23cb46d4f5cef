"""Every figure the book's prose states is printed or asserted by the run that shows it.

The convention (also in front/instructors.md, "Claims"): in a chapter's markdown, a figure that a run
produces (an error, an accuracy, a percentage, a ratio, a power of ten) is followed in its paragraph by
an invisible tag, ``<!-- claim: ID -->``, and one line of a code cell of the same chapter carries the
comment ``# claim: ID`` on a statement that asserts it (``assert``, ``raise``, an ``expect_...`` helper)
or prints it (``print``). A figure that is part of the problem's setup (a seed's numbers, a bound the
grader applies, a size) is tagged ``<!-- given -->`` instead.

Two kinds of candidate are found by the sentence, and each needs a tag inside its sentence (a tag right after
the sentence's full stop belongs to it): a sentence that says what a model or a function does (a verb of
behaviour: learns, predicts, beats, varies, converges, fails, ignores, grows, climbs ...; or a comparison:
least, most, faster, better, fewer, "more than" ...), and an integer written in prose (outside math and code)
that is not an identifier (token 4, head 0, seed 002, Problem 3.5) or part of a hyphenated word (4-D). Such a
sentence carries a claim tag, ``<!-- given -->`` (a setup constant), or ``<!-- not a claim: REASON -->``
(general knowledge, a definition, a hint: the reason is required and read by a reviewer, never the test).

The test reads the chapters' sources (no execution): `untagged_figures` and `untagged_sentences` list every
candidate with no tag.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import pytest

from coursenb import cells
from coursenb.chapters import Chapter, select

CHAPTERS = select()

TAG = re.compile(r"<!--\s*(?:claim:\s*(?P<id>[\w.-]+)|given|not a claim:\s*(?P<reason>(?:(?!-->).)*?\w(?:(?!-->).)*?))\s*-->")
BARE = re.compile(r"<!--\s*not a claim\s*:?\s*-->")  # a waiver without its reason
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
# A sentence that says what a model or a function does: a verb of behaviour or a comparison.
BEHAVIOUR = re.compile(
    r"\b(?:learns|learnt|predicts|beats|vary|varies|converges|converged|fails|failed|cheats|outperforms|ignores"
    r"|generalises|generalizes|overfits|recovers|wins|loses|grows|falls|climbs|drops|rises|shrinks|saturates"
    r"|least|most|faster|slower|better|worse|best|worst|fewer|cheaper|closer|longest|shortest|largest|smallest"
    r"|(?:more|less|larger|smaller)\s+than)\b", re.I)
# An integer in prose: 2 and up (0 and 1 name a base case, not a count), not part of a word, a decimal, an
# ordinal or a hyphenated word, and not an identifier (the noun before it names a thing: token 4, seed 002).
INTEGER = re.compile(r"(?<![\w.\\$^_{#-])(?:[2-9]|\d{2,})(?![\w.-]|\.\d|(?:st|nd|rd|th)\b)")
IDENTIFIER = re.compile(
    r"\b(?:seeds?|tokens?|heads?|layers?|words?|items?|positions?|steps?|P|Week|rows?|columns?|channels?|Lecture|Notes"
    r"|COMP|CSE|TTIC|Problems?|Sections?|Chapters?|parts?|Table|Figure|lines?|cells?|pixels?|states?|levels?|query"
    r"|key|slot|offset|index|version|Python|PyTorch|torch|issue|round|epoch|stride)"
    r"\s+(?:\d+(?:\s*(?:,|and|or|to|-|–)\s*)?)+$", re.I)
YEAR = re.compile(r"(?:19|20)\d\d")
MATH = re.compile(r"\$\$.+?\$\$|\$.+?\$", re.S)
SENTENCE = re.compile(r"(?:(?<=[.?!])|(?<=-->))\s+(?=[A-Z(*\[])")


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


@dataclass(frozen=True)
class Sentence:
    chapter: str
    why: str
    text: str

    def __str__(self) -> str:
        return f"{self.chapter}: {self.why} in: {self.text[:200]}"


def integers(prose: str) -> list[str]:
    """The integers of a sentence's prose (math and code already out) that are not identifiers or years."""
    return [m.group(0) for m in INTEGER.finditer(prose)
            if not IDENTIFIER.search(prose[:m.end()]) and not YEAR.fullmatch(m.group(0))]


def untagged_sentences(name: str, markdown: str) -> list[Sentence]:
    """Sentences of `markdown` that state a behaviour, a comparison or a prose integer and carry no tag."""
    found = []
    for paragraph in paragraphs(markdown):
        scrubbed = REFERENCE.sub(lambda m: " " * len(m.group(0)), paragraph)
        for sentence in SENTENCE.split(scrubbed):
            if TAG.search(sentence):
                continue
            prose = MATH.sub(" ", sentence)
            words = [m.group(0) for m in BEHAVIOUR.finditer(prose)]
            counts = integers(prose)
            if words or counts:
                why = ", ".join([f"says {w!r}" for w in words] + [f"counts {c}" for c in counts])
                found.append(Sentence(name, why, sentence.strip()))
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
    out += [f"untagged sentence, {s}" for md in markdown for s in untagged_sentences(chapter.notebook, md)]
    out += [f"{chapter.notebook}: a 'not a claim' tag without its reason: {m.group(0)}"
            for md in markdown for m in BARE.finditer(md)]
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
    assert not found, "claims neither printed nor asserted (tag them, see tests/book/test_claims.py):\n" + "\n".join(found)


def test_the_scan_finds_figures_and_ignores_references() -> None:
    md = ("A layer holds $2{,}097{,}152$ parameters.\n"
          "Each token puts more than 99.99% of its weight on token 4, a gap of $9.2\\times 10^{-5}$ (Section 0.2).\n"
          "\nThe GRU is 3.5 times slower; see Problems 3.5 and 3.6 and Problems 3.5-3.7.")
    found = [f.text for f in untagged_figures("x", md)]
    assert found == ["2{,}097{,}152", "99.99%", "9.2\\times 10^{-5}", "3.5 times slower"], found
    tagged = md.replace("(Section 0.2)", "<!-- claim: a --> (Section 0.2)").replace("slower;", "slower <!-- given -->;")
    assert untagged_figures("x", tagged) == []
    assert claim_tags(tagged) == ["a"]


def test_the_scan_finds_sentence_claims_and_prose_counts() -> None:
    """A planted untagged sentence claim and a planted integer count are found; tags, identifiers are not."""
    md = ("Nouns are the least predictable. The joint softmax's column totals vary, as the cell above shows.\n\n"
          "The model fills 17 of the 20 blanks. Token 4 is head 0's favourite in seed 002 (Problem 3.5).\n\n"
          "A 4-D input of $T = 16$ positions, `range(100)`, in 2017.")
    found = untagged_sentences("x", md)
    assert [s.why for s in found] == ["says 'least'", "says 'vary'", "counts 17, counts 20"], found
    tagged = (md.replace("predictable.", "predictable. <!-- claim: nouns -->")
              .replace("shows.", "shows <!-- not a claim: the run above prints it -->.")
              .replace("blanks.", "blanks <!-- given -->."))
    assert untagged_sentences("x", tagged) == []
    assert claim_tags(tagged) == ["nouns"]
    assert untagged_sentences("x", md.replace("least", "<!-- not a claim -->least")), "a bare waiver counts"


def test_a_planted_sentence_claim_and_count_fail_the_chapter(tmp_path) -> None:
    """The chapter-level check reports both plants, and a waiver without its reason."""
    source = tmp_path / "ch9_planted.py"
    source.write_text("# %% [markdown]\n# The GRU beats the CNN here.\n#\n# It fills 17 blanks.\n"
                      "# Attention is parallel <!-- not a claim: -->.\n")
    found = problems(Chapter(source))
    assert any("untagged sentence" in p and "beats" in p for p in found), found
    assert any("untagged sentence" in p and "counts 17" in p for p in found), found
    assert any("without its reason" in p for p in found), found


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
