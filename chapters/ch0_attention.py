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
# * `column_attention(MT, WQ, WK, WV)`: a multi-head self-attention layer with the items as
#   the *columns* of $M^\top$, and see that it is the transpose of the row form used in the
#   rest of the book.
#
# The material restates seed 001 (a blog post on parallel computation in the Transformer,
# with a four-token example), seed 003 (HKU COMP3361, Week 4, the memory picture of
# attention) and seed 004 (OSU CSE 5523, Lecture Notes 17, the column form) in this book's
# notation.

# %% [markdown]
# ## Notation
#
# <!-- letters: G:stackedheads H:heads I:valuesize J:width K:keysize L:layers M:vectors N:slots T:length V:output
# W:weights \alpha:attention \beta:bias \sigma:sigmoid \ell:layer e:euler h:heads i:valuesize j:width k:keysize n:slot
# q:query s:score t:length -->
#
# The book's letters (the [notation page](../front/notation.md) has the whole table), and
# the same things in the three seeds of this chapter:
#
# | book | meaning | seed 001 | seed 003 | seed 004 |
# |---|---|---|---|---|
# | $q[k]$, $k < K$ | one query | a row of "Query" | query $q$ | a column of $\mathbf{Q}_{\ell,h}\mathbf{H}_{\ell-1}$ |
# | $\text{keys}[n, k]$, $n < N$ | the memory's keys | the "Key Matrix" (printed transposed) | $k_1, \dots, k_4$ | columns of $\mathbf{K}_{\ell,h}\mathbf{H}_{\ell-1}$ |
# | $\text{values}[n, i]$, $i < I$ | the memory's values | the "Value Matrix" (printed transposed) | $v_1, \dots, v_4$ | columns of $\mathbf{V}_{\ell,h}\mathbf{H}_{\ell-1}$ |
# | $s[n]$, $\alpha[n]$ | scores and attention weights | "attention scores", "attention weights" | $q \cdot k_n$; $[0.6, 0.1, 0.2, 0.1]$ <!-- given --> | the "attention matrix" and its SoftMax |
# | $V[i]$ | what attention returns: the context vector | "the weighted sum of the value matrix" | context vector $\mathbf{c}$ | a column of $\mathbf{H}_{\ell,h}$ |
# | $t < T$ | items (positions, tokens) | 4 tokens | | "$K$ items" (see Errata) |
# | $n < N$ | memory slots (key-value pairs) | | 4 memory slots | |
# | $j < J$ | the width of an item | embedding dimension 3 | | $D$ |
# | $M[t, j]$ (rows), $M^\top[j, t]$ (columns) | the items of a layer | the input embeddings | | $\mathbf{H}_{\ell-1} \in \mathbb{R}^{D\times K}$ |
# | $\ell < L$ | layer | | | $\ell$ (level) |
# | $h < H$ | head | (one head) | | $h$ |
# | $W^Q[h,k,j]$, $W^K[h,k,j]$ | query and key weights | none: the embeddings are used as they are | | $\mathbf{Q}_{\ell,h}$, $\mathbf{K}_{\ell,h} \in \mathbb{R}^{D\times D}$ |
# | $W^V[h,i,j]$ | value weights | none | | $\mathbf{V}_{\ell,h} \in \mathbb{R}^{D\times D}$ |
# | heads stacked, head 0 first | concatenation | | | $\sum_h \delta_h \otimes \mathbf{H}_{\ell,h}$ |
#
# **Errata and translations.**
#
# * *Seed 004, "$\mathbf{H}_\ell \in \mathbb{R}^{D\times K}$ of $K$ items".* The same
#   letter $K$ also names the key matrix $\mathbf{K}_{\ell,h}$ (and, in this book, the
#   query/key size). We write $T$ for the number of items and $M^\top \in \mathbb{R}^{J\times T}$
#   for the matrix with one $J$-dimensional column per item. (The notes also call
#   $\mathbf{H}_\ell$ "a <!-- seed -->$D$<!-- /seed -->-dimensional vector"; it is a matrix of $K$ such vectors.)
# * *Seed 004's SoftMax "on $\mathbf{M} \in \mathbb{R}^{J\times N}$ with $N$ instances of $J$
#   values".* In this book $J$ is the width of an item and $M$ the row-form sequence, so we
#   restate it: SoftMax acts on a score matrix with keys down and queries across and
#   normalises **each column**; that is what
#   $\exp(\mathbf{M}) / \mathbf{1}^\top\exp(\mathbf{M})$ means.
# * *Seed 004's <!-- seed -->$\mathbf{Q}, \mathbf{K}, \mathbf{V} \in \mathbb{R}^{D\times D}$<!-- /seed -->* are square;
#   here $W^Q[h], W^K[h] \in \mathbb{R}^{K\times J}$ and $W^V[h] \in \mathbb{R}^{I\times J}$,
#   usually with $I = J/H$ so that the $H$ stacked heads have $J$ rows again.
# * *Scaling.* Seed 003 writes plain dot products $q\cdot k_n$ and seed 004 has no factor
#   either; seed 001 says to "scale" the scores without saying by what. This book divides
#   by $\sqrt{K}$, the square root of the query/key size, as the original Transformer does.
# * *Seed 001's matrices.* It announces Query, Key and Value as "(sequence length) $\times$
#   (embedding dimension)" but prints $3\times 4$ matrices: they are the embeddings
#   *transposed*, and they are the embeddings themselves, with no learned projection.
#   Section 0.2 computes what that does.
# * *Seed 001, "in training with multiple layers of the transformer, there is parallel
#   processing across the different layers".* False for one input: layer $\ell+1$ reads
#   layer $\ell$'s output, so it cannot start before layer $\ell$ has finished (Section 0.4).
# * *Seed 001, "self-attention layer has sequential dependencies".* False: no position of a
#   layer waits for another position's output, even in a decoder trained with a causal
#   mask; Section 0.4 computes a masked layer in one pass and checks it against the
#   position-by-position loop. What is sequential is generation, one token per forward pass.
# * *Seed 004's "each item may attend to one other item per head"* describes hard
#   attention; the softmax gives a weighted average over all items, close to one item only
#   when the scores are far apart (Section 0.2 has such a case).

