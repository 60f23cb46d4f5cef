# %% [markdown]
# # Chapter 1. Parallel time of the Transformer
#
# A recurrent network must walk through a sentence one word after another. A Transformer
# layer looks at every position at once. This chapter makes that statement exact: we write
# one self-attention layer as tensor equations, implement it, and then count its
# **parallel running time**: the length of the longest chain of operations that must
# happen one after another when every independent operation runs at the same time <!-- not a claim: a definition -->.
#
# You will
#
# * implement `self_attention(M, WQ, WK, WV)` and `transformer(M, layers)` in PyTorch,
#   working on whatever device and dtype the inputs have;
# * derive, from the bottom up, the parallel running time of one softmax, of one layer and
#   of an $L$-layer Transformer, when sums are serial and when they take logarithmic time,
#   and the work and the memory of one layer, giving your answers as expressions such as
#   `"L*T^2"`;
# * time one layer against the sequence length $T$, next to PyTorch's fused attention
#   kernel, and measure the work, the memory and the depth of your own layers with the
#   book's profiler.
#
# The problems restate seed 000 (TTIC 31230, Transformer problems, Problem 1) and seed 002
# (TTIC 31230 2020, Problem 4) in this book's notation.

# %% [markdown]
# ## Notation
#
# <!-- letters: B:batch C:processors H:heads I:valuesize J:width K:keysize L:layers M:vectors
# S:sumterms O:order T:length V:output W:weights Z:normaliser \alpha:attention \ell:layer e:euler
# h:heads i:valuesize j:width k:keysize s:score t:length -->
#
# The book's letters (the [notation page](../front/notation.md) has the whole table), and
# the same things in this chapter's seeds:
#
# | book | meaning | seed 000 P1 | seed 002 P4 |
# |---|---|---|---|
# | $M[t, j]$, $t < T$, $j < J$ | the sequence of vectors entering a layer | $M[\ell, t, j]$ | $h_{\text{in}}[t, J]$ |
# | $t'$ | a second position (the key's) | $t'$ | $t_2$, also $t'$ |
# | $\ell < L$ | layer | $\ell$ | (one layer) |
# | $h < H$ | head (numbered from 0) | $h$ (from 1) | $k$ (from 1) |
# | $k < K$ | query/key coordinate | $k$ | $U$ (a dimension, $U < J$) |
# | $i < I$, $J = H I$ | value coordinate | $i$, $I = J/H$ | $I$, with $I = J/K$ ($K$ heads) |
# | $W^Q[h,k,j]$, $W^K[h,k,j]$ | query and key weights | $W^Q[\ell,h,k,j]$, $W^K[\ell,h,k,j]$ | $W^Q[k,U,J]$, $W^K[k,U,J]$ |
# | $W^V[h,i,j]$ | value weights | $W^V[\ell,h,i,j]$ | $W^V[k,I,J]$ |
# | $s[h,t,t']$, $\alpha[h,t,t']$ | scores and attention | $s[\ell,h,t,t']$, $\alpha[\ell,h,t,t']$ | (scores unnamed), $\alpha[k,t_1,t_2]$ |
# | $V[h,t,i]$ | what attention returns | $V[\ell,h,t,i]$ | $\text{Out}[k,t,I]$ |
# | $Z[h,t]$ | the softmax's normaliser | $Z$ | $Z$ |
# | depth, work; $C$ | critical path, operations; processors | "parallel running time" | "parallel running time" |
#
# Careful: seed 002 uses $k$ for heads and <!-- seed -->$U$<!-- /seed --> for the query/key dimension; this book uses
# $h$ for heads and $k < K$ for the query/key index throughout.
#
# **Relations between the sizes.** Every layer has $J = H I$ (the heads' values stacked
# give a vector of width $J$ again), and the query/key and value sizes are at most the
# width: $K \le J$, $I \le J$ (seed 002: "<!-- seed -->$U < J$<!-- /seed -->") <!-- given -->. The questions below state which of
# these they use; an answer is judged as an order under the relations its question states.
#
# **Errata.** Seed 002 P4 writes the scores without the factor $1/\sqrt{K}$ that seed 000
# (and the original Transformer) uses; this book always scales by $1/\sqrt{K}$ (it changes
# no running time). The seeds number heads from 1; Python and this book number them from 0.
# Seed 000 writes "ℓ ranger over layers": ℓ *ranges* over layers.

# %%
import math
import statistics

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from attnlab.grading import is_grading
from attnlab.testing import Explained, expect_answer, expect_close, expect_like, expect_shape

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print("active device:", device)


# %% [markdown]
# ## 1.1 One self-attention layer
#
# A layer maps $M[T, J]$ to a new sequence of the same length. Each head $h$ projects every
# position to a query, a key and a value, compares every query with every key, and averages
# the values with the resulting weights:
#
# $$
# \begin{aligned}
# \text{Query}[h,t,k] &= \sum_j W^Q[h,k,j]\, M[t,j] \\
# \text{Key}[h,t,k] &= \sum_j W^K[h,k,j]\, M[t,j] \\
# \text{Value}[h,t,i] &= \sum_j W^V[h,i,j]\, M[t,j] \\
# s[h,t,t'] &= \frac{1}{\sqrt{K}} \sum_k \text{Query}[h,t,k]\, \text{Key}[h,t',k] \\
# \alpha[h,t,t'] &= \operatorname*{softmax}_{t'}\; s[h,t,t'] = \frac{e^{s[h,t,t']}}{Z[h,t]}, \qquad Z[h,t] = \sum_{t''} e^{s[h,t,t'']} \\
# V[h,t,i] &= \sum_{t'} \alpha[h,t,t']\, \text{Value}[h,t',i] \\
# M_{\text{out}}[t, :] &= V[0,t,:];\ V[1,t,:];\ \dots;\ V[H-1,t,:]
# \end{aligned}
# $$
#
# The last line concatenates the heads, head $0$ first, so the output has $H I$ columns;
# with $I = J/H$ that is $J$ again and layers can be stacked.
#
# **Problem 1.1.** Implement `self_attention`. Work on the inputs' device and dtype (never
# create a tensor with a fixed dtype or on a fixed device). `torch.einsum` with the index
# letters of the equations is the most direct route <!-- not a claim: advice -->.

# %% nbgrader={"grade": false, "grade_id": "self_attention", "locked": false, "schema_version": 3, "solution": true}
def self_attention(M: torch.Tensor, WQ: torch.Tensor, WK: torch.Tensor,
                   WV: torch.Tensor) -> torch.Tensor:
    """One multi-head self-attention layer.

    M[T, J], WQ[H, K, J], WK[H, K, J], WV[H, I, J] -> [T, H*I],
    heads concatenated in order (head 0 first); scores scaled by 1/sqrt(K).
    """
    ### BEGIN SOLUTION
    K = WQ.shape[1]
    Query = torch.einsum("hkj,tj->htk", WQ, M)
    Key = torch.einsum("hkj,tj->htk", WK, M)
    Value = torch.einsum("hij,tj->hti", WV, M)
    s = torch.einsum("htk,hTk->htT", Query, Key) / math.sqrt(K)
    alpha = torch.softmax(s, dim=-1)
    V = torch.einsum("htT,hTi->hti", alpha, Value)
    H, T, I = V.shape
    return V.permute(1, 0, 2).reshape(T, H * I)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_self_attention", "locked": true, "points": 4, "schema_version": 3, "solution": false}
