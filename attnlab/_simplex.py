"""A small exact linear-programming solver (simplex method over the rationals).

It solves  maximize c·x  subject to  A x <= b,  x >= 0,  for b >= 0, so the slack basis
is a feasible start and one phase suffices. Rows are sparse ({column: coefficient}),
arithmetic is exact (`fractions.Fraction`), and Bland's rule makes it terminate on the
degenerate problems the symbolic checker poses (most right-hand sides are zero).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction

Row = dict[int, Fraction]


class Unbounded(ArithmeticError):
    """The objective has no maximum on the feasible set."""


def maximize(objective: Mapping[int, Fraction | int], rows: Sequence[tuple[Mapping[int, Fraction | int], Fraction | int]],
             tick: Callable[[], None] = lambda: None) -> tuple[Fraction, dict[int, Fraction]]:
    """The maximum of objective·x over {x >= 0 : row·x <= b for each (row, b)} and a point attaining it.

    Every b must be >= 0. `tick` is called once per pivot (a deadline can raise from it).
    Returns (value, x) where x lists the nonzero coordinates.
    """
    width = 1 + max([j for row, _ in rows for j in row] + [j for j in objective] + [-1])
    table: list[Row] = []
    rhs: list[Fraction] = []
    basis: list[int] = []
    for i, (row, b) in enumerate(rows):
        if b < 0:
            raise ValueError("maximize needs right-hand sides >= 0")
        entries = {j: Fraction(v) for j, v in row.items() if v}
        entries[width + i] = Fraction(1)
        table.append(entries)
        rhs.append(Fraction(b))
        basis.append(width + i)
    cost: Row = {j: -Fraction(v) for j, v in objective.items() if v}  # reduced costs of the row z - c·x = 0
    value = Fraction(0)
    while True:
        tick()
        entering = min((j for j, v in cost.items() if v < 0), default=None)
        if entering is None:
            return value, {basis[i]: rhs[i] for i in range(len(rows)) if basis[i] < width and rhs[i]}
        leaving = _ratio_test(table, rhs, basis, entering)
        value = _pivot(table, rhs, cost, value, leaving, entering)
        basis[leaving] = entering


def _ratio_test(table: list[Row], rhs: list[Fraction], basis: list[int], entering: int) -> int:
    """The row that leaves the basis: smallest ratio, ties to the smallest basic column (Bland)."""
    best: tuple[Fraction, int] | None = None
    leaving = -1
    for i, row in enumerate(table):
        a = row.get(entering)
        if a is not None and a > 0:
            key = (rhs[i] / a, basis[i])
            if best is None or key < best:
                best, leaving = key, i
    if best is None:
        raise Unbounded("the linear program is unbounded")
    return leaving


def _pivot(table: list[Row], rhs: list[Fraction], cost: Row, value: Fraction, i: int, j: int) -> Fraction:
    """Pivot on (row i, column j) in place; return the new objective value."""
    pivot_row = table[i]
    a = pivot_row[j]
    if a != 1:
        for k in pivot_row:
            pivot_row[k] /= a
        rhs[i] /= a
    for r, row in enumerate(table):
        factor = row.get(j)
        if r != i and factor is not None:
            _subtract(row, factor, pivot_row)
            rhs[r] -= factor * rhs[i]
    factor = cost.get(j)
    if factor is not None:
        _subtract(cost, factor, pivot_row)
        value -= factor * rhs[i]
    return value


def _subtract(row: Row, factor: Fraction, pivot_row: Row) -> None:
    """row -= factor * pivot_row, dropping the zeros."""
    for k, v in pivot_row.items():
        new = row.get(k, 0) - factor * v
        if new:
            row[k] = new
        else:
            row.pop(k, None)
