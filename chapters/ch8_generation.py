# %% [markdown]
# # Chapter 8. Generating text
#
# Chapter 7 trained a decoder-only language model on whole sentences at once: every
# position of every sentence in one parallel pass, the causal mask keeping each position
# from reading the words after it. Generating is another matter. A model that writes a
# sentence must choose word $t$ before it can read it, so generation takes one step per
# word, one after another: parallel to train, sequential to decode. This chapter counts what
# that costs and builds the three ideas that make it affordable:
#
# * the **key/value cache**: a step keeps the keys and values of the positions before it, so
#   that it computes one new position, not all of them again;
# * **grouped-query attention**: several query heads share one key/value head, and the cache
#   is divided by the size of the group;
# * **attention that never stores the $T \times T$ scores**: the softmax computed online,
#   one tile of keys at a time, the idea behind FlashAttention.
#
# You will
#
# * give the work and the parallel time of generating $T$ words without a cache
#   (`NOCACHE_WORK`, `NOCACHE_TIME`) and with one (`CACHE_WORK`, `CACHE_TIME`), and the
#   cache's memory (`CACHE_MEMORY`);
# * implement `block_step`, one step of Chapter 7's causal block on a cache;
# * implement `grouped_attention` and give the grouped cache's memory (`GROUPED_MEMORY`);
# * derive the online softmax update (`ONLINE_SOFTMAX`), implement `tiled_attention` and give
#   its memory (`TILED_MEMORY`) <!-- not a claim: the chapter's plan -->;
# * see the profiler, the cache's size and the largest tensor measure each answer, and a
#   trained model generate the same words with and without the cache.
#
# The chapter goes past the seeds. Its anchors are the first assignment of Stanford's
# CS336 (a Transformer language model and its decoding), nanoGPT's `generate`, and
# Algorithm 1 of the FlashAttention paper (Dao et al., 2022); grouped-query attention is
# Ainslie et al. (2023).

# %% [markdown]
# ## Notation
#
# <!-- letters: H:heads I:valuesize J:width K:keysize L:layers M:vectors O:order T:length V:output W:weights
# Z:normaliser \alpha:attention \ell:layer \mu:runningmax e:euler h:heads i:valuesize j:width k:keysize s:score
# t:length w:word \beta:bias m:row -->
#
# The book's letters (the [notation page](../front/notation.md) has the whole table), the two
# this chapter adds, and the names the literature uses:
#
# | book | meaning | literature |
# |---|---|---|
# | $M[t, j]$, $t < T$, $j < J$ | the vectors a block reads, one row per position | $x$, $d_{\text{model}}$ |
# | $h < H$, $k < K$, $i < I$, $J = HI$ | query heads, query/key and value coordinates | $n_{\text{heads}}$, $d_k$, $d_v$ |
# | $H_{\text{kv}}$ | key/value heads of grouped-query attention, $H_{\text{kv}}$ divides $H$ | $n_{\text{kv\_heads}}$, $G$ groups |
# | $T_{\text{tile}}$ | keys per tile of tiled attention | $B_c$ |
# | $\mu[h, t]$, $Z[h, t]$ | the online softmax's running maximum and running sum | $m$, $\ell$ |
# | $\ell < L$ | a layer (a block) of the stack | $n_{\text{layers}}$ |
#
# A block's parameters are Chapter 7's, in the same dictionary: $W^{\text{QKV}}$ (`W`),
# $W^O$ (`WO`), the two normalisations' gains and shifts, and the feed-forward layer's
# $W^1$, $\beta^1$, $W^2$, $\beta^2$.

# %%
import functools
import math
import statistics

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

from attnlab.grading import is_grading
from attnlab.kernels import largest_tensor
from attnlab.profiler import parallel_time
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
# Given: Chapter 7's block, written with PyTorch's own functions (this cell is locked).

# %% nbgrader={"grade": false, "grade_id": "given_block", "locked": true, "schema_version": 3, "solution": false}
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


def layer_norm(M: torch.Tensor, gain: torch.Tensor, shift: torch.Tensor) -> torch.Tensor:
    """M[..., J] -> [..., J]: Chapter 7's layer normalisation, by PyTorch's own function."""
    return F.layer_norm(M, M.shape[-1:], gain, shift, 1e-5)


def feed_forward(M: torch.Tensor, params: dict[str, torch.Tensor]) -> torch.Tensor:
    """M[..., J] -> [..., J]: Chapter 7's feed-forward layer, by PyTorch's own functions."""
    return F.linear(torch.relu(F.linear(M, params["W1"], params["beta1"])), params["W2"],
                    params["beta2"])


def causal_block(M: torch.Tensor, params: dict[str, torch.Tensor], H: int, K: int) -> torch.Tensor:
    """M[T, J] -> [T, J]: Chapter 7's pre-LN block with the causal mask, attention by PyTorch's
    scaled_dot_product_attention (what every position computes in one parallel pass)."""
    T = M.shape[0]
    I = (params["W"].shape[0] - 2 * H * K) // H
    P = F.linear(layer_norm(M, params["gain1"], params["shift1"]), params["W"])  # [T, H(2K+I)]
    Query, Key, Value = (x.reshape(T, H, -1).transpose(0, 1)
                         for x in P.split([H * K, H * K, H * I], dim=1))
    V = F.scaled_dot_product_attention(Query, Key, Value, is_causal=True)  # [H, T, I]
    Mid = M + F.linear(V.transpose(0, 1).reshape(T, H * I), params["WO"])
    return Mid + feed_forward(layer_norm(Mid, params["gain2"], params["shift2"]), params)


def block_shapes(J: int, H: int) -> dict[str, tuple[int, ...]]:
    """The shapes of one block's parameters with K = I = J/H (so H(2K+I) = 3J) and 4J hidden
    units."""
    return {"W": (3 * J, J), "WO": (J, J), "gain1": (J,), "shift1": (J,), "gain2": (J,),
            "shift2": (J,),
            "W1": (4 * J, J), "beta1": (4 * J,), "W2": (J, 4 * J), "beta2": (J,)}


