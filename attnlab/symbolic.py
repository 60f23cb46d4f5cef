r"""Check a student's symbolic answer: an order of growth (Θ) or an equation.

Answers are strings written the way people write maths, in Python or in LaTeX, such as
``"L*(T + J)^2"``, ``"O(T log T)"``, ``r"\frac{X}{2} \cdot \log Y"`` or, where a question
asks for an equation, ``"X = 2Y"``. A `lark` grammar (`GRAMMAR` below) reads them: ``*``,
``/``, ``^`` and ``**``, implicit multiplication (``2XY``, ``L(T + J)``, ``T log T``),
``log``/``ln``/``lg``/``log2``/``log10``/``log_2``, ``sqrt``, ``max``, ``O( )`` and
``Θ( )``; in LaTeX ``\log``, ``\sqrt{}``, ``\sqrt[3]{}``, ``\frac{a}{b}``, ``\frac12``,
``\cdot``, ``\times``, ``\left( \right)``, ``\mathcal{O}``; in unicode ``· × √ Θ ½ ²``.
The parse tree is turned into sympy objects node by node: a student's text never reaches
``eval`` or ``sympify``, and only the named variables and those functions are known.

>>> parse_answer("L(T + J)^2", ["L", "T", "J"])
L*(J + T)**2
>>> check_answer("2 T log T + 5", "O(T log T)", ["T"]).message
'Correct: your answer is Θ(T*log(T)).'
>>> check_answer("T^2", "O(T log T)", ["T"]).ok
False

**The order.** The sizes (the variables) are all large. Every answer is a positive sum
of terms, each a product of powers of the variables, of their logarithms, of the
logarithms of those and so on (``log log T`` is of lower order than ``log T``, which is
of lower order than any power of ``T``). A term is of lower order when, however the
sizes grow, it stays below a constant times the largest of the other terms: when, for
every admissible direction of growth, some convex combination of the other terms'
exponents is at least as large (the term lies in the Newton polytope of the others, so
``sqrt(J*T) <= J + T`` and ``J*K <= J^2 + K^2`` are recognised). The exponents of the
logarithms refine those of the powers lexicographically. This is decided exactly by a
small linear program over the rationals. Two answers are Θ-equal when each one's
maximal terms are of lower order than (or equal to) the other's.

**Relations.** A question may state relations between its sizes, as strings such as
``"K <= J"`` or ``"J = H*I"`` (products of powers on each side; a name that the answer
may not use, like ``I`` here, is a size too). The checker uses them: with ``J = H*I``
(so ``H <= J``) a term in ``H`` alone is of lower order than the same term in ``J``, and
with ``K <= J`` the answers ``"T + J + K"`` and ``"T + J"`` are Θ-equal. That is what Θ
means under the relation, and it is accepted knowingly: a question that states
``K <= J`` accepts an answer that drops ``K`` next to ``J``.

Known limitation (sound, not complete): the linear program looks for one convex
combination that works in every direction, per variable. A term that is bounded only
by trading a power of one size against a logarithm of another (``J*K*log(J)`` against
``J^2 + K^2*log(K)^2``) is not recognised as lower order, so such an answer is refused,
never wrongly accepted.

**Bounds.** Judging is bounded: an answer longer than `MAX_LENGTH` characters, nested
more than `MAX_DEPTH` deep, with a written exponent over `MAX_EXPONENT`, a number over
`MAX_DIGITS` digits, a term count over `MAX_TERMS`, or whose judging takes longer than
`TIME_BUDGET` seconds is refused with one sentence saying so.
"""
from __future__ import annotations

import contextvars
import math
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

import sympy
from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken, VisitError
from lark.lark import PostLex
from lark.visitors import Transformer_NonRecursive

from attnlab._simplex import maximize

__all__ = ["GRAMMAR", "AnswerError", "Result", "check_answer", "parse_answer"]

MAX_LENGTH = 400           # characters in an answer
MAX_DEPTH = 40             # nested brackets, functions and powers
MAX_EXPONENT = 100         # |exponent| written in an answer
MAX_DIGITS = 20            # digits of one number written in an answer
MAX_CONSTANT_DIGITS = 1000  # digits of a constant computed from the answer
MAX_POWER = 1000           # |exponent| of a variable in a term of the order
MAX_TERMS = 300            # terms an order may have before lower-order ones are dropped
MAX_EXPANDED_TERMS = 300   # terms an answer with a subtraction may expand to
TIME_BUDGET = 2.0          # seconds to judge one answer
MAX_SHOWN = 4              # terms named in a message


@dataclass(frozen=True)
class Result:
    """The verdict on one answer: `ok`, and one sentence for the student."""

    ok: bool
    message: str


class AnswerError(ValueError):
    """A malformed answer; str(error) is one sentence for the student."""


def _cap(what: str) -> str:
    """`what` with its first letter capitalised, to start a sentence."""
    return what[:1].upper() + what[1:]


# --------------------------------------------------------------------------- grammar

GRAMMAR = r"""
// An answer: an expression, an equation, or (in a question's relations) an inequality.
?start: sum
      | sum EQ sum                      -> equation
      | sum REL sum                     -> relation

?sum: signed
    | sum PLUS signed                   -> add
    | sum MINUS signed                  -> sub
?signed: product
    | MINUS signed                      -> neg
    | PLUS signed                       -> pos
?product: power
    | product TIMES factor              -> mul
    | product DIVIDE factor             -> div
    | product power                     -> juxtapose
?factor: power
    | MINUS factor                      -> neg
    | PLUS factor                       -> pos
?power: atom
    | atom POW exponent                 -> pow
    | atom SUPERSCRIPT                  -> superscript
?exponent: power
    | MINUS exponent                    -> neg
    | PLUS exponent                     -> pos

?atom: number
    | variable
    | LPAR sum RPAR                     -> group
    | LSQB sum RSQB                     -> group
    | LBRACE sum RBRACE                 -> group
    | call
    | frac
    | root
number: NUMBER | GNUM | VULGAR
variable: VAR | GVAR

// f(x, y), f x, log_2 x, log^2 x; a bare argument is the next power and whatever
// is written against it without a space: log JK is log(J K), log J K is log(J) K.
call: (FUNC | FUNC_LATEX) base? outer? arguments
base: SUB (number | variable | LBRACE sum RBRACE | LPAR sum RPAR)
outer: POW (number | MINUS number | LBRACE sum RBRACE | LPAR sum RPAR)
?arguments: LPAR args RPAR | LSQB args RSQB | LBRACE args RBRACE | bare
args: sum (COMMA sum)*
bare: bare_power glued*
?bare_power: bare_atom
    | bare_atom POW exponent            -> pow
    | bare_atom SUPERSCRIPT             -> superscript
?bare_atom: number | variable | call | frac | root
?glued: glued_atom
    | glued_atom POW exponent           -> pow
    | glued_atom SUPERSCRIPT            -> superscript
?glued_atom: GVAR                       -> variable
    | GNUM                              -> number

root: ROOT index? radicand
index: LSQB sum RSQB
?radicand: LBRACE sum RBRACE            -> group
    | LPAR sum RPAR                     -> group
    | bare
frac: FRAC fraction_part fraction_part
?fraction_part: LBRACE sum RBRACE       -> group
    | FRAC_CHAR

// VAR, FUNC (split from WORD and WRAPPED), GVAR and GNUM (a name or number written
// right after another, as in 2XY) come from the names post-lexer.
%declare VAR GVAR GNUM FUNC

NUMBER: /\d+(\.\d*)?|\.\d+/
VULGAR: /[½⅓⅔¼¾⅕⅙⅛]/
WORD: /[A-Za-z][A-Za-z0-9]*/
WRAPPED.3: /\\(mathcal|mathrm|mathit|mathbf|mathsf|operatorname|textrm|textit|text)\s*(\{\s*[A-Za-z][A-Za-z0-9]*\s*\}|[A-Za-z])/
FUNC_LATEX.3: /\\(log|ln|lg|max|Theta)(?![A-Za-z])/ | "Θ" | "𝒪"
ROOT.3: /\\sqrt(?![A-Za-z])/ | "√"
FRAC.3: /\\[dt]?frac(?![A-Za-z])/
FRAC_CHAR.4: /[0-9A-Za-z]/
LATEX_UNKNOWN.2: /\\[A-Za-z]+/
PLUS: "+"
MINUS: "-" | "−" | "–"
TIMES.3: "*" | /\\(cdot|times|ast)(?![A-Za-z])/ | "·" | "⋅" | "×" | "∙" | "∗"
DIVIDE.3: "/" | /\\div(?![A-Za-z])/ | "÷"
POW.4: "^" | "**"
SUPERSCRIPT: /[²³]/
EQ: "==" | "="
REL: "<=" | ">=" | "≤" | "≥" | "<" | ">"
SUB: "_"
COMMA: ","
LPAR: "("
RPAR: ")"
LSQB: "["
RSQB: "]"
LBRACE: "{" | /\\\{/
RBRACE: "}" | /\\\}/
SPACE.3: /\s+/ | "$" | /\\[,;:! ]/ | /\\(left|right|bigl|bigr|Bigl|Bigr|biggl|biggr|big|Big|bigg|Bigg|displaystyle|quad|qquad|limits|middle)(?![A-Za-z])\s*\.?/
%ignore SPACE
"""