# Visible tests: each failure says what is wrong.
g = torch.Generator().manual_seed(0)
T, J, H, K, I = 5, 8, 2, 3, 4
M = torch.randn(T, J, generator=g, dtype=torch.float64)
WQ = torch.randn(H, K, J, generator=g, dtype=torch.float64)
WK = torch.randn(H, K, J, generator=g, dtype=torch.float64)
WV = torch.randn(H, I, J, generator=g, dtype=torch.float64)
out = self_attention(M, WQ, WK, WV)
expect_shape(out, (T, H * I), "self_attention(M[5,8], WQ[2,3,8], WK[2,3,8], WV[2,4,8])")
expect_like(out, M, "self_attention on float64 inputs")
expect_like(self_attention(M.float(), WQ.float(), WK.float(), WV.float()), M.float(),
            "self_attention on float32 inputs")

# The output has H*I columns, which is J only when I = J/H.
WV3 = torch.randn(H, 3, J, generator=g, dtype=torch.float64)
try:
    out3 = self_attention(M, WQ, WK, WV3)
except RuntimeError as exc:
    raise Explained(f"self_attention with WV[2,3,8] (I = 3, so H*I = 6 != J = 8) raised: {exc}. "
                    "The output has H*I columns, not J: reshape to (T, H*I), or (T, -1).") from None
expect_shape(out3, (T, H * 3), "self_attention with WV[2,3,8]",
             hint="The output has H*I columns (here 6), not J: reshape to (T, H*I).")

# By hand: WQ = WK = 1 (H=1, K=4, J=1), WV = 1, M = [[1], [0]]. s[0,0,0] = 4/sqrt(4) = 2 and every
# other score is 0, so out = [[e^2/(e^2+1)], [1/2]] = [[0.881], [0.5]].
ones = torch.ones(1, 4, 1, dtype=torch.float64)
M1 = torch.tensor([[1.0], [0.0]], dtype=torch.float64)
got = self_attention(M1, ones, ones, torch.ones(1, 1, 1, dtype=torch.float64))
expect_shape(got, (2, 1), "self_attention on the hand-checked example")
e2, e4 = math.exp(2), math.exp(4)
mistakes = {  # what some common mistakes give on this example (worked out by hand)
    "the scores are not scaled by 1/sqrt(K) = 1/2": [[e4 / (e4 + 1)], [0.5]],
    "the softmax runs over t, the query position; it must run over t', the key position":
        [[e2 / (e2 + 1)], [1 / (e2 + 1)]],
}
for mistake, wrong in mistakes.items():
    if torch.allclose(got, torch.tensor(wrong, dtype=torch.float64), atol=1e-4):
        raise Explained("On the hand-checked example you return "
                        f"{got.flatten().tolist()}: {mistake}.")
expect_close(got, torch.tensor([[e2 / (e2 + 1)], [0.5]], dtype=torch.float64),
             "self_attention on the hand-checked example (expected [[0.881], [0.5]])",
             hint="Scores Query . Key / sqrt(K), softmax over t' (the key "
                  "position), then the weighted average of the values over t'.")

# Heads are concatenated in order, head 0 first: columns h*I .. (h+1)*I - 1 are head h alone.
# your one-head layers
heads = [self_attention(M, WQ[h:h + 1], WK[h:h + 1], WV[h:h + 1]) for h in range(H)]
if torch.allclose(out, torch.stack(heads).reshape(T, H * I)):
    raise Explained("The heads are reshaped without permuting: V[h, t, i] reshaped straight "
                    "to [T, H*I] puts head 0's rows t = 0, 1 side by side in row 0, mixing "
                    "positions and heads. Permute V to [T, H, I] first, then reshape.")
for h in range(H):
    expect_close(out[:, h * I:(h + 1) * I], heads[h],
                 f"columns {h * I}..{(h + 1) * I - 1} of the output",
                 hint=f"These columns must be head {h} alone: concatenate V[0,t,:]; V[1,t,:]; ... "
                      "(permute V[H, T, I] to [T, H, I], then reshape to [T, H*I]).")

# Attention has no notion of order: permuting the rows of M permutes the output rows.
perm = torch.tensor([3, 0, 4, 1, 2])
expect_close(self_attention(M[perm], WQ, WK, WV), out[perm], "self_attention(M[perm])",
             hint="self_attention(M[perm]) must equal self_attention(M)[perm]: every position "
                  "is treated alike, and the values are summed over t', the key position.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch1.self_attention", self_attention)
### END HIDDEN TESTS

# %% [markdown]
# ## 1.2 Stacking layers
#
# The Transformer of seed 000 is a stack of $L$ such layers,
# $M_{\ell+1} = \mathtt{self\_attention}(M_\ell, W^Q_\ell, W^K_\ell, W^V_\ell)$ for $\ell < L$,
# with $J = HI$ in every layer. (A production Transformer adds residual connections, layer
# normalisation and a feed-forward block; the seeds leave them out and so do we.)
#
# **Problem 1.2.** Implement `transformer(M, layers)`, where `layers` is a list of
# `(WQ, WK, WV)` triples, using your `self_attention`. Zero layers return `M` unchanged.
# (It is graded with your own `self_attention` inside: a mistake in Problem 1.1 is not
# charged twice.)

