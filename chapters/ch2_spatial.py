# %% [markdown]
# # Chapter 2. The spatial transformer
#
# A convolutional network runs over a sequence in one dimension and over an image in two.
# The same holds for self-attention: replace the position $t$ by a pixel $(x, y)$ and every
# pixel attends to every other pixel. This chapter asks you to write that layer down,
# implement it, and count its parallel running time; then it asks how the layer relates to
# Chapter 1's, draws what its heads look at on a small image, and measures its depth.
#
# You will
#
# * write the equations of one spatial self-attention layer in the book's index notation
#   (`SPATIAL_EQUATIONS`);
# * implement them, `spatial_self_attention(M, WQ, WK, WV)`;
# * give the parallel running time of one spatial layer and of $L$ layers as expressions
#   (`SPATIAL_TIME_LAYER`, `SPATIAL_TIME`).
#
# The problems restate seed 000 (TTIC 31230, Transformer problems, Problem 2) and seed 002
# (TTIC 31230 2020, Problem 5) in this book's notation.

# %% [markdown]
# ## Notation
#
# <!-- letters: H:heads I:valuesize J:width K:keysize L:layers M:vectors S:sumterms O:order T:length
# V:output W:weights X:rows Y:columns \alpha:attention \ell:layer \gamma:colour \nu:frequency \pi:pi
# e:euler h:heads i:valuesize j:width k:keysize p:positional s:score t:length x:rows y:columns -->
#
# The book's letters (the [notation page](../front/notation.md) has the whole table), and
# the same things in this chapter's seeds:
#
# | book | meaning | seed 000 P2 | seed 002 P5 |
# |---|---|---|---|
# | $M[x, y, j]$, $x < X$, $y < Y$, $j < J$ | the grid of vectors entering a layer | $M[\ell, t, j]$ with $t$ "replaced by spatial dimensions $x$ and $y$" | $h_{\text{in}}[x, y, J]$ |
# | $(x, y)$; $(x', y')$, written `x2, y2` in code | a query pixel; a key pixel | | $(x_1, y_1)$; $(x_2, y_2)$, also $(x', y')$ |
# | $\ell < L$ | layer | $\ell$ | (one layer) |
# | $h < H$ | head (numbered from 0) | $h$ (from 1) | $k$ (from 1) |
# | $k < K$ | query/key coordinate | $k$ | $U$ (a dimension, $U < J$) |
# | $i < I$, $J = HI$ | value coordinate | $i$ | $I$, with $I = J/K$ ($K$ heads) |
# | $W^Q[h,k,j]$, $W^K[h,k,j]$, $W^V[h,i,j]$ | weights | $W^Q[\ell,h,k,j]$, ... | $W^Q[k,U,J]$, $W^K[k,U,J]$, $W^V[k,I,J]$ |
# | $\text{Query}$, $\text{Key}$, $\text{Value}$, $\alpha$, $V$ | as in Chapter 1, with $(x, y)$ for $t$ | the same names | $\text{Query}$, $\text{Key}$, $\text{Value}$, $\alpha$, $\text{Out}$ |
#
# As in Chapter 1: seed 002 writes $k$ for the head and <!-- seed -->$U$<!-- /seed --> for the query/key dimension;
# this book writes $h$ for the head and $k < K$ for the query/key index.
#
# **Relations between the sizes.** As in Chapter 1, $J = H I$, and the query/key and value
# sizes are at most the width: $K \le J$, $I \le J$ (seed 002: "$I$ and <!-- seed -->$U$<!-- /seed --> are both less
# than $J$") <!-- given -->. The running-time questions use these relations.
#
# **Errata.**
#
# * Seed 002 P5a asks to "rewrite the equations from problem 1", but in seed 002 the
#   self-attention equations are those of Problem 4 (its Problem 1 is blank language
#   modelling); the wording was copied from seed 000, where they are Problem 1.
# * Seed 002 writes the scores without the factor $1/\sqrt{K}$ (its <!-- seed -->$1/\sqrt{U}$<!-- /seed -->); this
#   book always scales by $1/\sqrt{K}$.
# * Seed 000 P2b asks for the whole $L$-layer network in $L, X, Y, H, J, K$; seed 002 P5b
#   for one layer in $X, Y, J$ and the head count (its $K$). The book asks for both.
# * The seeds number heads from 1; Python and this book from 0.

# %%
import math

import matplotlib.pyplot as plt
import torch

from attnlab.equations import evaluate
from attnlab.grading import is_grading
from attnlab.profiler import parallel_time
from attnlab.symbolic import parse_answer
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
# ## 2.1 Self-attention over an image
#
# The layer reads a grid of vectors $M[x, y, j]$ (a feature map: one $J$-dimensional vector
# per pixel) and writes a grid of the same shape. Every pixel is a query, and every pixel is
# a key and a value: each query pixel $(x, y)$ is compared with every key pixel
# $(x', y')$ of the whole image, and its output is the average of the values of all
# pixels, weighted by attention weights that sum to one.
#
# **Problem 2.1 (seed 000 P2a, seed 002 P5a).** Rewrite the equations of the
# self-attention layer of Chapter 1 (Section 1.1) so that the position $t$ is replaced by
# the grid coordinates $(x, y)$. Write them in `SPATIAL_EQUATIONS` in the book's index
# notation, one equation per line, defining in this order:
#
# | tensor | sizes | meaning |
# |---|---|---|
# | `Query[h,x,y,k]`, `Key[h,x,y,k]` | $H, X, Y, K$ | the queries and keys of head $h$ at pixel $(x, y)$ |
# | `Value[h,x,y,i]` | $H, X, Y, I$ | the values |
# | `alpha[h,x,y,x2,y2]` | $H, X, Y, X, Y$ | the attention of query pixel $(x, y)$ on key pixel $(x', y')$, scores scaled by $1/\sqrt{K}$ |
# | `V[h,x,y,i]` | $H, X, Y, I$ | what head $h$ returns at pixel $(x, y)$ |
#
# from the inputs `WQ[h,k,j]`, `WK[h,k,j]`, `WV[h,i,j]` and `M[x,y,j]`. (The heads are then
# concatenated as in Chapter 1, $M_{\text{out}}[x,y,:] = V[0,x,y,:]; \dots; V[H-1,x,y,:]$:
# leave that line out.)
#
# The answer language: `Name[indices] = expression`; `sum_j ...` and `sum_{j,k} ...` sum the
# product that follows over the listed indices; `softmax_{a,b} ...` normalises the product
# that follows over the listed indices together (they stay indices of the result); `*`,
# `/`, `sqrt(K)`, `exp(...)` and brackets. Write a prime as a digit: $x'$ is `x2`. For
# example, the softmax's normaliser of Chapter 1 reads `Z[h,t] = sum_{t2} exp(s[h,t,t2])`.
# The visible test checks the form of your equations and one small case worked out by
# hand; the hidden test checks them on random tensors of many sizes.

