# %% [markdown]
# # Chapter 0. Attention as dot product and softmax
#
# Everything in this book is built from one operation: a **query** is compared with a
# list of **keys** by dot products, the scores go through a softmax, and the resulting
# weights average a list of **values**. This chapter defines that operation, computes a
# small example by hand, writes a whole multi-head layer in the column convention of
# lecture notes that treat items as columns, and sorts out which parts of a Transformer
# are sequential and which are not.
#
# You will implement
#
# * `dot_product_attention(q, keys, values)`: one query reading a memory of key-value pairs;
# * `column_attention(H, WQ, WK, WV)`: a multi-head self-attention layer with the items as
#   the *columns* of $H$, and see that it is the transpose of the row form used in the rest
#   of the book.
#
# The material restates seed 001 (a blog post on parallel computation in the Transformer,
# with a four-token example), seed 003 (HKU COMP3361, Week 4, the memory picture of
# attention) and seed 004 (OSU CSE 5523, Lecture Notes 17, the column form) in this book's
# notation.

# %% [markdown]
# ## Notation
#
# | book | meaning | seed 001 | seed 003 | seed 004 |
# |---|---|---|---|---|
# | $q[d]$, $d < D$ | one query vector | a row of "Query" | query $q$ | a column of $\mathbf{Q}_{\ell,h}\mathbf{H}_{\ell-1}$ |
# | $\text{keys}[n, d]$, $n < N$ | the memory's keys | the "Key Matrix" | $k_1, \dots, k_4$ | columns of $\mathbf{K}_{\ell,h}\mathbf{H}_{\ell-1}$ |
# | $\text{values}[n, e]$, $e < D_v$ | the memory's values | the "Value Matrix" | $v_1, \dots, v_4$ | columns of $\mathbf{V}_{\ell,h}\mathbf{H}_{\ell-1}$ |
# | $s[n]$, $\alpha[n]$ | scores and attention weights | "attention scores" | $q \cdot k_n$ and $[0.6, 0.1, 0.2, 0.1]$ | the "attention matrix" and its SoftMax |
# | $c[e]$ | the context vector | "weighted sum of the value matrix" | context vector $\mathbf{c}$ | a column of $\mathbf{H}_{\ell,h}$ |
# | $t < T$ | items (positions, tokens) | 4 tokens | 4 memory slots | "$K$ items" (see Errata) |
# | $j < J$ | item dimension | embedding dimension 3 | | $D$ |
# | $M[t, j]$ (rows) or $H[j, t]$ (columns) | the items of a layer | the input embeddings | | $\mathbf{H}_\ell \in \mathbb{R}^{D\times K}$ |
# | $h < H$ | head | (one head) | | $h$ |
# | $W^Q[h,k,j]$, $W^K[h,k,j]$, $k < K$ | query and key weights | none: the embeddings are used as they are | | $\mathbf{Q}_{\ell,h}$, $\mathbf{K}_{\ell,h} \in \mathbb{R}^{D\times D}$ |
# | $W^V[h,i,j]$, $i < I$ | value weights | none | | $\mathbf{V}_{\ell,h} \in \mathbb{R}^{D\times D}$ |
# | heads stacked, head 0 first | concatenation | | | $\sum_h \delta_h \otimes \mathbf{H}_{\ell,h}$ |
#
# **Errata and translations.**
#
# * *Seed 004, "$\mathbf{H}_\ell \in \mathbb{R}^{D\times K}$ of $K$ items".* The same
#   letter $K$ also names the key matrix $\mathbf{K}_{\ell,h}$ (and, in this book, the
#   query/key dimension). We write $T$ for the number of items: $H \in \mathbb{R}^{J\times T}$,
#   one $J$-dimensional column per item. (The notes also call $\mathbf{H}_\ell$ "a
#   $D$-dimensional vector"; it is a matrix of $K$ such vectors.)
# * *Seed 004's SoftMax "on $\mathbf{M} \in \mathbb{R}^{J\times N}$ with $N$ instances of $J$
#   values".* In this book $J$ is the item dimension and $M$ the row-form sequence, so we
#   restate it: SoftMax acts on a score matrix $S \in \mathbb{R}^{T\times T}$ (keys down,
#   queries across) and normalises **each column**,
#   $\text{SoftMax}(S)[s,t] = e^{S[s,t]} / \sum_{s'} e^{S[s',t]}$; that is what
#   $\exp(\mathbf{M}) / \mathbf{1}^\top\exp(\mathbf{M})$ means.
# * *Seed 004's $\mathbf{Q}, \mathbf{K}, \mathbf{V} \in \mathbb{R}^{D\times D}$* are square;
#   here $W^Q[h] \in \mathbb{R}^{K\times J}$ and $W^V[h] \in \mathbb{R}^{I\times J}$, usually with
#   $I = J/H$ so that the $H$ stacked heads have $J$ rows again.
# * *Scaling.* Seed 003 writes plain dot products $q\cdot k_n$ and seed 004 has no factor
#   either; seed 001 says to "scale" the scores without saying by what. This book divides
#   by $\sqrt{D}$, the square root of the query/key dimension ($\sqrt{K}$ inside a layer),
#   as the original Transformer does.
# * *Seed 001's matrices.* It announces Query, Key and Value as "(sequence length) $\times$
#   (embedding dimension)" but prints $3\times 4$ matrices: they are the embeddings
#   *transposed*, and they are the embeddings themselves, with no learned projection.
#   Section 0.2 shows what that does.
# * *Seed 004's "each item may attend to one other item per head"* describes hard
#   attention; the softmax gives a weighted average over all items, close to one item only
#   when the scores are far apart (Section 0.2 has such a case).

