"""The answer audit: nothing the student edition serves gives a graded answer away.

What is searched: every text file of the built student edition (pages, the downloads:
release notebooks and zips), the staged student notebooks with their outputs, and the
kit's source (`attnlab/`, as the release zip ships it). It is searched four ways:

* **Symbolic and equation answers, in any form the judge accepts.** Candidate expressions
  are cut from the text: string literals and comments of code, inline and display math,
  inline code, text outputs, and runs of formula-like text in prose (at most
  `MAX_CANDIDATE` characters each). Every candidate that uses only a question's variables
  (and contains '=' when the question asks for an equation) is judged by the grader's own
  judge (`autograder.judge.judge`) as if a student had submitted it. A candidate in a single
  size (`2L`, `L[2]`) is that size, not its order: it counts only written as an order
  (`O(L)`, `Θ(L)`). Questions of a kind without variables (index equations) are judged on
  every index equation (`Key[h,t,k] = ...`), every run of them (a set of equations, up to
  `MAX_EQUATIONS` characters) and every einsum spec the text holds.
* **Solution code by its defining calls.** Each call in a solution region that has a
  constant argument (an einsum spec, a `dim`, a stride) is reduced to a signature: the
  function's name and its constants, operand names and whitespace dropped, einsum indices
  renamed in order of appearance (`"hka,hkb->hab"` and `"xij, xik -> xjk"` are one
  signature). A signature that the public part of the chapters does not show is a leak
  wherever it appears; and a chapter page that shows every defining call of one of its
  solutions (two or more) shows the solution, public or not.
* **Numeric answers by value.** Value answers (a function returning a number, such as a
  parameter count: a `ValueCheck`, or a `FunctionCheck` whose reference is annotated
  `-> int` or `-> float`; an equation such as `K = J/2` solved for each size) are evaluated at the sizes the
  chapter's code sets (`J = 64`, `for K, J in [(3, 8), ...]`), and each value of at least
  `MIN_VALUE` that the chapter's public source does not write itself is searched for in
  the chapter's outputs.
* **Parts of symbolic answers stated in prose.** From where a chapter's prose first names a
  symbolic answer (its problem) on, a sentence may not state the answer's order in one size when
  it is more than linear (`its scores have T² entries per head`), one of its terms in several sizes,
  or the whole answer in the sizes' index letters (`runs at step ℓ − 1 + t` for `T + L`), however
  prose spells an order (`T²`, `T^2`, `T squared`). Worked examples before the problem are free.
* **Outputs computed from a value answer.** A cell of the student edition that names a
  value answer of its chapter (`PARALLEL_TIME_SERIAL`, `params_separate`, in code or in a
  string) and still has outputs shows what the answer produces: a plot's legend is an image,
  which no text search reads. Such a cell must be tagged `answer-output` (`coursenb.cells`).

`audit(...)` returns the hits and the figures (how many files, candidates, judgements,
signatures and values were checked).
"""
from __future__ import annotations

import ast
import contextlib
import functools
import html
import inspect
import io
import itertools
import re
import textwrap
import tokenize
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from attnlab import _lexicon as lexicon
from coursenb import cells

MAX_CANDIDATE = 160   # characters in a candidate expression
MAX_COMBINATIONS = 4096  # size combinations a value answer is evaluated at
MIN_VALUE = 10        # smaller numbers are everywhere (shapes, seeds, counts)
TEXT_SUFFIXES = {".html", ".ipynb", ".md", ".py", ".txt", ".toml", ".rst"}
# Functions and TeX commands an answer may contain: a candidate's other words are prose. The languages'
# own words come from their one lexicon (every spelling the judges accept), and a few TeX commands of
# displayed math that no judge reads but that sit inside a displayed answer.
FUNCTIONS = lexicon.words() | {"lceil", "rceil", "lfloor", "rfloor", "mathopen", "mathclose"}
_MATH = re.compile(r"\$\$(.+?)\$\$|\$([^$\n]+?)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]|\\begin\{(\w+\*?)\}(.+?)\\end\{\5\}",
                   re.S)
_QUOTED = re.compile(r"\"([^\"\n]{1,400})\"|'([^'\n]{1,400})'|`([^`\n]{1,400})`")
# A word of two or more letters that is not a function ends a formula-like run of prose.
_WORD = re.compile(r"\\?[A-Za-z][A-Za-z0-9]*")
_SPLIT = re.compile(r"\\\\|&|\\q?quad|[;,:<>≤≥≈≠\n]|\\[lg]eq?\b|\\neq?\b|\\approx\b|\\sim\b|\\text\{[^}]*\}")
# A quoted einsum spec, and the scale written after it inside the quotes ("hka,hkb->hab / sqrt(K)").
_EINSUM = re.compile(r"""["']([A-Za-z.…, ]+->[A-Za-z. ]*)((?:\s*[*/]\s*[^"'\n]{1,40})?)["']""")


# ---------------------------------------------------------------- what the student edition serves


@dataclass(frozen=True)
class Doc:
    """One searchable piece: where it is, its text, and what it is."""

    where: str
    text: str
    kind: str = "prose"   # prose (pages, markdown), code (a code cell, a kit module), output
    chapter: str | None = None  # the assignment (ch1) of a chapter notebook's cells


def chapter_of(name: str) -> str | None:
    """The assignment id of a chapter file name (ch1_parallel_time.ipynb -> ch1), else None."""
    match = re.match(r"(ch\d+)_\w+", Path(name).name)
    return match.group(1) if match else None


