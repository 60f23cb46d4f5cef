# %% [markdown]
# # Chapter 6. Language CNNs
#
# A convolutional network can read a sentence too: embed the words, then apply
# convolution layers that each look at a few neighbouring positions. With **stride 2**
# every layer halves the length, so after a few layers a single position summarises the
# whole sentence <!-- not a claim: the idea of the chapter, worked out in Problems 6.6 and 6.7 -->. This chapter asks you to write those layers as tensor equations and to
# implement them, to compare the parallel time of a CNN with that of an RNN, and adds the
# point the seed leaves out: how many layers a CNN needs before one output has seen every
# word.
#
# You will
#
# * write the equations of the embedding layer and of a stride-2 convolution layer in the
#   book's index notation (`EMBED_EQUATION`, `STRIDE2_EQUATION`), then implement them,
#   `embed(w, E)` and `conv_stride2(M, W, beta)`;
# * give the parallel running time of an $L$-layer CNN and of an $L$-layer RNN
#   (`CNN_TIME`, `RNN_TIME`);
# * count the words one output of a stride-2 stack depends on, and the layers it takes
#   before one output has seen the whole sentence (`receptive_field`, `layers_needed`), then
#   compare the CNN with the RNN in a few sentences;
# * train a CNN and an RNN to classify the topic of sentences from a probabilistic grammar,
#   against the best accuracy any classifier can reach, time both against the sentence
#   length, and measure their depth with the book's profiler. <!-- not a claim: the chapter's plan -->
#
# The problems restate seed 002 (TTIC 31230 2020, Problem 3) in this book's notation.

# %% [markdown]
# ## Notation
#
# <!-- letters: B:batch D:filterwidth E:wordvectors J:width L:layers M:vectors O:order P:probability
# T:length V:output W:weights \Delta:offset \Phi:parameters \beta:bias \ell:layer \sigma:sigmoid
# \xi:argument b:batch e:euler j:width r:receptive t:length w:word z:state -->
#
# The part of the book's table (front matter, *Notation*) this chapter uses, and the seed's
# letters for the same things:
#
# | book | meaning | seed 002 P3 |
# |---|---|---|
# | $w[b, t]$, $b < B$, $t < T$ | word ids of a batch of $B$ sentences, positions from $0$ | $w_1, \dots, w_T$ (one sentence, from $1$); $w[b, t]$ in (a) |
# | $\mathcal V$, $\lvert\mathcal V\rvert$ | the vocabulary, its size | (not named) |
# | $E[w, j]$, $j < J$ | word vectors: layer $0$ has $J$ channels | $e[w, i]$ |
# | $M_\ell[b, t, j]$ | layer $\ell$: sentence $b$, position $t$, channel $j$ | $L_\ell[b, t, i]$ |
# | $W_{\ell+1}[\Delta, j, j']$, $\Delta < D$ | the filter of layer $\ell + 1$: offset $\Delta$, **input** channel $j$, **output** channel $j'$ | $W_{\ell+1}[\Delta t, i, i']$ in $\Phi$; $W_{\ell+1}[\Delta t, i', i]$ in (b) |
# | $\beta_{\ell+1}[j']$ | the threshold (bias) of output channel $j'$ | $B_{\ell+1}[i]$ |
# | $\sigma(\xi) = 1 / (1 + e^{-\xi})$ | the logistic function | $\sigma$ |
# | $D$ | filter width | (not named) |
# | $L$ | number of layers | $L$ |
#
# The book's letters differ from the seed's where the seed's clash with the rest of the
# book: $L$ is the number of layers (the seed also uses it for the layers' values, $L_\ell$),
# $B$ the batch size (the seed also uses it for the bias, $B_{\ell+1}$), <!-- seed -->$I$<!-- /seed --> a head's value
# size.
#
# **Errata.**
#
# * The seed names the filter's channels in two orders: the parameter list $\Phi$ writes <!-- seed -->$W[\Delta t, i, i']$<!-- /seed --> without saying which channel is the input, and part (b) writes <!-- seed -->$W_{\ell+1}[\Delta t, i', i]$<!-- /seed --> with <!-- seed -->$i'$<!-- /seed --> summed, the *input* channel in the middle slot and
#   the *output* channel last. The book adopts part (b)'s order,
#   $W_{\ell+1}[\Delta, j, j']$ = [offset, input channel, output channel]; the bias belongs to
#   the output channel, $\beta_{\ell+1}[j']$.
# * The seed never says which $\Delta t$ occur or what happens at the end of the sentence. The
#   book uses a filter of width $D$ ($\Delta = 0, \dots, D-1$) and **valid positions only**:
#   an output position exists only if its whole window lies inside the input, so a stride-2
#   layer maps $T_\ell$ positions to $T_{\ell+1} = \lfloor (T_\ell - D)/2 \rfloor + 1$ (no
#   padding).
# * (a) calls $L_0$ "the convolution layer"; it is the embedding layer (it convolves nothing).
# * (c) asks to compare with "the parallel run time of an RNN" without saying how many layers
#   it has: Problem 6.5 asks for an RNN of $L$ layers.
# * The seed's printed solution of (b) loses one index on its right-hand side; <!-- not a claim: an erratum of the seed --> the worked
#   solution (solutions edition) says which.

# %%
import math
import os
import time

# before torch starts its threads (see Chapter 4)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import matplotlib.pyplot as plt
import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm.auto import tqdm

from attnlab.data import grammar
from attnlab.data.grammar import GRAMMAR, PAD
from attnlab.equations import evaluate
from attnlab.grading import is_grading
from attnlab.testing import (
    Explained,
    expect_answer,
    expect_close,
    expect_equations,
    expect_like,
    expect_shape,
)

if not is_grading():
    torch.set_num_threads(2)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print("active device:", device)


# %% [markdown]
# ## 6.1 The embedding layer
#
# The input is a batch of sentences: $w[b, t]$ is the id of the word at position $t$ of
# sentence $b$ (padded to a common length $T$ with the id of `<pad>`). The model's parameters
# are the word vectors $E[w, j]$, one row of $J$ numbers per word of the vocabulary, and the
# filters and biases of its $L$ convolution layers,
# $\Phi = (E, W_1, \beta_1, \dots, W_L, \beta_L)$. Layer $0$, $M_0[b, t, j]$, holds the
# vector of every word of every sentence.
#
# **Problem 6.1 (seed 002 P3a).** Give an equation for layer $0$, $M_0[b, t, j]$, as a
# function of the word vectors $E$ and the sentences $w$. Write it in the book's index
# notation (the answer language of `attnlab.equations`), naming the tensors `M0`, `E` and
# `w`: one line `M0[b,t,j] = ...`. An index position may hold an index (`t`), an integer
# combination of indices (`2*t + 1`), or a value read from an integer tensor such as `w`.

# %% nbgrader={"grade": false, "grade_id": "embed_equation", "locked": false, "schema_version": 3, "solution": true}
# One equation, M0[b,t,j] = ..., from E[w, j] (|V| x J) and w[b, t] (B x T, word ids).
### BEGIN SOLUTION
EMBED_EQUATION = r"""
M0[b,t,j] = E[w[b,t], j]
"""
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_embed_equation", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Visible tests: the form of your equation (names, indices, sizes), then its value on a case worked
# out by hand.
expect_equations(EMBED_EQUATION, inputs={"E": "Vocab,J", "w": "B,T in Vocab"},
                 defines={"M0": "B,T,J"},
                 what="Problem 6.1, EMBED_EQUATION")

# By hand: 3 words with J = 2, E = [[0, 1], [2, 3], [4, 5]], and two sentences w = [[2, 0, 2], [1,
# 1, 0]]. Layer 0 holds the vector of each word of each sentence: [[[4, 5], [0, 1], [4, 5]], [[2,
# 3], [2, 3], [0, 1]]].
hand = {"E": torch.tensor([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], dtype=torch.float64),
        "w": torch.tensor([[2, 0, 2], [1, 1, 0]])}
got = evaluate(EMBED_EQUATION, hand)["M0"]
if got.shape == (2, 3, 2) and torch.equal(got[0], got[1]):
    raise Explained(f"Evaluated on two hand-checked sentences your M0 is {got.tolist()}: both "
                    "sentences get the same vectors, but each sentence b must read its own words.")
expect_close(got,
             torch.tensor([[[4.0, 5.0], [0.0, 1.0], [4.0, 5.0]],
                           [[2.0, 3.0], [2.0, 3.0], [0.0, 1.0]]],
                               dtype=torch.float64),
             "your M0 on the hand-checked sentences [[2, 0, "
             "2], [1, 1, 0]] with E = [[0, 1], [2, 3], [4, 5]]",
             hint="Each position of each sentence holds the vector of the "
                  "word written there: which axis of E does a word id select?")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch6.EMBED_EQUATION", EMBED_EQUATION)
### END HIDDEN TESTS

# %% [markdown]
# **Problem 6.2.** Implement your equation: `embed(w, E)` takes `w`, an integer tensor
# $[B, T]$ of word ids, and `E`, $[\lvert\mathcal V\rvert, J]$, and returns
# $M_0[B, T, J]$ with `E`'s dtype and device.

# %% nbgrader={"grade": false, "grade_id": "embed", "locked": false, "schema_version": 3, "solution": true}
def embed(w: torch.Tensor, E: torch.Tensor) -> torch.Tensor:
    """w[B, T] integer word ids, E[|V|, J] word vectors -> M0[B, T, J]: layer 0 of the language
    CNN."""
    ### BEGIN SOLUTION
    return E[w]
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_embed", "locked": true, "points": 1, "schema_version": 3, "solution": false}
# Visible tests: hand-computed cases; each failure says what is wrong.
E1 = torch.tensor([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], dtype=torch.float64)  # |V| = 3 words, J = 2
w1 = torch.tensor([[2, 0, 2]])  # one sentence of three words
got = embed(w1, E1)
expect_shape(got, (1, 3, 2), "embed(w[1,3], E[3,2])",
             hint="One J-vector per word of every sentence: [B, T, J].")
