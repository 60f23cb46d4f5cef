# %% [markdown]
# # Chapter 1. Parallel time of the Transformer
#
# A recurrent network must walk through a sentence one word after another. A Transformer
# layer looks at every position at once. This chapter makes that statement exact: we write
# one self-attention layer as tensor equations, implement it, and then count its
# **parallel running time** — the length of the longest chain of operations that must
# happen one after another when every independent operation runs at the same time.
#
# You will
#
# * implement `self_attention(M, WQ, WK, WV)` and `transformer(M, layers)` in PyTorch,
#   working on whatever device and dtype the inputs have;
# * derive the parallel running time of an $L$-layer Transformer when sums are serial and
#   when they take logarithmic time, and give your answers as expressions such as
#   `"L*(T + J)"`;
# * measure one layer's wall-clock time against the sequence length $T$ and check it
#   against PyTorch's fused `scaled_dot_product_attention`.
#
# The problems restate seed 000 (TTIC 31230, Transformer problems, Problem 1) and seed 002
# (TTIC 31230 2020, Problem 4) in this book's notation.

# %% [markdown]
# ## Notation
#
# | book | meaning | seed 000 P1 | seed 002 P4 |
# |---|---|---|---|
# | $M[t, j]$, $t < T$, $j < J$ | the sequence of vectors entering a layer | $M[\ell, t, j]$ | $h_{\text{in}}[t, J]$ |
# | $\ell < L$ | layer | $\ell$ | (one layer) |
# | $h < H$ | head | $h$ | $k$ |
# | $k < K$ | query/key coordinate | $k$ | $U$ (a dimension, $U < J$) |
# | $i < I$, $J = H I$ | value coordinate | $i$ | $I$, with $I = J/K$ ($K$ heads) |
# | $W^Q[h,k,j]$, $W^K[h,k,j]$ | query and key weights | $W^Q[\ell,h,k,j]$, $W^K[\ell,h,k,j]$ | $W^Q[k,U,J]$, $W^K[k,U,J]$ |
# | $W^V[h,i,j]$ | value weights | $W^V[\ell,h,i,j]$ | $W^V[k,I,J]$ |
# | $s[h,t,t']$, $\alpha[h,t,t']$ | scores and attention | same | (scores unnamed), $\alpha[k,t_1,t_2]$ |
#
# Careful: seed 002 uses $k$ for heads and $U$ for the query/key dimension; this book uses
# $h$ for heads and $k < K$ for the query/key index throughout.
#
# **Errata.** Seed 002 P4 writes the scores without the factor $1/\sqrt{K}$ that seed 000
# (and the original Transformer) uses; this book always scales by $1/\sqrt{K}$ (it changes
# no running time). Seed 000 numbers heads from 1; Python and this book number them from 0.

# %%
import math
import time

import matplotlib.pyplot as plt
import torch

from attnlab.grading import is_grading
from attnlab.testing import expect_answer, expect_close, expect_like, expect_shape

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
# \alpha[h,t,t'] &= \operatorname*{softmax}_{t'}\; s[h,t,t'] = \frac{e^{s[h,t,t']}}{\sum_{t''} e^{s[h,t,t'']}} \\
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
# letters of the equations is the most direct route.

# %% nbgrader={"grade": false, "grade_id": "self_attention", "locked": false, "schema_version": 3, "solution": true}
def self_attention(M: torch.Tensor, WQ: torch.Tensor, WK: torch.Tensor, WV: torch.Tensor) -> torch.Tensor:
    """One multi-head self-attention layer.

    M[T, J], WQ[H, K, J], WK[H, K, J], WV[H, I, J] -> [T, H*I],
    heads concatenated in order (head 0 first); scores scaled by 1/sqrt(K).
    """
    ### BEGIN SOLUTION
    K = WQ.shape[1]
    Query = torch.einsum("hkj,tj->htk", WQ, M)
    Key = torch.einsum("hkj,tj->htk", WK, M)
    Value = torch.einsum("hij,tj->hti", WV, M)
    s = torch.einsum("htk,hsk->hts", Query, Key) / math.sqrt(K)
    alpha = torch.softmax(s, dim=-1)
    V = torch.einsum("hts,hsi->hti", alpha, Value)
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
expect_shape(self_attention(M, WQ, WK, WV3), (T, H * 3), "self_attention with WV[2,3,8]",
             hint="The output has H*I columns (here 6), not J: reshape to (T, H*I).")