def step_work(step, J: int, H: int, t: int) -> int:
    """The profiler's work count of step(m[J], Key[H,t,K], Value[H,t,K], params, H, K) with K = J/H,
    on meta tensors."""
    return int(parallel_time(step, (J,), (H, t, J // H), (H, t, J // H), block_shapes(J, H), H,
                             J // H).work)


def largest_allocation(attention, H: int, T: int, K: int, tile: int) -> int:
    """The entries of the largest tensor attention(Query, Key, Value[H,T,K], tile, causal=True)
    allocates (meta)."""
    Query, Key, Value = (torch.empty(H, T, K, device="meta") for _ in range(3))
    return int(largest_tensor(attention, Query, Key, Value, tile, True))


# %% [markdown]
# ## 8.1 Generating without a cache
#
# A decoder generates by feeding each output back in. Given the vectors of positions
# $0..t$, a stack of $L$ causal blocks gives the last position's output, and that output
# (through the vocabulary's softmax, a chosen word, and its word vector; below, the vector
# itself) becomes position $t + 1$. The simplest way to write it, and the way nanoGPT's
# `generate` does, runs the whole stack again on every position so far at every step:
# `generate_without_cache` below. A position's output never changes once it is computed
# (the mask lets no position read a later one), so all but the last row of each step's
# work repeats the step before <!-- not a claim: follows from the causal mask, Chapter 7's Jacobian -->.
#
# **Problem 8.1.** Take $K = I = J/H$ and $4J$ hidden units, as in Chapter 7, and every
# sum's time logarithmic in its number of terms. Generating $T$ positions with
# `generate_without_cache` and a stack of $L$ blocks: what is the order of its **work**
# (`NOCACHE_WORK`) and of its **parallel time** (`NOCACHE_TIME`), in $L$, $T$ and $J$?
# (Step $t$ needs the output of step $t - 1$.)

# %% nbgrader={"grade": false, "grade_id": "generate_without_cache", "locked": true, "schema_version": 3, "solution": false}
def generate_without_cache(m0: torch.Tensor, blocks: list[dict[str, torch.Tensor]], T: int, H: int,
                           K: int) -> torch.Tensor:
    """m0[J] -> M[T, J]: each step runs the causal stack on every position so far; the last output
    is the next row."""
    M = m0[None]
    for _ in range(T - 1):
        out = M
        for params in blocks:
            out = causal_block(out, params, H, K)
        M = torch.cat([M, out[-1:]])
    return M


# %% nbgrader={"grade": false, "grade_id": "nocache_cost", "locked": false, "schema_version": 3, "solution": true}
# Expressions in L, T and J.
# Your answers, in this form:
# NOCACHE_WORK = "..."
# NOCACHE_TIME = "..."
### BEGIN SOLUTION
NOCACHE_WORK = "L*(T^3*J + T^2*J^2)"
NOCACHE_TIME = "L*T*(log(T) + log(J))"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_nocache_work", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(NOCACHE_WORK, ["L", "T", "J"], "NOCACHE_WORK")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch8.NOCACHE_WORK", NOCACHE_WORK)
### END HIDDEN TESTS

# %% nbgrader={"grade": true, "grade_id": "test_nocache_time", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(NOCACHE_TIME, ["L", "T", "J"], "NOCACHE_TIME")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch8.NOCACHE_TIME", NOCACHE_TIME)
### END HIDDEN TESTS

# %% [markdown]
# ## 8.2 One step on a cache
#
# What position $t$ needs from the positions before it is their keys and values, in every
# block, and nothing else: its own query meets their keys, and its weights average their
# values. A **key/value cache** keeps them. One step of a causal block then reads the new
# position's vector $m[j]$ (row $t$ of $M$) and the cache, $\text{Key}[h, t', k]$ and
# $\text{Value}[h, t', i]$ for $t' < t$, and
#
# 1. normalises $m$ and projects it with $W^{\text{QKV}}$ into its query, key and value,
#    $\text{Query}[h, k]$, $\text{Key}[h, t, k]$ and $\text{Value}[h, t, i]$ (Chapter 7's
#    stacked projection of one row);
# 2. appends its key and value to the cache, which now holds positions $0..t$;
# 3. attends, one query per head: $s[h, t'] = \frac{1}{\sqrt K}\sum_k \text{Query}[h,k]\,\text{Key}[h,t',k]$
#    for $t' \le t$, $\alpha[h, t'] = \operatorname*{softmax}_{t'} s[h, t']$,
#    $V[h, i] = \sum_{t'} \alpha[h, t']\,\text{Value}[h, t', i]$;
# 4. finishes as the block does: $W^O$ on the concatenated heads, the residual, the second
#    normalisation, the feed-forward layer and its residual.
#
# No mask is needed: the cache holds no later position.
#
# **Problem 8.2.** Implement `block_step(m, Key, Value, params, H, K)`: it returns the block's
# output at the new position, $[J]$, and the grown cache. Use the given `layer_norm` and
# `feed_forward`. Its output at every position must equal `causal_block`'s, and its work per
# step must not grow with $t J^2$: the grader counts it with the profiler, so an answer that
# recomputes what the cache holds loses the cell even when its values are right <!-- not a claim: how the cell is graded -->.

# %% nbgrader={"grade": false, "grade_id": "block_step", "locked": false, "schema_version": 3, "solution": true}
def block_step(m: torch.Tensor, Key: torch.Tensor, Value: torch.Tensor,
               params: dict[str, torch.Tensor], H: int,
               K: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """m[J], the cache Key[H, t, K], Value[H, t, I] -> (output[J], Key[H, t+1, K], Value[H, t+1,
    I])."""
    ### BEGIN SOLUTION
    I = Value.shape[-1]
    # [H(2K+I)]: one row's projections
    p = F.linear(layer_norm(m, params["gain1"], params["shift1"]), params["W"])
    query, key, value = p.split([H * K, H * K, H * I])
    Key = torch.cat([Key, key.reshape(H, 1, K)], dim=1)
    Value = torch.cat([Value, value.reshape(H, 1, I)], dim=1)
    # the new position's scores
    s = torch.einsum("hk,hTk->hT", query.reshape(H, K), Key) / math.sqrt(K)
    alpha = torch.softmax(s, dim=-1)
    V = torch.einsum("hT,hTi->hi", alpha, Value)
    mid = m + F.linear(V.reshape(H * I), params["WO"])
    return mid + feed_forward(layer_norm(mid, params["gain2"], params["shift2"]),
                              params), Key, Value
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_block_step", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Visible tests: step by step along a random sequence, against the causal block on the whole
# sequence.
g = torch.Generator().manual_seed(0)
T, H, K, I = 5, 2, 3, 4
J = H * I
params = random_weights(g, J, H, K, I, 4 * J)
M = torch.randn(T, J, generator=g, dtype=torch.float64)
full = causal_block(M, params, H, K)
Key, Value = torch.zeros(H, 0, K, dtype=torch.float64), torch.zeros(H, 0, I, dtype=torch.float64)
for t in range(T):
    got = block_step(M[t], Key, Value, params, H, K)
    if not isinstance(got, tuple) or len(got) != 3:
        raise Explained("block_step must return a tuple (output, Key, Value).")
    out, Key, Value = got
    expect_shape(out, (J,), f"the output of block_step at position {t}")
    expect_shape(Key, (H, t + 1, K), f"the cache's keys after position {t}",
                 hint="Append the new position's key to the "
                      "cache: Key grows by one position per step.")
    expect_shape(Value, (H, t + 1, I), f"the cache's values after position {t}")
    expect_like(out, M, "block_step")
    if t == 0 and torch.allclose(out, M[0]):
        raise Explained("block_step returns its input unchanged at "
                        "position 0: the block adds both parts to m.")
    expect_close(out, full[t], f"block_step at position {t}, against causal_block(M)[{t}]",
                 hint="Position t reads itself and every cached "
                      "position; scale the scores by 1/sqrt(K).")
# The cache holds what the step computed for each position: the keys and values of Chapter 7's
# projection.
P = F.linear(layer_norm(M, params["gain1"], params["shift1"]), params["W"])
expect_close(Key, P[:, H * K:2 * H * K].reshape(T, H, K).transpose(0, 1),
             "the cache's keys after the last step",
             hint="Row h*K + k of W's key block is head h's coordinate k, as in Chapter 7.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch8.block_step", block_step)
hidden_check("ch8.block_step_work", functools.partial(step_work, block_step))
### END HIDDEN TESTS

# %% [markdown]
# ## 8.3 What the cache saves
#
# `generate_with_cache` below generates the same rows as `generate_without_cache`, one
# `block_step` per block and position, each block with its own cache.
#
# **Problem 8.3.** With the same sizes as Problem 8.1: the order of the work of generating
# $T$ positions with the cache (`CACHE_WORK`), of its parallel time (`CACHE_TIME`), and of
# the number of numbers the caches of all $L$ blocks hold at the end (`CACHE_MEMORY`), in
# $L$, $T$ and $J$.

# %% nbgrader={"grade": false, "grade_id": "generate_with_cache", "locked": true, "schema_version": 3, "solution": false}
def generate_with_cache(m0: torch.Tensor, blocks: list[dict[str, torch.Tensor]], T: int, H: int,
                        K: int) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]:
    """m0[J] -> (M[T, J], each block's cache): one block_step per block and position."""
    I = blocks[0]["WO"].shape[1] // H
    caches = [(m0.new_zeros(H, 0, K), m0.new_zeros(H, 0, I)) for _ in blocks]
    rows = [m0]
    for _ in range(T - 1):
        x = rows[-1]
        for n, params in enumerate(blocks):
            x, *caches[n] = block_step(x, *caches[n], params, H, K)
        rows.append(x)
    return torch.stack(rows), caches


def measure_generation(L: int, T: int, J: int, H: int = 2) -> dict[str, int]:
    """Work and depth of generating T rows with L blocks (K = I = J/H) without and with the cache,
    and the caches' numbers, on meta tensors (Section 8.3; the tests read the same)."""
    blocks, K = [block_shapes(J, H)] * L, J // H
    without = parallel_time(generate_without_cache, (J,), blocks, T, H, K)
    cached = parallel_time(lambda *a: generate_with_cache(*a)[0], (J,), blocks, T, H, K)
    meta = [{n: torch.empty(s, device="meta") for n, s in b.items()} for b in blocks]
    _, caches = generate_with_cache(torch.empty(J, device="meta"), meta, T, H, K)
    return {"NOCACHE_WORK": without.work, "NOCACHE_TIME": without.depth, "CACHE_WORK": cached.work,
            "CACHE_TIME": cached.depth,
            "CACHE_MEMORY": sum(Key.numel() + Value.numel() for Key, Value in caches)}

# %% nbgrader={"grade": false, "grade_id": "cache_cost", "locked": false, "schema_version": 3, "solution": true}
# Expressions in L, T and J.
# Your answers, in this form:
# CACHE_WORK = "..."
# CACHE_TIME = "..."
# CACHE_MEMORY = "..."
### BEGIN SOLUTION
CACHE_WORK = "L*(T^2*J + T*J^2)"
CACHE_TIME = "L*T*(log(T) + log(J))"
CACHE_MEMORY = "L*T*J"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_cache_work", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(CACHE_WORK, ["L", "T", "J"], "CACHE_WORK")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch8.CACHE_WORK", CACHE_WORK)
### END HIDDEN TESTS

# %% nbgrader={"grade": true, "grade_id": "test_cache_time", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(CACHE_TIME, ["L", "T", "J"], "CACHE_TIME")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch8.CACHE_TIME", CACHE_TIME)
### END HIDDEN TESTS

# %% nbgrader={"grade": true, "grade_id": "test_cache_memory", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(CACHE_MEMORY, ["L", "T", "J"], "CACHE_MEMORY")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch8.CACHE_MEMORY", CACHE_MEMORY)
### END HIDDEN TESTS

# %% [markdown]
# **Measured.** The profiler counts the work and the depth of both generators on meta
# tensors, and the caches' size is read off the caches themselves, while $T$, then $J$,
# then $L$ double (the other sizes small, $H = 2$ <!-- given -->). An order leaves each of its
# terms a constant factor of its own and drops lower-order terms, so each of your answers is
# drawn fitted to the measurements as a sum of its terms, each with a factor of its own
# (none negative), plus a constant (`attnlab.fits.fit_terms`): an answer of the right
# order lies on the points in every sweep; one of another order misses them in some sweep <!-- not a claim: how the fit is read; the solutions edition asserts it for the reference and each wrong answer -->. (This
# cell measures your `block_step` and draws your answers: run it yourself.)

# %% tags=["answer-output"] mystnb={"figure": {"caption": "Generating $T$ rows: measured work, depth and cache size (points) as each size grows, with your answers fitted term by term (lines; the legend says how far each misses). A right answer's line runs through the points of every panel."}}
from attnlab.fits import fit_terms

QUANTITIES = ("NOCACHE_WORK", "CACHE_WORK", "NOCACHE_TIME", "CACHE_TIME", "CACHE_MEMORY")
gen_sweeps = [] if is_grading() else [
    ("T", [dict(L=1, T=T, J=16) for T in (8, 16, 32, 64, 128)]),
    ("J", [dict(L=1, T=16, J=J) for J in (32, 64, 128, 256, 512, 1024, 2048)]),
    ("L", [dict(L=L, T=16, J=32) for L in (1, 2, 3, 4, 6)])]


gen_measured = {name: [measure_generation(**sizes) for sizes in sweep]
                for name, sweep in gen_sweeps}
if gen_sweeps:
    fig, axes = plt.subplots(len(QUANTITIES), len(gen_sweeps), figsize=(8.5, 11))
    for col, (name, sweep) in enumerate(gen_sweeps):
        xs = [sizes[name] for sizes in sweep]
        for row, q in enumerate(QUANTITIES):
            ax = axes[row, col]
            ys = [m[q] for m in gen_measured[name]]
            ax.plot(xs, ys, "o", label="measured")
            try:
                fitted = fit_terms(ys, sweep, globals().get(q))
            except Exception as exc:  # an unanswered or malformed answer: nothing to draw
                print(f"{q} not drawn: {exc}")
            else:
                ax.plot(xs, fitted.curve, "-", label=f"your {q}, fitted: off by {fitted.miss:.0%}")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log" if q.endswith(("WORK", "MEMORY")) else "linear")
            ax.set_title(q, fontsize=10)
            ax.set_xlabel(name + "  ("
                          + ", ".join(f"{k} = {v}" for k, v in sweep[0].items() if k != name) + ")")
            ax.legend(fontsize=9)
    fig.suptitle("Generating T rows: measured work, depth and "
                 "cache size, your answers fitted term by term")
    plt.tight_layout()
    plt.show()

# %% tags=["solutions-only"]
# Each measured quantity against the reference answer and against every wrong answer of its question
# in the mistakes corpus: the reference follows the points in every sweep, each wrong answer misses
# them in some sweep.
if gen_sweeps:
    from solutions.mistakes import wrong_answers

    def follows(q: str, answer: str) -> tuple[bool, float]:
        """Whether `answer` follows q's measurements in every sweep, and its largest miss."""
        fits = [fit_terms([m[q] for m in gen_measured[name]], sweep,
                          answer) for name, sweep in gen_sweeps]
        return all(f.follows for f in fits), max(f.miss for f in fits)

    for q in QUANTITIES:
        ok, miss = follows(q, globals()[q])
        print(f"{q}: the reference {globals()[q]!r} "
              f"misses by at most {miss:.1%}")  # claim: ch8-fits-printed
        assert ok, f"the reference {q} follows the measurements"  # claim: ch8-measured
        for mistake in wrong_answers("ch8", q):
            ok, miss = follows(q, mistake)
            print(f"  the wrong {mistake!r} "
                  f"misses by up to {miss:.1%}")  # claim: ch8-misses-printed
            assert not ok, \
                f"the wrong {q} = {mistake!r} misses the measurements"  # claim: ch8-discriminates

# %% [markdown]
# In the plot, the work without the cache grows a power of $T$ faster than with it, while
# the two depths are the same curve <!-- not a claim: what to look for; the solutions edition asserts each fit -->: the cache removes the repeated work, not the
# wait between steps. Training reads every position at once, so its depth is that of one
# pass; generating cannot start step $t$ before step $t - 1$ has chosen its word.

# %% [markdown] tags=["solutions-only"]
# ### Worked solution (Problems 8.1 and 8.3)
#
# *Without the cache.* Step $t$ runs $L$ blocks on $t$ positions: Chapter 7's block work,
# $\Theta(t^2 J + t J^2)$ each. Summed over $t \le T$:
# $L \sum_t (t^2 J + t J^2) = \Theta\big(L (T^3 J + T^2 J^2)\big)$. Each step waits for the one
# before, and each block of a step has depth $\Theta(\log t + \log J)$, so the depth is
# $\sum_t L\,\Theta(\log t + \log J) = \Theta\big(L T (\log T + \log J)\big)$.
#
# *With the cache.* Step $t$ projects one row ($\Theta(J^2)$ per block, the feed-forward layer
# included) and attends one query to $t$ keys ($\Theta(tJ)$): $\Theta(L (T^2 J + T J^2))$ in all.
# Its depth is the same, $\Theta(L T (\log T + \log J))$: a step's sums still run over $t$
# keys and $J$ coordinates, and the steps are still sequential. The caches hold a key and a
# value of $HK = HI = J$ numbers per position and block: $2 L T J$ numbers, $\Theta(LTJ)$.
# The solutions edition asserts that each reference answer fits the measurements within 5%
# and each wrong answer of the mistakes corpus misses them in some sweep <!-- claim: ch8-measured --> <!-- claim: ch8-discriminates -->, and prints each one's largest miss <!-- claim: ch8-fits-printed --> <!-- claim: ch8-misses-printed -->.

# %% [markdown]
# ## 8.4 Grouped-query attention
#
# The cache is what generation stores (Problem 8.3 counts it): for a model of $J = 4096$ and
# $L = 32$ <!-- given --> and a context of $T = 8192$ <!-- given --> positions, billions of numbers
# per sequence. Multi-query attention (Shazeer,
# 2019) gives all $H$ query heads one key/value head; grouped-query attention (Ainslie et
# al., 2023) gives them $H_{\text{kv}}$, each shared by a group of $H / H_{\text{kv}}$
# consecutive query heads: query head $h$ reads key/value head
# $\lfloor h H_{\text{kv}} / H \rfloor$. $H_{\text{kv}} = H$ is Chapter 7's attention and
# $H_{\text{kv}} = 1$ is multi-query attention.
#
# **Problem 8.4.** Implement `grouped_attention(Query, Key, Value, causal)`: $\text{Query}$ has
# $H$ heads, $\text{Key}$ and $\text{Value}$ have $H_{\text{kv}}$; scores scaled by
# $1/\sqrt K$; with `causal`, position $t$ reads $t' \le t$ only.

# %% nbgrader={"grade": false, "grade_id": "grouped_attention", "locked": false, "schema_version": 3, "solution": true}
def grouped_attention(Query: torch.Tensor, Key: torch.Tensor, Value: torch.Tensor,
                      causal: bool = False) -> torch.Tensor:
    """Query[H, T, K], Key[Hkv, T, K], Value[Hkv, T, I] -> V[H, T, I]: query head h reads key/value
    head h*Hkv // H."""
    ### BEGIN SOLUTION
    H, T, K = Query.shape
    group = H // Key.shape[0]  # query heads per key/value head
    Key, Value = Key.repeat_interleave(group, dim=0), Value.repeat_interleave(group, dim=0)
    s = torch.einsum("htk,hTk->htT", Query, Key) / math.sqrt(K)
    if causal:
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=s.device).triu(1), -math.inf)
    return torch.einsum("htT,hTi->hti", torch.softmax(s, dim=-1), Value)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_grouped_attention", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Visible tests: against PyTorch's attention with each key/value head repeated for its group.