def notebook_docs(nb: nbformat.NotebookNode, where: str) -> Iterator[Doc]:
    """A notebook's cells: markdown as prose, code as code, each text output as an output."""
    chapter = chapter_of(where)
    for k, cell in enumerate(nb.cells):
        at = f"{where} cell {k + 1}" + (f" (id {cell.get('id')})" if cell.get("id") else "")
        if cell.cell_type == "code":
            yield Doc(at, cell.source, "code", chapter)
            for output in cell.get("outputs", []):
                text = output_text(output)
                if text:
                    yield Doc(at + " output", text, "output", chapter)
        else:
            yield Doc(at, cell.source, "prose", chapter)


def output_text(output: dict) -> str:
    """The text an output shows (stream, text/plain, text/latex, text/markdown, HTML without tags, errors)."""
    parts = ["".join(output.get("text", ""))] if "text" in output else []
    for mime, value in output.get("data", {}).items():
        value = "".join(value) if isinstance(value, list) else value
        if mime == "text/html":
            parts.append(page_text(value))
        elif mime.startswith("text/") and isinstance(value, str):
            parts.append(value)
    if output.get("output_type") == "error":
        parts += [output.get("evalue", "")] + [re.sub(r"\x1b\[[0-9;]*m", "", line)
                                               for line in output.get("traceback", [])]
    return "\n".join(p for p in parts if p)


def page_text(raw: str) -> str:
    """An HTML page as the reader sees it: tags removed (scripts and styles with their content)."""
    raw = re.sub(r"<(script|style)\b.*?</\1>", " ", raw, flags=re.S | re.I)
    return html.unescape(re.sub(r"<[^>]+>", " ", raw))


def file_docs(path: Path, where: str, kit: str = "attnlab/") -> Iterator[Doc]:
    """The documents of one served file (a zip's members too, except its copy of the kit, which
    `publish.audit.kit_problems` holds to be the kit audited once)."""
    suffix = path.suffix.lower()
    if suffix == ".zip":
        with zipfile.ZipFile(path) as zf:
            for name in zf.namelist():
                if Path(name).suffix.lower() in TEXT_SUFFIXES and not name.startswith(kit):
                    yield from _member_docs(zf.read(name), f"{where}!{name}", name)
        return
    if suffix in TEXT_SUFFIXES:
        yield from _member_docs(path.read_bytes(), where, path.name)


def _member_docs(data: bytes, where: str, name: str) -> Iterator[Doc]:
    text = data.decode("utf-8", errors="replace")
    suffix = Path(name).suffix.lower()
    if suffix == ".ipynb":
        try:
            yield from notebook_docs(nbformat.reads(text, as_version=4), where)
            return
        except Exception:  # noqa: BLE001 - not a notebook after all: searched as text
            pass
    if suffix == ".html":
        yield Doc(where, page_text(text), "prose", chapter_of(name))
    else:
        yield Doc(where, text, "code" if suffix == ".py" else "prose")


def served_docs(folders: Iterable[tuple[Path, str]], skip: Callable[[str], bool] = lambda rel: False) -> list[Doc]:
    """Every document under each (folder, label), relative paths for which `skip` is true left out."""
    docs = []
    for folder, label in folders:
        for path in sorted(folder.rglob("*")):
            rel = path.relative_to(folder).as_posix()
            if path.is_file() and not skip(rel):
                docs += file_docs(path, f"{label}/{rel}")
    return docs


# ---------------------------------------------------------------- candidate expressions


def code_texts(source: str) -> list[str]:
    """The string literals (docstrings included) and comments of Python `source`."""
    found = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.STRING:
                with contextlib.suppress(ValueError, SyntaxError):
                    value = ast.literal_eval(tok.string)
                    found.append(value if isinstance(value, str) else tok.string)
                    continue
                found.append(tok.string.strip("rbfuRBFU").strip("\"'"))
            elif tok.type == tokenize.COMMENT:
                found.append(tok.string.lstrip("# "))
            elif tok.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
                found.append(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):  # IPython syntax, a fragment: as text
        return [source]
    return found


def spans(text: str) -> Iterator[str]:
    """Math, quoted and inline-code spans of `text`, then each of its lines."""
    for match in _MATH.finditer(text):
        yield next(g for g in (match.group(1), match.group(2), match.group(3), match.group(4), match.group(6))
                   if g is not None)
    for match in _QUOTED.finditer(text):
        yield next(g for g in match.groups() if g is not None)
    yield from text.split("\n")


def _formula_runs(piece: str) -> Iterator[str]:
    """Maximal runs of `piece` without a prose word (a word of 2+ letters that is not a function)."""
    start = 0
    for match in _WORD.finditer(piece):
        word = match.group().lstrip("\\")
        if len(word) >= 2 and word not in FUNCTIONS and not (word.isupper() and len(word) <= 4) \
                and not re.fullmatch(r"log\d*", word):
            yield piece[start:match.start()]
            start = match.end()
    yield piece[start:]


def candidates(text: str) -> set[str]:
    """Candidate expressions in `text`: its spans split at separators and prose, each at most MAX_CANDIDATE long."""
    found: set[str] = set()
    for span in spans(text):
        for piece in [span, *_SPLIT.split(span)]:
            for run in ([piece] if len(piece) <= MAX_CANDIDATE else []) + list(_formula_runs(piece)):
                run = run.strip(" \t.,;:!?'\"`$")
                if 2 <= len(run) <= MAX_CANDIDATE and re.search(r"[A-Z]", run) and not re.fullmatch(r"[A-Za-z]", run):
                    found.add(" ".join(run.split()))
                    if "=" in run:  # each side of an equation
                        found.update(" ".join(side.split()).strip(" .,") for side in run.split("=") if side.strip())
    return {c for c in found if 2 <= len(c) <= MAX_CANDIDATE and not re.fullmatch(r"[A-Za-z]\w*|\d+", c)}