# %%
import math

import matplotlib.pyplot as plt
import torch

from attnlab.testing import Explained, expect_close, expect_like, expect_shape

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print("active device:", device)


# %% [markdown]
# ## 0.1 A memory of key-value pairs
#
# Seed 003 pictures attention as reading a memory. The memory holds $N$ pairs
# $(\text{keys}[n], \text{values}[n])$; a query $q \in \mathbb{R}^K$ is compared with every
# key, the comparison scores become weights that sum to one, and the answer is the
# weighted average of the values, the **context vector** $V$:
#
# $$
# \begin{aligned}
# s[n] &= \frac{1}{\sqrt{K}} \sum_k q[k]\, \text{keys}[n, k] \\
# \alpha[n] &= \operatorname*{softmax}_n\; s[n] = \frac{e^{s[n]}}{\sum_{n'} e^{s[n']}} \\
# V[i] &= \sum_n \alpha[n]\, \text{values}[n, i]
# \end{aligned}
# $$
#
# Keys and queries live in the same space ($K$ coordinates); values may have any number
# $I$ of coordinates. In seed 003's picture the weights are $[0.6, 0.1, 0.2, 0.1]$ and <!-- seed -->$\mathbf{c} = 0.6\,v_1 + 0.1\,v_2 + 0.2\,v_3 + 0.1\,v_4$<!-- /seed --> <!-- given -->.
#
# Why divide by $\sqrt{K}$? If the coordinates of $q$ and of a key are independent with
# mean 0 and variance 1, their dot product has variance $K$; dividing by $\sqrt{K}$ keeps
# the scores of order 1 whatever the size, so the softmax neither saturates nor
# flattens as $K$ grows <!-- not a claim: derived in the sentence from the dot product's variance -->.
#
# **Problem 0.1 (seed 003).** Implement `dot_product_attention`. Work on the inputs'
# device and dtype.

# %% nbgrader={"grade": false, "grade_id": "dot_product_attention", "locked": false, "schema_version": 3, "solution": true}
def dot_product_attention(q: torch.Tensor, keys: torch.Tensor,
                          values: torch.Tensor) -> torch.Tensor:
    """One query reading a memory: q[K], keys[N, K], values[N, I] -> V[I].

    Weights softmax_n(q . keys[n] / sqrt(K)), V = sum_n weights[n] values[n].
    """
    ### BEGIN SOLUTION
    K = q.shape[-1]
    s = torch.einsum("k,nk->n", q, keys) / math.sqrt(K)
    alpha = torch.softmax(s, dim=0)
    return torch.einsum("n,ni->i", alpha, values)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_dot_product_attention", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Visible tests: each failure says what is wrong.
g = torch.Generator().manual_seed(0)
N, K, I = 5, 4, 3
q = torch.randn(K, generator=g, dtype=torch.float64)
keys = torch.randn(N, K, generator=g, dtype=torch.float64)
values = torch.randn(N, I, generator=g, dtype=torch.float64)
V = dot_product_attention(q, keys, values)
expect_shape(V, (I,), "dot_product_attention(q[4], keys[5,4], values[5,3])",
             hint="The context vector has one coordinate per "
                  "value coordinate (I), not per key coordinate.")
expect_like(V, q, "dot_product_attention on float64 inputs")
expect_like(dot_product_attention(q.float(), keys.float(), values.float()), q.float(),
            "dot_product_attention on float32 inputs")

