"""Hidden checks of Chapter 1: self_attention and transformer."""
from __future__ import annotations

import torch

from autograder.checks.base import Draw, FunctionCheck, Sizes, between, grid
from solutions import ch1

# (T, J, H, K, I): T = 1, H = 1 and H > 1, J = H*I and J != H*I; drawn: longer sequences, wider layers
SIZES = Sizes([(1, 4, 1, 3, 4), (5, 8, 2, 3, 4), (7, 12, 3, 5, 4), (16, 16, 4, 8, 4), (6, 10, 2, 4, 3)],
              lambda g: (between(g, 17, 40), between(g, 17, 40), between(g, 1, 4), between(g, 2, 12), between(g, 2, 8)))
# (L, T, H, K, I) of a stack with J = H*I: one to three layers; drawn: longer sequences, more layers
STACKS = Sizes([(1, 1, 1, 3, 4), (2, 5, 2, 3, 4), (3, 9, 3, 2, 2)],
               lambda g: (between(g, 1, 4), between(g, 17, 32), between(g, 1, 4), between(g, 2, 8), between(g, 2, 6)))


def _attention_args(r: Draw, T: int, J: int, H: int, K: int, I: int) -> tuple[torch.Tensor, ...]:
    """M[T,J] and one layer's W^Q, W^K, W^V."""
    M = r.randn(T, J)
    return (M, *r.qkv(H, K, I, J))


def self_attention_trials(gen: torch.Generator) -> list[tuple]:
    """Every size in both dtypes on every device."""
    return grid(gen, SIZES, _attention_args)


def transformer_trials(gen: torch.Generator) -> list[tuple]:
    """L = 1, 2, 3 layers of J = H*I, both dtypes, every device."""
    def build(r: Draw, L: int, T: int, H: int, K: int, I: int) -> tuple:
        M = r.randn(T, H * I)
        return M, [_attention_args(r, T, H * I, H, K, I)[1:] for _ in range(L)]

    return grid(gen, STACKS, build)


CHECKS = {
    "ch1.self_attention": FunctionCheck(ch1.self_attention, self_attention_trials),
    # judged over the student's own self_attention too: a wrong self_attention costs only its own cell
    "ch1.transformer": FunctionCheck(ch1.transformer, transformer_trials, upstream=("self_attention",)),
}