# %%
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from attnlab.testing import expect_close, expect_like, expect_shape

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print("active device:", device)


# %% [markdown]
# ## 0.1 A memory of key-value pairs
#
# Seed 003 pictures attention as reading a memory. The memory holds $N$ pairs
# $(\text{keys}[n], \text{values}[n])$; a query $q \in \mathbb{R}^D$ is compared with every
# key, the comparison scores become weights that sum to one, and the answer is the
# weighted average of the values, the **context vector**:
#
# $$
# \begin{aligned}
# s[n] &= \frac{1}{\sqrt{D}} \sum_d q[d]\, \text{keys}[n, d] \\
# \alpha[n] &= \operatorname*{softmax}_n\; s[n] = \frac{e^{s[n]}}{\sum_{n'} e^{s[n']}} \\
# c[e] &= \sum_n \alpha[n]\, \text{values}[n, e]
# \end{aligned}
# $$
#
# Keys and queries live in the same space ($D$ coordinates); values may have any number
# $D_v$ of coordinates. In seed 003's picture the weights are $[0.6, 0.1, 0.2, 0.1]$ and
# $c = 0.6\,v_1 + 0.1\,v_2 + 0.2\,v_3 + 0.1\,v_4$.
#
# Why divide by $\sqrt{D}$? If the coordinates of $q$ and of a key are independent with
# mean 0 and variance 1, their dot product has variance $D$; dividing by $\sqrt{D}$ keeps
# the scores of order 1 whatever the dimension, so the softmax neither saturates nor
# flattens as $D$ grows.
#
# **Problem 0.1.** Implement `dot_product_attention`. Work on the inputs' device and dtype.

