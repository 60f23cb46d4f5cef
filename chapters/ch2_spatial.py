# %% [markdown]
# # Chapter 2. The spatial transformer
#
# A convolutional network runs over a sequence in one dimension and over an image in two.
# The same holds for self-attention: replace the position $t$ by a pixel $(x, y)$ and every
# pixel attends to every other pixel. This chapter writes that layer down, implements it,
# shows that it is exactly the one-dimensional layer of Chapter 1 run on the image's
# pixels listed in a row, draws what its heads look at on a small image, and counts its
# parallel running time.
#
# You will
#
# * implement `spatial_self_attention(h, WQ, WK, WV)`, with the softmax taken jointly over
#   all key pixels $(x', y')$;
# * give the parallel running time of one spatial layer and of $L$ layers as expressions
#   (`SPATIAL_TIME_LAYER`, `SPATIAL_TIME`).
#
# The problems restate seed 000 (TTIC 31230, Transformer problems, Problem 2) and seed 002
# (TTIC 31230 2020, Problem 5) in this book's notation.

# %% [markdown]
# ## Notation
#
# | book | meaning | seed 000 P2 | seed 002 P5 |
# |---|---|---|---|
# | $h[x, y, j]$, $x < X$, $y < Y$, $j < J$ | the feature map entering a layer | $M[\ell, x, y, j]$ (P1 with $t$ replaced by $x, y$) | $h_{\text{in}}[x, y, J]$ |
# | $(x', y')$ | a key pixel | | $(x_2, y_2)$, also $(x', y')$ |
# | $\ell < L$ | layer | $\ell$ | (one layer) |
# | $h < H$ | head | $h$ | $k$ |
# | $k < K$ | query/key coordinate | $k$ | $U$ (a dimension, $U < J$) |
# | $i < I$, $J = HI$ | value coordinate | $i$ | $I$, with $I = J/K$ ($K$ heads) |
# | $W^Q[h,k,j]$, $W^K[h,k,j]$, $W^V[h,i,j]$ | weights | $W^Q[\ell,h,k,j]$, ... | $W^Q[k,U,J]$, $W^K[k,U,J]$, $W^V[k,I,J]$ |
# | $\alpha[h,x,y,x',y']$ | attention | | $\alpha[k,x_1,y_1,x_2,y_2]$ |
#
# As in Chapter 1: seed 002 writes $k$ for the head and $U$ for the query/key dimension;
# this book writes $h$ for the head and $k < K$ for the query/key index. (The name $h$ of
# the feature map and the head index $h$ never appear in the same place.)
#
# **Errata.**
#
# * Seed 002 P5a asks to "rewrite the equations from problem 1", but in seed 002 the
#   self-attention equations are those of Problem 4 (its Problem 1 is blank language
#   modelling); the wording was copied from seed 000, where they are Problem 1.
# * Seed 002 writes the scores without the factor $1/\sqrt{K}$ (its $1/\sqrt{U}$); this
#   book always scales by $1/\sqrt{K}$. It changes no running time.
# * Seed 002 P5b answers $O(\ln XY + \ln J)$: it drops the cost $\ln U$ of the scores'
#   inner products because $U < J$ makes it a lower-order term. Here $K$ is a variable of
#   its own (nothing ties it to $J$ in the question), so the answer keeps $\log K$.
# * Seed 000 P2b asks for the whole $L$-layer network in $L, X, Y, H, J, K$; seed 002 P5b
#   for one layer in $X, Y, J$ and the head count. The book asks for both.
# * The seeds number heads from 1; Python and this book from 0.

# %%
import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from attnlab.grading import is_grading
from attnlab.profiler import parallel_time
from attnlab.symbolic import parse_answer
from attnlab.testing import expect_answer, expect_close, expect_like, expect_shape

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print("active device:", device)


