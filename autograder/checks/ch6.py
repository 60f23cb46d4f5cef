"""Hidden checks of Chapter 6: the two equations (P3a, P3b), embed and conv_stride2, the receptive field
and the depth to full context (CNN_TIME, RNN_TIME come from solutions.answers)."""
from __future__ import annotations

import torch

from autograder.checks.base import EquationCheck, EquationQuestion, FunctionCheck, Secret, Sizes, ValueCheck, between, grid, small_ints
from solutions import ch6

# Problem 6.1: layer 0 from the word vectors E[w, j] and the word ids w[b, t] (values < |V|).
EMBED_EQUATION = EquationQuestion(
    inputs={"E": "Vocab,J", "w": "B,T in Vocab"},
    defines={"M0": "B,T,J"},
    reference=ch6.EMBED_EQUATION,
    sizes=({"B": 2, "T": 5, "Vocab": 7, "J": 3}, {"B": 3, "T": 4, "Vocab": 6, "J": 5}),
)
# Problem 6.3: a stride-2 layer of width D, valid positions only: T2 = (T - D)//2 + 1.
STRIDE2_EQUATION = EquationQuestion(
    inputs={"M0": "B,T,J", "W": "D,J,J2", "beta": "J2"},
    defines={"M1": "B,T2,J2"},
    reference=ch6.STRIDE2_EQUATION,
    sizes=({"B": 2, "T": 13, "D": 3, "J": 4, "J2": 5, "T2": 6},
           {"B": 3, "T": 10, "D": 2, "J": 6, "J2": 4, "T2": 5},
           {"B": 2, "T": 12, "D": 4, "J": 3, "J2": 6, "T2": 5}),
)

# (B, T, |V|, J): B = 1, T = 1, repeated ids (|V| < B*T), |V| > B*T
EMBED_SIZES = Sizes([(1, 1, 3, 2), (2, 5, 4, 3), (3, 7, 50, 8), (4, 12, 6, 1), (5, 2, 100, 16)],
                    lambda g: (between(g, 2, 6), between(g, 17, 40), between(g, 101, 300), between(g, 17, 40)))  # drawn: longer, more words
# (B, T, D, J, J'): D = 1, 2, 3, 4; T = D (one output), T - D odd and even (T//2 differs from
# (T - D)//2 + 1 on most); J != J' both ways
CONV_SIZES = Sizes([(1, 1, 1, 2, 3), (2, 3, 3, 4, 4), (3, 8, 2, 3, 5), (2, 9, 3, 5, 2), (4, 10, 3, 6, 6),
                   (1, 16, 4, 2, 7), (2, 15, 3, 8, 8), (3, 6, 1, 4, 2), (2, 8, 3, 3, 4)],
                   lambda g: (between(g, 1, 4), between(g, 17, 48), between(g, 2, 6), between(g, 9, 16),
                              between(g, 9, 16)))  # drawn: longer sentences, wider filters and layers


def embed_trials(gen: torch.Generator) -> list[tuple]:
    """w[B,T] valid int64 ids (with repeats) and E[|V|,J], every size, both dtypes, every device."""
    return grid(gen, EMBED_SIZES, lambda r, B, T, V, J: (r.ids(V, B, T), r.randn(V, J)))


def conv_stride2_trials(gen: torch.Generator) -> list[tuple]:
    """M[B,T,J], W[D,J,J'], beta[J'] (nonzero), every size, both dtypes, every device."""
    return grid(gen, CONV_SIZES,
                lambda r, B, T, D, J, J2: (r.randn(B, T, J), r.randn(D, J, J2, scale=(D * J) ** -0.5), r.randn(J2, scale=0.5)))


def receptive_field_trials(gen: torch.Generator) -> list[tuple]:
    """(l, D): layer 0, D = 1 (never grows), D = 2 (powers of two), a deep stack; drawn: up to l = 200, one of
    them deeper than any public one."""
    fixed = [(0, 1), (0, 4), (1, 1), (1, 5), (6, 1), (2, 2), (3, 3), (5, 2), (4, 7), (60, 9)]
    ls, Ds = [between(gen, 61, 200), *small_ints(gen, 7, 0, 201)], small_ints(gen, 8, 1, 13)
    return fixed + [Secret(t) for t in zip(ls, Ds)]


def layers_needed_trials(gen: torch.Generator) -> list[tuple]:
    """(T, D), D >= 2: one word, T = D, T exactly r_L and one more (both sides of a boundary), T up to 1e15."""
    r = ch6.receptive_field
    fixed = [(1, 2), (1, 5), (3, 3), (2, 2), (r(4, 3), 3), (r(4, 3) + 1, 3), (r(7, 2), 2), (r(7, 2) + 1, 2),
             (r(45, 5), 5), (r(45, 5) + 1, 5), (10**15, 2)]
    Ts = [int(10 ** (15 * u)) for u in torch.rand(6, generator=gen).tolist()]
    Ds = small_ints(gen, 6, 2, 10)
    return fixed + [Secret(t) for t in zip(Ts, Ds)]


CHECKS = {
    "ch6.EMBED_EQUATION": EquationCheck(EMBED_EQUATION),
    "ch6.STRIDE2_EQUATION": EquationCheck(STRIDE2_EQUATION),
    "ch6.embed": FunctionCheck(ch6.embed, embed_trials),
    "ch6.conv_stride2": FunctionCheck(ch6.conv_stride2, conv_stride2_trials),
    "ch6.receptive_field": ValueCheck(ch6.receptive_field, receptive_field_trials),
    # judged over the student's own receptive_field too: a wrong receptive field costs only its own cell
    "ch6.layers_needed": FunctionCheck(ch6.layers_needed, layers_needed_trials, upstream=("receptive_field",)),
}
