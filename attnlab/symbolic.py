"""Check a student's symbolic answer: an order of growth (Θ) or an equation.

Answers are strings written the way people write maths, in Python or in LaTeX:
``"L*(J + K + T)"``, ``"O(L(J+K+T))"``, ``"L \\log T"``, ``"\\frac{J}{2}"``,
``"K = J/2"``. Nothing is ever evaluated as Python: a small tokenizer and a
recursive-descent parser build the sympy expression directly, and only the named
variables and the functions log, ln, lg, log2, log10, sqrt, max, O and Θ are known.

The sizes (the variables) all grow to infinity independently. An expression's order
is the set of its maximal terms: each term is a product of powers of the variables
and of powers of their logarithms, and a term is dropped when another term is at
least as large in every variable (compared as the pair (power, log-power)). Two
expressions are Θ-equivalent when their sets of maximal terms are equal, so constant
factors and lower-order terms are ignored. Known limitation: a term that is only
bounded by a *combination* of other terms (J*K <= J^2 + K^2) is not recognised as
lower order.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import NamedTuple

import sympy

__all__ = ["AnswerError", "Result", "check_answer", "parse_answer"]

MAX_LENGTH = 400          # characters in an answer
MAX_DEPTH = 40            # nested brackets and function calls
MAX_EXPONENT = 100        # |exponent| written in an answer
MAX_EXPANDED_TERMS = 2000  # terms an answer with a subtraction may expand to
MAX_SHOWN = 4             # terms named in a message


@dataclass(frozen=True)
class Result:
    """The verdict on one answer: `ok`, and one sentence for the student."""

    ok: bool
    message: str


class AnswerError(ValueError):
    """A malformed answer; str(error) is one sentence for the student."""


# --------------------------------------------------------------------------- tokens

class _Token(NamedTuple):
    """One lexical token: kind, value, and its 0-based position in the answer."""

    kind: str      # num var func op open close comma sub frac
    value: object
    pos: int
    text: str


_FUNCTION_WORDS: dict[str, str] = {
    "log": "log", "ln": "log", "lg": "log2", "log2": "log2", "log10": "log10",
    "sqrt": "sqrt", "O": "O", "Theta": "O", "max": "max", "Max": "max",
}
_LATEX_FUNCTIONS: dict[str, str] = {
    "log": "log", "ln": "log", "lg": "log2", "sqrt": "sqrt\\", "max": "max", "Theta": "O",
}
_LATEX_OPS: dict[str, str] = {"cdot": "*", "times": "*", "ast": "*", "div": "/"}
_LATEX_IGNORED = frozenset({
    "left", "right", "big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr",
    "biggl", "biggr", "quad", "qquad", "displaystyle", "limits", "middle",
})
_LATEX_WRAPPERS = frozenset({
    "mathcal", "mathrm", "operatorname", "mathit", "mathbf", "mathsf", "text", "textrm",
})
_LATEX_FRACS = frozenset({"frac", "dfrac", "tfrac"})
_UNICODE: dict[str, tuple[tuple[str, object], ...]] = {
    "·": (("op", "*"),), "⋅": (("op", "*"),), "×": (("op", "*"),), "∙": (("op", "*"),),
    "∗": (("op", "*"),), "−": (("op", "-"),), "–": (("op", "-"),), "÷": (("op", "/"),),
    "Θ": (("func", "O"),), "𝒪": (("func", "O"),), "√": (("func", "sqrt"),),
    "²": (("op", "^"), ("num", 2)), "³": (("op", "^"), ("num", 3)),
}
_SIMPLE_OPS: dict[str, str] = {"+": "+", "-": "-", "*": "*", "/": "/", "^": "^", "=": "="}
_OPENERS = {"(": ")", "[": "]", "{": "}"}
_DIGITS = "0123456789"  # not str.isdigit(), which accepts '²'
_NUMBER = re.compile(r"\d+(?:\.\d*)?|\.\d+")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_LETTERS = re.compile(r"[A-Za-z]+")
_KNOWN_FUNCTIONS = "log, ln, log2, sqrt, max and O( )"


def _is_digit(ch: str) -> bool:
    """Whether `ch` is one ASCII digit."""
    return len(ch) == 1 and ch in _DIGITS


def _cap(what: str) -> str:
    """`what` with its first letter capitalised, to start a sentence."""
    return what[:1].upper() + what[1:]


def _names(variables: Sequence[str]) -> str:
    """The allowed names as 'L, T, H' for a message."""
    return ", ".join(variables)


class _Tokenizer:
    """Turns an answer string into tokens, rejecting anything that is not a formula."""

    def __init__(self, text: str, variables: Sequence[str], what: str) -> None:
        """Prepare to tokenize `text` with the allowed `variables`."""
        self.text, self.variables, self.what = text, tuple(variables), what
        self.known = set(self.variables) | set(_FUNCTION_WORDS)
        self.tokens: list[_Token] = []

    def fail(self, message: str) -> AnswerError:
        """An AnswerError whose sentence starts with the answer's name."""
        return AnswerError(f"{_cap(self.what)} {message}")

    def run(self) -> list[_Token]:
        """Tokenize the whole text."""
        i = 0
        while i < len(self.text):
            i = self.step(i)
        return self.tokens

    def add(self, kind: str, value: object, pos: int, text: str) -> None:
        """Append one token."""
        self.tokens.append(_Token(kind, value, pos, text))

    def step(self, i: int) -> int:
        """Read the token at position `i`; return the next position."""
        ch = self.text[i]
        if ch.isspace() or ch == "$":
            return i + 1
        if _is_digit(ch) or (ch == "." and _is_digit(self.text[i + 1: i + 2])):
            return self.number(i)
        if ch.isascii() and ch.isalpha():
            end = _WORD.match(self.text, i).end()  # type: ignore[union-attr]  # ch is an ASCII letter
            self.word(self.text[i:end], i)
            return end
        if ch == "\\":
            return self.latex(i)
        if ch == "*" and self.text[i + 1: i + 2] == "*":
            self.add("op", "^", i, "**")
            return i + 2
        if ch == "=" and self.text[i + 1: i + 2] == "=":
            self.add("op", "=", i, "==")
            return i + 2
        if ch in _SIMPLE_OPS:
            self.add("op", _SIMPLE_OPS[ch], i, ch)
        elif ch in _OPENERS:
            self.add("open", ch, i, ch)
        elif ch in ")]}":
            self.add("close", ch, i, ch)
        elif ch == ",":
            self.add("comma", ch, i, ch)
        elif ch == "_":
            prev = self.tokens[-1] if self.tokens else None
            if prev is None or prev.kind != "func" or prev.value != "log" or prev.pos + len(prev.text) != i:
                raise self.fail(f"contains '_' at character {i + 1}, which I only accept right after log, "
                                "as in log_2(T).")
            self.add("sub", ch, i, ch)
        elif ch in _UNICODE:
            for kind, value in _UNICODE[ch]:
                self.add(kind, sympy.Integer(value) if kind == "num" else value, i, ch)
        else:
            raise self.fail(f"contains {ch!r} at character {i + 1}, which is not part of a formula I can read.")
        return i + 1

    def number(self, i: int) -> int:
        """Read a decimal number as an exact rational."""
        match = _NUMBER.match(self.text, i)
        if match is None:
            raise self.fail(f"has an unreadable number at character {i + 1}.")
        digits = match.group()
        if len(digits) > 20:
            raise self.fail(f"has a number with {len(digits)} digits at character {i + 1}; "
                            "constants do not matter here.")
        value = Fraction(digits.rstrip(".") or "0")
        self.add("num", sympy.Rational(value.numerator, value.denominator), i, digits)
        return match.end()

    def word(self, word: str, pos: int) -> None:
        """Read a run of letters: a variable, a function, or several of them written together."""
        pieces = self.split(word)
        if pieces is None:
            raise self.fail(self.unknown_name(word, pos))
        offset = pos
        for piece in pieces:
            if piece in self.variables:
                self.add("var", piece, offset, piece)
            else:
                self.add("func", _FUNCTION_WORDS[piece], offset, piece)
            offset += len(piece)

    def split(self, word: str) -> list[str] | None:
        """Split `word` into known names (variables first), e.g. 'LT' -> ['L', 'T']; None if impossible."""
        if word in self.variables or word in _FUNCTION_WORDS:
            return [word]
        memo: dict[int, list[str] | None] = {}

        def from_(start: int) -> list[str] | None:
            """A split of word[start:], longest pieces first."""
            if start == len(word):
                return []
            if start not in memo:
                memo[start] = None
                for end in range(len(word), start, -1):
                    head = word[start:end]
                    if head in self.known and (rest := from_(end)) is not None:
                        memo[start] = [head, *rest]
                        break
            return memo[start]

        return from_(0)

    def unknown_name(self, word: str, pos: int) -> str:
        """The sentence (after the answer's name) for an unknown name."""
        allowed = _names(self.variables)
        verb = "is" if len(self.variables) == 1 else "are"
        after = self.text[pos + len(word):].lstrip()
        if after.startswith("("):
            return f"uses the function {word!r}, but I only know {_KNOWN_FUNCTIONS}."
        hint = ""
        for other in (word.upper(), word.lower()):
            if other != word and other in self.variables:
                hint = f" (names are case-sensitive: did you mean {other!r}?)"
                break
        return f"uses {word!r}, but only {allowed} {verb} allowed{hint}."

    def latex(self, i: int) -> int:
        """Read a LaTeX command such as \\log, \\cdot, \\frac, \\left or \\,."""
        match = _LETTERS.match(self.text, i + 1)
        if match is None:
            nxt = self.text[i + 1: i + 2]
            if nxt in ",;:! " or nxt == "":
                return i + 2
            if nxt in "{}":
                self.add("open" if nxt == "{" else "close", "(" if nxt == "{" else ")", i, "\\" + nxt)
                return i + 2
            raise self.fail(f"contains '\\{nxt}' at character {i + 1}, which I cannot read.")
        name, end = match.group(), match.end()
        if name in _LATEX_IGNORED:
            rest = self.text[end:].lstrip()
            return end + (len(self.text[end:]) - len(rest)) + (1 if rest.startswith(".") else 0)
        if name in _LATEX_OPS:
            self.add("op", _LATEX_OPS[name], i, "\\" + name)
        elif name in _LATEX_FUNCTIONS:
            self.add("func", _LATEX_FUNCTIONS[name], i, "\\" + name)
        elif name in _LATEX_FRACS:
            self.add("frac", name, i, "\\" + name)
        elif name in _LATEX_WRAPPERS:
            return self.wrapped(end)
        else:
            raise self.fail(f"uses the LaTeX command '\\{name}', which I do not know here.")
        return end

    def wrapped(self, i: int) -> int:
        """Read the name inside \\mathcal{O}, \\operatorname{log}, \\mathrm T and the like."""
        while i < len(self.text) and self.text[i].isspace():
            i += 1
        if self.text[i: i + 1] == "{":
            close = self.text.find("}", i)
            if close < 0:
                raise self.fail(f"has a '{{' at character {i + 1} that is never closed.")
            inner = self.text[i + 1: close].strip()
            if not _WORD.fullmatch(inner):
                raise self.fail(f"has {{{inner}}} at character {i + 1}, where I expected a name.")
            self.word(inner, i + 1)
            return close + 1
        match = _WORD.match(self.text, i)
        if match is None:
            raise self.fail(f"has a LaTeX font command at character {i + 1} without a name after it.")
        self.word(match.group()[0], i)
        return i + 1