# %% nbgrader={"grade": false, "grade_id": "dot_product_attention", "locked": false, "schema_version": 3, "solution": true}
def dot_product_attention(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """One query reading a memory: q[D], keys[N, D], values[N, Dv] -> context[Dv].

    Weights softmax_n(q . keys[n] / sqrt(D)), context = sum_n weights[n] values[n].
    """
    ### BEGIN SOLUTION
    D = q.shape[-1]
    s = torch.einsum("d,nd->n", q, keys) / math.sqrt(D)
    alpha = torch.softmax(s, dim=0)
    return torch.einsum("n,ne->e", alpha, values)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_dot_product_attention", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Visible tests: each failure says what is wrong.
g = torch.Generator().manual_seed(0)
N, D, Dv = 5, 4, 3
q = torch.randn(D, generator=g, dtype=torch.float64)
keys = torch.randn(N, D, generator=g, dtype=torch.float64)
values = torch.randn(N, Dv, generator=g, dtype=torch.float64)
c = dot_product_attention(q, keys, values)
expect_shape(c, (Dv,), "dot_product_attention(q[4], keys[5,4], values[5,3])",
             hint="The context vector has one coordinate per value coordinate (Dv), not per key coordinate.")
expect_like(c, q, "dot_product_attention on float64 inputs")
expect_like(dot_product_attention(q.float(), keys.float(), values.float()), q.float(),
            "dot_product_attention on float32 inputs")

# When every key is the same, every weight is 1/N: the context is the mean of the values.
same = keys[:1].expand(N, D)
expect_close(dot_product_attention(q, same, values), values.mean(dim=0), "the context with identical keys",
             hint="With equal scores the weights must be 1/N each: normalise the exponentials so they sum to one.")

# By hand: q = [2, 0, 0, 0], keys e_0 and e_1, values 10 and 20.
# scores [2/sqrt(4), 0] = [1, 0], weights [e/(e+1), 1/(e+1)] = [0.731, 0.269].
q1 = torch.tensor([2.0, 0.0, 0.0, 0.0], dtype=torch.float64)
k1 = torch.eye(4, dtype=torch.float64)[:2]
v1 = torch.tensor([[10.0], [20.0]], dtype=torch.float64)
w = math.e / (math.e + 1)
expect_close(dot_product_attention(q1, k1, v1), torch.tensor([10 * w + 20 * (1 - w)], dtype=torch.float64),
             "the hand-checked example (expected 12.69)",
             hint="Divide the scores by sqrt(D) = 2, the square root of the query/key dimension "
                  "(without it the answer would be 11.19), and average the values, not the keys.")

# The memory is a set: listing its pairs in another order changes nothing.
perm = torch.tensor([2, 4, 0, 1, 3])
expect_close(dot_product_attention(q, keys[perm], values[perm]), c, "the context with the memory reordered",
             hint="Reordering the (key, value) pairs together must not change the context.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch0.dot_product_attention", dot_product_attention)
### END HIDDEN TESTS

# %% [markdown]
# ## 0.2 Seed 001's four tokens, step by step
#
# Seed 001 takes four tokens with three-dimensional embeddings
# $[1,2,3], [4,5,6], [7,8,9], [10,11,12]$ and uses them, unchanged, as queries, keys and
# values: in its notation $Q = K = V = E^\top$, where $E[t, j]$ holds one token per row. It
# then says to take the dot products, scale them, apply the softmax and average the values,
# but shows no numbers. Here they are, with $D = 3$: each token $t$ is a query, and the
# memory is all four tokens.

# %%
E = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [10.0, 11.0, 12.0]], dtype=torch.float64)
Query = Key = Value = E  # seed 001: no learned projections
D = E.shape[1]

dots = Query @ Key.T                # dots[t, t'] = E[t] . E[t']
scores = dots / math.sqrt(D)        # scaled by 1/sqrt(3)
weights = torch.softmax(scores, dim=1)  # row t: the weights of query t over the four keys
context = weights @ Value           # row t: the context vector of token t

torch.set_printoptions(precision=4, sci_mode=False)
print("dot products E E^T:\n", dots)
print("scaled scores:\n", scores)
torch.set_printoptions(precision=3, sci_mode=True)
print("attention weights (each row sums to 1):\n", weights)
torch.set_printoptions(precision=5, sci_mode=False)
print("context vectors:\n", context)
torch.set_printoptions(profile="default")

# Checks on the numbers the text below quotes.
assert dots[3, 3] == 365 and dots[0, 3] == 68 and dots[0, 2] == 50
assert abs(scores[3, 3].item() - 365 / math.sqrt(3)) < 1e-12
assert torch.allclose(weights.sum(dim=1), torch.ones(4, dtype=torch.float64))
assert (weights[:, 3] > 0.9999).all(), "every token puts more than 99.99% of its weight on token 4"
assert abs(weights[0, 2].item() - math.exp(-18 / math.sqrt(3))) < 1e-6  # e^{-(68-50)/sqrt 3} = 3.07e-5
assert (context - E[3]).abs().max() < 1e-4, "every context vector is (almost) token 4's embedding"