g = torch.Generator().manual_seed(1)
H, Hkv, T, K, I = 6, 2, 5, 3, 4
Query = torch.randn(H, T, K, generator=g, dtype=torch.float64)
Key, Value = torch.randn(Hkv, T, K, generator=g, dtype=torch.float64), \
    torch.randn(Hkv, T, I, generator=g, dtype=torch.float64)
for causal in (False, True):
    out = grouped_attention(Query, Key, Value, causal)
    expect_shape(out, (H, T, I),
                 f"grouped_attention(Query[6,5,3], Key[2,5,3], Value[2,5,4], causal={causal})")
    expect_like(out, Query, "grouped_attention")
    # query heads 0, 1, 2 read key/value head 0; 3, 4, 5 head 1
    heads_of = [h * Hkv // H for h in range(H)]
    interleaved = F.scaled_dot_product_attention(Query, Key[[h % Hkv for h in range(H)]],
                                                 Value[[h % Hkv for h in range(H)]],
                                                 is_causal=causal)
    if torch.allclose(out, interleaved):
        raise Explained("Query head h reads key/value head h % Hkv in yours: the "
                        "heads of a group are consecutive, so query heads 0..H/Hkv-1 "
                        "share key/value head 0 (repeat_interleave, not repeat).")
    expect_close(
        out,
        F.scaled_dot_product_attention(Query, Key[heads_of], Value[heads_of], is_causal=causal),
                 f"grouped_attention(..., causal={causal})",
                 hint="Query head h reads key/value head h * "
                      "Hkv // H; scale the scores by 1/sqrt(K).")
# Hkv = H is Chapter 7's attention, one key/value head per query head.
Key6, Value6 = torch.randn(H, T, K, generator=g, dtype=torch.float64), \
    torch.randn(H, T, I, generator=g, dtype=torch.float64)
expect_close(grouped_attention(Query, Key6, Value6, True),
             F.scaled_dot_product_attention(Query, Key6, Value6, is_causal=True),
             "grouped_attention with Hkv = H")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch8.grouped_attention", grouped_attention)
### END HIDDEN TESTS

# %% [markdown]
# **Problem 8.5.** A stack of $L$ blocks with grouped-query attention, $H_{\text{kv}}$
# key/value heads and $I = K$: how many numbers do its caches hold after $T$ positions
# (`GROUPED_MEMORY`, an order in $L$, $T$, $H$, $H_{\text{kv}}$ and $K$; write
# $H_{\text{kv}}$ as `Hkv`)?

# %% nbgrader={"grade": false, "grade_id": "grouped_memory", "locked": false, "schema_version": 3, "solution": true}
# An expression in L, T, H, Hkv and K.
# Your answer, in this form:
# GROUPED_MEMORY = "..."
### BEGIN SOLUTION
GROUPED_MEMORY = "L*T*Hkv*K"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_grouped_memory", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(GROUPED_MEMORY, ["L", "T", "H", "Hkv", "K"], "GROUPED_MEMORY")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch8.GROUPED_MEMORY", GROUPED_MEMORY)
### END HIDDEN TESTS