# By hand: q = [2, 0, 0, 0] (K = 4), keys e_0 and e_1, values [10, 1] and [20, 1].
# Scores [2/sqrt(4), 0] = [1, 0], weights [e/(e+1), 1/(e+1)] = [0.731, 0.269], V = [12.69, 1].
q1 = torch.tensor([2.0, 0.0, 0.0, 0.0], dtype=torch.float64)
k1 = torch.eye(4, dtype=torch.float64)[:2]
v1 = torch.tensor([[10.0, 1.0], [20.0, 1.0]], dtype=torch.float64)
got = dot_product_attention(q1, k1, v1)
expect_shape(got, (2,), "dot_product_attention on the hand-checked example")
mistakes = {  # what some common mistakes give on this example (worked out by hand)
    "the scores are not divided by sqrt(K) = 2": [10 + 10 / (math.e ** 2 + 1), 1.0],
    "the scores are divided by sqrt(I), the values' size, instead of sqrt(K), the query/key size":
        [10 + 10 / (math.e ** 2 ** 0.5 + 1), 1.0],
    "the exponentials are not divided by their sum (the weights must sum to one)":
        [10 * math.e + 20, math.e + 1],
    "this is hard attention: the value of the best key, not the weighted average of all values":
        [10.0, 1.0],
}
for mistake, wrong in mistakes.items():
    if torch.allclose(got, torch.tensor(wrong, dtype=torch.float64), atol=1e-4):
        raise Explained(f"On the hand-checked example you return {got.tolist()}: {mistake}.")
w = math.e / (math.e + 1)
expect_close(got, torch.tensor([10 * w + 20 * (1 - w), 1.0], dtype=torch.float64),
             "the hand-checked example (expected [12.69, 1])",
             hint="Scores q . keys[n] / sqrt(K), softmax over "
                  "n, then the weighted average of the values.")

# When every key is the same, every weight is 1/N: the context is the mean of the values.
same = keys[:1].expand(N, K)
expect_close(dot_product_attention(q, same, values), values.mean(dim=0),
             "the context with identical keys",
             hint="With equal scores the weights must be 1/N each: "
                  "normalise the exponentials so they sum to one.")

# The memory is a set: listing its pairs in another order changes nothing.
perm = torch.tensor([2, 4, 0, 1, 3])
expect_close(dot_product_attention(q, keys[perm], values[perm]), V,
             "the context with the memory reordered",
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
# values: in the book's letters its Query, Key and Value matrices are all $M^\top$, where
# $M[t, j]$ holds one token per row ($T = 4$, $J = 3$). It then says to take the dot
# products, scale them, apply the softmax and average the values, but shows no numbers.
# Here they are, with $K = J = 3$: each token $t$ is a query, and the memory is all four
# tokens.

# %%
M = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0], [10.0, 11.0, 12.0]],
                 dtype=torch.float64)
K = M.shape[1]

dots = torch.einsum("tj,Tj->tT", M, M)                # dots[t, t'] = M[t] . M[t'] (no projections)
scores = dots / math.sqrt(K)                          # scaled by 1/sqrt(3)
weights = torch.softmax(scores, dim=1)                # row t: query t's weights over the four keys
contexts = torch.einsum("tT,Tj->tj", weights, M)      # row t: the context vector of token t

torch.set_printoptions(precision=4, sci_mode=False)
print("dot products M M^T:\n", dots)
print("scaled scores:\n", scores)
torch.set_printoptions(precision=3, sci_mode=True)
print("attention weights (each row sums to 1):\n", weights)
torch.set_printoptions(precision=6, sci_mode=False)
print("context vectors:\n", contexts)
gap = (contexts - M[3]).abs()  # gap[t, j]: how far token t's context is from token 4's embedding
print("largest difference from token 4's embedding, per token:",
      [f"{d:.1e}" for d in gap.amax(dim=1).tolist()])
torch.set_printoptions(profile="default")

# Checks on the numbers the text below quotes.
assert dots[3, 3] == 365 and dots[0, 3] == 68 and dots[0, 2] == 50, \
    "the dot products differ from the ones the text quotes"
assert round(scores[3, 3].item(), 1) == 210.7 and round(18 / math.sqrt(3), 1) == 10.4, \
    "the scores are not the dot products over sqrt(3) that the text quotes"  # claim: ch0-scores
assert torch.allclose(weights.sum(dim=1), torch.ones(4, dtype=torch.float64)), \
    "a row of weights does not sum to 1"
assert (weights[:, 3] > 0.9999).all(), \
    "every token puts more than 99.99% of its weight on token 4"  # claim: ch0-one-hot
assert f"{weights[0, 2].item():.1e}" == "3.1e-05" == f"{math.exp(-18 / math.sqrt(3)):.1e}", (
    "token 1's weight on token 3 is not e^{-(68-50)/sqrt 3} = 3.1e-5, as the text says"
)  # claim: ch0-token1-on-3
assert 1e-26 < weights[3, 2] < 1e-24, \
    "token 4's weight on token 3 is about 1e-25"  # claim: ch0-token4-on-3