# %% nbgrader={"grade": false, "grade_id": "spatial_equations", "locked": false, "schema_version": 3, "solution": true}
# One equation per line, defining Query, Key, Value, alpha and V in this order.
### BEGIN SOLUTION
SPATIAL_EQUATIONS = r"""
Query[h,x,y,k] = sum_j WQ[h,k,j] * M[x,y,j]
Key[h,x,y,k] = sum_j WK[h,k,j] * M[x,y,j]
Value[h,x,y,i] = sum_j WV[h,i,j] * M[x,y,j]
alpha[h,x,y,x2,y2] = softmax_{x2,y2} (sum_k Query[h,x,y,k] * Key[h,x2,y2,k]) / sqrt(K)
V[h,x,y,i] = sum_{x2,y2} alpha[h,x,y,x2,y2] * Value[h,x2,y2,i]
"""
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_spatial_equations", "locked": true, "points": 3, "schema_version": 3, "solution": false}
expect_equations(SPATIAL_EQUATIONS,
                 inputs={"WQ": "H,K,J", "WK": "H,K,J", "WV": "H,I,J", "M": "X,Y,J"},
                 defines={"Query": "H,X,Y,K", "Key": "H,X,Y,K", "Value": "H,X,Y,I",
                          "alpha": "H,X,Y,X,Y",
                          "V": "H,X,Y,I"},
                 what="SPATIAL_EQUATIONS (Problem 2.1)")

# By hand: a 2 x 2 grid with J = 2: pixel (0,0) is [1, 0], pixel (1,1) is [0, 1], the others [0, 0].
# One head with K = 4: WQ[0,k] = [1, 0] and WK[0,k] = [0, 1] for every k (queries read coordinate 0,
# keys coordinate 1), WV[0,0] = [0, 1]. The only score that is not 0 is query (0,0) against key
# (1,1): 4/sqrt(4) = 2. So query (0,0) puts e^2/(e^2+3) on pixel (1,1), the only one with a value,
# and every other query spreads 1/4 over the pixels: V[0, :, :, 0] = [[e^2/(e^2+3), 1/4], [1/4,
# 1/4]] = [[0.711, 0.25], [0.25, 0.25]].
e2, e4 = math.exp(2), math.exp(4)
hand = {"WQ": torch.tensor([[[1.0, 0.0]] * 4], dtype=torch.float64),
        "WK": torch.tensor([[[0.0, 1.0]] * 4], dtype=torch.float64),
        "WV": torch.tensor([[[0.0, 1.0]]], dtype=torch.float64),
        "M": torch.tensor([[[1.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 1.0]]],
                          dtype=torch.float64)}
got = evaluate(SPATIAL_EQUATIONS, hand,
               sizes={"H": 1, "K": 4, "I": 1, "J": 2, "X": 2, "Y": 2})["V"][0, :, :, 0]
mistakes = {  # what some common mistakes give on this example (worked out by hand)
    "the scores are not scaled by 1/sqrt(K) = 1/2": [[e4 / (e4 + 3), 0.25], [0.25, 0.25]],
    "the softmax runs over one coordinate of the key pixel (x2 "
    "or y2) only; it must run over all X*Y key pixels together": [[e2 / (e2 + 1), 0.5], [0.5, 0.5]],
    "the query and the key pixel are swapped in the scores: "
    "alpha[h,x,y,x2,y2] compares the query at (x,y) with the key at (x2,y2)":
        [[0.25, 0.25], [0.25, 1 / (e2 + 3)]],
}
for mistake, wrong in mistakes.items():
    if torch.allclose(got, torch.tensor(wrong, dtype=torch.float64), atol=1e-4):
        raise Explained("Evaluated on the hand-checked 2 x 2 grid "
                        f"your V[0,:,:,0] is {got.tolist()}: {mistake}.")
expect_close(got, torch.tensor([[e2 / (e2 + 3), 0.25], [0.25, 0.25]], dtype=torch.float64),
             "your equations' V[0,:,:,0] on the hand-checked 2 "
             "x 2 grid (expected [[0.711, 0.25], [0.25, 0.25]])",
             hint="Every query pixel's weights must sum to one over all X*Y key pixels "
                  "(x2, y2) together, and V sums the weighted values over both x2 and y2.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch2.SPATIAL_EQUATIONS", SPATIAL_EQUATIONS)
### END HIDDEN TESTS

# %% [markdown]
# ## 2.2 The layer in PyTorch
#
# **Problem 2.2.** Implement your equations of Problem 2.1 as
# `spatial_self_attention(M, WQ, WK, WV)`, with the heads concatenated as in Chapter 1
# (head 0 first). Keep the inputs' device and dtype.