# %%
def show_matrix(ax, A: torch.Tensor, title: str, fmt: str) -> None:
    """A heatmap of A[rows, cols] with each entry written in its cell."""
    image = ax.imshow(A.numpy(), cmap="viridis")
    for r in range(A.shape[0]):
        for c in range(A.shape[1]):
            value = A[r, c].item()
            light = value < A.min().item() + 0.6 * (A.max() - A.min()).item()
            ax.text(c, r, format(value, fmt), ha="center", va="center", fontsize=8,
                    color="white" if light else "black")
    ax.set_xticks(range(A.shape[1]), [f"token {c + 1}" for c in range(A.shape[1])], fontsize=8)
    ax.set_yticks(range(A.shape[0]), [f"token {r + 1}" for r in range(A.shape[0])], fontsize=8)
    ax.set_xlabel("key (memory slot)")
    ax.set_ylabel("query")
    ax.set_title(title)
    plt.colorbar(image, ax=ax, shrink=0.8)


fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
show_matrix(axes[0], scores, r"scores $E E^\top / \sqrt{3}$", ".1f")
show_matrix(axes[1], weights, "attention weights (softmax of each row)", ".1e")
fig.suptitle("Seed 001's four tokens as their own queries, keys and values")
plt.tight_layout()
plt.show()

# %% [markdown]
# **What is odd about this example.** The weights are almost one-hot, and on the *same*
# key for every query: each token, token 1 included, puts more than 99.99% of its weight
# on token 4, so all four context vectors are (to five digits) token 4's embedding
# $[10, 11, 12]$. Two things cause it.
#
# 1. *No learned projections.* The queries and keys are the embeddings themselves. All
#    coordinates are positive and grow with the token's index, so for any query
#    $q = E[t]$ the dot product $q \cdot E[t']$ grows with $t'$: token 4 wins every
#    comparison, even against the query's own token. A real layer multiplies by learned
#    $W^Q$ and $W^K$ first, and those decide which tokens a query should match.
# 2. *Large scores.* Softmax depends only on the *differences* between scores, and here
#    they are huge: token 4 against itself scores $365/\sqrt{3} = 210.7$; token 1's
#    scores are $[14, 32, 50, 68]/\sqrt{3}$, so its weight on token 3 is
#    $e^{-(68-50)/\sqrt{3}} = e^{-10.4} = 3.1\times 10^{-5}$, and the gaps only widen for
#    the later tokens (token 4's weight on token 3 is $e^{-99/\sqrt3} \approx 10^{-25}$).
#    Dividing by $\sqrt{3}$ cannot help when the embeddings have norm 4 to 19 instead of
#    about $\sqrt{3}$.
#
# Scale is the knob: the same four directions, normalised to unit length (roughly what
# a layer normalisation does), give scores that differ by less than $0.03$ and weights
# that are nearly uniform.

# %%
unit = E / E.norm(dim=1, keepdim=True)
weights_unit = torch.softmax(unit @ unit.T / math.sqrt(D), dim=1)
fig, ax = plt.subplots(figsize=(5.5, 4.2))
show_matrix(ax, weights_unit, "weights with unit-length embeddings", ".3f")
plt.tight_layout()
plt.show()
assert (weights_unit - 0.25).abs().max() < 0.01

# %% [markdown]
# Your `dot_product_attention` computes one row of this table at a time: query $E[t]$
# against the memory of all four tokens.

# %%
for t in range(4):
    mine = dot_product_attention(E[t], E, E)
    assert torch.allclose(mine, context[t]), f"token {t + 1}: {mine} != {context[t]}"
print("dot_product_attention reproduces the four context vectors")