# %% [markdown]
# ## 2.1 Self-attention over an image
#
# Replace the position $t$ of Chapter 1 by the pixel $(x, y)$. Every pixel's feature vector
# $h[x, y, :]$ is projected to a query, a key and a value per head; every query pixel
# compares itself with every key pixel $(x', y')$, and one softmax over **all** key pixels
# together turns the scores into weights:
#
# $$
# \begin{aligned}
# \text{Query}[h,x,y,k] &= \sum_j W^Q[h,k,j]\, h[x,y,j] \\
# \text{Key}[h,x,y,k] &= \sum_j W^K[h,k,j]\, h[x,y,j] \\
# \text{Value}[h,x,y,i] &= \sum_j W^V[h,i,j]\, h[x,y,j] \\
# s[h,x,y,x',y'] &= \frac{1}{\sqrt{K}} \sum_k \text{Query}[h,x,y,k]\, \text{Key}[h,x',y',k] \\
# \alpha[h,x,y,x',y'] &= \operatorname*{softmax}_{x',y'}\; s[h,x,y,x',y']
#   = \frac{e^{s[h,x,y,x',y']}}{\sum_{x'',y''} e^{s[h,x,y,x'',y'']}} \\
# \text{Out}[h,x,y,i] &= \sum_{x',y'} \alpha[h,x,y,x',y']\, \text{Value}[h,x',y',i] \\
# h_{\text{out}}[x,y,:] &= \text{Out}[0,x,y,:];\ \text{Out}[1,x,y,:];\ \dots;\ \text{Out}[H-1,x,y,:]
# \end{aligned}
# $$
#
# For each query pixel and head, $\alpha[h,x,y,\cdot,\cdot]$ is an $X\times Y$ map of weights
# that sums to one over the whole image. With $L$ layers, $h_{\ell+1} = h_{\text{out}}$ of
# layer $\ell$, and $J = HI$ keeps the shape.
#
# **Problem 2.1.** Implement `spatial_self_attention`. Keep the inputs' device and dtype.

# %% nbgrader={"grade": false, "grade_id": "spatial_self_attention", "locked": false, "schema_version": 3, "solution": true}
def spatial_self_attention(h: torch.Tensor, WQ: torch.Tensor, WK: torch.Tensor, WV: torch.Tensor) -> torch.Tensor:
    """One spatial self-attention layer.

    h[X, Y, J], WQ[H, K, J], WK[H, K, J], WV[H, I, J] -> [X, Y, H*I], heads concatenated
    (head 0 first); scores scaled by 1/sqrt(K); softmax jointly over the key pixels (x', y').
    """
    ### BEGIN SOLUTION
    X, Y, _ = h.shape
    H, K, _ = WQ.shape
    Query = torch.einsum("hkj,xyj->hxyk", WQ, h)
    Key = torch.einsum("hkj,xyj->hxyk", WK, h)
    Value = torch.einsum("hij,xyj->hxyi", WV, h)
    s = torch.einsum("hxyk,habk->hxyab", Query, Key) / math.sqrt(K)
    alpha = torch.softmax(s.reshape(H, X, Y, X * Y), dim=-1).reshape(H, X, Y, X, Y)
    Out = torch.einsum("hxyab,habi->hxyi", alpha, Value)
    return Out.permute(1, 2, 0, 3).reshape(X, Y, -1)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_spatial_self_attention", "locked": true, "points": 4, "schema_version": 3, "solution": false}
# Visible tests: each failure says what is wrong.
g = torch.Generator().manual_seed(0)
X, Y, J, Hh, K, I = 3, 4, 8, 2, 3, 4
h = torch.randn(X, Y, J, generator=g, dtype=torch.float64)
WQ = torch.randn(Hh, K, J, generator=g, dtype=torch.float64) / J**0.5
WK = torch.randn(Hh, K, J, generator=g, dtype=torch.float64) / J**0.5
WV = torch.randn(Hh, I, J, generator=g, dtype=torch.float64) / J**0.5
out = spatial_self_attention(h, WQ, WK, WV)
expect_shape(out, (X, Y, Hh * I), "spatial_self_attention(h[3,4,8], WQ[2,3,8], WK[2,3,8], WV[2,4,8])",
             hint="The output keeps the grid [X, Y] and has H*I channels.")
