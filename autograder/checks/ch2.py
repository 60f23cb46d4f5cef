"""Hidden checks of Chapter 2: the spatial equations and spatial_self_attention (the running times come
from solutions.answers)."""
from __future__ import annotations

import torch

from autograder.checks.base import EquationCheck, EquationQuestion, FunctionCheck, Sizes, between, grid
from solutions import ch2

# (X, Y, J, H, K, I): a single pixel, X != Y (an x/y mix-up fails), H = 1 and H > 1, J != H*I
# drawn: bigger images (up to 9 x 9 pixels) and wider layers
SIZES = Sizes([(1, 1, 4, 1, 3, 4), (3, 4, 8, 2, 3, 4), (5, 2, 12, 3, 5, 4), (4, 4, 16, 4, 8, 4), (2, 6, 10, 2, 4, 3)],
              lambda g: (between(g, 5, 9), between(g, 7, 9), between(g, 17, 32), between(g, 1, 4), between(g, 2, 8),
                         between(g, 2, 6)))

# Problem 2.1: the tensors given and the tensors the answer defines, as the chapter states them.
SPATIAL = EquationQuestion(
    inputs={"WQ": "H,K,J", "WK": "H,K,J", "WV": "H,I,J", "M": "X,Y,J"},
    defines={"Query": "H,X,Y,K", "Key": "H,X,Y,K", "Value": "H,X,Y,I", "alpha": "H,X,Y,X,Y", "V": "H,X,Y,I"},
    reference=ch2.SPATIAL_EQUATIONS,
    sizes=({"H": 2, "K": 3, "I": 4, "J": 5, "X": 6, "Y": 7}, {"H": 3, "K": 5, "I": 2, "J": 4, "X": 7, "Y": 6},
           {"H": 1, "K": 2, "I": 3, "J": 6, "X": 4, "Y": 5}),
)


def spatial_self_attention_trials(gen: torch.Generator) -> list[tuple]:
    """M[X,Y,J] and the weights, every size, both dtypes, every device."""
    return grid(gen, SIZES, lambda r, X, Y, J, H, K, I: (r.randn(X, Y, J), *r.qkv(H, K, I, J)))


CHECKS = {
    "ch2.SPATIAL_EQUATIONS": EquationCheck(SPATIAL),
    "ch2.spatial_self_attention": FunctionCheck(ch2.spatial_self_attention, spatial_self_attention_trials),
}