def _check_brackets(tokens: Sequence[_Token], what: str) -> None:
    """Raise AnswerError for an unclosed, unopened or mismatched bracket."""
    stack: list[_Token] = []
    for tok in tokens:
        if tok.kind == "open":
            stack.append(tok)
            if len(stack) > MAX_DEPTH:
                raise AnswerError(f"{_cap(what)} nests brackets more than {MAX_DEPTH} deep.")
        elif tok.kind == "close":
            if not stack:
                raise AnswerError(f"{_cap(what)} has a {tok.text!r} at character {tok.pos + 1} "
                                  "without a matching opening bracket.")
            opener = stack.pop()
            if _OPENERS[str(opener.value)] != tok.value:
                raise AnswerError(f"{_cap(what)} closes the {opener.text!r} at character {opener.pos + 1} "
                                  f"with a {tok.text!r} at character {tok.pos + 1}.")
    if stack:
        tok = stack[-1]
        raise AnswerError(f"{_cap(what)} has a {tok.text!r} at character {tok.pos + 1} that is never closed.")


# --------------------------------------------------------------------------- parser

class _Parser:
    """Recursive-descent parser from tokens to a sympy expression or equation."""

    def __init__(self, tokens: list[_Token], symbols: dict[str, sympy.Symbol], what: str) -> None:
        """Prepare to parse `tokens`; variable names map to `symbols`."""
        self.tokens, self.symbols, self.what = tokens, symbols, what
        self.i = 0
        self.depth = 0

    def fail(self, message: str) -> AnswerError:
        """An AnswerError whose sentence starts with the answer's name."""
        return AnswerError(f"{_cap(self.what)} {message}")

    def peek(self) -> _Token | None:
        """The next token, or None at the end."""
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> _Token:
        """Consume and return the next token; fail at the end."""
        tok = self.peek()
        if tok is None:
            last = self.tokens[-1].text if self.tokens else ""
            raise self.fail(f"ends too early: something is missing after {last!r}.")
        self.i += 1
        return tok

    def at_op(self, *ops: str) -> bool:
        """Whether the next token is one of the operators `ops`."""
        tok = self.peek()
        return tok is not None and tok.kind == "op" and tok.value in ops

    def unexpected(self, tok: _Token) -> AnswerError:
        """The error for a token that cannot come here."""
        if tok.kind == "sub":
            return self.fail(f"contains '_' at character {tok.pos + 1}, which I only accept right after log, "
                             "as in log_2(T).")
        if tok.kind == "comma":
            return self.fail(f"has a ',' at character {tok.pos + 1}, "
                             "which I only accept between the arguments of max( ) or log( ).")
        return self.fail(f"has an unexpected {tok.text!r} at character {tok.pos + 1}.")

    def parse(self) -> sympy.Expr | sympy.Eq:
        """Parse the whole answer: an expression, or an equation with one '='."""
        if not self.tokens:
            raise self.fail("is empty: write an expression in the allowed variables.")
        lhs = self.sum()
        if not self.at_op("="):
            self.expect_end()
            return lhs
        self.take()
        rhs = self.sum()
        if self.at_op("="):
            raise self.fail("has more than one '='; write a single equation such as A = B.")
        self.expect_end()
        return sympy.Eq(lhs, rhs, evaluate=False)

    def expect_end(self) -> None:
        """Fail unless every token was used."""
        tok = self.peek()
        if tok is not None:
            raise self.unexpected(tok)

    def sum(self) -> sympy.Expr:
        """sum := ['+'|'-'] product (('+'|'-') product)*"""
        expr = self.unary()
        while self.at_op("+", "-"):
            op = self.take().value
            term = self.unary()
            expr = expr + term if op == "+" else expr - term
        return expr

    def unary(self) -> sympy.Expr:
        """A product, optionally preceded by signs."""
        if self.at_op("-"):
            self.take()
            return -self.unary()
        if self.at_op("+"):
            self.take()
            return self.unary()
        return self.product()

    def product(self) -> sympy.Expr:
        """product := power (('*' | '/' | nothing) power)*, with signs allowed after * and /."""
        expr = self.power()
        while True:
            tok = self.peek()
            if tok is None:
                return expr
            if tok.kind == "op" and tok.value in ("*", "/"):
                self.take()
                factor = self.signed_power()
                if tok.value == "*":
                    expr = expr * factor
                elif factor == 0:
                    raise self.fail(f"divides by zero at character {tok.pos + 1}.")
                else:
                    expr = expr / factor
            elif self.starts_atom(tok):
                expr = expr * self.power()
            else:
                return expr

    def signed_power(self) -> sympy.Expr:
        """A power with optional leading signs, as in J*-K."""
        if self.at_op("-"):
            self.take()
            return -self.signed_power()
        if self.at_op("+"):
            self.take()
            return self.signed_power()
        return self.power()

    @staticmethod
    def starts_atom(tok: _Token) -> bool:
        """Whether `tok` can begin a factor (for implicit multiplication)."""
        return tok.kind in ("num", "var", "func", "open", "frac")

    def power(self) -> sympy.Expr:
        """power := atom ['^' exponent], right-associative."""
        base = self.atom()
        if self.at_op("^"):
            tok = self.take()
            return self.make_power(base, self.exponent(), tok)
        return base

    def exponent(self) -> sympy.Expr:
        """An exponent: a power with optional leading signs."""
        if self.at_op("-"):
            self.take()
            return -self.exponent()
        if self.at_op("+"):
            self.take()
            return self.exponent()
        return self.power()

    def make_power(self, base: sympy.Expr, exp: sympy.Expr, tok: _Token) -> sympy.Expr:
        """base**exp, refusing huge exponents and division by zero."""
        if not exp.is_number:
            raise self.fail(f"has the exponent {_show(exp)} at character {tok.pos + 1}; "
                            "I can only compare powers with constant exponents.")
        if exp.is_real is False:
            raise self.fail(f"has an exponent at character {tok.pos + 1} that is not a real number.")
        if exp.is_finite and abs(sympy.N(exp)) > MAX_EXPONENT:
            raise self.fail(f"has the exponent {_show(exp)} at character {tok.pos + 1}, which is larger than I accept.")
        if base == 0 and exp.is_negative:
            raise self.fail(f"divides by zero at character {tok.pos + 1}.")
        return base ** exp

    def atom(self) -> sympy.Expr:
        """atom := number | variable | bracketed sum | function call | \\frac{a}{b}"""
        tok = self.take()
        if tok.kind == "num":
            return tok.value  # type: ignore[return-value]
        if tok.kind == "var":
            return self.symbols[str(tok.value)]
        if tok.kind == "open":
            return self.group(tok)
        if tok.kind == "func":
            return self.call(tok)
        if tok.kind == "frac":
            num, den = self.frac_part(), self.frac_part()
            if den == 0:
                raise self.fail(f"divides by zero in the \\frac at character {tok.pos + 1}.")
            return num / den
        if tok.kind == "op" and tok.value in ("+", "-", "*", "/", "^", "="):
            raise self.fail(f"has {tok.text!r} at character {tok.pos + 1} where I expected a term.")
        raise self.unexpected(tok)

    def group(self, opener: _Token) -> sympy.Expr:
        """The inside of a bracket pair (the opener is already taken)."""
        args = self.arguments(opener)
        if len(args) != 1:
            raise self.fail(f"has a ',' inside the {opener.text!r} at character {opener.pos + 1}, "
                            "which I only accept between the arguments of max( ) or log( ).")
        return args[0]

    def arguments(self, opener: _Token) -> list[sympy.Expr]:
        """Comma-separated sums up to the closing bracket (the opener is already taken)."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"nests brackets and functions more than {MAX_DEPTH} deep.")
        tok = self.peek()
        if tok is not None and tok.kind == "close":
            raise self.fail(f"has empty brackets at character {opener.pos + 1}.")
        args = [self.sum()]
        while (tok := self.peek()) is not None and tok.kind == "comma":
            self.take()
            args.append(self.sum())
        tok = self.take()
        if tok.kind != "close":
            raise self.unexpected(tok)
        self.depth -= 1
        return args

    def frac_part(self) -> sympy.Expr:
        """One argument of \\frac: a braced group or a single atom."""
        tok = self.peek()
        if tok is None:
            raise self.fail("ends inside a \\frac, which needs two parts: \\frac{a}{b}.")
        return self.atom()

    def call(self, func: _Token) -> sympy.Expr:
        """A function applied to a bracketed argument list or to the following power (log J^2)."""
        name = str(func.value)
        base: sympy.Expr | None = None
        outer: sympy.Expr | None = None
        if (tok := self.peek()) is not None and tok.kind == "sub":
            if name != "log":
                raise self.unexpected(tok)
            self.take()
            base = self.atom()
        if self.at_op("^") and name in ("log", "log2", "log10"):
            tok = self.take()
            outer = self.exponent_atom(tok)
        index: sympy.Expr | None = None
        if name == "sqrt\\" and (tok := self.peek()) is not None and tok.kind == "open" and tok.value == "[":
            index = self.group(self.take())
        args = self.call_arguments(func)
        value = self.apply(func, name, args, base, index)
        if outer is not None:
            value = self.make_power(value, outer, func)
        return value

    def exponent_atom(self, tok: _Token) -> sympy.Expr:
        """The exponent in log^2 T: a signed atom."""
        if self.at_op("-"):
            self.take()
            return -self.exponent_atom(tok)
        return self.atom()

    def call_arguments(self, func: _Token) -> list[sympy.Expr]:
        """A function's arguments: (a, b) or {a}, else the single following power."""
        tok = self.peek()
        if tok is None or not self.starts_atom(tok):
            raise self.fail(f"has {func.text!r} at character {func.pos + 1} without something to apply it to.")
        if tok.kind == "open" and tok.value in ("(", "["):
            return self.arguments(self.take())
        return [self.bare_argument()]

    def bare_argument(self) -> sympy.Expr:
        """The argument of a function written without brackets: the next power, and any
        names or numbers written right against it (log J K is log(J)*K, but log JK is log(JK))."""
        arg = self.power()
        while (tok := self.peek()) is not None and tok.kind in ("var", "num"):
            prev = self.tokens[self.i - 1]
            if tok.pos != prev.pos + len(prev.text):
                break
            arg = arg * self.power()
        return arg

    def apply(self, func: _Token, name: str, args: list[sympy.Expr],
              base: sympy.Expr | None, index: sympy.Expr | None) -> sympy.Expr:
        """The value of function `name` on `args`."""
        if name == "max":
            if any(a.is_real is False for a in args):
                raise self.fail(f"takes max( ) at character {func.pos + 1} of something that is not a real number.")
            return sympy.Max(*args, evaluate=False)
        if name == "log" and len(args) == 2 and base is None:
            args, base = args[:1], args[1]
        if len(args) != 1:
            raise self.fail(f"gives {func.text!r} at character {func.pos + 1} {len(args)} arguments, but it takes one.")
        arg = args[0]
        if name == "O":
            return arg
        if name in ("sqrt", "sqrt\\"):
            return arg ** (sympy.Rational(1, 2) if index is None else 1 / index)
        if name in ("log2", "log10"):
            base = sympy.Integer(2 if name == "log2" else 10)
        if _not_positive(arg) or (base is not None and (_not_positive(base) or base == 1)):
            raise self.fail(f"takes a logarithm at character {func.pos + 1} that is undefined.")
        return sympy.log(arg) if base is None else sympy.log(arg) / sympy.log(base)


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
        if not isinstance(name, str) or not _WORD.fullmatch(name) or name in _FUNCTION_WORDS:
            raise ValueError(f"invalid variable name {name!r}: use letters and digits, not a function name")
    return names