expect_like(out, h, "spatial_self_attention on float64 inputs")
expect_like(spatial_self_attention(h.float(), WQ.float(), WK.float(), WV.float()), h.float(),
            "spatial_self_attention on float32 inputs")

# A single pixel attends to itself with weight 1: the output is its Value, heads concatenated.
one = h[:1, :1]
expect_close(spatial_self_attention(one, WQ, WK, WV), torch.einsum("hij,j->hi", WV, one[0, 0]).reshape(1, 1, -1),
             "spatial_self_attention on a 1 x 1 image",
             hint="With one pixel every weight is 1: the output is W^V[h] h[0,0] for each head, concatenated.")

# Heads are concatenated in order, head 0 first.
for hd in range(Hh):
    expect_close(out[..., hd * I:(hd + 1) * I], spatial_self_attention(h, WQ[hd:hd + 1], WK[hd:hd + 1], WV[hd:hd + 1]),
                 f"channels {hd * I}..{(hd + 1) * I - 1} of the output",
                 hint=f"These channels must be head {hd} alone: permute Out[H,X,Y,I] to [X,Y,H,I] before reshaping.")

# Transposing the image (swapping x and y) transposes the output.
expect_close(spatial_self_attention(h.transpose(0, 1), WQ, WK, WV), out.transpose(0, 1),
             "spatial_self_attention of the transposed image",
             hint="Some reshape mixes up x and y: keep the order [X, Y] whenever you flatten or unflatten the grid.")

# The joint softmax over (x', y') is 1-D attention over the X*Y pixels listed in a row;
# PyTorch's fused attention computes that (scaled by 1/sqrt(K), softmax over the keys).
flat = h.reshape(X * Y, J)
Query, Key, Value = (torch.einsum("hkj,tj->htk", W, flat) for W in (WQ, WK, WV))
flat_out = F.scaled_dot_product_attention(Query, Key, Value).permute(1, 0, 2).reshape(X, Y, Hh * I)
expect_close(out, flat_out, "spatial_self_attention against 1-D attention over the flattened grid",
             hint="Take ONE softmax over all X*Y key pixels (x', y') together, not a softmax over x' and another "
                  "over y'; and scale the scores by 1/sqrt(K).")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch2.spatial_self_attention", spatial_self_attention)
### END HIDDEN TESTS

# %% [markdown]
# ## 2.2 An image is a sequence of $XY$ pixels
#
# The softmax runs over the pair $(x', y')$, that is over a set of $XY$ key pixels; the
# grid structure plays no part in the layer. List the pixels in a row, $t = xY + y$
# (`h.reshape(X*Y, J)`), and the equations of 2.1 become those of Chapter 1 with
# $T = XY$, letter for letter. So the spatial layer is the 1-D layer applied to the
# flattened image, and the output unflattens back to $[X, Y, HI]$. Below, the 1-D layer is
# PyTorch's fused `scaled_dot_product_attention`.
#
# Normalising over $x'$ separately in each column $y'$ of the image (and dividing by $Y$ so
# that the weights still sum to one) is *not* the same thing: it gives every column the
# same total weight $1/Y$, however well or badly its pixels match the query. The last lines
# show how far that is from the joint softmax, whose column totals vary.

# %%
def attention_1d(M: torch.Tensor, WQ: torch.Tensor, WK: torch.Tensor, WV: torch.Tensor) -> torch.Tensor:
    """Chapter 1's layer through PyTorch's fused attention: M[T, J] -> [T, H*I]."""
    Query, Key, Value = (torch.einsum("hkj,tj->htk", W, M) for W in (WQ, WK, WV))
    return F.scaled_dot_product_attention(Query, Key, Value).permute(1, 0, 2).reshape(M.shape[0], -1)