# %% [markdown]
# **Measured.** Decoding with grouped heads, one step at a time on meta tensors: each block
# appends the new position's $H_{\text{kv}}$ keys and values to its cache and attends with
# your `grouped_attention`, one query per head. The caches' numbers are read off the caches
# while $L$, $T$, $H$, $H_{\text{kv}}$ and $K$ double in turn, and your `GROUPED_MEMORY` is
# drawn fitted term by term, as in Section 8.3. (This cell runs your `grouped_attention`:
# run it yourself.)

# %% tags=["answer-output"] mystnb={"figure": {"caption": "Numbers in the caches of grouped-query decoding as each size grows, the others at their base (points), with your `GROUPED_MEMORY` fitted term by term (lines). A right answer's line runs through the points of every panel."}}
def grouped_cache_numbers(L: int, T: int, H: int, Hkv: int, K: int) -> int:
    """Numbers in the caches of L blocks after decoding T positions with grouped heads (meta
    tensors)."""
    caches = [(torch.empty(Hkv, 0, K, device="meta"),
               torch.empty(Hkv, 0, K, device="meta")) for _ in range(L)]
    for _ in range(T):
        for n, (Key, Value) in enumerate(caches):
            Key, Value = (torch.cat([x, torch.empty(Hkv, 1, K, device="meta")],
                                    dim=1) for x in (Key, Value))
            # the new position's queries
            grouped_attention(torch.empty(H, 1, K, device="meta"), Key, Value)
            caches[n] = (Key, Value)
    return sum(Key.numel() + Value.numel() for Key, Value in caches)


