r"""The answer language: a `lark` grammar, and the translation of its parse trees into sympy.

`parse` reads a student's answer (a string such as ``"N*(X + Y)^2"`` or ``r"\frac{X}{2}"``)
into a sympy expression, an unevaluated `sympy.Eq` for an equation, or a tuple
(op, lhs, rhs) for an inequality in a question's relations. Nothing is ever evaluated as
Python: the LALR parser of `GRAMMAR` builds a tree, and `_ToSympy` turns it into sympy one
node at a time, knowing only the named variables and the functions log, ln, lg, log2,
log10, sqrt, max, O and Θ. Every refusal is an `AnswerError` whose text is one sentence
for the student. The public face of all this is `attnlab.symbolic`.
"""
from __future__ import annotations

import contextvars
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

import sympy
from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken, VisitError
from lark.lark import PostLex
from lark.visitors import Transformer_NonRecursive

from attnlab import _lexicon as lex
from attnlab._lexicon import MAX_DEPTH, cap  # noqa: F401  (cap: re-exported for attnlab._growth)
from attnlab._lexicon import ORDER_MAX_CONSTANT_DIGITS as MAX_CONSTANT_DIGITS
from attnlab._lexicon import ORDER_MAX_DIGITS as MAX_DIGITS
from attnlab._lexicon import ORDER_MAX_EXPONENT as MAX_EXPONENT
from attnlab._lexicon import ORDER_MAX_LENGTH as MAX_LENGTH


class AnswerError(ValueError):
    """A malformed answer; str(error) is one sentence for the student."""


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
frac: FRAC numerator denominator       // \frac12 is \frac{1}{2}: one character per part
?numerator: LBRACE sum RBRACE           -> group
    | FRAC_CHAR
?denominator: LBRACE sum RBRACE         -> group
    | FRAC_CHAR

// VAR, FUNC (split from WORD and WRAPPED), GVAR and GNUM (a name or number written
// right after another, as in 2XY) come from the names post-lexer.
%declare VAR GVAR GNUM FUNC

NUMBER: /\d+(\.\d*)?|\.\d+/
VULGAR: %VULGAR%
WORD: /[A-Za-z][A-Za-z0-9]*/
WRAPPED.3: %WRAPPERS% /\s*/ WRAPPED_NAME
WRAPPED_NAME: /(\{\s*[A-Za-z][A-Za-z0-9]*\s*\}|[A-Za-z])/
FUNC_LATEX.3: %FUNC_LATEX% | "Θ" | "𝒪"
ROOT.3: %ROOT%
FRAC.3: %FRAC%
FRAC_CHAR.4: /[0-9A-Za-z]/
LATEX_UNKNOWN.2: /\\[A-Za-z]+/
PLUS: "+"
MINUS: %MINUS%
TIMES.3: %TIMES%
DIVIDE.3: %DIVIDE%
POW.4: %POW%
SUPERSCRIPT: %SUPERSCRIPT%
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
SPACE.3: /\s+/ | %SPACES%
SIZING.3: %SIZING%
%ignore SPACE
%ignore SIZING
"""


def _strings(items) -> str:
    """A lark alternative of literal strings."""
    return " | ".join('"' + item.replace("\\", "\\\\").replace('"', '\\"') + '"' for item in items)


def _regex(pattern: str) -> str:
    """A lark regex literal."""
    return "/" + pattern.replace("/", "\\/") + "/"


# The operators and commands come from the languages' one lexicon (attnlab._lexicon).
GRAMMAR = (GRAMMAR
           .replace("%VULGAR%", _strings(lex.VULGAR))
           .replace("%WRAPPERS%", _regex(lex.latex(lex.WRAPPERS)))
           .replace("%FUNC_LATEX%", _regex(lex.latex(lex.ORDER_LATEX_FUNCTIONS)))
           .replace("%ROOT%", " | ".join([_regex(lex.latex(lex.ROOT["latex"])), _strings(lex.ROOT["symbols"])]))
           .replace("%FRAC%", _regex(lex.latex(lex.FRACTION)))
           .replace("%MINUS%", _strings(lex.MINUS["symbols"]))
           .replace("%TIMES%", " | ".join([_strings(lex.TIMES["symbols"]), _regex(lex.latex(lex.TIMES["latex"]))]))
           .replace("%DIVIDE%", " | ".join([_strings(lex.DIVIDE["symbols"]), _regex(lex.latex(lex.DIVIDE["latex"]))]))
           .replace("%POW%", _strings(lex.POWER))
           .replace("%SUPERSCRIPT%", _strings(lex.SUPERSCRIPTS))
           .replace("%SPACES%", _regex(lex.symbols(lex.SPACES)))
           .replace("%SIZING%", _regex(lex.latex(lex.SIZING) + r"\s*\.?")))

FUNCTION_WORDS: dict[str, str] = lex.ORDER_FUNCTIONS
_LATEX_FUNCTIONS: dict[str, str] = {
    **{"\\" + name: lex.ORDER_FUNCTIONS[name] for name in lex.ORDER_LATEX_FUNCTIONS}, "Θ": "O", "𝒪": "O",
}
_KNOWN_FUNCTIONS = "log, ln, log2, sqrt, max and O( )"
_VULGAR = lex.VULGAR
_SUPERSCRIPTS = lex.SUPERSCRIPTS
NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_LETTERS = re.compile(r"[A-Za-z]+")
_WRAPPED_NAME = re.compile(r"\{\s*([A-Za-z][A-Za-z0-9]*)\s*\}|([A-Za-z])\Z")
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
        return AnswerError(f"{cap(self.what)} {message}")


_JOB: contextvars.ContextVar[_Job] = contextvars.ContextVar("attnlab_symbolic_job")


class _Names(PostLex):
    """Post-lexer: splits runs of letters into variables and functions (XY -> X Y, logN -> log N)
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
    known = set(variables) | set(FUNCTION_WORDS)
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
            while i < len(kinds) and kinds[i] not in ("POW", "SUB"):
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
        self.symbols = symbols(job.variables)

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
            raise self.job.fail(f"has the exponent {show(exponent)} {_at(token)}; "
                                "I can only compare powers with constant exponents.")
        if exponent.is_real is False or exponent.has(sympy.I):
            raise self.job.fail(f"has an exponent {_at(token)} that is not a real number.")
        size = abs(sympy.N(exponent, 15))
        if not size.is_finite or size > MAX_EXPONENT:
            raise self.job.fail(f"has the exponent {show(exponent)} {_at(token)}, which is larger than I accept.")
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
        name = FUNCTION_WORDS.get(str(func)) or _LATEX_FUNCTIONS[str(func)]
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