_FUNCTION_WORDS: dict[str, str] = {
    "log": "log", "ln": "log", "lg": "log2", "log2": "log2", "log10": "log10",
    "sqrt": "sqrt", "O": "O", "Theta": "O", "max": "max", "Max": "max",
}
_LATEX_FUNCTIONS: dict[str, str] = {
    "\\log": "log", "\\ln": "log", "\\lg": "log2", "\\max": "max", "\\Theta": "O", "Θ": "O", "𝒪": "O",
}
_KNOWN_FUNCTIONS = "log, ln, log2, sqrt, max and O( )"
_VULGAR = {"½": (1, 2), "⅓": (1, 3), "⅔": (2, 3), "¼": (1, 4), "¾": (3, 4), "⅕": (1, 5), "⅙": (1, 6), "⅛": (1, 8)}
_SUPERSCRIPTS = {"²": 2, "³": 3}
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_LETTERS = re.compile(r"[A-Za-z]+")
_WRAPPED_NAME = re.compile(r"\{\s*([A-Za-z][A-Za-z0-9]*)\s*\}|([A-Za-z])$")
_NUMBERS = frozenset({"NUMBER", "GNUM", "VULGAR"})
_GLUE_AFTER = frozenset({"VAR", "GVAR", "NUMBER", "GNUM", "VULGAR"})
_OPERATORS = frozenset({"PLUS", "MINUS", "TIMES", "DIVIDE", "POW", "SUPERSCRIPT", "EQ", "REL"})
_CLOSERS = {"RPAR": "LPAR", "RSQB": "LSQB", "RBRACE": "LBRACE"}
_FUNCTION_TOKENS = frozenset({"FUNC", "FUNC_LATEX", "ROOT"})


@dataclass
class _Job:
    """One parse: the text, the allowed names, and the tokens seen so far (for messages)."""

    text: str
    variables: tuple[str, ...]
    what: str
    relations_allowed: bool = False
    tokens: list[Token] = field(default_factory=list)

    def fail(self, message: str) -> AnswerError:
        """An AnswerError whose sentence starts with the answer's name."""
        return AnswerError(f"{_cap(self.what)} {message}")


_JOB: contextvars.ContextVar[_Job] = contextvars.ContextVar("attnlab_symbolic_job")


class _Names(PostLex):
    """Post-lexer: splits runs of letters into variables and functions (LT -> L T, logT -> log T)
    and marks names and numbers written right after another name or number (GVAR, GNUM)."""

    always_accept = ("WORD", "WRAPPED", "LATEX_UNKNOWN")

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        """The token stream with WORD and WRAPPED replaced by VAR, GVAR and FUNC tokens."""
        job = _JOB.get()
        for token in stream:
            if token.type == "LATEX_UNKNOWN":
                raise job.fail(f"uses the LaTeX command '{token}', which I do not know here.")
            pieces = self.split(job, token) if token.type in ("WORD", "WRAPPED") else [token]
            for piece in pieces:
                if piece.type in ("VAR", "NUMBER") and self.glued(job, piece):
                    piece = Token.new_borrow_pos("GVAR" if piece.type == "VAR" else "GNUM", piece.value, piece)
                job.tokens.append(piece)
                yield piece

    @staticmethod
    def glued(job: _Job, token: Token) -> bool:
        """Whether `token` is written right after a name or a number (no space between)."""
        prev = job.tokens[-1] if job.tokens else None
        return prev is not None and prev.type in _GLUE_AFTER and prev.end_pos == token.start_pos

    @staticmethod
    def split(job: _Job, token: Token) -> list[Token]:
        """The variables and functions that a run of letters is made of, as tokens."""
        word, start = str(token), token.start_pos or 0
        if token.type == "WRAPPED":
            match = _WRAPPED_NAME.search(word)
            assert match is not None  # the WRAPPED terminal ends in {name} or a letter
            group = 1 if match.group(1) else 2
            word, start = match.group(group), start + match.start(group)
        pieces = _split_word(word, job.variables)
        if pieces is None:
            raise job.fail(_unknown_name(job, word, start))
        tokens, offset = [], start
        for piece in pieces:
            kind = "VAR" if piece in job.variables else "FUNC"
            tokens.append(Token(kind, piece, offset, 1, offset + 1, 1, offset + len(piece) + 1, offset + len(piece)))
            offset += len(piece)
        return tokens


def _split_word(word: str, variables: Sequence[str]) -> list[str] | None:
    """Split `word` into known names, longest first ('LT' -> ['L', 'T']); None if impossible."""
    known = set(variables) | set(_FUNCTION_WORDS)
    if word in known:
        return [word]
    memo: dict[int, list[str] | None] = {}

    def from_(start: int) -> list[str] | None:
        """A split of word[start:]."""
        if start == len(word):
            return []
        if start not in memo:
            memo[start] = None
            for end in range(len(word), start, -1):
                if word[start:end] in known and (rest := from_(end)) is not None:
                    memo[start] = [word[start:end], *rest]
                    break
        return memo[start]

    return from_(0)


def _unknown_name(job: _Job, word: str, pos: int) -> str:
    """The sentence (after the answer's name) for a name that is neither a variable nor a function."""
    if job.text[pos + len(word):].lstrip().startswith("("):
        return f"uses the function {word!r}, but I only know {_KNOWN_FUNCTIONS}."
    verb = "is" if len(job.variables) == 1 else "are"
    hint = next((f" (names are case-sensitive: did you mean {other!r}?)" for other in (word.upper(), word.lower())
                 if other != word and other in job.variables), "")
    return f"uses {word!r}, but only {', '.join(job.variables)} {verb} allowed{hint}."


@lru_cache(maxsize=1)
def _parser() -> Lark:
    """The LALR parser for GRAMMAR (built once)."""
    return Lark(GRAMMAR, parser="lalr", lexer="contextual", postlex=_Names(), propagate_positions=True)


# --------------------------------------------------------------------------- checks before parsing

_ESCAPES: dict[str, tuple[str, str]] = {  # control character -> (letter after the backslash, its name)
    "\t": ("t", "a tab"), "\r": ("r", "a carriage return"), "\f": ("f", "a form feed"),
    "\b": ("b", "a backspace"), "\a": ("a", "a bell character"), "\v": ("v", "a vertical tab"),
}


def _check_escapes(job: _Job) -> None:
    """Refuse LaTeX whose backslash Python ate ("\\times" in a non-raw string is a tab + "imes")."""
    for i, ch in enumerate(job.text):
        if ch not in _ESCAPES:
            continue
        letter, name = _ESCAPES[ch]
        rest = _LETTERS.match(job.text, i + 1)
        if ch in "\t\r" and rest is None:
            continue  # a real tab or line end: white space
        command = "\\" + letter + (rest.group() if rest else "")
        raise job.fail(f"contains {name} at character {i + 1} where I expect the LaTeX command '{command}': "
                       f"Python ate the backslash, reading '\\{letter}' in a normal string as {name}, "
                       f"so write the answer as a raw string, r\"...\", to keep it.")


_OPEN_CLOSE = {"(": ")", "[": "]", "{": "}"}


