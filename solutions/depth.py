"""Closed forms for the depth the parallel-time profiler measures (instructor-only).

Each function gives, as a function of the sizes and the cost model, the exact depth
(critical path) that ``attnlab.profiler.parallel_time`` reports for a reference
model; ``tests/test_profiler.py`` checks every one against the profiler over grids of
sizes. ``S(N)`` is the depth of a sum of N terms: ``N`` under ``"serial"``,
``ceil(log2 N)`` under ``"log"``, ``model(N)`` for a custom callable, and 0 for N = 1
in every model (a sum of one term is that term).

The constants, read off the cost rules and the reference code:

Transformer layer (``solutions.ch1.self_attention``; M[T,J], W^Q, W^K[H,K,J], W^V[H,I,J])::

    D_layer = (1 + S(J))      Query, Key, Value: one multiply, then the sum over j
                              (the three projections run side by side)
            + (1 + S(K))      scores: one multiply, then the sum over k
            + 1               the scale 1/sqrt(K): one divide
            + (1 + S(T) + 1)  softmax over t': exp, the sum Z over t', divide by Z
            + (1 + S(T))      weighted sum of values: one multiply, the sum over t'
            = 6 + S(J) + S(K) + 2 S(T)

The concatenation of the heads (permute + reshape) costs 0, and H does not appear:
the heads run side by side. L layers (with J = H I, so every layer sees width J)::

    serial:  L (6 + J + K + 2T)                                   = Theta(L (J + K + T))
    log:     L (6 + ceil(log2 J) + ceil(log2 K) + 2 ceil(log2 T)) = Theta(L (log J + log K + log T))

Spatial transformer layer (``solutions.ch2.spatial_self_attention``; h[X,Y,J]): the
same steps with the softmax and the weighted sum running over all X Y positions::

    D_layer = (1 + S(J)) + (1 + S(K)) + 1 + (1 + S(XY) + 1) + (1 + S(XY))
            = 6 + S(J) + S(K) + 2 S(XY)

(under "log", S(XY) = ceil(log2 XY), which can be one less than ceil(log2 X) + ceil(log2 Y)).

Language CNN (``solutions.ch6.embed`` then L ``solutions.ch6.conv_stride2`` layers with
windows of width D over I channels)::

    embedding lookup E[w]           0   (indexing)
    per layer:  unfold              0   (a view)
                (1 + S(D I))            one multiply, then the sum over (dt, i)
                + 1                     subtract the bias
                + 1                     sigmoid
    D = L (3 + S(D I))                  = Theta(L) for parameter tensors of size O(1)

T does not appear: every window is computed at once.

RNN (``rnn`` below: h[t] = tanh(W h[t-1] + U x[t]), h[0] = 0, W[J,J], U[J,I])::

    per step:  (1 + S(J))   W h[t-1]: one multiply, then the sum over J
               + 1          add U x[t] (computed off the critical path)
               + 1          tanh
    D = T (3 + S(J)) + max(0, S(I) - S(J))

The last term: U x[1] (depth 1 + S(I)) is only on the critical path when the sum over
the I inputs is longer than the sum over the J hidden units; it is 0 when I <= J.
Stacked RNN of L layers (layer l > 1 reads layer l-1's states, I = J from layer 2):
step t of layer l waits for step t-1 of layer l and step t of layer l-1, a wavefront::

    D = (T + L - 1) (3 + S(J)) + max(0, S(I) - S(J))    = Theta(T + L)

Bidirectional RNN (``birnn`` below: a forward and a backward RNN of the same widths,
states concatenated): the two directions run side by side, so D is that of one RNN::

    D = T (3 + S(J)) + max(0, S(I) - S(J))
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from solutions import ch2, ch6

Model = str | Callable[[int], float]


def S(N: int, model: Model) -> float:
    """Depth of a sum of N terms: N (serial), ceil(log2 N) (log), model(N); 0 for N <= 1."""
    if N <= 1:
        return 0
    if model == "serial":
        return N
    if model == "log":
        return math.ceil(math.log2(N))
    if callable(model):
        return model(N)
    raise ValueError(f"unknown model {model!r}")


# ---------------------------------------------------------------------------- transformer

def self_attention_depth(T: int, J: int, K: int, model: Model) -> float:
    """One layer of solutions.ch1.self_attention: 6 + S(J) + S(K) + 2 S(T)."""
    projections = 1 + S(J, model)
    scores = 1 + S(K, model)
    scale = 1
    softmax = 1 + S(T, model) + 1
    weighted_sum = 1 + S(T, model)
    return projections + scores + scale + softmax + weighted_sum


def transformer_depth(L: int, T: int, J: int, K: int, model: Model) -> float:
    """solutions.ch1.transformer with L layers (J = H I): L (6 + S(J) + S(K) + 2 S(T))."""
    return L * self_attention_depth(T, J, K, model)


def spatial_self_attention_depth(X: int, Y: int, J: int, K: int, model: Model) -> float:
    """One layer of solutions.ch2.spatial_self_attention: 6 + S(J) + S(K) + 2 S(XY)."""
    return self_attention_depth(X * Y, J, K, model)


def spatial_transformer_depth(L: int, X: int, Y: int, J: int, K: int, model: Model) -> float:
    """L spatial self-attention layers (J = H I): L (6 + S(J) + S(K) + 2 S(XY))."""
    return L * spatial_self_attention_depth(X, Y, J, K, model)


def spatial_transformer(h: torch.Tensor, layers: Sequence[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """h[X,Y,J], layers = [(WQ, WK, WV), ...] -> h after L spatial self-attention layers."""
    for WQ, WK, WV in layers:
        h = ch2.spatial_self_attention(h, WQ, WK, WV)
    return h


# ---------------------------------------------------------------------------- language CNN

def conv_layer_depth(D: int, I: int, model: Model) -> float:
    """One solutions.ch6.conv_stride2 layer, windows of D over I channels: 3 + S(D I)."""
    contraction = 1 + S(D * I, model)
    bias, sigmoid = 1, 1
    return contraction + bias + sigmoid


def language_cnn_depth(L: int, D: int, I: int, model: Model) -> float:
    """embed (0) then L conv_stride2 layers of width D over I channels: L (3 + S(D I))."""
    return L * conv_layer_depth(D, I, model)


def language_cnn(w: torch.Tensor, E: torch.Tensor, layers: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """w[B,T] word ids, E[V,I], layers = [(W[D,I,I], bias[I]), ...] -> L_L[B, T_L, I]."""
    h = ch6.embed(w, E)
    for W, bias in layers:
        h = ch6.conv_stride2(h, W, bias)
    return h


# ---------------------------------------------------------------------------- RNNs

def rnn_depth(T: int, I: int, J: int, model: Model, L: int = 1) -> float:
    """L stacked RNN layers over T steps (input I, hidden J): (T + L - 1)(3 + S(J)) + max(0, S(I) - S(J))."""
    step = 1 + S(J, model) + 1 + 1  # W h: multiply + sum over J; + U x; tanh
    return (T + L - 1) * step + max(0, S(I, model) - S(J, model))


def birnn_depth(T: int, I: int, J: int, model: Model) -> float:
    """Bidirectional RNN: both directions in parallel, so the depth of one RNN."""
    return rnn_depth(T, I, J, model)


def rnn_steps(xs: Sequence[torch.Tensor], W: torch.Tensor, U: torch.Tensor) -> list[torch.Tensor]:
    """xs = [x[I]] * T, W[J,J], U[J,I] -> [h[J]] * T, h_t = tanh(W h_{t-1} + U x_t), h_0 = 0."""
    h = W.new_zeros(W.shape[0])
    hs = []
    for x in xs:
        h = torch.tanh(W @ h + U @ x)
        hs.append(h)
    return hs


def rnn(x: torch.Tensor, W: torch.Tensor, U: torch.Tensor) -> torch.Tensor:
    """x[T,I], W[J,J], U[J,I] -> h[T,J]."""
    return torch.stack(rnn_steps(list(x.unbind(0)), W, U))


def stacked_rnn(x: torch.Tensor, layers: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """x[T,I], layers = [(W[J,J], U[J,I or J]), ...] -> top layer's h[T,J].

    Each step's state stays its own tensor between layers (not stacked and sliced):
    the profiler keeps depth per tensor, so this is what lets it see the wavefront.
    """
    xs = list(x.unbind(0))
    for W, U in layers:
        xs = rnn_steps(xs, W, U)
    return torch.stack(xs)


def birnn(x: torch.Tensor, Wf: torch.Tensor, Uf: torch.Tensor, Wb: torch.Tensor, Ub: torch.Tensor) -> torch.Tensor:
    """x[T,I] -> [T, 2J]: forward states h_fwd[t] (from x_1..x_t) ; backward h_bwd[t] (from x_T..x_t)."""
    xs = list(x.unbind(0))
    fwd = rnn_steps(xs, Wf, Uf)
    bwd = rnn_steps(xs[::-1], Wb, Ub)[::-1]
    return torch.cat([torch.stack(fwd), torch.stack(bwd)], dim=-1)