# %% [markdown]
# ## 0.3 A whole layer in the column convention
#
# In a self-attention layer *every* item is a query, and the memory is all the items
# themselves, seen through learned projections. Seed 004 writes the items as the columns
# of a matrix $H \in \mathbb{R}^{J\times T}$ (item $t$ is the column $H[:, t]$). For each
# head $h$, with $W^Q[h], W^K[h] \in \mathbb{R}^{K\times J}$ and $W^V[h] \in \mathbb{R}^{I\times J}$:
#
# $$
# \begin{aligned}
# Q_h &= W^Q[h]\, H \in \mathbb{R}^{K\times T}, \qquad
# K_h = W^K[h]\, H \in \mathbb{R}^{K\times T}, \qquad
# V_h = W^V[h]\, H \in \mathbb{R}^{I\times T} \\
# A_h &= \text{SoftMax}\!\left(\frac{1}{\sqrt{K}}\, K_h^\top Q_h\right) \in \mathbb{R}^{T\times T}
# \quad\text{(each column normalised: } \textstyle\sum_s A_h[s, t] = 1\text{)} \\
# H_h &= V_h\, A_h \in \mathbb{R}^{I\times T}, \qquad
# H_{\text{out}} = \begin{bmatrix} H_0 \\ H_1 \\ \vdots \\ H_{H-1} \end{bmatrix} \in \mathbb{R}^{HI\times T}
# \end{aligned}
# $$
#
# Entry $(K_h^\top Q_h)[s, t]$ is key $s$ against query $t$, so column $t$ of $A_h$ holds
# query $t$'s weights over the keys, and column $t$ of $V_h A_h$ is
# $\sum_s A_h[s,t]\, V_h[:, s]$: query $t$'s context vector. Stacking the heads' blocks
# (head 0 on top) is seed 004's $\sum_h \delta_h \otimes H_h$, with $\delta_h$ the $h$-th unit
# vector of $\mathbb{R}^H$. Seed 004 also notes that the three products can be done as one,
# $\left[W^Q[h]; W^K[h]; W^V[h]\right] H$, stacking the weights (and the heads) by rows.
#
# **Problem 0.2.** Implement `column_attention(H, WQ, WK, WV)`. The weights come as
# tensors $W^Q[h,k,j]$, $W^K[h,k,j]$, $W^V[h,i,j]$; the result has $H\cdot I$ rows (head 0's
# $I$ rows first) and $T$ columns.

# %% nbgrader={"grade": false, "grade_id": "column_attention", "locked": false, "schema_version": 3, "solution": true}
def column_attention(H: torch.Tensor, WQ: torch.Tensor, WK: torch.Tensor, WV: torch.Tensor) -> torch.Tensor:
    """Multi-head self-attention with items as columns.

    H[J, T], WQ[H, K, J], WK[H, K, J], WV[H, I, J] -> [H*I, T], head 0's rows first;
    A_h = SoftMax(K_h^T Q_h / sqrt(K)) normalised over each column.
    """
    ### BEGIN SOLUTION
    K = WQ.shape[1]
    Q = torch.einsum("hkj,jt->hkt", WQ, H)
    Kh = torch.einsum("hkj,jt->hkt", WK, H)
    V = torch.einsum("hij,jt->hit", WV, H)
    A = torch.softmax(torch.einsum("hks,hkt->hst", Kh, Q) / math.sqrt(K), dim=1)  # columns sum to 1
    out = torch.einsum("his,hst->hit", V, A)
    return out.reshape(-1, H.shape[1])
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_column_attention", "locked": true, "points": 3, "schema_version": 3, "solution": false}
g = torch.Generator().manual_seed(1)
J, T, Hh, K, I = 8, 5, 2, 3, 4
H = torch.randn(J, T, generator=g, dtype=torch.float64)
WQ = torch.randn(Hh, K, J, generator=g, dtype=torch.float64) / J**0.5
WK = torch.randn(Hh, K, J, generator=g, dtype=torch.float64) / J**0.5
WV = torch.randn(Hh, I, J, generator=g, dtype=torch.float64) / J**0.5
out = column_attention(H, WQ, WK, WV)
expect_shape(out, (Hh * I, T), "column_attention(H[8,5], WQ[2,3,8], WK[2,3,8], WV[2,4,8])",
             hint="Items stay columns: the result is [H*I, T].")
