# %% [markdown]
# # Chapter 3. Merging query and key
#
# In a self-attention head the query and key matrices only ever appear together, in the
# score $\text{Query}\cdot\text{Key}$. So they can be multiplied out into one $J\times J$
# matrix $\tilde W^Q$ per head, and the key matrix disappears. This chapter asks you to
# derive the merged matrix, to check numerically that it gives the same attention, to
# count parameters both ways, and to weigh what the merge costs and gains, including the
# converse question the seed leaves open: can every merged matrix be split back into a
# query and a key matrix?
#
# You will write the equation of $\tilde W^Q$ (`WQ_TILDE`), implement `merge_query_key`,
# `attention_weights`, `merged_attention_weights` and the parameter counts per head and
# per layer, give the condition `EQUAL_WHEN` under which the counts agree, and answer one
# question in words.
#
# The problem restates seed 002 (TTIC 31230 2020, Problem 6) in this book's notation.

# %% [markdown]
# ## Notation
#
# <!-- letters: A:svdleft H:heads J:width K:keysize L:layers M:vectors R:svdright T:length W:weights
# \Lambda:singularvalues \alpha:attention \ell:layer \lambda:singularvalue \rho:rank h:heads j:width
# k:keysize m:row s:score t:length -->
#
# The book's letters (the [notation page](../front/notation.md) has the whole table), and
# the same things in seed 002 P6:
#
# | book | meaning | seed 002 P6 |
# |---|---|---|
# | $M[t, j]$, $t < T$, $j < J$ | the sequence entering layer $\ell+1$ | $L_\ell[t, J]$ |
# | $t_1$, $t_2$ (or $t$, $t'$) | the query position, the key position | $t_1$, $t_2$ |
# | $h < H$ | head (numbered from 0) | $k$, with $K$ heads (from 1) |
# | $k < K$ | query/key coordinate | $i < I$ |
# | $W^Q[h,k,j]$, $W^K[h,k,j]$, shape $[H, K, J]$ | query and key weights | $W^Q_{\ell+1}[k,i,J]$, $W^K_{\ell+1}[k,i,J]$, shape $[K, I, J]$ |
# | $\text{Query}[h,t,k]$, $\text{Key}[h,t,k]$ | queries and keys | $\text{Query}_{\ell+1}[k,t,i]$, $\text{Key}_{\ell+1}[k,t,i]$ |
# | $\tilde W^Q[h, j_1, j_2]$, shape $[H, J, J]$ | the merged matrix | $\tilde W^Q[k, J_1, J_2]$, shape $[K, J, J]$ |
# | $\alpha[h, t_1, t_2]$ | attention | $\alpha_{\ell+1}[k, t_1, t_2]$ |
# | $1/\sqrt{K}$ | score scale | $1/\sqrt{I}$ |
# | $M[t_1, :]$, $M[t_2, :]$ as vectors | two positions' vectors | $h_1$, $h_2$ |
#
# The letters collide: seed 002 P6 uses $k < K$ for the **heads** and <!-- seed -->$I$<!-- /seed --> for the
# query/key dimension, so its <!-- seed -->$1/\sqrt{I}$<!-- /seed --> is this book's $1/\sqrt{K}$ (the square root of
# the query/key size).
#
# **Errata.**
#
# * In every line of the seed's derivation the last factor is indexed by $t_1$, <!-- seed -->$L_\ell(t_1, J_2)$<!-- /seed -->. It belongs to the key position, $t_2$, as in the problem statement
#   (<!-- seed -->$L_\ell[t_2, J_2]$<!-- /seed -->). With $t_1$ on both sides every score would compare position $t_1$
#   with itself, and the softmax over $t_2$ would see the same number for every $t_2$.
# * The seed's worked solution writes products with the Einstein convention (a repeated
#   index, even a capital one, is summed); the book writes every sum out.
# * Seed 002 P6b asks for the parameters "for a given layer", while the seed's solution
#   counts them per head. The book asks for both (Problems 3.5 and 3.6).

# %%
import math

import matplotlib.pyplot as plt
import torch

from attnlab.equations import evaluate, parse_answer
from attnlab.testing import (
    Explained,
    expect_answer,
    expect_close,
    expect_equations,
    expect_like,
    expect_shape,
)

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print("active device:", device)


# %% [markdown]
# ## 3.1 The merged matrix
#
# One head's queries, keys and attention, as in Chapter 1:
#
# $$
# \text{Query}[h,t,k] = \sum_j W^Q[h,k,j]\, M[t,j], \qquad
# \text{Key}[h,t,k] = \sum_j W^K[h,k,j]\, M[t,j],
# $$
# $$
# \alpha[h,t_1,t_2] = \operatorname*{softmax}_{t_2}\; \frac{1}{\sqrt{K}} \sum_k \text{Query}[h,t_1,k]\, \text{Key}[h,t_2,k].
# $$
#
# For a fixed head, $W^Q[h]$ and $W^K[h]$ are $K\times J$ matrices, and the seed asks for one
# $J\times J$ matrix $\tilde W^Q[h]$ such that the attention can be written as
# $m_1^\top \tilde W^Q[h]\, m_2$ inside the softmax, for the vectors $m_1 = M[t_1, :]$ and
# $m_2 = M[t_2, :]$:
#
# $$
# \alpha[h,t_1,t_2] = \operatorname*{softmax}_{t_2} \sum_{j_1, j_2} M[t_1,j_1]\, \tilde W^Q[h,j_1,j_2]\, M[t_2,j_2]
# \qquad\text{for every } M .
# $$
#
# **Problem 3.1 (seed 002 P6a).** Derive $\tilde W^Q$ from $W^Q$ and $W^K$ and write your
# final answer as one equation in the book's index notation, **head index first**, in
# `WQ_TILDE`, defining `WQ_tilde[h,j1,j2]` (sizes $H, J, J$) from the inputs `WQ[h,k,j]` and
# `WK[h,k,j]`. Any scale belongs inside $\tilde W^Q$ (the softmax above has none). The
# answer language is that of Chapter 2 (`sum_k ...`, `*`, `/`, `sqrt(K)`); an einsum spec
# over the operands `(WQ, WK)`, with the scale after it, is accepted too, e.g. the shape of
# such an answer is `"hkj,hkj->hj / 2"` (this one is wrong).