def _check_brackets(job: _Job) -> None:
    """Refuse an unclosed, unopened, mismatched or too deeply nested bracket."""
    stack: list[int] = []
    for i, ch in enumerate(job.text):
        if ch in _OPEN_CLOSE:
            stack.append(i)
            if len(stack) > MAX_DEPTH:
                raise job.fail(f"nests brackets more than {MAX_DEPTH} deep.")
        elif ch in ")]}":
            if not stack:
                raise job.fail(f"has a {ch!r} at character {i + 1} without a matching opening bracket.")
            j = stack.pop()
            if _OPEN_CLOSE[job.text[j]] != ch:
                raise job.fail(f"closes the {job.text[j]!r} at character {j + 1} with a {ch!r} at character {i + 1}.")
    if stack:
        raise job.fail(f"has a {job.text[stack[-1]]!r} at character {stack[-1] + 1} that is never closed.")


def _syntax_error(job: _Job, error: UnexpectedInput) -> AnswerError:
    """One sentence for a lark parse error."""
    if isinstance(error, UnexpectedCharacters):
        ch = job.text[error.pos_in_stream]
        return job.fail(f"contains {ch!r} at character {error.pos_in_stream + 1}, "
                        "which is not part of a formula I can read.")
    assert isinstance(error, UnexpectedToken)
    token = error.token
    state = getattr(error, "state", None)
    if not hasattr(state, "value_stack"):
        state = getattr(getattr(error, "interactive_parser", None), "parser_state", None)
    stack = getattr(state, "value_stack", [])
    pending = _pending(stack)
    if token.type == "$END":
        if pending is not None and pending.type == "FRAC":
            return job.fail("ends inside a \\frac, which needs two parts: \\frac{a}{b}.")
        if pending is not None:
            return job.fail(f"has {str(pending)!r} at character {pending.start_pos + 1} "
                            "without something to apply it to.")
        last = str(job.tokens[-1]) if job.tokens else ""
        return job.fail(f"ends too early: something is missing after {last!r}.")
    where = f"at character {(token.start_pos or 0) + 1}"
    if token.type == "SUB":
        return job.fail(f"contains '_' {where}, which I only accept right after log, as in log_2(N).")
    if token.type == "COMMA":
        return job.fail(f"has a ',' {where}, which I only accept between the arguments of max( ) or log( ).")
    if token.type == "EQ" and sum(t.type == "EQ" for t in job.tokens) > 1:
        return job.fail("has more than one '='; write a single equation such as A = B.")
    before = next((t for t in reversed(job.tokens) if (t.start_pos or 0) < (token.start_pos or 0)), None)
    if token.type in _CLOSERS and before is not None and before.type == _CLOSERS[token.type]:
        return job.fail(f"has empty brackets at character {(before.start_pos or 0) + 1}.")
    if pending is not None and token.type not in _OPERATORS:
        return job.fail(f"has {str(pending)!r} at character {pending.start_pos + 1} "
                        f"without something to apply it to before the {str(token)!r} {where}.")
    if token.type in _OPERATORS:
        return job.fail(f"has {str(token)!r} {where} where I expected a term.")
    return job.fail(f"has an unexpected {str(token)!r} {where}.")


def _pending(stack: Sequence[object]) -> Token | None:
    """The function (or \\frac) still waiting for its argument at the end of a partial parse:
    the last function token on the parser's stack, followed only by its base, power or index."""
    for i in range(len(stack) - 1, -1, -1):
        item = stack[i]
        if isinstance(item, Token) and (item.type in _FUNCTION_TOKENS or item.type == "FRAC"):
            return item if _only_prefix_parts(item, list(stack[i + 1:])) else None
    return None


def _only_prefix_parts(func: Token, rest: list[object]) -> bool:
    """Whether `rest` is only what may come between a function and its argument (log_2^3, \\sqrt[3], \\frac{a})."""
    def kind(x: object) -> str:
        """'T' for a tree, else the token's type."""
        return "T" if isinstance(x, Tree) else getattr(x, "type", "?")

    kinds = [kind(x) for x in rest]
    if func.type in ("FRAC", "ROOT"):
        return all(k in ("T", "FRAC_CHAR", "LBRACE", "RBRACE", "LSQB", "RSQB") for k in kinds)
    i = 0
    for part, mark in (("base", "SUB"), ("outer", "POW")):
        if i < len(rest) and isinstance(rest[i], Tree) and rest[i].data == part:
            i += 1
        elif i < len(kinds) and kinds[i] == mark:
            i += 1
            while i < len(kinds) and kinds[i] not in ("POW", "SUB") and i < len(kinds):
                i += 1
    return i == len(kinds)


_NESTING = frozenset({"group", "call", "frac", "root", "pow", "superscript"})


def _check_nesting(job: _Job, tree: Tree) -> None:
    """Refuse a parse tree nested more than MAX_DEPTH deep in functions, brackets and powers."""
    todo: list[tuple[Tree, int]] = [(tree, 0)]
    while todo:
        node, depth = todo.pop()
        depth += node.data in _NESTING
        if depth > MAX_DEPTH:
            raise job.fail(f"nests functions, brackets and powers more than {MAX_DEPTH} deep.")
        todo.extend((child, depth) for child in node.children if isinstance(child, Tree))


# --------------------------------------------------------------------------- parse tree -> sympy

class _Args(tuple):
    """The arguments of a function call (a tuple of sympy expressions)."""


def _at(token: Token) -> str:
    """'at character N' for a token."""
    return f"at character {(token.start_pos or 0) + 1}"