g = torch.Generator().manual_seed(1)
X, Y, Hh, K, I = 6, 5, 4, 8, 4
J = Hh * I
h = torch.randn(X, Y, J, generator=g, dtype=torch.float64)
WQ, WK, WV = (torch.randn(Hh, d, J, generator=g, dtype=torch.float64) / J**0.5 for d in (K, K, I))

spatial = spatial_self_attention(h, WQ, WK, WV)
flattened = attention_1d(h.reshape(X * Y, J), WQ, WK, WV).reshape(X, Y, Hh * I)
diff = (spatial - flattened).abs().max().item()
print(f"max |spatial_self_attention(h) - attention_1d(h.reshape(X*Y, J)).reshape(X, Y, -1)| = {diff:.1e}")
assert diff < 1e-12

# The per-axis alternative: softmax over x' in each column y' separately, each column weighted 1/Y.
Query, Key, Value = (torch.einsum("hkj,xyj->hxyk", W, h) for W in (WQ, WK, WV))
s = torch.einsum("hxyk,habk->hxyab", Query, Key) / math.sqrt(K)
joint = torch.softmax(s.reshape(Hh, X, Y, X * Y), dim=-1).reshape(s.shape)
per_axis = torch.softmax(s, dim=3) / Y  # every column y' gets total weight 1/Y
print(f"largest weight difference, joint vs per-axis softmax: {(joint - per_axis).abs().max().item():.3f}")
print("column totals of the joint weights for query pixel (0, 0), head 0:",
      [round(v, 3) for v in joint[0, 0, 0].sum(dim=0).tolist()])

# %% [markdown]
# ## 2.3 What the heads look at
#
# A small synthetic image: four discs (two red, one green, one blue) on a grey background,
# $32\times 32$ pixels, with a little noise. Every pixel's feature vector is its colour
# (3 numbers, all colours of unit length) followed by a positional encoding
# ($\cos$ and $\sin$ of $f\pi x/X$ and of $f\pi y/Y$ for $f = 1, \dots, 4$: 16 numbers),
# so $J = 19$. We choose the weights by hand, two heads with $K = 16$:
#
# * head 0, the **colour head**: $W^Q[0] = W^K[0]$ keep the colour and drop the position,
#   scaled so that $s = \beta\, c \cdot c'$ with $\beta = 10$. For unit-length colours the dot
#   product is largest for the same colour, so a pixel attends to pixels of its own colour,
#   wherever they are;
# * head 1, the **position head**: $W^Q[1] = W^K[1]$ keep the position only, $s = \gamma\,
#   p \cdot p'$ with $\gamma = 2$; $p \cdot p' = \sum_f \cos(f\pi(x-x')/X) + \cos(f\pi(y-y')/Y)$
#   peaks at $(x', y') = (x, y)$, so a pixel attends to its neighbourhood.
#
# Both heads' values copy the colour ($W^V[h] = [\,I_3 \mid 0\,]$), so each head's output is
# a re-weighted average of colours. The attention maps below are
# $\alpha[h, x, y, \cdot, \cdot]$ for three query pixels (the cross), drawn as light over
# the dimmed image.

# %%
X = Y = 32
g = torch.Generator().manual_seed(2)
grey = torch.full((3,), 3 ** -0.5)  # unit length, like the pure colours
COLOURS = {"red": torch.tensor([1.0, 0.0, 0.0]), "green": torch.tensor([0.0, 1.0, 0.0]),
           "blue": torch.tensor([0.0, 0.0, 1.0])}
image = grey.expand(X, Y, 3).clone()
xs, ys = torch.arange(X)[:, None].float(), torch.arange(Y)[None, :].float()
for colour, cx, cy, radius in [("red", 8, 8, 5), ("green", 22, 10, 6), ("blue", 12, 23, 5), ("red", 24, 25, 4)]:
    image[(xs - cx) ** 2 + (ys - cy) ** 2 <= radius ** 2] = COLOURS[colour]
noisy = image + 0.08 * torch.randn(X, Y, 3, generator=g)


