"""attnlab.paths: per-position dependence and path lengths, each on a case worked out by hand."""
from __future__ import annotations

import math

import pytest
import torch

from attnlab.paths import dependence, path_lengths, rnn_units

T, J, D = 8, 4, 3
g = torch.Generator().manual_seed(0)
M = torch.randn(T, J, generator=g, dtype=torch.float64)
W = torch.randn(D, J, J, generator=g, dtype=torch.float64)
W_z, W_in = (torch.randn(J, J, generator=g, dtype=torch.float64) for _ in range(2))


def attention(M: torch.Tensor) -> torch.Tensor:
    """One head, Query = Key = Value = M: [T, J] -> [T, J]."""
    return torch.softmax(M @ M.T / math.sqrt(M.shape[1]), dim=-1) @ M


def causal(M: torch.Tensor) -> torch.Tensor:
    """The same with the scores of later positions masked out (masked_fill before the softmax)."""
    later = torch.ones(len(M), len(M), dtype=torch.bool).triu(1)
    return torch.softmax((M @ M.T).masked_fill(later, -math.inf), dim=-1) @ M


def conv(M: torch.Tensor) -> torch.Tensor:
    """A stride-2 layer of width D, valid positions only: [T, J] -> [(T - D) // 2 + 1, J]."""
    return torch.sigmoid(torch.stack([sum(M[2 * t + d] @ W[d] for d in range(D))
                                      for t in range((len(M) - D) // 2 + 1)]))


def cell(z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """One recurrent step."""
    return torch.tanh(z @ W_z + x @ W_in)


def test_attention_depends_on_every_position():
    assert dependence(attention, M).all()


def test_nan_probe_is_structural_and_grad_sees_masks():
    # NaN * 0 = NaN: a zero weight still counts (structure, not value) ...
    assert dependence(lambda X: X @ torch.zeros(J, J, dtype=X.dtype), M).diagonal().all()
    # ... so a mask on the scores alone hides nothing from NaN (alpha = 0 times a NaN value is NaN),
    assert dependence(causal, M).all()
    # while the Jacobian's nonzeros are exactly the causal pattern.
    assert torch.equal(dependence(causal, M, method="grad"), torch.ones(T, T, dtype=torch.bool).tril())


def test_stride2_receptive_fields():
    X = torch.randn(15, J, generator=g, dtype=torch.float64)
    one = dependence(conv, X)
    assert torch.equal(one[0], torch.arange(15) < D)          # r_1 = D words, from word 0
    assert torch.equal(one[1], (torch.arange(15) >= 2) & (torch.arange(15) < 2 + D))
    two = dependence(lambda X: conv(conv(X)), X)
    assert torch.equal(two[0], torch.arange(15) < 3 * D - 2)  # r_2 = 3D - 2 (Chapter 6's recursion)


def test_layers_cost_one_each():
    assert path_lengths([attention] * 3, M)[-1, 0] == 3
    X = torch.randn(15, J, generator=g, dtype=torch.float64)
    dist = path_lengths([conv] * 3, X)
    assert dist.shape == (1, 15) and (dist == 3).all()
    assert math.isinf(path_lengths([conv], X)[0, -1])  # the last word is outside the first window: no chain


def test_pass_through_costs_nothing_and_a_positionwise_unit_one():
    kept = path_lengths([lambda X: X.clone()], M)
    assert (kept.diagonal() == 0).all() and torch.isinf(kept[~torch.eye(T, dtype=torch.bool)]).all()
    assert (path_lengths([torch.tanh], M).diagonal() == 1).all()


@pytest.mark.parametrize("L", [1, 3])
def test_rnn_chain_is_T_plus_L_minus_1(L):
    X = torch.cat([M, torch.zeros(L * T, J, dtype=torch.float64)])
    dist = path_lengths(rnn_units(cell, T, L), X)
    top = dist[L * T:, :T]  # the top layer's states against the words
    assert top[T - 1, 0] == T + L - 1
    assert top[T - 1, T - 1] == L
    assert torch.isinf(top.triu(1)[top.triu(1) != 0]).all()  # no state depends on a later word


def test_refuses_what_it_cannot_probe():
    with pytest.raises(ValueError, match="not finite"):
        dependence(lambda X: X / 0, M)
    with pytest.raises(ValueError, match="method"):
        dependence(attention, M, method="guess")
