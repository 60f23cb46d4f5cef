# %% [markdown]
# # Chapter 3. Merging query and key
#
# In a self-attention head the query and key matrices only ever appear together, in the
# score $\text{Query}\cdot\text{Key}$. So they can be multiplied out into one $J\times J$
# matrix $\tilde W^Q$ per head, and the key matrix disappears. This chapter derives the
# merged matrix, checks numerically that it gives the same attention, counts parameters
# both ways, and then asks the converse question the seed leaves open: can every merged
# matrix be split back into a query and a key matrix?
#
# You will implement `merge_query_key`, `attention_weights`, `merged_attention_weights`,
# `params_separate` and `params_merged`, and give the condition `EQUAL_WHEN` under which
# the two parameter counts agree.
#
# The problem restates seed 002 (TTIC 31230 2020, Problem 6) in this book's notation.

# %% [markdown]
# ## Notation
#
# | book | meaning | seed 002 P6 |
# |---|---|---|
# | $M[t, j]$, $t < T$, $j < J$ | the sequence entering layer $\ell+1$ | $L_\ell[t, J]$ |
# | $h < H$ | head | $k$ (and $K$ heads) |
# | $k < K$ | query/key coordinate | $i$, $I$ |
# | $W^Q[h,k,j]$, $W^K[h,k,j]$, shape $[H, K, J]$ | query and key weights | $W^Q_{\ell+1}[k,i,J]$, $W^K_{\ell+1}[k,i,J]$, shape $[K, I, J]$ |
# | $\tilde W^Q[h, j_1, j_2]$, shape $[H, J, J]$ | the merged matrix | $\tilde W^Q[k, J_1, J_2]$, shape $[K, J, J]$ |
# | $\alpha[h, t_1, t_2]$ | attention | $\alpha_{\ell+1}[k, t_1, t_2]$ |
# | $1/\sqrt{K}$ | score scale | $1/\sqrt{I}$ |
#
# The letters collide: seed 002 P6 uses $k < K$ for the **heads** and $I$ for the
# query/key dimension, so its $1/\sqrt{I}$ is this book's $1/\sqrt{K}$ (the square root of the
# query/key dimension), and its "$2(I\times J)$ parameters per head" is our $2KJ$.
#
# **Errata.**
#
# * In the seed's derivation the key side is written $L_\ell(t_1, J_2)$ in every line;
#   it must be $L_\ell(t_2, J_2)$, the key position. With $t_1$ on both sides the score
#   would compare position $t_1$ with itself, and the softmax over $t_2$ would see the same
#   number for every $t_2$. (The problem statement itself has $L_\ell[t_2, J_2]$ right.)
# * The seed's final line, $\tilde W^Q[k,j_1,j_2] = \frac{1}{\sqrt I} W^Q[k,I,j_1] W^K[k,I,j_2]$,
#   sums over the repeated capital $I$ by its Einstein convention; below the sum is written
#   out.
# * The seed says the merge loses no expressive power. True in one direction only: every
#   pair $(W^Q, W^K)$ has a merged $\tilde W^Q$, but when $K < J$ not every $\tilde W^Q$ comes from
#   a pair (Section 3.4).

# %%
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from attnlab.testing import Explained, expect_answer, expect_close, expect_like, expect_shape

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print("active device:", device)