assert (f"{gap[0].min():.1e}" == f"{gap[0].max():.1e}" == "9.2e-05" and 1e-11 < gap[1].max() < 2e-11
        and gap[2:].max() < 1e-14), (
    "token 1's gap is 9.2e-5, token 2's 1.6e-11, tokens 3 and 4 below 1e-14"
)  # claim: ch0-gaps
assert [round(n) for n in M.norm(dim=1).tolist()] == [4, 9, 14, 19], \
    "the embeddings' norms are 4 to 19"  # claim: ch0-norms


# %% mystnb={"figure": {"caption": "Seed 001's four tokens as queries (rows) against the same tokens as keys (columns): the scaled scores, then the weights. Read down the last column: every query puts almost all of its weight on token 4."}}
def show_matrix(ax, A: torch.Tensor, title: str, fmt: str) -> None:
    """A heatmap of A[query, key] with each entry written in its cell."""
    image = ax.imshow(A.numpy(), cmap="viridis")
    for r in range(A.shape[0]):
        for c in range(A.shape[1]):
            value = A[r, c].item()
            light = value < A.min().item() + 0.6 * (A.max() - A.min()).item()
            ax.text(c, r, format(value, fmt), ha="center", va="center", fontsize=10,
                    color="white" if light else "black")
    ax.set_xticks(range(A.shape[1]), [f"token {c + 1}" for c in range(A.shape[1])], fontsize=10)
    ax.set_yticks(range(A.shape[0]), [f"token {r + 1}" for r in range(A.shape[0])], fontsize=10)
    ax.set_xlabel("key (memory slot)")
    ax.set_ylabel("query")
    ax.set_title(title)
    plt.colorbar(image, ax=ax, shrink=0.8)


fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
show_matrix(axes[0], scores, r"scores $M M^\top / \sqrt{3}$", ".1f")
show_matrix(axes[1], weights, "attention weights (softmax of each row)", ".1e")
fig.suptitle("Seed 001's four tokens as their own queries, keys and values")
plt.tight_layout()
plt.show()

# %% [markdown]
# **What is odd about this example.** The weights are almost one-hot, and on the *same*
# key for every query: each token, token 1 included, puts more than 99.99% of its weight
# on token 4 <!-- claim: ch0-one-hot -->, so all four context vectors equal token 4's
# embedding $[10, 11, 12]$ to four significant digits (the run above prints the gaps: token
# 1's context differs from it by $9.2\times 10^{-5}$ in each coordinate, token 2's by
# $1.6\times 10^{-11}$, and tokens 3 and 4's by less than $10^{-14}$ <!-- claim: ch0-gaps -->).
# Two things cause it.
#
# 1. *No learned projections.* The queries and keys are the embeddings themselves. All
#    coordinates are positive and grow with the token's index, so for any query
#    $q = M[t]$ the dot product $q \cdot M[t']$ grows with $t'$: token 4 wins every
#    comparison, even against the query's own token. <!-- claim: ch0-one-hot --> A real layer multiplies by learned
#    $W^Q$ and $W^K$ first, and those decide which tokens a query should match.
# 2. *Large scores.* Softmax depends only on the *differences* between scores, and here
#    they are huge: token 4 against itself scores $365/\sqrt{3} = 210.7$; token 1's
#    scores are $[14, 32, 50, 68]/\sqrt{3}$, so its weight on token 3 is
#    $e^{-(68-50)/\sqrt{3}} = e^{-10.4} = 3.1\times 10^{-5}$ <!-- claim: ch0-scores --> <!-- claim: ch0-token1-on-3 -->, and the gaps only widen for the later tokens (token
#    4's weight on token 3 is $e^{-99/\sqrt3} \approx 10^{-25}$ <!-- claim: ch0-token4-on-3 -->).
#    Dividing by $\sqrt{3}$ cannot help when the embeddings have norm 4 to 19 instead of
#    about $\sqrt{3}$ <!-- claim: ch0-norms -->.
#
# Scale is the knob: the same four directions, normalised to unit length (roughly what
# a layer normalisation does), give scores that differ by less than $0.03$ and weights
# that are nearly uniform, within $0.01$ of $1/4$ <!-- claim: ch0-unit -->.