def show(expr: sympy.Basic) -> str:
    """A short readable form of a sympy expression, with ^ for powers."""
    text = str(expr).replace("**", "^")
    return text if len(text) <= 60 else text[:57] + "..."


def symbols(variables: Sequence[str]) -> dict[str, sympy.Symbol]:
    """Positive sympy symbols for the variable names."""
    return {name: sympy.Symbol(name, positive=True) for name in variables}


def validate_variables(variables: Sequence[str]) -> tuple[str, ...]:
    """The variable names as a tuple; ValueError if one is not a plain name."""
    names = tuple(variables)
    for name in names:
        if not isinstance(name, str) or not NAME.fullmatch(name) or name in FUNCTION_WORDS:
            raise ValueError(f"invalid variable name {name!r}: use letters and digits, not a function name")
    return names


def _as_text(answer: object, what: str) -> str:
    """The answer as a plain string: a str (a subclass is copied as a plain str, so its own methods never
    run), or a small sympy expression or equation written out."""
    if isinstance(answer, str):
        return str.__str__(answer)
    if isinstance(answer, sympy.Basic):
        nodes = 0
        for _ in sympy.preorder_traversal(answer):
            nodes += 1
            if nodes > MAX_LENGTH:
                raise AnswerError(f"{cap(what)} is too large; please write it in under {MAX_LENGTH} characters.")
        if isinstance(answer, sympy.Eq):
            return f"{answer.lhs} = {answer.rhs}"
        if isinstance(answer, sympy.Expr):
            return str(answer)
    if not isinstance(answer, str):
        name = type(answer).__name__
        kind = "None" if answer is None else f"{'an' if name[:1] in 'aeiou' else 'a'} {name}"
        raise AnswerError(f"{cap(what)} should be a string such as \"2*T\", but it is {kind}.")
    return answer


def parse(answer: object, variables: Sequence[str], what: str, relations_allowed: bool = False) -> object:
    """Parse `answer` into sympy without judging its order; AnswerError (one sentence) if malformed."""
    names = validate_variables(variables)
    text = _as_text(answer, what)
    if not text.strip():
        raise AnswerError(f"{cap(what)} is empty: write an expression in {', '.join(names)}.")
    if len(text) > MAX_LENGTH:
        raise AnswerError(f"{cap(what)} is {len(text)} characters long; please write it in under {MAX_LENGTH}.")
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
        raise AnswerError(f"{cap(what)} is undefined: it divides by zero "
                          "or takes the logarithm of a number that is not positive.")
    return expr


_parser()  # built at import, so that a grading worker forks children that already have it
