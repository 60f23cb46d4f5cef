# %% [markdown]
# # Chapter 7. The whole Transformer block
#
# Chapter 1's layer is the seeds' layer: attention and nothing else. The block that every
# Transformer since the original stacks puts four things around it: a projection of the
# concatenated heads back to the width $J$, residual connections, layer normalisation and
# a feed-forward layer. Seed 004 has two of the ideas: the three projections of every head
# are one product with the matrices stacked, and the concatenated heads are fed through a
# feed-forward layer. Chapter 0 showed both as demonstrations; here you build them and the
# rest, and the causal mask that turns the block into the layer of a decoder-only language
# model.
#
# You will
#
# * implement `stacked_projection`, `attention` (with and without the causal mask),
#   `output_projection`, `layer_norm`, `feed_forward` and, from them, `block`, each in
#   PyTorch on whatever device and dtype the inputs have;
# * give the block's parallel running time and its work in `BLOCK_TIME` and `BLOCK_WORK`,
#   and see the profiler measure both;
# * train a small decoder-only language model built from your `block` on the grammar of
#   Chapter 4, with and without the mask, and see why the mask is needed;
# * time the block with your attention and with PyTorch's fused kernel in its place.
#
# The problems build on seed 004 (OSU CSE 5523, lecture notes 17: the stacked product and
# the feed-forward layer after the heads) in this book's notation; the rest of the block is
# the standard one of the original Transformer and of GPT-2.

# %% [markdown]
# ## Notation
#
# <!-- letters: E:wordvectors H:heads I:valuesize J:width K:keysize L:layers M:vectors O:order P:probability
# T:length V:output W:weights \alpha:attention \beta:bias \epsilon:epsilon h:heads i:valuesize j:width
# k:keysize s:score t:length w:word -->
#
# The book's letters (the [notation page](../front/notation.md) has the whole table), and
# the same things in seed 004:
#
# | book | meaning | seed 004 |
# |---|---|---|
# | $M[t, j]$, $t < T$, $j < J$ | the vectors a block reads, one row per position | $\mathbf{H}_{\ell-1}$, one column per item |
# | $h < H$, $k < K$, $i < I$, $J = HI$ | heads, query/key and value coordinates | $h$; $D \times D$ matrices |
# | $W^{\text{QKV}}$, shape $[H(2K+I), J]$ | the three projections of all heads, stacked | $\left[\mathbf{Q}_{\ell,h}; \mathbf{K}_{\ell,h}; \mathbf{V}_{\ell,h}\right]$ |
# | $W^O$, shape $[J, HI]$ | the projection of the concatenated heads | (none) |
# | $W^1$, $\beta^1$, $W^2$, $\beta^2$ | the feed-forward layer's weights and biases, $4J$ hidden units | FF, "e.g. sigmoid" |
# | $\text{gain}[j]$, $\text{shift}[j]$, $\epsilon$ | layer normalisation's parameters and its small constant | (none) |
#
# A weight matrix is stored as `torch.nn.Linear` stores it, output coordinate first:
# $W^1$ maps $J$ numbers to $4J$ and has shape $[4J, J]$.

# %%
import math
import statistics
import time

import matplotlib.pyplot as plt
import torch
from torch import nn

from attnlab.grading import is_grading
from attnlab.testing import Explained, expect_answer, expect_close, expect_like, expect_shape

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print("active device:", device)


def random_weights(g: torch.Generator, J: int, H: int, K: int, I: int, hidden: int,
                   dtype: torch.dtype = torch.float64) -> dict[str, torch.Tensor]:
    """One block's parameters, drawn from `g` (gains near 1, shifts and biases near 0)."""
    def r(*shape: int, scale: float) -> torch.Tensor:
        return (scale * torch.randn(*shape, generator=g, dtype=torch.float64)).to(dtype)
    return {"W": r(H * (2 * K + I), J, scale=J ** -0.5), "WO": r(J, H * I, scale=(H * I) ** -0.5),
            "gain1": 1 + r(J, scale=0.1), "shift1": r(J, scale=0.1),
            "gain2": 1 + r(J, scale=0.1), "shift2": r(J, scale=0.1),
            "W1": r(hidden, J, scale=J ** -0.5), "beta1": r(hidden, scale=0.1),
            "W2": r(J, hidden, scale=hidden ** -0.5), "beta2": r(J, scale=0.1)}


# %% [markdown]
# ## 7.1 One product for all projections
#
# Chapter 1 computes each head's queries, keys and values with three sums over $j$. Stack
# the rows of $W^Q$ (head by head, $H K$ rows), then those of $W^K$ ($HK$ rows), then those
# of $W^V$ ($HI$ rows) into one matrix $W^{\text{QKV}}$ of shape $[H(2K+I), J]$: one matrix
# product $M\,(W^{\text{QKV}})^\top$, of shape $[T, H(2K+I)]$, then holds every projection
# of every head. Row $hK + k$ of $W^{\text{QKV}}$ is $W^Q[h,k,:]$, row $HK + hK + k$ is
# $W^K[h,k,:]$ and row $2HK + hI + i$ is $W^V[h,i,:]$. One product of a large matrix keeps
# a parallel machine busier than three small ones, and the block reads $M$ once.
#
# **Problem 7.1.** Implement `stacked_projection(M, W, H, K)`: one matrix product, then
# split and rearrange it into $\text{Query}[h,t,k]$, $\text{Key}[h,t,k]$ and
# $\text{Value}[h,t,i]$ (the value size $I$ follows from the shape of `W`).

