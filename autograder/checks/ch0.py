"""Hidden checks of Chapter 0: dot_product_attention and column_attention."""
from __future__ import annotations

import torch

from autograder.checks.base import FunctionCheck, grid
from solutions import ch0

# (N, K, I): one memory slot, K = I and K != I (a scale by sqrt(I) or a sum of keys fails)
MEMORY_SIZES = [(1, 3, 3), (4, 3, 3), (7, 5, 2), (16, 8, 12), (3, 16, 4), (9, 2, 6)]
# (J, T, H, K, I): T = 1, H = 1 and H > 1, J = H*I and J != H*I, T != J (a transposed M^T fails)
COLUMN_SIZES = [(4, 1, 1, 3, 4), (8, 5, 2, 3, 4), (12, 7, 3, 5, 4), (16, 16, 4, 8, 4), (10, 6, 2, 4, 3)]


def dot_product_attention_trials(gen: torch.Generator) -> list[tuple]:
    """q[K], keys[N,K], values[N,I] of every size, both dtypes, every device."""
    return grid(gen, MEMORY_SIZES, lambda r, N, K, I: (r.randn(K), r.randn(N, K), r.randn(N, I)))


def column_attention_trials(gen: torch.Generator) -> list[tuple]:
    """MT[J,T] (items as columns) and the weights, every size, both dtypes, every device."""
    return grid(gen, COLUMN_SIZES, lambda r, J, T, H, K, I: (r.randn(J, T), *r.qkv(H, K, I, J)))


CHECKS = {
    "ch0.dot_product_attention": FunctionCheck(ch0.dot_product_attention, dot_product_attention_trials),
    "ch0.column_attention": FunctionCheck(ch0.column_attention, column_attention_trials),
}