# %% mystnb={"figure": {"caption": "The same four directions at unit length: every weight is close to $1/4$. Compare with the one-hot weights above: the scale of the embeddings, not their directions, made them."}}
unit = M / M.norm(dim=1, keepdim=True)
weights_unit = torch.softmax(torch.einsum("tj,Tj->tT", unit, unit) / math.sqrt(K), dim=1)
fig, ax = plt.subplots(figsize=(5.5, 4.2))
show_matrix(ax, weights_unit, "weights with unit-length embeddings", ".3f")
plt.tight_layout()
plt.show()
scores_unit = torch.einsum("tj,Tj->tT", unit, unit) / math.sqrt(K)
assert ((scores_unit.amax(dim=1) - scores_unit.amin(dim=1)).max() < 0.03
        and (weights_unit - 0.25).abs().max() < 0.01), (
    "unit-length embeddings should give scores within 0.03 and weights within 0.01 of uniform"
)  # claim: ch0-unit

# %% [markdown]
# Your `dot_product_attention` computes one row of this table at a time: query $M[t]$
# against the memory of all four tokens. Run the next cell once your function passes its
# tests.

# %% tags=["answer-output"]
for t in range(4):
    mine = dot_product_attention(M[t], M, M)
    assert torch.allclose(mine, contexts[t]), f"token {t + 1}: {mine} != {contexts[t]}"
print("dot_product_attention reproduces the four context vectors")


# %% [markdown]
# ## 0.3 A whole layer in the column convention
#
# In a self-attention layer *every* item is a query, and the memory is all the items
# themselves, seen through learned projections. Seed 004 writes the items as the columns
# of a matrix, $M^\top \in \mathbb{R}^{J\times T}$ (item $t$ is the column $M^\top[:, t]$).
# For each head $h$, with $W^Q[h], W^K[h] \in \mathbb{R}^{K\times J}$ and
# $W^V[h] \in \mathbb{R}^{I\times J}$, the projections are again columns, one per item:
#
# $$
# \begin{aligned}
# \text{Query}_h^\top &= W^Q[h]\, M^\top \in \mathbb{R}^{K\times T}, \\
# \text{Key}_h^\top &= W^K[h]\, M^\top \in \mathbb{R}^{K\times T}, \\
# \text{Value}_h^\top &= W^V[h]\, M^\top \in \mathbb{R}^{I\times T}.
# \end{aligned}
# $$
#
# Seed 004's "attention matrix" $(\mathbf{K}\mathbf{H})^\top \mathbf{Q}\mathbf{H}$ is
# $\text{Key}_h\, \text{Query}_h^\top \in \mathbb{R}^{T\times T}$: entry $[t', t]$ is key $t'$
# against query $t$, keys down and queries across. Its SoftMax normalises each **column**
# (scaled by $1/\sqrt{K}$ in this book), so column $t$ holds query $t$'s weights over the
# keys, and
#
# $$
# \text{head } h\text{'s output} = \text{Value}_h^\top\, \operatorname{SoftMax}\!\Big(\tfrac{1}{\sqrt K}\,\text{Key}_h\,\text{Query}_h^\top\Big) \in \mathbb{R}^{I\times T}
# $$
#
# has, in column $t$, the weighted average of the value columns: query $t$'s context
# vector. Stacking the heads' blocks (head 0 on top) is seed 004's <!-- seed -->$\sum_h \delta_h \otimes \mathbf{H}_{\ell,h}$<!-- /seed -->, with <!-- seed -->$\delta_h$<!-- /seed --> the $h$-th unit vector of
# $\mathbb{R}^H$: the result has $H I$ rows and $T$ columns. Seed 004 also notes that the
# three products can be done as one, $\left[W^Q[h]; W^K[h]; W^V[h]\right] M^\top$, stacking
# the weights (and the heads) by rows.
#
# **Problem 0.2 (seed 004).** Implement `column_attention(MT, WQ, WK, WV)`. The items come
# as the columns of `MT` $= M^\top[j, t]$; the weights come as tensors $W^Q[h,k,j]$,
# $W^K[h,k,j]$, $W^V[h,i,j]$; the result has $H\cdot I$ rows (head 0's $I$ rows first) and
# $T$ columns.

# %% nbgrader={"grade": false, "grade_id": "column_attention", "locked": false, "schema_version": 3, "solution": true}
def column_attention(MT: torch.Tensor, WQ: torch.Tensor, WK: torch.Tensor,
                     WV: torch.Tensor) -> torch.Tensor:
    """Multi-head self-attention with items as columns.

    MT[J, T], WQ[H, K, J], WK[H, K, J], WV[H, I, J] -> [H*I, T], head 0's rows first;
    each head's SoftMax(Key Query^T / sqrt(K)) is normalised over each column (the keys).
    """
    ### BEGIN SOLUTION
    K = WQ.shape[1]
    QueryT = torch.einsum("hkj,jt->hkt", WQ, MT)
    KeyT = torch.einsum("hkj,jt->hkt", WK, MT)
    ValueT = torch.einsum("hij,jt->hit", WV, MT)
    # columns sum to 1
    A = torch.softmax(torch.einsum("hkT,hkt->hTt", KeyT, QueryT) / math.sqrt(K), dim=1)
    out = torch.einsum("hiT,hTt->hit", ValueT, A)
    return out.reshape(-1, MT.shape[1])
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_column_attention", "locked": true, "points": 3, "schema_version": 3, "solution": false}
g = torch.Generator().manual_seed(1)
J, T, H, K, I = 8, 5, 2, 3, 4
MT = torch.randn(J, T, generator=g, dtype=torch.float64)
WQ = torch.randn(H, K, J, generator=g, dtype=torch.float64) / J**0.5
WK = torch.randn(H, K, J, generator=g, dtype=torch.float64) / J**0.5
WV = torch.randn(H, I, J, generator=g, dtype=torch.float64) / J**0.5
out = column_attention(MT, WQ, WK, WV)
expect_shape(out, (H * I, T), "column_attention(MT[8,5], WQ[2,3,8], WK[2,3,8], WV[2,4,8])",
             hint="Items stay columns: the result is [H*I, T]. (A result "
                  "of shape [T, H*I] is the row form: transpose back.)")