expect_like(out, H, "column_attention on float64 inputs")
expect_like(column_attention(H.float(), WQ.float(), WK.float(), WV.float()), H.float(),
            "column_attention on float32 inputs")

# By hand (J=1, two items 1 and 0, WQ = WK = 1 with K=4, WV = 1): query 0 scores the keys
# [4/sqrt(4), 0] = [2, 0]; query 1 scores [0, 0]. So out = [[e^2/(e^2+1), 1/2]].
ones = torch.ones(1, 4, 1, dtype=torch.float64)
H1 = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
expected = torch.tensor([[math.exp(2) / (math.exp(2) + 1), 0.5]], dtype=torch.float64)
expect_close(column_attention(H1, ones, ones, torch.ones(1, 1, 1, dtype=torch.float64)), expected,
             "column_attention on the hand-checked example",
             hint="Scale by 1/sqrt(K), and normalise each COLUMN of K_h^T Q_h (a sum over the keys s): "
                  "normalising rows gives [[0.881, 0.119]].")

# Heads are stacked in order, head 0's rows first.
for h in range(Hh):
    expect_close(out[h * I:(h + 1) * I], column_attention(H, WQ[h:h + 1], WK[h:h + 1], WV[h:h + 1]),
                 f"rows {h * I}..{(h + 1) * I - 1} of the output",
                 hint=f"These rows must be head {h} alone: reshape [H, I, T] to [H*I, T] (no transpose).")

# The row form, written with PyTorch's own attention (softmax over the keys of each query):
# the column form must be its transpose, column_attention(M^T) = self_attention(M)^T.
M = H.T
Query, Key, Value = (torch.einsum("hkj,tj->htk", W, M) for W in (WQ, WK, WV))
row_form = F.scaled_dot_product_attention(Query, Key, Value).permute(1, 0, 2).reshape(T, Hh * I)
expect_close(out, row_form.T, "column_attention(M^T) against the row form's transpose",
             hint="Column t of the output is query t's context vector: sum_s A[s, t] V[:, s].")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch0.column_attention", column_attention)
### END HIDDEN TESTS

# %% [markdown]
# ### Why the column form is the row form transposed
#
# The rest of the book keeps items as rows: $M = H^\top \in \mathbb{R}^{T\times J}$, with
# $\text{Query}_h = M\, W^Q[h]^\top$, $\text{Key}_h = M\, W^K[h]^\top$,
# $\text{Value}_h = M\, W^V[h]^\top$ and weights
# $\alpha_h = \operatorname{softmax}_{\text{rows}}\!\big(\text{Query}_h \text{Key}_h^\top / \sqrt{K}\big)$.
# Transposing each factor,
#
# $$
# \text{Query}_h = (W^Q[h] H)^\top = Q_h^\top,\qquad \text{Key}_h = K_h^\top,\qquad \text{Value}_h = V_h^\top,
# $$
#
# so the row-form scores are $\text{Query}_h \text{Key}_h^\top = Q_h^\top K_h = (K_h^\top Q_h)^\top$.
# Normalising the rows of a matrix is normalising the columns of its transpose, hence
# $\alpha_h = A_h^\top$, and the row-form output of head $h$ is
#
# $$
# \alpha_h\, \text{Value}_h = A_h^\top V_h^\top = (V_h A_h)^\top = H_h^\top .
# $$
#
# Concatenating heads side by side in the row form, $[H_0^\top \;\; H_1^\top \;\cdots]$, is
# the transpose of stacking them vertically. So
# $\texttt{column\_attention}(M^\top) = \texttt{self\_attention}(M)^\top$, where
# `self_attention` is the row form of Chapter 1. The same layer can also be assembled from
# Problem 0.1 alone, one query and one head at a time: below, your two functions agree.