# %% [markdown]
# ## 3.1 The derivation
#
# One head's scores and attention, as in Chapter 1:
#
# $$
# \text{Query}[h,t,k] = \sum_j W^Q[h,k,j]\, M[t,j], \qquad
# \text{Key}[h,t,k] = \sum_j W^K[h,k,j]\, M[t,j],
# $$
# $$
# \alpha[h,t_1,t_2] = \operatorname*{softmax}_{t_2}\; \frac{1}{\sqrt{K}} \sum_k \text{Query}[h,t_1,k]\, \text{Key}[h,t_2,k].
# $$
#
# Substitute the projections and regroup the sums, keeping everything that does not
# depend on the positions in the middle:
#
# $$
# \begin{aligned}
# \frac{1}{\sqrt{K}} \sum_k \text{Query}[h,t_1,k]\, \text{Key}[h,t_2,k]
# &= \frac{1}{\sqrt{K}} \sum_k \Big(\sum_{j_1} W^Q[h,k,j_1]\, M[t_1,j_1]\Big)\Big(\sum_{j_2} W^K[h,k,j_2]\, M[t_2,j_2]\Big) \\
# &= \sum_{j_1, j_2} M[t_1,j_1] \Big(\frac{1}{\sqrt{K}} \sum_k W^Q[h,k,j_1]\, W^K[h,k,j_2]\Big) M[t_2,j_2] \\
# &= \sum_{j_1, j_2} M[t_1,j_1]\, \tilde W^Q[h,j_1,j_2]\, M[t_2,j_2],
# \end{aligned}
# $$
#
# $$
# \boxed{\;\tilde W^Q[h,j_1,j_2] = \frac{1}{\sqrt{K}} \sum_k W^Q[h,k,j_1]\, W^K[h,k,j_2]\;}
# \qquad\text{so}\qquad
# \alpha[h,t_1,t_2] = \operatorname*{softmax}_{t_2} \sum_{j_1,j_2} M[t_1,j_1]\, \tilde W^Q[h,j_1,j_2]\, M[t_2,j_2].
# $$
#
# In matrix notation for a fixed head, with $m_1 = M[t_1,:]$ and $m_2 = M[t_2,:]$ as column
# vectors: $\tilde W^Q[h] = \frac{1}{\sqrt K} W^Q[h]^\top W^K[h]$ and the score is
# $m_1^\top \tilde W^Q[h]\, m_2$. The scale $1/\sqrt{K}$ is folded into $\tilde W^Q$; the first
# index of $\tilde W^Q$ pairs with the **query** position, the second with the **key**
# position (so $\tilde W^Q$ is not symmetric unless $W^Q = W^K$).
#
# **Problem 3.1.** Implement `merge_query_key(WQ, WK)`.

# %% nbgrader={"grade": false, "grade_id": "merge_query_key", "locked": false, "schema_version": 3, "solution": true}
def merge_query_key(WQ: torch.Tensor, WK: torch.Tensor) -> torch.Tensor:
    """WQ[H, K, J], WK[H, K, J] -> W~Q[H, J, J] = (1/sqrt K) sum_k WQ[h,k,j1] WK[h,k,j2]."""
    ### BEGIN SOLUTION
    K = WQ.shape[1]
    return torch.einsum("hka,hkb->hab", WQ, WK) / math.sqrt(K)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_merge_query_key", "locked": true, "points": 2, "schema_version": 3, "solution": false}
g = torch.Generator().manual_seed(0)
Hh, K, J = 2, 3, 5
WQ = torch.randn(Hh, K, J, generator=g, dtype=torch.float64)
WK = torch.randn(Hh, K, J, generator=g, dtype=torch.float64)
Wt = merge_query_key(WQ, WK)
expect_shape(Wt, (Hh, J, J), "merge_query_key(WQ[2,3,5], WK[2,3,5])", hint="One J x J matrix per head.")
expect_like(Wt, WQ, "merge_query_key on float64 inputs")
expect_like(merge_query_key(WQ.float(), WK.float()), WQ.float(), "merge_query_key on float32 inputs")

# By hand (H=1, K=4, J=2): every query row is e_0, every key row is e_1, so
# W~Q = (1/sqrt 4) * 4 * e_0 e_1^T = [[0, 2], [0, 0]].
e0, e1 = torch.eye(2, dtype=torch.float64)
expected = torch.tensor([[[0.0, 2.0], [0.0, 0.0]]], dtype=torch.float64)
expect_close(merge_query_key(e0.expand(1, 4, 2), e1.expand(1, 4, 2)), expected, "the hand-checked W~Q",
             hint="The first index j1 comes from W^Q (the query side), the second j2 from W^K: a transpose gives "
                  "[[0, 0], [2, 0]]. Fold in 1/sqrt(K) = 1/2 (without it the entry is 4).")

# Heads are merged separately.
for h in range(Hh):
    expect_close(Wt[h:h + 1], merge_query_key(WQ[h:h + 1], WK[h:h + 1]), f"W~Q of head {h}",
                 hint="Sum over k only, never over heads.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch3.merge_query_key", merge_query_key)
### END HIDDEN TESTS

# %% [markdown]
# **Problem 3.2.** Implement `attention_weights(M, WQ, WK)`: the attention
# $\alpha[h, t_1, t_2]$ the usual way, through queries and keys scaled by $1/\sqrt{K}$.
#
# **Problem 3.3.** Implement `merged_attention_weights(M, WQ_tilde)`: the same attention
# from $\tilde W^Q$ alone, $\alpha[h,t_1,t_2] = \operatorname{softmax}_{t_2} \sum_{j_1,j_2} M[t_1,j_1]\,\tilde W^Q[h,j_1,j_2]\,M[t_2,j_2]$
# (no further scaling: it is inside $\tilde W^Q$).