def doc_candidates(doc: Doc) -> set[str]:
    """The candidate expressions of one document (code: its strings and comments)."""
    texts = code_texts(doc.text) if doc.kind == "code" else [doc.text]
    found: set[str] = set()
    for text in texts:
        found |= candidates(text)
    return found


MAX_EQUATIONS = 3000  # characters in a candidate set of index equations
_INDEX_EQUATION = re.compile(r"^\s*[^\s=\[\]]+\s*\[[^\]]*\]\s*=[^=]")


def equation_candidates(text: str) -> set[str]:
    """Candidates for index-equation questions in `text`: each index equation (`Key[h,t,k] = ...`), each run of
    consecutive ones (a set of equations), and each einsum spec (`"hka,hkb->hab"`)."""
    found: set[str] = set()
    for chunk in [text, *(s for s in spans(text) if "\n" in s)]:
        run: list[str] = []
        for line in chunk.split("\n") + [""]:
            if _INDEX_EQUATION.match(line):
                run.append(line.strip())
                if len(line.strip()) <= MAX_CANDIDATE * 3:
                    found.add(line.strip())
            else:
                if len(run) >= 2 and len("\n".join(run)) <= MAX_EQUATIONS:
                    found.add("\n".join(run))
                run = []
    for spec, scale in _EINSUM.findall(text):
        found.add(" ".join(spec.split()))
        if scale:
            found.add(" ".join((spec + scale).split()))
    found |= {t.strip() for t in re.findall(r"^\s*([A-Za-z, ]+->[A-Za-z ]*(?:\s*/\s*\S+)?)\s*$", text, re.M)}
    return found


def doc_equation_candidates(doc: Doc) -> set[str]:
    """The index-equation candidates of one document (code: its strings and comments)."""
    texts = code_texts(doc.text) if doc.kind == "code" else [doc.text]
    return set().union(*(equation_candidates(t) for t in texts)) if texts else set()


@functools.lru_cache(maxsize=1 << 16)
def identifiers(candidate: str) -> frozenset[str]:
    """The names a candidate uses, functions and TeX commands left out (once per candidate and process: every
    question asks of every candidate)."""
    names = set()
    for match in _WORD.finditer(candidate):
        word = match.group()
        if word.startswith("\\") or word in FUNCTIONS or re.fullmatch(r"log\d*", word):
            continue
        names.add(word)
    return frozenset(names)


_ORDER = re.compile(r"(?<![A-Za-z])(?:O|Θ|Theta)\s*(?:\\left|\\big[l]?|\\Big[l]?)?\s*[(\[{]|\\mathcal\s*\{?\s*O")


def states_order(candidate: str) -> bool:
    """Whether `candidate` is written as an order: O(...), Θ(...), \\mathcal{O}(...)."""
    return bool(_ORDER.search(candidate))


def may_answer(candidate: str, variables: tuple[str, ...], equation: bool) -> bool:
    """Whether `candidate` could be judged correct for a question in `variables` (cheap, before the judge).

    A candidate in a single size (`2L`, `L[2]`, `L - 1`) is that size, not a statement about an
    order: for an order question it counts only written as one (`O(L)`, `Θ(L)`).
    """
    if equation != ("=" in candidate):
        return False
    names = identifiers(candidate)
    if not names:
        return False
    allowed = set(variables)
    single = all(len(v) == 1 for v in variables)
    if not all(n in allowed or (single and set(n) <= allowed) for n in names):
        return False
    return equation or len(set("".join(names)) if single else names) > 1 or states_order(candidate)


# ---------------------------------------------------------------- defining calls


def _canonical_spec(spec: str) -> str:
    """An einsum spec with whitespace dropped and its index letters renamed in order of appearance."""
    spec = re.sub(r"\s+", "", spec)
    names: dict[str, str] = {}
    out = []
    for ch in spec:
        if ch.isalpha():
            names.setdefault(ch, chr(ord("a") + len(names)) if len(names) < 26 else ch)
            out.append(names[ch])
        else:
            out.append(ch)
    return "".join(out)


def _constant(node: ast.AST) -> str | None:
    """The source form of a constant argument (a number, a string, a negative number, a tuple of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str)) and not isinstance(node.value, bool):
        return repr(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return "-" + repr(node.operand.value)
    if isinstance(node, ast.Tuple) and node.elts and all(_constant(e) for e in node.elts):
        return "(" + ",".join(_constant(e) or "" for e in node.elts) + ")"
    return None


def _callee(node: ast.Call) -> str | None:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def call_signatures(source: str) -> set[str]:
    """Signatures of the calls in `source` that have a constant argument: `einsum('abc,dc->adb')`,
    `softmax(_,dim=-1)`, `unfold(1,_,2)` (any other argument is `_`)."""
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return {f"einsum({_canonical_spec(spec)!r})" for spec, _ in _EINSUM.findall(source)}
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or (name := _callee(node)) is None:
            continue
        if name == "einsum" and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            found.add(f"einsum({_canonical_spec(node.args[0].value)!r})")
            continue
        args = [_constant(a) or "_" for a in node.args]
        kwargs = [f"{k.arg}={_constant(k.value) or '_'}" for k in node.keywords if k.arg]
        if any(_constant(a) for a in node.args) or any(_constant(k.value) for k in node.keywords if k.arg):
            found.add(f"{name}({','.join(args + sorted(kwargs))})")
    return found


# ---------------------------------------------------------------- the chapters' answers


@dataclass
class Solution:
    """One solution region of a chapter: its cell's grade_id and its defining calls."""

    chapter: str
    cell: str
    calls: set[str]


