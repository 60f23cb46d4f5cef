"""Hidden checks of Chapter 6: embed and conv_stride2 (CNN_TIME, RNN_TIME come from solutions.answers)."""
from __future__ import annotations

import torch

from autograder.checks.base import DTYPES, FunctionCheck, devices, randn
from solutions import ch6

# (B, T, V, I): B = 1, T = 1, repeated ids (V < B*T), V > B*T
EMBED_SIZES = [(1, 1, 3, 2), (2, 5, 4, 3), (3, 7, 50, 8), (4, 12, 6, 1), (5, 2, 100, 16)]
# (B, T, D, I, I'): D = 1, 2, 3, 4; T = D (one output), T - D odd and even; I != I' both ways
CONV_SIZES = [(1, 1, 1, 2, 3), (2, 3, 3, 4, 4), (3, 8, 2, 3, 5), (2, 9, 3, 5, 2), (4, 10, 3, 6, 6),
              (1, 16, 4, 2, 7), (2, 15, 3, 8, 8), (3, 6, 1, 4, 2)]


def embed_trials(gen: torch.Generator) -> list[tuple]:
    """w[B,T] valid int64 ids (with repeats) and E[V,I], every size, both dtypes, every device."""
    trials = []
    for dev in devices():
        for dtype in DTYPES:
            for B, T, V, I in EMBED_SIZES:
                w = torch.randint(0, V, (B, T), generator=gen).to(dev)
                trials.append((w, randn(gen, V, I, dtype=dtype, device=dev)))
    return trials


def conv_stride2_trials(gen: torch.Generator) -> list[tuple]:
    """L[B,T,I], W[D,I,I'], bias[I'] (nonzero), every size, both dtypes, every device."""
    trials = []
    for dev in devices():
        for dtype in DTYPES:
            for B, T, D, I, I2 in CONV_SIZES:
                L = randn(gen, B, T, I, dtype=dtype, device=dev)
                W = randn(gen, D, I, I2, dtype=dtype, device=dev, scale=(D * I) ** -0.5)
                bias = randn(gen, I2, dtype=dtype, device=dev, scale=0.5)
                trials.append((L, W, bias))
    return trials


CHECKS = {
    "ch6.embed": FunctionCheck(ch6.embed, embed_trials),
    "ch6.conv_stride2": FunctionCheck(ch6.conv_stride2, conv_stride2_trials),
}
