"""One meaning per letter: every letter of the book's math is in front/notation.md's letter table, with one
meaning and one use, and every chapter declares the letters it uses with that meaning.

A chapter declares its letters in a markdown cell, invisibly: ``<!-- letters: t:position T:length ... -->``,
each letter with the one-word key the table gives it. The test reads every chapter's math (``$...$`` and
``$$...$$`` in markdown cells) and fails on a letter that the chapter does not declare, on a declared letter
that the table lacks, on a letter declared with another key than the table's (a second meaning), and on a
letter used in another role than the table's *use* column gives it (a role the form of the formula shows:
a size read at an index, ``B[g, w]``; an index read at one; a tensor running as an index, ``\\sum_s`` or
``E[s, u]``; a size running as an index).

What is not the book's own notation is skipped: the seed columns of a translation table (a table whose first
header is "book" keeps its first two columns), every formula a chapter quotes from a seed, marked
``<!-- seed -->$...$<!-- /seed -->`` (the marks are invisible in the book), text inside ``\\text{}``,
``\\operatorname{}``, ``\\mathbf{}`` (the seeds' bold matrices), ``\\mathbb{}``, ``\\mathcal{}``, and a capital
written as a superscript label (the Q of W^Q). Parsing only: no chapter is executed.
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
SEED_SPAN = re.compile(r"<!--\s*seed\s*-->.*?<!--\s*/seed\s*-->", re.S)
USES = ("size", "index", "tensor", "function", "constant", "name")


def table_rows(text: str | None = None) -> dict[str, tuple[str, str]]:
    """notation.md's letter table: letter -> (its one-word key, its use); a letter listed twice is an error."""
    text = NOTATION.read_text() if text is None else text
    section = text.split(TABLE_HEADING, 1)[1].split("\n#", 1)[0]
    table: dict[str, tuple[str, str]] = {}
    for row in section.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("$"):
            continue
        letter = cells[0].strip("$").strip()
        if letter in table:
            raise ValueError(f"notation.md lists {letter} twice: {table[letter][0]} and {cells[1]}")
        if len(cells) < 4 or not set(re.split(r",\s*", cells[2])) <= set(USES):
            raise ValueError(f"notation.md gives {letter} ({cells[1]}) no use: the third column is one of {USES}")
        table[letter] = (cells[1], cells[2])
    return table


def letter_table(text: str | None = None) -> dict[str, str]:
    """notation.md's letter table: letter -> its one-word key."""
    return {letter: key for letter, (key, _) in table_rows(text).items()}


def letter_uses(text: str | None = None) -> dict[str, str]:
    """notation.md's letter table: letter -> its use (size, index, tensor, function, constant, name)."""
    return {letter: use for letter, (_, use) in table_rows(text).items()}


def book_text(markdown: str) -> str:
    """The markdown without what quotes a seed: seed columns of translation tables, marked seed formulas."""
    lines, out = SEED_SPAN.sub(" ", markdown).splitlines(), []
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith("|"):
            block = []
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                block.append(lines[i].strip().strip("|").split("|"))
                i += 1
            keep = 2 if block[0][0].strip().lower() == "book" else len(block[0])
            out += [" ".join(row[:keep]) for row in block[2:]]
            continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)


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


# How a formula uses a letter. A name written as text (\text{Emit}, \operatorname{softmax}) is a base like a letter.
NAME = r"\\(?:text\w*|mathrm|operatorname\*?)\s*\{[^{}]*\}"
OPERATOR = re.compile(r"\\(?:sum|prod|max|min)(?![A-Za-z])|\\operatorname\*?\s*\{[^{}]*\}"
                      r"|\\(?:text|mathrm)\s*\{(?:softmax|SoftMax|argmax)\}")
SCRIPT = r"(?:'+|\s*[_^]\s*(?:\{(?:[^{}]|\{[^{}]*\})*\}|\\[A-Za-z]+|[A-Za-z0-9]))*"