def solutions_of(source: nbformat.NotebookNode, chapter: str) -> list[Solution]:
    """The solution regions of a chapter's source notebook, with their defining calls."""
    found = []
    for cell in source.cells:
        if cell.cell_type == "code" and cells.is_solution(cell):
            lines = cells.solution_lines(cell.source)
            calls = call_signatures("\n".join(lines)) if lines else set()
            found.append(Solution(chapter, cells.grade_id(cell) or "?", calls))
    return found


def public_code(source: nbformat.NotebookNode) -> list[str]:
    """The code a chapter shows students: every cell but worked solutions, regions cut out."""
    return [cells.strip_solutions(cells.strip_hidden_tests(c.source)) for c in source.cells
            if not cells.is_solutions_only(c)]


def size_values(codes: Iterable[str], names: Iterable[str]) -> dict[str, set[int]]:
    """The integer values the code assigns to each of `names` (`J = 64`, `K, J = 3, 8`, `for K, J in [(3, 8)]`)."""
    wanted = set(names)
    found: dict[str, set[int]] = {n: set() for n in wanted}

    def bind(target: ast.AST, value: ast.AST) -> None:
        if isinstance(target, ast.Name) and target.id in wanted and isinstance(value, ast.Constant) \
                and isinstance(value.value, int) and not isinstance(value.value, bool):
            found[target.id].add(value.value)
        elif isinstance(target, ast.Tuple) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts):
            for t, v in zip(target.elts, value.elts):
                bind(t, v)

    for code in codes:
        try:
            tree = ast.parse(textwrap.dedent(code))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    bind(target, node.value)
            elif isinstance(node, ast.For) and isinstance(node.iter, (ast.List, ast.Tuple)):
                for item in node.iter.elts:
                    bind(node.target, item)
    return found


_CLOCK = re.compile(r"(?<![\w.:])\d+:\d\d(?::\d\d)?(?![\w.:])")  # 00:13, 1:02:03: a progress bar's clock


def literal_numbers(texts: Iterable[str]) -> set[str]:
    """Every number written in `texts` (as text: '64', '0.5'); the readings of a clock (a progress bar's
    elapsed time, 00:13) are times, not values."""
    return {m for t in texts for m in re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])", _CLOCK.sub(" ", t))}