# %% nbgrader={"grade": false, "grade_id": "wq_tilde", "locked": false, "schema_version": 3, "solution": true}
# One equation defining WQ_tilde[h,j1,j2], or an einsum spec over (WQ, WK) with its scale.
# Your answer, in this form:
# WQ_TILDE = "..."
### BEGIN SOLUTION
WQ_TILDE = "WQ_tilde[h,j1,j2] = sum_k WQ[h,k,j1] * WK[h,k,j2] / sqrt(K)"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_wq_tilde", "locked": true, "points": 3, "schema_version": 3, "solution": false}
expect_equations(WQ_TILDE, inputs={"WQ": "H,K,J", "WK": "H,K,J"}, defines={"WQ_tilde": "H,J,J"},
                 operands=("WQ", "WK"), what="WQ_TILDE (Problem 3.1)")

# By hand (H = 1, K = 4, J = 2): every query row is e_0 = [1, 0], every key row is e_1 = [0, 1].
# Then Query . Key / sqrt(K) = (1/2) * 4 * M[t1, 0] M[t2, 1], so W~Q = [[0, 2], [0, 0]].
e0, e1 = torch.eye(2, dtype=torch.float64)
hand = {"WQ": e0.expand(1, 4, 2), "WK": e1.expand(1, 4, 2)}
got = evaluate(parse_answer(WQ_TILDE, ("WQ", "WK"), "WQ_tilde"), hand,
               sizes={"H": 1, "K": 4, "J": 2})["WQ_tilde"]
mistakes = {  # what some common mistakes give on this example (worked out by hand)
    "that is the transpose of the right matrix: check which of j1, j2 pairs "
    "with the query position t1, and which matrix that position's vector meets":
        [[[0.0, 0.0], [2.0, 0.0]]],
    "that is twice the right matrix: the score Query . "
    "Key is scaled, and W~Q must give the scaled score": [[[0.0, 4.0], [0.0, 0.0]]],
    "that is sqrt(2) times the right matrix here: check "
    "which size the score is divided by the square root of":
        [[[0.0, 4 / 2**0.5], [0.0, 0.0]]],
}
for mistake, wrong in mistakes.items():
    if got.shape == (1, 2, 2) and torch.allclose(got, torch.tensor(wrong, dtype=torch.float64),
                                                 atol=1e-4):
        raise Explained("Evaluated on the hand-checked example your "
                        f"WQ_tilde is {got.tolist()}: {mistake}.")
expect_close(got, torch.tensor([[[0.0, 2.0], [0.0, 0.0]]], dtype=torch.float64),
             "your WQ_tilde on the hand-checked example (expected [[[0, 2], [0, 0]]])",
             hint="Substitute the projections into the score and "
                  "regroup: what multiplies M[t1, j1] M[t2, j2]?")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch3.WQ_TILDE", WQ_TILDE)
### END HIDDEN TESTS

# %% [markdown]
# **Problem 3.2.** Implement your equation: `merge_query_key(WQ, WK)` returns
# $\tilde W^Q[H, J, J]$.

# %% nbgrader={"grade": false, "grade_id": "merge_query_key", "locked": false, "schema_version": 3, "solution": true}
def merge_query_key(WQ: torch.Tensor, WK: torch.Tensor) -> torch.Tensor:
    """WQ[H, K, J], WK[H, K, J] -> W~Q[H, J, J], your equation of Problem 3.1."""
    ### BEGIN SOLUTION
    K = WQ.shape[1]
    return torch.einsum("hkj,hkJ->hjJ", WQ, WK) / math.sqrt(K)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_merge_query_key", "locked": true, "points": 2, "schema_version": 3, "solution": false}
g = torch.Generator().manual_seed(0)
H, K, J = 2, 3, 5
WQ = torch.randn(H, K, J, generator=g, dtype=torch.float64)
WK = torch.randn(H, K, J, generator=g, dtype=torch.float64)
Wt = merge_query_key(WQ, WK)
expect_shape(Wt, (H, J, J), "merge_query_key(WQ[2,3,5], WK[2,3,5])",
             hint="One J x J matrix per head.")
expect_like(Wt, WQ, "merge_query_key on float64 inputs")
expect_like(merge_query_key(WQ.float(), WK.float()), WQ.float(),
            "merge_query_key on float32 inputs")