GROUPED_BASE = dict(L=2, T=8, H=8, Hkv=2, K=16)
grouped_sweeps = [] if is_grading() else [
    (name, [GROUPED_BASE | {name: v} for v in values]) for name, values in
    (("L", (1, 2, 4)), ("T", (4, 8, 16, 32)), ("H", (2, 4, 8, 16)), ("Hkv", (1, 2, 4, 8)),
     ("K", (8, 16, 32, 64)))]
grouped_numbers = {name: [grouped_cache_numbers(**sizes) for sizes in sweep]
                   for name, sweep in grouped_sweeps}
if grouped_sweeps:
    columns = math.ceil(len(grouped_sweeps) / 2)  # two rows: each panel wide enough to read
    fig, axes = plt.subplots(2, columns, figsize=(8.5, 5.6))
    for ax in axes.flat[len(grouped_sweeps):]:
        ax.axis("off")
    for ax, (name, sweep) in zip(axes.flat, grouped_sweeps):
        xs = [sizes[name] for sizes in sweep]
        ax.plot(xs, grouped_numbers[name], "o", label="measured")
        try:
            fitted = fit_terms(grouped_numbers[name], sweep, globals().get("GROUPED_MEMORY"))
        except Exception as exc:  # an unanswered or malformed answer: nothing to draw
            print(f"GROUPED_MEMORY not drawn: {exc}")
        else:
            ax.plot(xs, fitted.curve, "-", label=f"fitted: off by {fitted.miss:.0%}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(name)
        ax.legend(fontsize=9)
    for ax in axes[:, 0]:
        ax.set_ylabel("numbers in the caches")
    fig.suptitle("The caches of grouped-query decoding against "
                 "your GROUPED_MEMORY (the other sizes "
                 + ", ".join(f"{k} = {v}" for k, v in GROUPED_BASE.items()) + ")")
    plt.tight_layout()
    plt.show()

# %% tags=["solutions-only"]
if grouped_sweeps:
    from solutions.mistakes import wrong_answers

    def follows_grouped(answer: str) -> bool:
        """Whether `answer` follows the grouped caches' numbers in every sweep."""
        return all(fit_terms(grouped_numbers[name], sweep,
                             answer).follows for name, sweep in grouped_sweeps)

    assert follows_grouped(GROUPED_MEMORY), \
        "the reference GROUPED_MEMORY follows"  # claim: ch8-grouped-measured
    for mistake in wrong_answers("ch8", "GROUPED_MEMORY"):
        assert not follows_grouped(mistake), \
            f"the wrong {mistake!r} misses"  # claim: ch8-grouped-discriminates

# %% [markdown]
# The caches grow with $H_{\text{kv}}$, not with $H$: your answer follows the points in every
# sweep when its order is right; the solutions edition asserts it for the reference <!-- claim: ch8-grouped-measured -->
# and that each wrong answer of the mistakes corpus misses them <!-- claim: ch8-grouped-discriminates -->.

# %% [markdown]
# ## 8.5 Attention that never stores all its scores
#
# Chapter 1 measured the memory of a layer's scores $s[h, t, t']$, and saw that PyTorch's
# fused kernels do not store them. The trick is the softmax's own algebra.
# Read the keys in tiles of $T_{\text{tile}}$ positions. After some tiles, keep for every
# head $h$ and query position $t$ three things about the keys $t'$ seen so far: their
# largest score $\mu[h, t]$, the sum $Z[h, t] = \sum_{t'} e^{s[h,t,t'] - \mu[h,t]}$, and the
# unnormalised output $\tilde V[h, t, i] = \sum_{t'} e^{s[h,t,t'] - \mu[h,t]}\,\text{Value}[h, t', i]$ <!-- not a claim: definitions -->.
# The output is then $V[h, t, i] = \tilde V[h, t, i] / Z[h, t]$ once every tile is read,
# exactly the softmax's weighted average. Subtracting the maximum keeps every exponent at
# most $0$, so the exponentials stay finite whatever the scores <!-- not a claim: arithmetic -->.
#
# A new tile brings scores $s[h, t, t']$ for its keys and a new maximum
# $\mu_{\text{new}}[h, t]$, the larger of $\mu[h, t]$ and the tile's largest score <!-- not a claim: a definition -->.
#
# **Problem 8.6.** Give the update of $Z$ and $\tilde V$ by the new tile, for one head (drop
# $h$), in the book's index notation (`attnlab.equations`): inputs `s[t,u]` (the tile's
# scores, `u` its keys), `Value[u,i]` (the tile's values), `mu[t]`, `munew[t]`, `Z[t]` and
# `Vt[t,i]` ($\tilde V$); define `Znew[t]` and then `Vtnew[t,i]`.

# %% nbgrader={"grade": false, "grade_id": "online_softmax", "locked": false, "schema_version": 3, "solution": true}
# Two equations, Znew[t] = ... and Vtnew[t,i] = ...
### BEGIN SOLUTION
ONLINE_SOFTMAX = r"""
Znew[t] = exp(mu[t] - munew[t]) * Z[t] + sum_u exp(s[t,u] - munew[t])
Vtnew[t,i] = exp(mu[t] - munew[t]) * Vt[t,i] + sum_u exp(s[t,u] - munew[t]) * Value[u,i]
"""
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_online_softmax", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Visible tests: the form of your equations, then their value on a case worked out by hand.
from attnlab.equations import evaluate

expect_equations(
    ONLINE_SOFTMAX,
    inputs={"s": "T,U", "Value": "U,I", "mu": "T", "munew": "T", "Z": "T", "Vt": "T,I"},
                 defines={"Znew": "T", "Vtnew": "T,I"}, what="Problem 8.6, ONLINE_SOFTMAX")
# By hand, one query, I = 1: seen so far one key of score 0 and value 2 (mu = 0, Z = 1, Vt = 2); the
# tile has two keys of scores ln 3 and 0 with values 4 and 1, so munew = ln 3. Rescaled: Z -> 1/3,
# Vt -> 2/3; the tile adds 1 + 1/3 to Z and 4 + 1/3 to Vt: Znew = 5/3, Vtnew = 5, and Vtnew / Znew =
# 3, the softmax's average of 2, 4, 1.
hand = {"s": torch.tensor([[math.log(3.0), 0.0]], dtype=torch.float64),
        "Value": torch.tensor([[4.0], [1.0]], dtype=torch.float64),
        "mu": torch.tensor([0.0], dtype=torch.float64),
        "munew": torch.tensor([math.log(3.0)], dtype=torch.float64),
        "Z": torch.tensor([1.0], dtype=torch.float64),
        "Vt": torch.tensor([[2.0]], dtype=torch.float64)}
got = evaluate(ONLINE_SOFTMAX, hand)
if torch.allclose(got["Znew"], torch.tensor([7 / 3], dtype=torch.float64)):
    raise Explained("Your Znew on the hand-checked case is 7/3 = 1 + 1 + 1/3: the old "
                    "sum Z was not rescaled by exp(mu - munew) when the maximum grew.")
expect_close(got["Znew"], torch.tensor([5 / 3], dtype=torch.float64),
             "your Znew on the hand-checked case (5/3)",
             hint="Rescale the old sum to the new maximum, exp(mu - "
                  "munew) * Z, then add the tile's exp(s - munew).")
expect_close(got["Vtnew"], torch.tensor([[5.0]], dtype=torch.float64),
             "your Vtnew on the hand-checked case (5)",
             hint="The same rescaling for Vt, then add the tile's exp(s - munew) * Value.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch8.ONLINE_SOFTMAX", ONLINE_SOFTMAX)
### END HIDDEN TESTS

# %% [markdown]
# **Problem 8.7.** Implement `tiled_attention(Query, Key, Value, tile, causal)` by your
# update: the keys in tiles of `tile` positions (the last may be shorter), every query
# position at once, never a tensor of all the scores. With `causal`, query $t$ reads
# keys $t' \le t$ only: a tile after a query's position adds nothing to its sums, and the
# update must stay finite there. It must equal attention, stay finite for
# scores of $10^4$ <!-- given -->, and store no more at once than one tile's scores and the
# running $\mu$, $Z$ and $\tilde V$ need (up to a constant factor): the grader measures its
# largest tensor with `attnlab.kernels.largest_tensor`, on sizes where storing every score
# would take far more.

# %% nbgrader={"grade": false, "grade_id": "tiled_attention", "locked": false, "schema_version": 3, "solution": true}
def tiled_attention(Query: torch.Tensor, Key: torch.Tensor, Value: torch.Tensor, tile: int,
                    causal: bool = False) -> torch.Tensor:
    """Query[H, T, K], Key[H, T, K], Value[H, T, I] -> V[H, T, I], the keys read `tile` at a time
    (online softmax)."""
    ### BEGIN SOLUTION
    H, T, K = Query.shape
    mu = Query.new_full((H, T), -math.inf)  # the largest score seen so far
    Z = Query.new_zeros(H, T)  # sum of exp(s - mu) over the keys seen
    Vt = Query.new_zeros(H, T, Value.shape[-1])  # sum of exp(s - mu) * Value over the keys seen
    t = torch.arange(T, device=Query.device)
    for start in range(0, T, tile):
        keys = slice(start, min(start + tile, T))
        s = torch.einsum("htk,hTk->htT", Query, Key[:, keys]) / math.sqrt(K)  # [H, T, tile]
        if causal:
            s = s.masked_fill(t[:, None] < t[None, keys], -math.inf)
        munew = torch.maximum(mu, s.amax(dim=-1))
        # no key read yet: every weight 0
        safe = torch.where(torch.isinf(munew), torch.zeros_like(munew), munew)
        rescale = torch.exp(mu - safe)
        p = torch.exp(s - safe[..., None])
        Z = rescale * Z + p.sum(dim=-1)
        Vt = rescale[..., None] * Vt + torch.einsum("htT,hTi->hti", p, Value[:, keys])
        mu = munew
    return Vt / Z[..., None]
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_tiled_attention", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Visible tests: against PyTorch's attention, for tiles that divide T and tiles that do not, with
# and without the mask.
g = torch.Generator().manual_seed(2)
H, T, K, I = 2, 7, 3, 4
Query, Key = torch.randn(H, T, K, generator=g, dtype=torch.float64), \
    torch.randn(H, T, K, generator=g, dtype=torch.float64)
Value = torch.randn(H, T, I, generator=g, dtype=torch.float64)
for tile in (1, 3, 7, 10):
    for causal in (False, True):
        out = tiled_attention(Query, Key, Value, tile, causal)
        expect_shape(out, (H, T, I),
                     f"tiled_attention(Query[2,7,3], ..., tile={tile}, causal={causal})")
        expect_like(out, Query, "tiled_attention")
        if not torch.isfinite(out).all():
            raise Explained(f"tiled_attention(..., tile={tile}, causal={causal}) has NaN or "
                            "inf: a tile in which a query may read no key has a maximum of "
                            "-inf, and exp(-inf - (-inf)) is NaN; and a query must read "
                            "its own position (t' <= t), or row 0 reads nothing at all.")
        expect_close(out, F.scaled_dot_product_attention(Query, Key, Value, is_causal=causal),
                     f"tiled_attention(..., tile={tile}, causal={causal})",
                     hint="Rescale Z and Vt by exp(mu - munew) whenever "
                          "the maximum grows; divide by Z at the end.")
big = tiled_attention(1e4 * Query, Key, Value, 3, True)
if not torch.isfinite(big).all():
    raise Explained("tiled_attention is not finite for scores near 1e4: exp(1e4) "
                    "overflows. Subtract the running maximum before every exponential.")
expect_close(big, F.scaled_dot_product_attention(1e4 * Query, Key, Value, is_causal=True),
             "tiled_attention with scores near 1e4", rtol=1e-6, atol=1e-6)
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch8.tiled_attention", tiled_attention)
hidden_check("ch8.tiled_attention_memory", functools.partial(largest_allocation, tiled_attention))
### END HIDDEN TESTS

# %% [markdown]
# **Problem 8.8.** The order of the number of entries of the largest tensor `tiled_attention`
# allocates (`TILED_MEMORY`), in $H$, $T$, $K$ and $T_{\text{tile}}$ (write `Ttile`), with
# $I = K$ <!-- not a claim: the question -->.

# %% nbgrader={"grade": false, "grade_id": "tiled_memory", "locked": false, "schema_version": 3, "solution": true}
# An expression in H, T, K and Ttile.
# Your answer, in this form:
# TILED_MEMORY = "..."
### BEGIN SOLUTION
TILED_MEMORY = "H*T*(Ttile + K)"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_tiled_memory", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(TILED_MEMORY, ["H", "T", "K", "Ttile"], "TILED_MEMORY")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch8.TILED_MEMORY", TILED_MEMORY)
### END HIDDEN TESTS