# By hand: WQ = WK = 1 (H=1, K=4, J=1), WV = 1, M = [[1], [0]].
# s[0,0] = 4/sqrt(4) = 2 and every other score is 0, so
# out[0] = e^2 / (e^2 + 1) = 0.8808 and out[1] = 1/2.
ones = torch.ones(1, 4, 1, dtype=torch.float64)
M1 = torch.tensor([[1.0], [0.0]], dtype=torch.float64)
expected = torch.tensor([[math.exp(2) / (math.exp(2) + 1)], [0.5]], dtype=torch.float64)
expect_close(self_attention(M1, ones, ones, torch.ones(1, 1, 1, dtype=torch.float64)), expected,
             "self_attention on the hand-checked example",
             hint="Scale the scores by 1/sqrt(K) (without it out[0] would be e^4/(e^4+1) = 0.982), "
                  "and take the softmax over t', the key position.")

# Attention has no notion of order: permuting the rows of M permutes the output rows.
perm = torch.tensor([3, 0, 4, 1, 2])
expect_close(self_attention(M[perm], WQ, WK, WV), out[perm], "self_attention(M[perm])",
             hint="self_attention(M[perm]) must equal self_attention(M)[perm]; check that the softmax "
                  "runs over t' and that the values are summed over t'.")

# Heads are concatenated in order, head 0 first.
for h in range(H):
    expect_close(out[:, h * I:(h + 1) * I], self_attention(M, WQ[h:h + 1], WK[h:h + 1], WV[h:h + 1]),
                 f"columns {h * I}..{(h + 1) * I - 1} of the output",
                 hint=f"These columns must be head {h} alone: concatenate V[0,t,:]; V[1,t,:]; ... "
                      "(permute to [T, H, I] before reshaping, not [H, I, T]).")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch1.self_attention", self_attention)
### END HIDDEN TESTS

# %% [markdown]
# ## 1.2 Stacking layers
#
# The Transformer of seed 000 is a stack of $L$ such layers,
# $M_{\ell+1} = \text{self\_attention}(M_\ell, W^Q_\ell, W^K_\ell, W^V_\ell)$ for $\ell < L$,
# with $J = HI$ in every layer. (A production Transformer adds residual connections, layer
# normalisation and a feed-forward block; none of them changes the parallel time by more
# than a constant per layer, so the seeds leave them out and so do we.)
#
# **Problem 1.2.** Implement `transformer(M, layers)`, where `layers` is a list of
# `(WQ, WK, WV)` triples. Zero layers return `M` unchanged.

# %% nbgrader={"grade": false, "grade_id": "transformer", "locked": false, "schema_version": 3, "solution": true}
def transformer(M: torch.Tensor, layers: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """M[T, J] -> M after len(layers) self-attention layers; layers = [(WQ, WK, WV), ...] with J = H*I."""
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
expect_close(transformer(M, []), M, "transformer(M, [])", hint="With no layers, return M unchanged.")
expect_close(transformer(M, layers[:1]), self_attention(M, *layers[0]), "transformer with one layer")
expected = self_attention(self_attention(self_attention(M, *layers[0]), *layers[1]), *layers[2])
expect_close(transformer(M, layers), expected, "transformer with three layers",
             hint="Each layer must take the previous layer's output as its input, in order.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch1.transformer", transformer)
### END HIDDEN TESTS

# %% [markdown]
# ## 1.3 Parallel running time
#
# Assume an ideal parallel machine: any number of independent scalar operations run at
# once, and an operation can start as soon as its inputs exist. The **parallel running
# time** (the *depth*) of a computation is then the length of its longest chain of
# dependent operations. Constant factors do not matter: answer with the order, as an
# expression in the named sizes (write `"L*(T + J)"`, `"O(L T^2)"` or `"L(\log T)"`; any
# expression of the same order is accepted, constants and lower-order terms are ignored).
#
# The layers must run one after another, so the Transformer's time is $L$ times the time of
# one layer. Inside a layer, the only operations that are not trivially parallel are the
# sums: the projections sum over $j$, the scores over $k$, the softmax's normaliser
# $Z[h,t] = \sum_{t'} e^{s[h,t,t']}$ over $t'$, and the weighted average over $t'$.
#
# **Problem 1.3 (seed 000 P1a).** Assume every summation over $N$ terms is done serially
# (time $N$) while everything else is maximally parallel. Give the order of the parallel
# running time of an $L$-layer Transformer as a function of $L, T, H, J, K$ in
# `PARALLEL_TIME_SERIAL`.

# %% nbgrader={"grade": false, "grade_id": "parallel_time_serial", "locked": false, "schema_version": 3, "solution": true}
# An expression in L, T, H, J, K, as a string, e.g. "L*(T + J)".
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
# **Problem 1.4 (seed 000 P1b).** A sum over $N$ terms can be done in parallel in
# $O(\log N)$ time, by adding pairs, then pairs of pairs, and so on. Repeat Problem 1.3
# assuming every summation takes logarithmic time: `PARALLEL_TIME_LOG`, in $L, T, H, J, K$.

# %% nbgrader={"grade": false, "grade_id": "parallel_time_log", "locked": false, "schema_version": 3, "solution": true}
# An expression in L, T, H, J, K, e.g. "L*log(T)".
### BEGIN SOLUTION
PARALLEL_TIME_LOG = "L*(log(J) + log(K) + log(T))"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_parallel_time_log", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(PARALLEL_TIME_LOG, ["L", "T", "H", "J", "K"], "PARALLEL_TIME_LOG")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch1.PARALLEL_TIME_LOG", PARALLEL_TIME_LOG)
### END HIDDEN TESTS