# The hand-checked example of Problem 3.1: W~Q = [[0, 2], [0, 0]].
e0, e1 = torch.eye(2, dtype=torch.float64)
got = merge_query_key(e0.expand(1, 4, 2), e1.expand(1, 4, 2))
expect_shape(got, (1, 2, 2), "merge_query_key on the hand-checked example")
mistakes = {
    "that is the transpose of W~Q (query and key sides swapped)": [[[0.0, 0.0], [2.0, 0.0]]],
    "that is twice W~Q here: the score's scale is not in it": [[[0.0, 4.0], [0.0, 0.0]]],
    "that is sqrt(2) times W~Q here: the wrong size under the square root":
        [[[0.0, 4 / 2**0.5], [0.0, 0.0]]],
}
for mistake, wrong in mistakes.items():
    if torch.allclose(got, torch.tensor(wrong, dtype=torch.float64), atol=1e-4):
        raise Explained(f"On the hand-checked example you return {got.tolist()}: {mistake}.")
expect_close(got, torch.tensor([[[0.0, 2.0], [0.0, 0.0]]], dtype=torch.float64),
             "merge_query_key on the hand-checked example (expected [[[0, 2], [0, 0]]])")

# The defining property: M[t1] W~Q[h] M[t2] is head h's score Query[h,t1] . Key[h,t2] / sqrt(K).
M = torch.randn(4, J, generator=g, dtype=torch.float64)
scores = torch.einsum("htk,hTk->htT", torch.einsum("hkj,tj->htk", WQ, M),
                      torch.einsum("hkj,tj->htk", WK, M))
expect_close(torch.einsum("tj,hjJ,TJ->htT", M, Wt, M), scores / math.sqrt(K),
             "M W~Q[h] M^T against the scores Query . Key / sqrt(K) (Chapter 1)",
             hint="Every head is merged on its own: nothing mixes two heads.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch3.merge_query_key", merge_query_key)
### END HIDDEN TESTS

# %% [markdown]
# ## 3.2 The same attention, two ways
#
# **Problem 3.3.** Implement `attention_weights(M, WQ, WK)`: the attention
# $\alpha[h, t_1, t_2]$ the usual way, through queries and keys scaled by $1/\sqrt{K}$, with
# the softmax over the key position $t_2$.
#
# **Problem 3.4.** Implement `merged_attention_weights(M, WQ_tilde)`: the same attention
# from $\tilde W^Q$ alone,
# $\alpha[h,t_1,t_2] = \operatorname{softmax}_{t_2} \sum_{j_1,j_2} M[t_1,j_1]\,\tilde W^Q[h,j_1,j_2]\,M[t_2,j_2]$
# (no further scaling: any scale is inside $\tilde W^Q$).

# %% nbgrader={"grade": false, "grade_id": "attention_weights", "locked": false, "schema_version": 3, "solution": true}
def attention_weights(M: torch.Tensor, WQ: torch.Tensor, WK: torch.Tensor) -> torch.Tensor:
    """M[T, J], WQ[H, K, J], WK[H, K, J] -> alpha[H, T, T], softmax over t2 of Query.Key /
    sqrt(K)."""
    ### BEGIN SOLUTION
    K = WQ.shape[1]
    Query = torch.einsum("hkj,tj->htk", WQ, M)
    Key = torch.einsum("hkj,tj->htk", WK, M)
    s = torch.einsum("htk,hTk->htT", Query, Key) / math.sqrt(K)
    return torch.softmax(s, dim=-1)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_attention_weights", "locked": true, "points": 2, "schema_version": 3, "solution": false}
g = torch.Generator().manual_seed(1)
T, J, H, K = 5, 6, 2, 3
M = torch.randn(T, J, generator=g, dtype=torch.float64)
WQ = torch.randn(H, K, J, generator=g, dtype=torch.float64) / J**0.5
WK = torch.randn(H, K, J, generator=g, dtype=torch.float64) / J**0.5
alpha = attention_weights(M, WQ, WK)
expect_shape(alpha, (H, T, T), "attention_weights(M[5,6], WQ[2,3,6], WK[2,3,6])",
             hint="One T x T matrix per head: alpha[h, t1, t2].")
expect_like(alpha, M, "attention_weights on float64 inputs")
expect_like(attention_weights(M.float(), WQ.float(), WK.float()), M.float(),
            "attention_weights on float32 inputs")
expect_close(alpha.sum(dim=-1), torch.ones(H, T, dtype=torch.float64), "alpha summed over t2",
             hint="The softmax runs over t2, the key position "
                  "(the last axis): every row must sum to one.")

# By hand (T = 2, J = 2, K = 4): M = [[1, 0], [0, 1]], every query row of WQ is [1, 0], every key
# row of WK is [0, 1]. Then Query[t1] . Key[t2] / sqrt(4) = 2 M[t1, 0] M[t2, 1]: only s[0, 1] = 2 is
# not 0, so alpha = [[1/(1+e^2), e^2/(1+e^2)], [1/2, 1/2]] = [[0.119, 0.881], [0.5, 0.5]].
e2, e4 = math.exp(2), math.exp(4)
M1 = torch.eye(2, dtype=torch.float64)
got = attention_weights(M1, M1[0].expand(1, 4, 2), M1[1].expand(1, 4, 2))
expect_shape(got, (1, 2, 2), "attention_weights on the hand-checked example")
mistakes = {  # what some common mistakes give on this example (worked out by hand)
    "the scores are not scaled by 1/sqrt(K) = 1/2": [[[1 / (1 + e4), e4 / (1 + e4)], [0.5, 0.5]]],
    "the softmax runs over t1, the query position; it must run over t2": [[[0.5, e2 / (1 + e2)],
                                                                          [0.5, 1 / (1 + e2)]]],
    "the key at t1 is compared with the query at t2: alpha[h, "
    "t1, t2] compares the query at t1 with the key at t2": [[[0.5, 0.5],
                                                             [e2 / (1 + e2), 1 / (1 + e2)]]],
}
for mistake, wrong in mistakes.items():
    if torch.allclose(got, torch.tensor(wrong, dtype=torch.float64), atol=1e-4):
        raise Explained(f"On the hand-checked example you return {got.tolist()}: {mistake}.")