# %% [markdown]
# **Measured.** The largest tensor of your `tiled_attention` (causal, on meta tensors) while
# $T$, then $T_{\text{tile}}$, then $K$ double, beside Chapter 1's einsum attention, which
# stores the scores, as $T$ doubles; your `TILED_MEMORY` is drawn fitted term by term as
# above <!-- not a claim: what the plot shows -->. (This cell measures your own `tiled_attention`: run it yourself.)

# %% tags=["answer-output"] mystnb={"figure": {"caption": "The largest tensor of one causal attention call on meta tensors as each size grows: einsum attention's (squares) and your `tiled_attention`'s (points), with your `TILED_MEMORY` fitted (line). Compare how the two grow as $T$ doubles."}}
def einsum_attention(Query: torch.Tensor, Key: torch.Tensor, Value: torch.Tensor) -> torch.Tensor:
    """Query, Key[H, T, K], Value[H, T, I] -> V[H, T, I] through the whole score tensor s[H, T,
    T]."""
    s = torch.einsum("htk,hTk->htT", Query, Key) / math.sqrt(Query.shape[-1])
    return torch.einsum("htT,hTi->hti", torch.softmax(s, dim=-1), Value)


mem_sweeps = [] if is_grading() else [
    ("T", [dict(H=4, T=T, K=32, Ttile=64) for T in (512, 1024, 2048, 4096, 8192)]),
    ("Ttile", [dict(H=4, T=4096, K=32, Ttile=b) for b in (64, 128, 256, 512, 1024)]),
    ("K", [dict(H=4, T=4096, K=K, Ttile=16) for K in (64, 128, 256, 512, 1024)])]