def _group(tex: str, start: int, open_: str = "[", close: str = "]") -> int:
    """The index just past the bracket that closes the one at `start`."""
    depth = 0
    for i in range(start, len(tex)):
        depth += (tex[i] == open_) - (tex[i] == close)
        if depth == 0:
            return i + 1
    return len(tex)


def _elements(inside: str) -> list[tuple[str, bool]]:
    """(leading letter, bare) for each comma-separated element of an index list or an operator's subscript; an
    element is bare when it is the letter alone (with primes or a subscript), not arithmetic like t + 1."""
    out = []
    for element in re.split(r",(?![^{]*\})", inside):
        plain = re.sub(NAME, " ", element)
        m = LETTER.search(plain)
        if m and not re.search(r"[<>=]|\\(?:le|ge|in)(?![A-Za-z])", plain[:m.start()]):
            bare = re.fullmatch(r"\s*" + re.escape(m.group(0)) + SCRIPT + r"\s*", plain) is not None
            out.append((m.group(0), bare))
    return out


def roles(tex: str) -> list[tuple[str, str]]:
    """(letter, role) for each letter whose form shows a role: 'read' (read at an index, X[...]), 'runs' (alone as
    an element of an index list or of a sum's subscript), 'computes' (leads index arithmetic, V[H - 1]) or 'shape'
    (an element of a list of capitals only, a tensor's shape such as W[J, K])."""
    tex = re.sub(r"\\(?:mathbf|mathbb|mathcal|boldsymbol)\s*\{[^{}]*\}", " ", tex)
    out: list[tuple[str, str]] = []
    for m in re.finditer(r"(" + LETTER.pattern + r"|" + NAME + r")" + SCRIPT + r"\s*\[", tex):
        if LETTER.fullmatch(m.group(1)):
            out.append((m.group(1), "read"))
        elements = _elements(tex[m.end():_group(tex, m.end() - 1) - 1])
        shape = all(bare and letter.isupper() for letter, bare in elements)
        out += [(letter, "shape" if shape else "runs" if bare else "computes") for letter, bare in elements]
    for m in OPERATOR.finditer(tex):
        sub = re.match(r"\s*_\s*(?:\{((?:[^{}]|\{[^{}]*\})*)\}|(\\[A-Za-z]+|[A-Za-z]))", tex[m.end():])
        if sub:
            out += [(letter, "runs" if bare else "computes") for letter, bare in _elements(sub.group(1) or sub.group(2))]
    return out


FORBIDDEN = {"size": {"read": "read at an index, as a tensor is", "runs": "running as an index"},
             "index": {"read": "read at an index, as a tensor is", "shape": "in a shape, as a size is"},
             "tensor": {"runs": "running as an index", "computes": "in index arithmetic",
                        "shape": "in a shape, as a size is"}}


def forbidden(use: str) -> dict[str, str]:
    """What a letter of this use may not do; a use of several kinds ("index, tensor") forbids what all forbid."""
    kinds = [FORBIDDEN.get(u.strip(), {}) for u in use.split(",")]
    return {role: why for role, why in kinds[0].items() if all(role in k for k in kinds[1:])}


def misuses(markdown_cells: list[str], uses: dict[str, str]) -> Counter[tuple[str, str]]:
    """(letter, what it does that its use forbids) -> how often, over the chapter's math."""
    found: Counter[tuple[str, str]] = Counter()
    for md in markdown_cells:
        for m in MATH.finditer(book_text(DECLARATION.sub(" ", md))):
            for letter, role in roles(m.group(1) or m.group(2)):
                wrong = forbidden(uses.get(letter, "")).get(role)
                if wrong:
                    found[(letter, wrong)] += 1
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


def problems(markdown_cells: list[str], table: dict[str, str], name: str,
             uses: dict[str, str] | None = None) -> list[str]:
    """Everything that breaks one meaning per letter in one chapter, one line each."""
    uses = letter_uses() if uses is None else uses
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
    for (letter, wrong), count in sorted(misuses(markdown_cells, uses).items()):
        out.append(f"{name}: {letter} is a {uses[letter]} ({table[letter]}) but appears {count} times {wrong}")
    return out


