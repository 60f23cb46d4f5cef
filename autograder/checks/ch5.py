"""Hidden checks of Chapter 5: the captioning equations (Problem 5.1), image_attention and attend."""
from __future__ import annotations

import torch

from autograder.checks.base import Draw, EquationCheck, EquationQuestion, FunctionCheck, Sizes, between, grid, randn
from solutions import ch5

# Problem 5.1: one decoding step over image features M[x, y, k], the four lines (attention, glimpse,
# CELL, word distribution). CELL is judged as a fixed random map of the vectors it is given, so which
# vectors it takes, and in which order, is what counts.
CAPTION_EQUATIONS = EquationQuestion(
    inputs={"z_prev": "J", "e": "U", "M": "X,Y,K", "W_att": "J,K", "W_auto": "U,J", "E": "Vocab,U"},
    defines={"alpha": "X,Y", "V": "K", "z": "J", "P": "Vocab"},
    reference=ch5.CAPTION_EQUATIONS,
    functions={"CELL": "J,K,U -> J"},
    sizes=({"J": 5, "K": 3, "X": 4, "Y": 6, "U": 2, "Vocab": 7}, {"J": 3, "K": 6, "X": 5, "Y": 2, "U": 4, "Vocab": 8}),
)

# (X, Y, J, K): a single cell, square and non-square grids (x and y must not be swapped),
# J < K, J = K and J > K (W_att must not be transposed).
SIZES = [(1, 1, 3, 2), (3, 3, 8, 4), (4, 4, 16, 8), (2, 5, 6, 3), (5, 2, 4, 7), (7, 3, 10, 10), (1, 6, 5, 5)]
# and in float64 on two of them scores in the thousands (image_attention) or arbitrary weights (attend); drawn:
# bigger grids, wider states and features
GRID_SIZES = Sizes([*SIZES, *((*size, True) for size in SIZES[2:4])],
                   lambda g: (between(g, 5, 12), between(g, 7, 12), between(g, 17, 40), between(g, 11, 32)))

def image_attention_trials(gen: torch.Generator) -> list[tuple]:
    """(z_prev[J], W_att[J,K], M[X,Y,K]) for every size, dtype and device; scores of spread ~sqrt(K),
    and in float64 on two sizes scores in the thousands (exp overflows unless the maximum is
    subtracted; float64 keeps their differences exact enough for any order of summation)."""
    def build(r: Draw, X: int, Y: int, J: int, K: int, large: bool = False) -> list[tuple]:
        if large and r.dtype != torch.float64:
            return []
        z_prev, W_att = r.randn(J), r.randn(J, K, scale=J ** -0.5)
        M = r.randn(X, Y, K, scale=0.01) + r.randn(K, scale=1000.0) if large else r.randn(X, Y, K)
        return [(z_prev, W_att, M)]

    return grid(gen, GRID_SIZES, build)


def attend_trials(gen: torch.Generator) -> list[tuple]:
    """(alpha[X,Y], M[X,Y,K]) for every size, dtype and device: alpha a softmax over all cells,
    and on two sizes arbitrary weights (attend is linear in alpha: no renormalising)."""
    def build(r: Draw, X: int, Y: int, _: int, K: int, arbitrary: bool = False) -> tuple:
        if arbitrary:
            return r.randn(X, Y), r.randn(X, Y, K)
        scores = randn(r.gen, X * Y, dtype=torch.float64, device=torch.device("cpu"), scale=2.0)
        alpha = torch.softmax(scores, dim=0).reshape(X, Y).to(dtype=r.dtype, device=r.device)
        return alpha, r.randn(X, Y, K)

    return grid(gen, GRID_SIZES, build)


CHECKS = {
    "ch5.CAPTION_EQUATIONS": EquationCheck(CAPTION_EQUATIONS),
    "ch5.image_attention": FunctionCheck(ch5.image_attention, image_attention_trials),
    "ch5.attend": FunctionCheck(ch5.attend, attend_trials),
}
