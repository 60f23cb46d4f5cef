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
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["FOLLOWS", "Fit", "fit", "spread"]

FOLLOWS = 0.1  # a curve follows the points when its largest miss is at most this fraction of their range


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
