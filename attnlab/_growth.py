"""Orders of growth: terms, the relations between sizes, and when one term is of lower order.

A term is a product of powers of the sizes, of their logarithms, of the logarithms of
those, and so on: for each size v a vector of exponents (of v, log v, log log v, ...),
compared lexicographically. `Sizes.dominated` decides whether a term stays below a
constant times the largest of some other terms for all large sizes that satisfy the
relations: it looks for a certificate (a convex combination of the other terms, plus
multiples of the relations, that is lexicographically >= the term in every size) with
the exact linear programs of `attnlab._simplex`. `Orders` computes the maximal terms
(the Θ-order) of a sympy expression built by `attnlab._answer_grammar`.
"""
from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import sympy

from attnlab._answer_grammar import FUNCTION_WORDS, MAX_EXPONENT, NAME, AnswerError, cap, parse, show
from attnlab._simplex import maximize

MAX_POWER = 1000           # |exponent| of a size in a term of an order
MAX_TERMS = 300            # terms an order may have before lower-order ones are dropped
MAX_EXPANDED_TERMS = 300   # terms an answer with a subtraction may expand to
MAX_CACHE = 20_000         # remembered verdicts of `Sizes.dominated`, per set of relations

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


def levels(m: Mono, v: str) -> Levels:
    """The levels of variable v in term m (() if absent)."""
    for name, lev in m:
        if name == v:
            return lev
    return ()


def padded(a: Levels, n: int) -> Levels:
    """`a` padded with zeros to length n."""
    return a + (Fraction(0),) * (n - len(a))


def lex_cmp(a: Levels, b: Levels) -> int:
    """-1, 0 or 1: how a compares with b as growth rates (lexicographically, powers first)."""
    n = max(len(a), len(b))
    pa, pb = padded(a, n), padded(b, n)
    return (pa > pb) - (pa < pb)


def _times(a: Mono, b: Mono) -> Mono:
    """The product of two terms."""
    pairs = dict(a)
    for v, lev in b:
        n = max(len(lev), len(pairs.get(v, ())))
        pairs[v] = tuple(x + y for x, y in zip(padded(pairs.get(v, ()), n), padded(lev, n)))
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
    cmps = [lex_cmp(levels(o, v), levels(m, v)) for v in names]
    return all(c >= 0 for c in cmps) and (not strict or any(c > 0 for c in cmps))


def _along(m: Mono, group: frozenset[str]) -> Levels:
    """The growth of term m when the sizes in `group` grow at one rate: its levels summed over the group."""
    depth = max([len(lev) for v, lev in m if v in group] + [0])
    return _trim(sum(x) for x in zip(*(padded(lev, depth) for v, lev in m if v in group), (Fraction(0),) * depth))


def _biggest(m: Mono) -> Fraction:
    """The largest |exponent| in a term."""
    return max((abs(x) for _, lev in m for x in lev), default=Fraction(0))


class Clock:
    """A time budget in CPU seconds of the judging thread (so a busy machine does not fail an answer);
    `tick` raises AnswerError once it is spent."""

    def __init__(self, seconds: float, what: str) -> None:
        """Start a budget of `seconds` for the answer named `what`."""
        self.end, self.what = time.thread_time() + seconds, what

    def tick(self) -> None:
        """Raise if the budget is spent."""
        if time.thread_time() > self.end:
            raise AnswerError(f"{cap(self.what)} is too complicated to judge in time; please write it more simply.")


@dataclass(frozen=True)
class Relation:
    """A relation between sizes, linear in their logarithms: sum(coeff[v] * log v) >= 0, or = 0."""

    coeffs: tuple[tuple[str, Fraction], ...]
    equality: bool


Form = dict[int, Fraction]            # a linear form in the certificate's unknowns: {column: coefficient}
Obj = str | tuple[str, str]           # what must be lexicographically >= 0: a size, or a pair (a, b) with a <= b


