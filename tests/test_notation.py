"""One meaning per letter: every letter of the book's math is in front/notation.md's letter table, with one
meaning, and every chapter declares the letters it uses with that meaning.

A chapter declares its letters in a markdown cell, invisibly: ``<!-- letters: t:position T:length ... -->``,
each letter with the one-word key the table gives it. The test reads every chapter's math (``$...$`` and
``$$...$$`` in markdown cells) and fails on a letter that the chapter does not declare, on a declared letter
that the table lacks, and on a letter declared with another key than the table's (a second meaning).

What is not the book's own notation is skipped: the seed columns of a translation table (a table whose first
header is "book" keeps its first two columns), every sentence that names a seed (errata and translations
quote the seeds' letters), text inside ``\\text{}``, ``\\operatorname{}``, ``\\mathbf{}`` (the seeds' bold
matrices), ``\\mathbb{}``, ``\\mathcal{}``, and a capital written as a superscript label (the Q of W^Q).
Parsing only: no chapter is executed.
"""
from __future__ import annotations

import re
from collections import Counter

import pytest

from coursenb.chapters import ROOT, Chapter, select

CHAPTERS = select()
NOTATION = ROOT / "front" / "notation.md"
TABLE_HEADING = "### One meaning per letter"
GREEK = ("alpha|beta|gamma|delta|Delta|epsilon|zeta|eta|theta|iota|kappa|lambda|Lambda|mu|nu|xi|pi|rho|sigma|Sigma|"
         "tau|upsilon|phi|Phi|chi|psi|omega|Omega|ell")
LETTER = re.compile(r"\\(?:" + GREEK + r")(?![A-Za-z])|(?<![A-Za-z\\])[A-Za-z](?![A-Za-z])")
MATH = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$", re.S)
DECLARATION = re.compile(r"<!--\s*letters:\s*(.*?)-->", re.S)
SEED = re.compile(r"\bseeds?\b|\bseed's\b|\bthe notes\b|\bthe question\b|\bthe slides\b", re.I)


def letter_table(text: str | None = None) -> dict[str, str]:
    """notation.md's letter table: letter -> its one-word key; a letter listed twice is an error."""
    text = NOTATION.read_text() if text is None else text
    section = text.split(TABLE_HEADING, 1)[1].split("\n#", 1)[0]
    table: dict[str, str] = {}
    for row in section.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("$"):
            continue
        letter = cells[0].strip("$").strip()
        if letter in table:
            raise ValueError(f"notation.md lists {letter} twice: {table[letter]} and {cells[1]}")
        table[letter] = cells[1]
    return table


def book_text(markdown: str) -> str:
    """The markdown without what quotes a seed: seed columns of translation tables, sentences naming a seed."""
    lines, out = markdown.splitlines(), []
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith("|"):
            block = []
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                block.append(lines[i].strip().strip("|").split("|"))
                i += 1
            keep = 2 if block[0][0].strip().lower() == "book" else len(block[0])
            out += [" ".join(row[:keep]) for row in block[2:] if not SEED.search(" ".join(row[:keep]))]
            continue
        out.append(lines[i])
        i += 1
    sentences = re.split(r"(?<=[.;:?!])\s+(?=[A-Z*(\[])|\n\s*\n|\n\s*[*-] |\n\s*\d+\. ", "\n".join(out))
    return "\n".join(s for s in sentences if not SEED.search(s))


def letters(tex: str) -> list[str]:
    """The letters of one formula (Greek as \\alpha), without text, labels and the seeds' bold matrices."""
    tex = re.sub(r"\\(?:text\w*|mathrm|operatorname\*?|mathbf|mathbb|mathcal|boldsymbol)\s*\{[^{}]*\}", " ", tex)
    tex = re.sub(r"\^\{?[A-Z]\}?|\^\{?\\top\}?", " ", tex)  # W^Q, M^\top: labels, not letters
    tex = re.sub(r"\\(?!(?:" + GREEK + r")(?![A-Za-z]))[A-Za-z]+", " ", tex)  # \sum, \log, \cdot, ...
    return LETTER.findall(tex)


def used(markdown_cells: list[str]) -> Counter[str]:
    found: Counter[str] = Counter()
    for md in markdown_cells:
        text = DECLARATION.sub(" ", md)
        for m in MATH.finditer(book_text(text)):
            found.update(letters(m.group(1) or m.group(2)))
    return found


def declared(markdown_cells: list[str]) -> dict[str, str]:
    """The chapter's declaration: letter -> key."""
    out: dict[str, str] = {}
    for md in markdown_cells:
        for m in DECLARATION.finditer(md):
            for item in m.group(1).split():
                letter, _, key = item.partition(":")
                out[letter] = key
    return out