# %% nbgrader={"grade": false, "grade_id": "transformer", "locked": false, "schema_version": 3, "solution": true}
def transformer(M: torch.Tensor,
                layers: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """M[T, J] -> M after len(layers) self-attention layers; layers = [(WQ, WK, WV), ...] with J =
    H*I."""
    ### BEGIN SOLUTION
    for WQ, WK, WV in layers:
        M = self_attention(M, WQ, WK, WV)
    return M
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_transformer", "locked": true, "points": 2, "schema_version": 3, "solution": false}
g = torch.Generator().manual_seed(1)
T, H, K, I = 4, 2, 3, 3
J = H * I
M = torch.randn(T, J, generator=g)
layers = [tuple(torch.randn(H, d, J, generator=g) / J**0.5 for d in (K, K, I)) for _ in range(3)]
expect_close(transformer(M, []), M, "transformer(M, [])",
             hint="With no layers, return M unchanged.")
expect_close(transformer(M, layers[:1]), self_attention(M, *layers[0]),
             "transformer with one layer",
             hint="One layer is one call of your self_attention.")
if torch.allclose(transformer(M, layers), self_attention(M, *layers[-1])):
    raise Explained("transformer(M, three layers) equals the last layer applied to M: "
                    "every layer must read the previous layer's output, not the input M.")
expected = self_attention(self_attention(self_attention(M, *layers[0]), *layers[1]), *layers[2])
expect_close(transformer(M, layers), expected, "transformer with three layers",
             hint="Each layer must take the previous layer's output as its input, in order.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch1.transformer", transformer)
### END HIDDEN TESTS

# %% [markdown]
# ## 1.3 Parallel running time, from the bottom up
#
# Assume an ideal parallel machine: any number of independent scalar operations run at
# once, and an operation can start as soon as its inputs exist. The **parallel running
# time** (the *depth*) of a computation is then the length of its longest chain of
# dependent operations. <!-- not a claim: a definition --> Constant factors do not matter: answer with the order, as an
# expression in the named sizes (write `"L*T^2"`, `"O(L^2 T)"` or `r"J(\log T)^2"`, raw for
# the backslash; any expression of the same order is accepted, constants and lower-order
# terms are ignored).
#
# A **sum of $S$ terms** is the one operation that is not trivially parallel: the problems
# say how long it takes. Every other operation (a product, an exponential, a division, a
# concatenation) takes time $O(1)$ once its inputs exist. Two more counts go with the
# depth: the **work**, the number of scalar operations in all (what one processor would
# spend; a sum of $S$ terms is $S$ of them whatever its depth), and the **memory** of a
# tensor, the number of numbers it holds. We build the answers from the bottom up: one
# softmax, then one layer, then $L$ layers.
#
# **A worked example.** Two computations over the rows of $M[T, J]$: the row sums
# $\sum_j M[t, j]$ for every $t$, and how alike every two positions are,
# $\sum_j M[t,j]\,M[t',j]$ for every pair $t, t'$ (`torch.einsum("tj,Tj->tT", M, M)`).
#
# * *Row sums.* The $T$ sums are independent of each other and run at once; each adds $J$
#   terms. Depth: $J$ with serial sums, $\lceil \log_2 J\rceil$ with logarithmic ones.
#   Work: $T J$ (the profiler counts one addition per term). Memory of the result: $T$.
# * *All pairs.* First every product $M[t,j]\,M[t',j]$, for every $t$, $t'$ and $j$ at once
#   (one step); then each of the $T^2$ results sums $J$ of them. Depth: $1 + J$ serial,
#   $1 + \lceil\log_2 J\rceil$ logarithmic. The depth does not depend on $T$: more
#   positions are more work side by side, not a longer chain. Work: $T^2 J$ products and
#   as many additions, $2 T^2 J$. Memory of the result: $T^2$ numbers.
#
# The book's profiler, `attnlab.profiler.parallel_time` (Section 1.5 says how it counts),
# measures depth and work by running a function on *meta* tensors (shapes without data),
# and `attnlab.kernels.largest_tensor` finds the largest tensor a function allocates <!-- not a claim: what the tools do -->. The cell below checks each count above at four
# sizes, two values of $T$ for each $J$ <!-- claim: ch1-worked-rows --> <!-- claim: ch1-worked-pairs -->.

# %%
from attnlab.kernels import largest_tensor
from attnlab.profiler import parallel_time


def row_sums(M: torch.Tensor) -> torch.Tensor:
    """M[T, J] -> [T]: the sum over j of M[t, j]."""
    return M.sum(dim=1)


def all_pairs(M: torch.Tensor) -> torch.Tensor:
    """M[T, J] -> [T, T]: the sum over j of M[t, j] M[t', j]."""
    return torch.einsum("tj,Tj->tT", M, M)


print("    T     J | row sums: depth serial, log; work | "
      "all pairs: depth serial, log; work; largest tensor")
for T, J in [] if is_grading() else [(8, 64), (500, 64), (8, 1000), (500, 1000)]:
    meta = torch.empty(T, J, device="meta")
    rows = [parallel_time(row_sums, meta, model=model) for model in ("serial", "log")]
    pairs = [parallel_time(all_pairs, meta, model=model) for model in ("serial", "log")]
    largest = largest_tensor(all_pairs, meta)
    print(f"{T:5d} {J:5d} | {rows[0].depth:5d} {rows[1].depth:3d}; {rows[1].work:7d} | "
          f"{pairs[0].depth:5d} {pairs[1].depth:3d}; {pairs[1].work:10d}; {largest:6d}")
    log_J = math.ceil(math.log2(J))
    assert (rows[0].depth, rows[1].depth, rows[1].work) == (J, log_J, T * J), \
        "the row sums' depth or work is not the count worked out above"  # claim: ch1-worked-rows
    assert (pairs[0].depth, pairs[1].depth, pairs[1].work,
            largest) == (1 + J, 1 + log_J, 2 * T * T * J, T * T), (
        "the all-pairs depth, work or memory is not the count worked out above"
    )  # claim: ch1-worked-pairs

# %% [markdown]
# **Problem 1.3 (seed 002 P4a): one softmax.** Fix a head $h$ and a query position $t$.
# First the scores $s[h,t,t']$ are computed for every $t'$, then the normaliser $Z[h,t]$
# and the attention weights $\alpha[h,t,\cdot]$. With logarithmic-time sums, what is the
# parallel time of this softmax (scores included) as a function of $T$ and $K$? Answer in
# `SOFTMAX_TIME`.
#
# In practice a GPU computes each inner product of length $K$ serially inside one thread,
# while the sum over $t'$ is still a parallel reduction. Under that assumption (inner
# products serial, the sum for $Z$ logarithmic), answer again in `SOFTMAX_TIME_PRACTICE`,
# as a function of $T$ and $K$.

# %% nbgrader={"grade": false, "grade_id": "softmax_time", "locked": false, "schema_version": 3, "solution": true}
# Expressions in T and K.
# Your answers, in this form:
# SOFTMAX_TIME = "..."
# SOFTMAX_TIME_PRACTICE = "..."
### BEGIN SOLUTION
SOFTMAX_TIME = "log(T) + log(K)"
SOFTMAX_TIME_PRACTICE = "K + log(T)"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_softmax_time", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(SOFTMAX_TIME, ["T", "K"], "SOFTMAX_TIME")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch1.SOFTMAX_TIME", SOFTMAX_TIME)
### END HIDDEN TESTS

# %% nbgrader={"grade": true, "grade_id": "test_softmax_time_practice", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(SOFTMAX_TIME_PRACTICE, ["T", "K"], "SOFTMAX_TIME_PRACTICE")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch1.SOFTMAX_TIME_PRACTICE", SOFTMAX_TIME_PRACTICE)
### END HIDDEN TESTS

# %% [markdown]
# **Problem 1.4 (seed 002 P4b): one layer.** Now one whole self-attention layer (Section 1.1,
# all heads), computing $M_{\text{out}}$ from $M$. With logarithmic-time sums, what is the
# order of its parallel running time as a function of $T$, $J$ and $K$? Answer in
# `LAYER_TIME`.
#
# Then the "practice" model of Problem 1.3: inner products (the sums over $j$ and over $k$)
# are serial, the sums over positions $t'$ are logarithmic. Answer again in
# `LAYER_TIME_PRACTICE`, as a function of $T$, $J$ and $K$.
#
# Both with $J = HI$, $K \le J$ and $I \le J$ (seed 002: "$I$ and <!-- seed -->$U$<!-- /seed --> are both less than $J$") <!-- given -->.

# %% nbgrader={"grade": false, "grade_id": "layer_time", "locked": false, "schema_version": 3, "solution": true}
# Expressions in T, J and K.
# Your answers, in this form:
# LAYER_TIME = "..."
# LAYER_TIME_PRACTICE = "..."
### BEGIN SOLUTION
LAYER_TIME = "log(T) + log(J)"
LAYER_TIME_PRACTICE = "J + log(T)"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_layer_time", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(LAYER_TIME, ["T", "J", "K"], "LAYER_TIME")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch1.LAYER_TIME", LAYER_TIME)
### END HIDDEN TESTS

# %% nbgrader={"grade": true, "grade_id": "test_layer_time_practice", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(LAYER_TIME_PRACTICE, ["T", "J", "K"], "LAYER_TIME_PRACTICE")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch1.LAYER_TIME_PRACTICE", LAYER_TIME_PRACTICE)
### END HIDDEN TESTS