class Sizes:
    """The sizes (variables, and the extra names their relations use) and what the relations imply.

    In logarithms u_v = log v, a relation is a linear constraint and the admissible
    directions of growth form a cone D. Two kinds of consequences serve the logarithmic
    levels: `ordered` lists the pairs (a, b) with log a <= log b + c (d_a <= d_b on D), and
    `below` the other pairs with log a <= c log b + c' (d_b = 0 forces d_a = 0 on D).
    """

    def __init__(self, names: tuple[str, ...], relations: tuple[Relation, ...]) -> None:
        """Sizes `names` under `relations`."""
        self.names, self.relations = names, relations
        self.free = frozenset(v for v in names if all(self.allows(r, v) for r in relations))
        self.directions = self.simple_directions()
        pairs = [(a, b) for a in names for b in names if a != b and a not in self.free]
        self.ordered = tuple(p for p in pairs if self.at_most(*p))
        self.below = tuple(p for p in pairs if p not in self.ordered and self.bounded_by(*p))
        self.cache: dict[tuple[Mono, tuple[Mono, ...], bool], bool] = {}

    def simple_directions(self) -> tuple[frozenset[str], ...]:
        """Sets S of at most three sizes that may grow together (at one rate) while the others stay bounded."""
        found: list[frozenset[str]] = []
        for k in (1, 2, 3):
            for group in itertools.combinations(self.names, k):
                s = frozenset(group)
                if not any(f <= s for f in found) and all(self.admits(r, s) for r in self.relations):
                    found.append(s)
        return tuple(found)

    @staticmethod
    def admits(r: Relation, group: frozenset[str]) -> bool:
        """Whether the sizes in `group` may grow together at one rate under relation r."""
        total = sum((c for v, c in r.coeffs if v in group), Fraction(0))
        return total == 0 if r.equality else total >= 0

    @staticmethod
    def allows(r: Relation, v: str) -> bool:
        """Whether size v may grow alone under relation r."""
        c = dict(r.coeffs).get(v, Fraction(0))
        return c == 0 if r.equality else c >= 0

    def cone_rows(self) -> list[tuple[Form, Fraction]]:
        """The rows (A d <= 0) of the cone D of directions of growth, d_v in column names.index(v)."""
        column = {v: k for k, v in enumerate(self.names)}
        rows = []
        for r in self.relations:
            row = {column[v]: -c for v, c in r.coeffs}
            rows.append((row, Fraction(0)))
            if r.equality:
                rows.append(({j: -c for j, c in row.items()}, Fraction(0)))
        return rows

    def at_most(self, a: str, b: str) -> bool:
        """Whether d_a <= d_b in every direction of growth (so log a <= log b + c)."""
        i, j = self.names.index(a), self.names.index(b)
        simplex = ({k: Fraction(1) for k in range(len(self.names))}, Fraction(1))
        value, _ = maximize({i: Fraction(1), j: Fraction(-1)}, [*self.cone_rows(), simplex])
        return value <= 0

    def bounded_by(self, a: str, b: str) -> bool:
        """Whether a cannot grow while b stays bounded (max d_a over D with d_b = 0 is 0)."""
        i, j = self.names.index(a), self.names.index(b)
        rows = [*self.cone_rows(), ({j: Fraction(1)}, Fraction(0)), ({i: Fraction(1)}, Fraction(1))]
        value, _ = maximize({i: Fraction(1)}, rows)
        return value == 0

    def dominated(self, m: Mono, others: Sequence[Mono], strict: bool, clock: Clock) -> bool:
        """Whether term m <= C * max(others) for all large sizes (m / max(others) -> 0 when strict)."""
        if not others:
            return False
        if not strict and m in others:
            return True
        if any(_covers(o, m, strict) for o in others):
            return True
        for group in self.directions:
            mine = _along(m, group)
            if all(lex_cmp(mine, _along(o, group)) > 0 for o in others):
                return False  # m grows faster when the sizes in `group` grow and the others stay put
        key = (m, tuple(sorted(others)), strict)
        verdict = self.cache.get(key)
        if verdict is None:
            verdict = self.certified(m, tuple(others), strict, clock)
            if len(self.cache) >= MAX_CACHE:
                self.cache.clear()
            self.cache[key] = verdict
        return verdict

    def certified(self, m: Mono, others: tuple[Mono, ...], strict: bool, clock: Clock) -> bool:
        """Whether a certificate exists: weights λ >= 0 with sum λ = s > 0 (a convex combination
        of `others`, scaled) and multiples of the relations, such that for every size v the
        vector (over levels) sum λ_j o_j(v) - s m(v) - (relations) is lexicographically >= 0,
        and > 0 for some size when `strict`. Then s log m <= sum λ_j log o_j + C.

        The lexicographic conditions are met level by level: a linear program finds which
        objects (sizes, and the multiplier vectors of ordered pairs) can be made positive at
        their current level; the others must be 0 there and move to their next level.
        """
        depth = max([len(lev) for term in (m, *others) for _, lev in term] + [1])
        forms, ncols = self.forms(m, others, depth)
        scale = len(others)
        objects: list[Obj] = [*self.names, *self.ordered]
        level = {obj: 0 for obj in objects}
        while True:
            for obj in objects:
                while level[obj] < depth and not forms.get((obj, level[obj])):
                    level[obj] += 1
            weights = {j: Fraction(1) for j in range(scale)}
            rows: list[tuple[Form, Fraction]] = [({**weights, scale: Fraction(-1)}, Fraction(0)),
                                                 ({**_negated(weights), scale: Fraction(1)}, Fraction(0))]
            targets: list[tuple[Obj | None, Form]] = [(None, {scale: Fraction(1)})]
            for obj in objects:
                for k in range(min(level[obj], depth)):
                    if f := forms.get((obj, k)):
                        rows += [(dict(f), Fraction(0)), (_negated(f), Fraction(0))]
                if level[obj] < depth:
                    f = forms[(obj, level[obj])]
                    rows.append((_negated(f), Fraction(0)))
                    targets.append((obj, f))
            objective = {}
            for i, (_, f) in enumerate(targets):  # t_i <= f_i and t_i <= 1: max sum t_i finds each f_i that can be > 0
                t = ncols + i
                rows += [({t: Fraction(1), **_negated(f)}, Fraction(0)), ({t: Fraction(1)}, Fraction(1))]
                objective[t] = Fraction(1)
            _, x = maximize(objective, rows, clock.tick)
            positive = [obj for i, (obj, _) in enumerate(targets) if x.get(ncols + i, 0) > 0]
            if None not in positive:
                return False
            stuck = [obj for obj, _ in targets[1:] if obj not in positive]
            if not stuck:
                return not strict or any(isinstance(obj, str) for obj in positive)
            for obj in stuck:
                level[obj] += 1

    def forms(self, m: Mono, others: tuple[Mono, ...], depth: int) -> tuple[dict[tuple[Obj, int], Form], int]:
        """The linear forms (in λ, the scale s and the multipliers) of each (object, level) of the certificate,
        and the number of columns used."""
        forms: dict[tuple[Obj, int], Form] = {}

        def add(obj: Obj, k: int, column: int, c: Fraction) -> None:
            """forms[obj, k][column] += c."""
            f = forms.setdefault((obj, k), {})
            f[column] = f.get(column, Fraction(0)) + c
            if not f[column]:
                del f[column]

        for j, o in enumerate(others):
            for v, lev in o:
                for k, x in enumerate(lev):
                    add(v, k, j, x)
        for v, lev in m:
            for k, x in enumerate(lev):
                add(v, k, len(others), -x)
        column = len(others) + 1
        for r in self.relations:  # sum c_v u_v >= 0 (or = 0): a multiple of it is subtracted at the power level
            for sign in ((1, -1) if r.equality else (1,)):
                for v, c in r.coeffs:
                    add(v, 0, column, -sign * c)
                column += 1
        for a, b in self.ordered:  # w · (L(u_b) - L(u_a)) >= -C for any w >= 0 lexicographically
            for k in range(depth):
                for sign in (1, -1):
                    add(b, k, column, Fraction(-sign))
                    add(a, k, column, Fraction(sign))
                    add((a, b), k, column, Fraction(sign))
                    column += 1
        for k in range(1, depth):  # log^k a <= log^k b + C, level by level
            for a, b in self.below:
                add(b, k, column, Fraction(-1))
                add(a, k, column, Fraction(1))
                column += 1
        return forms, column

    def maximal(self, terms: Iterable[Mono], clock: Clock) -> Order:
        """The terms that are not of lower order than the others: the order of their sum."""
        pool = sorted(set(terms))
        if len(pool) > MAX_TERMS:
            raise TooManyTerms(len(pool))
        kept = [m for m in pool if not any(o != m and _covers(o, m, False) for o in pool)]
        for m in sorted(kept, key=size_key):
            clock.tick()
            others = [o for o in kept if o != m]
            if self.dominated(m, others, False, clock):
                kept.remove(m)
        return frozenset(kept)