def markdown_of(chapter: Chapter) -> list[str]:
    return [c.source for c in chapter.read().cells if c.cell_type == "markdown"]


def test_the_table_gives_each_letter_one_meaning_and_one_use() -> None:
    table, uses = letter_table(), letter_uses()
    assert {"t", "T", "s", "N", "k", "x", r"\alpha"} <= set(table), sorted(table)
    assert (uses["T"], uses["t"], uses["s"]) == ("size", "index", "tensor"), uses
    head = f"{TABLE_HEADING}\n\n| letter | key | use | meaning |\n|---|---|---|---|\n"
    with pytest.raises(ValueError, match="twice"):
        letter_table(head + "| $s$ | score | tensor | a score |\n| $s$ | state | index | a grammar's state |\n")
    with pytest.raises(ValueError, match="no use"):
        letter_table(head + "| $s$ | score | a score |\n")
    with pytest.raises(ValueError, match="no use"):
        letter_table(head + "| $s$ | score | scalar | a score |\n")


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


def test_a_reuse_in_another_role_fails_even_when_declared_with_the_tables_key() -> None:
    """The same reuse, declared with the table's keys: the form of the formulas shows the second role."""
    table = letter_table()
    md = ["<!-- letters: t:length w:word s:score B:batch h:heads -->\n"
          r"with $B[s, w]$ the emission probabilities of state $s$, $\sum_s B[s, w] = 1$, and $h[t]$ a state"]
    found = problems(md, table, "planted")
    assert any("B is a size (batch) but appears 2 times read at an index" in p for p in found), found
    assert any("s is a tensor (score) but appears 3 times running as an index" in p for p in found), found
    assert any("h is a index (heads) but appears 1 times read at an index" in p for p in found), found
    honest = ["<!-- letters: t:length s:score B:batch h:heads H:heads T:length V:output k:keysize -->\n"
              r"$s[h, t, t'] = \sum_k \text{Query}[h, t, k]\,\text{Key}[h, t', k]$, of shape $s[H, T, T]$ "
              r"for $B$ sentences, $V[H - 1, t, :]$, the last head, and $\operatorname{softmax}_{t'} s[h, t, t']$"]
    assert problems(honest, table, "honest") == [], problems(honest, table, "honest")


def test_seed_quotes_are_marked_not_skipped() -> None:
    """A seed's formula counts unless marked; translation tables keep the book's columns only."""
    md = ("| book | meaning | seed 002 |\n|---|---|---|\n| $z[t, j]$ | state | $h[t, J]$ |\n\n"
          r"The seed writes <!-- seed -->$h[t-1, J]$<!-- /seed -->. The book writes $W^Q[h, k, j]$ and "
          r"$\mathbf{Q}_{\ell,h}$ and $\text{Query}$.")
    assert sorted(used([md])) == sorted({"z", "t", "j", "W", "h", "k", "\\ell"}), used([md])
    unmarked = md.replace("<!-- seed -->", "").replace("<!-- /seed -->", "")
    assert used([unmarked])["J"] == 1, "a sentence naming a seed is read like any other"
    table = letter_table()
    found = problems(["<!-- letters: t:length j:width J:width h:heads -->\n" + unmarked], table, "planted")
    assert any("h is a index (heads) but appears 1 times read at an index" in p for p in found), found
    assert any("J is a size (width) but appears 1 times running as an index" in p for p in found), found


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


# ---------------------------------------------------------------- an index's size, the kit's words, the scale (35.6)

SIZES_HEADING = "### Sizes and their indices"
_INDEX = re.compile(r"\$([^$]+)\$")


def index_sizes(text: str | None = None) -> dict[str, list[str]]:
    """notation.md's sizes table: each index (`j'`, `j_1`, `t_{\\text{in}}`) -> the sizes it runs over."""
    text = NOTATION.read_text() if text is None else text
    section = text.split(SIZES_HEADING, 1)[1].split("\n#", 1)[0]
    found: dict[str, list[str]] = {}
    for row in section.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("$"):
            continue
        for index in _INDEX.findall(cells[1]):
            found.setdefault(index.replace(" ", ""), []).append(cells[0])
    return found


