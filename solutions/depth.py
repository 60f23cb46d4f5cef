"""Closed forms for the depth the parallel-time profiler measures (instructor-only).

Each function gives, as a function of the sizes and the cost model, the exact depth
(critical path) that ``attnlab.profiler.parallel_time`` reports for a reference
model; ``tests/kit/test_profiler.py`` checks every one against the profiler over grids of
sizes. ``S(N)`` is the depth of a sum of N terms: ``N`` under ``"serial"``,
``ceil(log2 N)`` under ``"log"``, ``model(N)`` for a custom callable, and 0 for N = 1
in every model (a sum of one term is that term).

The constants, read off the cost rules and the reference code:

Transformer layer (``solutions.ch1.self_attention``; M[T,J], W^Q, W^K[H,K,J], W^V[H,I,J])::

    depth_layer = (1 + S(J))      Query, Key, Value: one multiply, then the sum over j
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

Spatial transformer layer (``solutions.ch2.spatial_self_attention``; M[X,Y,J]): the
same steps with the softmax and the weighted sum running over all X Y positions::

    depth_layer = (1 + S(J)) + (1 + S(K)) + 1 + (1 + S(XY) + 1) + (1 + S(XY))
                = 6 + S(J) + S(K) + 2 S(XY)

(under "log", S(XY) = ceil(log2 XY), which can be one less than ceil(log2 X) + ceil(log2 Y)).

Language CNN (``solutions.ch6.embed`` then L ``solutions.ch6.conv_stride2`` layers with
windows of width D over J channels)::

    embedding lookup E[w]           0   (indexing)
    per layer:  unfold              0   (a view)
                (1 + S(D J))            one multiply, then the sum over (Δ, j)
                + 1                     subtract the bias
                + 1                     sigmoid
    depth = L (3 + S(D J))              = Theta(L) for parameter tensors of size O(1)

T does not appear: every window is computed at once.

RNN (``rnn`` below: z[t] = tanh(W z[t-1] + W_in x[t]), z[0] = 0, W[J,J], W_in[J,U]; inputs x[t]
of U coordinates, the word vectors' size in the book's notation)::

    per step:  (1 + S(J))   W z[t-1]: one multiply, then the sum over J
               + 1          add W_in x[t] (computed off the critical path)
               + 1          tanh
    depth = T (3 + S(J)) + max(0, S(U) - S(J))

The last term: W_in x[1] (depth 1 + S(U)) is only on the critical path when the sum over
the U inputs is longer than the sum over the J hidden units; it is 0 when U <= J.
Stacked RNN of L layers (layer l > 1 reads layer l-1's states, U = J from layer 2):
step t of layer l waits for step t-1 of layer l and step t of layer l-1, a wavefront::

    depth = (T + L - 1) (3 + S(J)) + max(0, S(U) - S(J))    = Theta(T + L)

Bidirectional RNN (``birnn`` below: a forward and a backward RNN of the same widths,
states concatenated): the two directions run side by side, so D is that of one RNN::

    depth = T (3 + S(J)) + max(0, S(U) - S(J))
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


def spatial_transformer(M: torch.Tensor, layers: Sequence[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """M[X,Y,J], layers = [(WQ, WK, WV), ...] -> M after L spatial self-attention layers."""
    for WQ, WK, WV in layers:
        M = ch2.spatial_self_attention(M, WQ, WK, WV)
    return M


# ---------------------------------------------------------------------------- language CNN

def conv_layer_depth(D: int, J: int, model: Model) -> float:
    """One solutions.ch6.conv_stride2 layer, windows of D over J channels: 3 + S(D J)."""
    contraction = 1 + S(D * J, model)
    bias, sigmoid = 1, 1
    return contraction + bias + sigmoid


def language_cnn_depth(L: int, D: int, J: int, model: Model) -> float:
    """embed (0) then L conv_stride2 layers of width D over J channels: L (3 + S(D J))."""
    return L * conv_layer_depth(D, J, model)


def language_cnn(w: torch.Tensor, E: torch.Tensor, layers: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """w[B,T] word ids, E[|V|,J], layers = [(W[D,J,J], beta[J]), ...] -> M_L[B, T_L, J]."""
    M = ch6.embed(w, E)
    for W, beta in layers:
        M = ch6.conv_stride2(M, W, beta)
    return M


# ---------------------------------------------------------------------------- RNNs

def rnn_depth(T: int, U: int, J: int, model: Model, L: int = 1) -> float:
    """L stacked RNN layers over T steps (input U, hidden J): (T + L - 1)(3 + S(J)) + max(0, S(U) - S(J))."""
    step = 1 + S(J, model) + 1 + 1  # W z: multiply + sum over J; + W_in x; tanh
    return (T + L - 1) * step + max(0, S(U, model) - S(J, model))


def birnn_depth(T: int, U: int, J: int, model: Model) -> float:
    """Bidirectional RNN: both directions in parallel, so the depth of one RNN."""
    return rnn_depth(T, U, J, model)


def rnn_steps(xs: Sequence[torch.Tensor], W: torch.Tensor, W_in: torch.Tensor) -> list[torch.Tensor]:
    """xs = [x[U]] * T, W[J,J], W_in[J,U] -> [z[J]] * T, z_t = tanh(W z_{t-1} + W_in x_t), z_0 = 0."""
    z = W.new_zeros(W.shape[0])
    zs = []
    for x in xs:
        z = torch.tanh(W @ z + W_in @ x)
        zs.append(z)
    return zs


def rnn(x: torch.Tensor, W: torch.Tensor, W_in: torch.Tensor) -> torch.Tensor:
    """x[T,U], W[J,J], W_in[J,U] -> z[T,J]."""
    return torch.stack(rnn_steps(list(x.unbind(0)), W, W_in))


def stacked_rnn(x: torch.Tensor, layers: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """x[T,U], layers = [(W[J,J], W_in[J,U or J]), ...] -> top layer's z[T,J].

    Each step's state stays its own tensor between layers (not stacked and sliced):
    the profiler keeps depth per tensor, so this is what lets it see the wavefront.
    """
    xs = list(x.unbind(0))
    for W, W_in in layers:
        xs = rnn_steps(xs, W, W_in)
    return torch.stack(xs)


def birnn(x: torch.Tensor, Wf: torch.Tensor, Wf_in: torch.Tensor, Wb: torch.Tensor, Wb_in: torch.Tensor) -> torch.Tensor:
    """x[T,U] -> [T, 2J]: forward states z_fwd[t] (from x_1..x_t) ; backward z_bwd[t] (from x_T..x_t)."""
    xs = list(x.unbind(0))
    fwd = rnn_steps(xs, Wf, Wf_in)
    bwd = rnn_steps(xs[::-1], Wb, Wb_in)[::-1]
    return torch.cat([torch.stack(fwd), torch.stack(bwd)], dim=-1)
