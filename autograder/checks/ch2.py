"""Hidden checks of Chapter 2: spatial_self_attention (the answers come from solutions.answers)."""
from __future__ import annotations

import torch

from autograder.checks.base import DTYPES, FunctionCheck, devices, qkv, randn
from solutions import ch2

# (X, Y, J, H, K, I): a single pixel, X != Y (an x/y mix-up fails), H = 1 and H > 1, J != H*I
SIZES = [(1, 1, 4, 1, 3, 4), (3, 4, 8, 2, 3, 4), (5, 2, 12, 3, 5, 4), (4, 4, 16, 4, 8, 4), (2, 6, 10, 2, 4, 3)]


def spatial_self_attention_trials(gen: torch.Generator) -> list[tuple]:
    """h[X,Y,J] and the weights, every size, both dtypes, every device."""
    trials = []
    for dev in devices():
        for dtype in DTYPES:
            for X, Y, J, H, K, I in SIZES:
                h = randn(gen, X, Y, J, dtype=dtype, device=dev)
                WQ, WK, WV = qkv(gen, H, K, I, J, dtype=dtype, device=dev)
                trials.append((h, WQ, WK, WV))
    return trials


CHECKS = {
    "ch2.spatial_self_attention": FunctionCheck(ch2.spatial_self_attention, spatial_self_attention_trials),
}