def test_each_index_runs_over_one_size() -> None:
    shared = {i: sizes for i, sizes in index_sizes().items() if len(sizes) > 1}
    assert not shared, f"an index runs over two sizes (front/notation.md): {shared}"
    assert index_sizes()["j'"] == ["$J'$"] and index_sizes()["j_2"] == ["$J$"]


def test_an_index_planted_under_two_sizes_fails() -> None:
    """The notation page's old rows: j' indexed both J and J' (Chapter 6's output channels)."""
    old = (f"{SIZES_HEADING}\n\n| size | index | meaning |\n|---|---|---|\n"
           "| $J$ | $j$, $j'$, $j_1$, $j_2$ | width |\n| $J'$ | $j'$ | output width |\n")
    assert index_sizes(old)["j'"] == ["$J$", "$J'$"]


def kit_words() -> list[str]:
    """What the kit prints and says: its modules' string literals and comments, and the profiler's printed result."""
    import io
    import tokenize

    from attnlab.profiler import ParallelTime

    texts = [str(ParallelTime(depth=3, work=100, model="log"))]
    for path in sorted((ROOT / "attnlab").rglob("*.py")):
        for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
            if tok.type in (tokenize.STRING, tokenize.COMMENT):
                texts.append(tok.string)
    return texts


def misnamed_sizes(texts: list[str], table: dict[str, str] | None = None) -> list[str]:
    """Phrases `<letter> <key>` (`P processors`) whose letter is not the table's letter for that key."""
    table = letter_table() if table is None else table
    by_key = {key: letter for letter, key in table.items() if re.fullmatch(r"[A-Z]", letter)}
    found = []
    for text in texts:
        for letter, key in re.findall(r"(?<=[a-z,(] )([A-Z])\s+([a-z]+)\b", text):  # inside a sentence
            if key in by_key and letter in table and by_key[key] != letter:
                found.append(f"{letter} {key} (the book's letter is {by_key[key]}): {text.strip()[:100]}")
    return found


def test_the_kit_names_sizes_with_the_books_letters() -> None:
    assert "C processors" in kit_words()[0], kit_words()[0]
    assert not misnamed_sizes(kit_words()), misnamed_sizes(kit_words())


def test_a_kit_message_with_another_letter_fails() -> None:
    """The profiler's old result: P processors, where the book's P is a probability."""
    found = misnamed_sizes(["depth 3, work 100 scalar ops (time on P processors <= work/P + depth)"])
    assert found and found[0].startswith("P processors (the book's letter is C)"), found


def unscaled_chapters() -> set[int]:
    """Chapters with an attention (a solution function named *attention* that takes a softmax) whose solutions
    divide by no square root anywhere (Chapter 3 folds 1/sqrt(K) into W~Q: scaled)."""
    from coursenb import cells

    found = set()
    for chapter in CHAPTERS:
        solutions = "\n".join(c.source for c in chapter.read().cells if c.cell_type == "code" and cells.is_solution(c))
        attention = [m.group() for m in re.finditer(r"^def \w*attention\w*\(.*?(?=^\S|\Z)", solutions, re.M | re.S)]
        if any("softmax" in a for a in attention) and "sqrt" not in solutions:
            found.add(int(chapter.assignment.removeprefix("ch")))
    return found


def test_the_notation_names_every_chapter_whose_scores_are_not_scaled() -> None:
    """notation.md: scores are scaled by 1/sqrt(K), except where a chapter's are not (Chapter 5's)."""
    row = next(r for r in NOTATION.read_text().splitlines() if r.startswith("| $K$ | $k$ |"))
    assert 5 in unscaled_chapters(), "Chapter 5's image attention takes no 1/sqrt(K)"
    for n in unscaled_chapters():
        assert re.search(rf"except Chapter {n}\b", row), f"notation.md's K row says every score is scaled: {row}"