expect_like(got, E1, "embed with float64 word vectors")
expect_like(embed(w1, E1.float()), E1.float(), "embed with float32 word vectors")
expect_close(got, torch.tensor([[[4.0, 5.0], [0.0, 1.0], [4.0, 5.0]]], dtype=torch.float64),
             "embed([[2, 0, 2]], E)",
             hint="Look at what E's rows and columns index, and which of them a word id selects.")

# Two sentences, a vocabulary of 4 words with J = 3 (|V| != J: the row of E is the word, the column
# the channel).
E2 = torch.tensor([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 3.0], [4.0, 5.0, 6.0]],
                  dtype=torch.float64)
w2 = torch.tensor([[3, 1], [0, 3]])
expect_close(embed(w2, E2),
             torch.tensor([[[4.0, 5.0, 6.0], [0.0, 2.0, 0.0]], [[1.0, 0.0, 0.0], [4.0, 5.0, 6.0]]],
                                        dtype=torch.float64), "embed([[3, 1], [0, 3]], E[4,3])",
             hint="Sentence b keeps its own words, in order: the "
                  "batch index and the positions are not mixed.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch6.embed", embed)
### END HIDDEN TESTS

# %% [markdown]
# ## 6.2 A stride-2 convolution layer
#
# Layer $\ell + 1$ is a convolution of layer $\ell$ with stride 2 and a filter of width $D$,
# valid positions only (no padding; output position 0 is the window at the start of the
# sentence), followed by a threshold and the logistic function $\sigma$. <!-- given --> The conventions:
# $W_{\ell+1}[\Delta, j, j']$ is indexed by the offset $\Delta < D$ within a window, the
# input channel $j$ and the output channel $j'$; the threshold $\beta_{\ell+1}[j']$ is
# *subtracted* before $\sigma$. The filter may change the number of channels: $W_{\ell+1}$ is
# $[D, J, J']$, and layer $\ell + 1$ has $J'$ channels and
# $T_{\ell+1} = \lfloor (T_\ell - D)/2 \rfloor + 1$ positions.
#
# **Problem 6.3 (seed 002 P3b).** Give an equation for $M_{\ell+1}[b, t, j']$ as a function of
# $M_\ell$, the filter $W_{\ell+1}$ and the bias $\beta_{\ell+1}$. Name the tensors `M1`
# (layer $\ell + 1$, sizes `B,T2,J2`), `M0` (layer $\ell$, `B,T,J`), `W` (`D,J,J2`) and
# `beta` (`J2`); `sigmoid` is $\sigma$. One line `M1[b,t,j2] = ...`.

# %% nbgrader={"grade": false, "grade_id": "stride2_equation", "locked": false, "schema_version": 3, "solution": true}
# One equation, M1[b,t,j2] = ..., from M0[b,t,j] (B x T x J), W[d,j,j2] (D x J x J2) and beta[j2]
# (J2).
### BEGIN SOLUTION
STRIDE2_EQUATION = r"""
M1[b,t,j2] = sigmoid(sum_{d,j} W[d,j,j2] * M0[b, 2*t + d, j] - beta[j2])
"""
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_stride2_equation", "locked": true, "points": 2, "schema_version": 3, "solution": false}
# Visible tests: the form of your equation (names, indices, sizes), then its value on a case worked
# out by hand.
expect_equations(STRIDE2_EQUATION, inputs={"M0": "B,T,J", "W": "D,J,J2", "beta": "J2"},
                 defines={"M1": "B,T2,J2"},
                 what="Problem 6.3, STRIDE2_EQUATION")

# By hand: one channel in and out, D = 2, W = [[[1]], [[2]]] (W[0] = 1, W[1] = 2), beta = [1], and
# two sentences, [1, 2, 3, 4, 5] and [5, 4, 3, 2, 1]. Two windows fit in each; before the sigmoid
# the outputs are [1 + 2*2 - 1, 3 + 2*4 - 1] = [4, 10] and [5 + 2*4 - 1, 3 + 2*2 - 1] = [12, 6].
hand = {"M0": torch.tensor([[[1.0], [2.0], [3.0], [4.0], [5.0]],
                            [[5.0], [4.0], [3.0], [2.0], [1.0]]],
                           dtype=torch.float64),
        "W": torch.tensor([[[1.0]], [[2.0]]], dtype=torch.float64),
        "beta": torch.tensor([1.0], dtype=torch.float64)}
got = evaluate(STRIDE2_EQUATION, hand)["M1"]
# what some common mistakes give on this example before the sigmoid (worked out by hand)
mistakes = {
    "the windows start one position apart (stride 1); with stride 2 they start two positions apart":
        [[4.0, 7.0, 10.0, 13.0], [12.0, 9.0, 6.0, 3.0]],
    "the threshold beta is added; the convention subtracts it before the sigmoid":
        [[6.0, 12.0], [14.0, 8.0]],
    "W[0] multiplies the last position of each window: "
    "the offset counts from the window's first position":
        [[3.0, 9.0], [13.0, 7.0]],
}
for mistake, wrong in mistakes.items():
    expected = torch.sigmoid(torch.tensor(wrong, dtype=torch.float64)[:, :, None])
    if got.shape == expected.shape and torch.allclose(got, expected, atol=1e-6):
        raise Explained("Evaluated on the two hand-checked sentences "
                        f"your M1 is {got.tolist()}: {mistake}.")
if got.shape == (2, 2, 1) and torch.allclose(
    got, torch.tensor([[[4.0], [10.0]], [[12.0], [6.0]]], dtype=torch.float64)):
    raise Explained("Evaluated on the two hand-checked sentences your M1 is the "
                    "sums before the nonlinearity: apply the logistic sigmoid.")
expect_close(got,
             torch.sigmoid(torch.tensor([[[4.0], [10.0]], [[12.0], [6.0]]], dtype=torch.float64)),
             "your M1 on the hand-checked sentences (expected sigmoid of [[4, 10], [12, 6]])",
             hint="Work the example by hand: which positions of the same sentence does "
                  "each output window read, and which of W[0], W[1] multiplies which?")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch6.STRIDE2_EQUATION", STRIDE2_EQUATION)
### END HIDDEN TESTS

# %% [markdown] tags=["solutions-only"]
# ### Worked solution (Problems 6.1 and 6.3)
#
# Layer $0$ reads, for every sentence $b$ and position $t$, the row of $E$ of the word there:
#
# $$
# M_0[b, t, j] = E\big[w[b, t],\ j\big].
# $$
#
# A stride-2 layer: output position $t$ reads input positions $2t + \Delta$, $\Delta < D$, of
# the same sentence $b$, sums over the offsets and the input channels, subtracts the
# threshold of the output channel and applies $\sigma$:
#
# $$
# \begin{aligned}
# M_{\ell+1}[b, t, j'] &= \sigma\Big( \sum_{\Delta < D} \sum_{j < J} W_{\ell+1}[\Delta, j, j']\;
# M_\ell[b, 2t + \Delta, j] \;-\; \beta_{\ell+1}[j'] \Big), \\
# t &< T_{\ell+1} = \Big\lfloor \frac{T_\ell - D}{2} \Big\rfloor + 1 .
# \end{aligned}
# $$
#
# With valid positions only, the last window of $M_{\ell+1}$, at $t = T_{\ell+1} - 1$, ends at
# $2(T_{\ell+1} - 1) + D - 1 \le T_\ell - 1$: every index stays inside the input. So $D = 2$
# halves an even length exactly, and $D = 3$ maps a length one less than a power of two to
# the next such length ($15 \to 7 \to 3 \to 1$). <!-- not a claim: derived from the inequality before -->
#
# **Erratum in the seed's solution of (b).** Its right-hand side reads <!-- seed -->$L_\ell[2t + \Delta t, i']$<!-- /seed -->: the batch index $b$ is lost. It must be <!-- seed -->$L_\ell[b, 2t + \Delta t, i']$<!-- /seed --> in the seed's letters, since every sentence of the batch is convolved on its own
# (without $b$ on the right, the left side's $b$ would be free, and every sentence would get
# the same output).

# %% [markdown]
# **Problem 6.4.** Implement your equation: `conv_stride2(M, W, beta)`, where `M` is
# $[B, T, J]$, `W` is $[D, J, J']$, `beta` is $[J']$, and the result is $[B, T_{\ell+1}, J']$
# with $T_{\ell+1} = \lfloor (T - D)/2 \rfloor + 1$ (valid positions only; for example
# $T = 8$, $D = 3$ gives 3 positions, not 4). <!-- not a claim: the formula's example, checked by the visible test --> `torch.sigmoid` is $\sigma$. Work on the
# inputs' device and dtype. (PyTorch can cut a dimension into overlapping windows with a
# step; a loop over the $D$ offsets works as well.)

