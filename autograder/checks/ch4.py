"""Hidden checks of Chapter 4: blank_logits."""
from __future__ import annotations

import torch

from autograder.checks.base import DTYPES, FunctionCheck, devices, randn
from solutions import ch4

# (T, J, V, I): T = 1, I < J, I > J, I = J, V < I and V > I
SIZES = [(1, 3, 5, 2), (4, 6, 7, 3), (6, 4, 9, 8), (9, 5, 3, 5), (12, 16, 40, 8), (3, 2, 2, 6)]


def blank_logits_trials(gen: torch.Generator) -> list[tuple]:
    """h_fwd_prev, h_bwd_next[T,J] (different), E[V,I], W_fwd != W_bwd [I,J], every size, dtype and device."""
    trials = []
    for dev in devices():
        for dtype in DTYPES:
            for T, J, V, I in SIZES:
                h_fwd_prev, h_bwd_next = (randn(gen, T, J, dtype=dtype, device=dev) for _ in range(2))
                E = randn(gen, V, I, dtype=dtype, device=dev)
                W_fwd, W_bwd = (randn(gen, I, J, dtype=dtype, device=dev, scale=J ** -0.5) for _ in range(2))
                trials.append((h_fwd_prev, h_bwd_next, E, W_fwd, W_bwd))
    return trials


CHECKS = {
    "ch4.blank_logits": FunctionCheck(ch4.blank_logits, blank_logits_trials),
}
