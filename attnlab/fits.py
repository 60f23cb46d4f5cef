"""Does an answer's curve follow the measured points? The book's one way of drawing an order over measurements.

An order leaves out constant factors and lower-order terms, and a measured depth often has a large constant
(the depth of a layer's fixed parts): so an answer ``f`` is drawn as ``a * f + b``, fitted to the points by least
squares (:func:`fit`), and it *follows* the points when ``a > 0`` and its largest miss is at most ``FOLLOWS`` of
the points' range. One multiplier without the constant cannot tell a right order from a wrong one when the
constant dominates::

    >>> depth = [96 + 2 * k for k in range(9)]                # a depth that climbs by 2 per doubling of T
    >>> log_T = [6 + k for k in range(9)]                      # log2(T) along T = 64 .. 16384
    >>> fit(depth, log_T).follows, fit(depth, [1.0] * 9).follows
    (True, False)

Measurements that span orders of magnitude (work, drawn on log axes) are read by :func:`spread` instead: the
ratio measured / answer along a sweep, its largest over its smallest. An answer of the right order keeps it
bounded, up to the constants the terms of a sum may have each; one of another order drifts without bound.

A sum of terms with constants of their own (``4 X^2 Y + 24 X Y^2`` measured against ``X^2*Y + X*Y^2``) is read by
:func:`fit_terms`: each term of the answer gets a factor ``a >= 0`` of its own, plus a constant, fitted to the
relative misses (a work count spans orders of magnitude: the smallest points count as much as the largest). The
answer follows the points when no point is missed by more than ``FOLLOWS_TERMS`` of its value and every term that
varies along the sweep carries a visible part (``SUPPORT``) of some point: a term the points do not need, like a
``T^4`` added to a right answer, is refused rather than given a factor of 0::

    >>> sweep = [{"X": X, "Y": 16} for X in (8, 16, 32, 64, 128)]
    >>> work = [4 * X * X * 16 + 24 * X * 16 * 16 + 7 * X * 16 for X in (8, 16, 32, 64, 128)]
    >>> fit_terms(work, sweep, "X^2*Y + X*Y^2").follows, fit_terms(work, sweep, "X*Y^2").follows
    (True, False)
    >>> fit_terms(work, sweep, "X^2*Y + X*Y^2 + X^4").follows
    False
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

__all__ = ["FOLLOWS", "FOLLOWS_TERMS", "SUPPORT", "Fit", "TermFit", "fit", "fit_terms", "spread"]

FOLLOWS = 0.1  # a curve follows the points when its largest miss is at most this fraction of their range
FOLLOWS_TERMS = 0.05  # fit_terms: an answer follows the points when it misses none by more than this fraction of it
SUPPORT = 0.01  # fit_terms: a term that varies along the sweep must carry at least this fraction of some point


@dataclass(frozen=True)
class Fit:
    """a * answer + b fitted to the measured points: the curve, and its largest miss over the points' range."""

    a: float
    b: float
    curve: list[float]
    miss: float  # max |measured - curve| / (max(measured) - min(measured)); 0 for an exact fit

    @property
    def follows(self) -> bool:
        """Whether the curve follows the points: it rises with the answer and misses by at most FOLLOWS."""
        return math.isfinite(self.miss) and self.miss <= FOLLOWS and self.a > 0


def fit(measured: Sequence[float], answer: Sequence[float]) -> Fit:
    """a * answer + b fitted to `measured` by least squares (measured[N], answer[N], N >= 2)."""
    if len(measured) != len(answer) or len(measured) < 2:
        raise ValueError(f"fit needs two or more (measured, answer) pairs, got {len(measured)} and {len(answer)}")
    n = len(measured)
    mean_f, mean_m = sum(answer) / n, sum(measured) / n
    var = sum((f - mean_f) ** 2 for f in answer)
    cov = sum((f - mean_f) * (m - mean_m) for f, m in zip(answer, measured))
    a = cov / var if var > 1e-12 * max(1.0, mean_f * mean_f) * n else 0.0  # a flat answer: only the constant
    b = mean_m - a * mean_f
    curve = [a * f + b for f in answer]
    worst = max(abs(m - c) for m, c in zip(measured, curve))
    span = max(measured) - min(measured)
    miss = worst / span if span > 0 else (0.0 if worst <= 1e-9 * max(1.0, abs(mean_m)) else math.inf)
    if not all(math.isfinite(x) for x in (a, b, miss)):
        miss = math.inf
    return Fit(a, b, curve, miss)