# %% nbgrader={"grade": false, "grade_id": "conv_stride2", "locked": false, "schema_version": 3, "solution": true}
def conv_stride2(M: torch.Tensor, W: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """M[B, T, J], W[D, J, J'] (offset, input channel, output channel), beta[J']
    -> M1[B, (T - D)//2 + 1, J']: one stride-2 layer with the logistic nonlinearity, valid positions
    only."""
    ### BEGIN SOLUTION
    D = W.shape[0]
    windows = M.unfold(1, D, 2)  # [B, T2, J, D]: windows[b, t, j, d] = M[b, 2t + d, j]
    return torch.sigmoid(torch.einsum("btjd,djJ->btJ", windows, W) - beta)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_conv_stride2", "locked": true, "points": 3, "schema_version": 3, "solution": false}
# Visible tests: hand-computed cases, limits and properties; each failure says what is wrong.
g = torch.Generator().manual_seed(1)
B, T, D, J, J2 = 2, 8, 3, 4, 5  # J != J': the filter changes the number of channels
M = torch.randn(B, T, J, generator=g, dtype=torch.float64)
W = torch.randn(D, J, J2, generator=g, dtype=torch.float64)
beta = torch.randn(J2, generator=g, dtype=torch.float64)
out = conv_stride2(M, W, beta)
expect_shape(out, (B, 3, J2), "conv_stride2(M[2,8,4], W[3,4,5], beta[5])",
             hint="Valid positions only: (T - D)//2 + 1 = (8 - 3)//2 + 1 = "
                  "3 windows fit. T//2 = 4 would need a window past the end "
                  "of the sentence (padding); T - D + 1 = 6 is stride 1.")
expect_like(out, M, "conv_stride2 on float64 inputs")
expect_like(conv_stride2(M.float(), W.float(), beta.float()), M.float(),
            "conv_stride2 on float32 inputs")
for T_, D_, n in ((3, 3, 1), (4, 3, 1), (9, 2, 4), (10, 2, 5), (2, 1, 1)):
    expect_shape(conv_stride2(torch.randn(B, T_, J, generator=g, dtype=torch.float64), W[:D_],
                              beta), (B, n, J2),
                 f"conv_stride2 with T = {T_}, D = {D_}",
                 hint=f"(T - D)//2 + 1 = {n} windows of width D fit in T.")

# Limits: with W = 0 every output is sigma(-beta[j']), whatever M is.
zero = torch.zeros_like(W)
expect_close(conv_stride2(M, zero, beta), torch.sigmoid(-beta).expand(B, 3, J2),
             "conv_stride2 with W = 0",
             hint="sigma(0 - beta[j']): SUBTRACT the threshold (do "
                  "not add it), then apply the logistic sigmoid.")
expect_close(conv_stride2(M, zero, torch.zeros_like(beta)),
             torch.full((B, 3, J2), 0.5, dtype=torch.float64),
             "conv_stride2 with W = 0 and beta = 0",
             hint="sigma(0) = 1/2: apply torch.sigmoid to the sums.")

# By hand: one channel in and out, D = 2, W = [[[1]], [[2]]], beta = [1], M = [1, 2, 3, 4, 5]: two
# windows fit, and before the sigmoid the outputs are 4 and 10 (work them out).
M1 = torch.tensor([[[1.0], [2.0], [3.0], [4.0], [5.0]]], dtype=torch.float64)
W1 = torch.tensor([[[1.0]], [[2.0]]], dtype=torch.float64)
expect_close(conv_stride2(M1, W1, torch.tensor([1.0], dtype=torch.float64)),
             torch.sigmoid(torch.tensor([[[4.0], [10.0]]], dtype=torch.float64)),
             "conv_stride2 on the hand example",
             hint="Work the example by hand: which inputs does each output window "
                  "read with stride 2, and which of W[0], W[1] multiplies which "
                  "of them? (Offsets reversed give 3 and 9 before the sigmoid.)")

# The batch index is kept: each sentence is convolved on its own.
expect_close(out[1:], conv_stride2(M[1:], W, beta),
             "conv_stride2(M)[1] against conv_stride2(M[1:])",
             hint="Sentence b's output may depend on sentence b's input only.")

# The middle index of W is the input channel, the last the output channel.
expect_close(out[..., :2], conv_stride2(M, W[..., :2], beta[:2]), "the first two output channels",
             hint="W is [D, J, J']: sum over the middle index (input "
                  "channel j), keep the last (output channel j').")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch6.conv_stride2", conv_stride2)
### END HIDDEN TESTS

# %% [markdown] tags=["solutions-only"]
# ### Worked solution (Problem 6.4)
#
# `M.unfold(1, D, 2)` cuts dimension 1 (positions) into windows of size $D$ taken every 2
# steps and puts the window offset last: `windows[b, t, j, d]` $= M[b, 2t + \Delta, j]$ with $\Delta$ = `d`, for the
# $\lfloor (T - D)/2 \rfloor + 1$ windows that fit, which is exactly "valid positions only". <!-- not a claim: what unfold does (PyTorch's documentation) -->
# The sum over $\Delta$ and $j$ is then one contraction with the equation's letters,
# `einsum("btjd,djJ->btJ", windows, W)` (`J` standing for $j'$: a primed index is written as its capital, see the notation page), and the threshold is
# subtracted before $\sigma$. This is PyTorch's `conv1d` with `stride=2` and no padding, with
# the layout changed: `conv1d` wants the input as $[B, J, T]$ and the filter as $[J', J, D]$,
# and adds its bias rather than subtracting it. The cell below checks the two agree. The
# layer $0$ of Problem 6.2 is `E[w]` (indexing with an integer tensor), or
# `F.embedding(w, E)`.

# %% tags=["solutions-only"]
g = torch.Generator().manual_seed(2)
M = torch.randn(3, 16, 8, generator=g, dtype=torch.float64)
W = torch.randn(3, 8, 5, generator=g, dtype=torch.float64)
beta = torch.randn(5, generator=g, dtype=torch.float64)
reference = torch.sigmoid(F.conv1d(M.transpose(1, 2), W.permute(2, 1, 0), -beta,
                                   stride=2).transpose(1, 2))
print("max |conv_stride2 - sigmoid(conv1d)| =",
      (conv_stride2(M, W, beta) - reference).abs().max().item())

# %% [markdown]
# ## 6.3 Parallel running time
#
# Assume, as the seed does, that every operation runs as soon as its inputs exist, with as
# many processors as needed, and that every parameter tensor has size $O(1)$: $D$ and the
# numbers of channels are constants, so one output of a layer, a sum of $O(1)$ products,
# takes $O(1)$ time once its inputs exist. The sentence length $T$ and the number of layers
# $L$ are two independent sizes: no relation between them is assumed, and an order must hold
# for every way they grow ($L$ much larger than $T$ as well as $T$ much larger than $L$). <!-- given -->
#
# **Problem 6.5 (seed 002 P3c).** Give the orders of growth, as functions of $T$ and $L$:
#
# * `CNN_TIME`: the parallel running time of this chapter's model, the embedding layer
#   followed by $L$ stride-2 layers, every position of every layer computed (a sentence too
#   short for $L$ layers is padded, so that every layer keeps at least one position); <!-- given -->
# * `RNN_TIME`: the parallel running time of an $L$-layer RNN on the same sentence. Layer 1
#   reads the word vectors, $z_1[t] = \text{CELL}(z_1[t-1], M_0[t])$; layer $\ell + 1$ reads
#   the states of layer $\ell$, $z_{\ell+1}[t] = \text{CELL}(z_{\ell+1}[t-1], z_\ell[t])$, for
#   $t = 0, \dots, T-1$; one step of CELL takes $O(1)$ time; the result is the last state of
#   the last layer.
#
# Write each as an expression in `T` and `L`, such as `"T**2 * log(L)"` or `"sqrt(T) + L**3"`
# (constant factors and lower-order terms do not matter; `O( )` is optional).

# %% nbgrader={"grade": false, "grade_id": "cnn_time", "locked": false, "schema_version": 3, "solution": true}
# An expression in L and T.
# Your answer, in this form:
# CNN_TIME = "..."
### BEGIN SOLUTION
CNN_TIME = "L"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_cnn_time", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(CNN_TIME, ["L", "T"], "CNN_TIME")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch6.CNN_TIME", CNN_TIME)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "rnn_time", "locked": false, "schema_version": 3, "solution": true}
# An expression in L and T.
# Your answer, in this form:
# RNN_TIME = "..."
### BEGIN SOLUTION
RNN_TIME = "T + L"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_rnn_time", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(RNN_TIME, ["L", "T"], "RNN_TIME")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch6.RNN_TIME", RNN_TIME)
### END HIDDEN TESTS

# %% [markdown] tags=["solutions-only"]
# ### Worked solution (Problem 6.5)
#
# *Problem 6.5, CNN.* All positions of a layer are computed at once; one position of layer
# $\ell + 1$ needs $D \cdot J = O(1)$ products, a sum of $O(1)$ terms, a subtraction and a
# $\sigma$: $O(1)$ time once layer $\ell$ exists. The embedding is a table lookup, $O(1)$.
# The layers must run one after another, so `CNN_TIME` is $L$, whatever $T$ is.
#
# *Problem 6.5, RNN.* The state at $t$ needs the state at $t - 1$, so one layer takes $T$
# steps of $O(1)$ each. With $L$ layers, layer $\ell + 1$ can start on position $t$ as soon
# as layer $\ell$ has produced it: the layers run as a pipeline (a wavefront), and the last
# state of the last layer is ready after $T + L - 1$ steps, not $T L$. So `RNN_TIME` is
# $T + L$. The seed's "$O(T)$" is the one-layer case ($L = 1$); since no relation between $T$
# and $L$ is assumed, `"T"` alone is wrong for $L$ layers ($L$ may exceed $T$), and so is
# `"T*L"` (the layers do not wait for each other to finish).

# %% [markdown]
# ## 6.4 How many layers does a CNN need?
#
# Problem 6.5 times a CNN of a given depth $L$ against an RNN whose last state has read the
# whole sentence. The two are not doing the same job if an output of the CNN does not see
# the whole sentence. Call the **receptive field** of layer $\ell$ the words that one output
# position of layer $\ell$ depends on, and $r_\ell$ their number. Layer $0$, the embedding,
# reads one word per position, so $r_0 = 1$; a stride-2 layer of width $D$ reads $D$
# consecutive positions of the layer below, so $r_1 = D$. Above that, the windows of the
# layers below overlap. The figure draws the windows of stride-2 layers of width $D = 3$ on
# $T = 15$ words: every position is joined to the $D$ positions of the layer below that it
# reads.