# %% [markdown]
# **Problem 1.5 (seed 002 P4a).** Fix a head $h$ and a query position $t$. First the
# scores $s[h,t,t']$ are computed for every $t'$, then the normaliser $Z$ and the
# attention weights. With logarithmic-time sums, what is the parallel time of this softmax
# (scores included) as a function of $T$ and $K$? Answer in `SOFTMAX_TIME`.
#
# In practice a GPU computes each inner product of length $K$ serially inside one thread,
# while the sum over $t'$ is still a parallel reduction. Under that assumption (inner
# products serial, the sum for $Z$ logarithmic), answer again in `SOFTMAX_TIME_PRACTICE`.

# %% nbgrader={"grade": false, "grade_id": "softmax_time", "locked": false, "schema_version": 3, "solution": true}
# Expressions in T and K.
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
# **Problem 1.6 (seed 002 P4b).** Now the whole layer, in the "practice" model: inner
# products (the sums over $j$ and over $k$) are serial, the sums over positions $t'$ are
# logarithmic. Since $K \le J$ and $I \le J$, express the order of one layer's parallel
# time in $T$ and $J$ only: `LAYER_TIME_PRACTICE`.

# %% nbgrader={"grade": false, "grade_id": "layer_time_practice", "locked": false, "schema_version": 3, "solution": true}
# An expression in T and J.
### BEGIN SOLUTION
LAYER_TIME_PRACTICE = "J + log(T)"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_layer_time_practice", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(LAYER_TIME_PRACTICE, ["T", "J"], "LAYER_TIME_PRACTICE")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch1.LAYER_TIME_PRACTICE", LAYER_TIME_PRACTICE)
### END HIDDEN TESTS

# %% [markdown] tags=["solutions-only"]
# ### Worked solution
#
# *Serial sums.* Layers are sequential, so the time is $L$ times one layer. In a layer,
# the three projections run in parallel over $h, t, k, i$ and each sums over $j$: time
# $O(J)$. The scores run in parallel over $h, t, t'$ and sum over $k$: $O(K)$. The softmax
# is parallel over $h, t$ but its normaliser sums over $t'$: $O(T)$. The weighted average
# is parallel over $h, t, i$ and sums over $t'$: $O(T)$. Concatenation moves no data that
# anything waits on: $O(1)$. In all, $O(L(J + K + T))$.
#
# *Logarithmic sums.* Replace every sum over $N$ terms by $\lceil \log_2 N\rceil$:
# $O(L(\log J + \log K + \log T))$. The Transformer's depth grows only logarithmically in
# the sequence length, against $O(T)$ for an RNN that must walk through the positions.
#
# *One softmax (seed 002 P4a).* Scores: an inner product of length $K$, $O(\log K)$; then
# $Z$, a sum over $T$ terms, $O(\log T)$: in all $O(\log T + \log K)$. With serial inner
# products, $O(K + \log T)$.
#
# *One layer in practice (seed 002 P4b).* $O(J)$ for the projections, $O(K)$ for the
# scores, $O(\log T)$ for $Z$ and the average: $O(J + K + \log T) = O(J + \log T)$ as
# $K \le J$.