def _parse(answer: object, variables: Sequence[str], what: str) -> sympy.Expr | sympy.Eq:
    """Parse `answer` into sympy without judging its order; AnswerError if malformed."""
    names = _validate_variables(variables)
    if isinstance(answer, sympy.Eq):
        answer = f"{answer.lhs} = {answer.rhs}"
    elif isinstance(answer, sympy.Expr):
        answer = str(answer)
    if not isinstance(answer, str):
        name = type(answer).__name__
        kind = "None" if answer is None else f"{'an' if name[:1] in 'aeiou' else 'a'} {name}"
        raise AnswerError(f"{_cap(what)} should be a string such as \"2*T\", but it is {kind}.")
    if not answer.strip():
        raise AnswerError(f"{_cap(what)} is empty: write an expression in {_names(names)}.")
    if len(answer) > MAX_LENGTH:
        raise AnswerError(f"{_cap(what)} is {len(answer)} characters long; please write it in under {MAX_LENGTH}.")
    tokens = _Tokenizer(answer, names, what).run()
    _check_brackets(tokens, what)
    expr = _Parser(tokens, _symbols(names), what).parse()
    if expr.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo, sympy.I):
        raise AnswerError(f"{_cap(what)} is undefined: it divides by zero "
                          "or takes the logarithm of a number that is not positive.")
    return expr