def positional_encoding(X: int, Y: int, freqs: tuple[int, ...] = (1, 2, 3, 4)) -> torch.Tensor:
    """[X, Y, 4*len(freqs)]: cos and sin of f*pi*x/X, then of f*pi*y/Y."""
    x = torch.arange(X).float()[:, None].expand(X, Y) * math.pi / X
    y = torch.arange(Y).float()[None, :].expand(X, Y) * math.pi / Y
    parts = [fn(f * u) for u in (x, y) for f in freqs for fn in (torch.cos, torch.sin)]
    return torch.stack(parts, dim=-1)


pos = positional_encoding(X, Y)
P = pos.shape[-1]
features = torch.cat([noisy, pos], dim=-1)  # h[x, y, :] = colour ; position
J, K, Hh = 3 + P, P, 2
beta, gamma = 10.0, 2.0
WQ = torch.zeros(Hh, K, J)
WQ[0, :3, :3] = math.sqrt(beta * math.sqrt(K)) * torch.eye(3)   # s = beta * colour . colour'
WQ[1, :, 3:] = math.sqrt(gamma * math.sqrt(K)) * torch.eye(P)   # s = gamma * position . position'
WK = WQ.clone()
WV = torch.zeros(Hh, 3, J)
WV[:, :, :3] = torch.eye(3)  # both heads average colours


def attention_maps(h: torch.Tensor, WQ: torch.Tensor, WK: torch.Tensor) -> torch.Tensor:
    """alpha[H, X, Y, X, Y] of a spatial layer, through the flattened grid (Section 2.2)."""
    X, Y, J = h.shape
    flat = h.reshape(X * Y, J)
    Query, Key = torch.einsum("hkj,tj->htk", WQ, flat), torch.einsum("hkj,tj->htk", WK, flat)
    alpha = torch.softmax(Query @ Key.transpose(1, 2) / math.sqrt(WQ.shape[1]), dim=-1)
    return alpha.reshape(-1, X, Y, X, Y)


alpha = attention_maps(features, WQ, WK)
queries = [(8, 8), (20, 20), (24, 25)]
fig, axes = plt.subplots(2, 4, figsize=(15, 7.5))
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
        ax.set_title(f"{name}, query ({x}, {y})\n{alpha[head, x, y][same].sum():.0%} of the weight on its colour")
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
# computed by your `spatial_self_attention`, are two ways of averaging the noisy colours:
# the colour head averages over pixels of the same colour (it removes the noise and keeps
# the edges sharp, like a non-local-means filter), the position head over neighbours (a
# blur, which smears the edges).

# %%
out = spatial_self_attention(features, WQ, WK, WV)  # [X, Y, 2*3]: head 0's colours, then head 1's
panels = [("the input (noisy)", noisy), ("colour head's output", out[..., :3]), ("position head's output", out[..., 3:])]
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
# ## 2.4 Parallel running time
#
# Use the cost model of Chapter 1: an ideal parallel machine on which a sum over $N$ terms
# takes $O(\log N)$ time and every other operation, once its inputs exist, takes $O(1)$.
#
# **Problem 2.2 (seed 002 P5b).** Give the order of the parallel running time of *one*
# spatial self-attention layer as a function of $X, Y, H, J, K$ in `SPATIAL_TIME_LAYER`
# (a string such as `"log(X) + J"`; any expression of the same order is accepted).

# %% nbgrader={"grade": false, "grade_id": "spatial_time_layer", "locked": false, "schema_version": 3, "solution": true}
# An expression in X, Y, H, J, K, as a string.
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
# **Problem 2.3 (seed 000 P2b).** Now the spatial transformer: $L$ such layers, one after
# another. Give the order of its parallel running time as a function of $L, X, Y, H, J, K$
# in `SPATIAL_TIME`.