def _negated(f: Form) -> Form:
    """-f."""
    return {j: -c for j, c in f.items()}


class TooManyTerms(ArithmeticError):
    """An order with more than MAX_TERMS terms."""


def size_key(m: Mono) -> tuple[object, ...]:
    """Smaller terms first: total exponents level by level, then the text."""
    depth = max([len(lev) for _, lev in m] + [0])
    totals = tuple(sum((padded(lev, depth)[k] for _, lev in m), Fraction(0)) for k in range(depth))
    return (totals, m)


@lru_cache(maxsize=64)
def sizes_under(variables: tuple[str, ...], relations: tuple[str, ...]) -> Sizes:
    """The sizes `variables` (and the other names in `relations`) under `relations`."""
    extra = sorted({w for text in relations for w in NAME.findall(text)} - set(variables) - set(FUNCTION_WORDS))
    names = (*variables, *extra)
    parsed = []
    for text in relations:
        try:
            rel = parse(text, names, "the relation", relations_allowed=True)
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
        parsed.append(Relation(tuple(sorted((v, c) for v, c in coeffs.items() if c)), op in ("=", "==")))
    return Sizes(names, tuple(parsed))


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


class Orders:
    """Computes the Θ-order of a parsed expression, explaining anything it cannot compare."""

    def __init__(self, sizes: Sizes, what: str, clock: Clock) -> None:
        """Prepare for expressions in the `sizes`; messages name the answer `what`."""
        self.sizes, self.what, self.clock = sizes, what, clock
        self.symbols = tuple(sympy.Symbol(v, positive=True) for v in sizes.names)

    def fail(self, message: str) -> AnswerError:
        """An AnswerError whose sentence starts with the answer's name."""
        return AnswerError(f"{cap(self.what)} {message}")

    def maximal(self, terms: Iterable[Mono]) -> Order:
        """The maximal terms, refusing an order with too many terms or too large exponents."""
        terms = list(terms)
        if any(_biggest(m) > MAX_POWER for m in terms):
            raise self.fail(f"has a term with an exponent larger than {MAX_POWER}, which is larger than I accept.")
        try:
            return self.sizes.maximal(terms, self.clock)
        except TooManyTerms as error:
            raise self.fail(f"has more than {MAX_TERMS} terms ({error.args[0]}) once multiplied out; "
                            "please write it more simply.") from None

    def sign(self, c: sympy.Expr) -> int:
        """The sign (-1, 0, 1) of a constant."""
        if c == 0:
            return 0
        value = sympy.N(c, 30)
        if not value.is_real:
            raise self.fail(f"has the constant {show(c)}, which is not a real number.")
        return 0 if value == 0 else (1 if value > 0 else -1)

    def of(self, expr: sympy.Expr) -> Order:
        """The order of a whole answer; one that subtracts is expanded and retried, so that terms can cancel."""
        try:
            return self.order(expr)
        except AnswerError as first:
            if not _has_subtraction(expr) or expanded_size(expr) > MAX_EXPANDED_TERMS:
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
        raise self.fail(f"contains {show(expr)}, but I can only compare sums of products of powers "
                        "and logarithms of the variables.")

    def constant(self, expr: sympy.Expr) -> Order:
        """The order of a constant: Θ(1) when positive."""
        sign = self.sign(expr)
        if sign > 0:
            return frozenset({_ONE})
        if sign == 0:
            raise self.fail("is zero, but an order of growth must be positive.")
        raise self.fail(f"is negative ({show(expr)}), but an order of growth must be positive.")

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
            what = "is zero" if not negative else f"is negative ({show(expr)})"
            raise self.fail(f"{what}, but an order of growth must be positive.")
        order = self.maximal(m for rest in positive for m in self.order(rest))
        for rest in negative:
            for m in self.order(rest):
                if not self.sizes.dominated(m, sorted(order), True, self.clock):
                    raise self.fail(f"subtracts {show(rest)}, which is not smaller than the rest, "
                                    "so I cannot tell that it stays positive.")
        return order

    def product(self, expr: sympy.Expr) -> Order:
        """The order of a product of a positive constant and factors."""
        coeff, rest = self.split(expr)
        if self.sign(coeff) <= 0:
            raise self.fail(f"has the term {show(expr)}, which is not positive; an order of growth must be positive.")
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
            raise self.fail(f"has the variable exponent in {show(expr)}; "
                            "I can only compare powers with constant exponents.")
        if not isinstance(exp, sympy.Rational):
            raise self.fail(f"has the exponent {show(exp)}; please use a rational exponent such as 2 or 1/2.")
        r = Fraction(int(exp.p), int(exp.q))
        inner = self.order(base)
        if r < 0 and len(inner) > 1:
            raise self.fail(f"divides by {show(base)}; I can only divide by a product of powers (like X*Y), "
                            "not by a sum.")
        return self.maximal(_raise_to(m, r) for m in inner)

    def log(self, expr: sympy.Expr) -> Order:
        """The order of log(x): for each of x's maximal terms and each variable in it, the
        logarithm one level below that variable's leading level (log J^2 log N ~ log J + log log N)."""
        (arg,) = expr.args
        inner = self.order(arg)
        atoms: set[Mono] = set()
        for m in inner:
            for v, lev in m:
                k, x = _leading(lev)
                if x < 0:
                    raise self.fail(f"takes {show(expr)}, whose argument can shrink; "
                                    "I can only take logarithms of growing expressions.")
                atoms.add(((v, (Fraction(0),) * (k + 1) + (Fraction(1),)),))
        if not atoms:
            raise self.fail(f"takes {show(expr)}, whose argument does not grow with the variables.")
        return self.maximal(atoms)


def _has_subtraction(expr: sympy.Basic) -> bool:
    """Whether some sum inside `expr` has a negative term."""
    for node in sympy.preorder_traversal(expr):
        if isinstance(node, sympy.Add) and any(t.as_coeff_Mul()[0].is_negative for t in node.args):
            return True
    return False


def expanded_size(expr: sympy.Basic) -> int:
    """An upper estimate of the number of terms sympy.expand produces from `expr`."""
    if isinstance(expr, sympy.Add):
        return sum(expanded_size(a) for a in expr.args)
    if isinstance(expr, sympy.Mul):
        return math.prod(expanded_size(a) for a in expr.args)
    if isinstance(expr, sympy.Pow) and isinstance(expr.exp, sympy.Integer) and expr.exp > 0:
        n, k = int(expr.exp), expanded_size(expr.base)
        return math.comb(n + k - 1, n) if k <= MAX_EXPANDED_TERMS and n <= MAX_EXPONENT else MAX_EXPANDED_TERMS + 1
    return max([1, *(expanded_size(a) for a in expr.args)])


def order_of(expr: sympy.Expr, sizes: Sizes, what: str, clock: Clock) -> Order:
    """The Θ-order of a parsed expression."""
    return Orders(sizes, what, clock).of(expr)