# %% [markdown]
# **Problem 1.5: the work and the memory of one layer.** Count the scalar operations of one
# whole layer, all heads, from $M$ to $M_{\text{out}}$ (every multiplication, addition,
# exponential and division once; constant factors do not matter): `LAYER_WORK`, an order in
# $T$, $H$, $J$ and $K$. Then its memory: how many numbers the scores $s[h,t,t']$ of one
# layer hold, all heads together, which the layer of Section 1.1 stores before its softmax:
# `SCORES_MEMORY`, in $T$, $H$, $J$ and $K$. Both with $J = HI$, $K \le J$ and $I \le J$;
# $K$ and $I$ are not tied to each other. Section 1.4 measures both on your own
# `self_attention`.

# %% nbgrader={"grade": false, "grade_id": "work_memory", "locked": false, "schema_version": 3, "solution": true}
# Expressions in T, H, J and K.
# Your answers, in this form:
# LAYER_WORK = "..."
# SCORES_MEMORY = "..."
### BEGIN SOLUTION
LAYER_WORK = "T^2*H*K + T^2*J + T*J*H*K + T*J^2"
SCORES_MEMORY = "H*T^2"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_layer_work", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(LAYER_WORK, ["T", "H", "J", "K"], "LAYER_WORK")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch1.LAYER_WORK", LAYER_WORK)
### END HIDDEN TESTS

# %% nbgrader={"grade": true, "grade_id": "test_scores_memory", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(SCORES_MEMORY, ["T", "H", "J", "K"], "SCORES_MEMORY")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch1.SCORES_MEMORY", SCORES_MEMORY)
### END HIDDEN TESTS

# %% [markdown]
# **Problem 1.6 (seed 000 P1a): $L$ layers, serial sums.** Now the $L$-layer Transformer of
# Section 1.2, computing $M_L$ from $M_0$. Assume every summation over $S$ terms is done
# serially (time $S$) while everything else is maximally parallel. Give the order of its
# parallel running time as a function of $L, T, H, J, K$ in `PARALLEL_TIME_SERIAL`. The
# sizes satisfy $J = HI$, $K \le J$ and $I \le J$.

# %% nbgrader={"grade": false, "grade_id": "parallel_time_serial", "locked": false, "schema_version": 3, "solution": true}
# An expression in L, T, H, J, K, as a string, e.g. "L*T^2".
# Your answer, in this form:
# PARALLEL_TIME_SERIAL = "..."
### BEGIN SOLUTION
PARALLEL_TIME_SERIAL = "L*(J + K + T)"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_parallel_time_serial", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(PARALLEL_TIME_SERIAL, ["L", "T", "H", "J", "K"], "PARALLEL_TIME_SERIAL")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch1.PARALLEL_TIME_SERIAL", PARALLEL_TIME_SERIAL)
### END HIDDEN TESTS

# %% [markdown]
# **Problem 1.7 (seed 000 P1b): $L$ layers, logarithmic sums.** A sum over $S$ terms can be
# done in parallel in $O(\log S)$ time, by adding pairs, then pairs of pairs, and so on.
# Repeat Problem 1.6 assuming every summation takes logarithmic time: `PARALLEL_TIME_LOG`,
# in $L, T, H, J, K$, again with $J = HI$, $K \le J$ and $I \le J$.

# %% nbgrader={"grade": false, "grade_id": "parallel_time_log", "locked": false, "schema_version": 3, "solution": true}
# An expression in L, T, H, J, K, e.g. "J*log(L)".
# Your answer, in this form:
# PARALLEL_TIME_LOG = "..."
### BEGIN SOLUTION
PARALLEL_TIME_LOG = "L*(log(J) + log(K) + log(T))"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_parallel_time_log", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(PARALLEL_TIME_LOG, ["L", "T", "H", "J", "K"], "PARALLEL_TIME_LOG")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch1.PARALLEL_TIME_LOG", PARALLEL_TIME_LOG)
### END HIDDEN TESTS

# %% [markdown] tags=["solutions-only"]
# ### Worked solution
#
# *One softmax (seed 002 P4a).* Scores: an inner product of length $K$, a product step and
# a sum, $O(\log K)$, as in the worked example's all pairs; then $Z$, a sum over $T$ terms,
# $O(\log T)$: in all $O(\log T + \log K)$. With serial inner products, $O(K + \log T)$.
#
# *One layer (seed 002 P4b).* $O(\log J)$ for the projections, $O(\log K)$ for the scores,
# $O(\log T)$ for $Z$ and the average: $O(\log T + \log J + \log K) = O(\log T + \log J)$ as
# $K \le J$. In practice: $O(J)$ for the projections, $O(K)$ for the scores, $O(\log T)$
# for $Z$ and the average: $O(J + K + \log T) = O(J + \log T)$.
#
# *Work and memory of one layer.* Count as in the worked example, two operations (a product
# and an addition) per term of a sum. The query and key projections have $HTK$ outputs
# each, each a sum of $J$ terms: $4HTKJ$. The values have $HTI$ outputs of $J$ terms:
# $2HTIJ = 2TJ^2$, as $HI = J$. The scores have $HT^2$ outputs of $K$ terms, $2HT^2K$, and
# $HT^2$ divisions by $\sqrt K$; the softmax an exponential, an addition and a division
# per score, $3HT^2$; the weighted average $HTI$ outputs of $T$ terms, $2T^2J$. The
# concatenation computes nothing. In all
# $4HTKJ + 2TJ^2 + 2HT^2K + 2T^2J + 4HT^2$, and as $H \le J$ the last term is at most
# twice the one before it <!-- not a claim: algebra -->:
# $\text{work} = \Theta(T^2HK + T^2J + TJHK + TJ^2) = \Theta\big(T(T + J)(HK + J)\big)$. Neither
# part can be dropped: $T$ may be smaller or larger than $J$, and $HK$ (the queries'
# width over all heads) smaller or larger than $J = HI$ <!-- claim: ch1-drift -->. The scores hold
# $HT^2$ numbers: every head, every pair of positions.
#
# *Serial sums (seed 000 P1a).* Layer $\ell+1$ reads layer $\ell$'s output, so the layers
# run one after another: the time is $L$ times one layer's. In a layer, the three
# projections run in parallel over $h, t, k, i$ and each sums over $j$: time $O(J)$. The
# scores run in parallel over $h, t, t'$ and sum over $k$: $O(K)$. The softmax is parallel
# over $h, t$ but its normaliser sums over $t'$: $O(T)$. The weighted average is parallel
# over $h, t, i$ and sums over $t'$: $O(T)$. Concatenation moves no data that anything
# waits on: $O(1)$. In all, $O(L(J + K + T))$; with $K \le J$ this is also $O(L(J + T))$.
#
# *Logarithmic sums (seed 000 P1b).* Replace every sum over $S$ terms by
# $\lceil \log_2 S\rceil$: $O(L(\log J + \log K + \log T))$. The Transformer's depth grows
# only logarithmically in the sequence length, against $O(T)$ for an RNN that must walk
# through the positions. <!-- claim: ch1-log-doubling -->
#
# *Measured (Sections 1.4 and 1.5).* The profiler agrees. Its work count of one layer is
# exactly $4HTKJ + 2TJ^2 + 2HT^2K + 2T^2J + 4HT^2$ at every size of Section 1.4's sweeps <!-- claim: ch1-work-exact -->, and the largest tensor of the layer is the scores', $HT^2$
# numbers, at every size of the sweeps where $T \ge J$ <!-- claim: ch1-scores-largest -->. In Section 1.4's plot the
# reference answers stay level, within a factor $1.6$, while answers that drop a term or
# take $HK$ for $J$ drift <!-- claim: ch1-level --> <!-- claim: ch1-drift -->.
#
# The serial depth climbs by $2L$ per unit of $T$ (in each of the $L$ layers, two sums run
# over $t'$: the softmax's normaliser and the weighted average) <!-- claim: ch1-serial-slope -->, while the log depth climbs by
# only $2L$ each time $T$ doubles <!-- claim: ch1-log-doubling -->. One layer at
# $T = 10^6$ with $J = 64$, $K = 16$ has serial depth $2T + J + K + 6$ <!-- claim: ch1-one-layer -->.

