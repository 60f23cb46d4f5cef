r"""Check a student's symbolic answer: an order of growth (Θ) or an equation.

Answers are strings written the way people write maths, in Python or in LaTeX, such as
``"N*(X + Y)^2"``, ``"O(N log N)"``, ``r"\frac{X}{2} \cdot \log Y"`` or, where a question
asks for an equation, ``"X = 2Y"``. A `lark` grammar (`GRAMMAR`) reads them: ``*``, ``/``,
``^`` and ``**``, implicit multiplication (``2XY``, ``N(X + Y)``, ``N log N``), ``log``,
``ln``, ``lg``, ``log2``, ``log10``, ``log_2``, ``sqrt``, ``max``, ``O( )`` and ``Θ( )``;
in LaTeX ``\log``, ``\sqrt{}``, ``\sqrt[3]{}``, ``\frac{a}{b}``, ``\frac12``, ``\cdot``,
``\times``, ``\left( \right)``, ``\mathcal{O}``; in unicode ``· × √ Θ ½ ²``. The parse
tree is turned into sympy node by node: a student's text never reaches ``eval`` or
``sympify``, and only the named variables and those functions are known.

>>> parse_answer("N(X + Y)^2", ["N", "X", "Y"])
N*(X + Y)**2
>>> check_answer("2 N log N + 5", "O(N log N)", ["N"]).message
'Correct: your answer is Θ(N*log(N)).'
>>> check_answer("N^2", "O(N log N)", ["N"]).message
'Your answer is Θ(N^2), which is too large: its term N^2 grows faster than the expected order in N.'

**The order.** The sizes (the variables) are all large. An answer is a positive sum of
terms, each a product of powers of the sizes, of their logarithms, of the logarithms of
those, and so on (``log log N`` is of lower order than ``log N``, which is of lower order
than any power of ``N``). A term is of lower order when, however the sizes grow, it stays
below a constant times the largest of the other terms: when, in every admissible
direction of growth, some convex combination of the other terms' exponents is at least
as large. So a term inside the Newton polytope of the others is recognised
(``sqrt(X*Y) <= X + Y``, ``X*Y <= X^2 + Y^2``); the exponents of the logarithms refine
those of the powers lexicographically. Exact linear programs over the rationals decide
it. Two answers are Θ-equal when each one's maximal terms are of lower order than, or
equal to, the other's.

**Relations.** A question may state relations between its sizes, as strings such as
``"Y <= X"`` or ``"X = A*B"`` (a product of powers on each side; a name that the answer
may not use, like ``A`` here, is a size too). `check_answer` takes them as `relations`
and uses them: with ``X = A*B`` (so ``A <= X``) a term in ``A`` is of lower order than
the same term in ``X``, and with ``Y <= X`` the answers ``"N*(X + Y + M)"`` and
``"N*(X + M)"`` are Θ-equal. That is what Θ means under the relation, and it is accepted
knowingly: a question that states ``Y <= X`` accepts an answer that drops ``Y`` beside
``X``.

**Limits.** The test is sound but not complete: it looks for one convex combination that
works in every size at once, so a term that is bounded only by trading a power of one
size against a logarithm of another (``X*Y*log(X)`` against ``X^2 + Y^2*log(Y)^2``) is
not recognised as lower order, and such an answer is refused, never wrongly accepted.
Judging is bounded: an answer longer than `MAX_LENGTH` characters, nested more than
`MAX_DEPTH` deep, with a written exponent over `MAX_EXPONENT`, a number over
`MAX_DIGITS` digits, more than `MAX_TERMS` terms, or whose judging takes more than
`TIME_BUDGET` seconds of CPU time is refused with one sentence saying so.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import sympy
from sympy.polys.polyerrors import BasePolynomialError

from attnlab._answer_grammar import (
    GRAMMAR,
    MAX_DEPTH,
    MAX_DIGITS,
    MAX_EXPONENT,
    MAX_LENGTH,
    AnswerError,
    cap,
    parse,
    show,
    validate_variables,
)
from attnlab._growth import (
    MAX_TERMS,
    Clock,
    Levels,
    Mono,
    Order,
    Sizes,
    expanded_size,
    levels,
    lex_cmp,
    order_of,
    size_key,
    sizes_under,
)

__all__ = [
    "GRAMMAR", "MAX_DEPTH", "MAX_DIGITS", "MAX_EXPONENT", "MAX_LENGTH", "MAX_TERMS", "TIME_BUDGET",
    "AnswerError", "Result", "check_answer", "parse_answer",
]

TIME_BUDGET = 2.0   # seconds to judge one answer
MAX_SHOWN = 4       # terms named in a message


@dataclass(frozen=True)
class Result:
    """The verdict on one answer: `ok`, and one sentence for the student."""

    ok: bool
    message: str


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
    totals, _ = size_key(m)
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
        beyond = [v for v, lev in r if all(lex_cmp(lev, levels(s, v)) > 0 for s in student)]
        for v in beyond:
            grows = any(lex_cmp(levels(s, v), ()) > 0 for s in student)
            (slow if grows else absent).add(v)
        if not beyond:
            together.update(v for v, lev in r if lex_cmp(lev, ()) > 0)
    parts: list[str] = []
    if absent:
        parts.append(f"it does not grow with {_join(_in_order(absent, variables))}")
    if slow:
        parts.append(f"it grows too slowly in {_join(_in_order(slow, variables), 'and')}")
    if together and not parts:
        parts.append(f"it grows too slowly when {_join(_in_order(together, variables), 'and')} grow together")
    return " and ".join(parts) or "it grows too slowly"


def _fastness(too_big: Sequence[Mono], reference: Order, variables: Sequence[str]) -> str:
    """Where the too-large terms outgrow the expected order: ' in T' when single variables do,
    else ' when L, T and J grow together'."""
    fast = {v for s in too_big for v, lev in s if all(lex_cmp(lev, levels(r, v)) > 0 for r in reference)}
    if fast:
        return f" in {_join(_in_order(fast, variables), 'and')}"
    together = {v for s in too_big for v, lev in s if lex_cmp(lev, ()) > 0}
    return f" when {_join(_in_order(together, variables), 'and')} grow together" if len(together) > 1 else ""


def _compare(student: Order, reference: Order, sizes: Sizes, variables: Sequence[str], clock: Clock) -> Result:
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


def _zero_set(difference: sympy.Expr, what: str, extension: Sequence[sympy.Expr]) -> frozenset[sympy.Expr] | None:
    """The factors (irreducible over the rationals and `extension`, monic) of a rational function
    that can vanish for positive variables: difference = 0 exactly where one of them is zero.
    None when `difference` is not a rational function of the variables."""
    numerator, _ = sympy.fraction(sympy.together(difference))
    symbols = sorted(numerator.free_symbols, key=str)
    if not symbols or not numerator.is_polynomial(*symbols):
        return None
    try:
        poly = sympy.Poly(numerator, *symbols, extension=list(extension) or None)
        if poly.total_degree() > MAX_EQUATION_DEGREE or len(poly.terms()) > MAX_EQUATION_TERMS:
            raise AnswerError(f"{cap(what)} is too complicated to compare; write it as a simpler equation.")
        _, factors = sympy.factor_list(poly, extension=list(extension) or None)
    except (BasePolynomialError, NotImplementedError, ValueError, TypeError):
        return None
    zero = set()
    for factor, _ in factors:
        signs = {sympy.sign(c) for c in factor.coeffs()}
        if len(factor.coeffs()) > 1 and len(signs) > 1:  # one sign throughout: never zero for positive variables
            zero.add(sympy.expand(factor.monic().as_expr()))
    return frozenset(zero)


def _without_logs(difference: sympy.Expr) -> sympy.Expr | None:
    """An expression that vanishes exactly where `difference` does, without logarithms:
    sum c_i log(a_i) + c becomes prod a_i^c_i * exp(c) - 1. None if logarithms mix with other terms."""
    difference = sympy.expand_log(difference, force=True)
    if not difference.has(sympy.log):
        return difference
    product, constant = sympy.Integer(1), sympy.Integer(0)
    for term in sympy.Add.make_args(difference):
        if term.is_number:
            constant += term
            continue
        coeff, rest = term.as_independent(*term.free_symbols, as_Add=False)
        if not (isinstance(rest, sympy.log) and isinstance(coeff, sympy.Rational)):
            return None
        product *= rest.args[0] ** coeff
    return product * sympy.exp(constant) - 1


def _without_roots(exprs: Sequence[sympy.Expr]) -> list[sympy.Expr]:
    """The expressions with every variable v replaced by v^k (k the lcm of its exponents' denominators),
    which keeps where they vanish (v -> v^k is one-to-one on positive numbers) and clears the roots."""
    k: dict[sympy.Symbol, int] = {}
    for expr in exprs:
        for p in expr.atoms(sympy.Pow):
            if isinstance(p.base, sympy.Symbol) and isinstance(p.exp, sympy.Rational):
                k[p.base] = math.lcm(k.get(p.base, 1), int(p.exp.q))
    subs = {v: v ** n for v, n in k.items() if n > 1}
    return [expr.subs(subs) for expr in exprs] if subs else list(exprs)


def _check_equation(answer: object, reference: sympy.Eq, variables: Sequence[str]) -> Result:
    """Whether `answer` is an equation with the same positive solutions as `reference`."""
    clock = Clock(TIME_BUDGET, "your answer")
    student = parse(answer, variables, "your answer")
    if not isinstance(student, sympy.Eq):
        return Result(False, "Your answer should be an equation, with '=' between two expressions.")
    if expanded_size(student.lhs - student.rhs) > MAX_EQUATION_TERMS:
        return Result(False, "Your equation is too complicated for me to compare; please write it more simply.")
    clock.tick()
    ds = sympy.expand(student.lhs - student.rhs)
    if ds == 0:
        return Result(False, "Your equation holds for every value of the variables, so it states no condition.")
    if not ds.free_symbols:
        return Result(False, "Your equation never holds, whatever the values of the variables.")
    mine, expected = _without_logs(ds), _without_logs(reference.lhs - reference.rhs)
    if mine is None or expected is None:
        return Result(False, "I cannot compare your equation: write it with powers of the variables, "
                             "without logarithms mixed with other terms.")
    clock.tick()
    mine, expected = _without_roots([mine, expected])
    numbers = sorted({p for e in (mine, expected) for p in e.atoms(sympy.Pow) if p.is_number and not p.is_Rational},
                     key=str)
    if len(numbers) > 2:
        return Result(False, "I cannot compare your equation: it has too many different roots of numbers.")
    clock.tick()
    zeros = _zero_set(mine, "your equation", numbers)
    clock.tick()
    expected_zeros = _zero_set(expected, "the reference", numbers)
    if zeros is None:
        return Result(False, "I cannot compare your equation: write it with sums and products of powers "
                             "of the variables.")
    if zeros == expected_zeros and zeros:
        return Result(True, "Correct: your equation is equivalent to the expected one.")
    return Result(False, f"Your equation {show(student.lhs)} = {show(student.rhs)} "
                         "is not equivalent to the expected one.")


# --------------------------------------------------------------------------- API

def parse_answer(answer: object, variables: Sequence[str], what: str = "your answer",
                 relations: Sequence[str] = ()) -> sympy.Expr | sympy.Eq:
    """Parse a student's answer string into sympy (positive symbols); raise AnswerError
    (one sentence) if it is malformed or uses a name not in `variables`.

    An expression must also be an order this module can compare (positive, a sum of
    products of powers and logarithms of the variables); an equation is only parsed.
    """
    sizes = sizes_under(validate_variables(variables), tuple(relations))
    try:
        expr = parse(answer, variables, what)
        if not isinstance(expr, sympy.Eq):
            order_of(expr, sizes, what, Clock(TIME_BUDGET, what))  # type: ignore[arg-type]
    except AnswerError:
        raise
    except Exception:  # noqa: BLE001  (a student's answer gets a sentence, never a traceback)
        raise AnswerError(f"I could not read {what}; please write it more simply.") from None
    return expr  # type: ignore[return-value]


@lru_cache(maxsize=128)
def _reference(reference: str, variables: tuple[str, ...], relations: tuple[str, ...]) -> tuple[object, Order | None]:
    """The parsed reference and its order (None for an equation); ValueError if it is malformed."""
    try:
        ref = parse(reference, variables, "the reference")
        if isinstance(ref, sympy.Eq):
            return ref, None
        clock = Clock(10 * TIME_BUDGET, "the reference")
        return ref, order_of(ref, sizes_under(variables, relations), "the reference", clock)  # type: ignore[arg-type]
    except AnswerError as error:
        raise ValueError(f"invalid reference answer {reference!r}: {error}") from None


def check_answer(answer: object, reference: str, variables: Sequence[str], relations: Sequence[str] = ()) -> Result:
    """Θ-equivalence of `answer` with `reference` in the named variables, under the
    `relations` between the sizes (such as "Y <= X"); equation equivalence when the
    reference contains '='.

    Never raises for a student's answer: a malformed one gives Result(False, sentence).
    A malformed reference, variable list or relation is the course's bug and raises ValueError.
    """
    names = validate_variables(variables)
    rels = tuple(relations)
    ref, ref_order = _reference(reference, names, rels)
    sizes = sizes_under(names, rels)
    try:
        if ref_order is None:
            return _check_equation(answer, ref, names)  # type: ignore[arg-type]
        student = parse(answer, names, "your answer")
        if isinstance(student, sympy.Eq):
            return Result(False, "Your answer is an equation, but this question asks for an order of growth, "
                                 "without '='.")
        clock = Clock(TIME_BUDGET, "your answer")
        order = order_of(student, sizes, "your answer", clock)  # type: ignore[arg-type]
        return _compare(order, ref_order, sizes, names, clock)
    except AnswerError as error:
        return Result(False, str(error))
    except Exception:  # a student's answer never crashes the grader  # noqa: BLE001
        return Result(False, "I could not read your answer; please write it more simply.")
