"""Hidden checks of Chapter 3: merging query and key (EQUAL_WHEN comes from solutions.answers)."""
from __future__ import annotations

from collections.abc import Iterable

import torch

from autograder.checks.base import EquationCheck, EquationQuestion, FunctionCheck, Secret, Sizes, ValueCheck, between, grid, small_ints
from solutions import ch3

# Problem 3.1: the merged matrix from WQ and WK, as one equation or an einsum spec over (WQ, WK).
WQ_TILDE = EquationQuestion(
    inputs={"WQ": "H,K,J", "WK": "H,K,J"},
    defines={"WQ_tilde": "H,J,J"},
    reference=ch3.WQ_TILDE,
    sizes=({"H": 2, "K": 3, "J": 5}, {"H": 3, "K": 4, "J": 2}, {"H": 1, "K": 6, "J": 4}),
    operands=("WQ", "WK"),
)

# (H, K, J): K = 1, K < J, K > J, several heads; drawn: wider
MERGE_SIZES = Sizes([(1, 1, 1), (1, 3, 4), (2, 3, 8), (3, 5, 4), (4, 8, 16), (2, 4, 10)],
                    lambda g: (between(g, 1, 5), between(g, 2, 24), between(g, 17, 40)))
# (T, J, H, K): T = 1, T != J (a transposed M fails), H = 1 and H > 1; drawn: longer and wider
ATTENTION_SIZES = Sizes([(1, 4, 1, 3), (5, 8, 2, 3), (7, 12, 3, 5), (16, 16, 4, 8), (6, 10, 2, 4)],
                        lambda g: (between(g, 17, 40), between(g, 17, 40), between(g, 1, 4), between(g, 2, 12)))


def merge_query_key_trials(gen: torch.Generator) -> list[tuple]:
    """WQ, WK[H,K,J] of every size, both dtypes, every device."""
    return grid(gen, MERGE_SIZES, lambda r, H, K, J: (r.randn(H, K, J), r.randn(H, K, J)))


def attention_weights_trials(gen: torch.Generator) -> list[tuple]:
    """M[T,J], WQ, WK[H,K,J], every size, both dtypes, every device."""
    return grid(gen, ATTENTION_SIZES,
                lambda r, T, J, H, K: (r.randn(T, J), r.randn(H, K, J, scale=J ** -0.5), r.randn(H, K, J, scale=J ** -0.5)))


def merged_attention_weights_trials(gen: torch.Generator) -> list[tuple]:
    """M[T,J] and an unstructured (not symmetric, full-rank) W~Q[H,J,J]."""
    return grid(gen, ATTENTION_SIZES, lambda r, T, J, H, _: (r.randn(T, J), r.randn(H, J, J, scale=1.0 / J)))


def _ints(gen: torch.Generator, n: int, high: int) -> list[int]:
    return small_ints(gen, n, 1, high)


def _secret(trials: Iterable[tuple]) -> list[tuple]:
    """Trials drawn from the secret seed: feedback never shows them."""
    return [Secret(t) for t in trials]


def params_separate_trials(gen: torch.Generator) -> list[tuple]:
    """(K, J) pairs: K = 1, K = J/2, K > J and random ones."""
    return [(1, 1), (4, 8), (9, 3)] + _secret(zip(_ints(gen, 8, 200), _ints(gen, 8, 1000)))


def params_merged_trials(gen: torch.Generator) -> list[tuple]:
    """J = 1, 2 and random ones."""
    return [(1,), (2,)] + _secret((J,) for J in _ints(gen, 8, 1000))


def layer_params_separate_trials(gen: torch.Generator) -> list[tuple]:
    """(H, K, J): one head, K = J/2, K > J and random ones."""
    return [(1, 1, 1), (2, 4, 8), (3, 9, 3)] + _secret(zip(_ints(gen, 6, 17), _ints(gen, 6, 200), _ints(gen, 6, 1000)))


def layer_params_merged_trials(gen: torch.Generator) -> list[tuple]:
    """(H, J): one head, J = 1 and random ones."""
    return [(1, 1), (4, 2)] + _secret(zip(_ints(gen, 6, 17), _ints(gen, 6, 1000)))


CHECKS = {
    "ch3.WQ_TILDE": EquationCheck(WQ_TILDE),
    "ch3.merge_query_key": FunctionCheck(ch3.merge_query_key, merge_query_key_trials),
    "ch3.attention_weights": FunctionCheck(ch3.attention_weights, attention_weights_trials),
    "ch3.merged_attention_weights": FunctionCheck(ch3.merged_attention_weights, merged_attention_weights_trials),
    "ch3.params_separate": ValueCheck(ch3.params_separate, params_separate_trials),
    "ch3.params_merged": ValueCheck(ch3.params_merged, params_merged_trials),
    # judged over the student's own per-head counts too: a wrong per-head count costs only its own cell
    "ch3.layer_params_separate": FunctionCheck(ch3.layer_params_separate, layer_params_separate_trials,
                                               upstream=("params_separate",)),
    "ch3.layer_params_merged": FunctionCheck(ch3.layer_params_merged, layer_params_merged_trials,
                                             upstream=("params_merged",)),
}