# %% nbgrader={"grade": false, "grade_id": "spatial_self_attention", "locked": false, "schema_version": 3, "solution": true}
def spatial_self_attention(M: torch.Tensor, WQ: torch.Tensor, WK: torch.Tensor,
                           WV: torch.Tensor) -> torch.Tensor:
    """One spatial self-attention layer, the equations of Problem 2.1.

    M[X, Y, J], WQ[H, K, J], WK[H, K, J], WV[H, I, J] -> [X, Y, H*I], heads concatenated
    (head 0 first).
    """
    ### BEGIN SOLUTION
    X, Y, _ = M.shape
    H, K, _ = WQ.shape
    Query = torch.einsum("hkj,xyj->hxyk", WQ, M)
    Key = torch.einsum("hkj,xyj->hxyk", WK, M)
    Value = torch.einsum("hij,xyj->hxyi", WV, M)
    s = torch.einsum("hxyk,hXYk->hxyXY", Query, Key) / math.sqrt(K)
    alpha = torch.softmax(s.reshape(H, X, Y, X * Y), dim=-1).reshape(H, X, Y, X, Y)
    V = torch.einsum("hxyXY,hXYi->hxyi", alpha, Value)
    return V.permute(1, 2, 0, 3).reshape(X, Y, -1)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_spatial_self_attention", "locked": true, "points": 4, "schema_version": 3, "solution": false}
# Visible tests: each failure says what is wrong.
g = torch.Generator().manual_seed(0)
X, Y, J, H, K, I = 3, 4, 8, 2, 3, 4
M = torch.randn(X, Y, J, generator=g, dtype=torch.float64)
WQ = torch.randn(H, K, J, generator=g, dtype=torch.float64) / J**0.5
WK = torch.randn(H, K, J, generator=g, dtype=torch.float64) / J**0.5
WV = torch.randn(H, I, J, generator=g, dtype=torch.float64) / J**0.5
out = spatial_self_attention(M, WQ, WK, WV)
expect_shape(out, (X, Y, H * I),
             "spatial_self_attention(M[3,4,8], WQ[2,3,8], WK[2,3,8], WV[2,4,8])",
             hint="The output keeps the grid [X, Y] and has H*I channels.")
expect_like(out, M, "spatial_self_attention on float64 inputs")
expect_like(spatial_self_attention(M.float(), WQ.float(), WK.float(), WV.float()), M.float(),
            "spatial_self_attention on float32 inputs")

# Heads are concatenated in order, head 0 first: channels h*I .. (h+1)*I - 1 are head h alone.
# your one-head layers
heads = [spatial_self_attention(M, WQ[h:h + 1], WK[h:h + 1], WV[h:h + 1]) for h in range(H)]
if torch.allclose(out, torch.stack(heads).reshape(X, Y, H * I)):
    raise Explained("The heads are reshaped without permuting: V[h, x, y, "
                    "i] reshaped straight to [X, Y, H*I] mixes pixels and "
                    "heads. Permute V to [X, Y, H, I] first, then reshape.")
for h in range(H):
    expect_close(out[..., h * I:(h + 1) * I], heads[h],
                 f"channels {h * I}..{(h + 1) * I - 1} of the output",
                 hint=f"These channels must be head {h} alone, block by block: "
                      "permute V[H, X, Y, I] to [X, Y, H, I] before reshaping (not "
                      "[X, Y, I, H], which interleaves the heads channel by channel).")

# A single pixel attends to itself with weight 1: the output is its Value, heads concatenated.
one = M[:1, :1]
expect_close(spatial_self_attention(one, WQ, WK, WV),
             torch.einsum("hij,j->hi", WV, one[0, 0]).reshape(1, 1, -1),
             "spatial_self_attention on a 1 x 1 image",
             hint="With one pixel every weight is 1: the output "
                  "is W^V[h] M[0,0] for each head, concatenated.")

# By hand, the 2 x 2 grid of Problem 2.1's test: [[e^2/(e^2+3), 1/4], [1/4, 1/4]] = [[0.711, 0.25],
# [0.25, 0.25]].
e2, e4 = math.exp(2), math.exp(4)
WQ1 = torch.tensor([[[1.0, 0.0]] * 4], dtype=torch.float64)  # queries read coordinate 0 (K = 4)
WK1 = torch.tensor([[[0.0, 1.0]] * 4], dtype=torch.float64)  # keys read coordinate 1
WV1 = torch.tensor([[[0.0, 1.0]]], dtype=torch.float64)       # values read coordinate 1
M1 = torch.tensor([[[1.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 1.0]]], dtype=torch.float64)
got = spatial_self_attention(M1, WQ1, WK1, WV1)
expect_shape(got, (2, 2, 1), "spatial_self_attention on the hand-checked 2 x 2 grid")
mistakes = {  # what some common mistakes give on this example (worked out by hand)
    "the scores are not scaled by 1/sqrt(K) = 1/2": [[e4 / (e4 + 3), 0.25], [0.25, 0.25]],
    "the softmax runs over one axis of the key pixel (x' or "
    "y') only; it must run over all X*Y key pixels together": [[e2 / (e2 + 1), 0.5], [0.5, 0.5]],
    "the softmax runs over x' in each column y' separately and is divided by Y (so "
    "each column's weights sum to 1/Y); it must run over all X*Y key pixels together":
        [[e2 / (e2 + 1) / 2, 0.25], [0.25, 0.25]],
    "the query and the key pixel are swapped in the scores": [[0.25, 0.25], [0.25, 1 / (e2 + 3)]],
}
for mistake, wrong in mistakes.items():
    if torch.allclose(got[..., 0], torch.tensor(wrong, dtype=torch.float64), atol=1e-4):
        raise Explained("On the hand-checked 2 x 2 grid you "
                        f"return {got[..., 0].tolist()}: {mistake}.")