class _ToSympy(Transformer_NonRecursive):
    """Builds the sympy expression of a parse tree, one node at a time (no eval, no sympify)."""

    def __init__(self, job: _Job) -> None:
        """Prepare to build expressions in the job's variables (positive symbols)."""
        super().__init__()
        self.job = job
        self.symbols = _symbols(job.variables)

    # leaves
    def number(self, children: list[Token]) -> sympy.Expr:
        """A decimal number as an exact rational, or a vulgar fraction such as ½."""
        (token,) = children
        if token.type == "VULGAR":
            return sympy.Rational(*_VULGAR[str(token)])
        digits = str(token)
        if sum(ch.isdigit() for ch in digits) > MAX_DIGITS:
            raise self.job.fail(f"has a number with {len(digits)} digits {_at(token)}; constants do not matter here.")
        value = Fraction(digits.rstrip(".") or "0")
        return sympy.Rational(value.numerator, value.denominator)

    def variable(self, children: list[Token]) -> sympy.Expr:
        """A variable: a positive symbol."""
        return self.symbols[str(children[0])]

    def group(self, children: list[object]) -> sympy.Expr:
        """A bracketed expression."""
        return children[1]  # type: ignore[return-value]

    # arithmetic
    def add(self, children: list[sympy.Expr]) -> sympy.Expr:
        """a + b."""
        return children[0] + children[2]

    def sub(self, children: list[sympy.Expr]) -> sympy.Expr:
        """a - b."""
        return children[0] - children[2]

    def neg(self, children: list[sympy.Expr]) -> sympy.Expr:
        """-a."""
        return -children[1]

    def pos(self, children: list[sympy.Expr]) -> sympy.Expr:
        """+a."""
        return children[1]

    def mul(self, children: list[sympy.Expr]) -> sympy.Expr:
        """a * b."""
        return self.product(children[0], children[2])

    def juxtapose(self, children: list[sympy.Expr]) -> sympy.Expr:
        """a b: implicit multiplication."""
        return self.product(children[0], children[1])

    def product(self, a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
        """a * b, refusing a constant with too many digits."""
        return self.constant_size(a * b)

    def div(self, children: list[object]) -> sympy.Expr:
        """a / b, refusing division by zero."""
        a, op, b = children
        if b == 0:
            raise self.job.fail(f"divides by zero {_at(op)}.")  # type: ignore[arg-type]
        return self.constant_size(a / b)  # type: ignore[operator]

    def pow(self, children: list[object]) -> sympy.Expr:
        """base ^ exponent."""
        base, op, exponent = children
        return self.power(base, exponent, op)  # type: ignore[arg-type]

    def superscript(self, children: list[object]) -> sympy.Expr:
        """base² or base³."""
        base, token = children
        return self.power(base, sympy.Integer(_SUPERSCRIPTS[str(token)]), token)  # type: ignore[arg-type]

    def power(self, base: sympy.Expr, exponent: sympy.Expr, token: Token) -> sympy.Expr:
        """base**exponent for a small real constant exponent, refusing huge results and 0 to a negative power."""
        if not exponent.is_number:
            raise self.job.fail(f"has the exponent {_show(exponent)} {_at(token)}; "
                                "I can only compare powers with constant exponents.")
        if exponent.is_real is False or exponent.has(sympy.I):
            raise self.job.fail(f"has an exponent {_at(token)} that is not a real number.")
        size = abs(sympy.N(exponent, 15))
        if not size.is_finite or size > MAX_EXPONENT:
            raise self.job.fail(f"has the exponent {_show(exponent)} {_at(token)}, which is larger than I accept.")
        if base == 0 and exponent.is_negative:
            raise self.job.fail(f"divides by zero {_at(token)}.")
        if isinstance(base, sympy.Rational) and max(abs(base.p), base.q).bit_length() * float(size) > \
                3.33 * MAX_CONSTANT_DIGITS:
            raise self.job.fail(f"has a constant with more than {MAX_CONSTANT_DIGITS} digits {_at(token)}; "
                                "constants do not matter here.")
        return base ** exponent

    def constant_size(self, expr: sympy.Expr) -> sympy.Expr:
        """`expr`, unless it is a rational constant with too many digits."""
        if isinstance(expr, sympy.Rational) and max(abs(expr.p), expr.q).bit_length() > 3.33 * MAX_CONSTANT_DIGITS:
            raise self.job.fail(f"has a constant with more than {MAX_CONSTANT_DIGITS} digits; "
                                "constants do not matter here.")
        return expr

    # functions
    def args(self, children: list[object]) -> _Args:
        """Comma-separated arguments."""
        return _Args(c for c in children if not isinstance(c, Token))

    def arguments(self, children: list[object]) -> _Args:
        """Bracketed arguments."""
        return children[1]  # type: ignore[return-value]

    def bare(self, children: list[sympy.Expr]) -> _Args:
        """An argument written without brackets: a power and whatever is glued to it."""
        return _Args([sympy.Mul(*children)])

    def base(self, children: list[object]) -> tuple[str, sympy.Expr]:
        """The base of log_b."""
        return ("base", next(c for c in children[1:] if not isinstance(c, Token)))  # type: ignore[return-value]

    def outer(self, children: list[object]) -> tuple[str, sympy.Expr]:
        """The power in log^2 x."""
        values = [c for c in children[1:] if not isinstance(c, Token)]
        sign = -1 if any(isinstance(c, Token) and c.type == "MINUS" for c in children) else 1
        return ("outer", sign * values[0])  # type: ignore[operator]

    def index(self, children: list[object]) -> tuple[str, sympy.Expr]:
        """The index of \\sqrt[n]."""
        return ("index", children[1])  # type: ignore[return-value]

    def call(self, children: list[object]) -> sympy.Expr:
        """A function applied to its arguments."""
        func, *parts = children
        extras = dict(p for p in parts if isinstance(p, tuple) and not isinstance(p, _Args))
        (args,) = [p for p in parts if isinstance(p, _Args)]
        name = _FUNCTION_WORDS.get(str(func)) or _LATEX_FUNCTIONS[str(func)]
        value = self.apply(func, name, args, extras.get("base"))  # type: ignore[arg-type]
        if "outer" in extras:
            value = self.power(value, extras["outer"], func)  # type: ignore[arg-type]
        return value

    def root(self, children: list[object]) -> sympy.Expr:
        """\\sqrt{x}, \\sqrt[n]{x} or √x."""
        token, *parts, radicand = children
        arg = radicand[0] if isinstance(radicand, _Args) else radicand
        if not parts:
            return arg ** sympy.Rational(1, 2)  # type: ignore[operator]
        (_, index), = parts
        if index == 0:
            raise self.job.fail(f"takes a root of index zero {_at(token)}.")  # type: ignore[arg-type]
        return self.power(arg, 1 / index, token)  # type: ignore[arg-type]

    def frac(self, children: list[object]) -> sympy.Expr:
        """\\frac{a}{b} (or \\frac12: one character per part)."""
        token, num, den = (self.part(c) for c in children)
        if den == 0:
            raise self.job.fail(f"divides by zero in the \\frac {_at(children[0])}.")  # type: ignore[arg-type]
        return self.constant_size(num / den)

    def part(self, child: object) -> object:
        """One part of \\frac: a group, or one digit or letter."""
        if isinstance(child, Token) and child.type == "FRAC_CHAR":
            if child.isdigit():
                return sympy.Integer(int(child))
            if str(child) not in self.symbols:
                raise self.job.fail(_unknown_name(self.job, str(child), child.start_pos or 0))
            return self.symbols[str(child)]
        return child

    def apply(self, func: Token, name: str, args: _Args, base: sympy.Expr | None) -> sympy.Expr:
        """The value of function `name` on `args`."""
        if name == "max":
            if any(a.is_real is False for a in args):
                raise self.job.fail(f"takes max( ) {_at(func)} of something that is not a real number.")
            return sympy.Max(*args, evaluate=False) if len(args) > 1 else args[0]
        if name == "log" and len(args) == 2 and base is None:
            args, base = _Args(args[:1]), args[1]
        if len(args) != 1:
            raise self.job.fail(f"gives {str(func)!r} {_at(func)} {len(args)} arguments, but it takes one.")
        (arg,) = args
        if name == "O":
            return arg
        if name == "sqrt":
            return arg ** sympy.Rational(1, 2)
        if name in ("log2", "log10"):
            base = sympy.Integer(2 if name == "log2" else 10)
        if _not_positive(arg) or (base is not None and (_not_positive(base) or base == 1)):
            raise self.job.fail(f"takes a logarithm {_at(func)} that is undefined.")
        return sympy.log(arg) if base is None else sympy.log(arg) / sympy.log(base)

    # whole answers
    def equation(self, children: list[object]) -> sympy.Eq:
        """lhs = rhs, unevaluated."""
        return sympy.Eq(children[0], children[2], evaluate=False)

    def relation(self, children: list[object]) -> tuple[str, sympy.Expr, sympy.Expr]:
        """lhs <= rhs (only in a question's relations)."""
        lhs, op, rhs = children
        if not self.job.relations_allowed:
            raise self.job.fail(f"compares with {str(op)!r} {_at(op)}; write an expression, "  # type: ignore[arg-type]
                                "or an equation with '=' where one is asked for.")
        return (str(op), lhs, rhs)  # type: ignore[return-value]


def _not_positive(expr: sympy.Expr) -> bool:
    """Whether `expr` is a constant <= 0 (or not real), where a logarithm is undefined."""
    return expr.is_positive is False or (bool(expr.is_number) and expr.is_positive is not True)


def _show(expr: sympy.Basic) -> str:
    """A short readable form of a sympy expression, with ^ for powers."""
    text = str(expr).replace("**", "^")
    return text if len(text) <= 60 else text[:57] + "..."


def _symbols(variables: Sequence[str]) -> dict[str, sympy.Symbol]:
    """Positive sympy symbols for the variable names."""
    return {name: sympy.Symbol(name, positive=True) for name in variables}


def _validate_variables(variables: Sequence[str]) -> tuple[str, ...]:
    """The variable names as a tuple; ValueError if one is not a plain name."""
    names = tuple(variables)
    for name in names:
        if not isinstance(name, str) or not _NAME.fullmatch(name) or name in _FUNCTION_WORDS:
            raise ValueError(f"invalid variable name {name!r}: use letters and digits, not a function name")
    return names


def _as_text(answer: object, what: str) -> str:
    """The answer as a string: a str, or a (small) sympy expression or equation written out."""
    if isinstance(answer, sympy.Basic):
        nodes = 0
        for _ in sympy.preorder_traversal(answer):
            nodes += 1
            if nodes > MAX_LENGTH:
                raise AnswerError(f"{_cap(what)} is too large; please write it in under {MAX_LENGTH} characters.")
        if isinstance(answer, sympy.Eq):
            return f"{answer.lhs} = {answer.rhs}"
        if isinstance(answer, sympy.Expr):
            return str(answer)
    if not isinstance(answer, str):
        name = type(answer).__name__
        kind = "None" if answer is None else f"{'an' if name[:1] in 'aeiou' else 'a'} {name}"
        raise AnswerError(f"{_cap(what)} should be a string such as \"2*T\", but it is {kind}.")
    return answer


def _parse(answer: object, variables: Sequence[str], what: str, relations_allowed: bool = False) -> object:
    """Parse `answer` into sympy without judging its order; AnswerError (one sentence) if malformed."""
    names = _validate_variables(variables)
    text = _as_text(answer, what)
    if not text.strip():
        raise AnswerError(f"{_cap(what)} is empty: write an expression in {', '.join(names)}.")
    if len(text) > MAX_LENGTH:
        raise AnswerError(f"{_cap(what)} is {len(text)} characters long; please write it in under {MAX_LENGTH}.")
    job = _Job(text, names, what, relations_allowed)
    _check_escapes(job)
    _check_brackets(job)
    context = _JOB.set(job)
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as error:
        raise _syntax_error(job, error) from None
    finally:
        _JOB.reset(context)
    _check_nesting(job, tree)
    try:
        expr = _ToSympy(job).transform(tree)
    except VisitError as error:  # lark wraps what a node's method raised
        raise error.orig_exc from None
    parts = expr[1:] if isinstance(expr, tuple) else [expr]
    if any(p.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo, sympy.I) for p in parts):
        raise AnswerError(f"{_cap(what)} is undefined: it divides by zero "
                          "or takes the logarithm of a number that is not positive.")
    return expr