expect_close(got, torch.tensor([[[1 / (1 + e2), e2 / (1 + e2)], [0.5, 0.5]]], dtype=torch.float64),
             "attention_weights on the hand-checked example "
             "(expected [[[0.119, 0.881], [0.5, 0.5]]])")

# Positions have no order: permuting the rows of M permutes both axes of alpha.
perm = torch.tensor([3, 0, 4, 1, 2])
expect_close(attention_weights(M[perm], WQ, WK), alpha[:, perm][:, :, perm],
             "attention_weights(M[perm])",
             hint="alpha(M[perm])[h, a, b] must be alpha(M)[h, perm[a], perm[b]].")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch3.attention_weights", attention_weights)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "merged_attention_weights", "locked": false, "schema_version": 3, "solution": true}
def merged_attention_weights(M: torch.Tensor, WQ_tilde: torch.Tensor) -> torch.Tensor:
    """M[T, J], W~Q[H, J, J] -> alpha[H, T, T] = softmax over t2 of M[t1] W~Q[h] M[t2]."""
    ### BEGIN SOLUTION
    s = torch.einsum("tj,hjJ,TJ->htT", M, WQ_tilde, M)
    return torch.softmax(s, dim=-1)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_merged_attention_weights", "locked": true, "points": 2, "schema_version": 3, "solution": false}
g = torch.Generator().manual_seed(2)
T, J, H = 5, 4, 3
M = torch.randn(T, J, generator=g, dtype=torch.float64)
Wt = torch.randn(H, J, J, generator=g, dtype=torch.float64) / J
alpha = merged_attention_weights(M, Wt)
expect_shape(alpha, (H, T, T), "merged_attention_weights(M[5,4], W~Q[3,4,4])",
             hint="One T x T matrix per head: alpha[h, t1, t2].")
expect_like(alpha, M, "merged_attention_weights on float64 inputs")
expect_like(merged_attention_weights(M.float(), Wt.float()), M.float(),
            "merged_attention_weights on float32 inputs")
expect_close(alpha.sum(dim=-1), torch.ones(H, T, dtype=torch.float64), "alpha summed over t2",
             hint="The softmax runs over t2, the key position (the last axis).")

# By hand: M = [[1, 0], [0, 1]] and W~Q = [[0, 2], [0, 0]] (the merged matrix of Problem 3.1's
# example): the scores are W~Q itself, so alpha = [[1/(1+e^2), e^2/(1+e^2)], [1/2, 1/2]] = [[0.119,
# 0.881], [0.5, 0.5]].
e2 = math.exp(2)
got = merged_attention_weights(torch.eye(2, dtype=torch.float64),
                               torch.tensor([[[0.0, 2.0], [0.0, 0.0]]],
                                                                               dtype=torch.float64))
expect_shape(got, (1, 2, 2), "merged_attention_weights on the hand-checked example")
mistakes = {
    "t1 is paired with the second index of W~Q; the "
    "score is M[t1] W~Q[h] M[t2], t1 with the FIRST index":
        [[[0.5, 0.5], [e2 / (1 + e2), 1 / (1 + e2)]]],
    "the scores are scaled again; 1/sqrt(K) is already inside W~Q":
        [[[1 / (1 + math.exp(2**0.5)), 1 / (1 + math.exp(-2**0.5))], [0.5, 0.5]]],
    "the softmax runs over t1, the query position; it must run over t2": [[[0.5, e2 / (1 + e2)],
                                                                          [0.5, 1 / (1 + e2)]]],
}
for mistake, wrong in mistakes.items():
    if torch.allclose(got, torch.tensor(wrong, dtype=torch.float64), atol=1e-4):
        raise Explained(f"On the hand-checked example you return {got.tolist()}: {mistake}.")
expect_close(got, torch.tensor([[[1 / (1 + e2), e2 / (1 + e2)], [0.5, 0.5]]], dtype=torch.float64),
             "merged_attention_weights on the hand-checked "
             "example (expected [[[0.119, 0.881], [0.5, 0.5]]])")

# Positions have no order: permuting the rows of M permutes both axes of alpha.
perm = torch.tensor([3, 0, 4, 1, 2])
expect_close(merged_attention_weights(M[perm], Wt), alpha[:, perm][:, :, perm],
             "merged_attention_weights(M[perm])",
             hint="alpha(M[perm])[h, a, b] must be alpha(M)[h, perm[a], perm[b]].")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch3.merged_attention_weights", merged_attention_weights)
### END HIDDEN TESTS

# %% [markdown]
# ### The two routes agree
#
# On random weights (float64), the attention computed through queries and keys and the
# attention computed from the merged matrix should agree to rounding error, for every
# head. Run the cell once your three functions pass their tests.

# %% tags=["answer-output"]
g = torch.Generator().manual_seed(3)
T, J, H, K = 12, 16, 4, 6
M = torch.randn(T, J, generator=g, dtype=torch.float64)
WQ, WK = (torch.randn(H, K, J, generator=g, dtype=torch.float64) for _ in range(2))
separate = attention_weights(M, WQ, WK)
merged = merged_attention_weights(M, merge_query_key(WQ, WK))
diff = (separate - merged).abs().max().item()
print(f"max |alpha(WQ, WK) - alpha(W~Q)| = {diff:.1e} over {H} heads and {T} x {T} position pairs")
assert diff < 1e-10, \
    f"the two routes differ by {diff:.1e}: run the tests of your three functions above"