# --------------------------------------------------------------------------- orders

_ZERO = (Fraction(0), Fraction(0))
Mono = tuple[tuple[str, Fraction, Fraction], ...]  # (variable, power, log-power), sorted
Order = frozenset[Mono]
_ONE: Mono = ()


def _mono(pairs: dict[str, tuple[Fraction, Fraction]]) -> Mono:
    """A canonical monomial from {variable: (power, log-power)}."""
    return tuple(sorted((v, p, q) for v, (p, q) in pairs.items() if (p, q) != _ZERO))


def _pairs(m: Mono) -> dict[str, tuple[Fraction, Fraction]]:
    """{variable: (power, log-power)} of a monomial."""
    return {v: (p, q) for v, p, q in m}


def _times(a: Mono, b: Mono) -> Mono:
    """The product of two monomials."""
    pa, pb = _pairs(a), _pairs(b)
    return _mono({v: (pa.get(v, _ZERO)[0] + pb.get(v, _ZERO)[0], pa.get(v, _ZERO)[1] + pb.get(v, _ZERO)[1])
                  for v in pa.keys() | pb.keys()})


def _raise_to(a: Mono, r: Fraction) -> Mono:
    """A monomial to the power r."""
    return _mono({v: (p * r, q * r) for v, p, q in a})