# --------------------------------------------------------------------------- terms and orders

Levels = tuple[Fraction, ...]           # exponents of v, log v, log log v, ... (no trailing zeros)
Mono = tuple[tuple[str, Levels], ...]   # a term: (variable, levels), sorted by variable
Order = frozenset[Mono]                 # the maximal terms of an expression
_ONE: Mono = ()


def _trim(levels: Iterable[Fraction]) -> Levels:
    """Levels without trailing zeros."""
    out = list(levels)
    while out and out[-1] == 0:
        out.pop()
    return tuple(out)


def _mono(pairs: dict[str, Levels]) -> Mono:
    """A canonical term from {variable: levels}."""
    return tuple(sorted((v, t) for v, lev in pairs.items() if (t := _trim(lev))))


def _levels(m: Mono, v: str) -> Levels:
    """The levels of variable v in term m (() if absent)."""
    for name, lev in m:
        if name == v:
            return lev
    return ()


def _padded(a: Levels, n: int) -> Levels:
    """`a` padded with zeros to length n."""
    return a + (Fraction(0),) * (n - len(a))


def _lex_cmp(a: Levels, b: Levels) -> int:
    """-1, 0 or 1: how a compares with b as growth rates (lexicographically, powers first)."""
    n = max(len(a), len(b))
    pa, pb = _padded(a, n), _padded(b, n)
    return (pa > pb) - (pa < pb)


def _times(a: Mono, b: Mono) -> Mono:
    """The product of two terms."""
    pairs = dict(a)
    for v, lev in b:
        n = max(len(lev), len(pairs.get(v, ())))
        pairs[v] = tuple(x + y for x, y in zip(_padded(pairs.get(v, ()), n), _padded(lev, n)))
    return _mono(pairs)


def _raise_to(a: Mono, r: Fraction) -> Mono:
    """A term to the power r."""
    return _mono({v: tuple(x * r for x in lev) for v, lev in a})


def _leading(lev: Levels) -> tuple[int, Fraction]:
    """(level, exponent) of the first nonzero entry."""
    for k, x in enumerate(lev):
        if x:
            return k, x
    return len(lev), Fraction(0)


def _covers(o: Mono, m: Mono, strict: bool) -> bool:
    """Whether o >= m in every variable (and > in one when strict): o bounds m by itself."""
    names = {v for v, _ in o} | {v for v, _ in m}
    cmps = [_lex_cmp(_levels(o, v), _levels(m, v)) for v in names]
    return all(c >= 0 for c in cmps) and (not strict or any(c > 0 for c in cmps))


def _biggest(m: Mono) -> Fraction:
    """The largest |exponent| in a term."""
    return max((abs(x) for _, lev in m for x in lev), default=Fraction(0))


class _Clock:
    """A time budget; `tick` raises AnswerError once it is spent."""

    def __init__(self, seconds: float, what: str) -> None:
        """Start a budget of `seconds` for the answer named `what`."""
        self.end, self.what = time.monotonic() + seconds, what

    def tick(self) -> None:
        """Raise if the budget is spent."""
        if time.monotonic() > self.end:
            raise AnswerError(f"{_cap(self.what)} is too complicated to judge in time; please write it more simply.")


@dataclass(frozen=True)
class _Relation:
    """A relation between sizes, linear in their logarithms: sum(coeff[v] * log v) >= 0, or = 0."""

    coeffs: tuple[tuple[str, Fraction], ...]
    equality: bool


class _Sizes:
    """The sizes (variables, and the extra names their relations use) and what the relations imply.

    In logarithms u_v = log v, a relation is a linear constraint and the admissible
    directions of growth form a cone D. For the logarithmic levels, `below` lists the
    pairs (a, b) with log a <= c * log b + c' (a does not grow unless b does), which
    bound log log a by log log b and so on.
    """

    def __init__(self, names: tuple[str, ...], relations: tuple[_Relation, ...]) -> None:
        """Sizes `names` under `relations`."""
        self.names, self.relations = names, relations
        self.free = frozenset(v for v in names if all(self.allows(r, v) for r in relations))
        self.below = tuple((a, b) for a in names for b in names
                           if a != b and a not in self.free and self.bounded_by(a, b))
        self.cache: dict[tuple[Mono, tuple[Mono, ...], bool], bool] = {}

    @staticmethod
    def allows(r: _Relation, v: str) -> bool:
        """Whether size v may grow alone under relation r."""
        c = dict(r.coeffs).get(v, Fraction(0))
        return c == 0 if r.equality else c >= 0

    def cone_rows(self, column: dict[str, int]) -> list[tuple[dict[int, Fraction], Fraction]]:
        """The rows (A d <= 0) of the cone D of directions of growth."""
        rows = []
        for r in self.relations:
            row = {column[v]: -c for v, c in r.coeffs}
            rows.append((row, Fraction(0)))
            if r.equality:
                rows.append(({j: -c for j, c in row.items()}, Fraction(0)))
        return rows

    def bounded_by(self, a: str, b: str) -> bool:
        """Whether a cannot grow while b stays bounded (max d_a over D with d_b = 0 is 0)."""
        column = {v: k for k, v in enumerate(self.names)}
        rows = self.cone_rows(column) + [({column[b]: Fraction(1)}, Fraction(0)), ({column[a]: Fraction(1)}, Fraction(1))]
        value, _ = maximize({column[a]: Fraction(1)}, rows)
        return value == 0

    def dominated(self, m: Mono, others: Sequence[Mono], strict: bool, clock: _Clock) -> bool:
        """Whether term m <= C * max(others) for all large sizes (m / max(others) -> 0 when strict)."""
        if not others:
            return False
        if not strict and m in others:
            return True
        if any(_covers(o, m, strict) for o in others):
            return True
        if any(all(_lex_cmp(_levels(m, v), _levels(o, v)) > 0 for o in others) for v in self.free):
            return False  # m grows faster when v grows alone
        key = (m, tuple(sorted(others)), strict)
        if key not in self.cache:
            self.cache[key] = self.certified(m, tuple(others), strict, clock)
        return self.cache[key]

    def certified(self, m: Mono, others: tuple[Mono, ...], strict: bool, clock: _Clock) -> bool:
        """Whether a certificate exists: weights λ (a convex combination of `others`) and
        multipliers of the relations such that, variable by variable, sum λ_j o_j - m
        minus the relations is lexicographically >= 0 (> 0 in some variable when strict).

        The lexicographic condition is reached level by level: a linear program finds
        which variables' current level can be made positive; the others must be 0 there
        and move on to their next level, until nothing changes.
        """
        depth = max([len(lev) for term in (m, *others) for _, lev in term] + [1])
        forms, ncols = self.forms(m, others, depth)
        scale = len(others)
        level = {v: 0 for v in self.names}
        while True:
            for v in self.names:
                while level[v] < depth and not forms.get((v, level[v])):
                    level[v] += 1
            rows: list[tuple[dict[int, Fraction], Fraction]] = []
            weights = {j: Fraction(1) for j in range(len(others))}
            rows.append(({**weights, scale: Fraction(-1)}, Fraction(0)))
            rows.append(({**{j: -w for j, w in weights.items()}, scale: Fraction(1)}, Fraction(0)))
            targets: list[tuple[str, dict[int, Fraction]]] = [("", {scale: Fraction(1)})]
            for v in self.names:
                for k in range(min(level[v], depth)):
                    f = forms.get((v, k), {})
                    if f:
                        rows.append((dict(f), Fraction(0)))
                        rows.append(({j: -c for j, c in f.items()}, Fraction(0)))
                if level[v] < depth:
                    f = forms[(v, level[v])]
                    rows.append(({j: -c for j, c in f.items()}, Fraction(0)))
                    targets.append((v, f))
            objective = {}
            for i, (_, f) in enumerate(targets):
                t = ncols + i
                rows.append(({t: Fraction(1), **{j: -c for j, c in f.items()}}, Fraction(0)))
                rows.append(({t: Fraction(1)}, Fraction(1)))
                objective[t] = Fraction(1)
            _, x = maximize(objective, rows, clock.tick)
            positive = {name for i, (name, _) in enumerate(targets) if x.get(ncols + i, 0) > 0}
            if "" not in positive:
                return False
            stuck = [v for v, _ in targets[1:] if v not in positive]
            if not stuck:
                return not strict or len(positive) > 1
            for v in stuck:
                level[v] += 1

    def forms(self, m: Mono, others: tuple[Mono, ...], depth: int) -> tuple[dict[tuple[str, int], dict[int, Fraction]], int]:
        """The linear forms (in λ, the scale s and the multipliers) of each (variable, level) of the certificate."""
        forms: dict[tuple[str, int], dict[int, Fraction]] = {}

        def add(v: str, k: int, column: int, c: Fraction) -> None:
            """forms[v, k][column] += c."""
            if c:
                f = forms.setdefault((v, k), {})
                f[column] = f.get(column, Fraction(0)) + c
                if not f[column]:
                    del f[column]

        for j, o in enumerate(others):
            for v, lev in o:
                for k, x in enumerate(lev):
                    add(v, k, j, x)
        scale = len(others)
        for v, lev in m:
            for k, x in enumerate(lev):
                add(v, k, scale, -x)
        column = scale + 1
        for r in self.relations:
            for sign in ((1, -1) if r.equality else (1,)):
                for v, c in r.coeffs:
                    add(v, 0, column, -sign * c)
                column += 1
        for k in range(1, depth):
            for a, b in self.below:
                add(b, k, column, Fraction(-1))
                add(a, k, column, Fraction(1))
                column += 1
        return forms, column

    def maximal(self, terms: Iterable[Mono], clock: _Clock) -> Order:
        """The terms that are not of lower order than the others: the order of their sum."""
        pool = sorted(set(terms))
        if len(pool) > MAX_TERMS:
            raise _TooManyTerms(len(pool))
        kept = [m for m in pool if not any(o != m and _covers(o, m, False) for o in pool)]
        for m in sorted(kept, key=_size_key):
            clock.tick()
            others = [o for o in kept if o != m]
            if self.dominated(m, others, False, clock):
                kept.remove(m)
        return frozenset(kept)