# %% [markdown]
# ## 3.3 Counting parameters
#
# **Problem 3.5 (seed 002 P6b, per head, as the seed's solution counts).** For one head, how
# many numbers make up the query and key matrices $W^Q[h]$ and $W^K[h]$ together, and how
# many make up $\tilde W^Q[h]$? Implement `params_separate(K, J)` and `params_merged(J)`;
# both return Python `int`s.

# %% nbgrader={"grade": false, "grade_id": "params", "locked": false, "schema_version": 3, "solution": true}
def params_separate(K: int, J: int) -> int:
    """Query and key parameters of one head (W^Q[h] and W^K[h] are K x J each)."""
    ### BEGIN SOLUTION
    return 2 * K * J
    ### END SOLUTION


def params_merged(J: int) -> int:
    """Parameters of one head's merged W~Q[h] (J x J)."""
    ### BEGIN SOLUTION
    return J * J
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_params_separate", "locked": true, "points": 1, "schema_version": 3, "solution": false}
for K, J in [(3, 8), (1, 1), (16, 4)]:
    if not isinstance(params_separate(K, J), int):
        raise Explained(f"params_separate({K}, {J}) returned "
                        f"{type(params_separate(K, J)).__name__}; return a Python int.")
if params_separate(1, 1) != 2:
    raise Explained(f"params_separate(1, 1) = {params_separate(1, 1)}, but with K = J = "
                    "1 a head's W^Q and W^K are one number each: count both matrices.")
for K, J in [(3, 8), (5, 2)]:
    if (params_separate(2 * K, J) != 2 * params_separate(K, J)
            or params_separate(K, 2 * J) != 2 * params_separate(K, J)):
        raise Explained(f"params_separate({K}, {J}) = {params_separate(K, J)}, "
                        "but doubling K or doubling J must double the count: "
                        "W^Q[h] and W^K[h] have K rows and J columns each.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch3.params_separate", params_separate)
### END HIDDEN TESTS

# %% nbgrader={"grade": true, "grade_id": "test_params_merged", "locked": true, "points": 1, "schema_version": 3, "solution": false}
for J in [8, 1, 5]:
    if not isinstance(params_merged(J), int):
        raise Explained(f"params_merged({J}) returned "
                        f"{type(params_merged(J)).__name__}; return a Python int.")
if params_merged(1) != 1:
    raise Explained(f"params_merged(1) = {params_merged(1)}, but with J = 1, W~Q[h] is one number.")
for J in [3, 8]:
    if params_merged(2 * J) != 4 * params_merged(J):
        raise Explained(f"params_merged({J}) = {params_merged(J)} and "
                        f"params_merged({2 * J}) = {params_merged(2 * J)}, but doubling "
                        "J must multiply the count by 4: W~Q[h] is a J x J matrix with "
                        "no constraint (it is not symmetric), so every entry counts.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch3.params_merged", params_merged)
### END HIDDEN TESTS

# %% [markdown]
# **Problem 3.6 (seed 002 P6b, for a given layer).** The seed asks for "a given layer":
# all $H$ heads of one self-attention layer together. Implement
# `layer_params_separate(H, K, J)`, the query and key parameters of a layer with $H$ heads
# of query/key size $K$, and `layer_params_merged(H, J)`, the parameters of its merged
# $\tilde W^Q[H, J, J]$. (They are graded with your own per-head counts inside, if you call
# them: a mistake in Problem 3.5 is not charged twice.)

# %% nbgrader={"grade": false, "grade_id": "layer_params", "locked": false, "schema_version": 3, "solution": true}
def layer_params_separate(H: int, K: int, J: int) -> int:
    """Query and key parameters of one layer: W^Q and W^K of shape [H, K, J] each."""
    ### BEGIN SOLUTION
    return H * params_separate(K, J)
    ### END SOLUTION


def layer_params_merged(H: int, J: int) -> int:
    """Parameters of one layer's merged W~Q[H, J, J]."""
    ### BEGIN SOLUTION
    return H * params_merged(J)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_layer_params", "locked": true, "points": 1, "schema_version": 3, "solution": false}
for got, call in [(layer_params_separate(8, 64, 512), "layer_params_separate(8, 64, 512)"),
                  (layer_params_merged(8, 512), "layer_params_merged(8, 512)")]:
    if not isinstance(got, int):
        raise Explained(f"{call} returned {type(got).__name__}; return a Python int.")
# Every head has its own matrices: a layer of H heads has H times the parameters of a layer of one
# head.
for H, K, J in [(3, 4, 8), (2, 5, 3), (8, 64, 512)]:
    if layer_params_separate(H, K, J) != H * layer_params_separate(1, K, J):
        raise Explained(f"layer_params_separate({H}, {K}, {J}) = {layer_params_separate(H, K, J)}, "
                        f"but a layer of {H} heads has {H} times the query and key parameters of "
                        f"one head ({layer_params_separate(1, K, J)} with your function): every "
                        "head has its own W^Q[h] and W^K[h].")
    if layer_params_merged(H, J) != H * layer_params_merged(1, J):
        raise Explained(f"layer_params_merged({H}, {J}) = {layer_params_merged(H, J)}, "
                        f"but a layer of {H} heads has {H} times the merged parameters "
                        f"of one head ({layer_params_merged(1, J)} with your "
                        "function): every head has its own W~Q[h].")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch3.layer_params_separate", layer_params_separate)