tiled_largest = {name: [largest_allocation(tiled_attention, s["H"], s["T"], s["K"],
                                           s["Ttile"]) for s in sweep]
                 for name, sweep in mem_sweeps}
einsum_largest = [largest_tensor(
    einsum_attention, *(torch.empty(s["H"], s["T"], s["K"], device="meta") for _ in range(3)))
                  for s in dict(mem_sweeps).get("T", [])]
if mem_sweeps:
    Ts = [s["T"] for s in dict(mem_sweeps)["T"]]
    for k in range(1, len(Ts)):
        print(f"T = {Ts[k]}: the largest tensor grew "
              f"x{tiled_largest['T'][k] / tiled_largest['T'][k - 1]:.2f} (tiled), "
              f"x{einsum_largest[k] / einsum_largest[k - 1]:.2f} (einsum) "
              "per doubling")  # claim: ch8-growth
    fig, axes = plt.subplots(len(mem_sweeps), 1, figsize=(8, 3.6 * len(mem_sweeps)))
    axes[0].plot(Ts, einsum_largest, "s-", label="einsum attention (stores s[h, t, t'])")
    for ax, (name, sweep) in zip(axes, mem_sweeps):
        xs = [s[name] for s in sweep]
        ax.plot(xs, tiled_largest[name], "o", label="your tiled_attention")
        try:
            fitted = fit_terms(tiled_largest[name], sweep, globals().get("TILED_MEMORY"))
        except Exception as exc:  # an unanswered or malformed answer: nothing to draw
            print(f"TILED_MEMORY not drawn: {exc}")
        else:
            ax.plot(xs, fitted.curve, "-",
                    label=f"your TILED_MEMORY, fitted: off by {fitted.miss:.0%}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(name + "  ("
                      + ", ".join(f"{k} = {v}" for k, v in sweep[0].items() if k != name) + ")")
        ax.set_ylabel("entries of the largest tensor")
        ax.legend(fontsize=9)
    fig.suptitle("The largest tensor of one causal attention call, on meta tensors")
    plt.tight_layout()
    plt.show()

# %% tags=["solutions-only"]
if mem_sweeps:
    from solutions.mistakes import wrong_answers

    assert all(b / a == 4 for a, b in zip(einsum_largest, einsum_largest[1:])), \
        "einsum: x4 per doubling"  # claim: ch8-growth-einsum
    assert all(b / a == 2 for a, b in zip(tiled_largest["T"], tiled_largest["T"][1:])), \
        "tiled: x2 per doubling"  # claim: ch8-growth-tiled

    def follows_memory(answer: str) -> bool:
        """Whether `answer` follows the tiled largest tensor in every sweep."""
        return all(fit_terms(tiled_largest[name], sweep,
                             answer).follows for name, sweep in mem_sweeps)

    assert follows_memory(TILED_MEMORY), \
        "the reference TILED_MEMORY follows the measurements"  # claim: ch8-tiled-measured
    for mistake in wrong_answers("ch8", "TILED_MEMORY"):
        assert not follows_memory(mistake), \
            f"the wrong TILED_MEMORY = {mistake!r} misses"  # claim: ch8-tiled-discriminates

# %% [markdown]
# The run above prints how the largest tensor grows as $T$ doubles <!-- claim: ch8-growth -->:
# four times for the einsum attention, which stores every score <!-- claim: ch8-growth-einsum -->, and twice for tiled
# attention <!-- claim: ch8-growth-tiled -->. Your `TILED_MEMORY` follows the points in every sweep when its order is
# right; the solutions edition asserts it for the reference and that each wrong answer of the mistakes corpus misses
# them <!-- claim: ch8-tiled-measured --> <!-- claim: ch8-tiled-discriminates -->.

# %% [markdown] tags=["solutions-only"]
# ### Worked solution (Problems 8.4-8.8)
#
# *Grouped heads.* `repeat_interleave(H // Hkv, dim=0)` lays each key/value head next to
# itself $H / H_{\text{kv}}$ times, so query head $h$ meets head $\lfloor h H_{\text{kv}} / H \rfloor$;
# `repeat` would lay the whole set side by side and give head $h \bmod H_{\text{kv}}$. The
# cache then holds $2 L T H_{\text{kv}} K$ numbers: $\Theta(L T H_{\text{kv}} K)$, smaller than
# Chapter 7's by the group size $H / H_{\text{kv}}$ <!-- not a claim: arithmetic -->.
#
# *The update.* Every term of $Z$ and $\tilde V$ carries the factor $e^{-\mu}$; moving to the
# new maximum multiplies the old terms by $e^{\mu - \mu_{\text{new}}}$, and the tile's terms
# come in with $e^{-\mu_{\text{new}}}$:
#
# over the tile's keys $t'$,
#
# $$
# \begin{aligned}
# Z_{\text{new}}[t] &= e^{\mu[t] - \mu_{\text{new}}[t]}\, Z[t] + \sum_{t'} e^{s[t,t'] - \mu_{\text{new}}[t]}, \\
# \tilde V_{\text{new}}[t, i] &= e^{\mu[t] - \mu_{\text{new}}[t]}\, \tilde V[t, i] + \sum_{t'} e^{s[t,t'] - \mu_{\text{new}}[t]}\, \text{Value}[t', i].
# \end{aligned}
# $$
#
# *Tiled attention.* The tile's scores are $[H, T, T_{\text{tile}}]$ and the running output
# $[H, T, I]$; nothing larger is made, so the largest tensor is $\Theta(H T (T_{\text{tile}} + K))$
# with $I = K$ <!-- not a claim: counting the reference's tensors -->. The reference replaces a maximum of $-\infty$ (no key read yet) by $0$ before
# subtracting it: the tile's weights are then $e^{-\infty} = 0$ and the old sums, still $0$,
# stay $0$.

# %% [markdown]
# ## 8.6 A trained decoder, with and without the cache
#
# Last, a small decoder-only model as in Chapter 7 (two causal blocks, $J = 32$ <!-- given -->,
# trained for a few hundred steps on the grammar of Chapter 4) generates sentences by
# greedy decoding (the likeliest word at each step) twice: rerunning every prefix, and with
# your `block_step` and a cache per block. Then the time per word of each as the sentence
# grows, on random blocks of $J = 256$ <!-- given --> and $L = 2$ <!-- given -->. (This cell
# runs your `block_step`: run it yourself.)

# %% tags=["answer-output"]
from attnlab.data import grammar
from attnlab.kernels import attention_backend, run_times

GRAMMAR = grammar.GRAMMAR


class TinyDecoder(nn.Module):
    """Word vectors E[w, j] plus a vector per position, L causal blocks, a last LN, scores E .
    state."""

    def __init__(self, n_words: int, J: int = 32, H: int = 2, L: int = 2, T_max: int = 20) -> None:
        super().__init__()
        self.H, self.K = H, J // H
        self.E = nn.Parameter(0.3 * torch.randn(n_words, J))
        self.position = nn.Parameter(0.3 * torch.randn(T_max, J))
        g = torch.Generator().manual_seed(0)
        drawn = (random_weights(g, J, H, J // H, J // H, 2 * J, torch.float32) for _ in range(L))
        self.blocks = nn.ModuleList(nn.ParameterDict({n: nn.Parameter(w) for n, w in p.items()})
                                    for p in drawn)
        self.gain, self.shift = nn.Parameter(torch.ones(J)), nn.Parameter(torch.zeros(J))

    def scores(self, state: torch.Tensor) -> torch.Tensor:
        """state[..., J] -> log P(next word)[..., n_words]."""
        return torch.log_softmax(layer_norm(state, self.gain, self.shift) @ self.E.T, dim=-1)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """ids[..., T] -> log P(next word)[..., T, n_words], every position in one pass (vmap over a
        batch)."""
        M = self.E[ids] + self.position[:ids.shape[-1]]
        for params in self.blocks:
            step = functools.partial(causal_block, params=dict(params), H=self.H, K=self.K)
            M = torch.vmap(step)(M) if M.dim() == 3 else step(M)
        return self.scores(M)

    def greedy(self, first: int, T: int, cached: bool) -> list[int]:
        """T word ids from `first` on, the likeliest word at each step: every prefix rerun, or one
        step on caches."""
        ids = [first]
        caches = [(self.E.new_zeros(self.H, 0, self.K),
                   self.E.new_zeros(self.H, 0, self.K)) for _ in self.blocks]
        with torch.no_grad():
            while len(ids) < T:
                if cached:
                    x = self.E[ids[-1]] + self.position[len(ids) - 1]
                    for n, params in enumerate(self.blocks):
                        x, *caches[n] = block_step(x, *caches[n], dict(params), self.H, self.K)
                    log_p = self.scores(x)
                else:
                    log_p = self(torch.tensor(ids))[-1]
                ids.append(int(log_p.argmax()))
                if ids[-1] == grammar.EOS:
                    break
        return ids


decoded = {}
if not is_grading():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a model this small runs fastest on one thread
    torch.manual_seed(0)
    train_set = GRAMMAR.sample(4000, seed=1)
    model = TinyDecoder(len(GRAMMAR.vocab))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(0)
    for _ in range(300):  # the next-word loss over every predicted word of a batch of 64 sentences
        batch = train_set[torch.randint(0, len(train_set), (64,), generator=g)]
        log_p = model(batch.ids[:, :-1])
        live = torch.arange(batch.ids.shape[1] - 1)[None] <= batch.lengths[:, None]
        loss = -(log_p.gather(-1, batch.ids[:, 1:, None]).squeeze(-1) * live).sum() / live.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    for cached in (False, True):
        decoded[cached] = model.greedy(grammar.BOS, 20, cached)
    print("\n".join(f"greedy, {how}: " + " ".join(GRAMMAR.vocab[i] for i in decoded[cached])
                    for how, cached in (("every prefix rerun", False),
                                        ("with the cache    ", True))))  # claim: ch8-words
    torch.set_num_threads(threads)

# %% tags=["solutions-only"]
if decoded:
    assert decoded[True] == decoded[False], \
        "the same words with and without the cache"  # claim: ch8-same-words

# %% tags=["answer-output"] mystnb={"figure": {"caption": "Time per generated word against its position: rerunning the whole prefix, and one step with the cache. Compare how each grows as the position doubles."}}
step_Ts = [] if is_grading() else ([256, 512, 1024, 2048] if device.type == "cuda"
                                   else [64, 128, 256, 512])
per_word = {"every prefix rerun": [], "with the cache": []}
if step_Ts:
    J, H = 256, 4
    K = J // H
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    timing_blocks = [{n: w.to(device, dtype)
                      for n, w in random_weights(torch.Generator().manual_seed(3 + n), J, H, K, K,
                                                 4 * J).items()} for n in range(2)]
    backend = attention_backend(causal_block, torch.randn(8, J, device=device, dtype=dtype),
                                timing_blocks[0], H, K)
    with torch.no_grad():
        for T in step_Ts:
            M = torch.randn(T, J, device=device, dtype=dtype)
            caches = []
            for params in timing_blocks:  # the caches of the first T - 1 positions, filled once
                P = F.linear(layer_norm(M[:-1], params["gain1"], params["shift1"]), params["W"])
                caches.append(tuple(x.reshape(T - 1, H, K).transpose(0, 1).contiguous()
                                    for x in P.split([H * K, H * K, H * K], dim=1)[1:]))

            def rerun(M=M) -> torch.Tensor:
                for params in timing_blocks:
                    M = causal_block(M, params, H, K)
                return M[-1]

            def one_step(M=M, caches=caches) -> torch.Tensor:
                x = M[-1]
                for params, (Key, Value) in zip(timing_blocks, caches):
                    x = block_step(x, Key, Value, params, H, K)[0]
                return x

            per_word["every prefix rerun"].append(
                statistics.median(run_times(rerun, repeats=5, warmup=1)))
            per_word["with the cache"].append(
                statistics.median(run_times(one_step, repeats=5, warmup=1)))
    for T, a, b in zip(step_Ts, *per_word.values()):
        print(f"word {T}: {a * 1e3:.2f} ms rerunning the prefix, "
              f"{b * 1e3:.2f} ms with the cache")  # claim: ch8-per-word
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for name, times in per_word.items():
        ax.plot(step_Ts, times, "o-",
                label=f"{name}" + (f" (attention: {backend})" if "rerun" in name else ""))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("position t of the word generated")
    ax.set_ylabel("seconds per word (median)")
    ax.set_title(f"Time per word, L = 2 blocks of J = {J}, on {device.type}")
    ax.legend(fontsize=9)
    plt.show()

# %% [markdown]
# The run above prints the words each way <!-- claim: ch8-words -->, the same words twice <!-- claim: ch8-same-words -->:
# the cache changes how much is computed, not what. Then it prints the time of one word at
# each position <!-- claim: ch8-per-word -->, the numbers to read the plot against.