class _TooManyTerms(ArithmeticError):
    """An order with more than MAX_TERMS terms."""


def _size_key(m: Mono) -> tuple[object, ...]:
    """Smaller terms first: total exponents level by level, then the text."""
    depth = max([len(lev) for _, lev in m] + [0])
    totals = tuple(sum((_padded(lev, depth)[k] for _, lev in m), Fraction(0)) for k in range(depth))
    return (totals, m)


@lru_cache(maxsize=64)
def _sizes(variables: tuple[str, ...], relations: tuple[str, ...]) -> _Sizes:
    """The sizes `variables` (and the other names in `relations`) under `relations`."""
    extra = sorted({w for text in relations for w in _NAME.findall(text)} - set(variables) - set(_FUNCTION_WORDS))
    names = (*variables, *extra)
    parsed = []
    for text in relations:
        try:
            rel = _parse(text, names, "the relation", relations_allowed=True)
        except AnswerError as error:
            raise ValueError(f"invalid relation {text!r}: {error}") from None
        if isinstance(rel, sympy.Eq):
            op, lhs, rhs = "=", rel.lhs, rel.rhs
        elif isinstance(rel, tuple):
            op, lhs, rhs = rel
        else:
            raise ValueError(f"invalid relation {text!r}: write it as 'A <= B' or 'A = B'")
        small, big = (rhs, lhs) if op in (">=", "≥", ">") else (lhs, rhs)
        coeffs = _exponents(big, text)
        for v, c in _exponents(small, text).items():
            coeffs[v] = coeffs.get(v, Fraction(0)) - c
        parsed.append(_Relation(tuple(sorted((v, c) for v, c in coeffs.items() if c)), op in ("=", "==")))
    return _Sizes(names, tuple(parsed))


def _exponents(side: sympy.Expr, text: str) -> dict[str, Fraction]:
    """{variable: exponent} of a positive constant times a product of powers; ValueError otherwise."""
    out: dict[str, Fraction] = {}
    for factor in sympy.Mul.make_args(side):
        base, exp = factor.as_base_exp()
        if factor.is_number and factor.is_positive:
            continue
        if not (isinstance(base, sympy.Symbol) and isinstance(exp, sympy.Rational)):
            raise ValueError(f"invalid relation {text!r}: each side must be a product of powers of sizes")
        out[base.name] = out.get(base.name, Fraction(0)) + Fraction(int(exp.p), int(exp.q))
    return out