hidden_check("ch3.layer_params_merged", layer_params_merged)
### END HIDDEN TESTS

# %% [markdown]
# **Problem 3.7.** For which query/key size $K$ (given the width $J$) does merging leave a
# layer's number of query-key parameters unchanged (and a head's)? Write the condition as
# an equation in `K` and `J`, e.g. `"K = J - 1"` (any equivalent equation is accepted).

# %% nbgrader={"grade": false, "grade_id": "equal_when", "locked": false, "schema_version": 3, "solution": true}
# An equation in K and J, as a string.
# Your answer, in this form:
# EQUAL_WHEN = "..."
### BEGIN SOLUTION
EQUAL_WHEN = "K = J/2"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_equal_when", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(EQUAL_WHEN, ["K", "J"], "EQUAL_WHEN")
if "=" not in EQUAL_WHEN:
    raise Explained("EQUAL_WHEN should be an equation with '=', such as \"K = J - 1\".")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch3.EQUAL_WHEN", EQUAL_WHEN)
### END HIDDEN TESTS

# %% [markdown]
# Your counts against $K$, for one layer of width $J = 64$ with $H = 4$ heads. Once you
# have answered Problem 3.7, the cell also marks where your functions make them equal, so
# that you can check your `EQUAL_WHEN` against them. (This cell shows your own answers: run
# it yourself.)

# %% tags=["answer-output"] mystnb={"figure": {"caption": "Query-key parameters of one layer ($J = 64$, $H = 4$) against the query/key size $K$: the separate $W^Q, W^K$ grow with $K$, the merged $\\tilde W^Q$ does not. Where the lines cross, the two counts are equal."}}
J, H = 64, 4
Ks = list(range(1, J + 1))
# Problem 3.7 first: the crossing answers it
answered = isinstance(globals().get("EQUAL_WHEN"), str)
fig, ax = plt.subplots(figsize=(6.5, 4))
ax.plot(Ks, [layer_params_separate(H, K, J) for K in Ks],
        label=r"separate $W^Q, W^K$: layer_params_separate(H, K, J)")
ax.plot(Ks, [layer_params_merged(H, J) for _ in Ks],
        label=r"merged $\tilde W^Q$: layer_params_merged(H, J)")
crossing = [K for K in Ks
            if layer_params_separate(H, K, J) == layer_params_merged(H, J)] if answered else []
for K in crossing:
    ax.axvline(K, color="gray", linestyle=":", label=f"equal at K = {K}")
ax.set_xlabel("query/key size K")
ax.set_ylabel("query-key parameters of the layer")
ax.set_title(f"One layer, J = {J}, H = {H}")
ax.legend(fontsize=9)
plt.show()
if answered:
    print("by your functions, the two counts are equal at K "
          f"= {crossing}; your EQUAL_WHEN is {EQUAL_WHEN!r}")
else:
    print("Answer EQUAL_WHEN (Problem 3.7) first: this "
          "cell then marks where your two counts are equal.")

# %% [markdown]
# ## 3.4 What does the merge cost, and what does it gain?
#
# **Problem 3.8 (manually graded).** Seed 002 says that Problem 3.1 lets us "replace the key
# and query matrix with a single query matrix without any loss of expressive power". In a
# few sentences, say what merging $W^Q$ and $W^K$ into $\tilde W^Q$ costs or gains, for a
# layer with $H$ heads of width $J$ and query/key size $K$ (take the original Transformer's
# $J = 512$, $H = 8$, $K = J/H = 64$ as an example):
#
# 1. **parameters**: how many each way, and which form is smaller for these sizes;
# 2. **compute per score**: how many multiplications one score $s[h, t_1, t_2]$ takes each
#    way, and what must be computed once per position first;
# 3. **expressive power**: which score functions each form can represent. Is the seed right?
#    And the converse: can every $J\times J$ matrix $\tilde W^Q[h]$ be split back into a pair
#    $W^Q[h]$, $W^K[h]$ of size $K\times J$?

# %% [markdown] nbgrader={"grade": true, "grade_id": "merge_tradeoffs", "locked": false, "points": 3, "schema_version": 3, "solution": true}
# ### BEGIN SOLUTION
# 1. *Parameters.* Separate: $2KJ$ per head, $2HKJ$ per layer, $2\cdot 8\cdot 64\cdot 512 =
#    524{,}288$. Merged: $J^2$ per head, $HJ^2 = 8\cdot 512^2 = 2{,}097{,}152$ per layer, four
#    times as many ($J/(2K) = H/2$) <!-- claim: ch3-counts -->. The counts are equal at $K = J/2$; with the usual
#    $K = J/H$ and $H > 2$ heads the separate form is smaller.
# 2. *Compute per score.* Separate: project every position once ($2KJ$ multiplications per
#    position and head, for its query and key), then each score is an inner product of
#    length $K$: $K$ multiplications. Merged: compute $M[t_1]\,\tilde W^Q[h]$ once per
#    position ($J^2$ multiplications), then each score is an inner product of length $J$:
#    $J$ multiplications, $J/K = H$ times as many, and there are $T^2$ scores per head. The
#    merged form is slower whenever $K < J$. <!-- not a claim: the counts of the sentences before -->
# 3. *Expressive power.* The seed is right that nothing is lost: every pair
#    $(W^Q[h], W^K[h])$ gives the merged matrix $\frac{1}{\sqrt K}W^Q[h]^\top W^K[h]$ with the
#    same scores. The converse fails: that product has rank at most $K$, so when $K < J$ a
#    general $J\times J$ matrix $\tilde W^Q$ of higher rank has no split. <!-- claim: ch3-no-split --> With a free
#    $\tilde W^Q$ the merged form can represent strictly more bilinear score functions
#    (rank up to $J$): it is at least as expressive, and more so for $K < J$, at the price
#    of the parameters and compute above and of the low-rank structure the separate form <!-- not a claim: follows from the two sentences before -->
#    imposes.
# ### END SOLUTION