# %% nbgrader={"grade": false, "grade_id": "attention_weights", "locked": false, "schema_version": 3, "solution": true}
def attention_weights(M: torch.Tensor, WQ: torch.Tensor, WK: torch.Tensor) -> torch.Tensor:
    """M[T, J], WQ[H, K, J], WK[H, K, J] -> alpha[H, T, T], softmax over t2 of Query.Key / sqrt(K)."""
    ### BEGIN SOLUTION
    K = WQ.shape[1]
    Query = torch.einsum("hkj,tj->htk", WQ, M)
    Key = torch.einsum("hkj,tj->htk", WK, M)
    s = torch.einsum("hak,hbk->hab", Query, Key) / math.sqrt(K)
    return torch.softmax(s, dim=-1)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_attention_weights", "locked": true, "points": 2, "schema_version": 3, "solution": false}
g = torch.Generator().manual_seed(1)
T, J, Hh, K = 5, 6, 2, 3
M = torch.randn(T, J, generator=g, dtype=torch.float64)
WQ = torch.randn(Hh, K, J, generator=g, dtype=torch.float64) / J**0.5
WK = torch.randn(Hh, K, J, generator=g, dtype=torch.float64) / J**0.5
alpha = attention_weights(M, WQ, WK)
expect_shape(alpha, (Hh, T, T), "attention_weights(M[5,6], WQ[2,3,6], WK[2,3,6])",
             hint="One T x T matrix per head: alpha[h, t1, t2].")
expect_like(alpha, M, "attention_weights on float64 inputs")
expect_like(attention_weights(M.float(), WQ.float(), WK.float()), M.float(), "attention_weights on float32 inputs")
expect_close(alpha.sum(dim=-1), torch.ones(Hh, T, dtype=torch.float64), "alpha summed over t2",
             hint="The softmax runs over t2, the key position (the last axis): every row must sum to one.")

# By hand (J=1, M = [[1], [0]], WQ = WK = 1 with K=4): s[0,0] = 4/sqrt(4) = 2, all other scores 0.
ones = torch.ones(1, 4, 1, dtype=torch.float64)
M1 = torch.tensor([[1.0], [0.0]], dtype=torch.float64)
p = math.exp(2) / (math.exp(2) + 1)
expect_close(attention_weights(M1, ones, ones), torch.tensor([[[p, 1 - p], [0.5, 0.5]]], dtype=torch.float64),
             "attention_weights on the hand-checked example",
             hint="Scale the scores by 1/sqrt(K) (without it alpha[0,0,0] would be e^4/(e^4+1) = 0.982).")

# PyTorch's fused attention with the identity as values returns exactly the weights.
Query, Key = torch.einsum("hkj,tj->htk", WQ, M), torch.einsum("hkj,tj->htk", WK, M)
reference = F.scaled_dot_product_attention(Query, Key, torch.eye(T, dtype=torch.float64).expand(Hh, T, T))
expect_close(alpha, reference, "attention_weights against scaled_dot_product_attention",
             hint="alpha[h, t1, t2] compares the query at t1 with the key at t2 (not the other way round).")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch3.attention_weights", attention_weights)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "merged_attention_weights", "locked": false, "schema_version": 3, "solution": true}
def merged_attention_weights(M: torch.Tensor, WQ_tilde: torch.Tensor) -> torch.Tensor:
    """M[T, J], W~Q[H, J, J] -> alpha[H, T, T] = softmax over t2 of M[t1] W~Q[h] M[t2]."""
    ### BEGIN SOLUTION
    s = torch.einsum("aj,hjk,bk->hab", M, WQ_tilde, M)
    return torch.softmax(s, dim=-1)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_merged_attention_weights", "locked": true, "points": 2, "schema_version": 3, "solution": false}
g = torch.Generator().manual_seed(2)
T, J, Hh = 5, 4, 3
M = torch.randn(T, J, generator=g, dtype=torch.float64)
Wt = torch.randn(Hh, J, J, generator=g, dtype=torch.float64) / J
alpha = merged_attention_weights(M, Wt)
expect_shape(alpha, (Hh, T, T), "merged_attention_weights(M[5,4], W~Q[3,4,4])",
             hint="One T x T matrix per head: alpha[h, t1, t2].")
expect_like(alpha, M, "merged_attention_weights on float64 inputs")
expect_like(merged_attention_weights(M.float(), Wt.float()), M.float(), "merged_attention_weights on float32 inputs")
expect_close(alpha.sum(dim=-1), torch.ones(Hh, T, dtype=torch.float64), "alpha summed over t2",
             hint="The softmax runs over t2, the key position (the last axis).")