def _dominates(a: Mono, b: Mono) -> bool:
    """Whether a >= b (up to a constant) as every variable grows: per variable, (power, log-power) lexicographically."""
    pa, pb = _pairs(a), _pairs(b)
    return all(pa.get(v, _ZERO) >= pb.get(v, _ZERO) for v in pa.keys() | pb.keys())


def _maximal(monos: Iterable[Mono]) -> Order:
    """The monomials that no other monomial dominates: the order of their sum."""
    pool = set(monos)
    return frozenset(m for m in pool if not any(o != m and _dominates(o, m) for o in pool))


def _product(a: Order, b: Order) -> Order:
    """The order of a product."""
    return _maximal(_times(x, y) for x in a for y in b)


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
        return math.comb(n + k - 1, n) if k <= MAX_EXPANDED_TERMS else MAX_EXPANDED_TERMS + 1
    return max([1, *(_expanded_size(a) for a in expr.args)])


class _Orders:
    """Computes the Θ-order of a parsed expression, explaining anything it cannot compare."""

    def __init__(self, symbols: Iterable[sympy.Symbol], what: str) -> None:
        """Prepare for expressions in `symbols`; messages name the answer `what`."""
        self.symbols, self.what = tuple(symbols), what

    def fail(self, message: str) -> AnswerError:
        """An AnswerError whose sentence starts with the answer's name."""
        return AnswerError(f"{_cap(self.what)} {message}")

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
        if expr.is_number:
            return self.constant(expr)
        handlers: dict[type, Callable[[sympy.Expr], Order]] = {
            sympy.Symbol: lambda e: frozenset({((e.name, Fraction(1), Fraction(0)),)}),
            sympy.Add: self.sum, sympy.Max: self.sum, sympy.Mul: self.product,
            sympy.Pow: self.power, sympy.log: self.log,
        }
        for kind, handler in handlers.items():
            if isinstance(expr, kind):
                return handler(expr)
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
        coeff, rest = term.as_independent(*self.symbols, as_Add=False)
        return coeff, rest

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
        order = _maximal(m for rest in positive for m in self.order(rest))
        for rest in negative:
            for m in self.order(rest):
                if not any(o != m and _dominates(o, m) for o in order):
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
            order = _product(order, self.order(factor))
        return order

    def power(self, expr: sympy.Expr) -> Order:
        """The order of base**r for a rational constant r."""
        base, exp = expr.as_base_exp()
        if not exp.is_number:
            raise self.fail(f"has the variable exponent in {_show(expr)}; "
                            "I can only compare powers with constant exponents.")
        if not isinstance(exp, sympy.Rational):
            raise self.fail(f"has the exponent {_show(exp)}; please use a rational exponent such as 2 or 1/2.")
        r = Fraction(int(exp.p), int(exp.q))
        inner = self.order(base)
        if r < 0 and len(inner) > 1:
            raise self.fail(f"divides by {_show(base)}; I can only divide by a product of powers (like J*K), "
                            "not by a sum.")
        return _maximal(_raise_to(m, r) for m in inner)

    def log(self, expr: sympy.Expr) -> Order:
        """The order of log(x): the sum of log v over the variables v that x grows with."""
        (arg,) = expr.args
        inner = self.order(arg)
        if any(p < 0 for m in inner for _, p, _ in m):
            raise self.fail(f"takes {_show(expr)}, whose argument can shrink; "
                            "I can only take logarithms of growing expressions.")
        growing = sorted({v for m in inner for v, p, _ in m if p > 0})
        if not growing:
            raise self.fail(f"takes {_show(expr)}, whose argument does not grow like a power of the variables.")
        return frozenset(((v, Fraction(0), Fraction(1)),) for v in growing)