# %% mystnb={"figure": {"caption": "Stride-2 layers of width $D = 3$ on $T = 15$ words: each position is joined to the $D$ positions of the layer below that it reads. Follow one top position down to the words it depends on."}}
D, T = 3, 15
sizes = [T]  # positions per layer, valid positions only: T_{l+1} = (T_l - D) // 2 + 1
while sizes[-1] >= D:
    sizes.append((sizes[-1] - D) // 2 + 1)


def centre(l: int, t: int) -> float:
    """Where position t of layer l is drawn: midway between the first and last positions it
    reads."""
    return float(t) if l == 0 else (centre(l - 1, 2 * t) + centre(l - 1, 2 * t + D - 1)) / 2


fig, ax = plt.subplots(figsize=(8, 4.5))
for l in range(1, len(sizes)):
    for t in range(sizes[l]):
        for d in range(D):
            ax.plot([centre(l, t), centre(l - 1, 2 * t + d)], [l, l - 1], color="0.75", lw=0.8,
                    zorder=1)
for l, n in enumerate(sizes):
    ax.scatter([centre(l, t) for t in range(n)], [l] * n, s=60, zorder=2,
               label=f"$M_{l}$: {n} position{'s' * (n > 1)}")
ax.set_yticks(range(len(sizes)))
ax.set_xlabel("word position t")
ax.set_ylabel("layer")
ax.set_title(f"Stride-2 layers of width D = {D} on T = {T} words")
ax.legend(fontsize=9, loc="upper left")
plt.show()

# %% [markdown]
# **Problem 6.6.** Implement `receptive_field(l, D)`: the number of words $r_\ell$ that one
# output position of layer $\ell$ depends on, in a stack of $\ell$ stride-2 layers of width
# $D$ (valid positions only, as in Problem 6.4) on the embedding layer, for every
# $\ell \ge 0$ and $D \ge 1$. A recursion in $\ell$ or a closed form, either is accepted; it
# must be exact for deep stacks too (the grader asks up to $\ell = 60$: count the words, do not
# build the sentence). Return a Python `int`.

# %% nbgrader={"grade": false, "grade_id": "receptive_field", "locked": false, "schema_version": 3, "solution": true}
def receptive_field(l: int, D: int) -> int:
    """r_l: words that one output of layer l depends on, for stride-2 layers of width D (r_0 =
    1)."""
    ### BEGIN SOLUTION
    return 1 + (D - 1) * (2**l - 1)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_receptive_field", "locked": true, "points": 2, "schema_version": 3, "solution": false}
for l, D in [(0, 3), (2, 3), (5, 2), (3, 1), (40, 4)]:
    if type(receptive_field(l, D)) is not int:
        raise Explained(f"receptive_field({l}, {D}) returned "
                        f"{type(receptive_field(l, D)).__name__}; return a Python int "
                        "(a float cannot count the words of a deep stack exactly).")
if any(receptive_field(0, D) != 1 for D in (1, 2, 3, 5)):
    raise Explained("receptive_field(0, D) should be 1: layer "
                    "0 is the embedding, one word per position.")
if any(receptive_field(1, D) != D for D in (1, 2, 3, 5)):
    raise Explained("receptive_field(1, D) should be D: a stride-2 "
                    "layer reads D consecutive positions of layer 0.")
if any(receptive_field(l + 1, D) <= receptive_field(l, D) for l in range(6) for D in (2, 3, 5)):
    raise Explained("with D >= 2 one output of layer l + 1 should see more words than one "
                    "of layer l: the D positions it reads do not all start at the same word.")
if all(receptive_field(2, D) == D * D for D in (3, 4, 5)):
    raise Explained("receptive_field(2, D) = D * D counts D windows of D "
                    "words each, as if they did not overlap (a stride of D). "
                    "Stride 2 starts neighbouring windows 2 positions apart.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch6.receptive_field", receptive_field)
### END HIDDEN TESTS

# %% [markdown]
# **Problem 6.7.** Implement `layers_needed(T, D)`: the fewest stride-2 layers of width
# $D \ge 2$ after which one output position depends on every word of a sentence of
# $T \ge 1$ words (the sentence padded, as in Problem 6.5, so that the top layer keeps a
# position). The grader asks up to $T = 10^{15}$ <!-- given -->. Return a Python `int`. It is graded with
# your own `receptive_field` inside, if you call it: a mistake in Problem 6.6 is not charged
# twice, as long as `layers_needed` still answers every trial within the cell's time limit.

# %% nbgrader={"grade": false, "grade_id": "layers_needed", "locked": false, "schema_version": 3, "solution": true}
def layers_needed(T: int, D: int) -> int:
    """The fewest stride-2 layers of width D >= 2 after which one output sees all T words."""
    ### BEGIN SOLUTION
    if D < 2:
        raise ValueError(f"with D = {D} a layer's output sees one "
                         "word: no depth sees a longer sentence")
    layers = 0
    while receptive_field(layers, D) < T:
        layers += 1
    return layers
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_layers_needed", "locked": true, "points": 1, "schema_version": 3, "solution": false}
for T, D in [(1, 3), (15, 3), (1000, 2)]:
    if type(layers_needed(T, D)) is not int:
        raise Explained(f"layers_needed({T}, {D}) returned "
                        f"{type(layers_needed(T, D)).__name__}; return a Python int.")
if any(layers_needed(1, D) != 0 for D in (2, 3, 5)):
    raise Explained("layers_needed(1, D) should be 0: the embedding alone sees a one-word "
                    "sentence.")
if any(layers_needed(T + 1, D) < layers_needed(T, D) for T in range(1, 60) for D in (2, 3, 5)):
    raise Explained("a longer sentence never needs fewer layers.")
for T, D in [(2, 2), (9, 3), (100, 3), (1000, 5), (10**6, 2)]:
    L = layers_needed(T, D)
    if receptive_field(L, D) < T or (L > 0 and receptive_field(L - 1, D) >= T):
        raise Explained(f"layers_needed({T}, {D}) = {L} disagrees with your receptive_field: "
                        f"the answer is the smallest L with receptive_field(L, {D}) >= {T}.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch6.layers_needed", layers_needed)
### END HIDDEN TESTS

# %% [markdown]
# Your two answers, against the sentence length: the layers a CNN needs before one output
# has seen every word, and the steps one RNN layer takes to read them.

# %% tags=["answer-output"] mystnb={"figure": {"caption": "Sequential steps before one output has seen every word, against the sentence length: one RNN layer takes $T$ steps; a CNN needs your `layers_needed(T, D)` layers."}}
if not is_grading():
    try:
        Ts = [2**k for k in range(2, 17)]
        fig, ax = plt.subplots(figsize=(7, 4.5))
        ax.loglog(Ts, Ts, "o-", base=2, label="one RNN layer: T steps")
        for D_ in (2, 3, 5):
            ax.loglog(Ts, [layers_needed(T_, D_) for T_ in Ts], "s-", base=2,
                      label=f"CNN, D = {D_}: your layers_needed(T, {D_})")
        ax.set_xlabel("sentence length T")
        ax.set_ylabel("sequential steps to see every word")
        ax.set_title("Depth to full context")
        ax.legend(fontsize=9)
        plt.show()
        for T_ in (15, 100, 1000, 10**6):
            print(f"T = {T_:>7}: a D = 3 CNN needs {layers_needed(T_, 3):2d} "
                  f"layers, one RNN layer {T_} steps")
    except Exception as exc:  # unfinished answers: nothing to draw
        print(f"Your answers are not drawn: {type(exc).__name__}: {exc}")

# %% [markdown] tags=["solutions-only"]
# ### Worked solution (Problems 6.6 and 6.7)
#
# Count from the top: layers $2, \dots, \ell + 1$ form an $\ell$-layer CNN standing on
# layer 1, so one output of layer $\ell + 1$ depends on $r_\ell$ consecutive positions of
# layer 1. Those are windows of $D$ words that start 2 words apart, so together they cover
# $2(r_\ell - 1) + D$ words: <!-- not a claim: the worked solution's derivation -->
#
# $$
# r_{\ell+1} = 2 r_\ell + D - 2,
# \qquad r_0 = 1,
# \qquad\text{that is}\qquad
# r_\ell = 1 + (D - 1)(2^\ell - 1)
# $$
#
# ($r_1 = D$, $r_2 = 3D - 2$, $r_3 = 7D - 6$; with $D = 1$ every layer sees one word). The
# same recursion, read backwards, is the length rule of valid positions: $r_\ell$ words are
# exactly the shortest sentence that leaves one position at layer $\ell$. <!-- not a claim: the worked solution's derivation --> One output sees all
# $T$ words once $r_L \ge T$, that is
#
# $$
# L \;=\; \Big\lceil \log_2\!\Big(\frac{T - 1}{D - 1} + 1\Big) \Big\rceil \;\approx\; \log_2 T .
# $$
#
# The loop in the reference avoids the floating-point logarithm, which is exact here only by
# luck of the powers of two; any answer equal to it for every $T$ and $D \ge 2$ is accepted.
# So the number of layers a CNN needs for **full context** grows like $\log_2 T$, against the
# RNN's $T$ steps of one layer: exponentially fewer, but not a constant. <!-- not a claim: the worked solution's derivation -->

# %% [markdown]
# **Problem 6.8 (seed 002 P3c, the comparison).** Compare the two running times of Problem
# 6.5 in a few sentences: for a sentence of $T$ words, which model is faster in parallel <!-- not a claim: the question -->
# time, and by how much? Is the comparison fair: which words can one output of each model
# have read, and what does a CNN's time become once it must read all $T$ words? Write your
# answer in the cell below (it is graded by hand).

# %% [markdown] nbgrader={"grade": true, "grade_id": "cnn_rnn_comparison", "locked": false, "points": 2, "schema_version": 3, "solution": true}
# ### BEGIN SOLUTION
# The CNN's parallel time is $O(L)$: every position of a layer is computed at once, in $O(1)$
# time, and only the layers follow one another; it does not depend on $T$. The $L$-layer RNN
# needs $O(T + L)$: each layer must step through the $T$ positions one after another, and
# its layers overlap as a pipeline (layer $\ell + 1$ starts on position $t$ as soon as layer
# $\ell$ has produced it), so they add $L$, not a factor $L$. For long sentences ($T \gg L$)
# the CNN is faster by a factor of about $T / L$. <!-- not a claim: the model answer, from Problem 6.5's orders -->
#
# The comparison is not quite fair. The RNN's last state has read every word. One output of
# an $L$-layer stride-2 CNN has read only the $1 + (D - 1)(2^L - 1)$ words of its receptive
# field, so for one output to depend on the whole sentence the CNN needs
# $L \approx \log_2 T$ layers, and then its time is $O(\log T)$: still exponentially less
# than the RNN's $O(T)$, but not independent of $T$. <!-- not a claim: the model answer, from Problems 6.5 and 6.7 -->
# ### END SOLUTION

# %% [markdown] tags=["solutions-only"]
# ### Rubric (Problem 6.8, 2 points)
#
# * **1 point: the comparison.** The CNN's time does not grow with $T$ ($O(L)$), the RNN's
#   grows linearly with $T$ ($O(T + L)$), so the CNN is faster for long sentences, by a
#   factor of order $T/L$; the reason is named (a CNN layer computes all positions at once,
#   an RNN layer must step through them). <!-- not a claim: the rubric --> Half a point if the answer compares $O(L)$ with
#   $O(T)$ without saying that the RNN's layers overlap, or without saying why.
# * **1 point: fairness.** One output of the CNN sees a window of the sentence whose width
#   grows like $2^L$ (its receptive field, Problem 6.6); to see all $T$ words the CNN needs
#   about $\log_2 T$ layers (Problem 6.7), so its time to read the whole sentence is
#   $O(\log T)$, against $O(T)$ for the RNN. <!-- not a claim: the rubric --> Any correct statement that a fixed-depth CNN
#   does not see the whole sentence, with the $\log T$ depth it takes to do so, earns the
#   point; half a point without the $\log T$.

# %% [markdown]
# ## 6.5 Classifying sentences
#
# The data: the sentences of Chapter 4's grammar. Each sentence was generated by one of
# three **topics** (animals, vehicles, people); the topic tilts the choice of nouns, verbs
# and adjectives but never fixes it (every noun can occur in every topic, only less often),
# so no single word decides the topic and a classifier must weigh the evidence of the whole
# sentence: *"this bird carries a happy truck"*. **The task: predict the topic of a
# sentence.** Since the grammar is known, the best possible classifier is known too: the
# posterior $P(\text{topic} \mid \text{sentence})$ by the forward algorithm, and its
# expected accuracy $\mathbb{E}[\max_{\text{topic}} P(\text{topic} \mid \text{sentence})]$ is the **Bayes optimum**
# no classifier can beat. <!-- not a claim: the Bayes optimum, by definition -->
#
# The CNN: your `embed`, then three of your `conv_stride2` layers with $D = 3$ and $J = 64$
# channels (sentences padded to $T = 15$ words, so that the third layer has a single
# position), and a linear map of that position to three scores. The
# RNN: `embed`, a GRU with $J = 64$, and a linear map of its state after the last word.

# %%
train_set = grammar.sample(20000, seed=0)
held_out = grammar.sample(2000, seed=1)
n_words, n_topics, T_IN = len(GRAMMAR.vocab), len(grammar.TOPICS), 15
BAYES = GRAMMAR.bayes_accuracy(held_out)
bayes_classifier = (GRAMMAR.topic_posteriors(held_out).argmax(1)
                    == held_out.topics).double().mean().item()
for n in range(4):
    p = GRAMMAR.topic_posteriors(held_out[n:n + 1])[0]
    print(f"{GRAMMAR.text(held_out, n):45s} topic "
          f"{grammar.TOPICS[held_out.topics[n]]:>8};  P(topic | sentence) = "
          + ", ".join(f"{c} {q:.2f}" for c, q in zip(grammar.TOPICS, p.tolist())))
print(f"\nBayes-optimal accuracy E[max_c P(c | sentence)] on the held-out set: {BAYES:.4f}")
print("the Bayes classifier's accuracy on these "
      f"{len(held_out)} sentences:      {bayes_classifier:.4f}")


class CNNClassifier(nn.Module):
    """embed, `layers` stride-2 layers of width D, then scores from the first position of the top
    layer."""

    def __init__(self, n_words: int, n_topics: int, J: int = 64, D: int = 3,
                 layers: int = 3) -> None:
        super().__init__()
        self.E = nn.Parameter(0.5 * torch.randn(n_words, J))
        self.W = nn.ParameterList(nn.Parameter(torch.randn(D, J, J) / math.sqrt(D * J))
                                  for _ in range(layers))
        self.beta = nn.ParameterList(nn.Parameter(torch.zeros(J)) for _ in range(layers))
        self.out = nn.Linear(J, n_topics)

    def forward(self, w: torch.Tensor) -> torch.Tensor:
        """w[B, T] -> scores[B, topics]."""
        M = embed(w, self.E)
        for W, beta in zip(self.W, self.beta):
            M = conv_stride2(M, W, beta)
        return self.out(M[:, 0])


class RNNClassifier(nn.Module):
    """embed, a GRU, then scores from the state after the last word."""

    def __init__(self, n_words: int, n_topics: int, J: int = 64) -> None:
        super().__init__()
        self.E = nn.Parameter(0.5 * torch.randn(n_words, J))
        self.gru = nn.GRU(J, J, batch_first=True)
        self.out = nn.Linear(J, n_topics)

    def forward(self, w: torch.Tensor) -> torch.Tensor:
        """w[B, T] (padding after each sentence) -> scores[B, topics]."""
        z = self.gru(embed(w, self.E))[0]
        last = (w != PAD).sum(1) - 1
        return self.out(z[torch.arange(len(w), device=w.device), last])


def accuracy(model: nn.Module, batch: grammar.Sentences) -> float:
    """Fraction of sentences whose topic the model gets right."""
    with torch.no_grad():
        predicted = model(batch.words(T_IN).to(device)).argmax(1).cpu()
        return (predicted == batch.topics).float().mean().item()


def train(model: nn.Module, name: str, steps: int = 400, lr: float = 1e-2, batch_size: int = 128,
          every: int = 50, seed: int = 0) -> dict[str, list[float]]:
    """Adam, one-cycle learning rate, cross-entropy on the topic; held-out accuracy every `every`
    steps."""
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.1)
    curve = {"step": [], "accuracy": []}
    start = time.perf_counter()
    bar = tqdm(range(1, steps + 1), desc=name)
    for step in bar:
        batch = train_set[torch.randint(len(train_set), (batch_size,), generator=g)]
        loss = F.cross_entropy(model(batch.words(T_IN).to(device)), batch.topics.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        schedule.step()
        if step % every == 0:
            curve["step"].append(step)
            curve["accuracy"].append(accuracy(model, held_out))
            bar.set_postfix(held_out_accuracy=f"{curve['accuracy'][-1]:.3f}", bayes=f"{BAYES:.3f}")
    curve["seconds"] = time.perf_counter() - start
    return curve


DEMO = not is_grading()  # the grader only needs the graded cells above
results = {}
if DEMO:
    torch.manual_seed(0)
    cnn = CNNClassifier(n_words, n_topics).to(device)
    results["CNN, 3 layers"] = train(cnn, "CNN, 3 layers")
    torch.manual_seed(0)
    rnn = RNNClassifier(n_words, n_topics).to(device)
    results["GRU"] = train(rnn, "GRU")
    for name, r in results.items():
        print(f"{name:>14}: held-out accuracy {r['accuracy'][-1]:.4f} (Bayes optimum {BAYES:.4f}), "
              f"trained in {r['seconds']:.1f} s on {device.type}")

# %% [markdown]
# Section 6.4 in action: the same CNN with only one or two layers, still read at its first
# top position, sees only the first $r_1$ or $r_2$ words of each sentence. How much of the
# topic's evidence does each depth keep? (The first layer's window holds a determiner,
# perhaps an adjective, perhaps the subject noun; this grammar's sentences are mostly short.)

# %% mystnb={"figure": {"caption": "Held-out topic accuracy during training, the GRU (top) and the CNN read at its first top position (bottom), with the Bayes optimum. Compare how close each comes to the optimum."}}
if results:
    for layers in (1, 2):
        torch.manual_seed(0)
        shallow = CNNClassifier(n_words, n_topics, layers=layers).to(device)
        results[f"CNN, {layers} layer"
                + "s" * (layers > 1)] = train(shallow, f"CNN, {layers} layer(s)")
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(8, 8.5))
    for name, r in results.items():
        ax.plot(r["step"], r["accuracy"], "o-", label=name)
    ax.axhline(BAYES, color="k", lw=1, label=f"Bayes optimum {BAYES:.3f}")
    ax.set_xlabel("training step (batches of 128 sentences)")
    ax.set_ylabel("held-out accuracy")
    ax.set_title("Topic classification")
    ax.legend(fontsize=9)
    depths = [1, 2, 3]
    accs = [results[f"CNN, {d} layer" + "s" * (d > 1)]["accuracy"][-1] for d in depths]
    ax2.bar([f"{d} layer{'s' * (d > 1)}" for d in depths], accs, color="C0")
    ax2.axhline(results["GRU"]["accuracy"][-1], color="C1", lw=2, label="GRU")
    ax2.axhline(BAYES, color="k", lw=1, label="Bayes optimum")
    ax2.set_ylim(0.5, 1.0)
    ax2.set_ylabel("held-out accuracy")
    ax2.set_title("CNN read at its first top position")
    ax2.legend(fontsize=9)
    plt.tight_layout()
    plt.show()
    for name, r in results.items():
        print(f"{name:>14}: {r['accuracy'][-1]:.4f}")