expect_like(out, MT, "column_attention on float64 inputs")
expect_like(column_attention(MT.float(), WQ.float(), WK.float(), WV.float()), MT.float(),
            "column_attention on float32 inputs")

# By hand (J = 1, two items 1 and 0, WQ = WK = 1 with K = 4, WV = 1): query 0 scores the keys
# [4/sqrt(4), 0] = [2, 0]; query 1 scores [0, 0]. So out = [[e^2/(e^2+1), 1/2]] = [[0.881, 0.5]].
ones = torch.ones(1, 4, 1, dtype=torch.float64)
MT1 = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
got = column_attention(MT1, ones, ones, torch.ones(1, 1, 1, dtype=torch.float64))
expect_shape(got, (1, 2), "column_attention on the hand-checked example")
e2, e4 = math.exp(2), math.exp(4)
mistakes = {  # what some common mistakes give on this example (worked out by hand)
    "the SoftMax normalises the rows (a sum over the queries); it must normalise each column, "
    "a sum over the keys": [e2 / (e2 + 1), 1 / (e2 + 1)],
    "the scores are not divided by sqrt(K) = 2 (seed 004 has no factor; this book does)":
        [e4 / (e4 + 1), 0.5],
}
for mistake, wrong in mistakes.items():
    if torch.allclose(got, torch.tensor([wrong], dtype=torch.float64), atol=1e-4):
        raise Explained(f"On the hand-checked example you return {got.tolist()}: {mistake}.")
expect_close(got, torch.tensor([[e2 / (e2 + 1), 0.5]], dtype=torch.float64),
             "column_attention on the hand-checked example (expected [[0.881, 0.5]])",
             hint="Column t of the output is query t's context vector: the "
                  "values' columns averaged with query t's weights over the keys.")

# Heads are stacked in order, head 0's rows first.
for h in range(H):
    expect_close(out[h * I:(h + 1) * I],
                 column_attention(MT, WQ[h:h + 1], WK[h:h + 1], WV[h:h + 1]),
                 f"rows {h * I}..{(h + 1) * I - 1} of the output",
                 hint=f"These rows must be head {h} alone: the heads are "
                      "stacked block by block. Reshape [H, I, T] to [H*I, T] "
                      "as it is; permuting first interleaves the heads' rows.")

# Equal scores (WQ = 0): every query's weights are 1/T, so every column is each head's mean value.
mean_value = torch.einsum("hij,j->hi", WV, MT.mean(dim=1)).reshape(H * I, 1).expand(H * I, T)
expect_close(column_attention(MT, torch.zeros_like(WQ), WK, WV), mean_value,
             "column_attention with WQ = 0",
             hint="With all scores equal each weight is 1/T: normalise the "
                  "exponentials so each column sums to one, and average "
                  "the values W^V[h] M^T, not the keys or the items.")

# The items are a set: permuting the columns of MT permutes the output's columns.
perm = torch.tensor([3, 0, 4, 1, 2])
expect_close(column_attention(MT[:, perm], WQ, WK, WV), out[:, perm],
             "column_attention(MT[:, perm])",
             hint="Permuting the items must permute the output columns the same way.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch0.column_attention", column_attention)
### END HIDDEN TESTS