class _Orders:
    """Computes the Θ-order of a parsed expression, explaining anything it cannot compare."""

    def __init__(self, sizes: _Sizes, what: str, clock: _Clock) -> None:
        """Prepare for expressions in the `sizes`; messages name the answer `what`."""
        self.sizes, self.what, self.clock = sizes, what, clock
        self.symbols = tuple(sympy.Symbol(v, positive=True) for v in sizes.names)

    def fail(self, message: str) -> AnswerError:
        """An AnswerError whose sentence starts with the answer's name."""
        return AnswerError(f"{_cap(self.what)} {message}")

    def maximal(self, terms: Iterable[Mono]) -> Order:
        """The maximal terms, refusing an order with too many terms or too large exponents."""
        terms = list(terms)
        if any(_biggest(m) > MAX_POWER for m in terms):
            raise self.fail(f"has a term with an exponent larger than {MAX_POWER}, which is larger than I accept.")
        try:
            return self.sizes.maximal(terms, self.clock)
        except _TooManyTerms as error:
            raise self.fail(f"has more than {MAX_TERMS} terms ({error.args[0]}) once multiplied out; "
                            "please write it more simply.") from None

    def sign(self, c: sympy.Expr) -> int:
        """The sign (-1, 0, 1) of a constant."""
        if c == 0:
            return 0
        value = sympy.N(c, 30)
        if not value.is_real:
            raise self.fail(f"has the constant {_show(c)}, which is not a real number.")
        return 0 if value == 0 else (1 if value > 0 else -1)

    def of(self, expr: sympy.Expr) -> Order:
        """The order of a whole answer; one that subtracts is expanded and retried, so that terms can cancel."""
        try:
            return self.order(expr)
        except AnswerError as first:
            if not _has_subtraction(expr) or _expanded_size(expr) > MAX_EXPANDED_TERMS:
                raise
            expanded = sympy.expand(sympy.expand_log(expr, force=True))
            if expanded == expr:
                raise
            try:
                return self.order(expanded)
            except AnswerError:
                raise first from None

    def order(self, expr: sympy.Expr) -> Order:
        """The order of one sub-expression."""
        self.clock.tick()
        if expr.is_number:
            return self.constant(expr)
        if isinstance(expr, sympy.Symbol):
            return frozenset({((expr.name, (Fraction(1),)),)})
        if isinstance(expr, (sympy.Add, sympy.Max)):
            return self.sum(expr)
        if isinstance(expr, sympy.Mul):
            return self.product(expr)
        if isinstance(expr, sympy.Pow):
            return self.power(expr)
        if isinstance(expr, sympy.log):
            return self.log(expr)
        raise self.fail(f"contains {_show(expr)}, but I can only compare sums of products of powers "
                        "and logarithms of the variables.")

    def constant(self, expr: sympy.Expr) -> Order:
        """The order of a constant: Θ(1) when positive."""
        sign = self.sign(expr)
        if sign > 0:
            return frozenset({_ONE})
        if sign == 0:
            raise self.fail("is zero, but an order of growth must be positive.")
        raise self.fail(f"is negative ({_show(expr)}), but an order of growth must be positive.")

    def split(self, term: sympy.Expr) -> tuple[sympy.Expr, sympy.Expr]:
        """(constant factor, variable part) of a term."""
        return term.as_independent(*self.symbols, as_Add=False)

    def sum(self, expr: sympy.Expr) -> Order:
        """The order of a sum (or max): its maximal terms; subtracted terms must be strictly smaller."""
        groups: dict[sympy.Expr, sympy.Expr] = {}
        for term in expr.args:
            coeff, rest = self.split(term)
            groups[rest] = groups.get(rest, sympy.Integer(0)) + coeff
        positive: list[sympy.Expr] = []
        negative: list[sympy.Expr] = []
        for rest, coeff in groups.items():
            sign = self.sign(coeff)
            (positive if sign > 0 else negative if sign < 0 else []).append(rest)
        if not positive:
            what = "is zero" if not negative else f"is negative ({_show(expr)})"
            raise self.fail(f"{what}, but an order of growth must be positive.")
        order = self.maximal(m for rest in positive for m in self.order(rest))
        for rest in negative:
            for m in self.order(rest):
                if not self.sizes.dominated(m, sorted(order), True, self.clock):
                    raise self.fail(f"subtracts {_show(rest)}, which is not smaller than the rest, "
                                    "so I cannot tell that it stays positive.")
        return order

    def product(self, expr: sympy.Expr) -> Order:
        """The order of a product of a positive constant and factors."""
        coeff, rest = self.split(expr)
        if self.sign(coeff) <= 0:
            raise self.fail(f"has the term {_show(expr)}, which is not positive; an order of growth must be positive.")
        order: Order = frozenset({_ONE})
        for factor in sympy.Mul.make_args(rest):
            inner = self.order(factor)
            if len(order) * len(inner) > MAX_TERMS:
                raise self.fail(f"has more than {MAX_TERMS} terms once multiplied out; please write it more simply.")
            order = self.maximal(_times(a, b) for a in order for b in inner)
        return order

    def power(self, expr: sympy.Expr) -> Order:
        """The order of base**r for a rational constant r: (a + b)^r is Θ(a^r + b^r) for r > 0."""
        base, exp = expr.as_base_exp()
        if not exp.is_number:
            raise self.fail(f"has the variable exponent in {_show(expr)}; "
                            "I can only compare powers with constant exponents.")
        if not isinstance(exp, sympy.Rational):
            raise self.fail(f"has the exponent {_show(exp)}; please use a rational exponent such as 2 or 1/2.")
        r = Fraction(int(exp.p), int(exp.q))
        inner = self.order(base)
        if r < 0 and len(inner) > 1:
            raise self.fail(f"divides by {_show(base)}; I can only divide by a product of powers (like X*Y), "
                            "not by a sum.")
        return self.maximal(_raise_to(m, r) for m in inner)

    def log(self, expr: sympy.Expr) -> Order:
        """The order of log(x): for each of x's maximal terms and each variable in it, the
        logarithm one level below that variable's leading level (log J^2 log T ~ log J + log log T)."""
        (arg,) = expr.args
        inner = self.order(arg)
        atoms: set[Mono] = set()
        for m in inner:
            for v, lev in m:
                k, x = _leading(lev)
                if x < 0:
                    raise self.fail(f"takes {_show(expr)}, whose argument can shrink; "
                                    "I can only take logarithms of growing expressions.")
                atoms.add(((v, (Fraction(0),) * (k + 1) + (Fraction(1),)),))
        if not atoms:
            raise self.fail(f"takes {_show(expr)}, whose argument does not grow with the variables.")
        return self.maximal(atoms)


def _has_subtraction(expr: sympy.Basic) -> bool:
    """Whether some sum inside `expr` has a negative term."""
    for node in sympy.preorder_traversal(expr):
        if isinstance(node, sympy.Add) and any(t.as_coeff_Mul()[0].is_negative for t in node.args):
            return True
    return False


def _expanded_size(expr: sympy.Basic) -> int:
    """An upper estimate of the number of terms sympy.expand produces from `expr`."""
    if isinstance(expr, sympy.Add):
        return sum(_expanded_size(a) for a in expr.args)
    if isinstance(expr, sympy.Mul):
        return math.prod(_expanded_size(a) for a in expr.args)
    if isinstance(expr, sympy.Pow) and isinstance(expr.exp, sympy.Integer) and expr.exp > 0:
        n, k = int(expr.exp), _expanded_size(expr.base)
        return math.comb(n + k - 1, n) if k <= MAX_EXPANDED_TERMS and n <= MAX_EXPONENT else MAX_EXPANDED_TERMS + 1
    return max([1, *(_expanded_size(a) for a in expr.args)])


def _order(expr: sympy.Expr, sizes: _Sizes, what: str, clock: _Clock) -> Order:
    """The Θ-order of a parsed expression."""
    return _Orders(sizes, what, clock).of(expr)


# --------------------------------------------------------------------------- messages

def _render_levels(v: str, lev: Levels) -> list[str]:
    """The factors of one variable in a term: ['J^2', 'log(J)']."""
    out = []
    for k, x in enumerate(lev):
        if x:
            base = v
            for _ in range(k):
                base = f"log({base})"
            out.append(base if x == 1 else f"{base}^{x}" if x.denominator == 1 and x > 0 else f"{base}^({x})")
    return out


def _render_mono(m: Mono, variables: Sequence[str]) -> str:
    """A term as text, e.g. L*T^2*log(J): powers first, then logarithms, deeper logarithms last."""
    pairs = dict(m)
    names = [v for v in [*variables, *sorted(set(pairs) - set(variables))] if v in pairs]
    depth = max([len(lev) for lev in pairs.values()] + [0])
    factors = [f for k in range(depth) for v in names
               for f in _render_levels(v, tuple(Fraction(0) if i != k else x for i, x in enumerate(pairs[v])))]
    return "*".join(factors) or "1"


def _sort_key(m: Mono, variables: Sequence[str]) -> tuple[object, ...]:
    """Larger terms first (total exponents level by level), ties in the order of `variables`."""
    totals, _ = _size_key(m)
    order = {v: k for k, v in enumerate(variables)}
    by_variable = tuple(sorted((order.get(v, len(order)), tuple(-x for x in lev)) for v, lev in m))
    return (tuple(-x for x in totals), by_variable, str(m))  # type: ignore[operator]


def _render(order: Iterable[Mono], variables: Sequence[str]) -> str:
    """A sum of terms as text (at most MAX_SHOWN terms)."""
    terms = [_render_mono(m, variables) for m in sorted(order, key=lambda m: _sort_key(m, variables))]
    more = len(terms) - MAX_SHOWN
    return " + ".join(terms[:MAX_SHOWN]) + (f" + {more} more terms" if more > 0 else "")


def _join(words: Sequence[str], conj: str = "or") -> str:
    """'A', 'A or B', 'A, B or C'."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} {conj} {words[-1]}"


def _in_order(names: Iterable[str], variables: Sequence[str]) -> list[str]:
    """`names` in the order of `variables`."""
    order = {v: k for k, v in enumerate(variables)}
    return sorted(names, key=lambda v: (order.get(v, len(order)), v))


def _slowness(student: Order, missing: Sequence[Mono], variables: Sequence[str]) -> str:
    """Which variables the student's order grows too slowly in, without revealing the reference."""
    absent: set[str] = set()
    slow: set[str] = set()
    together: set[str] = set()
    for r in missing:
        beyond = [v for v, lev in r if all(_lex_cmp(lev, _levels(s, v)) > 0 for s in student)]
        for v in beyond:
            grows = any(_lex_cmp(_levels(s, v), ()) > 0 for s in student)
            (slow if grows else absent).add(v)
        if not beyond:
            together.update(v for v, lev in r if _lex_cmp(lev, ()) > 0)
    parts: list[str] = []
    if absent:
        parts.append(f"it does not grow with {_join(_in_order(absent, variables))}")
    if slow:
        parts.append(f"it grows too slowly in {_join(_in_order(slow, variables), 'and')}")
    if together and not parts:
        parts.append(f"it grows too slowly when {_join(_in_order(together, variables), 'and')} grow together")
    return " and ".join(parts) or "it grows too slowly"