# %% [markdown]
# ## 6.6 Wall-clock against the sentence length
#
# Now the running time on this machine's active device: one forward pass over a batch of 8
# random sentences whose length $T$ is one less than a power of two, for the CNN with enough layers to see the whole
# sentence (your `layers_needed(T, 3)` layers of width 3) and for the GRU ($J = 64$ for <!-- given -->
# both). Every time is the **median of 9 runs after 2 warm-up runs**, <!-- given --> and the band around it
# spans the fastest to the slowest run: on a shared, loaded machine single runs scatter, and
# the median with its spread shows what is signal. (On a GPU the clock is read after
# `torch.cuda.synchronize()`, since kernels run asynchronously.) The student edition leaves
# out this cell's outputs and those of the next section, since they show your answer to
# Problem 6.7: run them in your notebook.
#
# Both models do work proportional to $T$. Before you run it, predict from your answers to
# Problems 6.5 and 6.8 how each curve should grow with $T$ on a CPU with a few cores, where
# the work decides much of the time, and on a GPU, where all positions of a layer can run at
# once; then compare.

# %% [markdown] tags=["solutions-only"]
# *What to expect.* On a CPU with a few cores the work decides the time, but the CNN does it
# in a few large operations, one per layer, and the GRU in $T$ small ones that wait for each
# other, each paying its overhead. On a GPU the CNN's time should stay nearly flat until the
# device is full, while the GRU's still grows linearly with $T$. <!-- claim: ch6-timing-ratios --> The run prints each
# model's growth from the shortest to the longest sentence and the ratio of the two at the
# longest, the figures to compare with this expectation <!-- claim: ch6-timing-ratios -->.