# %% [markdown]
# ### Why the column form is the row form transposed
#
# The rest of the book keeps items as rows: $M \in \mathbb{R}^{T\times J}$, with
# $\text{Query}_h = M\, W^Q[h]^\top$, $\text{Key}_h = M\, W^K[h]^\top$,
# $\text{Value}_h = M\, W^V[h]^\top$, scores
# $s_h = \frac{1}{\sqrt K}\text{Query}_h \text{Key}_h^\top$ (row $t$: query $t$ against every key)
# and weights $\alpha_h = \operatorname{softmax}$ of each row of $s_h$. Transposing,
#
# $$
# \frac{1}{\sqrt K}\text{Key}_h\, \text{Query}_h^\top = \Big(\frac{1}{\sqrt K}\text{Query}_h\, \text{Key}_h^\top\Big)^\top = s_h^\top ,
# $$
#
# and normalising the columns of a matrix is normalising the rows of its transpose, so
# seed 004's SoftMax matrix is $\alpha_h^\top$. Head $h$'s column-form output is therefore
#
# $$
# \text{Value}_h^\top\, \alpha_h^\top = \big(\alpha_h\, \text{Value}_h\big)^\top ,
# $$
#
# the transpose of the row form's output $\alpha_h \text{Value}_h \in \mathbb{R}^{T\times I}$.
# Concatenating heads side by side in the row form is the transpose of stacking them
# vertically. So the column form applied to $M^\top$ is the row form applied to $M$,
# transposed: $\mathtt{column\_attention}(M^\top) = \big(\text{row form}(M)\big)^\top$.
# Chapter 1 implements the row form.

# %%
# A small example layer for the next cells: T = 6 positions, H = 3 heads.
g = torch.Generator().manual_seed(2)
T, H, K, I = 6, 3, 4, 2
J = H * I
M = torch.randn(T, J, generator=g, dtype=torch.float64)
WQ, WK = (torch.randn(H, K, J, generator=g, dtype=torch.float64) for _ in range(2))
WV = torch.randn(H, I, J, generator=g, dtype=torch.float64)

# %% [markdown] tags=["solutions-only"]
# The same layer can also be assembled from Problem 0.1 alone, one query and one head at a
# time: below, the two functions agree.

# %% tags=["solutions-only"]
def row_form_from_memory(M: torch.Tensor, WQ: torch.Tensor, WK: torch.Tensor,
                         WV: torch.Tensor) -> torch.Tensor:
    """M[T, J] -> [T, H*I]: for every position t and head h, one query reads the memory of all
    positions."""
    rows = []
    for t in range(M.shape[0]):
        heads = [dot_product_attention(WQ[h] @ M[t], M @ WK[h].T,
                                       M @ WV[h].T) for h in range(WQ.shape[0])]
        rows.append(torch.cat(heads))
    return torch.stack(rows)


diff = (column_attention(M.T, WQ, WK, WV).T
        - row_form_from_memory(M, WQ, WK, WV)).abs().max().item()
print(f"max |column_attention(M^T)^T - row form from dot_product_attention| = {diff:.1e}")
assert diff < 1e-12, \
    f"column_attention and the row form from dot_product_attention differ by {diff:.1e}"

# %% [markdown]
# Seed 004's stacked product: one multiply by $[W^Q; W^K; W^V]$ gives the projections of
# all heads at once.

# %%
W_stacked = torch.cat([WQ.reshape(-1, J), WK.reshape(-1, J), WV.reshape(-1, J)])  # [H(2K+I), J]
stacked = W_stacked @ M.T
QueryT, KeyT, ValueT = stacked.split([H * K, H * K, H * I])
assert torch.allclose(QueryT.reshape(H, K, T), torch.einsum("hkj,jt->hkt", WQ, M.T)), \
    "the stacked product's first H*K rows are not the queries of all heads"
assert torch.allclose(ValueT.reshape(H, I, T), torch.einsum("hij,jt->hit", WV, M.T)), \
    "the stacked product's last H*I rows are not the values of all heads"
print(f"one stacked multiply: [{W_stacked.shape[0]} x {J}] "
      f"@ [{J} x {T}] -> the projections of all {H} heads")


# %% [markdown]
# ### Heads, then a feed-forward layer
#
# Seed 004 ends the layer with a feed-forward layer on the stacked heads, e.g. a sigmoid
# layer $M^\top_{\ell+1} = \sigma\big(W^F G + \beta\big)$ on the stacked heads' output $G$,
# applied to each column (item) separately. Below, two such levels on eight random items:
# the items after each level, as your `column_attention` computes them. Run it once your
# function passes its tests.