expect_close(got[..., 0], torch.tensor([[e2 / (e2 + 3), 0.25], [0.25, 0.25]], dtype=torch.float64),
             "spatial_self_attention on the hand-checked 2 x "
             "2 grid (expected [[0.711, 0.25], [0.25, 0.25]])",
             hint="Every query pixel's weights must sum to one over all X*Y key pixels together "
                  "(one softmax over (x', y')), and the values are summed over both x' and y'.")

# Transposing the image (swapping x and y) transposes the output.
expect_close(spatial_self_attention(M.transpose(0, 1), WQ, WK, WV), out.transpose(0, 1),
             "spatial_self_attention of the transposed image",
             hint="Some reshape mixes up x and y: keep the order [X, "
                  "Y] whenever you flatten or unflatten the grid.")

# The pixels are a set: moving every pixel to another place (any permutation of the X*Y pixels)
# moves the outputs the same way.
perm = torch.randperm(X * Y, generator=g)
moved = M.reshape(X * Y, J)[perm].reshape(X, Y, J)
expect_close(spatial_self_attention(moved, WQ, WK, WV),
             out.reshape(X * Y, -1)[perm].reshape(X, Y, -1),
             "spatial_self_attention of the image with its pixels permuted",
             hint="Moving the pixels around must move the outputs the same way: the weights of a "
                  "query pixel run over all key pixels together, whatever their rows and columns.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch2.spatial_self_attention", spatial_self_attention)
### END HIDDEN TESTS

# %% [markdown]
# ## 2.3 Parallel running time
#
# Use the cost model of Chapter 1: an ideal parallel machine on which a sum over $S$ terms
# takes $O(\log S)$ time and every other operation, once its inputs exist, takes $O(1)$.
# The sizes satisfy $J = HI$, $K \le J$ and $I \le J$.
#
# **Problem 2.3 (seed 002 P5b).** Give the order of the parallel running time of *one*
# spatial self-attention layer (Problem 2.2: computing its output from $M$) as a function of
# $X, Y, H, J, K$ in `SPATIAL_TIME_LAYER` (a string such as `"log(X) + J"`; any expression
# of the same order under the relations above is accepted).

# %% nbgrader={"grade": false, "grade_id": "spatial_time_layer", "locked": false, "schema_version": 3, "solution": true}
# An expression in X, Y, H, J, K, as a string.
# Your answer, in this form:
# SPATIAL_TIME_LAYER = "..."
### BEGIN SOLUTION
SPATIAL_TIME_LAYER = "log(X) + log(Y) + log(J) + log(K)"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_spatial_time_layer", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(SPATIAL_TIME_LAYER, ["X", "Y", "H", "J", "K"], "SPATIAL_TIME_LAYER")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch2.SPATIAL_TIME_LAYER", SPATIAL_TIME_LAYER)
### END HIDDEN TESTS

# %% [markdown]
# **Problem 2.4 (seed 000 P2b).** Now the spatial transformer: $L$ such layers, one on the
# output of the other ($M_{\ell+1}$ from $M_\ell$, with $J = HI$ in every layer). Give the
# order of its parallel running time as a function of $L, X, Y, H, J, K$ in `SPATIAL_TIME`,
# with the same relations.

# %% nbgrader={"grade": false, "grade_id": "spatial_time", "locked": false, "schema_version": 3, "solution": true}
# An expression in L, X, Y, H, J, K, as a string.
# Your answer, in this form:
# SPATIAL_TIME = "..."
### BEGIN SOLUTION
SPATIAL_TIME = "L*(log(X) + log(Y) + log(J) + log(K))"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_spatial_time", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(SPATIAL_TIME, ["L", "X", "Y", "H", "J", "K"], "SPATIAL_TIME")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch2.SPATIAL_TIME", SPATIAL_TIME)
### END HIDDEN TESTS