# %% [markdown]
# ## 1.4 Measure it
#
# Depth is what an ideal machine with unlimited processors would see. A real device has a
# fixed number $C$ of processors, and Brent's bound says that a computation runs on it in
# time at most $\text{work}/C + \text{depth}$. <!-- not a claim: Brent's theorem --> A layer's work (Problem 1.5) grows
# faster than its depth as $T$ grows, so on a CPU with a few cores the work term dominates and the
# wall-clock grows as the work does; <!-- claim: ch1-growth --> on a GPU that growth only appears once the layer's work
# exceeds what its cores do at once. This section times one layer, then measures its work
# and its memory against your answers to Problem 1.5.
#
# PyTorch's `scaled_dot_product_attention` computes the middle of a layer, from the per-head
# queries, keys and values to $V$. It has several kernels: a *math* kernel that does what
# your einsums do (it stores the scores $s[h,t,t']$), and *fused* kernels
# (flash attention, memory-efficient attention, cuDNN on a GPU; a flash kernel on the CPU)
# that stream over the keys and never store the scores. A fused kernel runs only on 4-D
# inputs $[B, H, T, K]$ whose last dimension is contiguous in memory; on 3-D inputs every
# fused kernel refuses and the math kernel runs. So the comparison below gives it 4-D
# inputs and says which kernel ran.
#
# First a correctness check of your layer against the fused kernel. The kernel starts from
# the heads' queries, keys and values, so we choose weights that need no arithmetic to
# project: with $K = I$ and $J = HI$, let $W^Q[h]$ pick the $h$-th block of $I$ columns of
# $M$ (a slice of the identity matrix), $W^K[h]$ the next block and $W^V[h]$ the one after
# (cyclically). Then every head's query, key and value are blocks of $M$ itself, views that
# can be handed to the kernel as they are.

# %%
from attnlab.kernels import attention_backend


def fused_attention(Query: torch.Tensor, Key: torch.Tensor, Value: torch.Tensor) -> torch.Tensor:
    """scaled_dot_product_attention on 4-D inputs [1, H, T, .]: PyTorch runs a fused kernel where
    one can."""
    # [1, H, T, I], scores scaled by 1/sqrt(K)
    return F.scaled_dot_product_attention(Query, Key, Value)


def math_attention(Query: torch.Tensor, Key: torch.Tensor, Value: torch.Tensor) -> torch.Tensor:
    """The same on 3-D inputs [H, T, .]: every fused kernel refuses them and the math kernel
    runs."""
    return F.scaled_dot_product_attention(Query[0], Key[0], Value[0])


g = torch.Generator().manual_seed(2)
T, H, I = 128, 4, 16
K, J = I, H * I
M = torch.randn(T, J, generator=g, dtype=torch.float64).to(device)
# select[h] picks M's columns h*I..
select = torch.eye(J, dtype=torch.float64, device=device).reshape(H, I, J)
# [1, H, T, I]: blocks[0, h] = M's h-th block of I columns
blocks = M.view(T, H, I).transpose(0, 1)[None]
assert blocks.stride(-1) == 1, \
    "the blocks' last dimension must be contiguous for a fused kernel to take them"
# head h: blocks h, h+1, h+2
qkv_blocks = (blocks, blocks.roll(-1, dims=1), blocks.roll(-2, dims=1))
fused = fused_attention(*qkv_blocks)
print("scaled_dot_product_attention on 4-D float64 inputs "
      f"ran: {attention_backend(fused_attention, *qkv_blocks)}")

# %% tags=["answer-output"]
mine = self_attention(M, select, select.roll(-1, dims=0), select.roll(-2, dims=0))  # [T, H*I]
err = (mine.reshape(T, H, I).transpose(0, 1) - fused[0]).abs().max().item()
print(f"max |self_attention - scaled_dot_product_attention| = {err:.2e}")
assert err < 1e-10, \
    f"your self_attention differs from scaled_dot_product_attention by {err:.2e}: " \
    "run its tests above"


# %% [markdown]
# Now the wall-clock of one layer against $T$ on the active device ($J = 256$, $H = 4$,
# $K = I = 64$; float32 on a CPU, bfloat16 on a GPU, where the flash kernels need 16-bit
# floats): your `self_attention`, the whole layer; the middle of the layer, from the heads'
# queries, keys and values (random ones of the layer's sizes) to $V$, through the math
# kernel (3-D inputs) and through the kernel PyTorch picks for 4-D inputs; and, as the
# kernels leave them out, the three projections of all heads alone, timed as seed 004's one
# stacked product: a $[T, J] \times [J, H(2K+I)]$ matrix product. A kernel's time plus the
# projections' time is one layer's. The legend names the kernel that ran
# (`attnlab.kernels.attention_backend` watches the operations a call runs). Each point is
# the **median** of repeated runs after two warm-up runs; the bars span the middle half of
# the runs (25th to 75th percentile), so a run disturbed by another process on a shared
# machine moves the bar, not the point. On a CPU the timing runs on one thread: one
# processor, $C = 1$ in Brent's bound, whose time follows the work (the threads of a
# parallel region on a shared machine wait for each other's time slices).

# %%
from attnlab.kernels import run_times

H, K, I = 4, 64, 64
J = H * I
dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
# name -> (function, what it is given: "layer" M and the weights, "heads" Query, Key, Value,
# "product" M and W)
methods = {"self_attention (einsum)": (self_attention, "layer"),
           "the projections alone (one product)": (torch.matmul, "product"),
           "3-D inputs": (math_attention, "heads"),
           "4-D inputs": (fused_attention, "heads")}
Ts = [] if is_grading() else ([256, 512, 1024, 2048, 4096, 8192, 16384] if device.type == "cuda"
                              else [64, 128, 256, 512, 1024])
g = torch.Generator().manual_seed(3)
WQ, WK, WV = (torch.randn(H, d, J, generator=g).to(device, dtype) / J**0.5 for d in (K, K, I))
# the projections' work, stacked
W = torch.randn(J, H * (2 * K + I), generator=g).to(device, dtype) / J**0.5
runs = {name: [] for name in methods}      # per method: the list of run times at each T
kernels = {}                               # per method: the kernel that ran
# processors
C = torch.cuda.get_device_properties(0).multi_processor_count * 128 if device.type == "cuda" else 1
all_threads = torch.get_num_threads()
torch.set_num_threads(1 if device.type == "cpu" else all_threads)
with torch.no_grad():
    for T in Ts:
        M = torch.randn(T, J, generator=g).to(device, dtype)
        # [1, H, T, .]
        heads = [torch.randn(1, H, T, d, generator=g).to(device, dtype) for d in (K, K, I)]
        given = {"layer": (M, WQ, WK, WV), "heads": heads, "product": (M, W)}
        for name, (fn, kind) in methods.items():
            kernels[name] = ("a matrix product" if kind == "product"
                             else attention_backend(fn, *given[kind]))
            runs[name].append(run_times(fn, *given[kind]))
