"""Path length, measured: which input positions each output position depends on, and through how many steps.

The profiler (`attnlab.profiler`) keeps one depth per tensor; a path length is per pair of positions.
Two measurements:

* `dependence(fn, M)`: the boolean matrix A[p, q], "output position p depends on input position q",
  found by probing (method "nan": M[q] set to NaN, the output positions that turn NaN depend on it;
  structural through products, NaN * 0 = NaN, so a weight that happens to be 0 still counts; method
  "grad": the nonzeros of the Jacobian at M, which sees through an exact zero such as a masked
  attention weight: alpha = 0 times a NaN value is NaN, so a mask applied to the scores alone hides
  nothing from the NaN probe);
* `path_lengths(units, X)`: for a computation written as a sequence of units (a layer, or one
  recurrent step of every cell that can run), the fewest units on any chain of dependence from each
  input position to each output position: one per unit that computes a position, none for a
  position a unit passes through unchanged. An L-layer RNN is written on a state grid X[(l, t)]
  whose units are its wavefronts (every cell with l + t = k runs at step k); each cell on a chain
  then costs one recurrent step.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

Unit = Callable[[torch.Tensor], torch.Tensor]


def dependence(fn: Unit, M: torch.Tensor, *, in_dim: int = 0, out_dim: int = 0,
               method: str = "nan") -> torch.Tensor:
    """A[P_out, P_in] (bool): output position p (axis out_dim of fn(M)) depends on M's position q (axis in_dim)."""
    if method not in ("nan", "grad"):
        raise ValueError(f"method must be 'nan' or 'grad', not {method!r}")
    M = M.detach()
    if method == "grad":
        Jac = torch.autograd.functional.jacobian(fn, M.double())  # out.shape + M.shape
        out_shape = Jac.shape[:Jac.dim() - M.dim()]
        Jac = Jac.ne(0).movedim(out_dim, 0).movedim(len(out_shape) + in_dim, 1)
        return Jac.reshape(Jac.shape[0], Jac.shape[1], -1).any(-1)
    base = fn(M)
    if not torch.isfinite(base).all():
        raise ValueError("fn(M) is not finite before any probe: a NaN probe cannot tell what it reaches")
    rows = []
    for q in range(M.shape[in_dim]):
        probe = M.clone()
        probe.select(in_dim, q).fill_(math.nan)
        out = fn(probe).isnan().movedim(out_dim, 0)
        rows.append(out.reshape(out.shape[0], -1).any(-1))
    return torch.stack(rows, dim=1)


def path_lengths(units: Sequence[Unit], X: torch.Tensor, *, method: str = "nan") -> torch.Tensor:
    """dist[P_out, P_in] (float64): fewest units on a chain from X[q] to the last unit's output p; inf if none.

    Position axis 0 throughout. A unit that keeps the shape and returns position p unchanged,
    depending on p alone, passes p through at no cost; every position a unit computes costs 1.
    """
    dist = torch.full((X.shape[0], X.shape[0]), math.inf, dtype=torch.float64)
    dist.fill_diagonal_(0.0)
    with torch.no_grad() if method == "nan" else torch.enable_grad():
        for unit in units:
            A = dependence(unit, X, method=method)  # [P_out, P_now]
            Y = unit(X).detach()
            # via[p, q, s]: the chain reaches p from s through q
            via = torch.where(A[:, :, None], dist[None, :, :], torch.full((), math.inf, dtype=torch.float64))
            new = via.amin(dim=1) + 1.0
            if Y.shape == X.shape:
                alone = A.eq(torch.eye(X.shape[0], dtype=torch.bool)).all(dim=1)
                same = (Y == X).reshape(X.shape[0], -1).all(dim=1)
                new[alone & same] = dist[alone & same]
            dist, X = new, Y
    return dist


def rnn_units(cell: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], T: int, L: int) -> list[Unit]:
    """The wavefronts of an L-layer RNN on the state grid X[(l, t)], rows l*T + t, l = 0 the inputs.

    z_l[t] = cell(z_l[t-1], z_{l-1}[t]) with z_l[-1] = 0; unit k runs every cell with (l - 1) + t = k.
    """
    def wavefront(k: int) -> Unit:
        def unit(X: torch.Tensor) -> torch.Tensor:
            rows = list(X.unbind(0))
            for l in range(1, L + 1):
                t = k - (l - 1)
                if 0 <= t < T:
                    before = rows[l * T + t - 1] if t > 0 else torch.zeros_like(rows[l * T + t])
                    rows[l * T + t] = cell(before, X[(l - 1) * T + t])
            return torch.stack(rows)
        return unit

    def runs(k: int) -> bool:  # some cell of wavefront k exists
        return any(0 <= k - (l - 1) < T for l in range(1, L + 1))

    units, k = [], 0
    while runs(k):
        units.append(wavefront(k))
        k += 1
    return units