# %% [markdown] tags=["solutions-only"]
# ### Worked solution
#
# *The equations (Problem 2.1).* Replace $t$ by $(x, y)$ and $t'$ by $(x', y')$ everywhere;
# the softmax and the weighted average run over the key pixel, that is over the pair
# $(x', y')$ jointly:
#
# $$
# \begin{aligned}
# \text{Query}[h,x,y,k] &= \sum_j W^Q[h,k,j]\, M[x,y,j] \\
# \text{Key}[h,x,y,k] &= \sum_j W^K[h,k,j]\, M[x,y,j] \\
# \text{Value}[h,x,y,i] &= \sum_j W^V[h,i,j]\, M[x,y,j] \\
# s[h,x,y,x',y'] &= \frac{1}{\sqrt{K}} \sum_k \text{Query}[h,x,y,k]\, \text{Key}[h,x',y',k] \\
# \alpha[h,x,y,x',y'] &= \operatorname*{softmax}_{x',y'}\; s[h,x,y,x',y']
#   = \frac{e^{s[h,x,y,x',y']}}{\sum_{x'',y''} e^{s[h,x,y,x'',y'']}} \\
# V[h,x,y,i] &= \sum_{x',y'} \alpha[h,x,y,x',y']\, \text{Value}[h,x',y',i] \\
# M_{\text{out}}[x,y,:] &= V[0,x,y,:];\ V[1,x,y,:];\ \dots;\ V[H-1,x,y,:]
# \end{aligned}
# $$
#
# For each query pixel and head, $\alpha[h,x,y,\cdot,\cdot]$ is an $X\times Y$ map of weights
# that sums to one over the whole image. A softmax over $x'$ and another over $y'$ would not
# be one: it would fix how much weight each row or column of the image gets, whatever its
# pixels.
#
# *One layer (seed 002 P5b).* Everything is parallel over $h$, the query pixel $(x, y)$,
# the key pixel $(x', y')$ and the output coordinates; the chain of dependent steps is:
#
# * the projections, a sum over $j$: $O(\log J)$;
# * the scores, a sum over $k$: $O(\log K)$ (and $O(1)$ for the scaling);
# * the softmax's normaliser, a sum over the $XY$ key pixels: $O(\log XY) = O(\log X + \log Y)$,
#   plus $O(1)$ for the exponentials and the division;
# * the weighted average, again a sum over $XY$ pixels: $O(\log X + \log Y)$;
# * the concatenation of heads: $O(1)$. $H$ does not appear: the heads run side by side.
#
# One layer: $O(\log X + \log Y + \log J + \log K)$, which is seed 002's
# $O(\ln XY + \ln J)$ because $K \le J$ makes $\log K \le \log J$.
#
# *$L$ layers (seed 000 P2b).* Layer $\ell+1$ reads layer $\ell$'s output, so the layers
# are sequential: $O\big(L(\log X + \log Y + \log J + \log K)\big) = O\big(L(\log XY + \log J)\big)$.
# With serial sums (seed 000 P1a's model) the layer would take $O(J + K + XY)$: linear in
# the number of pixels. The measured depth in Section 2.6 grows by a fixed number of steps
# (4 for the reference implementation) each time the side of the image doubles: two sums
# over the $XY$ key pixels, and $\log_2 XY$ grows by 2 <!-- claim: ch2-depth-doubling -->.

# %% [markdown]
# ## 2.4 Rows, columns, or the whole image?
#
# Two questions to think about once your layer passes its tests. They are not graded; the
# solutions edition answers them.
#
# 1. The last visible test of Problem 2.2 moves the pixels of the image to other places (any
#    permutation of the $XY$ pixels) and expects the outputs to move with them. What, then,
#    does the layer know of the grid? How is it related to Chapter 1's layer on a sequence?
# 2. A tempting shortcut normalises the scores over $x'$ separately in each column $y'$ of
#    the image and divides by $Y$, so that a query pixel's weights still sum to one. Is that
#    the layer of Problem 2.1? How much weight does each column of the image receive under
#    the shortcut, and how much under your layer?
#
# Your layer can answer the second question itself. Its weights $\alpha[h, x, y, \cdot, \cdot]$
# are not among its outputs, but they can be read off it: append to every pixel's vector a
# one-hot code of its place in the image ($XY$ more channels, which the queries and keys
# ignore) and let the values be that code alone. Head $h$'s output at pixel $(x, y)$ is then
# the weighted average of the codes, that is the list of its weights on all $XY$ pixels.
# `attention_maps` below does this for any layer with the signature of
# `spatial_self_attention`; the cell after it shows how your layer's weights for one query
# pixel of a random image split over the columns of the image (run it yourself).

# %%
def attention_maps(layer, M: torch.Tensor, WQ: torch.Tensor, WK: torch.Tensor) -> torch.Tensor:
    """The weights alpha[H, X, Y, X, Y] of the spatial layer `layer` (called like
    spatial_self_attention) on M[X, Y, J] with WQ[H, K, J], WK[H, K, J], read off its output.

    Every pixel gets a one-hot code of its place appended (X*Y channels that the queries and keys
    ignore), and every head's values are that code alone: head h's output at pixel (x, y) is then
    alpha[h, x, y, :, :], flattened.
    """
    X, Y, J = M.shape
    H, K, _ = WQ.shape
    N = X * Y
    code = torch.eye(N, dtype=M.dtype, device=M.device)
    coded = torch.cat([M, code.reshape(X, Y, N)], dim=-1)  # M[x, y, :] ; one-hot code of (x, y)
    ignore = M.new_zeros(H, K, N)
    WQc, WKc = torch.cat([WQ.to(M), ignore], dim=-1), torch.cat([WK.to(M), ignore], dim=-1)
    # [H, N, J + N]: the code alone
    WVc = torch.cat([M.new_zeros(N, J), code], dim=-1).repeat(H, 1, 1)
    out = layer(coded, WQc, WKc, WVc)  # [X, Y, H*N], heads concatenated
    return out.reshape(X, Y, H, X, Y).permute(2, 0, 1, 3, 4)


# %% tags=["answer-output"]
g = torch.Generator().manual_seed(1)
X, Y, H, K = 6, 5, 4, 8
J = 16
M = torch.randn(X, Y, J, generator=g, dtype=torch.float64)
WQ, WK = (torch.randn(H, K, J, generator=g, dtype=torch.float64) / J**0.5 for _ in range(2))
alpha = attention_maps(spatial_self_attention, M, WQ, WK)  # your layer's weights
weights = alpha[0, 0, 0]  # head 0, query pixel (0, 0): weights[x2, y2]
print("your weights of query pixel (0, 0), head 0, "
      f"summed over the image: {weights.sum().item():.3f}")
print("  summed over each column y' of the image:",
      [round(v, 3) for v in weights.sum(dim=0).tolist()])
print(f"  under the per-column shortcut, every column would get 1/Y = {1 / Y:.3f}")