# %% [markdown]
# ## 1.4 Measure it
#
# Depth is what an ideal machine with unlimited processors would see. A real device has a
# fixed number $P$ of processors, and Brent's bound says that a computation of total work
# $W$ and depth $D$ runs in time at most $W/P + D$. One layer does $W = \Theta(T^2 K H + T J (2K + I) H)$
# work, so on a CPU with a few cores the $W/P$ term dominates and the wall-clock grows like
# $T^2$; on a GPU the $T^2$ growth only appears once $T^2 H$ exceeds the number of cores.
#
# First a correctness check against PyTorch's fused attention: `scaled_dot_product_attention`
# takes per-head queries, keys and values $[H, T, \cdot]$ and returns $V[H, T, I]$.

# %%
import torch.nn.functional as F

g = torch.Generator().manual_seed(2)
T, H, K, I = 128, 4, 16, 16
J = H * I
M = torch.randn(T, J, generator=g, dtype=torch.float64).to(device)
WQ, WK, WV = (torch.randn(H, d, J, generator=g, dtype=torch.float64).to(device) / J**0.5 for d in (K, K, I))
Query, Key, Value = (torch.einsum("hkj,tj->htk", W, M) for W in (WQ, WK, WV))
fused = F.scaled_dot_product_attention(Query, Key, Value)  # [H, T, I], scaled by 1/sqrt(K)
ours = self_attention(M, WQ, WK, WV)
err = (ours - fused.permute(1, 0, 2).reshape(T, H * I)).abs().max().item()
print(f"max |self_attention - scaled_dot_product_attention| = {err:.2e}")
assert err < 1e-10


# %% [markdown]
# Now the wall-clock of one layer against $T$ on the active device ($J = 256$, $H = 4$,
# $K = I = 64$, float32), ours against the fused kernel, best of five runs.

# %%
def wall_clock(fn, *args, repeats: int = 5) -> float:
    """Best-of-`repeats` seconds of fn(*args), after one warm-up (the best run is the least disturbed)."""
    fn(*args)
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn(*args)
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return min(times)


def fused_layer(M, WQ, WK, WV):
    """The same layer through scaled_dot_product_attention."""
    Query, Key, Value = (torch.einsum("hkj,tj->htk", W, M) for W in (WQ, WK, WV))
    V = F.scaled_dot_product_attention(Query, Key, Value)
    return V.permute(1, 0, 2).reshape(M.shape[0], -1)


H, K, I = 4, 64, 64
J = H * I
Ts = [] if is_grading() else [64, 128, 256, 512, 1024]
Ts += [2048, 4096] if Ts and device.type == "cuda" else []
g = torch.Generator().manual_seed(3)
WQ, WK, WV = (torch.randn(H, d, J, generator=g).to(device) / J**0.5 for d in (K, K, I))
ours_s, fused_s = [], []
with torch.no_grad():
    for T in Ts:
        M = torch.randn(T, J, generator=g).to(device)
        ours_s.append(wall_clock(self_attention, M, WQ, WK, WV))
        fused_s.append(wall_clock(fused_layer, M, WQ, WK, WV))
for T, a, b in zip(Ts, ours_s, fused_s):
    print(f"T = {T:5d}: self_attention {a * 1e3:8.2f} ms   fused {b * 1e3:8.2f} ms")

# %%
if Ts:
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog(Ts, ours_s, "o-", label="self_attention (einsum)")
    ax.loglog(Ts, fused_s, "s-", label="scaled_dot_product_attention")
    ref = [ours_s[-1] * (T / Ts[-1]) ** 2 for T in Ts]
    ax.loglog(Ts, ref, "k--", alpha=0.5, label=r"$\propto T^2$ (the work)")
    ax.set_xlabel("sequence length T")
    ax.set_ylabel("seconds per layer")
    ax.set_title(f"One self-attention layer on {device.type} (J={J}, H={H}, K=I={K})")
    ax.legend()
    plt.show()