def _order(expr: sympy.Expr, variables: Sequence[str], what: str) -> Order:
    """The Θ-order of a parsed expression in `variables`."""
    return _Orders(_symbols(variables).values(), what).of(expr)


# --------------------------------------------------------------------------- messages

def _render_mono(m: Mono, variables: Sequence[str]) -> str:
    """A monomial as text, e.g. L*T^2*log(J)."""
    pairs = _pairs(m)
    names = [v for v in [*variables, *sorted(set(pairs) - set(variables))] if v in pairs]
    powers = [_render_power(v, pairs[v][0]) for v in names if pairs[v][0]]
    logs = [_render_power(f"log({v})", pairs[v][1]) for v in names if pairs[v][1]]
    return "*".join(powers + logs) or "1"


def _render_power(base: str, r: Fraction) -> str:
    """base^r as text: 'J', 'J^2', 'J^(1/2)'."""
    return base if r == 1 else f"{base}^{r}" if r.denominator == 1 and r > 0 else f"{base}^({r})"


def _sort_key(m: Mono, variables: Sequence[str]) -> tuple[object, ...]:
    """Larger terms first (total power, then total log-power), ties in the order of `variables`."""
    pairs = _pairs(m)
    total_p = sum((p for p, _ in pairs.values()), Fraction(0))
    total_q = sum((q for _, q in pairs.values()), Fraction(0))
    by_variable = tuple((-pairs.get(v, _ZERO)[0], -pairs.get(v, _ZERO)[1]) for v in variables)
    return (-total_p, -total_q, by_variable, str(m))


