"""A small exact linear-programming solver (the simplex method over the rationals).

It solves  maximize c·x  subject to  A x <= b,  x >= 0,  for b >= 0, so the slack basis
is a feasible start and one phase suffices. Bland's rule makes it terminate on the
degenerate problems the symbolic checker poses (most right-hand sides are zero).
Arithmetic is exact and quick: each sparse row holds integers over one common positive
denominator, reduced by their gcd after every pivot.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from math import gcd, lcm

Number = Fraction | int


class Unbounded(ArithmeticError):
    """The objective has no maximum on the feasible set."""


class _Row:
    """One tableau row, (coeffs · x = rhs) / den, with integer coeffs and rhs and den > 0."""

    __slots__ = ("coeffs", "rhs", "den")

    def __init__(self, coeffs: dict[int, int], rhs: int, den: int) -> None:
        """The row (coeffs, rhs) / den, reduced by the gcd."""
        g = gcd(den, rhs, *coeffs.values())
        if g > 1:
            coeffs, rhs, den = {k: v // g for k, v in coeffs.items()}, rhs // g, den // g
        self.coeffs, self.rhs, self.den = coeffs, rhs, den

    @classmethod
    def exact(cls, coeffs: Mapping[int, Number], rhs: Number) -> _Row:
        """A row from integer or rational coefficients."""
        den = lcm(getattr(rhs, "denominator", 1), *(getattr(v, "denominator", 1) for v in coeffs.values()))
        if den == 1:
            return cls({k: int(v) for k, v in coeffs.items() if v}, int(rhs), 1)
        return cls({k: int(v * den) for k, v in coeffs.items() if v}, int(rhs * den), den)

    def normalised(self, j: int) -> _Row:
        """This row divided by its coefficient in column j (> 0): that coefficient becomes 1."""
        return _Row(dict(self.coeffs), self.rhs, self.coeffs[j])

    def eliminated(self, pivot: _Row, j: int) -> _Row:
        """This row minus the multiple of the normalised `pivot` row that zeroes column j."""
        a, p = self.coeffs[j], pivot.coeffs[j]  # pivot is normalised: its column j is p / p
        coeffs = {k: v * p for k, v in self.coeffs.items()}
        for k, v in pivot.coeffs.items():
            new = coeffs.get(k, 0) - a * v
            if new:
                coeffs[k] = new
            else:
                coeffs.pop(k, None)
        return _Row(coeffs, self.rhs * p - a * pivot.rhs, self.den * p)


def maximize(objective: Mapping[int, Number], rows: Sequence[tuple[Mapping[int, Number], Number]],
             tick: Callable[[], None] = lambda: None) -> tuple[Fraction, dict[int, Fraction]]:
    """The maximum of objective·x over {x >= 0 : row·x <= b for each (row, b)} and a point attaining it.

    Every b must be >= 0. `tick` is called once per pivot (a deadline can raise from it).
    Returns (value, x) where x lists the nonzero coordinates.
    """
    width = 1 + max([k for row, _ in rows for k in row] + list(objective) + [-1])
    table: list[_Row] = []
    for i, (row, b) in enumerate(rows):
        if b < 0:
            raise ValueError("maximize needs right-hand sides >= 0")
        scaled = _Row.exact(row, b)
        scaled.coeffs[width + i] = scaled.den  # the slack (times the row's scale) starts in the basis
        table.append(scaled)
    basis = [width + i for i in range(len(rows))]
    cost = _Row.exact({k: -v for k, v in objective.items()}, 0)  # z - c·x = 0
    while True:
        tick()
        entering = min((k for k, v in cost.coeffs.items() if v < 0), default=None)
        if entering is None:
            value = Fraction(cost.rhs, cost.den)
            return value, {basis[i]: Fraction(r.rhs, r.den) for i, r in enumerate(table) if basis[i] < width and r.rhs}
        leaving = _ratio_test(table, basis, entering)
        pivot = table[leaving].normalised(entering)
        table = [pivot if i == leaving else r.eliminated(pivot, entering) if entering in r.coeffs else r
                 for i, r in enumerate(table)]
        if entering in cost.coeffs:
            cost = cost.eliminated(pivot, entering)
        basis[leaving] = entering


def _ratio_test(table: list[_Row], basis: list[int], entering: int) -> int:
    """The row that leaves the basis: smallest rhs / coefficient, ties to the smallest basic column (Bland)."""
    leaving = -1
    for i, row in enumerate(table):
        a = row.coeffs.get(entering, 0)
        if a > 0:
            if leaving < 0:
                leaving = i
                continue
            best = table[leaving]
            b = best.coeffs[entering]
            lhs, rhs = row.rhs * b, best.rhs * a  # compare row.rhs / a with best.rhs / b
            if lhs < rhs or (lhs == rhs and basis[i] < basis[leaving]):
                leaving = i
    if leaving < 0:
        raise Unbounded("the linear program is unbounded")
    return leaving