# %% [markdown]
# On a CPU the curve bends towards the $T^2$ line: with a handful of cores the machine is
# bound by the work, not by the depth. The depth itself, which is what the problems above
# ask about, is measured directly by the book's parallel-time profiler in the next section.
#
# ## 1.5 Depth, measured
#
# `attnlab.profiler.parallel_time(fn, *args, model=...)` runs your own `transformer` on
# *meta* tensors (shapes without data, so $T = 10^6$ costs nothing) and follows every
# PyTorch operation: an elementwise operation costs 1, reshapes and concatenation cost 0, a
# sum over $N$ terms costs $N$ (model `"serial"`) or $\lceil\log_2 N\rceil$ (model `"log"`),
# a contraction costs one multiply plus the sum over its reduced index, and a softmax costs
# exp + sum + divide. It returns the depth $D$ (the critical path) and the work $W$ (all
# scalar operations). Below, the measured depth of a 2-layer Transformer against $T$, with
# your answers to Problems 1.3 and 1.4 drawn over it (scaled by one fitted constant, since an
# order has no constant).

# %%
from attnlab.profiler import parallel_time
from attnlab.symbolic import parse_answer


def evaluate(answer: str, variables: list[str], **sizes: float) -> float | None:
    """Your answer string evaluated at the given sizes (None if not answered yet)."""
    try:
        expr = parse_answer(answer, variables)
    except Exception as exc:  # an unanswered or malformed answer: nothing to draw
        print(f"(not drawn: {exc})")
        return None
    return float(expr.subs({s: sizes[s.name] for s in expr.free_symbols}))


def fitted(measured: list[float], predicted: list[float]) -> list[float]:
    """`predicted` scaled by the constant that best matches `measured` on a log scale."""
    c = math.exp(sum(math.log(m / p) for m, p in zip(measured, predicted)) / len(measured))
    return [c * p for p in predicted]


L, H, K, I = 2, 4, 16, 16
J = H * I
layer_shapes = [((H, K, J), (H, K, J), (H, I, J))] * L
Ts = [2**k for k in range(2, 21)] if not is_grading() else []
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
for ax, model, name in zip(axes, ("serial", "log"), ("PARALLEL_TIME_SERIAL", "PARALLEL_TIME_LOG")):
    depths = [parallel_time(transformer, (T, J), layer_shapes, model=model).depth for T in Ts]
    if not Ts:
        break
    ax.plot(Ts, depths, "o", label=f"measured depth ({model} sums)")
    answer = globals().get(name)
    predicted = [evaluate(answer, ["L", "T", "H", "J", "K"], L=L, T=T, H=H, J=J, K=K) for T in Ts]
    if None not in predicted:
        ax.plot(Ts, fitted(depths, predicted), "-", label=f"your {name} = {answer!r}, fitted")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log" if model == "serial" else "linear")
    ax.set_xlabel("sequence length T")
    ax.set_ylabel("depth (parallel time)")
    ax.set_title(f"{L}-layer Transformer, J={J}, K={K}: {model} sums")
    ax.legend(fontsize=8)
if Ts:
    plt.tight_layout()
    plt.show()
    print("depth of one layer, T = 1,000,000:",
          parallel_time(transformer, (10**6, J), layer_shapes[:1], model="serial"))

# %% [markdown]
# The serial depth climbs by $2$ per unit of $T$ (two sums over $t'$: the softmax's normaliser
# and the weighted average), while the log depth climbs by only $2L$ each time $T$ doubles.
#
# **Brent's bound.** A machine with $P$ processors runs a computation of work $W$ and depth
# $D$ in time at most $W/P + D$ (schedule each level of the critical path greedily). The
# profiler reports $W/P + D$ as `ParallelTime.brent(P)`. Below, one layer's measured
# wall-clock from Section 1.4 against $W/P + D$ for this device's $P$, converted to seconds by
# one fitted constant (seconds per scalar operation).

# %%
if Ts and ours_s:
    timed_Ts = [64, 128, 256, 512, 1024] + ([2048, 4096] if device.type == "cuda" else [])
    P = (torch.cuda.get_device_properties(0).multi_processor_count * 128 if device.type == "cuda"
         else torch.get_num_threads())
    H1, K1, I1 = 4, 64, 64
    J1 = H1 * I1
    bounds = [parallel_time(self_attention, (T, J1), (H1, K1, J1), (H1, K1, J1), (H1, I1, J1),
                            model="log").brent(P) for T in timed_Ts]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.loglog(timed_Ts, ours_s, "o-", label="measured wall-clock")
    ax.loglog(timed_Ts, fitted(ours_s, bounds), "k--", label=f"Brent: (W/P + D) x fitted s/op, P={P}")
    ax.set_xlabel("sequence length T")
    ax.set_ylabel("seconds per layer")
    ax.set_title(f"One layer on {device.type}: wall-clock against Brent's bound")
    ax.legend(fontsize=8)
    plt.show()