def _render(order: Iterable[Mono], variables: Sequence[str]) -> str:
    """A sum of monomials as text (at most MAX_SHOWN terms)."""
    terms = [_render_mono(m, variables) for m in sorted(order, key=lambda m: _sort_key(m, variables))]
    more = len(terms) - MAX_SHOWN
    return " + ".join(terms[:MAX_SHOWN]) + (f" + {more} more terms" if more > 0 else "")


def _join(words: Sequence[str], conj: str = "or") -> str:
    """'A', 'A or B', 'A, B or C'."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} {conj} {words[-1]}"


def _slowness(student: Order, missing: Sequence[Mono], variables: Sequence[str]) -> str:
    """Which variables the student's order grows too slowly in, without revealing the reference."""
    absent: set[str] = set()
    slow: set[str] = set()
    together: set[str] = set()
    for r in missing:
        rp = _pairs(r)
        beyond = [v for v in rp if all(rp[v] > _pairs(s).get(v, _ZERO) for s in student)]
        for v in beyond:
            grows = any(_pairs(s).get(v, _ZERO) > _ZERO for s in student)
            (slow if grows else absent).add(v)
        if not beyond:
            together.update(v for v in rp if rp[v] > _ZERO)
    order = {v: k for k, v in enumerate(variables)}
    parts: list[str] = []
    if absent:
        parts.append(f"it does not grow with {_join(sorted(absent, key=order.get))}")
    if slow:
        parts.append(f"it grows too slowly in {_join(sorted(slow, key=order.get), 'and')}")
    if together and not parts:
        parts.append(f"it grows too slowly when {_join(sorted(together, key=order.get), 'and')} grow together")
    return " and ".join(parts) or "it grows too slowly"