# %% tags=["answer-output"] mystnb={"figure": {"caption": "Eight random items (columns) through two levels of heads and a feed-forward layer, as your `column_attention` computes them. Compare the columns: distinct in the input, alike after level 2."}}
def feed_forward(G: torch.Tensor, WF: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """Seed 004's FF: the stacked heads G[J, T] -> sigmoid(WF G + beta) [J', T], the same map for
    every column."""
    return torch.sigmoid(WF @ G + beta[:, None])


g = torch.Generator().manual_seed(3)
T, H, K, I = 8, 2, 4, 3
J = H * I
MT0 = torch.randn(J, T, generator=g)
levels = [(torch.randn(H, K, J, generator=g), torch.randn(H, K, J, generator=g),
           torch.randn(H, I, J, generator=g), torch.randn(J, J, generator=g),
           torch.zeros(J)) for _ in range(2)]

MTs = [MT0]
for WQ, WK, WV, WF, beta in levels:
    MTs.append(feed_forward(column_attention(MTs[-1], WQ, WK, WV), WF, beta))
spreads = [MTl.std(dim=1).mean().item() for MTl in MTs]
for level, (MTl, spread) in enumerate(zip(MTs, spreads)):
    print(f"level {level}: shape {tuple(MTl.shape)}, spread "
          f"across items (mean std over t) {spread:.3f}")
assert MTs[2].shape == MT0.shape and ((MTs[2] > 0) & (MTs[2] < 1)).all(), \
    f"after two levels the items should keep their shape {tuple(MT0.shape)} with every entry " \
    "in (0, 1) (a sigmoid): check the shape your column_attention returns"

fig, axes = plt.subplots(1, 3, figsize=(10.5, 3.4))
for ax, level in zip(axes, (0, 1, 2)):
    im = ax.imshow(MTs[level].numpy(), cmap="magma", vmin=None if level == 0 else 0,
                   vmax=None if level == 0 else 1)
    ax.set_xlabel("item t")
    ax.set_ylabel("coordinate j")
    ax.set_title("the input" if level == 0 else f"level {level}: heads, then FF")
    plt.colorbar(im, ax=ax, shrink=0.8)
plt.tight_layout()
plt.show()

# %% [markdown]
# After the second level the columns look alike (the spread printed above falls
# level after level <!-- claim: ch0-spread-falls -->): each level replaces every item by
# averages of items, and the second level averages items that are already all positive
# and similar. Without the residual connections of a real Transformer (which add each
# level's input back to its output), stacked attention tends to wash the differences
# between items out.

# %% tags=["solutions-only"]
assert spreads[0] > spreads[1] > spreads[2], \
    f"the spread falls level after level: {spreads}"  # claim: ch0-spread-falls

# %% [markdown]
# ## 0.4 What is sequential in a Transformer?
#
# Seed 001 ends with the remark that "self-attention layer has sequential dependencies",
# and earlier claims "parallel processing across the different layers" during training.
# Neither is right as stated. Precisely:
#
# **Sequential.**
#
# * *The layers, for one input.* Layer $\ell+1$ reads layer $\ell$'s output, so it cannot
#   start before layer $\ell$ has produced it; the second level in Section 0.3 could not
#   be computed before the first. Different layers work at the same time only in a
#   *pipeline*, on different inputs (micro-batches), never on the same one. (What that
#   costs in parallel time is a question of Chapter 1.)
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
#   the layer then computes exactly what a position-by-position loop would: the loop is
#   not needed.
#
# A layer still has sums in it, chains of additions that take time (Chapter 1 counts
# them), but no dependency from one position's output to another's. The demo checks the
# last claim: one masked pass against a loop in which position $t$ reads only the memory of
# positions $0, \dots, t$ through your `dot_product_attention`.

# %% mystnb={"figure": {"caption": "Causal attention weights, query position $t$ (row) against key position $t'$ (column): everything above the diagonal is zero, so position $t$ reads only positions $0, \\dots, t$."}}
g = torch.Generator().manual_seed(4)
T, J, K = 7, 6, 4
M = torch.randn(T, J, generator=g, dtype=torch.float64)
# one head
WQ1, WK1, WV1 = (torch.randn(d, J, generator=g, dtype=torch.float64) / J**0.5 for d in (K, K, J))
Query, Key, Value = M @ WQ1.T, M @ WK1.T, M @ WV1.T

# One pass: every position at once, later keys masked out.
later = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)  # later[t, t'] = t' > t
masked = (Query @ Key.T / math.sqrt(K)).masked_fill(later, float("-inf"))
causal_weights = torch.softmax(masked, dim=1)
one_pass = causal_weights @ Value

fig, ax = plt.subplots(figsize=(5, 4))
im = ax.imshow(causal_weights.numpy(), cmap="viridis")
ax.set_xlabel("key position t'")
ax.set_ylabel("query position t")
ax.set_title("causal attention weights (zero above the diagonal)")
plt.colorbar(im, ax=ax, shrink=0.8)
plt.tight_layout()
plt.show()

# %% tags=["answer-output"]
# Position by position: position t reads the memory of positions 0..t only.
loop = torch.stack([dot_product_attention(Query[t], Key[:t + 1], Value[:t + 1]) for t in range(T)])

diff = (one_pass - loop).abs().max().item()
print(f"max |one masked pass - position-by-position loop| = {diff:.1e}")
assert diff < 1e-12, (f"one masked pass and the position-by-position loop differ by {diff:.1e}: "
                     "run the tests of your dot_product_attention above")

# %% [markdown]
# The two computations agree to rounding: with the inputs known, masking turns $T$
# dependent-looking steps into one parallel pass. The loop is forced on us only when the
# input at $t+1$ is not known until the output at $t$ has been computed, that is, when
# generating.