# %% [markdown] tags=["solutions-only"]
# ### Answers to the questions of Section 2.4
#
# *1. An image is a sequence of $XY$ pixels.* The softmax runs over the pair $(x', y')$,
# that is over a set of $XY$ key pixels; the grid plays no part in the layer (hence the
# permutation test). List the pixels in a row, $t = xY + y$ (`M.reshape(X*Y, J)`), and the
# equations of Problem 2.1 become those of Chapter 1 with $T = XY$, letter for letter. So
# the spatial layer is the 1-D layer applied to the flattened image, and the output
# unflattens back to $[X, Y, HI]$. Below, the 1-D layer is PyTorch's fused
# `scaled_dot_product_attention`, on 4-D inputs $[1, H, XY, \cdot]$. Where the pixels lie
# reaches the layer only through what $M$ holds, such as the positional encoding of
# Section 2.5.
#
# *2. Not the same layer.* Normalising over $x'$ separately in each column $y'$ (and
# dividing by $Y$) gives every column the same total weight $1/Y$, however well or badly its
# pixels match the query. The joint softmax's column totals vary, as the cell above shows <!-- claim: ch2-totals-vary -->;
# the last lines below measure how far the two sets of weights are apart.

# %% tags=["solutions-only"]
import torch.nn.functional as F


def attention_1d(M: torch.Tensor, WQ: torch.Tensor, WK: torch.Tensor,
                 WV: torch.Tensor) -> torch.Tensor:
    """Chapter 1's layer through PyTorch's fused attention: M[T, J] -> [T, H*I]."""
    Query, Key, Value = (torch.einsum("hkj,tj->htk", W, M).contiguous()[None] for W in (WQ, WK, WV))
    fused = F.scaled_dot_product_attention(Query, Key, Value)[0]  # [H, T, I]
    return fused.transpose(0, 1).reshape(M.shape[0], -1)


g = torch.Generator().manual_seed(1)
X, Y, H, K, I = 6, 5, 4, 8, 4
J = H * I
M = torch.randn(X, Y, J, generator=g, dtype=torch.float64)
WQ, WK, WV = (torch.randn(H, d, J, generator=g, dtype=torch.float64) / J**0.5 for d in (K, K, I))
flattened = attention_1d(M.reshape(X * Y, J), WQ, WK, WV).reshape(X, Y, H * I)
diff = (spatial_self_attention(M, WQ, WK, WV) - flattened).abs().max().item()
print("max |spatial_self_attention(M) - attention_1d(M.reshape(X*Y, "
      f"J)).reshape(X, Y, -1)| = {diff:.1e}")
assert diff < 1e-12, f"spatial_self_attention and the flattened 1-D layer differ by {diff:.1e}"

# The per-axis alternative: softmax over x' in each column y' separately, each column weighted 1/Y.
Query, Key = (torch.einsum("hkj,xyj->hxyk", W, M) for W in (WQ, WK))
s = torch.einsum("hxyk,hXYk->hxyXY", Query, Key) / math.sqrt(K)
# over the X*Y key pixels together
joint = torch.softmax(s.flatten(-2), dim=-1).unflatten(-1, (X, Y))
per_axis = torch.softmax(s, dim=3) / Y  # every column y' gets total weight 1/Y
print("largest weight difference, joint vs per-axis "
      f"softmax: {(joint - per_axis).abs().max().item():.3f}")
totals = joint[0, 0, 0].sum(dim=0)  # query pixel (0, 0), head 0: the weight on each column y'
print("column totals of the joint weights for query pixel (0, 0), head 0:",
      [round(v, 3) for v in totals.tolist()])
assert totals.max() - totals.min() > 0.05, \
    f"the joint softmax's column totals vary: {totals}"  # claim: ch2-totals-vary

# %% [markdown]
# ## 2.5 What the heads look at
#
# A small synthetic image: four discs (two red, one green, one blue) on a grey background,
# $32\times 32$ pixels, with a little noise. Every pixel's vector $M[x, y, :]$ is its colour
# (3 numbers, all colours of unit length) followed by a positional encoding
# ($\cos$ and $\sin$ of $\nu\pi x/X$ and of $\nu\pi y/Y$ for the frequencies $\nu = 1, \dots, 4$: 16 numbers), <!-- given -->
# so $J = 19$. We choose the weights by hand, two heads with $K = 16$:
#
# * head 0, the **colour head**: $W^Q[0] = W^K[0]$ keep the colour and drop the position,
#   scaled so that $s = 10\, \gamma \cdot \gamma'$ for colours $\gamma$, $\gamma'$. For unit-length colours the
#   dot product is largest for the same colour, <!-- not a claim: for unit vectors, by Cauchy-Schwarz --> so a pixel attends to pixels of its own
#   colour, wherever they are;
# * head 1, the **position head**: $W^Q[1] = W^K[1]$ keep the position only, $s = 2\,
#   p \cdot p'$ for positional encodings $p$, $p'$;
#   $p \cdot p' = \sum_\nu \cos(\nu\pi(x-x')/X) + \cos(\nu\pi(y-y')/Y)$ peaks at $(x', y') = (x, y)$,
#   so a pixel attends to its neighbourhood.
#
# Both heads' values copy the colour ($W^V[h] = [\,\mathrm{Id}_3 \mid 0\,]$, $\mathrm{Id}_3$ the
# $3 \times 3$ identity), so each head's
# output is a re-weighted average of colours. The attention maps below are
# $\alpha[h, x, y, \cdot, \cdot]$ for three query pixels (the cross), drawn as light over
# the dimmed image; they are your `spatial_self_attention`'s weights, read off it by
# `attention_maps` of Section 2.4 (run the second cell below yourself).

# %%
X = Y = 32
g = torch.Generator().manual_seed(2)
grey = torch.full((3,), 3 ** -0.5)  # unit length, like the pure colours
COLOURS = {"red": torch.tensor([1.0, 0.0, 0.0]), "green": torch.tensor([0.0, 1.0, 0.0]),
           "blue": torch.tensor([0.0, 0.0, 1.0])}