# With the positions one-hot (M = identity, T = J) the scores are W~Q itself: alpha = softmax of its rows.
eye = torch.eye(J, dtype=torch.float64)
expect_close(merged_attention_weights(eye, Wt), torch.softmax(Wt, dim=-1), "merged_attention_weights(I, W~Q)",
             hint="The score is M[t1] W~Q[h] M[t2]: t1 goes with the FIRST index of W~Q (a transposed W~Q gives "
                  "the softmax of its columns); do not scale again, 1/sqrt(K) is already inside W~Q.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch3.merged_attention_weights", merged_attention_weights)
### END HIDDEN TESTS

# %% [markdown]
# ### The two routes agree
#
# On random weights (float64), the attention computed through queries and keys and the
# attention computed from the merged matrix agree to rounding error, for every head:

# %%
g = torch.Generator().manual_seed(3)
T, J, Hh, K = 12, 16, 4, 6
M = torch.randn(T, J, generator=g, dtype=torch.float64)
WQ, WK = (torch.randn(Hh, K, J, generator=g, dtype=torch.float64) for _ in range(2))
separate = attention_weights(M, WQ, WK)
merged = merged_attention_weights(M, merge_query_key(WQ, WK))
diff = (separate - merged).abs().max().item()
print(f"max |alpha(WQ, WK) - alpha(W~Q)| = {diff:.1e} over {Hh} heads and {T} x {T} position pairs")
assert diff < 1e-10


# %% [markdown]
# ## 3.2 Counting parameters
#
# **Problem 3.4 (seed 002 P6b).** For one head, how many numbers make up the query and
# key matrices together, and how many make up $\tilde W^Q$? Implement
# `params_separate(K, J)` and `params_merged(J)`; both return Python `int`s.

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
    WQ_h, WK_h = torch.empty(K, J), torch.empty(K, J)
    got = params_separate(K, J)
    if not isinstance(got, int):
        raise Explained(f"params_separate({K}, {J}) returned {type(got).__name__}; return a Python int.")
    if got != WQ_h.numel() + WK_h.numel():
        raise Explained(f"params_separate({K}, {J}) = {got}, but a head's W^Q and W^K are {K} x {J} each: "
                        "count both matrices.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch3.params_separate", params_separate)
### END HIDDEN TESTS

# %% nbgrader={"grade": true, "grade_id": "test_params_merged", "locked": true, "points": 1, "schema_version": 3, "solution": false}
for J in [8, 1, 5]:
    got = params_merged(J)
    if not isinstance(got, int):
        raise Explained(f"params_merged({J}) returned {type(got).__name__}; return a Python int.")
    if got != torch.empty(J, J).numel():
        raise Explained(f"params_merged({J}) = {got}, but W~Q[h] is a {J} x {J} matrix with no constraint "
                        "(it is not symmetric): count every entry.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch3.params_merged", params_merged)
### END HIDDEN TESTS

# %% [markdown]
# **Problem 3.5.** For which $K$ (given $J$) are the two counts equal? Write the condition
# as an equation in `K` and `J`, e.g. `"K = J - 1"` (any equivalent equation is accepted).

# %% nbgrader={"grade": false, "grade_id": "equal_when", "locked": false, "schema_version": 3, "solution": true}
# An equation in K and J, as a string.
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

# %% [markdown] tags=["solutions-only"]
# ### Worked solution
#
# $W^Q[h]$ and $W^K[h]$ are $K\times J$ each: $2KJ$ numbers per head (seed 002: $2(I\times J)$).
# $\tilde W^Q[h]$ is $J\times J$ with no constraint: $J^2$. They are equal when
# $2KJ = J^2$, that is $K = J/2$. For $K < J/2$ the separate matrices are cheaper; the
# original Transformer has $K = J/H$ (64 of 512 with 8 heads), so the merged form would
# cost $J/(2K) = H/2 = 4$ times as many parameters.

# %%
J = 64
Ks = list(range(1, J + 1))
fig, ax = plt.subplots(figsize=(6.5, 4))
ax.plot(Ks, [params_separate(K, J) for K in Ks], label=r"separate $W^Q, W^K$: params_separate(K, J)")
ax.plot(Ks, [params_merged(J) for _ in Ks], label=r"merged $\tilde W^Q$: params_merged(J)")
crossing = [K for K in Ks if params_separate(K, J) == params_merged(J)]  # from your functions
for K in crossing:
    ax.axvline(K, color="gray", linestyle=":", label=f"equal at K = {K}")
ax.set_xlabel("query/key dimension K")
ax.set_ylabel("parameters per head")
ax.set_title(f"Query-key parameters of one head, J = {J}")
ax.legend()
plt.show()
print("the two counts are equal at K =", crossing)