def _compare(student: Order, reference: Order, variables: Sequence[str]) -> Result:
    """The verdict on two orders, explained in terms of the student's order only."""
    shown = _render(student, variables)
    if student == reference:
        return Result(True, f"Correct: your answer is Θ({shown}).")
    too_big = sorted((s for s in student if not any(_dominates(r, s) for r in reference)),
                     key=lambda m: _sort_key(m, variables))
    missing = [r for r in reference if not any(_dominates(s, r) for s in student)]
    fast = ""
    if too_big:
        shown_terms = [_render_mono(m, variables) for m in too_big[:MAX_SHOWN]]
        if len(too_big) > MAX_SHOWN:
            shown_terms.append(f"{len(too_big) - MAX_SHOWN} more")
        terms = _join(shown_terms, "and")
        fast = (f"its term {terms} grows" if len(too_big) == 1 else f"its terms {terms} grow") + \
            " faster than the expected order"
    if too_big and missing:
        return Result(False, f"Your answer is Θ({shown}), which is not the expected order: {fast}, "
                             f"and {_slowness(student, missing, variables)}.")
    if too_big:
        return Result(False, f"Your answer is Θ({shown}), which is too large: {fast}.")
    return Result(False, f"Your answer is Θ({shown}), which is too small: {_slowness(student, missing, variables)}.")


# --------------------------------------------------------------------------- equations

def _difference(eq: sympy.Eq) -> sympy.Expr:
    """lhs - rhs of an equation, expanded."""
    return sympy.expand(eq.lhs - eq.rhs)


def _is_linear(expr: sympy.Expr) -> bool:
    """Whether `expr` is a polynomial of degree at most 1 in its variables."""
    symbols = sorted(expr.free_symbols, key=str)
    return bool(symbols) and expr.is_polynomial(*symbols) and sympy.Poly(expr, *symbols).total_degree() <= 1


def _same_solutions(a: sympy.Expr, b: sympy.Expr) -> bool:
    """Whether a = 0 and b = 0 have the same positive solutions for some variable."""
    for v in sorted(b.free_symbols, key=str):
        try:
            sa, sb = sympy.solve(a, v), sympy.solve(b, v)
        except (NotImplementedError, ValueError, TypeError):
            continue
        if sb:
            return len(sa) == len(sb) and all(any(sympy.simplify(x - y) == 0 for y in sa) for x in sb)
    return False


def _check_equation(answer: object, reference: sympy.Eq, variables: Sequence[str]) -> Result:
    """Whether `answer` is an equation equivalent to `reference`."""
    student = parse_answer(answer, variables)
    if not isinstance(student, sympy.Eq):
        return Result(False, "Your answer should be an equation, with '=' between two expressions.")
    ds, dr = _difference(student), _difference(reference)
    if ds == 0:
        return Result(False, "Your equation holds for every value of the variables, so it states no condition.")
    if not ds.free_symbols:
        return Result(False, "Your equation never holds, whatever the values of the variables.")
    ratio = sympy.cancel(ds / dr)
    if (ratio.is_number and ratio != 0) or (not (_is_linear(ds) and _is_linear(dr)) and _same_solutions(ds, dr)):
        return Result(True, "Correct: your equation is equivalent to the expected one.")
    return Result(False, f"Your equation {_show(student.lhs)} = {_show(student.rhs)} "
                         "is not equivalent to the expected one.")


# --------------------------------------------------------------------------- API

def parse_answer(answer: object, variables: Sequence[str], what: str = "your answer") -> sympy.Expr | sympy.Eq:
    """Parse a student's answer string; raise AnswerError (one sentence) if malformed
    or it uses a name not in `variables`.

    An expression must also be an order this module can compare (positive, a sum of
    products of powers and logarithms of the variables); an equation is only parsed.
    """
    expr = _parse(answer, variables, what)
    if not isinstance(expr, sympy.Eq):
        _order(expr, variables, what)
    return expr


def check_answer(answer: object, reference: str, variables: Sequence[str]) -> Result:
    """Θ-equivalence of `answer` with `reference` in the named variables
    (or equation equivalence when reference contains '=').

    Never raises for a student's answer: a malformed one gives Result(False, sentence).
    A malformed reference or variable list is the course's bug and raises ValueError.
    """
    try:
        ref = _parse(reference, variables, "the reference")
        ref_order = None if isinstance(ref, sympy.Eq) else _order(ref, variables, "the reference")
    except AnswerError as error:
        raise ValueError(f"invalid reference answer {reference!r}: {error}") from None
    try:
        if ref_order is None:
            return _check_equation(answer, ref, variables)
        student = parse_answer(answer, variables)
        if isinstance(student, sympy.Eq):
            return Result(False, "Your answer is an equation, but this question asks for an order of growth, "
                                 "without '='.")
        return _compare(_order(student, variables, "your answer"), ref_order, variables)
    except AnswerError as error:
        return Result(False, str(error))
    except (RecursionError, MemoryError, ArithmeticError, TypeError, ValueError, AttributeError):
        return Result(False, "I could not read your answer; please write it more simply.")