def spread(measured: Sequence[float], answer: Sequence[float]) -> float:
    """The largest over the smallest of measured / answer along a sweep (inf where the answer is not a
    positive finite number)."""
    if len(measured) != len(answer) or not measured:
        raise ValueError("spread needs as many answers as measurements, at least one")
    if not all(math.isfinite(f) and f > 0 for f in answer):
        return math.inf
    ratios = [m / f for m, f in zip(measured, answer)]
    return max(ratios) / min(ratios) if min(ratios) > 0 else math.inf


@dataclass(frozen=True)
class TermFit:
    """The answer's terms fitted to the measured points: the curve, its largest relative miss, whether it follows."""

    curve: list[float]
    miss: float  # max |measured - curve| / measured over the points; inf where nothing fits
    unsupported: tuple[str, ...]  # terms that vary along the sweep but carry no visible part of any point

    @property
    def follows(self) -> bool:
        """Whether the curve follows the points: every miss within FOLLOWS_TERMS, every varying term needed."""
        return math.isfinite(self.miss) and self.miss <= FOLLOWS_TERMS and not self.unsupported


def fit_terms(measured: Sequence[float], sizes: Sequence[Mapping[str, int]], answer: object) -> TermFit:
    """The terms of `answer` (an order in the sizes' names) fitted to `measured` (one value per entry of `sizes`),
    each term with a factor >= 0, plus a constant."""
    import sympy

    from attnlab.symbolic import parse_answer

    if len(measured) != len(sizes) or len(measured) < 2:
        raise ValueError(f"fit_terms needs two or more (measured, sizes) pairs, got {len(measured)} and {len(sizes)}")
    y = torch.tensor([float(m) for m in measured], dtype=torch.float64)
    if not (torch.isfinite(y).all() and (y > 0).all()):
        raise ValueError("fit_terms needs positive, finite measurements")
    terms = sympy.Add.make_args(sympy.expand(parse_answer(answer, list(sizes[0]))))
    columns = torch.tensor([[float(term.subs({s: point[s.name] for s in term.free_symbols})) for point in sizes]
                            for term in terms], dtype=torch.float64)  # [terms, points]
    # Terms that vary along the sweep, those proportional to each other in one group (L*T^3*J and L*T^2*J^2 along L):
    # the sweep can only tell the groups apart. A constant term is the constant b.
    groups: list[list[int]] = []
    for j in range(len(terms)):
        shape = columns[j] / columns[j][0]
        if not torch.isfinite(shape).all() or torch.allclose(shape, torch.ones_like(shape)):
            continue
        same = [g for g in groups if torch.allclose(columns[g[0]] / columns[g[0]][0], shape)]
        same[0].append(j) if same else groups.append([j])
    group_columns = torch.stack([columns[g].sum(0) for g in groups]) if groups else columns[:0]
    name = [" + ".join(str(terms[j]) for j in g) for g in groups]
    best = TermFit([math.nan] * len(y), math.inf, tuple(name))
    for k in range(len(groups), -1, -1):  # every subset of the groups, largest first: the best fit with a >= 0
        for subset in itertools.combinations(range(len(groups)), k):
            A = torch.cat([group_columns[list(subset)].T, torch.ones(len(y), 1, dtype=torch.float64)], dim=1)
            coef = torch.linalg.lstsq(A / y[:, None], torch.ones(len(y), 1, dtype=torch.float64)).solution.flatten()
            if (coef[:-1] < 0).any() or not torch.isfinite(coef).all():
                continue
            curve = A @ coef
            miss = float(((curve - y).abs() / y).max())
            shares = group_columns[list(subset)] * coef[:-1, None] / y  # each group's share of each point
            needed = {g for g, share in zip(subset, shares) if float(share.max()) >= SUPPORT}
            if miss < best.miss:
                best = TermFit(curve.tolist(), miss, tuple(name[g] for g in range(len(groups)) if g not in needed))
    return best