# %% tags=["answer-output"] mystnb={"figure": {"caption": "Wall-clock of one forward pass against the sentence length, for the CNN and the GRU (points: medians; bars: fastest to slowest run). Compare the slopes."}}
from attnlab.kernels import run_times


def wall_clock(fn, *args) -> tuple[float, float, float]:
    """(median, fastest, slowest) seconds of fn(*args) over 9 timed runs (`run_times`)."""
    times = sorted(run_times(fn, *args))
    return times[len(times) // 2], times[0], times[-1]


def gru_kernel() -> str:
    """What runs nn.GRU on the active device."""
    if (device.type == "cuda" and torch.backends.cudnn.is_available()
            and torch.backends.cudnn.enabled):
        return "cuDNN's fused RNN kernel (aten::_cudnn_rnn), all T steps in one call"
    return ("PyTorch's own GRU kernel (aten::gru), a loop over the T positions with one matrix "
            "product per step")


timed_Ts = [2**k - 1 for k in range(4, 12)] if DEMO else []
cnn_s, rnn_s = [], []
g = torch.Generator().manual_seed(3)
with torch.no_grad():
    for T in timed_Ts:
        w = torch.randint(4, n_words, (8, T), generator=g).to(device)
        torch.manual_seed(0)
        cnn_T = CNNClassifier(n_words, n_topics, layers=layers_needed(T, 3)).to(device)
        rnn_T = RNNClassifier(n_words, n_topics).to(device)
        cnn_s.append(wall_clock(cnn_T, w))
        rnn_s.append(wall_clock(rnn_T, w))
if timed_Ts:
    where = (f"{device.type}, {torch.get_num_threads()} threads" if device.type == "cpu"
             else torch.cuda.get_device_name())
    print(f"on {where}; the GRU runs as {gru_kernel()}")
    for T, (a, a0, a1), (b, b0, b1) in zip(timed_Ts, cnn_s, rnn_s):
        print(f"T = {T:5d}: CNN ({layers_needed(T, 3):2d} layers) "
              f"{a * 1e3:8.2f} ms ({a0 * 1e3:.2f} to {a1 * 1e3:.2f})   "
              f"GRU {b * 1e3:8.2f} ms ({b0 * 1e3:.2f} to {b1 * 1e3:.2f})")
    print(f"from T = {timed_Ts[0]} to T = {timed_Ts[-1]} ({timed_Ts[-1] / timed_Ts[0]:.0f} "
          f"times longer): the CNN's time x{cnn_s[-1][0] / cnn_s[0][0]:.1f}, the GRU's "
          f"x{rnn_s[-1][0] / rnn_s[0][0]:.1f}; at T = {timed_Ts[-1]} the GRU takes "
          f"{rnn_s[-1][0] / cnn_s[-1][0]:.1f} times the CNN's time")  # claim: ch6-timing-ratios
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for runs, style, label in ((cnn_s, "s-", "CNN, layers for full context"), (rnn_s, "o-", "GRU")):
        median, fastest, slowest = zip(*runs)
        line, = ax.plot(timed_Ts, median, style, label=f"{label}: median of 9")
        ax.fill_between(timed_Ts, fastest, slowest, color=line.get_color(), alpha=0.2,
                        label=f"{label}: fastest to slowest")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sentence length T")
    ax.set_ylabel("seconds per forward pass (batch of 8)")
    ax.set_title(f"Wall-clock on {where}")
    ax.legend(fontsize=9)
    plt.show()

# %% [markdown]
# ## 6.7 Depth, measured
#
# The book's profiler (`attnlab.profiler.parallel_time`, Chapter 1) runs a function on shapes
# only and returns its depth, the parallel time on an ideal machine, here with logarithmic
# sums. Below it measures *your* `embed` and `conv_stride2` stacked into a CNN, with a fixed
# 3 layers and with enough layers for full context (your `layers_needed`), and a one-layer RNN <!-- given -->
# written as a loop
# ($z[t] = \tanh(M_0[t]\, W_{\text{in}} + z[t-1]\, W_z)$), against $T$; then RNNs of $L = 1, 4, 8$ <!-- given --> layers
# (layer $\ell + 1$ reads the states of layer $\ell$, as in Problem 6.5) on sentences of $T = 4, 8, 16$ <!-- given --> words.

# %% tags=["answer-output"] mystnb={"figure": {"caption": "Measured depth against $T$: one RNN layer, a CNN with enough layers for the whole sentence, and a fixed 3-layer CNN. Compare how each grows as $T$ doubles."}}
from attnlab.profiler import parallel_time
from attnlab.symbolic import parse_answer


def cnn_forward(w: torch.Tensor, E: torch.Tensor,
                layers: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """embed, then conv_stride2 with each (W, beta) of `layers`."""
    M = embed(w, E)
    for W, beta in layers:
        M = conv_stride2(M, W, beta)
    return M


def rnn_forward(w: torch.Tensor, E: torch.Tensor,
                layers: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """embed, then for each (W_in, W_z) of `layers` a layer z[t] = tanh(x[t] W_in + z[t-1] W_z) for
    t = 0..T-1, where x is the layer below (M0 for the first); the last state of the top layer."""
    inputs = list(embed(w, E).unbind(1))  # M0[:, t], t = 0..T-1
    for W_in, W_z in layers:
        z = torch.zeros(w.shape[0], W_z.shape[0], dtype=E.dtype, device=E.device)
        states = []
        for x in inputs:
            z = torch.tanh(x @ W_in + z @ W_z)
            states.append(z)
        inputs = states
    return inputs[-1]


J, D = 64, 3
depth_Ts = [2**k - 1 for k in range(4, 12)] if DEMO else []
if depth_Ts:
    try:
        def words(T: int) -> torch.Tensor:
            return torch.zeros(4, T, dtype=torch.long)

        layer = ((D, J, J), (J,))
        cnn_full = [parallel_time(cnn_forward, words(T), (n_words, J),
                                  [layer] * layers_needed(T, D)).depth
                    for T in depth_Ts]
        cnn_fixed = [parallel_time(cnn_forward, words(T), (n_words, J),
                                   [layer] * 3).depth for T in depth_Ts]
        rnn_depth = [parallel_time(rnn_forward, words(T), (n_words, J),
                                   [((J, J), (J, J))]).depth for T in depth_Ts]
        rnn_Ls, rnn_short_Ts = (1, 4, 8), (4, 8, 16)
        rnn_stack = {(L, T): parallel_time(rnn_forward, words(T), (n_words, J),
                                           [((J, J), (J, J))] * L).depth
                     for L in rnn_Ls for T in rnn_short_Ts}
    except Exception as exc:  # an unfinished embed or conv_stride2: nothing to measure
        print(f"Depth plot skipped: {type(exc).__name__}: {exc}")
        depth_Ts = []


def depth_plot() -> plt.Axes:
    """The measured depths against T."""
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(depth_Ts, rnn_depth, "o", color="C1", label="RNN (one layer), measured")
    ax.plot(depth_Ts, cnn_full, "s", color="C0", label="CNN with layers for full context, measured")
    ax.plot(depth_Ts, cnn_fixed, "^", color="C2", label="CNN with 3 layers, measured")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("sentence length T")
    ax.set_ylabel("depth (log-sum cost model)")
    ax.set_title(f"Parallel time of a language CNN and an RNN (J = {J}, D = {D})")
    return ax


if depth_Ts:
    depth_plot().legend(fontsize=9)
    plt.show()
    for T, a, b, c in zip(depth_Ts, cnn_full, cnn_fixed, rnn_depth):
        print(f"T = {T:5d}: CNN {layers_needed(T, D):2d} layers "
              f"depth {a:4d}, CNN 3 layers {b:3d}, RNN {c:6d}")

# %% [markdown]
# Now the same measurements with your answers drawn over them: your `CNN_TIME` (evaluated
# at each CNN's $L$ and $T$) and `RNN_TIME` (at $L = 1$, then at each $L$ of the short sentences), each scaled by a fitted factor plus a fitted constant,
# since an order has no constant (`attnlab.fits.fit`: a curve follows its points when it misses none by more
# than a tenth of their range) <!-- not a claim: how the plot is read -->. Does each curve follow its points?

# %% tags=["answer-output"] mystnb={"figure": {"caption": "Your `CNN_TIME` and `RNN_TIME`, each scaled by a fitted factor plus a fitted constant (lines), over the measured depths (points). A right answer's line runs through its points."}}
from attnlab.fits import fit

if depth_Ts:
    try:
        cnn_expr = parse_answer(CNN_TIME, ["L", "T"], what="CNN_TIME")
        rnn_expr = parse_answer(RNN_TIME, ["L", "T"], what="RNN_TIME")
    except Exception as exc:  # answers not given yet: nothing to draw
        print(f"Your answers are not drawn: {type(exc).__name__}: {exc}")
    else:
        def value(expr, L: int, T: int) -> float:
            return float(expr.subs({s: {"L": L, "T": T}[s.name] for s in expr.free_symbols}))

        Ls = [layers_needed(T, D) for T in depth_Ts] + [3] * len(depth_Ts)
        cnn_line = fit(cnn_full + cnn_fixed,
                       [value(cnn_expr, L, T) for L, T in zip(Ls, depth_Ts * 2)])
        fitted_cnn = cnn_line.curve
        fitted_rnn = fit(rnn_depth, [value(rnn_expr, 1, T) for T in depth_Ts]).curve
        stack_line = fit(list(rnn_stack.values()), [value(rnn_expr, L, T) for L, T in rnn_stack])
        for name, line in (("CNN_TIME", cnn_line), ("RNN_TIME", stack_line)):
            print(f"{name} = {globals()[name]!r}: "
                  + ("follows" if line.follows else "does NOT follow")
                  + f" the points (misses by at most {line.miss:.0%} of their range"
                  + (", over the RNNs of L layers)" if name == "RNN_TIME" else ")"))
        n = len(depth_Ts)
        ax = depth_plot()
        ax.plot(depth_Ts, fitted_rnn, "-", color="C1",
                label=f"RNN_TIME = {RNN_TIME!r} at L = 1, fitted")
        ax.plot(depth_Ts, fitted_cnn[:n], "-", color="C0", label=f"CNN_TIME = {CNN_TIME!r}, fitted")
        ax.plot(depth_Ts, fitted_cnn[n:], "-", color="C2")
        ax.legend(fontsize=9)
        plt.show()
        fig, ax = plt.subplots(figsize=(7, 4))
        for k, L in enumerate(rnn_Ls):
            ax.plot(rnn_short_Ts, [rnn_stack[L, T] for T in rnn_short_Ts], "o", color=f"C{k}",
                    label=f"RNN, L = {L}")
            ax.plot(
                rnn_short_Ts, stack_line.curve[k * len(rnn_short_Ts):(k + 1) * len(rnn_short_Ts)],
                "-", color=f"C{k}")
        ax.set_xlabel("sentence length T")
        ax.set_ylabel("depth (log-sum cost model)")
        ax.set_title(f"RNNs of L layers: RNN_TIME = {RNN_TIME!r}, fitted")
        ax.legend(fontsize=9)
        plt.show()

# %% [markdown] tags=["solutions-only"]
# Each CNN layer costs the same constant depth (a contraction over $D \cdot J$ terms, a
# subtraction and a $\sigma$), so the fixed 3-layer CNN is flat in $T$ <!-- claim: ch6-cnn-flat --> and the full-context
# CNN climbs by one layer each time $T$ doubles: linear in $L$, and like $\log T$ once $L$ must
# cover the sentence. <!-- claim: ch6-cnn-climbs --> The one-layer RNN climbs by one step per word, linearly in $T$ <!-- claim: ch6-rnn-climbs -->; with
# $L$ layers it climbs by one more step per layer, $T + L - 1$ steps of one CELL, the pipeline of Problem 6.5 <!-- claim: ch6-rnn-pipeline -->.

# %% tags=["solutions-only"]
# The measured depths say what the paragraph above says (the reference's embed and conv_stride2 in
# the book's run).
if depth_Ts:
    cnn_step, rnn_step = cnn_full[1] - cnn_full[0], \
        (rnn_depth[1] - rnn_depth[0]) / (depth_Ts[1] - depth_Ts[0])
    assert len(set(cnn_fixed)) == 1, \
        f"the 3-layer CNN's depth is flat in T: {cnn_fixed}"  # claim: ch6-cnn-flat
    assert cnn_step > 0 and all(b - a == cnn_step for a, b in zip(cnn_full, cnn_full[1:])), (
        f"the full-context CNN climbs by one layer's depth per doubling of T: {cnn_full}"
    )  # claim: ch6-cnn-climbs
    assert rnn_step > 0 and all(b - a == rnn_step * (T2 - T1) for a, b, T1, T2 in zip(
        rnn_depth, rnn_depth[1:], depth_Ts,
        depth_Ts[1:])), f"the RNN climbs by one step per word: {rnn_depth}"  # claim: ch6-rnn-climbs
    cell = rnn_stack[1, rnn_short_Ts[0]] // rnn_short_Ts[0]  # one step of CELL
    assert all(depth == cell * (T + L - 1) for (L, T), depth in rnn_stack.items()), \
        f"L layers of RNN take T + L - 1 steps: {rnn_stack}"  # claim: ch6-rnn-pipeline

# %% [markdown]
# ## 6.8 Why attention: sequential steps and path length
#
# Seed 003 (HKU COMP3361, *Transformers (1)*) opens with a recurrent network reading
# "yesterday ... seemed": possibly $O(T)$ steps before the two words interact, and "the
# longer the path, the smaller the gradient signal". Attention, it goes on, lets every
# query read every key at once. Two different quantities hide in that argument:
#
# * the **sequential steps** of a model: its parallel running time, the critical path of
#   Section 6.3 (which is Chapter 1's cost model with every sum over $O(1)$ terms);
# * its **path length**: the number of units on the shortest chain of dependence from
#   word $0$ to the output at the last position of the top layer, where a unit is one
#   layer of a CNN or of self-attention, and one step of CELL of an RNN <!-- not a claim: definitions -->. A gradient that
#   links the last output to the first word travels back along such a chain. <!-- not a claim: a definition -->
#
# The three models, each of $L$ layers on a sentence of $T$ words, every other size
# ($D$, $J$, a head's query/key and value sizes, the number of heads) a constant:
#
# * the $L$-layer RNN of Problem 6.5;
# * the stride-2 CNN of Sections 6.2-6.4 (width $D \ge 2$), valid positions only: its top
#   layer's last output reads word $T - 1$, and reads word $0$ only once the stack is deep
#   enough (Problem 6.7);
# * $L$ layers of Chapter 1's self-attention, $M_{\ell+1} = \mathtt{self\_attention}(M_\ell, \dots)$,
#   without a mask.
#
# **The cost model.** As in Chapter 1, Problem 1.7: every operation runs as soon as its
# inputs exist, a sum takes time logarithmic in its number of terms, every other operation
# time $O(1)$.
#
# | model | sequential steps | path length, word $0$ to the last output |
# |---|---|---|
# | RNN, $L$ layers | `RNN_TIME` (Problem 6.5) | `RNN_PATH` |
# | stride-2 CNN | `CNN_TIME` (Problem 6.5) | `CNN_PATH` |
# | self-attention, $L$ layers | `ATTENTION_TIME` | `ATTENTION_PATH` |
#
# **Problem 6.9 (seed 003).** Fill in the rest of the table, each as an order in `T` and
# `L` (the two grow independently, as in Section 6.3), except `CNN_PATH`, in `T` alone:
#
# * `ATTENTION_TIME`: the sequential steps of $L$ self-attention layers in this cost model;
# * `RNN_PATH`: the path length of the $L$-layer RNN, from word $0$ to the last state of the
#   top layer;
# * `CNN_PATH`: the path length of the shallowest stride-2 CNN whose top layer's last output
#   reads word $0$, as an order in $T$ alone (its $L$ is not free: it is what the sentence
#   requires, so write the answer without $L$);
# * `ATTENTION_PATH`: the path length of the $L$ self-attention layers.
#
# **d2l.ai counts differently.** Its comparison of CNNs, RNNs and self-attention (*Dive into
# Deep Learning*, Section 11.6) counts, for **one** layer on $T$ tokens (in this book's
# letters), "sequential operations" $O(1)$ for a CNN, $O(T)$ for an RNN and $O(1)$ for
# self-attention, and maximum path lengths $O(T/D)$ for a stride-1 CNN of width $D$, $O(T)$
# and $O(1)$. Where do your answers differ from those, and why? (Think of what one
# "operation" is in each count, and of one layer against $L$; the worked solution answers.)

# %% nbgrader={"grade": false, "grade_id": "attention_time", "locked": false, "schema_version": 3, "solution": true}
# An expression in L and T.
# Your answer, in this form:
# ATTENTION_TIME = "..."
### BEGIN SOLUTION
ATTENTION_TIME = "L*log(T)"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_attention_time", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(ATTENTION_TIME, ["L", "T"], "ATTENTION_TIME")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch6.ATTENTION_TIME", ATTENTION_TIME)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "rnn_path", "locked": false, "schema_version": 3, "solution": true}
# An expression in L and T.
# Your answer, in this form:
# RNN_PATH = "..."
### BEGIN SOLUTION
RNN_PATH = "T + L"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_rnn_path", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(RNN_PATH, ["L", "T"], "RNN_PATH")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch6.RNN_PATH", RNN_PATH)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "cnn_path", "locked": false, "schema_version": 3, "solution": true}
# An expression in T: this CNN's L is what the sentence requires, not a free size.
# Your answer, in this form:
# CNN_PATH = "..."
### BEGIN SOLUTION
CNN_PATH = "log(T)"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_cnn_path", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(CNN_PATH, ["L", "T"], "CNN_PATH")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch6.CNN_PATH", CNN_PATH)
### END HIDDEN TESTS