# %%
def row_form_from_memory(M: torch.Tensor, WQ: torch.Tensor, WK: torch.Tensor, WV: torch.Tensor) -> torch.Tensor:
    """M[T, J] -> [T, H*I]: for every position t and head h, one query reads the memory of all positions."""
    rows = []
    for t in range(M.shape[0]):
        heads = [dot_product_attention(WQ[h] @ M[t], M @ WK[h].T, M @ WV[h].T) for h in range(WQ.shape[0])]
        rows.append(torch.cat(heads))
    return torch.stack(rows)


g = torch.Generator().manual_seed(2)
T, Hh, K, I = 6, 3, 4, 2
J = Hh * I
M = torch.randn(T, J, generator=g, dtype=torch.float64)
WQ, WK = (torch.randn(Hh, K, J, generator=g, dtype=torch.float64) for _ in range(2))
WV = torch.randn(Hh, I, J, generator=g, dtype=torch.float64)
diff = (column_attention(M.T, WQ, WK, WV).T - row_form_from_memory(M, WQ, WK, WV)).abs().max().item()
print(f"max |column_attention(M^T)^T - row form from dot_product_attention| = {diff:.1e}")
assert diff < 1e-12

# Seed 004's stacked product: one multiply by [WQ; WK; WV] gives all heads' Q, K and V at once.
W_stacked = torch.cat([WQ.reshape(-1, J), WK.reshape(-1, J), WV.reshape(-1, J)])  # [H(2K+I), J]
QKV = W_stacked @ M.T
Q_all, K_all, V_all = QKV.split([Hh * K, Hh * K, Hh * I])
assert torch.allclose(Q_all.reshape(Hh, K, T), torch.einsum("hkj,jt->hkt", WQ, M.T))
assert torch.allclose(V_all.reshape(Hh, I, T), torch.einsum("hij,jt->hit", WV, M.T))
print(f"one stacked multiply: [{W_stacked.shape[0]} x {J}] @ [{J} x {T}] -> Q, K, V of all {Hh} heads")


# %% [markdown]
# ### Heads, then a feed-forward layer
#
# Seed 004 ends the layer with a feed-forward layer on the stacked heads, e.g. a sigmoid
# layer $H_\ell = \sigma\big(W^F H_{\text{out}} + b\big)$, applied to each column (item)
# separately. Below, two such levels on eight random items: head 0's attention matrix
# $A_0$ of the first level (its columns sum to one), and the items after each level.

