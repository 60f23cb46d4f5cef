"""Hidden checks of Chapter 1: self_attention and transformer."""
from __future__ import annotations

import torch

from autograder.checks.base import DTYPES, FunctionCheck, devices, qkv, randn
from solutions import ch1

# (T, J, H, K, I): T = 1, H = 1 and H > 1, J = H*I and J != H*I
SIZES = [(1, 4, 1, 3, 4), (5, 8, 2, 3, 4), (7, 12, 3, 5, 4), (16, 16, 4, 8, 4), (6, 10, 2, 4, 3)]


def _attention_args(gen: torch.Generator, T: int, J: int, H: int, K: int, I: int,
                    dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, ...]:
    M = randn(gen, T, J, dtype=dtype, device=device)
    return (M, *qkv(gen, H, K, I, J, dtype=dtype, device=device))


def self_attention_trials(gen: torch.Generator) -> list[tuple]:
    """Every size in both dtypes on every device."""
    return [_attention_args(gen, *size, dtype, dev) for dev in devices() for dtype in DTYPES for size in SIZES]


def transformer_trials(gen: torch.Generator) -> list[tuple]:
    """L = 1, 2, 3 layers of J = H*I, both dtypes, every device."""
    trials = []
    for dev in devices():
        for dtype in DTYPES:
            for L, (T, H, K, I) in zip((1, 2, 3), ((1, 1, 3, 4), (5, 2, 3, 4), (9, 3, 2, 2))):
                M = randn(gen, T, H * I, dtype=dtype, device=dev)
                layers = [_attention_args(gen, T, H * I, H, K, I, dtype, dev)[1:] for _ in range(L)]
                trials.append((M, layers))
    return trials


CHECKS = {
    "ch1.self_attention": FunctionCheck(ch1.self_attention, self_attention_trials),
    # judged over the student's own self_attention too: a wrong self_attention costs only its own cell
    "ch1.transformer": FunctionCheck(ch1.transformer, transformer_trials, upstream=("self_attention",)),
}