# %% [markdown]
# ## 3.3 The converse: can $\tilde W^Q$ be split again?
#
# $\tilde W^Q[h] = \frac{1}{\sqrt K} W^Q[h]^\top W^K[h]$ is a product through a $K$-dimensional
# space, so its **rank is at most $K$**. When $K < J$ a general $J\times J$ matrix has rank
# $J$ and cannot be written this way: the merged form is *strictly more expressive* than
# the separate one, not equally so. (When $K \ge J$ every $\tilde W^Q$ can be split, and the
# separate form just spends more parameters on the same set of scores.)
#
# The split, when it exists, comes from the singular value decomposition
# $\tilde W^Q = U S V^\top$. Keep the $K$ largest singular values and set
#
# $$
# W^Q = K^{1/4}\,\big(U_{:,<K}\, S_{<K}^{1/2}\big)^\top, \qquad
# W^K = K^{1/4}\,\big(V_{:,<K}\, S_{<K}^{1/2}\big)^\top,
# $$
#
# so that $\frac{1}{\sqrt K} W^{Q\top} W^K = U_{:,<K}\, S_{<K}\, V_{:,<K}^\top$. This equals
# $\tilde W^Q$ exactly iff the discarded singular values are zero, that is iff
# $\operatorname{rank}\tilde W^Q \le K$; otherwise it is the best rank-$K$ approximation
# (Eckart–Young), and its error is $\big(\sum_{r \ge K} \sigma_r^2\big)^{1/2}$.

# %%
def split_merged(W_tilde: torch.Tensor, K: int) -> tuple[torch.Tensor, torch.Tensor]:
    """One head's W~Q[J, J] -> (WQ[K, J], WK[K, J]) with (1/sqrt K) WQ^T WK its best rank-K approximation."""
    U, S, Vh = torch.linalg.svd(W_tilde)
    root = S[:K].sqrt()
    return K ** 0.25 * (U[:, :K] * root).T, K ** 0.25 * root[:, None] * Vh[:K]


def split_error(W_tilde: torch.Tensor, K: int) -> float:
    """Largest entry of |W~Q - merge(split(W~Q))| for one head."""
    WQ_h, WK_h = split_merged(W_tilde, K)
    return (merge_query_key(WQ_h[None], WK_h[None])[0] - W_tilde).abs().max().item()


g = torch.Generator().manual_seed(4)
J, K = 8, 3
WQ, WK = (torch.randn(1, K, J, generator=g, dtype=torch.float64) for _ in range(2))
merged_from_pair = merge_query_key(WQ, WK)[0]
arbitrary = torch.randn(J, J, generator=g, dtype=torch.float64)
for name, W in [("W~Q merged from a K=3 pair", merged_from_pair), ("a random 8 x 8 matrix", arbitrary)]:
    rank = torch.linalg.matrix_rank(W).item()
    print(f"{name:28s}: rank {rank}, error of the K={K} split {split_error(W, K):.1e}")
assert torch.linalg.matrix_rank(merged_from_pair).item() <= K and split_error(merged_from_pair, K) < 1e-12
assert torch.linalg.matrix_rank(arbitrary).item() == J and split_error(arbitrary, K) > 0.1

# %%
S = torch.linalg.svdvals(arbitrary)
errors = [split_error(arbitrary, k) for k in range(1, J + 1)]
frobenius = [(S[k:] ** 2).sum().sqrt().item() for k in range(1, J + 1)]
fig, ax = plt.subplots(figsize=(6.5, 4))
ax.semilogy(range(1, J + 1), [max(e, 1e-17) for e in errors], "o-", label="largest entry of the error")
ax.semilogy(range(1, J + 1), [max(f, 1e-17) for f in frobenius], "s--",
            label=r"$(\sum_{r \geq K} \sigma_r^2)^{1/2}$ (Frobenius norm; 0 drawn at $10^{-17}$)")
ax.set_xlabel("query/key dimension K of the split")
ax.set_ylabel("reconstruction error")
ax.set_title(f"Splitting a random full-rank {J} x {J} " + r"$\tilde W^Q$ into $W^Q, W^K$")
ax.legend()
plt.show()
assert errors[-1] < 1e-12 and all(e > 1e-3 for e in errors[:-1])

# %% [markdown]
# A random full-rank $\tilde W^Q$ can be split only with $K = J$; for every smaller $K$ the
# best split misses it, by the discarded singular values. So merging trades parameters
# for expressiveness: with $K < J/2$ the separate form is smaller **and** restricted to
# rank-$K$ bilinear scores, a restriction the merged form does not have.