image = grey.expand(X, Y, 3).clone()
xs, ys = torch.arange(X)[:, None].float(), torch.arange(Y)[None, :].float()
for colour, cx, cy, radius in [("red", 8, 8, 5), ("green", 22, 10, 6), ("blue", 12, 23, 5),
                               ("red", 24, 25, 4)]:
    image[(xs - cx) ** 2 + (ys - cy) ** 2 <= radius ** 2] = COLOURS[colour]
noisy = image + 0.08 * torch.randn(X, Y, 3, generator=g)


def positional_encoding(X: int, Y: int, freqs: tuple[int, ...] = (1, 2, 3, 4)) -> torch.Tensor:
    """[X, Y, 4*len(freqs)]: cos and sin of f*pi*x/X, then of f*pi*y/Y."""
    x = torch.arange(X).float()[:, None].expand(X, Y) * math.pi / X
    y = torch.arange(Y).float()[None, :].expand(X, Y) * math.pi / Y
    parts = [fn(f * u) for u in (x, y) for f in freqs for fn in (torch.cos, torch.sin)]
    return torch.stack(parts, dim=-1)


pos = positional_encoding(X, Y)
n_pos = pos.shape[-1]
features = torch.cat([noisy, pos], dim=-1)  # M[x, y, :] = colour ; position
J, K, H = 3 + n_pos, n_pos, 2
colour_scale, position_scale = 10.0, 2.0
WQ = torch.zeros(H, K, J)
# s = 10 * colour . colour'
WQ[0, :3, :3] = math.sqrt(colour_scale * math.sqrt(K)) * torch.eye(3)
# s = 2 * position . position'
WQ[1, :, 3:] = math.sqrt(position_scale * math.sqrt(K)) * torch.eye(n_pos)
WK = WQ.clone()
WV = torch.zeros(H, 3, J)
WV[:, :, :3] = torch.eye(3)  # both heads average colours


# %% tags=["answer-output"] mystnb={"figure": {"caption": "Attention maps of two hand-made heads for three query pixels (the crosses), drawn as light over the dimmed image. The colour head lights every pixel of the query's colour, near or far; the position head lights a small neighbourhood."}}
if not is_grading():  # a figure only: not drawn while grading
    alpha = attention_maps(spatial_self_attention, features, WQ, WK)  # your layer's weights
    queries = [(8, 8), (20, 20), (24, 25)]
    fig, axes = plt.subplots(2, 4, figsize=(12, 6.5))
    axes[0, 0].imshow(noisy.clamp(0, 1))
    axes[0, 0].set_title("the input (noisy)")
    for x, y in queries:
        axes[0, 0].plot(y, x, "c+", ms=12, mew=2)
    for head, name in enumerate(["colour head", "position head"]):
        for col, (x, y) in enumerate(queries, start=1):
            a = alpha[head, x, y] / alpha[head, x, y].max()
            same = (image == image[x, y]).all(dim=-1)
            ax = axes[head, col]
            ax.imshow((0.35 * image + 0.65 * a[..., None]).clamp(0, 1))
            ax.plot(y, x, "c+", ms=12, mew=2)
            share = alpha[head, x, y][same].sum()
            ax.set_title(f"{name}, query ({x}, {y})\n{share:.0%} of the weight on its colour")
    for ax in axes.flat:
        ax.set_xlabel("y")
        ax.set_ylabel("x")
    axes[1, 0].axis("off")
    fig.suptitle(r"Attention maps $\alpha[h, x, y, \cdot, \cdot]$ of two hand-made heads")
    plt.tight_layout()
    plt.show()

# %% [markdown]
# The colour head sends a red pixel's attention to *both* red discs, far apart, and a grey
# pixel's to the whole background: attention is not local unless the weights make it so.
# The position head attends to a small neighbourhood, whatever the colour. Their outputs,
# computed by your `spatial_self_attention` (run the next cell yourself), are two ways of
# averaging the noisy colours: the colour head averages over pixels of the same colour (it
# removes the noise and keeps the edges sharp, like a non-local-means filter), the position
# head over neighbours (a blur, which smears the edges).

# %% tags=["answer-output"] mystnb={"figure": {"caption": "The noisy image averaged by each head, with its error against the clean image. Look at the edges of the discs: sharp after the colour head, blurred after the position head."}}
out = spatial_self_attention(features, WQ, WK, WV)  # [X, Y, 2*3]: head 0's colours, then head 1's
panels = [("the input (noisy)", noisy), ("colour head's output", out[..., :3]),
          ("position head's output", out[..., 3:])]
fig, axes = plt.subplots(1, 3, figsize=(13, 4.5))
for ax, (title, picture) in zip(axes, panels):
    rms = (picture - image).pow(2).mean().sqrt().item()
    ax.imshow(picture.clamp(0, 1))
    ax.set_title(f"{title}\nRMS error against the clean image {rms:.3f}")
    ax.set_xlabel("y")
    ax.set_ylabel("x")
plt.tight_layout()
plt.show()
rms = [(p - image).pow(2).mean().sqrt().item() for _, p in panels]
assert rms[1] < rms[0] and rms[1] < rms[2], rms

# %% [markdown]
# ## 2.6 Measure the depth
#
# The book's profiler (`attnlab.profiler.parallel_time`) runs a function on shapes only and
# returns the depth of its longest chain of operations under the logarithmic cost model. <!-- not a claim: a definition -->
# Below it measures *your* `spatial_self_attention` on square images from $2\times 2$ to
# $256\times 256$ ($J = 64$, $H = 4$, $K = I = 16$: nothing is allocated, so the size is
# free). Run the cell yourself once your layer passes its tests, and compare what it
# measures with your answer to Problem 2.3.