# %% nbgrader={"grade": false, "grade_id": "attention_path", "locked": false, "schema_version": 3, "solution": true}
# An expression in L and T.
# Your answer, in this form:
# ATTENTION_PATH = "..."
### BEGIN SOLUTION
ATTENTION_PATH = "L"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "test_attention_path", "locked": true, "points": 1, "schema_version": 3, "solution": false}
expect_answer(ATTENTION_PATH, ["L", "T"], "ATTENTION_PATH")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch6.ATTENTION_PATH", ATTENTION_PATH)
### END HIDDEN TESTS

# %% [markdown]
# **Measured.** `attnlab.paths` finds which input positions each output position depends
# on, by probing: it sets one word's vector to NaN and sees which outputs turn NaN (a
# product with NaN is NaN even where the weight is 0, so this is the structure, not an
# accident of the weights). `path_lengths(units, X)` counts the fewest units on a chain,
# one per unit that computes a position. The RNN is written on its grid of states, inputs
# in rows $0$ to $T - 1$ and layer $\ell$'s states after them, one unit per wavefront
# (a CELL runs at the first step at which both its inputs exist: the state before it in its
# layer and the state below it), so each CELL on a chain counts
# once. The CNN is your `conv_stride2`, on sentences exactly as long as $r_L$ (one top
# output); the attention layers are PyTorch's `scaled_dot_product_attention` of one head,
# and their sequential steps are the profiler's depth (Section 6.7), on meta tensors up to
# $T = 2^{30}$ <!-- given -->, long enough for the sums over the keys to outweigh a layer's constant part. (This cell measures
# your own `conv_stride2`: run it yourself.)

# %% tags=["answer-output"]
from attnlab.paths import path_lengths, rnn_units

J_p = 4
gp = torch.Generator().manual_seed(8)
W_in_p, W_z_p, WQ_p, WK_p, WV_p = (torch.randn(J_p, J_p, generator=gp,
                                               dtype=torch.float64) for _ in range(5))