def _format(value: object) -> str | None:
    """A value as an output would print it (integers and integral floats as integers)."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if number != number or abs(number) == float("inf"):
        return None
    return str(int(number)) if number == int(number) else f"{number:g}"


# ---------------------------------------------------------------- the audit


@dataclass
class Figures:
    """What the audit checked."""

    files: int = 0
    documents: int = 0
    candidates: int = 0
    judged: int = 0
    questions: int = 0
    solution_calls: int = 0
    searched_calls: int = 0
    values: int = 0
    outputs: int = 0
    answer_cells: int = 0

    def __str__(self) -> str:
        return (f"{self.files} files ({self.documents} documents): {self.candidates} candidate expressions, "
                f"{self.judged} judged against {self.questions} symbolic/equation questions; "
                f"{self.solution_calls} defining calls of the solutions against {self.searched_calls} call "
                f"signatures; {self.values} answer values in {self.outputs} outputs; "
                f"{self.answer_cells} cells naming a value answer")


@dataclass
class Findings:
    hits: list[str] = field(default_factory=list)
    figures: Figures = field(default_factory=Figures)


def _value_checks(checks: dict) -> dict[str, object]:
    """Checks whose answer is a text judged whole (symbolic, equation), not a function of trials
    (each check says so: `autograder.checks.base.Check.whole_answer`)."""
    return {name: c for name, c in checks.items() if getattr(c, "whole_answer", True)}


def _value_function(check: object) -> Callable[..., object] | None:
    """The reference of a check whose answer is a function returning a number (a count, a size: the
    check's `value_function`); None for functions of tensors and for answers that are not functions."""
    value_function = getattr(check, "value_function", None)
    return value_function() if value_function is not None else None


def _answer_names(checks: dict) -> dict[str, set[str]]:
    """Chapter -> the names of its value answers (symbolic, equation, functions returning numbers, behaviours)."""
    from autograder.checks.base import ChapterId, short_name

    names: dict[str, set[str]] = {}
    for name, check in checks.items():
        if check.shows_a_value:
            names.setdefault(ChapterId.of(name), set()).add(short_name(name))
    return names


def _judge(name: str, candidate: str) -> tuple[bool, str]:
    """The grader's verdict on `candidate` submitted as the answer to check `name`."""
    from attnlab.grading import Outcome
    from autograder import judge

    verdict = judge.judge(name, [], [Outcome(value=candidate)])
    return verdict.passed, verdict.message


def judge_candidates(found: dict[str, list[str]], checks: dict, figures: Figures,
                     equations: dict[str, list[str]] | None = None,
                     decide: Callable[[str, str], tuple[bool, str]] = _judge) -> list[str]:
    """Every candidate (-> where it is seen) that the judge accepts for a value question: `found` for
    questions in named variables (symbolic orders and equations), `equations` (index equations, sets of
    them, einsum specs) for questions of a kind without variables."""
    hits = []
    questions = _value_checks(checks)
    figures.questions = len(questions)
    for name, check in questions.items():
        variables = tuple(getattr(check, "variables", ()) or ())
        equation = "=" in str(getattr(check, "reference", "="))
        for candidate, where in (found if variables else (equations or {})).items():
            if variables and not may_answer(candidate, variables, equation):
                continue
            figures.judged += 1
            try:
                passed, message = decide(name, candidate)
            except Exception:  # noqa: BLE001 - a judge that cannot read it does not accept it
                continue
            if passed:
                more = f" (and {len(where) - 3} more places)" if len(where) > 3 else ""
                hits.append(f"{'; '.join(where[:3])}{more}: {candidate!r} is a correct answer to {name} "
                            f"({message})")
    return hits


VALUE_SECONDS = 2.0  # to evaluate a value answer at one combination of sizes (a loop may not end at some)


class _TooSlow(Exception):
    """A value answer that did not return in time at one combination of sizes."""


def _within(seconds: float, fn: Callable[..., object], *args: object) -> object:
    """fn(*args), stopped with _TooSlow after `seconds` (a timer signal: only in the main thread, elsewhere
    the call runs unbounded). `layers_needed(T, D=1)` loops for ever: the audit must not."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return fn(*args)

    def stop(signum, frame):  # noqa: ARG001
        raise _TooSlow

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def answer_values(chapter: str, checks: dict, public: list[str]) -> dict[str, set[str]]:
    """Value answers of `chapter` evaluated at the sizes its public code sets: answer -> printed values."""
    import sympy

    out: dict[str, set[str]] = {}
    written = literal_numbers(public)
    for name, check in checks.items():
        if not name.startswith(chapter + "."):
            continue
        values: set[str] = set()
        if (fn := _value_function(check)) is not None:
            params = [n for n, p in inspect.signature(fn).parameters.items() if p.kind != p.KEYWORD_ONLY]
            sizes = size_values(public, params)
            if all(sizes[p] for p in params):
                for combo in itertools.islice(itertools.product(*(sorted(sizes[p]) for p in params)), MAX_COMBINATIONS):
                    with contextlib.suppress(Exception):
                        values.add(_format(_within(VALUE_SECONDS, fn, *combo)) or "")
        elif "=" in (reference := check.symbolic_reference or ""):
            variables = tuple(check.variables)
            lhs, rhs = reference.split("=", 1)
            symbols = {v: sympy.Symbol(v, positive=True) for v in variables}
            try:
                equation = sympy.sympify(lhs, locals=symbols) - sympy.sympify(rhs, locals=symbols)
            except (sympy.SympifyError, TypeError, SyntaxError):
                continue
            sizes = size_values(public, variables)
            for solve_for in variables:
                others = [v for v in variables if v != solve_for]
                for combo in itertools.islice(itertools.product(*(sorted(sizes[v]) for v in others)),
                                              MAX_COMBINATIONS):
                    with contextlib.suppress(Exception):
                        for root in sympy.solve(equation.subs(dict(zip((symbols[v] for v in others), combo))),
                                                symbols[solve_for]):
                            values.add(_format(root) or "")
        kept = {v for v in values if v and float(v) >= MIN_VALUE and v not in written}
        if kept:
            out[name] = kept
    return out


def audit(docs: list[Doc], sources: dict[str, nbformat.NotebookNode], files: int = 0,
          checks: dict | None = None) -> Findings:
    """Search `docs` (what the student edition serves) for the answers of `sources` (chapter -> source notebook)."""
    if checks is None:
        from autograder.checks import CHECKS as checks
    findings = Findings()
    figures = findings.figures
    figures.files, figures.documents = files, len(docs)
    hits = findings.hits

    # symbolic and equation answers, in any form the judge accepts
    found: dict[str, list[str]] = {}
    equations: dict[str, list[str]] = {}
    index_questions = any(not getattr(c, "variables", None) for c in _value_checks(checks).values())
    cache: dict[tuple[str, str], tuple[set[str], set[str]]] = {}
    for doc in docs:
        key = (doc.kind, doc.text)
        if key not in cache:
            cache[key] = doc_candidates(doc), doc_equation_candidates(doc) if index_questions else set()
        for candidate in cache[key][0]:
            found.setdefault(candidate, []).append(doc.where)
        for candidate in cache[key][1]:
            equations.setdefault(candidate, []).append(doc.where)
    figures.candidates = len(found) + len(equations)
    hits += judge_candidates(found, checks, figures, equations)

    # solution code by its defining calls
    public = {ch: public_code(nb) for ch, nb in sources.items()}
    public_calls = set().union(*(call_signatures(c) for codes in public.values() for c in codes)) if public else set()
    solutions = [s for ch, nb in sources.items() for s in solutions_of(nb, ch)]
    secret = {call: s for s in solutions for call in s.calls if call not in public_calls}
    figures.solution_calls = len({c for s in solutions for c in s.calls})
    shown: dict[str, set[str]] = {}  # chapter -> calls its documents show
    for doc in docs:
        calls = call_signatures(doc.text) if doc.kind == "code" else \
            {f"einsum({_canonical_spec(spec)!r})" for spec, _ in _EINSUM.findall(doc.text)}
        figures.searched_calls += len(calls)
        for call in calls & secret.keys():
            s = secret[call]
            hits.append(f"{doc.where}: {call} from the solution of {s.chapter} cell {s.cell!r}, "
                        "which the chapters do not show")
        if doc.chapter:
            shown.setdefault(doc.chapter, set()).update(calls)
    for s in solutions:
        if len(s.calls) >= 2 and s.calls <= shown.get(s.chapter, set()):
            hits.append(f"{s.chapter}: its pages show every defining call of the solution of {s.cell!r}: "
                        f"{', '.join(sorted(s.calls))}")

    # numeric answers by value, and outputs computed from a value answer
    names = _answer_names(checks)
    for chapter, nb in sources.items():
        values = answer_values(chapter, checks, public.get(chapter, []) + [c.source for c in nb.cells
                                                                            if c.cell_type == "markdown"
                                                                            and not cells.is_solutions_only(c)])
        figures.values += sum(len(v) for v in values.values())
        for doc in docs:
            if doc.chapter != chapter or doc.kind != "output":
                continue
            figures.outputs += 1
            numbers = literal_numbers([doc.text])
            for name, vals in values.items():
                for value in sorted(vals & numbers):
                    hits.append(f"{doc.where}: shows {value}, the value of {name} at a size the chapter uses")
    hits += answer_outputs(docs, names, figures)

    # fragments of equation answers in the kit: a right-hand side, one line, an index form
    hits += kit_fragments(docs, sources, checks)

    # a part of a symbolic answer stated in the prose that follows its problem
    hits += order_statements(docs, checks)
    return findings


def answer_outputs(docs: list[Doc], names: dict[str, set[str]], figures: Figures) -> list[str]:
    """Cells that name a value answer of their chapter and still show outputs."""
    hits = []
    with_output = {d.where.removesuffix(" output") for d in docs if d.kind == "output"}
    seen = set()
    for doc in docs:
        if doc.kind != "code" or doc.chapter is None or doc.where in seen:
            continue
        answers = names.get(doc.chapter, set())
        used = sorted(n for n in answers if re.search(rf"\b{re.escape(n)}\b", doc.text))
        if not used:
            continue
        figures.answer_cells += 1
        if doc.where in with_output and not _defines(doc.text, used):
            seen.add(doc.where)
            hits.append(f"{doc.where}: uses {', '.join(used)} (a graded answer) and shows outputs computed from it: "
                        f"tag the cell {cells.ANSWER_OUTPUT!r} or split it")
    return hits


def _defines(code: str, names: list[str]) -> bool:
    """Whether `code` is where the answers are written (the stub cell itself), not where they are used."""
    return all(re.search(rf"^(def\s+{re.escape(n)}\b|{re.escape(n)}\s*=)", code, re.M) for n in names)


# ---------------------------------------------------------------- parts of symbolic answers stated in prose

# How prose spells an order: T², T squared, T^{2}; the minus sign; and the index letter of each size (the CELL of
# layer ℓ at position t runs at step ℓ - 1 + t: the index form of T + L).
_SPELLINGS = [(re.compile(r"\s*\bsquared\b"), "^2"), (re.compile(r"\s*\bcubed\b"), "^3"),
              (re.compile("[\u2212\u2013]"), "-"), (re.compile(r"\\ell\b|ℓ"), " ell ")]
INDEX_OF = {"T": "t", "L": "ell", "J": "j", "K": "k", "H": "h", "I": "i", "X": "x", "Y": "y"}
_INDEX_SUM = re.compile(r"(?<![\w\\])(?:ell|[a-z])(?:\s*[-+]\s*(?:ell|[a-z]|\d+))+(?![\w(\[])")


def answer_parts(reference: str, variables: tuple[str, ...]) -> dict[object, str]:
    """The parts of a symbolic answer that a sentence can give away without stating the whole answer:
    {sympy expression: what it is}. Its order in one size when that is more than linear (`T^2` of
    `T^2*J + T*J^2`) and each of its terms in two or more sizes (`T^2*J`)."""
    import sympy

    from attnlab.symbolic import parse_answer

    expr = sympy.expand(parse_answer(reference, list(variables)))
    parts: dict[object, str] = {}
    terms = [t.as_coeff_Mul()[1] for t in sympy.Add.make_args(expr)]
    for v in variables:
        symbol = sympy.Symbol(v, positive=True)
        degree = max((sympy.degree(t, symbol) if t.is_polynomial(symbol) else 0) for t in terms)
        if degree >= 2:
            parts[symbol ** degree] = f"its order in {v}"
    for term in terms:
        if len(term.free_symbols) >= 2 and len(terms) > 1:
            parts[term] = f"its term {term}"
    return parts


def _spelled(text: str) -> str:
    """`text` with prose's spellings of orders written as the answer language writes them."""
    for pattern, replacement in _SPELLINGS:
        text = pattern.sub(replacement, text)
    return text


def _index_form(candidate: str, variables: tuple[str, ...]) -> str | None:
    """`candidate` (`ell - 1 + t`) with each size's index letter read as the size (`L - 1 + T`), when it uses
    the index letters of two or more of `variables` and no other name; else None."""
    letters = {INDEX_OF[v]: v for v in variables if v in INDEX_OF}
    names = set(re.findall(r"[A-Za-z]+", candidate))
    if len(names) < 2 or not names <= letters.keys() or "+" not in candidate:
        return None
    return re.sub(r"[A-Za-z]+", lambda m: letters[m.group()], candidate)


def following_prose(docs: list[Doc], name: str, chapter: str) -> dict[str, str]:
    """The prose of `chapter` from where it first names answer `name` (its problem) on, per file:
    {file: text}. Worked examples before the problem may use the same orders for other things."""
    texts: dict[str, list[str]] = {}
    for doc in docs:
        if doc.chapter == chapter and doc.kind == "prose":
            texts.setdefault(doc.where.split(" cell ")[0], []).append(doc.text)
    out = {}
    for where, parts in texts.items():
        text = "\n".join(parts)
        start = re.search(rf"\b{re.escape(name)}\b", text)
        if start:
            out[where] = text[start.start():]
    return out


def order_statements(docs: list[Doc], checks: dict) -> list[str]:
    """Sentences of the student edition that state part of a symbolic answer in the prose from its problem on:
    its order in one size (`its scores have T² entries per head`), one of its terms, or the whole answer in
    the sizes' index letters (`runs at step ℓ − 1 + t`)."""
    import sympy

    from attnlab.symbolic import parse_answer
    from autograder.checks.base import ChapterId, short_name

    hits = []
    for qualified, check in checks.items():
        reference = check.symbolic_reference
        if reference is None or "=" in reference:
            continue
        chapter, name = ChapterId.of(qualified), short_name(qualified)
        variables = tuple(check.variables)
        parts = answer_parts(reference, variables)
        for where, text in following_prose(docs, name, chapter).items():
            text = _spelled(text)
            for candidate in sorted(candidates(text) | set(_INDEX_SUM.findall(text))):
                index = _index_form(candidate, variables)
                if index is not None:
                    with contextlib.suppress(Exception):
                        if _judge(qualified, index)[0]:
                            hits.append(f"{where}: {' '.join(candidate.split())!r} after the problem is {qualified} in the sizes' "
                                        "index letters")
                    continue
                if not parts or not identifiers(candidate) <= set(variables) | set("".join(variables)):
                    continue
                try:
                    value = parse_answer(candidate, list(variables))
                except Exception:  # noqa: BLE001 - not an expression in the answer's sizes
                    continue
                if not isinstance(value, sympy.Expr):
                    continue
                for part, what in parts.items():
                    if _positive_multiple(value, part):
                        hits.append(f"{where}: {candidate!r} after the problem is {what} of {qualified}")
    return sorted(set(hits))


_POINTS = ((2.3, 3.1, 1.7, 4.3, 2.9, 3.7, 1.3, 5.1), (5.3, 1.9, 4.1, 2.7, 6.1, 1.4, 3.3, 2.2))  # sizes to evaluate at


def _positive_multiple(value, part) -> bool:
    """Whether `value` is a positive number times `part` (sympy expressions). `cancel` decides for a rational ratio
    (its canonical form is a number exactly when the ratio is one); a ratio it leaves with logarithms or roots that
    takes two values at two points is not a number either; `simplify`, many times slower, decides the rest."""
    import sympy

    ratio = sympy.cancel(value / part)
    if ratio.free_symbols and ratio.is_rational_function():
        return False
    if ratio.free_symbols:
        symbols = sorted(ratio.free_symbols, key=str)
        with contextlib.suppress(TypeError, ValueError):  # more sizes than a point has, or no finite value there
            a, b = (complex(ratio.evalf(subs=dict(zip(symbols, point, strict=True)))) for point in
                    (p[:len(symbols)] for p in _POINTS))
            if abs(a - b) > 1e-9 * (abs(a) + abs(b)):
                return False
        ratio = sympy.simplify(ratio)
    return not ratio.free_symbols and bool(ratio.is_positive)


# ---------------------------------------------------------------- fragments of equation answers (the kit)

KIT_PREFIX = "attnlab/"  # where the kit's documents are (what the release zip ships)
_REF = re.compile(r"[A-Za-z_][\w']*\s*\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]")  # a tensor read, one level of nesting
# an index combination, 2*t + d or 2t + d (indices are lower case: 2K + I is a count of sizes)
_AFFINE = re.compile(r"\b\d+\s*\*?\s*[a-z]\w*'*(?:\s*[+-]\s*(?:[a-z]\w*'*|\d+))+")
_CALL = re.compile(r"\b([A-Z][A-Za-z0-9_]*)\s*\(")  # a call of a declared function: its name is capitalised


def _renamed(node, names: dict[str, str]):
    """`node` (an equation tree) with its indices renamed i0, i1, ... in order of appearance (tensor names kept)."""
    from attnlab import equations as E

    def index(name: str) -> str:
        return names.setdefault(name, f"i{len(names)}")

    def position(ix):
        if isinstance(ix, E.Affine):
            return E.Affine(tuple((index(n), c) for n, c in ix.terms), ix.const)
        if isinstance(ix, E.Gather):
            return E.Gather(_renamed(ix.ref, names))
        return ix

    if isinstance(node, E.Ref):
        return E.Ref(node.name, tuple(position(ix) for ix in node.indices))
    if isinstance(node, E.Reduce):
        return E.Reduce(node.op, tuple(index(i) for i in node.over), _renamed(node.body, names))
    if isinstance(node, E.Call):
        return E.Call(node.fn, _renamed(node.arg, names))
    if isinstance(node, E.Neg):
        return E.Neg(_renamed(node.arg, names))
    if isinstance(node, E.BinOp):
        return E.BinOp(node.op, _renamed(node.left, names), _renamed(node.right, names))
    if isinstance(node, E.Pow):
        return E.Pow(_renamed(node.base, names), _renamed(node.exponent, names))
    if isinstance(node, E.Apply):
        return E.Apply(node.fn, tuple(_renamed(a, names) for a in node.args))
    return node


def _canonical(node) -> str:
    """The text of an equation tree up to the names of its indices, without spaces."""
    from attnlab import equations as E

    return re.sub(r"\s+", "", E.show(_renamed(node, {})))


def _forms(node) -> dict[str, str]:
    """The fragment forms an expression holds: {canonical text: what it is}. Tensor reads at an index
    combination or through an id tensor count whatever the tensor is named; a declared function's call
    by its name and number of vectors."""
    from attnlab import equations as E

    out: dict[str, str] = {}
    for n in E.walk(node):
        if isinstance(n, E.Ref) and any(isinstance(ix, E.Gather) or (isinstance(ix, E.Affine) and ix.plain is None)
                                        for ix in n.indices):
            out[_canonical(E.Ref("_", n.indices))] = "an index form"
            for ix in n.indices:
                if isinstance(ix, E.Affine) and ix.plain is None and len(ix.terms) > 1:
                    out[_canonical(E.Ref("_", (ix,)))] = "an index form"
        elif isinstance(n, E.Apply):
            out[f"{n.fn}/{len(n.args)}"] = f"a call of {n.fn} on {len(n.args)} vectors"
    return out


def _expression(text: str):
    """`text` read as the right-hand side of an index equation, or None."""
    from attnlab import equations as E

    text = text.strip().strip("`$.,;:")
    if not text or len(text) > MAX_CANDIDATE * 3 or "\n" in text:
        return None
    try:
        return E.parse(f"_fragment = {text}")[0].rhs
    except (E.EquationError, RecursionError):
        return None


def answer_fragments(reference: str) -> dict[str, str]:
    """The fragments of an equation answer a kit must not show: {canonical text: what it is}. Each line of a
    multi-line answer, each right-hand side alone, each index form (a tensor read at an index combination or
    through an id tensor, and the combination alone), and the call of a function the question declares."""
    from attnlab import equations as E

    eqs = E.parse(reference)
    out: dict[str, str] = {}
    for eq in eqs:
        if len(eqs) > 1:
            out[_canonical_line(eq)] = f"line {eq.line} of the answer"
        out[_canonical(eq.rhs)] = f"the right-hand side of {eq.name}"
        out.update(_forms(eq.rhs))
    return out


def _canonical_line(eq) -> str:
    from attnlab import equations as E

    names: dict[str, str] = {}
    lhs = E.Ref(eq.name, tuple(E.Affine(((i, 1),)) for i in eq.indices if i != ":"))
    rhs = _renamed(eq.rhs, names)
    left = re.sub(r"\s+", "", E.show(_renamed(lhs, names)))
    return f"{left}={re.sub(r'[ ]+', '', E.show(rhs))}"


def text_fragments(text: str) -> dict[str, str]:
    """The fragment forms `text` shows (code: read its strings and comments first): {canonical text: the text}."""
    return dict(_text_fragments(text))


@functools.lru_cache(maxsize=1 << 16)
def _text_fragments(text: str) -> tuple[tuple[str, str], ...]:
    """`text_fragments`, once per text and process: an audit reads the same kit files and chapters' code again
    (the build's audit, then the tests'), and parsing every piece of them as an equation is most of its time."""
    from attnlab import equations as E

    found: dict[str, str] = {}
    pieces = [m.group() for m in _REF.finditer(text)] + [f"_[{m.group()}]" for m in _AFFINE.finditer(text)]
    pieces += [s for s in spans(text) if s.strip()]
    for line in text.split("\n"):
        if _INDEX_EQUATION.match(line):
            with contextlib.suppress(E.EquationError, RecursionError):
                for eq in E.parse(line.strip().strip("`$")):
                    found[_canonical_line(eq)] = line.strip()
                    pieces.append(E.show(eq.rhs))
    for call in _CALL.finditer(text):  # a declared function's call: its vectors up to the closing bracket
        end = text.find(")", call.end())
        if 0 < end - call.end() < MAX_CANDIDATE:
            pieces.append(text[call.start():end + 1])
    for piece in pieces:
        for side in piece.split("=")[-1:] if "=" in piece and "==" not in piece else [piece]:
            node = _expression(side)
            if node is None:
                continue
            found.setdefault(_canonical(node), side.strip())
            for form in _forms(node):
                found.setdefault(form, side.strip())
    return tuple(found.items())


def kit_fragments(docs: list[Doc], sources: dict[str, nbformat.NotebookNode], checks: dict) -> list[str]:
    """Fragments of equation answers that the kit shows and the chapters' public text does not."""
    fragments: dict[str, tuple[str, str]] = {}
    for name, check in checks.items():
        if (equations := check.index_equations) is not None:
            for form, what in answer_fragments(equations).items():
                fragments.setdefault(form, (name, what))
    public: set[str] = set()
    for nb in sources.values():
        for code in public_code(nb):
            public |= set(text_fragments(code))
    hits = []
    for doc in docs:
        if not doc.where.startswith(KIT_PREFIX):
            continue
        for text in code_texts(doc.text) if doc.kind == "code" else [doc.text]:
            for form, shown in text_fragments(text).items():
                if form in fragments and form not in public:
                    name, what = fragments[form]
                    hits.append(f"{doc.where}: {shown!r} is {what} of {name}, which the chapters do not show")
    return sorted(set(hits))