# %% nbgrader={"grade": false, "grade_id": "stacked_projection", "locked": false, "schema_version": 3, "solution": true}
def stacked_projection(M: torch.Tensor, W: torch.Tensor, H: int,
                       K: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """M[T, J], W[H*(2K+I), J] (W^Q's rows, then W^K's, then W^V's) -> Query[H, T, K], Key[H, T, K],
    Value[H, T, I]."""
    ### BEGIN SOLUTION
    T = M.shape[0]
    I = (W.shape[0] - 2 * H * K) // H
    P = M @ W.T  # [T, H(2K+I)]: every projection of every head, one product
    Query, Key, Value = P.split([H * K, H * K, H * I], dim=1)
    return (Query.reshape(T, H, K).transpose(0, 1), Key.reshape(T, H, K).transpose(0, 1),
            Value.reshape(T, H, I).transpose(0, 1))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_stacked_projection", "locked": true, "points": 2, "schema_version": 3, "solution": false}
g = torch.Generator().manual_seed(0)
T, J, H, K, I = 5, 8, 2, 3, 4
M = torch.randn(T, J, generator=g, dtype=torch.float64)
WQ, WK = torch.randn(H, K, J, generator=g, dtype=torch.float64), \
    torch.randn(H, K, J, generator=g, dtype=torch.float64)
WV = torch.randn(H, I, J, generator=g, dtype=torch.float64)
W = torch.cat([WQ.reshape(H * K, J), WK.reshape(H * K, J), WV.reshape(H * I, J)])  # [H(2K+I), J]
got = stacked_projection(M, W, H, K)
if not isinstance(got, tuple) or len(got) != 3:
    raise Explained("stacked_projection must return a tuple (Query, Key, Value).")
Query, Key, Value = got
for x, shape, name in ((Query, (H, T, K), "Query"), (Key, (H, T, K), "Key"),
                       (Value, (H, T, I), "Value")):
    expect_shape(x, shape, f"{name} from stacked_projection(M[5,8], W[20,8], H=2, K=3)")
    expect_like(x, M, f"{name} from stacked_projection")
# Chapter 1's three sums, one head at a time: what the one product must reproduce.
expected = {"Query": torch.einsum("hkj,tj->htk", WQ, M), "Key": torch.einsum("hkj,tj->htk", WK, M),
            "Value": torch.einsum("hij,tj->hti", WV, M)}
if torch.allclose(Query, expected["Key"]) or torch.allclose(Key, expected["Query"]):
    raise Explained("Query and Key are swapped: W's first H*K "
                    "rows are W^Q's, the next H*K rows W^K's.")
P = M @ W.T
if torch.allclose(Query, P[:, :H * K].reshape(H, T, K)):
    raise Explained("Query is the product's columns reshaped straight to [H, T, K]: "
                    "that mixes positions and heads. Column h*K + k of a row t belongs "
                    "to head h: reshape to [T, H, K] first, then move h to the front.")
for name, x in (("Query", Query), ("Key", Key), ("Value", Value)):
    expect_close(x, expected[name], f"{name} from stacked_projection",
                 hint="Row h*K + k of W's query block is W^Q[h, k, :]; split the product's "
                      "columns into the three blocks, then each block's columns into heads.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch7.stacked_projection", stacked_projection)
### END HIDDEN TESTS

# %% [markdown]
# ## 7.2 Attention, and the causal mask
#
# The middle of the layer is Chapter 1's: scores, a softmax over the key position $t'$, a
# weighted average of the values,
#
# $$
# \begin{aligned}
# s[h,t,t'] &= \frac{1}{\sqrt K}\sum_k \text{Query}[h,t,k]\,\text{Key}[h,t',k], \\
# \alpha[h,t,t'] &= \operatorname*{softmax}_{t'} s[h,t,t'], \\
# V[h,t,i] &= \sum_{t'} \alpha[h,t,t']\,\text{Value}[h,t',i].
# \end{aligned}
# $$
#
# A **decoder-only language model** (GPT) predicts word $t+1$ at position $t$ <!-- not a claim: a definition -->. Trained on
# whole sentences at once, position $t$ must not read the words after it, or it can copy
# the word it is asked to predict (Section 7.7 shows it does). The **causal mask** sets
# $s[h,t,t'] = -\infty$ wherever $t' > t$ before the softmax, so that
# $\alpha[h,t,t'] = 0$ there and the weights over $t' \le t$ still sum to 1. Position $0$
# then attends to itself alone. Nothing else changes: the same block, with the mask,
# is the layer of a decoder.
#
# **Problem 7.2.** Implement `attention(Query, Key, Value, causal)`: without the mask when
# `causal` is false, with it when true.

# %% nbgrader={"grade": false, "grade_id": "attention", "locked": false, "schema_version": 3, "solution": true}
def attention(Query: torch.Tensor, Key: torch.Tensor, Value: torch.Tensor,
              causal: bool = False) -> torch.Tensor:
    """Query[H, T, K], Key[H, T, K], Value[H, T, I] -> V[H, T, I]; with `causal`, position t reads
    t' <= t only."""
    ### BEGIN SOLUTION
    K = Query.shape[-1]
    s = torch.einsum("htk,hTk->htT", Query, Key) / math.sqrt(K)
    if causal:
        T = s.shape[-1]
        future = torch.ones(T, T, dtype=torch.bool, device=s.device).triu(1)  # t' > t
        s = s.masked_fill(future, -math.inf)
    alpha = torch.softmax(s, dim=-1)
    return torch.einsum("htT,hTi->hti", alpha, Value)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_attention", "locked": true, "points": 2, "schema_version": 3, "solution": false}
g = torch.Generator().manual_seed(1)
H, T, K, I = 2, 6, 3, 4
Query, Key = torch.randn(H, T, K, generator=g, dtype=torch.float64), \
    torch.randn(H, T, K, generator=g, dtype=torch.float64)
Value = torch.randn(H, T, I, generator=g, dtype=torch.float64)
for causal in (False, True):
    out = attention(Query, Key, Value, causal)
    expect_shape(out, (H, T, I),
                 f"attention(Query[2,6,3], Key[2,6,3], Value[2,6,4], causal={causal})")
    expect_like(out, Query, f"attention(..., causal={causal})")
    if not torch.isfinite(out).all():
        raise Explained(f"attention(..., causal={causal}) has NaN or inf: a row of scores that is "
                        "-inf everywhere has no softmax. Every position can read at least itself.")
expect_like(attention(Query.float(), Key.float(), Value.float(), True), Query.float(),
            "attention on float32 inputs")
# By hand, one head, K = 1: Query = Key = 0 gives equal scores, so every weight is 1 / (the number
# of positions read).
zeros, Value1 = torch.zeros(1, 3, 1, dtype=torch.float64), \
    torch.tensor([[[3.0], [6.0], [9.0]]], dtype=torch.float64)
expect_close(attention(zeros, zeros, Value1, False),
             torch.full((1, 3, 1), 6.0, dtype=torch.float64),
             "attention without the mask on equal scores "
             "(every position averages all three values: 6)")
by_hand = attention(zeros, zeros, Value1, True)
if torch.allclose(by_hand, torch.tensor([[[1.0], [3.0], [6.0]]], dtype=torch.float64)):
    raise Explained("With the mask, equal scores give position 1 the weights "
                    "(1/2, 1/2, 0) and a sum of 4.5; yours gives 3: the future "
                    "weights were set to zero after the softmax, so the others "
                    "no longer sum to 1. Mask the scores, before the softmax.")
expect_close(by_hand, torch.tensor([[[3.0], [4.5], [6.0]]], dtype=torch.float64),
             "causal attention on equal scores (position t averages the values of positions 0..t)",
             hint="Position t reads t' <= t: itself and the positions before it, never those "
                  "after.")
# Without the mask, attention has no notion of order; with it, position t is the unmasked attention
# of the first t+1.
perm = torch.tensor([3, 0, 5, 1, 2, 4])
expect_close(attention(Query[:, perm], Key[:, perm], Value[:, perm]),
             attention(Query, Key, Value)[:, perm],
             "attention(Query[:, perm], ...) without the mask",
             hint="softmax over t', the key position")
full = attention(Query, Key, Value, True)
for t in range(T):
    expect_close(full[:, t], attention(Query[:, :t + 1], Key[:, :t + 1], Value[:, :t + 1])[:, t],
                 f"causal attention at position {t}",
                 hint=f"Position {t} must read positions 0..{t} (t' <= t) and "
                      "nothing after them, as if the sentence ended there.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch7.attention", attention)
### END HIDDEN TESTS

# %% [markdown]
# ## 7.3 Concatenate the heads, then project
#
# The heads' outputs are concatenated, head $0$ first, as in Chapter 1: coordinate
# $hI + i$ of position $t$ is $V[h,t,i]$. Seed 004 feeds the concatenation to a
# feed-forward layer; the Transformer first mixes the heads with one more matrix, $W^O$ of
# shape $[J, HI]$, so that the block's output has width $J$ whatever the heads are:
#
# $$
# \text{Attn}[t, j] = \sum_{h, i} W^O[j, hI + i]\; V[h, t, i].
# $$
#
# **Problem 7.3.** Implement `output_projection(V, WO)`.

# %% nbgrader={"grade": false, "grade_id": "output_projection", "locked": false, "schema_version": 3, "solution": true}
def output_projection(V: torch.Tensor, WO: torch.Tensor) -> torch.Tensor:
    """V[H, T, I], WO[J, H*I] -> [T, J]: the heads concatenated (head 0 first), times WO
    transposed."""
    ### BEGIN SOLUTION
    H, T, I = V.shape
    concatenated = V.transpose(0, 1).reshape(T, H * I)  # [T, H*I], head 0's I columns first
    return concatenated @ WO.T
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_output_projection", "locked": true, "points": 1, "schema_version": 3, "solution": false}
g = torch.Generator().manual_seed(2)
H, T, I, J = 2, 3, 4, 5
V = torch.randn(H, T, I, generator=g, dtype=torch.float64)
WO = torch.randn(J, H * I, generator=g, dtype=torch.float64)
out = output_projection(V, WO)
expect_shape(out, (T, J), "output_projection(V[2,3,4], WO[5,8])")
expect_like(out, V, "output_projection")
# Head by head: head h meets only columns h*I .. (h+1)*I - 1 of WO.
by_head = [output_projection(V[h:h + 1], WO[:, h * I:(h + 1) * I]) for h in range(H)]
if torch.allclose(out, output_projection(V.flip(0), WO)):
    raise Explained("output_projection gives the same result with the heads in reverse order: the "
                    "heads are concatenated head 0 first, so head 0 meets WO's first I columns.")
expect_close(
    out, sum(by_head),
    "output_projection, compared with the sum of each head through its own I columns of WO",
             hint="Concatenate the heads per position ([H, T, I] -> [T, H*I], head 0 first: "
                  "move t to the front before reshaping), then multiply by WO transposed.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch7.output_projection", output_projection)
### END HIDDEN TESTS

# %% [markdown]
# ## 7.4 Layer normalisation
#
# Layer normalisation rescales each position's vector to mean $0$ and variance $1$ over
# its $J$ coordinates, then gives each coordinate a learned gain and shift:
#
# $$
# \text{mean}[t] = \frac1J \sum_j M[t,j], \qquad
# \text{var}[t] = \frac1J \sum_j \big(M[t,j] - \text{mean}[t]\big)^2,
# $$
# $$
# \text{LN}(M)[t,j] = \text{gain}[j]\,\frac{M[t,j] - \text{mean}[t]}{\sqrt{\text{var}[t] + \epsilon}} + \text{shift}[j].
# $$
#
# The variance divides by $J$, not $J - 1$ (it is the variance of these $J$ numbers, not an
# estimate of a population's), as `torch.nn.LayerNorm` does; $\epsilon = 10^{-5}$ <!-- given -->
# keeps the division finite for a constant vector. The Annotated Transformer's `LayerNorm`
# differs twice, $(M[t,j] - \text{mean}[t])/(\text{std}[t] + \epsilon)$ with a standard deviation that
# divides by $J - 1$ and $\epsilon$ outside the square root; RMSNorm (as in LLaMA) subtracts no mean
# and has no shift, $\text{gain}[j]\,M[t,j]/\sqrt{\frac1J \sum_j M[t,j]^2 + \epsilon}$ <!-- not a claim: what those implementations compute -->. Each position is normalised on its own:
# nothing is shared between positions. A batch normalisation would share statistics across
# the batch (and across positions, for a sequence): its running statistics serve at
# inference, but while training its statistics are noisy for small or variable batches, and
# padding and the positions a causal model may not see yet enter them <!-- not a claim: why language models use layer normalisation -->.
#
# **Problem 7.4.** Implement `layer_norm(M, gain, shift, eps)`.

# %% nbgrader={"grade": false, "grade_id": "layer_norm", "locked": false, "schema_version": 3, "solution": true}
def layer_norm(M: torch.Tensor, gain: torch.Tensor, shift: torch.Tensor,
               eps: float = 1e-5) -> torch.Tensor:
    """M[T, J], gain[J], shift[J] -> [T, J]: each row normalised over its J coordinates (variance
    divided by J)."""
    ### BEGIN SOLUTION
    mean = M.mean(dim=-1, keepdim=True)
    var = ((M - mean) ** 2).mean(dim=-1, keepdim=True)
    return gain * (M - mean) / torch.sqrt(var + eps) + shift
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_layer_norm", "locked": true, "points": 2, "schema_version": 3, "solution": false}
g = torch.Generator().manual_seed(3)
T, J = 6, 4
M = 3 + 2 * torch.randn(T, J, generator=g, dtype=torch.float64)
one, zero = torch.ones(J, dtype=torch.float64), torch.zeros(J, dtype=torch.float64)
out = layer_norm(M, one, zero)
expect_shape(out, (T, J), "layer_norm(M[6,4], gain[4], shift[4])")
expect_like(out, M, "layer_norm")
if torch.allclose(
    out.mean(dim=0), zero, atol=1e-6) and not torch.allclose(
        out.mean(dim=1), torch.zeros(T, dtype=torch.float64), atol=1e-6):
    raise Explained("Each column of your output has mean 0, not each row: you normalised over "
                    "the positions t. Normalise each position (row) over its J coordinates.")
expect_close(out.mean(dim=1), torch.zeros(T, dtype=torch.float64),
             "the mean of each row of layer_norm(M, 1, 0)",
             atol=1e-6, hint="Subtract each row's mean over its J coordinates.")
second = (out ** 2).mean(dim=1)  # each row's variance after normalising, dividing by J
if torch.allclose(second, torch.full((T,), (J - 1) / J, dtype=torch.float64), atol=1e-3):
    raise Explained("Each row of layer_norm(M, 1, 0) has variance "
                    f"{(J - 1) / J:.3f} = (J-1)/J, not 1: your variance "
                    "divides by J - 1 (torch.var's default), the layer's by J.")
expect_close(second, torch.ones(T, dtype=torch.float64),
             "the variance of each row of layer_norm(M, 1, 0)", atol=1e-3,
             hint="Divide by the square root of each row's variance (plus eps).")
gain, shift = torch.randn(J, generator=g, dtype=torch.float64), \
    torch.randn(J, generator=g, dtype=torch.float64)
expect_close(layer_norm(M, gain, shift), gain * out + shift, "layer_norm(M, gain, shift)",
             hint="gain and shift act coordinate by coordinate, after "
                  "normalising: gain[j] * normalised + shift[j].")
row = torch.tensor([[0.0, 1.0, 2.0, 3.0]], dtype=torch.float64)  # mean 1.5, variance 1.25
expect_close(layer_norm(row, one, zero, eps=0.1), (row - 1.5) / math.sqrt(1.25 + 0.1),
             "layer_norm(M, 1, 0, eps=0.1) of the row [0, 1, 2, 3]",
             hint="eps goes inside the square root, (M - mean) / "
                  "sqrt(var + eps), not (M - mean) / (sqrt(var) + eps).")
flat = torch.full((2, J), 7.0, dtype=torch.float64)
expect_close(layer_norm(flat, one, shift), shift.expand(2, J), "layer_norm of a constant row",
             hint="A constant row has variance 0: eps inside the square "
                  "root keeps it finite, and the output is shift.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch7.layer_norm", layer_norm)
### END HIDDEN TESTS

# %% [markdown]
# ## 7.5 The position-wise feed-forward layer
#
# Seed 004's feed-forward layer ("e.g. sigmoid" there), as the Transformer has it: two layers
# with a ReLU between, the same for every position (nothing mixes positions here; attention
# did that), with $4J$ hidden units in the original Transformer (your function takes any
# number):
#
# $$
# \text{FF}(M)[t, :] = \beta^2 + W^2\, \max\!\big(0,\; W^1 M[t, :] + \beta^1\big),
# $$
#
# the maximum taken coordinate by coordinate (the ReLU).
#
# **Problem 7.5.** Implement `feed_forward(M, W1, beta1, W2, beta2)`.

# %% nbgrader={"grade": false, "grade_id": "feed_forward", "locked": false, "schema_version": 3, "solution": true}
def feed_forward(M: torch.Tensor, W1: torch.Tensor, beta1: torch.Tensor, W2: torch.Tensor,
                 beta2: torch.Tensor) -> torch.Tensor:
    """M[T, J], W1[hidden, J], beta1[hidden], W2[J, hidden], beta2[J] -> [T, J]: ReLU(M W1^T +
    beta1) W2^T + beta2."""
    ### BEGIN SOLUTION
    hidden = torch.relu(M @ W1.T + beta1)  # [T, hidden units]
    return hidden @ W2.T + beta2
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_feed_forward", "locked": true, "points": 1, "schema_version": 3, "solution": false}
g = torch.Generator().manual_seed(4)
T, J, units = 3, 4, 6
M = torch.randn(T, J, generator=g, dtype=torch.float64)
W1, W2 = torch.randn(units, J, generator=g, dtype=torch.float64), \
    torch.randn(J, units, generator=g, dtype=torch.float64)
beta1, beta2 = torch.randn(units, generator=g, dtype=torch.float64), \
    torch.randn(J, generator=g, dtype=torch.float64)
out = feed_forward(M, W1, beta1, W2, beta2)
expect_shape(out, (T, J), "feed_forward(M[3,4], W1[6,4], beta1[6], W2[4,6], beta2[4])")
expect_like(out, M, "feed_forward")
# By hand, J = 1, two hidden units: W1 = [[1], [-1]], beta1 = [0, -1], W2 = [[1, 1]], beta2 = [-5]
# on M = [[3]]: hidden = ReLU([3, -3 - 1]) = [3, 0], output = 3 + 0 - 5 = -2. Each slip gives its
# own value, named below.
hand = feed_forward(torch.tensor([[3.0]], dtype=torch.float64),
                    torch.tensor([[1.0], [-1.0]], dtype=torch.float64),
                    torch.tensor([0.0, -1.0], dtype=torch.float64),
                    torch.tensor([[1.0, 1.0]], dtype=torch.float64),
                    torch.tensor([-5.0], dtype=torch.float64))
for value, slip in ((0.0,
                     "the output went through a ReLU too; the ReLU is between the two layers only"),
                    (-3.0, "beta1 was added after the ReLU; it goes inside, ReLU(M W1^T + beta1)"),
                    (-6.0,
                     "nothing is between the two layers; the hidden layer is ReLU(M W1^T + beta1)"),
                    (3.0, "beta2 is missing; it is added after the second layer")):
    if (isinstance(hand, torch.Tensor) and hand.shape == (1, 1)
            and abs(float(hand[0, 0]) - value) < 1e-9):
        raise Explained("On the hand-checked example you return "
                        f"{value:g} where -2 is expected: {slip}.")
expect_close(hand, torch.tensor([[-2.0]], dtype=torch.float64),
             "feed_forward on the hand-checked example (expected [[-2]])",
             hint="The hidden layer is ReLU(M W1^T + beta1), the ReLU being max(0, x) coordinate "
                  "by coordinate (no other nonlinearity), and the output is hidden W2^T + beta2.")
expect_close(feed_forward(M[[2, 0, 1]], W1, beta1, W2, beta2), out[[2, 0, 1]],
             "feed_forward(M[perm])",
             hint="Every position goes through the same layer on its own.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch7.feed_forward", feed_forward)
### END HIDDEN TESTS

# %% [markdown]
# ## 7.6 The block: residual connections and where the normalisation sits
#
# A block adds what each part computes to what it read (a **residual connection**), so a
# block whose parts output zero passes its input on unchanged (some models initialise the
# output projections to zero to start that way; `random_weights` does not), and the gradient reaches
# the first blocks of a deep stack through the additions undamped. There are two ways to
# place the normalisation. The original Transformer (**post-LN**) normalises after each
# addition, $\text{LN}(M + \text{part}(M))$. GPT-2 and most models since (**pre-LN**)
# normalise only what goes *into* each part and leave the sum alone <!-- not a claim: the literature's designs -->:
#
# $$
# \text{Mid} = M + \text{Attn}\big(\text{LN}_1(M)\big), \qquad
# \text{Out} = \text{Mid} + \text{FF}\big(\text{LN}_2(\text{Mid})\big),
# $$
#
# where $\text{Attn}$ is Sections 7.1-7.3 in order (stacked projection, attention, output
# projection) and $\text{LN}_1$, $\text{LN}_2$ have their own gain and shift. This book
# uses **pre-LN**: the path from the input to the output is then the identity plus
# updates, so a stack of blocks trains without the careful warm-up of the learning rate
# that post-LN needs, which matters for the small models of Section 7.7 trained in
# seconds. (Pre-LN models add one last normalisation after the final block; the model of
# Section 7.7 does.)
#
# **Problem 7.6.** Implement `block(M, params, H, K, causal)`, with your functions of
# Problems 7.1-7.5, called with the arguments in the order of their signatures. `params`
# holds `W`, `WO`, `gain1`, `shift1`, `gain2`, `shift2`, `W1`, `beta1`, `W2` and `beta2`.
# (It is graded with your own five functions inside: a mistake in one of them is not
# charged twice.)

# %% nbgrader={"grade": false, "grade_id": "block", "locked": false, "schema_version": 3, "solution": true}
def block(M: torch.Tensor, params: dict[str, torch.Tensor], H: int, K: int,
          causal: bool = False) -> torch.Tensor:
    """M[T, J] -> [T, J]: one pre-LN Transformer block (attention, then the feed-forward layer, each
    with its residual)."""
    ### BEGIN SOLUTION
    p = params
    Query, Key, Value = stacked_projection(layer_norm(M, p["gain1"], p["shift1"]), p["W"], H, K)
    Mid = M + output_projection(attention(Query, Key, Value, causal), p["WO"])
    return Mid + feed_forward(layer_norm(Mid, p["gain2"], p["shift2"]), p["W1"], p["beta1"],
                              p["W2"], p["beta2"])
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_block", "locked": true, "points": 2, "schema_version": 3, "solution": false}
g = torch.Generator().manual_seed(5)
T, H, K, I = 5, 2, 3, 4
J = H * I
params = random_weights(g, J, H, K, I, 4 * J)
M = torch.randn(T, J, generator=g, dtype=torch.float64)
out = block(M, params, H, K)
expect_shape(out, (T, J), "block(M[5,8], params, H=2, K=3)")
expect_like(out, M, "block")
# With WO, W2 and beta2 zero (and gain2 one), both parts add nothing: the residual connections pass
# M through unchanged.
silent = params | {"WO": torch.zeros_like(params["WO"]), "W2": torch.zeros_like(params["W2"]),
                   "beta2": torch.zeros_like(params["beta2"]),
                   "gain2": torch.ones_like(params["gain2"])}
quiet = block(M, silent, H, K)
if torch.allclose(quiet.mean(dim=1), params["shift2"].mean().expand(T), atol=1e-6):
    raise Explained("With both parts silent your block normalises its output (each "
                    "row's mean is shift2's): that is post-LN. This chapter's block "
                    "is pre-LN: normalise what goes into each part, not the sum.")
expect_close(quiet, M, "block with WO = 0 and W2 = beta2 = 0 (both parts add nothing)",
             hint="Each part's output is added to what the part read (a residual "
                  "connection): with both parts silent, the block returns its input.")
# Each part adds something: silence one part at a time and the other still changes M.
no_attention = params | {"WO": torch.zeros_like(params["WO"])}
no_ff = params | {"W2": torch.zeros_like(params["W2"]), "beta2": torch.zeros_like(params["beta2"])}
for what, p in (("the attention part", no_ff), ("the feed-forward part", no_attention)):
    if torch.allclose(block(M, p, H, K), M):
        raise Explained(f"With only {what} active, your block returns M "
                        f"unchanged: {what} is not added to the stream.")
# causal is passed on to attention (checked where your attention itself tells the two apart).
Query, Key, Value = (torch.randn(H, T, d, generator=g, dtype=torch.float64) for d in (K, K, I))
if not torch.allclose(attention(Query, Key, Value, True), attention(Query, Key, Value, False)):
    if torch.allclose(block(M, params, H, K, True), block(M, params, H, K, False)):
        raise Explained("block(..., causal=True) equals block(..., "
                        "causal=False): pass causal on to attention.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch7.block", block)
### END HIDDEN TESTS

# %% [markdown] tags=["solutions-only"]
# ### Worked solution (Problems 7.1-7.6)
#
# *Problem 7.1.* `M @ W.T` is $[T, H(2K+I)]$; `split` cuts its columns into the three blocks; in the
# query block, column $hK + k$ is head $h$'s coordinate $k$, so `reshape(T, H, K)` and a
# transpose give $[H, T, K]$. Reshaping straight to $[H, T, K]$ is the classic mistake: it
# reads the columns of position 0 as head 0's first positions.
#
# *Problem 7.2.* `triu(1)` marks $t' > t$; the mask goes on the scores, where $-\infty$ becomes a
# weight of exactly $0$ and the others still sum to $1$. Masking the weights after the
# softmax leaves rows that sum to less than 1 <!-- not a claim: the softmax's arithmetic -->; `triu(0)` would mask position $t$ itself and
# leave row $0$ with nothing (NaN).
#
# *Problem 7.3.* `V.transpose(0, 1)` is $[T, H, I]$: reshaped to $[T, HI]$, head 0's coordinates
# come first in each row. Then one product with $W^O$ transposed.
#
# *Problem 7.4.* `mean(dim=-1)` twice; `torch.var` divides by $J-1$ unless told `unbiased=False`
# (`correction=0`); $\epsilon$ goes under the square root, as in `torch.nn.LayerNorm`.
#
# *Problem 7.5.* Two products and one ReLU; the output layer has no ReLU (the residual adds it to
# a stream that may be negative).
#
# *Problem 7.6.* Two residual sums, each around one normalised part.

# %% [markdown]
# ## 7.7 A decoder-only language model
#
# A **decoder-only language model** is a stack of causal blocks between word vectors and a
# softmax over the vocabulary. At position $t$ it reads words $0..t$ and gives
# $P(w_{t+1} \mid w_0 \dots w_t)$; the product of these is the probability of the sentence,
# and sampling from them one word at a time generates text. Below, a model with $L = 2$
# blocks of your `block`, $J = 32$, $H = 2$, $K = I = 16$, $2J$ hidden units, word vectors
# $E$ shared by the input and the output, and a learned vector per position, is trained
# for a few hundred steps on sentences of the grammar of Chapter 4 (`attnlab.data.grammar`),
# twice: with the causal mask and without it. A sentence is $w_0 \dots w_{T+1}$ =
# `<bos>`, its $T$ words, `<eos>`, and the model predicts every word and the final `<eos>` <!-- not a claim: the set-up -->.
#
# The grammar gives the exact probability of every sentence, so the best possible
# next-word loss is known: the entropy of the grammar per predicted word <!-- not a claim: a definition -->. A model that ignores both the context and
# the position can do no better than the unigram loss (the entropy of the words' frequencies) <!-- not a claim: information theory, the best loss of a model that sees neither the words before nor the position -->.
#
# (This cell trains a model with your own functions: run it yourself once Problems 7.1-7.6
# pass their tests.)

# %% tags=["answer-output"]
from torch.func import vmap

from attnlab.data import grammar

GRAMMAR = grammar.GRAMMAR
train_set, held_out = GRAMMAR.sample(4000, seed=1), GRAMMAR.sample(500, seed=2)
words = len(GRAMMAR.vocab)
# nats per predicted word
OPTIMUM = float(-GRAMMAR.log_prob(held_out).sum() / (held_out.lengths + 1).sum())
targets = held_out.ids[:, 1:][held_out.ids[:, 1:] != grammar.PAD]
counts = torch.bincount(train_set.ids[:, 1:].flatten(), minlength=words).double()
counts[grammar.PAD] = 0
UNIGRAM = float(-(counts / counts.sum())[targets].log().mean())


class DecoderLM(nn.Module):
    """Word vectors E[w, j] plus a vector per position, L blocks of `block`, a last LN, scores E .
    state."""

    def __init__(self, n_words: int, causal: bool, J: int = 32, H: int = 2, hidden: int = 64,
                 L: int = 2,
                 T_max: int = 16) -> None:
        super().__init__()
        self.H, self.K, self.causal = H, J // H, causal
        self.E = nn.Parameter(0.3 * torch.randn(n_words, J))
        self.position = nn.Parameter(0.3 * torch.randn(T_max, J))
        g = torch.Generator().manual_seed(0)
        drawn = (random_weights(g, J, H, J // H, J // H, hidden, torch.float32) for _ in range(L))
        self.blocks = nn.ModuleList(nn.ParameterDict({k: nn.Parameter(w) for k, w in p.items()})
                                    for p in drawn)
        self.gain, self.shift = nn.Parameter(torch.ones(J)), nn.Parameter(torch.zeros(J))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """ids[B, T] -> log P(next word)[B, T, n_words]: your block, once per sentence (vmap over
        the batch)."""
        M = self.E[ids] + self.position[:ids.shape[1]]
        for weights in self.blocks:
            params = dict(weights)
            M = vmap(lambda m, params=params: block(m, params, self.H, self.K, self.causal))(M)
        return torch.log_softmax(layer_norm(M, self.gain, self.shift) @ self.E.T, dim=-1)


def next_word_loss(model: nn.Module, batch: grammar.Sentences) -> torch.Tensor:
    """Mean -log P(w_{t+1} | the input) over every predicted word of the batch (nats)."""
    ids = batch.ids.to(device)
    log_p = model(ids[:, :-1])
    nll = -log_p.gather(-1, ids[:, 1:, None]).squeeze(-1)
    live = torch.arange(ids.shape[1] - 1, device=device)[None] <= batch.lengths.to(device)[:, None]
    return (nll * live).sum() / live.sum()


def generation_loss(model: nn.Module, batch: grammar.Sentences) -> float:
    """The same loss when position t is given only words 0..t, as when generating: each prefix run
    on its own."""
    ids, lengths = batch.ids.to(device), batch.lengths.to(device)
    total, count = 0.0, 0
    with torch.no_grad():
        for t in range(ids.shape[1] - 1):
            live = t <= lengths
            # the last position's prediction, nothing after it given
            log_p = model(ids[live, :t + 1])[:, -1]
            total += float(-log_p.gather(-1, ids[live, t + 1, None]).sum())
            count += int(live.sum())
    return total / count


def fit(causal: bool, steps: int = 400, batch_size: int = 64) -> tuple[nn.Module, float, float]:
    """A DecoderLM trained with or without the mask: (model, last training batch's loss,
    seconds)."""
    torch.manual_seed(0)
    model = DecoderLM(words, causal).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(0)
    start = time.perf_counter()
    for _ in range(steps):
        loss = next_word_loss(
            model, train_set[torch.randint(0, len(train_set), (batch_size,), generator=g)])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model, loss.item(), time.perf_counter() - start


results = {}
if not is_grading():
    print(f"held-out optimum {OPTIMUM:.3f} nats per word, unigram {UNIGRAM:.3f}")
    threads = torch.get_num_threads()
    # a model this small runs fastest on one thread (and on a busy machine, several
    if device.type == "cpu":
        # threads of one parallel region wait for each other's time slices)
        torch.set_num_threads(1)
    for causal in (True, False):
        model, train_loss, seconds = fit(causal)
        with torch.no_grad():
            held = float(next_word_loss(model, held_out))
        results[causal] = {"model": model, "train": train_loss, "held_out": held,
                           "generating": generation_loss(model, held_out)}
        print(f"{'with' if causal else 'without'} the mask: training loss {train_loss:.3f}, "
              f"held-out {held:.3f}, held-out when generating {results[causal]['generating']:.3f} "
              f"nats per word ({seconds:.1f} s on {device.type})")  # claim: ch7-decoder
    torch.set_num_threads(threads)
    print(f"with the mask: {results[True]['held_out'] - OPTIMUM:.3f} nats above the optimum, "
          f"{UNIGRAM - results[True]['held_out']:.3f} below the unigram loss")  # claim: ch7-margins

# %% [markdown]
# The run above prints, for each model, its loss on the last training batch, on held-out
# sentences, and on the same held-out sentences when each position is given only the
# words before it, as when generating <!-- claim: ch7-decoder -->, and how far the masked
# model is from the optimum and from the unigram loss <!-- claim: ch7-margins -->. With the
# mask, the held-out loss and the generating loss are the same <!-- claim: ch7-generating-equal -->, within 0.15 nats of the grammar's optimum <!-- claim: ch7-near-optimum --> and more than a nat
# below the unigram loss <!-- claim: ch7-beats-unigram -->: the model has learned the
# grammar. Without the mask, the training loss and the held-out loss are both below 0.05 <!-- claim: ch7-copies -->: position $t$ reads word $t+1$ and copies it. Given only the
# words before, as a generating model is, the same model is worse than a unigram model <!-- claim: ch7-cannot-generate -->: it learned to copy, not to predict.

# %% tags=["solutions-only"]
if results:
    masked, unmasked = results[True], results[False]
    assert masked["held_out"] < OPTIMUM + 0.15, \
        "the masked model is within 0.15 nats of the optimum"  # claim: ch7-near-optimum
    assert masked["held_out"] < UNIGRAM - 1.0, \
        "the masked model beats the unigram loss by a nat"  # claim: ch7-beats-unigram
    assert abs(masked["generating"] - masked["held_out"]) < 1e-4, \
        "masked: generating = held-out"  # claim: ch7-generating-equal
    assert unmasked["train"] < 0.05 and unmasked["held_out"] < 0.05, \
        "without the mask it copies"  # claim: ch7-copies
    assert unmasked["generating"] > UNIGRAM, \
        "without the mask it cannot generate"  # claim: ch7-cannot-generate

# %% [markdown]
# **What depends on what.** `attnlab.paths.dependence(fn, M, method=...)` finds which input
# positions each output position of `fn` depends on. Its default probe sets one input row to
# NaN and sees which outputs turn NaN; that cannot see a mask, because a masked weight is
# $0$ and $0 \cdot \text{NaN} = \text{NaN}$: the NaN of a future value still flows through
# the weighted average. Its `"grad"` method reads the nonzeros of the Jacobian
# $\partial\,\text{Out}[t,:] / \partial M[t',:]$, which are exactly zero for a masked
# position. Below, one causal block of random weights and one without the mask, both ways
# (this cell uses your own `block`).

# %% tags=["answer-output"]
from attnlab.paths import dependence

g = torch.Generator().manual_seed(6)
T, H, K, I = 6, 2, 4, 4
probe_params = random_weights(g, H * I, H, K, I, 4 * H * I)
M = torch.randn(T, H * I, generator=g, dtype=torch.float64)
seen = {(causal, method): dependence(lambda m, causal=causal: block(m, probe_params, H, K, causal),
                                     M, method=method)
        for causal in (True, False) for method in ("grad", "nan")}
for (causal, method), A in seen.items():
    print(f"{'causal' if causal else 'unmasked'} block, {method} probe: output "
          f"position t depends on input t' (rows t, columns t'):\n{A.int()}")

# %% tags=["solutions-only"]
lower = torch.ones(T, T, dtype=torch.bool).tril()
assert torch.equal(seen[True, "grad"], lower), \
    "the Jacobian of a causal block is lower-triangular"  # claim: ch7-jacobian
assert seen[True, "nan"].all() and seen[False, "grad"].all(), \
    "the NaN probe sees through the mask"  # claim: ch7-nan-blind

# %% [markdown]
# The Jacobian's nonzeros of the causal block are exactly the lower triangle, $t' \le t$:
# output position $t$ depends on input positions $0..t$ and on no later one <!-- claim: ch7-jacobian -->; without the mask, and for the NaN probe even with it, every
# output depends on every input <!-- claim: ch7-nan-blind -->. Position $t$ of a causal
# stack of any depth therefore depends on positions $\le t$ only, which is what makes the
# generating loss above equal to the held-out loss <!-- not a claim: follows from the Jacobian's triangle, asserted above -->.

# %% [markdown]
# ## 7.8 The block's parallel running time and work
#
# Take $K = I = J/H$ and $4J$ hidden units, as most Transformers do <!-- not a claim: the literature's designs -->
# (so that $HK = HI = J$), and count as in
# Chapter 1: an ideal machine, everything independent in parallel.
#
# **Problem 7.7.** With every sum taking time logarithmic in its number of terms, what is the order
# of the parallel running time of one block (Section 7.6, without the mask) as a function
# of $T$ and $J$? Answer in `BLOCK_TIME`. Then count its **work**, the total number of
# scalar operations (every multiplication and addition counts $1$), and give its order in
# `BLOCK_WORK`, again in $T$ and $J$.

# %% nbgrader={"grade": false, "grade_id": "block_time", "locked": false, "schema_version": 3, "solution": true}
# Expressions in T and J.
# Your answers, in this form:
# BLOCK_TIME = "..."
# BLOCK_WORK = "..."
### BEGIN SOLUTION
BLOCK_TIME = "log(T) + log(J)"
BLOCK_WORK = "T^2*J + T*J^2"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_block_time", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(BLOCK_TIME, ["T", "J"], "BLOCK_TIME")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch7.BLOCK_TIME", BLOCK_TIME)
### END HIDDEN TESTS

# %% nbgrader={"grade": true, "grade_id": "test_block_work", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(BLOCK_WORK, ["T", "J"], "BLOCK_WORK")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch7.BLOCK_WORK", BLOCK_WORK)
### END HIDDEN TESTS

# %% [markdown]
# `attnlab.profiler.parallel_time` measures the depth and the work of your `block` on meta
# tensors. Below, $T$ and then $J$ are doubled from $T = J = 64$ <!-- given --> (with $H = 4$ <!-- given --> and $4J$ hidden units), the other held, and your answers are drawn over the
# measurements. A depth has a large constant (the depth of the block's fixed parts), which an
# order leaves out: each depth answer is drawn as a multiple of it plus a constant, fitted by
# least squares (`attnlab.fits.fit`), and it follows the points when it misses none of them by more
# than a tenth of their range <!-- not a claim: how the plot is read -->. The work spans orders of magnitude and is drawn on log axes,
# scaled by one fitted factor: read it by how far the ratio measured / answer moves along the
# sweep (`attnlab.fits.spread`), within a factor `SPREAD` for the right order, since the terms of
# a sum keep their own constants <!-- not a claim: how the plot is read -->. If an answer has the right order, its curve follows the
# points. (This cell measures your own `block` and draws your answers: run it yourself.)

# %% tags=["answer-output"] mystnb={"figure": {"caption": "Measured depth (top) and work (bottom) of one block as $T$ (left) or $J$ (right) doubles from 64, with your `BLOCK_TIME` and `BLOCK_WORK` scaled by one fitted constant (lines). A right answer's line runs through the points."}}
from attnlab.fits import fit, spread
from attnlab.profiler import parallel_time
from attnlab.symbolic import parse_answer


def block_shapes(J: int) -> dict[str, tuple[int, ...]]:
    """The shapes of one block's parameters with K = I = J/H (so H(2K+I) = 3J and HI = J) and 4J
    hidden units."""
    return {"W": (3 * J, J), "WO": (J, J), "gain1": (J,), "shift1": (J,), "gain2": (J,),
            "shift2": (J,),
            "W1": (4 * J, J), "beta1": (4 * J,), "W2": (J, 4 * J), "beta2": (J,)}


def measure(T: int, J: int, H: int = 4):
    """Depth (log sums) and work of one block of T positions."""
    return parallel_time(block, (T, J), block_shapes(J), H, J // H, model="log")


doublings = [] if is_grading() else list(range(9))
base = 64
SPREAD = 8  # the work over a right answer moves by less than this factor along each sweep
sweeps = {name: [dict(T=base, J=base) | {name: base * 2 ** d} for d in doublings]
          for name in ("T", "J")}
measured = {name: [measure(**sizes) for sizes in sweep] for name, sweep in sweeps.items()}


def evaluate(answer: object, sizes: dict[str, int]) -> float | None:
    """Your answer at the given sizes (None if not answered yet)."""
    try:
        expr = parse_answer(answer, ["T", "J"])
    except Exception as exc:  # an unanswered or malformed answer: nothing to draw
        print(f"(not drawn: {exc})")
        return None
    return float(expr.subs({s: sizes[s.name] for s in expr.free_symbols}))


def verdict(what: str, answer: object, name: str) -> tuple[list[float], str] | None:
    """The curve drawn for `answer` over the `what` measurements along the sweep of size `name`, and
    how it reads: the depth fitted as a * answer + b, the work scaled by one factor (None if not
    answered yet)."""
    ys = [getattr(m, what) for m in measured[name]]
    predicted = [evaluate(answer, sizes) for sizes in sweeps[name]]
    if None in predicted:
        return None
    if what == "depth":
        line = fit(ys, predicted)
        return line.curve, (f"follows: misses by at most {line.miss:.0%} of the range"
                            if line.follows
                            else f"does NOT follow: misses by {line.miss:.0%} of the range")
    moves = spread(ys, predicted)
    if not math.isfinite(moves):
        return None
    c = math.exp(statistics.fmean(math.log(y / p) for y, p in zip(ys, predicted)))
    return [c * p for p in predicted], (f"measured / answer moves x{moves:.2f}: " +
                                        ("follows" if moves < SPREAD
                                         else f"does NOT follow (x{SPREAD} or more)"))


if doublings:
    fig, axes = plt.subplots(2, 2, figsize=(8.5, 6.8))
    for col, name in enumerate(sweeps):
        xs = [sizes[name] for sizes in sweeps[name]]
        for row, (what, answer_name) in enumerate((("depth", "BLOCK_TIME"),
                                                   ("work", "BLOCK_WORK"))):
            ax = axes[row, col]
            ax.plot(xs, [getattr(m, what) for m in measured[name]], "o", label=f"measured {what}")
            answer = globals().get(answer_name)
            drawn = verdict(what, answer, name)
            if drawn is not None:
                curve, reading = drawn
                ax.plot(xs, curve, "-", label=f"your {answer_name} = {answer!r}, fitted")
                print(f"{answer_name} = {answer!r} as {name} doubles: {reading}")
            ax.set_xscale("log", base=2)
            ax.set_yscale("linear" if what == "depth" else "log")
            other = "J" if name == "T" else "T"
            ax.set_xlabel(f"{name}, with {other} = {base}")
            ax.set_ylabel(what)
            ax.legend(fontsize=9)
    fig.suptitle("One block (log sums): measured depth and work against your answers")
    plt.tight_layout()
    plt.show()

# %% tags=["solutions-only"]
# The reference answers against the measurements: along each sweep the depth follows a * answer + b
# and the work over the answer moves by less than SPREAD (the terms' constants differ: 24 T J^2
# against 4 T^2 J); answers of another order do not, in one sweep or the other: the plot tells them
# apart.
if doublings:
    wrong = {"depth": ["log(T)", "log(J)", "1", "T + log(J)"], "work": ["T^2*J", "T*J^2", "T*J"]}
    for what, answer in (("depth", BLOCK_TIME), ("work", BLOCK_WORK)):
        for name in sweeps:
            print(f"{what}, {answer!r} as {name} doubles: "
                  f"{verdict(what, answer, name)[1]}")  # claim: ch7-ratios
            assert "NOT" not in verdict(what, answer, name)[1], \
                f"{what} is not of the order {answer} in {name}"  # claim: ch7-measured
        for other in wrong[what]:
            assert any("NOT" in verdict(what, other, name)[1] for name in sweeps), \
                f"{other} follows the {what}"  # claim: ch7-measured

# %% [markdown] tags=["solutions-only"]
# ### Worked solution (Problem 7.7)
#
# *Depth.* The parts run one after another, and each adds the depth of its sums: $\text{LN}_1$
# sums over $j$ twice ($O(\log J)$); the stacked projection sums over $j$ ($O(\log J)$); the
# scores over $k$ ($O(\log K) \le O(\log J)$); the softmax and the weighted average over $t'$
# ($O(\log T)$ each); the output projection over $h, i$ ($O(\log HI) = O(\log J)$); $\text{LN}_2$
# again $O(\log J)$; the feed-forward layer over $J$, then over $4J$ terms ($O(\log J)$); the
# residual additions $O(1)$. In all $O(\log T + \log J)$.
#
# *Work.* The stacked projection $2 T J \cdot 3J$; the scores $2 T^2 HK = 2T^2 J$ and $HT^2$
# divisions by $\sqrt K$; the softmax
# $3 H T^2$; the weighted average $2 T^2 HI = 2T^2 J$; the output projection $2TJ^2$; the
# feed-forward layer $2 \cdot 2 T J \cdot 4J = 16 T J^2$; normalisations and residuals $O(TJ)$.
# In all $\Theta(T^2 J + T J^2)$: the $T^2$ of attention against the $J^2$ of the projections
# and the feed-forward layer, which is the larger while $T < 6J$ <!-- not a claim: arithmetic on the terms, 4 T^2 J against 24 T J^2 -->.
#
# *Measured.* Over eight doublings of each of $T$ and $J$, the measured depth of the reference
# block follows a multiple of $\log T + \log J$ plus a constant within a tenth of its range, and the work over
# $T^2 J + T J^2$ moves by less than a factor of 8, while answers of another order (`log(J)`,
# `log(T)`, `1`, `T*J^2`, ...) miss in one sweep or the other <!-- claim: ch7-measured -->; the run prints how each reads <!-- claim: ch7-ratios -->.

# %% [markdown]
# ## 7.9 The block's time, with PyTorch's fused attention inside
#
# Last, the wall-clock time of the whole block (no mask) against $T$ on the active device,
# twice: with your `attention`, and with `torch.nn.functional.scaled_dot_product_attention`
# in its place, on 4-D inputs $[1, H, T, K]$ so that PyTorch may pick a fused kernel (which
# never stores the scores); a fused kernel runs here, on a CPU as on a GPU <!-- claim: ch7-fused -->. Everything else is the same block. The legend
# names the kernel PyTorch ran, found by `attnlab.kernels.attention_backend`. Each point is
# the median of repeated runs, the bars the middle half of the runs. The sizes are chosen so
# that attention is most of the block's work, the part where the two blocks differ: the run
# prints attention's share of the block's work at each $T$, from the profiler's counts on
# meta tensors <!-- claim: ch7-attention-share -->. On a CPU the timing runs on one thread, as in Chapter 1: one processor,
# whose time follows the work.

# %% mystnb={"figure": {"caption": "Time of one block against $T$, with the attention of Problem 7.2 and with PyTorch's fused kernel in its place (points: medians; bars: the middle half of the runs). The gap between the two lines is what the fused kernel saves."}}
from contextlib import contextmanager

from torch.nn.functional import scaled_dot_product_attention

from attnlab.kernels import MATH, attention_backend, run_times


def fused_attention(Query: torch.Tensor, Key: torch.Tensor, Value: torch.Tensor,
                    causal: bool = False) -> torch.Tensor:
    """`attention` through scaled_dot_product_attention on [1, H, T, .]: a fused kernel where one
    can run."""
    return scaled_dot_product_attention(Query[None], Key[None], Value[None], is_causal=causal)[0]


@contextmanager
def attention_by(fn):
    """While inside, `block` calls `fn` in place of `attention` (the same block, another
    attention)."""
    saved = globals()["attention"]
    globals()["attention"] = fn
    try:
        yield
    finally:
        globals()["attention"] = saved


# long sequences of narrow vectors: attention's work dominates
H, J = (4, 256) if device.type == "cuda" else (2, 16)
K = J // H
dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
timing_Ts = [] if is_grading() else ([2048, 4096, 8192, 16384] if device.type == "cuda"
                                     else [128, 256, 512, 1024])
timing_params = {name: w.to(device, dtype)
                 for name, w in random_weights(torch.Generator().manual_seed(7), J, H, K, K,
                                               4 * J).items()}
# the kernel each block ran
ran = {"attention (Problem 7.2)": MATH, "scaled_dot_product_attention": MATH}
block_runs = {name: [] for name in ran}
all_threads = torch.get_num_threads()
torch.set_num_threads(1 if device.type == "cpu" else all_threads)
with torch.no_grad():
    for T in timing_Ts:
        M = torch.randn(T, J, device=device, dtype=dtype)
        for name in ran:
            with attention_by(attention if name == "attention (Problem 7.2)" else fused_attention):
                ran[name] = attention_backend(block, M, timing_params, H, K)
                block_runs[name].append(run_times(block, M, timing_params, H, K, repeats=7,
                                                  warmup=1))
torch.set_num_threads(all_threads)
attention_share = {T: parallel_time(attention, (H, T, K), (H, T, K), (H, T, K)).work
                   / parallel_time(block, (T, J), block_shapes(J), H, K).work for T in timing_Ts}
if timing_Ts:
    for T, share in attention_share.items():
        print(f"T = {T:5d}: attention is {share:.0%} of the block's work "
              "(the profiler's count)")  # claim: ch7-attention-share
    for name in ran:
        print(f"{name}: {ran[name]}")
    for k, T in enumerate(timing_Ts):
        print(f"T = {T:5d}: "
              + "  ".join(f"{name} {statistics.median(block_runs[name][k]) * 1e3:8.2f} ms"
                          for name in ran))
    for k, T in enumerate(timing_Ts):
        fused, yours = (statistics.median(block_runs[name][k])
                        for name in ("scaled_dot_product_attention", "attention (Problem 7.2)"))
        print(f"T = {T:5d}: the block with the fused kernel takes "
              f"{fused / yours:.2f} of the time of the block with attention (Problem 7.2)"
              )  # claim: ch7-timing
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for name in ran:
        q1, med, q3 = zip(*(statistics.quantiles(r, n=4) for r in block_runs[name]))
        ax.errorbar(timing_Ts, med,
                    yerr=[[m - a for a, m in zip(q1, med)], [b - m for m, b in zip(med, q3)]],
                    marker="o", capsize=3, label=f"block with {name}: {ran[name]}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length T")
    ax.set_ylabel("seconds per block (median, bars: quartiles)")
    ax.set_title(f"One block, J={J}, H={H}, {4 * J} hidden units, on "
                 f"{device.type}, {str(dtype).removeprefix('torch.')}")
    ax.legend(fontsize=8)
    plt.show()

# %% [markdown]
# The run above prints which kernel ran and, at each $T$, the time of the block with the
# fused kernel as a fraction of the time of the block with your attention <!-- claim: ch7-timing -->: the fraction to read the plot against. The projections and the
# feed-forward layer do the same work in both blocks; only attention's part differs, so the
# fraction can only fall as far as attention's share of the
# block's time allows <!-- not a claim: what the fraction measures -->. At these sizes attention is most of the
# work at the largest $T$ <!-- claim: ch7-attention-most -->, so there the fraction can fall far if the fused kernel is
# faster than your einsums; the printed fractions say whether it is on this machine <!-- not a claim: a wall-clock ratio, printed above, which a loaded machine moves -->. The fused kernels
# need 4-D inputs whose last dimension is contiguous, which the stacked projection's outputs
# are; on a GPU the flash and cuDNN kernels also need 16-bit floats, while the
# memory-efficient kernel takes float32 too <!-- not a claim: PyTorch's documented requirements -->.

# %% tags=["solutions-only"]
if timing_Ts:  # the block's own queries, keys and values reach a fused kernel, on a CPU as on a GPU
    assert ran["scaled_dot_product_attention"] != MATH, \
        "a fused kernel ran inside the block"  # claim: ch7-fused
    assert attention_share[timing_Ts[-1]] > 0.75, \
        f"attention is most of the work: {attention_share}"  # claim: ch7-attention-most