# %% tags=["solutions-only"]
# The model answer's counts, from the reference counts of Problem 3.6 (J = 512, H = 8, K = J/H =
# 64).
assert (layer_params_separate(8, 64, 512), layer_params_merged(8, 512)) == (524_288, 2_097_152) \
    and layer_params_merged(8, 512) == 4 * layer_params_separate(8, 64, 512), \
    "the counts of part 1"  # claim: ch3-counts

# %% [markdown] tags=["solutions-only"]
# **Rubric for Problem 3.8 (3 points, one per part).** <!-- given -->
#
# * *Parameters (1 point):* $2KJ$ against $J^2$ per head, or $2HKJ$ against $HJ^2$ per layer,
#   and the conclusion for the example (the separate form is smaller, by $J/(2K) = 4$).
#   Half a point for the right counts with a wrong or missing comparison.
# * *Compute per score (1 point):* $K$ against $J$ multiplications per score, with the
#   per-position projections ($2KJ$ against $J^2$) mentioned; full marks also for an
#   equivalent total over all $T^2$ scores. Half a point for a per-score count without the
#   projections, or the projections without the per-score count.
# * *Expressive power (1 point):* says that no expressive power is lost (every pair merges)
#   **and** that the merged form can express more when $K < J$ (rank at most $K$ for a
#   merged pair, up to $J$ for a free $\tilde W^Q$) <!-- not a claim: the rubric -->. Half a point for only one direction.
#   No point for "the merged form loses expressive power". <!-- not a claim: the rubric -->

# %% [markdown] tags=["solutions-only"]
# ### Worked solution
#
# *The derivation (Problem 3.1).* Substitute the projections and regroup the sums, keeping
# everything that does not depend on the positions in the middle:
#
# $$
# \begin{aligned}
# &\frac{1}{\sqrt{K}} \sum_k \text{Query}[h,t_1,k]\, \text{Key}[h,t_2,k] \\
# &\quad= \frac{1}{\sqrt{K}} \sum_k \Big(\sum_{j_1} W^Q[h,k,j_1]\, M[t_1,j_1]\Big)\Big(\sum_{j_2} W^K[h,k,j_2]\, M[t_2,j_2]\Big) \\
# &\quad= \sum_{j_1, j_2} M[t_1,j_1] \Big(\frac{1}{\sqrt{K}} \sum_k W^Q[h,k,j_1]\, W^K[h,k,j_2]\Big) M[t_2,j_2] \\
# &\quad= \sum_{j_1, j_2} M[t_1,j_1]\, \tilde W^Q[h,j_1,j_2]\, M[t_2,j_2],
# \end{aligned}
# $$
#
# $$
# \boxed{\;\tilde W^Q[h,j_1,j_2] = \frac{1}{\sqrt{K}} \sum_k W^Q[h,k,j_1]\, W^K[h,k,j_2]\;}
# $$
#
# In matrix notation for a fixed head: $\tilde W^Q[h] = \frac{1}{\sqrt K} W^Q[h]^\top W^K[h]$ and
# the score is $m_1^\top \tilde W^Q[h]\, m_2$. The first index of $\tilde W^Q$ pairs with the
# **query** position, the second with the **key** position (so $\tilde W^Q$ is not symmetric
# unless $W^Q = W^K$). As an einsum: `"hka,hkb->hab / sqrt(K)"`.
#
# *Counting (Problems 3.5-3.7).* $W^Q[h]$ and $W^K[h]$ are $K\times J$ each: $2KJ$ numbers per
# head (seed 002: <!-- seed -->$2(I\times J)$<!-- /seed -->), $2HKJ$ per layer. $\tilde W^Q[h]$ is $J\times J$ with no
# constraint: $J^2$ per head, $HJ^2$ per layer. They are equal when $2KJ = J^2$, that is
# $K = J/2$, per head and per layer alike ($H$ cancels). For $K < J/2$ the separate matrices
# are cheaper; the original Transformer has $K = J/H$ (64 of 512 with 8 heads), so the
# merged form would cost $J/(2K) = H/2 = 4$ times as many parameters. <!-- claim: ch3-counts -->