torch.set_num_threads(all_threads)
print(f"device {device.type}, dtype {dtype}, C = {C} processors, H={H}, K=I={K}, J={J}")
for k, T in enumerate(Ts):
    print(f"T = {T:5d}: "
          + "  ".join(f"{statistics.median(runs[name][k]) * 1e3:8.2f} ms" for name in methods))
if len(Ts) > 1:
    print(f"from T = {Ts[-2]} to T = {Ts[-1]} (the scores' work x4), time grew:")
    for name in methods:
        growth = statistics.median(runs[name][-1]) / statistics.median(runs[name][-2])
        print(f"  {name} (backend: {kernels[name]}): x{growth:.1f}")  # claim: ch1-growth

# %% mystnb={"figure": {"caption": "One layer and its parts against $T$ on logarithmic axes (points: medians; bars: quartiles). Which part's time grows fastest as $T$ doubles, and from which $T$ on does it set the layer's time?"}}
if Ts:
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    for name in methods:
        q1, med, q3 = zip(*(statistics.quantiles(r, n=4) for r in runs[name]))
        ax.errorbar(Ts, med,
                    yerr=[[m - a for a, m in zip(q1, med)], [b - m for m, b in zip(med, q3)]],
                    marker="o", capsize=3, label=f"{name}: {kernels[name]} ran")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sequence length T")
    ax.set_ylabel("seconds (median, bars: quartiles)")
    ax.set_title(f"One layer and its parts on {device.type}, {str(dtype).removeprefix('torch.')}")
    ax.legend(fontsize=8)
    plt.tight_layout()
    plt.show()

# %% [markdown]
# On a CPU the einsum and math curves steepen as $T$ grows: with a handful of cores
# the machine is bound by the work, not by the depth <!-- claim: ch1-growth -->. The projections' work grows only like
# $T$, so at small $T$ they are most of your layer's time, and at large $T$ the scores and
# the weighted average take over <!-- claim: ch1-growth -->. The fused kernel does the same work as the math kernel
# without writing the scores out, which saves memory traffic. The run above prints, for the
# last doubling of $T$, how much each time grew, the ratios to read these sentences against <!-- claim: ch1-growth -->.
#
# ### Work and memory, measured
#
# The fused kernel's gain is memory. Below, the memory one layer takes on the active device
# at each $T$ above: on a GPU the allocator's peak while it runs
# (`torch.cuda.max_memory_allocated`, above what was allocated before), on a CPU the
# largest tensor it allocates (`attnlab.kernels.largest_tensor`) <!-- not a claim: what is measured -->. The run prints how each
# grew over the last doubling of $T$: your layer's more than the fused kernel's, as it stores the
# scores, which the fused kernel never does <!-- claim: ch1-memory-growth -->. (This cell measures your own `self_attention`: run it
# yourself.)

# %% tags=["answer-output"]
def memory_bytes(fn, *args) -> int:
    """Bytes fn(*args) takes: on a GPU the allocator's peak above what was allocated before;
    elsewhere the largest tensor it allocates."""
    if device.type != "cuda":
        return largest_tensor(fn, *args) * args[0].element_size()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    fn(*args)
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - before


memory = {"self_attention (einsum)": [], "4-D inputs": []}  # bytes at each T of the timing
g = torch.Generator().manual_seed(4)
with torch.no_grad():
    for T in Ts:
        M = torch.randn(T, J, generator=g).to(device, dtype)
        # [1, H, T, .]
        heads = [torch.randn(1, H, T, d, generator=g).to(device, dtype) for d in (K, K, I)]
        memory["self_attention (einsum)"].append(memory_bytes(self_attention, M, WQ, WK, WV))
        memory["4-D inputs"].append(memory_bytes(fused_attention, *heads))
        del M, heads
what = "allocator's peak" if device.type == "cuda" else "largest tensor"
for k, T in enumerate(Ts):
    print(f"T = {T:5d}: "
          + "  ".join(f"{name} {memory[name][k] / 2**20:8.2f} MiB" for name in memory)
          + f" ({what})")
if len(Ts) > 1:
    print(f"from T = {Ts[-2]} to T = {Ts[-1]}, memory grew:")
    for name in memory:
        print(f"  {name} (backend: {kernels[name]}): "
              f"x{memory[name][-1] / memory[name][-2]:.1f}")  # claim: ch1-memory-growth

# %% [markdown]
# Now your answers to Problem 1.5 against measurements of your own layer at many sizes. The
# profiler counts the work of your `self_attention` on meta tensors, and
# `attnlab.kernels.softmax_entries` counts the scores it normalises, all heads together,
# whether your layer computes the heads at once or loops over them (nothing is allocated for
# real). A layer that stores every head's scores at once, as Section 1.1's does, has them as
# its largest tensor when $T$ is at least $J$, which the memory sweep keeps <!-- claim: ch1-scores-largest -->; a layer that loops over
# the heads holds one head's at a time, and its largest tensor would mislead. Each of $T$, $H$, $K$ and
# $J$ grows in turn from a base size while the others stay ($J = HI$ throughout), and the
# plot shows the measurement divided by your answer, scaled to $1$ at the first size <!-- not a claim: how the sweep is made -->. An
# answer of the right order stays level, up to the constant factors an order leaves out; an
# answer of another order climbs or falls along the size it gets wrong <!-- claim: ch1-level --> <!-- claim: ch1-drift -->. (This cell measures
# your `self_attention` and draws your own answers: run it yourself.)

# %% tags=["answer-output"] mystnb={"figure": {"caption": "Measured work (top) and memory (bottom) divided by your answers, as each size grows. A curve that stays inside the green band (within a factor of 3) belongs to an answer of the right order in that size; one that climbs or falls out of it does not."}}
from attnlab.kernels import softmax_entries
from attnlab.symbolic import parse_answer


def evaluate(answer: str, variables: list[str], **sizes: float) -> float | None:
    """Your answer string evaluated at the given sizes (None if not answered yet)."""
    try:
        expr = parse_answer(answer, variables)
    except Exception as exc:  # an unanswered or malformed answer: nothing to draw
        print(f"(not drawn: {exc})")
        return None
    return float(expr.subs({s: sizes[s.name] for s in expr.free_symbols}))


# what is measured -> (base sizes, the values each size takes in turn); J = H*I, K <= J throughout
SWEEPS = {"work": ({"T": 64, "H": 4, "K": 4, "J": 64},
                   {"T": [8, 32, 128, 512, 2048], "H": [1, 4, 16, 64], "K": [2, 4, 16, 64],
                    "J": [16, 64, 256, 1024]}),
          # T >= J: the scores are the largest tensor
          "memory": ({"T": 256, "H": 4, "K": 4, "J": 32},
                     {"T": [256, 512, 1024, 2048, 4096], "H": [1, 2, 4, 8, 16, 32],
                      "K": [2, 4, 16, 32],
                      "J": [32, 64, 128, 256]})}
DRIFT = 3  # an answer of the right order stays within this factor of level along every size


