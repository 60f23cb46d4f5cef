"""Hidden checks of Chapter 0: dot_product_attention and column_attention."""
from __future__ import annotations

import torch

from autograder.checks.base import FunctionCheck, Sizes, between, grid
from solutions import ch0

# (N, K, I): one memory slot, K = I and K != I (a scale by sqrt(I) or a sum of keys fails); drawn: more slots
# and wider vectors than any of these
MEMORY_SIZES = Sizes([(1, 3, 3), (4, 3, 3), (7, 5, 2), (16, 8, 12), (3, 16, 4), (9, 2, 6)],
                     lambda g: (between(g, 17, 48), between(g, 2, 24), between(g, 2, 24)))
# (J, T, H, K, I): T = 1, H = 1 and H > 1, J = H*I and J != H*I, T != J (a transposed M^T fails); drawn: longer
COLUMN_SIZES = Sizes([(4, 1, 1, 3, 4), (8, 5, 2, 3, 4), (12, 7, 3, 5, 4), (16, 16, 4, 8, 4), (10, 6, 2, 4, 3)],
                     lambda g: (between(g, 17, 40), between(g, 17, 40), between(g, 1, 4), between(g, 2, 12),
                                between(g, 2, 8)))


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