def cell_p(z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """One step of CELL: z[t] = tanh(M0[t] W_in + z[t-1] W_z), on vectors of J_p numbers."""
    return torch.tanh(x @ W_in_p + z @ W_z_p)


def attention_unit(M: torch.Tensor) -> torch.Tensor:
    """One self-attention layer of one head, M[T, J_p] -> [T, J_p] (PyTorch's kernel, scores scaled
    by 1/sqrt(J_p))."""
    return F.scaled_dot_product_attention(M @ WQ_p, M @ WK_p, M @ WV_p)


def attention_stack(M: torch.Tensor, layers: list) -> torch.Tensor:
    """len(layers) self-attention layers of one head, each with its own (WQ, WK, WV)."""
    for WQ, WK, WV in layers:
        M = F.scaled_dot_product_attention(M @ WQ, M @ WK, M @ WV)
    return M


path_Ls, rnn_Ts, att_Ts = (1, 2, 4), (2, 4, 8), (4, 16, 64)
time_Ts = tuple(2**k for k in range(6, 31, 4))  # shapes only: the depth of any length costs nothing
rnn_path, att_path, att_time, cnn_path = {}, {}, {}, {}
if DEMO:
    for L in path_Ls:
        for T in rnn_Ts:
            X = torch.cat([torch.randn(T, J_p, generator=gp, dtype=torch.float64),
                           torch.zeros(L * T, J_p, dtype=torch.float64)])
            rnn_path[L, T] = int(path_lengths(rnn_units(cell_p, T, L), X)[-1, 0])
        for T in att_Ts:
            X = torch.randn(T, J_p, generator=gp, dtype=torch.float64)
            att_path[L, T] = int(path_lengths([attention_unit] * L, X)[-1, 0])
        for T in time_Ts:
            att_time[L, T] = parallel_time(attention_stack, (T, J_p), [((J_p, J_p),) * 3] * L,
                                           model="log").depth
    try:
        W_p, beta_p = torch.randn(D, J_p, J_p, generator=gp, dtype=torch.float64), \
            torch.zeros(J_p, dtype=torch.float64)
        for L in range(1, 6):
            T = 1 + (D - 1) * (2**L - 1)  # r_L words: the top layer keeps one output
            dist = path_lengths([lambda X: conv_stride2(X[None], W_p, beta_p)[0]] * L,
                                torch.randn(T, J_p, generator=gp, dtype=torch.float64))
            cnn_path[T] = float(dist[-1, 0])
    except Exception as exc:  # an unfinished conv_stride2: nothing to measure
        print(f"CNN not measured: {type(exc).__name__}: {exc}")
    for L in path_Ls:
        print(f"L = {L}: RNN path " + ", ".join(f"T={T}: {rnn_path[L, T]}" for T in rnn_Ts)
              + ";  attention path " + ", ".join(f"T={T}: {att_path[L, T]}" for T in att_Ts)
              + ";  attention depth "
              + ", ".join(f"T=2^{T.bit_length() - 1}: {att_time[L, T]}" for T in time_Ts))
    print("CNN, shallowest stack reading word 0: "
          + ", ".join(f"T={T}: {p:g}" for T, p in cnn_path.items()))

# %% tags=["solutions-only"]
# The worked solution's closed forms (Problem 6.9), measured above on the reference conv_stride2.
if DEMO:
    assert all(rnn_path[L, T] == T + L - 1 for L in path_Ls for T in rnn_Ts), (
        "the RNN's chain from word 0 to the last state is T + L - 1 steps of CELL"
    )  # claim: ch6-rnn-path
    assert all(att_path[L, T] == L for L in path_Ls for T in att_Ts), \
        "L attention layers: a chain of L units"
    climbs = {L: {att_time[L, b] - att_time[L, a] for a, b in zip(time_Ts, time_Ts[1:])}
              for L in path_Ls}
    assert all(climbs[L] == {L * next(iter(climbs[1]))} for L in path_Ls), (
        f"the depth climbs by the same amount per layer each time T is x16: {climbs}"
    )  # claim: ch6-attention-depth
    assert list(cnn_path.values()) == [1.0, 2.0, 3.0, 4.0, 5.0], "r_L words need L layers"

# %% [markdown]
# Your four answers over the measurements, each scaled by a fitted factor plus a fitted
# constant (`attnlab.fits.fit`, as in Section 6.7): the RNN's path and attention's steps against $T$ for each
# $L$, the CNN's path against $T$, attention's path against $L$. (This cell shows your own
# answers: run it yourself.)

# %% tags=["answer-output"] mystnb={"figure": {"caption": "Your four answers, each scaled by a fitted factor plus a fitted constant (lines), over the measurements (points): the RNN's path and attention's steps against $T$, the CNN's path against $T$, attention's path against $L$."}}
if DEMO and rnn_path:
    try:
        exprs = {name: parse_answer(globals()[name], ["L", "T"], what=name)
                 for name in ("ATTENTION_TIME", "RNN_PATH", "CNN_PATH", "ATTENTION_PATH")}
    except Exception as exc:  # answers not given yet: nothing to draw
        print(f"Your answers are not drawn: {type(exc).__name__}: {exc}")
    else:
        def at(name: str, L: float, T: float) -> float:
            """Your answer `name` evaluated at L and T."""
            return float(exprs[name].subs({s: {"L": L, "T": T}[s.name]
                                           for s in exprs[name].free_symbols}))

        def drawn(name: str, measured: list[float], answer: list[float]) -> list[float]:
            """The curve a * answer + b fitted to `measured`; prints whether it follows the
            points."""
            line = fit(measured, answer)
            print(f"{name} = {globals()[name]!r}: "
                  + ("follows" if line.follows else "does NOT follow")
                  + f" the points (misses by at most {line.miss:.0%} of their range)")
            return line.curve

        # as wide as the book's other figures: readable
        fig, axes = plt.subplots(2, 2, figsize=(8.5, 7))
        axes = axes.ravel()
        panels = [("RNN_PATH", rnn_path, rnn_Ts), ("ATTENTION_TIME", att_time, time_Ts)]
        for ax, (name, measured, Ts_) in zip(axes, panels):
            keys = [(L, T) for L in path_Ls for T in Ts_]
            line = drawn(name, [measured[k] for k in keys], [at(name, *k) for k in keys])
            for n, L in enumerate(path_Ls):
                ax.plot(Ts_, [measured[L, T] for T in Ts_], "o", color=f"C{n}",
                        label=f"measured, L = {L}")
                ax.plot(Ts_, line[n * len(Ts_):(n + 1) * len(Ts_)], "-", color=f"C{n}")
            ax.set_title(f"{name} = {globals()[name]!r}, fitted")
            ax.set_xlabel("sentence length T")
            ax.set_xscale("log", base=2)
        cnn_T = list(cnn_path)
        if cnn_T:
            axes[2].plot(cnn_T, list(cnn_path.values()), "o", label="measured")
            axes[2].plot(
                cnn_T,
                drawn("CNN_PATH", list(cnn_path.values()),
                      [at("CNN_PATH", L + 1, T) for L, T in enumerate(cnn_T)]),
                         "-", label="your answer, fitted")
            axes[2].set_xscale("log", base=2)
        axes[2].set_title(f"CNN_PATH = {CNN_PATH!r}, fitted")
        axes[2].set_xlabel("sentence length T")
        axes[3].plot(path_Ls, [att_path[L, att_Ts[-1]] for L in path_Ls], "o",
                     label=f"measured, T = {att_Ts[-1]}")
        axes[3].plot(path_Ls, drawn("ATTENTION_PATH", [att_path[L, att_Ts[-1]] for L in path_Ls],
                                    [at("ATTENTION_PATH", L, att_Ts[-1]) for L in path_Ls]), "-",
                                    label="your answer")
        axes[3].set_title(f"ATTENTION_PATH = {ATTENTION_PATH!r}, fitted")
        axes[3].set_xlabel("layers L")
        for ax in axes:
            ax.set_ylabel("units")
            ax.legend(fontsize=7)
        plt.tight_layout()
        plt.show()

# %% [markdown] tags=["solutions-only"]
# ### Worked solution (Problem 6.9)
#
# *Sequential steps of attention.* One layer computes its projections (sums over $J$
# terms, a constant), the scores (a sum over a head's query/key coordinates), the softmax's normaliser (a
# sum over the $T$ keys) and the weighted average (a sum over the $T$ values): $\log T$ up
# to constants, and the layers follow one another, so `ATTENTION_TIME` is $L \log T$. The
# profiler's depth climbs by the same amount per layer each time $T$ is multiplied by 16. <!-- claim: ch6-attention-depth -->
#
# *The RNN's path.* Word $0$ enters the first layer's first state; from there any chain to
# the top layer's last state must take $T - 1$ steps along the time axis and $L - 1$ steps
# up the layers, each one CELL, plus the first CELL: $T + L - 1$ units, `RNN_PATH` is
# $T + L$. Measured exactly so. <!-- claim: ch6-rnn-path -->
#
# *The CNN's path.* Every chain through a stack of layers takes one unit per layer, so the
# path length is the depth of the shallowest stack whose top output reads word $0$, the
# `layers_needed` of Problem 6.7: `CNN_PATH` is $\log T$.
#
# *Attention's path.* One layer links every pair of positions in one unit (the NaN probe
# finds every output depending on every word), so $L$ layers give a chain of $L$ units
# whatever $T$ is: `ATTENTION_PATH` is $L$. "Every pair one step apart" is per layer.
#
# *Why d2l.ai's counts differ.* d2l counts one layer, and counts a matrix product or a
# softmax as one sequential operation, as if a sum of any number of terms took one step (an
# unbounded fan-in). Chapter 1's model charges a sum of $T$ terms $\log T$, so one attention
# layer is $\log T$ here and $O(1)$ there; the CNN's and the RNN's sums have a constant number
# of terms and the two counts agree per layer. For $L$ layers, the RNN's layers overlap
# (the pipeline of Problem 6.5: $T + L$, not $T L$), and every path through $L$ layers has
# at least $L$ units. d2l's $O(T/D)$ path is a stride-1 CNN's: its receptive field grows by
# $D - 1$ words per layer; stride 2 doubles it per layer, hence $\log T$. <!-- not a claim: follows from Problem 6.6's recursion -->