def problems(markdown_cells: list[str], table: dict[str, str], name: str) -> list[str]:
    """Everything that breaks one meaning per letter in one chapter, one line each."""
    decl = declared(markdown_cells)
    out = [f"{name}: declares no letters (<!-- letters: ... -->)"] if not decl else []
    for letter, key in decl.items():
        if letter not in table:
            out.append(f"{name}: {letter} ({key}) is not in notation.md's letter table")
        elif key != table[letter]:
            out.append(f"{name}: {letter} is declared as {key!r}, but the table gives it one meaning, {table[letter]!r}")
    for letter, count in sorted(used(markdown_cells).items()):
        if letter not in decl:
            out.append(f"{name}: {letter} is used {count} times in the math but not declared")
    return out


def markdown_of(chapter: Chapter) -> list[str]:
    return [c.source for c in chapter.read().cells if c.cell_type == "markdown"]


def test_the_table_gives_each_letter_one_meaning() -> None:
    table = letter_table()
    assert {"t", "T", "s", "N", "k", "x", r"\alpha"} <= set(table), sorted(table)
    with pytest.raises(ValueError, match="twice"):
        letter_table(f"{TABLE_HEADING}\n\n| letter | key | meaning |\n|---|---|---|\n| $s$ | score | a score |\n"
                     "| $s$ | state | a grammar's state |\n")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.assignment)
def test_each_chapter_uses_the_letters_it_declares_with_the_tables_meaning(chapter: Chapter) -> None:
    found = problems(markdown_of(chapter), letter_table(), chapter.notebook)
    assert not found, "one meaning per letter (front/notation.md):\n" + "\n".join(found)


def test_a_planted_reuse_fails() -> None:
    """Chapter 4's old text: s a grammar state (declared as such), B its emission table (not declared)."""
    table = letter_table()
    md = ["<!-- letters: t:length w:word s:state -->\n"
          "with $s_t$ the state at position $t$ and $B[s, w]$ its emission probabilities"]
    found = problems(md, table, "planted")
    assert any("s is declared as 'state'" in p for p in found), found
    assert any("B is used 1 times in the math but not declared" in p for p in found), found
    honest = ["<!-- letters: t:length w:word g:grammarstate -->\n"
              r"with $g_t$ the state at position $t$ and $\text{Emit}[g, w]$ its emission probabilities"]
    assert problems(honest, table, "honest") == [], problems(honest, table, "honest")


def test_seed_quotes_and_labels_are_not_the_books_letters() -> None:
    md = ("| book | meaning | seed 002 |\n|---|---|---|\n| $z[t, j]$ | state | $h[t, J]$ |\n\n"
          r"The seed writes $h[t-1, J]$. The book writes $W^Q[h, k, j]$ and $\mathbf{Q}_{\ell,h}$ and $\text{Query}$.")
    assert sorted(used([md])) == sorted({"z", "t", "j", "W", "h", "k", "\\ell"}), used([md])


# The code's einsum letters follow the same table (front/notation.md, "Einsum letters"): an index is its own
# letter, a primed index its capital (t' -> T, j' -> J, x' -> X, y' -> Y), Delta is d and ell is l.
EINSUM = re.compile(r"einsum\(\s*\"([^\"]*)\"")
EINSUM_FOR = {r"\Delta": "d", r"\ell": "l"}
SOLUTIONS = ROOT / "solutions"


def einsum_letters(declared_letters: dict[str, str]) -> set[str]:
    """The letters an einsum spec of a chapter may use: its declared indices, their primes (capitals), d, l."""
    indices = {letter for letter in declared_letters if len(letter) == 1 and letter.islower()}
    return indices | {i.upper() for i in indices} | {c for g, c in EINSUM_FOR.items() if g in declared_letters}


def einsum_problems(source: str, allowed: set[str], where: str) -> list[str]:
    out = []
    for spec in EINSUM.findall(source):
        wrong = sorted({c for c in spec if c.isalpha()} - allowed)
        if wrong:
            out.append(f"{where}: einsum \"{spec}\" uses {', '.join(wrong)}, not the letters of the chapter's indices "
                       "(a primed index is its capital: t' -> T)")
    return out


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.assignment)
def test_einsum_specs_use_the_books_letters(chapter: Chapter) -> None:
    allowed = einsum_letters(declared(markdown_of(chapter)))
    sources = [(chapter.path.name, chapter.path.read_text())]
    for folder in (SOLUTIONS, SOLUTIONS / "mistakes"):
        path = folder / f"{chapter.assignment}.py"
        if path.exists():
            sources.append((str(path.relative_to(ROOT)), path.read_text()))
    found = [p for where, text in sources for p in einsum_problems(text, allowed, where)]
    assert any(EINSUM.search(text) for _, text in sources), "no einsum found: the pattern no longer matches"
    assert not found, "\n".join(found)


def test_a_planted_einsum_letter_fails() -> None:
    allowed = einsum_letters({"t": "length", "j": "width", "h": "heads", "k": "keysize"})
    assert einsum_problems('torch.einsum("htk,hTk->htT", Q, K)', allowed, "ok") == []
    found = einsum_problems('torch.einsum("htk,huk->htu", Q, K)', allowed, "planted")
    assert found and "uses u" in found[0], found