def layer_cost(T: int, H: int, K: int, J: int) -> tuple[int, int, int]:
    """(work, entries of the largest tensor, scores normalised) of your self_attention on meta
    tensors M[T, J], WQ/WK[H, K, J], WV[H, J/H, J]."""
    shapes = [(T, J), (H, K, J), (H, K, J), (H, J // H, J)]
    work = parallel_time(self_attention, *shapes, model="log").work
    meta = [torch.empty(*shape, device="meta") for shape in shapes]
    return work, largest_tensor(self_attention, *meta), softmax_entries(self_attention, *meta)


sweeps = {} if is_grading() else {  # what -> size -> [(sizes, work, largest, scores)]
    what: {name: [(sizes, *layer_cost(**sizes)) for sizes in ({**base, name: v} for v in values)]
           for name, values in grown.items()}
    for what, (base, grown) in SWEEPS.items()}


def drifts(answer: str, what: str) -> dict[str, list[float]] | None:
    """Per size: the measurement over `answer` along its sweep, scaled to 1 at the first size (None:
    not drawn)."""
    out = {}
    for name, points in sweeps[what].items():
        measured = [work if what == "work" else scores for sizes, work, largest, scores in points]
        if not all(m > 0 for m in measured):
            print(f"({what} not drawn: your layer runs no softmax "
                  "the profiler sees, as in a fused kernel)")
            return None
        predicted = [evaluate(answer, ["T", "H", "J", "K"], **sizes) for sizes, *_ in points]
        if None in predicted or not all(math.isfinite(p) and p > 0 for p in predicted):
            return None
        ratios = [m / p for m, p in zip(measured, predicted)]
        out[name] = [r / ratios[0] for r in ratios]
    return out


if sweeps:
    fig, axes = plt.subplots(2, 1, figsize=(8, 7.6))
    for ax, (what, name) in zip(axes, [("work", "LAYER_WORK"), ("memory", "SCORES_MEMORY")]):
        answer = globals().get(name)
        drawn = drifts(answer, what) if isinstance(answer, str) else None
        if drawn is None:
            ax.set_title(f"{name}: not answered yet")
            continue
        for size, ratios in drawn.items():
            values = [sizes[size] for sizes, *_ in sweeps[what][size]]
            growth = [v / values[0] for v in values]
            ax.plot(growth, ratios, "o-", label=f"{size} grows")
            spread = max(ratios) / min(ratios)
            verdict = ("level" if spread <= DRIFT
                       else "NOT level: the order in this size looks wrong")
            print(f"{name} = {answer!r}: as {size} grows x{growth[-1]:g}, "
                  f"measured/answer moves x{spread:.2f} ({verdict})")
        ax.axhspan(1 / DRIFT, DRIFT, color="green", alpha=0.08, label=f"level: within x{DRIFT}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        low, high = ax.get_ylim()  # room around the band, so that it is the middle of the axis
        ax.set_ylim(min(low, DRIFT ** -2), max(high, DRIFT ** 2))
        ax.set_xlabel("growth of the size from its first value")
        ax.set_ylabel(f"measured {what} / your answer (1 at the first size)")
        ax.set_title(f"{name} = {answer!r}")
        ax.legend(fontsize=9)
    plt.tight_layout()
    plt.show()

# %% tags=["solutions-only"]
# The worked solution's figures (Problem 1.5), measured on the reference self_attention: the exact
# work and memory, and the reference answers level while answers of another order are not.
if sweeps:
    for sizes, work, largest, scores in (point for what in sweeps.values()
                                         for points in what.values() for point in points):
        T, H, K, J = sizes["T"], sizes["H"], sizes["K"], sizes["J"]
        assert work == (4 * H * T * K * J + 2 * T * J**2 + 2 * H * T**2 * K + 2 * T**2 * J
                        + 4 * H * T**2), \
            f"the work at {sizes} is not the worked solution's count"  # claim: ch1-work-exact
        if T >= J:
            assert largest == H * T * T, \
                f"the largest tensor at {sizes} is not the scores"  # claim: ch1-scores-largest
        assert scores == H * T * T, f"the softmax does not normalise H T^2 scores at {sizes}"
    for what, right, wrong in [("work", LAYER_WORK,
                                ["T^2*J + T*J^2", "T^2*H*K + T*J*H*K", "H*T^2*K + T^2*J",
                                                      "T*J*H*K + T*J^2"]),
                               ("memory", SCORES_MEMORY, ["T^2", "J*T^2", "H*K*T^2"])]:
        spread = max(max(r) / min(r) for r in drifts(right, what).values())
        assert spread <= 1.6, f"{right} moves x{spread:.2f}: not level"  # claim: ch1-level
        for answer in wrong:
            assert max(max(r) / min(r) for r in drifts(answer, what).values()) > 2 * DRIFT, \
                f"{answer} looks level"  # claim: ch1-drift

# %% [markdown]
# ## 1.5 Depth, measured
#
# `attnlab.profiler.parallel_time(fn, *args, model=...)` runs your own `transformer` on
# *meta* tensors (shapes without data, so $T = 10^6$ <!-- given --> costs nothing) and follows every
# PyTorch operation: an elementwise operation costs 1, reshapes and concatenation cost 0, a
# sum over $S$ terms costs $S$ (model `"serial"`) or $\lceil\log_2 S\rceil$ (model `"log"`),
# a contraction costs one multiply plus the sum over its reduced index, and a softmax costs
# exp + sum + divide. It returns the depth (the critical path) and the work (all scalar
# operations). Below, the measured depth of a 2-layer Transformer against $T$, and of one
# layer at $T = 10^6$ <!-- given -->. (This cell measures your own `transformer`: run it yourself once
# Problem 1.2 passes its tests, and see how the depth grows with $T$ in each model.) <!-- not a claim: an invitation -->

# %% tags=["answer-output"] mystnb={"figure": {"caption": "Measured depth of a 2-layer Transformer against $T$, with serial sums (left) and logarithmic sums (right). Read how the depth grows as $T$ doubles in each model."}}
L, H, K, I = 2, 4, 16, 16
J = H * I
layer_shapes = [((H, K, J), (H, K, J), (H, I, J))] * L
depth_Ts = [] if is_grading() else [2**k for k in range(2, 21)]
depths = {model: [parallel_time(transformer, (T, J), layer_shapes,
                                model=model).depth for T in depth_Ts]
          for model in ("serial", "log")}


def depth_axes() -> list:
    """The two panels of measured depth against T (serial sums, log sums)."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, model in zip(axes, ("serial", "log")):
        ax.plot(depth_Ts, depths[model], "o", label=f"measured depth ({model} sums)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log" if model == "serial" else "linear")
        ax.set_xlabel("sequence length T")
        ax.set_ylabel("depth (parallel time)")
        ax.set_title(f"{L}-layer Transformer, J={J}, K={K}: {model} sums")
    return axes


if depth_Ts:
    for ax in depth_axes():
        ax.legend(fontsize=9)
    plt.tight_layout()
    plt.show()
    print("one layer, T = 1,000,000:",
          parallel_time(transformer, (10**6, J), layer_shapes[:1], model="serial"))

# %% tags=["solutions-only"]
# The worked solution's figures (Section 1.3), measured on the reference transformer above.
if depth_Ts:
    serial, log = depths["serial"], depths["log"]
    assert all((b - a) == 2 * L * (T2 - T1)
               for a, b, T1, T2 in zip(serial, serial[1:], depth_Ts, depth_Ts[1:])), \
        "the serial depth climbs by 2L per unit of T"  # claim: ch1-serial-slope
    assert all(b - a == 2 * L for a, b in zip(log, log[1:])), \
        "the log depth climbs by 2L per doubling"  # claim: ch1-log-doubling
    assert parallel_time(transformer, (10**6, J), layer_shapes[:1],
                         model="serial").depth == 2 * 10**6 + J + K + 6, \
        "one layer at T = 10^6 has serial depth 2T + J + K + 6"  # claim: ch1-one-layer

# %% [markdown]
# Now your answers to Problems 1.6 and 1.7 against the measured depth of your own
# `transformer`, read as Section 1.4 reads the work: each of $L$, $T$, $J$ and $K$ grows in
# turn from a base ($L = 2$, $T = 64$, $J = 64$, $K = 16$, $H = 4$ <!-- given -->) while the others stay, and the
# plot shows the measured depth divided by your answer, scaled to $1$ at the first size. An
# answer of the right order stays level, within the factor `DRIFT` of Section 1.4; one of
# another order climbs or falls along the size it gets wrong <!-- claim: ch1-depth-level --> <!-- claim: ch1-depth-drift -->. A sweep of $T$ alone
# could not tell: a constant fitted to the points hides every size that stays fixed. (This
# cell measures your `transformer` and draws your own answers: run it yourself.)

# %% tags=["answer-output"] mystnb={"figure": {"caption": "Measured depth divided by your answers, serial sums (top) and logarithmic sums (bottom), as each size grows. A curve that stays inside the green band belongs to an answer of the right order in that size; one that climbs or falls out of it does not."}}
from attnlab.fits import spread

# base sizes (H = 4 heads), then the values each size takes
DEPTH_SWEEPS = ({"L": 2, "T": 64, "J": 64, "K": 16},
                {"L": [1, 2, 4, 8, 16], "T": [4, 64, 1024, 16384, 262144], "J": [16, 64, 256, 1024],
                 "K": [2, 4, 16, 64]})


def depth_cost(L: int, T: int, J: int, K: int, H: int = 4) -> dict[str, int]:
    """The depth of your transformer, L layers of H heads (I = J/H), on meta tensors, for each cost
    model."""
    shapes = [((H, K, J), (H, K, J), (H, J // H, J))] * L
    return {model: parallel_time(transformer, (T, J), shapes,
                                 model=model).depth for model in ("serial", "log")}


depth_sweeps = {} if is_grading() else {name: [(sizes, depth_cost(**sizes)) for sizes in
                                               ({**DEPTH_SWEEPS[0], name: v} for v in values)]
                                        for name, values in DEPTH_SWEEPS[1].items()}


def depth_drifts(answer: str, model: str) -> dict[str, list[float]] | None:
    """Per size: the measured depth over `answer` along its sweep, scaled to 1 at the first size
    (None: not drawn)."""
    out = {}
    for name, points in depth_sweeps.items():
        predicted = [evaluate(answer, ["L", "T", "H", "J", "K"], H=4,
                              **sizes) for sizes, _ in points]
        if None in predicted or not all(math.isfinite(p) and p > 0 for p in predicted):
            return None
        ratios = [measured[model] / p for (_, measured), p in zip(points, predicted)]
        out[name] = [r / ratios[0] for r in ratios]
    return out


if depth_sweeps:
    fig, axes = plt.subplots(2, 1, figsize=(8, 7.6))
    for ax, model, name in zip(axes, ("serial", "log"),
                               ("PARALLEL_TIME_SERIAL", "PARALLEL_TIME_LOG")):
        answer = globals().get(name)
        drawn = depth_drifts(answer, model) if isinstance(answer, str) else None
        if drawn is None:
            ax.set_title(f"{name}: not answered yet")
            continue
        for size, ratios in drawn.items():
            growth = [sizes[size] / depth_sweeps[size][0][0][size]
                      for sizes, _ in depth_sweeps[size]]
            ax.plot(growth, ratios, "o-", label=f"{size} grows")
            moves = spread(ratios, [1.0] * len(ratios))
            verdict = "level" if moves <= DRIFT else "NOT level: the order in this size looks wrong"
            print(f"{name} = {answer!r}: as {size} grows x{growth[-1]:g}, "
                  f"measured/answer moves x{moves:.2f} ({verdict})")
        ax.axhspan(1 / DRIFT, DRIFT, color="green", alpha=0.08, label=f"level: within x{DRIFT}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        low, high = ax.get_ylim()  # room around the band, so that it is the middle of the axis
        ax.set_ylim(min(low, DRIFT ** -2), max(high, DRIFT ** 2))
        ax.set_xlabel("growth of the size from its first value")
        ax.set_ylabel(f"measured depth ({model} sums) / your answer")
        ax.set_title(f"{name} = {answer!r}")
        ax.legend(fontsize=9)
    plt.tight_layout()
    plt.show()

# %% tags=["solutions-only"]
# The reference answers stay level along every size; answers of another order drift along the size
# they get wrong.
if depth_sweeps:
    for model, right, wrong in [("serial", PARALLEL_TIME_SERIAL, ["L*T", "L*(K + T)", "J + K + T"]),
                                ("log", PARALLEL_TIME_LOG,
                                 ["log(L*J*K*T)", "L*log(T)", "log(J) + log(K) + log(T)"])]:
        moves = max(max(r) / min(r) for r in depth_drifts(right, model).values())
        assert moves <= 2, f"{right} moves x{moves:.2f}: not level"  # claim: ch1-depth-level
        for answer in wrong:
            assert max(max(r) / min(r) for r in depth_drifts(answer, model).values()) > DRIFT, \
                f"{answer} looks level"  # claim: ch1-depth-drift

# %% [markdown]
# **Brent's bound.** A machine with $C$ processors runs a computation in time at most
# $\text{work}/C + \text{depth}$ (schedule each level of the critical path greedily). <!-- not a claim: Brent's theorem --> The
# profiler reports it as `ParallelTime.brent(C)`. Below, one layer's measured wall-clock
# from Section 1.4 (your `self_attention`, medians) against $\text{work}/C + \text{depth}$
# for the $C$ it ran with (one CPU thread, or a GPU's cores), converted to
# seconds by one fitted constant (seconds per scalar operation).

# %% mystnb={"figure": {"caption": "One layer's measured wall-clock (points) against Brent's bound $\\text{work}/C + \\text{depth}$ scaled by one fitted constant (line). Where the two agree, the counts of work and depth explain the time."}}
if Ts and depth_Ts:
    H1, K1, I1 = 4, 64, 64
    J1 = H1 * I1
    measured = [statistics.median(r) for r in runs["self_attention (einsum)"]]
    bounds = [parallel_time(self_attention, (T, J1), (H1, K1, J1), (H1, K1, J1), (H1, I1, J1),
                            model="log").brent(C) for T in Ts]
    scale = math.exp(sum(math.log(m / b) for m, b in zip(measured, bounds)) / len(bounds))
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    ax.loglog(Ts, measured, "o-", label="measured wall-clock (median)")
    ax.loglog(Ts, [scale * b for b in bounds], "k--",
              label=f"Brent: (work/C + depth) x fitted s/op, C={C}")
    ax.set_xlabel("sequence length T")
    ax.set_ylabel("seconds per layer")
    ax.set_title(f"One layer on {device.type}: wall-clock against Brent's bound")
    ax.legend(fontsize=8)
    plt.show()