# %% nbgrader={"grade": false, "grade_id": "spatial_time", "locked": false, "schema_version": 3, "solution": true}
# An expression in L, X, Y, H, J, K, as a string.
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
# Inside one layer, everything is parallel over $h$, the query pixel $(x, y)$, the key
# pixel $(x', y')$ and the output coordinates; the chain of dependent steps is:
#
# * the projections, a sum over $j$: $O(\log J)$;
# * the scores, a sum over $k$: $O(\log K)$ (and $O(1)$ for the scaling);
# * the softmax's normaliser, a sum over the $XY$ key pixels: $O(\log XY) = O(\log X + \log Y)$,
#   plus $O(1)$ for the exponentials and the division;
# * the weighted average, again a sum over $XY$ pixels: $O(\log X + \log Y)$;
# * the concatenation of heads: $O(1)$. $H$ does not appear: the heads run side by side.
#
# One layer: $O(\log X + \log Y + \log J + \log K)$. The layers are sequential, so $L$ of
# them take $O\big(L(\log X + \log Y + \log J + \log K)\big)$. Seed 002's $O(\ln XY + \ln J)$
# is the same when $K \le J$, since then $\log K \le \log J$; with $K$ free, $\log K$ stays.
# With serial sums (seed 000 P1a's model) the layer would take $O(J + K + XY)$: linear in
# the number of pixels.

# %% [markdown]
# ## 2.5 Measure the depth
#
# The book's profiler (`attnlab.profiler.parallel_time`) runs a function on shapes only and
# returns the depth of its longest chain of operations under the logarithmic cost model.
# Below it measures *your* `spatial_self_attention` on square images from $2\times 2$ to
# $256\times 256$ ($J = 64$, $H = 4$, $K = I = 16$: nothing is allocated, so the size is
# free), and overlays your `SPATIAL_TIME_LAYER` evaluated at the same sizes, fitted as
# $a \cdot f(X, Y) + b$ (the order ignores constant factors and added constants). If your
# answer has the right order, the two curves coincide.

# %%
sides = [] if is_grading() else [2, 4, 8, 16, 32, 64, 128, 256]
J, Hh, K, I = 64, 4, 16, 16
if sides:
    try:
        depths = [parallel_time(spatial_self_attention, (n, n, J), (Hh, K, J), (Hh, K, J), (Hh, I, J),
                                model="log").depth for n in sides]
        expr = parse_answer(SPATIAL_TIME_LAYER, ["X", "Y", "H", "J", "K"], what="SPATIAL_TIME_LAYER")
    except Exception as exc:  # an unfinished function or answer: skip the plot, say why
        print(f"Depth plot skipped: {type(exc).__name__}: {exc}")
        sides = []
if sides:
    sizes = {"H": Hh, "J": J, "K": K}
    f = [float(expr.subs({s: sizes.get(s.name, n) for s in expr.free_symbols})) for n in sides]
    A = torch.tensor([[fi, 1.0] for fi in f], dtype=torch.float64)
    a, b = torch.linalg.lstsq(A, torch.tensor(depths, dtype=torch.float64)[:, None]).solution.flatten().tolist()
    fitted = [a * fi + b for fi in f]
    for n, d, fit in zip(sides, depths, fitted):
        print(f"X = Y = {n:4d}: measured depth {d:3d}, your answer fitted {fit:6.1f}")
    fig, ax = plt.subplots(figsize=(6.5, 4))
    ax.semilogx(sides, depths, "o", base=2, label="measured depth of spatial_self_attention")
    ax.semilogx(sides, fitted, "-", base=2, label=f"{a:.2f} * SPATIAL_TIME_LAYER {b:+.1f}")
    ax.set_xlabel("X = Y (pixels per side)")
    ax.set_ylabel("depth (log cost model)")
    ax.set_title(f"Depth of one spatial layer (J={J}, H={Hh}, K=I={K})")
    ax.legend()
    plt.show()

# %% [markdown]
# Each doubling of the side adds a fixed number of steps (4 for the reference
# implementation: the softmax's sum and the weighted average each reduce over $XY$ pixels,
# and $\log_2 XY$ grows by 2): the depth is logarithmic in the number of pixels, while the
# work grows like $(XY)^2$.