# %% [markdown] tags=["solutions-only"]
# ## 3.5 The converse: can $\tilde W^Q$ be split again?
#
# *(Solutions edition only: this section works out part 3 of Problem 3.8.)*
#
# A merged matrix $\frac{1}{\sqrt K} W^Q[h]^\top W^K[h]$ is a product through a
# $K$-dimensional space, so its **rank is at most $K$**. <!-- claim: ch3-rank --> When $K < J$ a general $J\times J$
# matrix has rank $J$ and cannot be written this way. (A remark, not an erratum: the seed's
# claim that merging loses no expressive power is right; a *free* $\tilde W^Q$ can even
# represent more. <!-- not a claim: the seed's claim, shown above --> When $K \ge J$ every $\tilde W^Q$ can be split.)
#
# The split, when it exists, comes from the singular value decomposition
# $\tilde W^Q = A\,\Lambda\,R^\top$ ($A$ and $R$ orthogonal, $\Lambda$ diagonal with the singular
# values $\lambda_0 \ge \lambda_1 \ge \dots$). Keep the $K$ largest singular values and set <!-- not a claim: a construction -->
#
# $$
# W^Q = K^{1/4}\,\big(A_{:,<K}\, \Lambda_{<K}^{1/2}\big)^\top, \qquad
# W^K = K^{1/4}\,\big(R_{:,<K}\, \Lambda_{<K}^{1/2}\big)^\top,
# $$
#
# so that $\frac{1}{\sqrt K} W^{Q\top} W^K = A_{:,<K}\, \Lambda_{<K}\, R_{:,<K}^\top$. This equals
# $\tilde W^Q$ exactly iff the discarded singular values are zero, that is iff
# $\operatorname{rank}\tilde W^Q \le K$; otherwise it is the best rank-$K$ approximation
# (Eckart–Young), and its error is $\big(\sum_{\rho \ge K} \lambda_\rho^2\big)^{1/2}$. <!-- not a claim: a theorem (Eckart-Young) -->

# %% tags=["solutions-only"]
def split_merged(W_tilde: torch.Tensor, K: int) -> tuple[torch.Tensor, torch.Tensor]:
    """One head's W~Q[J, J] -> (WQ[K, J], WK[K, J]) whose merge is the best rank-K approximation of
    W~Q."""
    A, lam, Rh = torch.linalg.svd(W_tilde)  # W~Q = A diag(lam) R^T, Rh = R^T
    root = lam[:K].sqrt()
    return K ** 0.25 * (A[:, :K] * root).T, K ** 0.25 * root[:, None] * Rh[:K]


def rank_k_error(W_tilde: torch.Tensor, K: int) -> float:
    """Largest entry of |W~Q - A_K Lambda_K R_K^T|, the error of the best rank-K approximation."""
    A, lam, Rh = torch.linalg.svd(W_tilde)
    return (W_tilde - (A[:, :K] * lam[:K]) @ Rh[:K]).abs().max().item()


g = torch.Generator().manual_seed(4)
J, K = 8, 3
low_rank = torch.randn(J, K, generator=g,
                       dtype=torch.float64) @ torch.randn(K, J, generator=g, dtype=torch.float64)
arbitrary = torch.randn(J, J, generator=g, dtype=torch.float64)
for name, W in [("a product through K = 3 dimensions",
                 low_rank), ("a random 8 x 8 matrix", arbitrary)]:
    rank = torch.linalg.matrix_rank(W).item()
    print(f"{name:34s}: rank {rank}, error of the best "
          f"rank-{K} approximation {rank_k_error(W, K):.1e}")
assert torch.linalg.matrix_rank(low_rank).item() <= K and rank_k_error(low_rank, K) < 1e-12, \
    "a product through K dimensions should have rank at most K and split exactly"  # claim: ch3-rank
assert torch.linalg.matrix_rank(arbitrary).item() == J and rank_k_error(arbitrary, K) > 0.1, \
    "a random J x J matrix should have full rank and no rank-K split"  # claim: ch3-no-split

# %% [markdown] tags=["solutions-only"]
# With `merge_query_key`, the split pair merges back to the rank-$K$ approximation:

# %% tags=["solutions-only"]
for name, W in [("low rank", low_rank), ("random", arbitrary)]:
    WQ_h, WK_h = split_merged(W, K)
    A, lam, Rh = torch.linalg.svd(W)
    back = merge_query_key(WQ_h[None], WK_h[None])[0]
    print(f"{name}: max |merge(split(W~Q)) - best rank-{K} approximation| = "
          f"{(back - (A[:, :K] * lam[:K]) @ Rh[:K]).abs().max().item():.1e}")

# %% tags=["solutions-only"] mystnb={"figure": {"caption": "The error of the best rank-$K$ split of a random full-rank merged matrix against $K$: far from zero for every $K < J$, rounding at $K = J$."}}
lam = torch.linalg.svdvals(arbitrary)
errors = [rank_k_error(arbitrary, k) for k in range(1, J + 1)]
frobenius = [(lam[k:] ** 2).sum().sqrt().item() for k in range(1, J + 1)]
fig, ax = plt.subplots(figsize=(6.5, 4))
ax.semilogy(range(1, J + 1), [max(e, 1e-17) for e in errors], "o-",
            label="largest entry of the error")
ax.semilogy(range(1, J + 1), [max(f, 1e-17) for f in frobenius], "s--",
            label=r"$(\sum_{\rho \geq K} \lambda_\rho^2)^{1/2}$ "
                  r"(Frobenius norm; 0 drawn at $10^{-17}$)")
ax.set_xlabel("query/key size K of the split")
ax.set_ylabel("reconstruction error")
ax.set_title(f"Splitting a random full-rank {J} x {J} " + r"$\tilde W^Q$ into $W^Q, W^K$")
ax.legend(fontsize=9)
plt.show()
assert errors[-1] < 1e-12 and all(e > 1e-3 for e in errors[:-1]), \
    "a random full-rank matrix should split exactly only with K = J"  # claim: ch3-split-only-at-J

# %% [markdown] tags=["solutions-only"]
# A random full-rank $\tilde W^Q$ can be split only with $K = J$; for every smaller $K$ the
# best split misses it, by the discarded singular values. <!-- claim: ch3-split-only-at-J --> So a free merged matrix is not
# restricted to rank-$K$ bilinear scores, a restriction the separate form has.