def _fastness(too_big: Sequence[Mono], reference: Order, variables: Sequence[str]) -> str:
    """' in T' when the too-large terms grow faster than the expected order in particular variables."""
    fast = {v for s in too_big for v, lev in s if all(_lex_cmp(lev, _levels(r, v)) > 0 for r in reference)}
    return f" in {_join(_in_order(fast, variables), 'and')}" if fast else ""


def _compare(student: Order, reference: Order, sizes: _Sizes, variables: Sequence[str], clock: _Clock) -> Result:
    """The verdict on two orders, explained in terms of the student's order only."""
    shown = _render(student, variables)
    ref, mine = sorted(reference), sorted(student)
    too_big = sorted((s for s in student if not sizes.dominated(s, ref, False, clock)),
                     key=lambda m: _sort_key(m, variables))
    missing = [r for r in reference if not sizes.dominated(r, mine, False, clock)]
    if not too_big and not missing:
        return Result(True, f"Correct: your answer is Θ({shown}).")
    fast = ""
    if too_big:
        shown_terms = [_render_mono(m, variables) for m in too_big[:MAX_SHOWN]]
        if len(too_big) > MAX_SHOWN:
            shown_terms.append(f"{len(too_big) - MAX_SHOWN} more")
        terms = _join(shown_terms, "and")
        fast = (f"its term {terms} grows" if len(too_big) == 1 else f"its terms {terms} grow") + \
            " faster than the expected order" + _fastness(too_big, reference, variables)
    if too_big and missing:
        return Result(False, f"Your answer is Θ({shown}), which is not the expected order: {fast}, "
                             f"and {_slowness(student, missing, variables)}.")
    if too_big:
        return Result(False, f"Your answer is Θ({shown}), which is too large: {fast}.")
    return Result(False, f"Your answer is Θ({shown}), which is too small: {_slowness(student, missing, variables)}.")


# --------------------------------------------------------------------------- equations

MAX_EQUATION_DEGREE = 12   # total degree of an equation's polynomial form
MAX_EQUATION_TERMS = 40    # terms of an equation's polynomial form


def _zero_set(eq: sympy.Eq, what: str) -> frozenset[sympy.Poly] | None:
    """The factors (irreducible, normalised) of lhs - rhs that can vanish for positive variables;
    None when lhs - rhs is not a rational function of the variables."""
    difference = sympy.together(eq.lhs - eq.rhs)
    numerator, _ = sympy.fraction(difference)
    symbols = sorted(numerator.free_symbols, key=str)
    if not symbols:
        return frozenset() if numerator != 0 else None
    if not numerator.is_polynomial(*symbols):
        return None
    poly = sympy.Poly(numerator, *symbols)
    if poly.total_degree() > MAX_EQUATION_DEGREE or len(poly.terms()) > MAX_EQUATION_TERMS:
        raise AnswerError(f"{_cap(what)} is too complicated to compare; write it as a simpler equation.")
    _, factors = sympy.factor_list(poly)
    zero = set()
    for factor, _ in factors:
        coeffs = factor.coeffs()
        if len(coeffs) > 1 and not (all(c > 0 for c in coeffs) or all(c < 0 for c in coeffs)):
            zero.add(_normalised(factor))
    return frozenset(zero)


def _normalised(poly: sympy.Poly) -> sympy.Expr:
    """A polynomial up to a constant factor, as an expression (primitive, positive leading coefficient)."""
    _, prim = poly.primitive()
    if prim.LC() < 0:
        prim = -prim
    return prim.as_expr()


def _same_solutions(a: sympy.Expr, b: sympy.Expr) -> bool:
    """Whether a = 0 and b = 0 have the same positive solutions for some variable (small equations only)."""
    if sympy.count_ops(a) > 20:
        return False
    for v in sorted(b.free_symbols, key=str):
        try:
            sa, sb = sympy.solve(a, v), sympy.solve(b, v)
        except (NotImplementedError, ValueError, TypeError):
            continue
        if sb:
            return len(sa) == len(sb) and all(any(sympy.simplify(x - y) == 0 for y in sa) for x in sb)
    return False


def _check_equation(answer: object, reference: sympy.Eq, variables: Sequence[str]) -> Result:
    """Whether `answer` is an equation with the same positive solutions as `reference`."""
    student = _parse(answer, variables, "your answer")
    if not isinstance(student, sympy.Eq):
        return Result(False, "Your answer should be an equation, with '=' between two expressions.")
    ds = sympy.expand(student.lhs - student.rhs)
    if ds == 0:
        return Result(False, "Your equation holds for every value of the variables, so it states no condition.")
    if not ds.free_symbols:
        return Result(False, "Your equation never holds, whatever the values of the variables.")
    mine, expected = _zero_set(student, "your equation"), _zero_set(reference, "the reference")
    if mine is not None and expected is not None:
        same = mine == expected and bool(mine)
    else:
        same = _same_solutions(ds, sympy.expand(reference.lhs - reference.rhs))
    if same:
        return Result(True, "Correct: your equation is equivalent to the expected one.")
    return Result(False, f"Your equation {_show(student.lhs)} = {_show(student.rhs)} "
                         "is not equivalent to the expected one.")


# --------------------------------------------------------------------------- API

def parse_answer(answer: object, variables: Sequence[str], what: str = "your answer",
                 relations: Sequence[str] = ()) -> sympy.Expr | sympy.Eq:
    """Parse a student's answer string into sympy (positive symbols); raise AnswerError
    (one sentence) if it is malformed or uses a name not in `variables`.

    An expression must also be an order this module can compare (positive, a sum of
    products of powers and logarithms of the variables); an equation is only parsed.
    """
    expr = _parse(answer, variables, what)
    if isinstance(expr, sympy.Eq):
        return expr
    sizes = _sizes(_validate_variables(variables), tuple(relations))
    _order(expr, sizes, what, _Clock(TIME_BUDGET, what))  # type: ignore[arg-type]
    return expr  # type: ignore[return-value]


@lru_cache(maxsize=128)
def _reference(reference: str, variables: tuple[str, ...], relations: tuple[str, ...]) -> tuple[object, Order | None]:
    """The parsed reference and its order (None for an equation); ValueError if it is malformed."""
    try:
        ref = _parse(reference, variables, "the reference")
        if isinstance(ref, sympy.Eq):
            return ref, None
        return ref, _order(ref, _sizes(variables, relations), "the reference", _Clock(10 * TIME_BUDGET, "the reference"))  # type: ignore[arg-type]
    except AnswerError as error:
        raise ValueError(f"invalid reference answer {reference!r}: {error}") from None


def check_answer(answer: object, reference: str, variables: Sequence[str], relations: Sequence[str] = ()) -> Result:
    """Θ-equivalence of `answer` with `reference` in the named variables, under the
    `relations` between the sizes (such as "K <= J"); equation equivalence when the
    reference contains '='.

    Never raises for a student's answer: a malformed one gives Result(False, sentence).
    A malformed reference, variable list or relation is the course's bug and raises ValueError.
    """
    names = _validate_variables(variables)
    rels = tuple(relations)
    ref, ref_order = _reference(reference, names, rels)
    sizes = _sizes(names, rels)
    try:
        if ref_order is None:
            return _check_equation(answer, ref, names)  # type: ignore[arg-type]
        student = _parse(answer, names, "your answer")
        if isinstance(student, sympy.Eq):
            return Result(False, "Your answer is an equation, but this question asks for an order of growth, "
                                 "without '='.")
        clock = _Clock(TIME_BUDGET, "your answer")
        return _compare(_order(student, sizes, "your answer", clock), ref_order, sizes, names, clock)  # type: ignore[arg-type]
    except AnswerError as error:
        return Result(False, str(error))
    except (RecursionError, MemoryError, ArithmeticError, TypeError, ValueError, AttributeError):
        return Result(False, "I could not read your answer; please write it more simply.")