# %%
def feed_forward(Z: torch.Tensor, WF: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Seed 004's FF: Z[J, T] -> sigmoid(WF Z + b) [J', T], the same map for every column."""
    return torch.sigmoid(WF @ Z + b[:, None])


g = torch.Generator().manual_seed(3)
T, Hh, K, I = 8, 2, 4, 3
J = Hh * I
H0 = torch.randn(J, T, generator=g)
levels = [(torch.randn(Hh, K, J, generator=g), torch.randn(Hh, K, J, generator=g),
           torch.randn(Hh, I, J, generator=g), torch.randn(J, J, generator=g), torch.zeros(J)) for _ in range(2)]

Hs = [H0]
for WQ, WK, WV, WF, b in levels:
    Hs.append(feed_forward(column_attention(Hs[-1], WQ, WK, WV), WF, b))
for level, Hl in enumerate(Hs):
    spread = Hl.std(dim=1).mean().item()
    print(f"H_{level}: shape {tuple(Hl.shape)}, spread across items (mean std over t) {spread:.3f}")
assert Hs[2].shape == H0.shape and ((Hs[2] > 0) & (Hs[2] < 1)).all()

WQ, WK = levels[0][0], levels[0][1]
A0 = torch.softmax((WK[0] @ H0).T @ (WQ[0] @ H0) / math.sqrt(K), dim=0)  # keys down, queries across
assert torch.allclose(A0.sum(dim=0), torch.ones(T))
fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
im = axes[0].imshow(A0.numpy(), cmap="viridis")
axes[0].set_xlabel("query item t")
axes[0].set_ylabel("key item s")
axes[0].set_title(r"level 1, head 0: $A_0[s, t]$")
plt.colorbar(im, ax=axes[0], shrink=0.8)
for ax, level in zip(axes[1:], (1, 2)):
    im = ax.imshow(Hs[level].numpy(), cmap="magma", vmin=0, vmax=1)
    ax.set_xlabel("item t")
    ax.set_ylabel("coordinate j")
    ax.set_title(f"$H_{level}$ (level {level}: heads, then FF)")
    plt.colorbar(im, ax=ax, shrink=0.8)
plt.tight_layout()
plt.show()

# %% [markdown]
# After the second level the columns look alike (the spread printed above falls
# level after level): each level replaces every item by
# averages of items, and the second level averages items that are already all positive
# and similar. Without the residual connections of a real Transformer (which add each
# level's input back to its output), stacked attention tends to wash the differences
# between items out.

# %% [markdown]
# ## 0.4 What is sequential in a Transformer?
#
# Seed 001 ends with the remark that "self-attention layer has sequential dependencies",
# and earlier claims "parallel processing across the different layers" during training.
# Neither is right as stated. Precisely:
#
# **Sequential.**
#
# * *The layers.* Layer $\ell+1$ reads layer $\ell$'s output, so the $L$ layers of one
#   forward pass run one after another: the depth of a forward pass is $L$ times the depth
#   of a layer (Chapter 1 counts it). Different layers work in parallel only in a
#   *pipeline*, on different micro-batches, never on the same input.
# * *Autoregressive decoding.* When a model generates text, token $t+1$ is chosen from the
#   output at position $t$ and then fed back as the next input. Generating $T$ tokens takes
#   $T$ forward passes one after another, each needing the previous one's output. (A cache
#   of the earlier keys and values saves recomputation; it does not remove the chain.)
#
# **Not sequential.**
#
# * *Positions within a layer.* Every position's query, key and value, every score, every
#   softmax and every context vector of a layer depends only on the layer's *input*, not
#   on other positions' outputs: all $T$ positions are computed at once. So are all heads,
#   which do not read each other at all.
# * *Training, even of a decoder.* With teacher forcing the inputs at all positions are
#   known (they are the training text), and a **causal mask** (score $-\infty$ where the
#   key comes after the query) makes position $t$ ignore the later positions. One pass of
#   the layer then computes exactly what a token-by-token loop would: the loop is not
#   needed.
#
# A layer has *depth* (a chain of sums within it, $O(\log J + \log K + \log T)$ with
# parallel sums), but no dependency from one position to the next. The demo checks the
# last claim: one masked pass against a loop in which position $t$ reads only the memory of
# positions $0, \dots, t$ through your `dot_product_attention`.

# %%
g = torch.Generator().manual_seed(4)
T, J, K = 7, 6, 4
X = torch.randn(T, J, generator=g, dtype=torch.float64)
WQ, WK, WV = (torch.randn(d, J, generator=g, dtype=torch.float64) / J**0.5 for d in (K, K, J))
Query, Key, Value = X @ WQ.T, X @ WK.T, X @ WV.T

# One pass: every position at once, later keys masked out.
later = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)  # later[t, t'] = t' > t
scores = (Query @ Key.T / math.sqrt(K)).masked_fill(later, float("-inf"))
causal_weights = torch.softmax(scores, dim=1)
one_pass = causal_weights @ Value

# Token by token: position t reads the memory of positions 0..t only.
loop = torch.stack([dot_product_attention(Query[t], Key[:t + 1], Value[:t + 1]) for t in range(T)])

diff = (one_pass - loop).abs().max().item()
print(f"max |one masked pass - token-by-token loop| = {diff:.1e}")
assert diff < 1e-12

fig, ax = plt.subplots(figsize=(5, 4))
im = ax.imshow(causal_weights.numpy(), cmap="viridis")
ax.set_xlabel("key position t'")
ax.set_ylabel("query position t")
ax.set_title("causal attention weights (zero above the diagonal)")
plt.colorbar(im, ax=ax, shrink=0.8)
plt.tight_layout()
plt.show()

# %% [markdown]
# The two computations agree to rounding: with the inputs known, masking turns $T$
# dependent-looking steps into one parallel pass. The loop is forced on us only when the
# input at $t+1$ is not known until the output at $t$ has been computed, that is, when
# generating.