# %% tags=["answer-output"] mystnb={"figure": {"caption": "Measured depth of one spatial attention layer against the side $X = Y$ of the image, on a logarithmic axis. Read how much the depth rises each time the side doubles."}}
sides = [] if is_grading() else [2, 4, 8, 16, 32, 64, 128, 256]
J, H, K, I = 64, 4, 16, 16
depths = [parallel_time(spatial_self_attention, (n, n, J), (H, K, J), (H, K, J), (H, I, J),
                        model="log").depth
          for n in sides]


def depth_axes():
    """Measured depth of one spatial layer against the side of the image."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    ax.semilogx(sides, depths, "o", base=2, label="measured depth of spatial_self_attention")
    ax.set_xlabel("X = Y (pixels per side)")
    ax.set_ylabel("depth (log cost model)")
    ax.set_title(f"Depth of one spatial layer (J={J}, H={H}, K=I={K})")
    return ax


if sides:
    for n, d in zip(sides, depths):
        print(f"X = Y = {n:4d}: measured depth {d:3d}")
    depth_axes().legend()
    plt.show()

# %% tags=["solutions-only"]
# The worked solution's figure (Section 2.3), measured on the reference layer above.
if sides:
    assert all(b - a == 4 for a, b in zip(depths, depths[1:])), \
        f"the depth grows by 4 each time the side doubles: {depths}"  # claim: ch2-depth-doubling

# %% [markdown]
# Now your `SPATIAL_TIME_LAYER` over measurements of your layer in which each of $X$, $Y$, $J$
# and $K$ grows in turn from $X = Y = 8$, $J = 64$, $K = 16$ <!-- given --> while the others stay (a sweep of
# $X = Y$ together cannot tell $X$ from $Y$). Along each sweep your answer is scaled by a fitted
# factor plus a fitted constant (`attnlab.fits.fit`; the order ignores constant factors and
# added constants) <!-- not a claim: a definition -->, and it follows the points when it misses none by more than a
# tenth of their range <!-- not a claim: how the plot is read -->. If your answer has the right order, it follows every sweep <!-- claim: ch2-layer-follows -->;
# one of another order misses along the size it gets wrong <!-- claim: ch2-layer-misses -->. (This cell shows your own answer: run it
# yourself.)

# %% tags=["answer-output"] mystnb={"figure": {"caption": "Measured depth of one spatial layer as each of $X$, $Y$, $J$ and $K$ grows (points), with your `SPATIAL_TIME_LAYER` fitted as a factor plus a constant (lines). A right answer's line runs through the points of every panel."}}
from attnlab.fits import fit

# base sizes (H = 4 heads, I = J/H), then each size's values
LAYER_SWEEPS = ({"X": 8, "Y": 8, "J": 64, "K": 16},
                {"X": [2, 8, 32, 128, 512], "Y": [2, 8, 32, 128, 512], "J": [16, 64, 256, 1024],
                 "K": [2, 4, 16, 64]})
layer_sweeps = {} if is_grading() else {
    name: [(sizes,
            parallel_time(spatial_self_attention, (sizes["X"], sizes["Y"], sizes["J"]),
                          (H, sizes["K"], sizes["J"]),
                                 (H, sizes["K"], sizes["J"]), (H, sizes["J"] // H, sizes["J"]),
                                 model="log").depth)
           for sizes in ({**LAYER_SWEEPS[0], name: v} for v in values)]
    for name, values in LAYER_SWEEPS[1].items()}


def layer_fits(answer: object) -> dict[str, tuple[list[float], object]] | None:
    """Per size: the measured depths along its sweep and your answer fitted to them (None: not
    drawn)."""
    try:
        expr = parse_answer(answer, ["X", "Y", "H", "J", "K"], what="SPATIAL_TIME_LAYER")
    except Exception as exc:  # an unfinished answer: say why, draw nothing
        print(f"not drawn: {type(exc).__name__}: {exc}")
        return None
    out = {}
    for name, points in layer_sweeps.items():
        f = [float(expr.subs({s: {**sizes, "H": H}[s.name] for s in expr.free_symbols}))
             for sizes, _ in points]
        out[name] = ([d for _, d in points], fit([d for _, d in points], f))
    return out


if layer_sweeps and (drawn := layer_fits(SPATIAL_TIME_LAYER)):
    fig, axes = plt.subplots(2, 2, figsize=(8.5, 6.4))
    for ax, (name, (measured, line)) in zip(axes.flat, drawn.items()):
        xs = [sizes[name] for sizes, _ in layer_sweeps[name]]
        ax.semilogx(xs, measured, "o", base=2, label="measured")
        ax.semilogx(xs, line.curve, "-", base=2, label="your answer, fitted")
        ax.set_xlabel(f"{name} (the others at their base)")
        ax.set_title(f"{name} grows: " + ("follows" if line.follows else "does NOT follow"),
                     fontsize=9)
        print(f"SPATIAL_TIME_LAYER = {SPATIAL_TIME_LAYER!r} as {name} grows: "
              + ("follows" if line.follows else "does NOT follow")
              + f" (misses by {line.miss:.0%} of the range)")
    for ax in axes[:, 0]:
        ax.set_ylabel("depth (log cost model)")
    axes[0, 0].legend(fontsize=9)
    plt.tight_layout()
    plt.show()

# %% tags=["solutions-only"]
# The reference follows every sweep; answers of another order miss one (claim: the paragraph above).
if layer_sweeps:
    assert all(line.follows for _, line in layer_fits(SPATIAL_TIME_LAYER).values()), \
        "the reference follows"  # claim: ch2-layer-follows
    for wrong in ["X*Y + J + K", "log(X) + log(J) + log(K)", "log(X*Y)", "X + Y"]:
        assert not all(line.follows for _, line in layer_fits(wrong).values()), \
            f"{wrong} follows"  # claim: ch2-layer-misses
