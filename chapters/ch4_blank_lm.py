# %% [markdown]
# # Chapter 4. Blank language modeling
#
# BERT learns language by filling in blanks: take a sentence, hide one word, and predict
# it from the words on **both** sides. This chapter writes down that objective, builds the
# prediction of seed 002's Problem 1 from a bidirectional RNN, and trains it, together with
# a small Transformer, on sentences from a probabilistic grammar whose best possible loss is
# known exactly, so we can see how close training gets.
#
# You will
#
# * implement `blank_logits(h_fwd_prev, h_bwd_next, E, W_fwd, W_bwd)`, the scores of every
#   word of the vocabulary for the blank at every position, from the forward state just
#   before the blank and the backward state just after it;
# * train a bidirectional-RNN blank language model built on it, and a BERT-style
#   Transformer built on Chapter 1's layer, and compare both with the Bayes-optimal
#   cross-entropy.
#
# The problem restates seed 002 (TTIC 31230 2020, Problem 1) in this book's notation.

# %% [markdown]
# ## Notation
#
# | book | meaning | seed 002 P1 |
# |---|---|---|
# | $w_1, \dots, w_T$; $t \in \{1, \dots, T\}$ | a sentence of $T$ words, the blank's position | same |
# | $w < V$ | a word of the vocabulary (an integer id); $V$ words | $w$; the set $W$ |
# | $E[w, i]$, $i < I$ | word vectors (one row per word) | $e[w, J]$ in the question, $e[W, I]$ and $e[w_t, I]$ in the answer |
# | $\overrightarrow{h}[t, j]$, $j < J$ | forward state: has read $w_1, \dots, w_t$ | $\vec h[t, J]$ |
# | $\overleftarrow{h}[t, j]$, $j < J$ | backward state: has read $w_T, \dots, w_t$ | $\tilde h[t, J]$ |
# | $\overrightarrow{W}[i, j]$, $\overleftarrow{W}[i, j]$ | the two read-out matrices (`W_fwd`, `W_bwd`) | $\vec W[I, J]$, $\tilde W[I, J]$ |
# | $\text{logit}[t, w]$ | the score of word $w$ for the blank at $t$ | (inside the softmax) |
#
# **Errata.**
#
# * $\tilde h$ and $\tilde W$ are the seed's $\overleftarrow{h}$ and $\overleftarrow{W}$: the
#   left arrow over the letter was turned into a tilde when the seed was converted to
#   text. Nothing in the problem is "tilde-ed"; the book writes the arrows.
# * The question first gives word vectors as $e[w, J]$ and then says not to assume their
#   dimension is $J$, writing $e[W, I]$: the word vectors have their own dimension $I$,
#   which need not be $J$. The capital $W$ in $e[W, I]$ stands for the whole vocabulary (the
#   matrix of all word vectors), not for a word; the book writes the matrix $E[w, i]$ with
#   $w < V$, $i < I$.
# * The seed's answer writes $\operatorname{softmax}_{w_t} e[w_t, I]\,\vec W[I,J]\,\vec h[t-1,J] + \dots$,
#   using $w_t$ both for the true word and for the candidate the softmax ranges over. The
#   book names the candidate $w$ and writes the probability of the event $w_t = w$.
# * The seed uses $\vec h[t-1]$ and $\tilde h[t+1]$ without saying what they are at $t = 1$
#   and $t = T$, where $\vec h[0]$ and $\tilde h[T+1]$ do not come from any word.
#   Section 4.2 defines these boundary states.

# %%
import math
import os
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch starts its threads: see below
import matplotlib.pyplot as plt
import torch
import torch.nn as nn
import torch.nn.functional as F
from tqdm.auto import tqdm

from attnlab.data import grammar
from attnlab.data.grammar import BOS, EOS, GRAMMAR, MASK, PAD
from attnlab.grading import is_grading
from attnlab.testing import expect_close, expect_like, expect_shape

# Two threads, the budget this chapter is written for. PASSIVE: idle threads sleep instead of
# spinning; on a busy shared machine spinning threads make small models ~30x slower.
torch.set_num_threads(2)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print("active device:", device)

# %% [markdown]
# ## 4.1 The objective, and data whose optimum is known
#
# Draw a sentence $w_1, \dots, w_T$ from the corpus, draw a position $t$ uniformly from
# $\{1, \dots, T\}$, hide $w_t$, and ask the model for a distribution over the hidden word.
# Training minimises the expected cross-entropy (seed 002 P1)
#
# $$
# \Phi^* = \operatorname*{argmin}_\Phi\;
# \mathbb{E}_{w_1..w_T \sim \text{Train},\; t \sim \{1..T\}}
# \left[-\ln P_\Phi(w_t \mid w_1, \dots, w_{t-1}, w_{t+1}, \dots, w_T)\right].
# $$
#
# No model can go below the cross-entropy of the *true* conditional distribution, the
# conditional entropy $\mathbb{E}[-\ln P(w_t \mid \text{rest})]$ (Gibbs' inequality). For
# natural text that number is unknown. So this book draws its sentences from a small
# probabilistic grammar (`attnlab.data.grammar`) where it can be computed exactly:
#
# * a sentence picks a **topic** (animals, vehicles, people) and a **number** for its
#   subject (singular or plural), then walks through the states
#   *determiner, [adjective, [adjective]], noun, [preposition, determiner, [adjective], noun],
#   verb, then either [adverb] or an object determiner, [adjective], noun*;
# * every state emits a word; nouns, verbs and adjectives lean towards the topic;
# * the verb **agrees** with the subject across the prepositional phrase, whose own noun has
#   an independent number: *"the dog near the cats runs"*. Only *"the dog"* decides *runs*.
#
# The grammar is a probabilistic finite-state automaton (an HMM whose states emit words),
# with 99 states and 52 words (4 of them special: `<pad>`, `<bos>`, `<eos>`, `<mask>`). For
# such a model, forward-backward gives the exact posterior of a blank: with $s_t$ the
# state at position $t$, $B[s, w]$ its emission probabilities,
#
# $$
# P(w_t = w \mid \text{rest}) \;\propto\; \sum_s P(s_t = s \mid w_{<t})\; B[s, w]\;
# P(w_{>t},\ \text{end} \mid s_t = s),
# $$
#
# a forward pass for the first factor, a backward pass for the last. Averaging
# $-\ln P(w_t \mid \text{rest})$ over the held-out sentences and their positions gives the
# **optimum line**: the best blank cross-entropy any model can reach on that set.

# %%
train_set = grammar.sample(20000, seed=0)
held_out = grammar.sample(2000, seed=1)
V = len(GRAMMAR.vocab)
for n in range(6):
    print(f"{grammar.TOPICS[held_out.topics[n]]:>8}:  {GRAMMAR.text(held_out, n)}")
print(f"\n{len(train_set)} training and {len(held_out)} held-out sentences, "
      f"{int(held_out.lengths.min())} to {int(held_out.lengths.max())} words, vocabulary V = {V}")
print("ids of the first held-out sentence (<bos> w_1 .. w_T <eos> <pad> ...):", held_out.ids[0].tolist())

start = time.perf_counter()
OPTIMUM = GRAMMAR.blank_optimum(held_out)
print(f"\nBayes-optimal blank cross-entropy on the held-out set: {OPTIMUM:.4f} nats "
      f"(computed exactly in {time.perf_counter() - start:.2f} s)")
print(f"for comparison, ln V = {math.log(V):.3f} nats (a uniform guess)")


# %% [markdown]
# The exact posterior makes the grammar's structure visible. Here the verb is blanked: only
# singular verbs can fill it, because the subject is *a dog*, even though the noun right
# before the blank is *cats*.

# %%
def sentences(*texts: str) -> grammar.Sentences:
    """Sentences given as text -> a batch (topic set to 0: only inference uses it here)."""
    T = max(len(s.split()) for s in texts)
    ids = torch.full((len(texts), T + 2), PAD)
    for n, s in enumerate(texts):
        words = [GRAMMAR.word_id[w] for w in s.split()]
        ids[n, :len(words) + 2] = torch.tensor([BOS, *words, EOS])
    return grammar.Sentences(ids, torch.tensor([len(s.split()) for s in texts]), torch.zeros(len(texts), dtype=torch.long))


example = sentences("a dog near the cats runs quickly")
post = GRAMMAR.blank_posteriors(example)[0, 5]  # the blank is w_6 (index 5 of the words)
top = post.topk(6)
print("a dog near the cats ____ quickly")
for p, w in zip(top.values.tolist(), top.indices.tolist()):
    print(f"   {GRAMMAR.vocab[w]:>8}  {p:.3f}")


# %% [markdown]
# ## 4.2 Predicting a blank from both sides
#
# A bidirectional RNN runs two recurrent networks over the sentence. The forward one
# reads left to right, the backward one right to left:
#
# $$
# \overrightarrow{h}[t] = \text{RNN}_{\to}\big(\overrightarrow{h}[t-1],\ E[w_t]\big),
# \qquad
# \overleftarrow{h}[t] = \text{RNN}_{\leftarrow}\big(\overleftarrow{h}[t+1],\ E[w_t]\big),
# $$
#
# so $\overrightarrow{h}[t, j]$ has read $w_1, \dots, w_t$ and $\overleftarrow{h}[t, j]$ has
# read $w_T, \dots, w_t$. Both have $J$ coordinates; the word vectors $E[w, i]$ have $I$,
# which need not be $J$. To predict the blank at $t$ we may not use
# $\overrightarrow{h}[t]$ or $\overleftarrow{h}[t]$: both have read $w_t$, the answer. The
# states that have read exactly the rest of the sentence are $\overrightarrow{h}[t-1]$
# (everything before $t$) and $\overleftarrow{h}[t+1]$ (everything after). With two matrices
# $\overrightarrow{W}[i, j]$ and $\overleftarrow{W}[i, j]$ mapping them to word-vector space,
# the score of word $w$ is its word vector's inner product with what both sides predict:
#
# $$
# \text{logit}[t, w] = \sum_{i, j} E[w, i]\, \overrightarrow{W}[i, j]\, \overrightarrow{h}[t-1, j]
# \;+\; \sum_{i, j} E[w, i]\, \overleftarrow{W}[i, j]\, \overleftarrow{h}[t+1, j],
# \qquad
# P(w_t = w \mid \text{rest}) = \operatorname*{softmax}_{w}\ \text{logit}[t, w].
# $$
#
# **The boundary states.** At $t = 1$ nothing precedes the blank and the formula asks for
# $\overrightarrow{h}[0]$; at $t = T$ it asks for $\overleftarrow{h}[T+1]$. These are the
# initial states of the two RNNs, and they stand for "nothing before" and "nothing after".
# They can be zero vectors (then at $t = 1$ only the backward half speaks), or learned
# vectors. This chapter's model gets learned ones for free: every sentence is stored as
# `<bos>` $w_1 \dots w_T$ `<eos>`, the forward RNN starts (from zero) on `<bos>` and the
# backward one on `<eos>`, so $\overrightarrow{h}[0]$ is the state after reading `<bos>`, the
# same learned vector for every sentence, and $\overleftarrow{h}[T+1]$ the state after
# `<eos>`. A bonus: position $t$ of the array `ids` is then exactly the seed's $t$ (`ids[0]`
# is `<bos>`, `ids[t]` is $w_t$, `ids[T+1]` is `<eos>`).
#
# **Problem 4.1.** Implement `blank_logits`. Its inputs are already shifted by the caller:
# row $t$ of `h_fwd_prev` is $\overrightarrow{h}[t-1]$ and row $t$ of `h_bwd_next` is
# $\overleftarrow{h}[t+1]$ (boundary states included), so row $t$ of the output uses row $t$
# of each input. Return the logits, not probabilities (the cross-entropy takes logits). Work
# on the inputs' device and dtype.

# %% nbgrader={"grade": false, "grade_id": "blank_logits", "locked": false, "schema_version": 3, "solution": true}
def blank_logits(h_fwd_prev: torch.Tensor, h_bwd_next: torch.Tensor, E: torch.Tensor,
                 W_fwd: torch.Tensor, W_bwd: torch.Tensor) -> torch.Tensor:
    """Scores of every word for the blank at every position.

    h_fwd_prev[T, J]: row t is the forward state before the blank;
    h_bwd_next[T, J]: row t is the backward state after it; E[V, I] word vectors;
    W_fwd[I, J], W_bwd[I, J] -> logits[T, V].
    """
    ### BEGIN SOLUTION
    return (torch.einsum("wi,ij,tj->tw", E, W_fwd, h_fwd_prev)
            + torch.einsum("wi,ij,tj->tw", E, W_bwd, h_bwd_next))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "test_blank_logits", "locked": true, "points": 4, "schema_version": 3, "solution": false}
g = torch.Generator().manual_seed(0)
T, J, V_, I = 5, 6, 7, 3  # I != J: the word vectors have their own dimension
h_fwd_prev = torch.randn(T, J, generator=g, dtype=torch.float64)
h_bwd_next = torch.randn(T, J, generator=g, dtype=torch.float64)
E = torch.randn(V_, I, generator=g, dtype=torch.float64)
W_fwd = torch.randn(I, J, generator=g, dtype=torch.float64)
W_bwd = torch.randn(I, J, generator=g, dtype=torch.float64)
out = blank_logits(h_fwd_prev, h_bwd_next, E, W_fwd, W_bwd)
expect_shape(out, (T, V_), "blank_logits(h[5,6], h[5,6], E[7,3], W[3,6], W[3,6])",
             hint="One row per position t, one column per word w of the vocabulary.")
expect_like(out, E, "blank_logits on float64 inputs")
expect_like(blank_logits(h_fwd_prev.float(), h_bwd_next.float(), E.float(), W_fwd.float(), W_bwd.float()),
            E.float(), "blank_logits on float32 inputs")

# By hand: V = 2 words with E = [[1], [-1]] (I = 1), J = 1, W_fwd = [[2]], W_bwd = [[0.5]].
# Row 0: 2*1 + 0.5*0 = 2 -> logits [2, -2].  Row 1: 2*0 + 0.5*(-2) = -1 -> logits [-1, 1].
E1 = torch.tensor([[1.0], [-1.0]], dtype=torch.float64)
got = blank_logits(torch.tensor([[1.0], [0.0]], dtype=torch.float64), torch.tensor([[0.0], [-2.0]], dtype=torch.float64),
                   E1, torch.tensor([[2.0]], dtype=torch.float64), torch.tensor([[0.5]], dtype=torch.float64))
expect_close(got, torch.tensor([[2.0, -2.0], [-1.0, 1.0]], dtype=torch.float64), "blank_logits on the hand example",
             hint="logit[t, w] = E[w] . (W_fwd h_fwd_prev[t]) + E[w] . (W_bwd h_bwd_next[t]); return logits, "
                  "not a softmax.")

# Each direction goes through its own matrix: with h_bwd_next = 0 only W_fwd may matter.
zero = torch.zeros_like(h_bwd_next)
expect_close(blank_logits(h_fwd_prev, zero, E, W_fwd, torch.randn(I, J, generator=g, dtype=torch.float64)),
             blank_logits(h_fwd_prev, zero, E, W_fwd, W_bwd), "blank_logits with h_bwd_next = 0",
             hint="W_bwd must multiply h_bwd_next only, and W_fwd h_fwd_prev only.")
expect_close(blank_logits(h_fwd_prev, h_bwd_next, E, W_fwd, W_bwd),
             blank_logits(h_fwd_prev, zero, E, W_fwd, W_bwd) + blank_logits(zero, h_bwd_next, E, W_fwd, W_bwd),
             "blank_logits(forward part) + blank_logits(backward part)",
             hint="The logits are the SUM of a forward term and a backward term.")

# Row t uses row t of each input and nothing else: permuting the rows permutes the output.
perm = torch.tensor([2, 4, 0, 1, 3])
expect_close(blank_logits(h_fwd_prev[perm], h_bwd_next[perm], E, W_fwd, W_bwd), out[perm],
             "blank_logits on permuted rows",
             hint="The caller already shifted the states: do not shift them again inside blank_logits.")
### BEGIN HIDDEN TESTS
from attnlab.grading import hidden_check

hidden_check("ch4.blank_logits", blank_logits)
### END HIDDEN TESTS

# %% [markdown] tags=["solutions-only"]
# ### Worked solution
#
# The two sums are contractions over $i$ and $j$; `torch.einsum` writes them with the
# equation's letters, `"wi,ij,tj->tw"`, once with $(\overrightarrow{W}, \overrightarrow{h})$
# and once with $(\overleftarrow{W}, \overleftarrow{h})$. Equivalently, in matrix form,
# $\text{logit} = \overrightarrow{h}_{\text{prev}} \overrightarrow{W}^\top E^\top +
# \overleftarrow{h}_{\text{next}} \overleftarrow{W}^\top E^\top$: both states are mapped into
# word-vector space ($I$ coordinates) and compared with every word vector. This is the
# seed's answer, one of "various acceptable solutions": any function of
# $\overrightarrow{h}[t-1]$ and $\overleftarrow{h}[t+1]$ ending in a softmax over the
# vocabulary is a valid model, as long as it never sees $w_t$. Note the scores are bilinear
# in the word vectors and the states: the vocabulary's $V$ logits live in a space of
# dimension at most $I$, which is what lets $I$ be much smaller than $V$ in practice.

# %% [markdown]
# ## 4.3 A bidirectional-RNN blank language model
#
# The model: word vectors $E[w, i]$ (shared by the input and the output, as in the seed,
# where each word has *one* vector), a forward GRU and a backward GRU with $J$ coordinates,
# the shift, and your `blank_logits`. Sentences in a batch have different lengths, so the
# backward GRU must start at each sentence's own `<eos>`: we reverse each sentence within
# its length, run the GRU left to right, and reverse its states back.
#
# With `ids` holding `<bos>` $w_1..w_T$ `<eos>` at positions $0..T+1$, the forward states
# $\overrightarrow{h}[0..T+1]$ and backward states $\overleftarrow{h}[0..T+1]$, the shift is
# two slices: the rows for $t = 1..T$ are `h_fwd[:, 0:T]` ($\overrightarrow{h}[t-1]$) and
# `h_bwd[:, 2:T+2]` ($\overleftarrow{h}[t+1]$). A batch is flattened to $B \cdot T$ rows for
# `blank_logits`, since every row is computed on its own.

# %%
def reverse_within(x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    """x[B, S, ...] with the first n[b] entries of row b reversed (the rest left in place)."""
    k = torch.arange(x.shape[1], device=x.device)[None, :]
    index = torch.where(k < n[:, None], n[:, None] - 1 - k, k)
    return x.gather(1, index.view(*index.shape, *[1] * (x.dim() - 2)).expand_as(x))


class BiRNNBlankLM(nn.Module):
    """Word vectors E[V, I], forward and backward GRUs with J coordinates, read out by blank_logits."""

    def __init__(self, V: int, I: int = 32, J: int = 64) -> None:
        super().__init__()
        self.E = nn.Parameter(0.1 * torch.randn(V, I))
        self.rnn_fwd = nn.GRU(I, J, batch_first=True)
        self.rnn_bwd = nn.GRU(I, J, batch_first=True)
        self.W_fwd = nn.Parameter(torch.randn(I, J) / J**0.5)
        self.W_bwd = nn.Parameter(torch.randn(I, J) / J**0.5)

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """ids[B, T+2] (<bos> w_1..w_T <eos> <pad>..), lengths[B] -> logits[B, T, V] for the blank at t = 1..T."""
        x = self.E[ids]
        n = lengths + 2  # tokens per sentence, <bos> and <eos> included
        h_fwd = self.rnn_fwd(x)[0]  # h_fwd[:, t] has read ids[:, 0..t]
        h_bwd = reverse_within(self.rnn_bwd(reverse_within(x, n))[0], n)  # h_bwd[:, t] has read ids[:, t..n-1]
        B, T = ids.shape[0], ids.shape[1] - 2
        h_fwd_prev, h_bwd_next = h_fwd[:, 0:T], h_bwd[:, 2:T + 2]  # the shift: rows t = 1..T
        J = h_fwd.shape[-1]
        logits = blank_logits(h_fwd_prev.reshape(B * T, J), h_bwd_next.reshape(B * T, J),
                              self.E, self.W_fwd, self.W_bwd)
        return logits.view(B, T, -1)


def blank_cross_entropy(logits: torch.Tensor, batch: grammar.Sentences) -> torch.Tensor:
    """Mean over sentences of the mean over t of -ln P(w_t | rest): the objective, t uniform per sentence."""
    w = batch.words().to(logits.device)
    nll = F.cross_entropy(logits.transpose(1, 2), w, reduction="none") * (w != PAD)
    return (nll.sum(1) / batch.lengths.to(logits.device)).mean()


# %% [markdown]
# Before training, a check that the shift is right: changing the word at position $t$ must
# not change the prediction for the blank at $t$ (it may change every other row).

# %%
torch.manual_seed(0)
probe = BiRNNBlankLM(V).to(device)
batch = held_out[:4]
ids = batch.ids.to(device)
with torch.no_grad():
    before = probe(ids, batch.lengths.to(device))
    t = 2
    changed = ids.clone()
    changed[:, t] = GRAMMAR.word_id["quickly"]  # overwrite w_t
    after = probe(changed, batch.lengths.to(device))
print("row t changed by replacing w_t:      ", (after[:, t - 1] - before[:, t - 1]).abs().max().item())
print("other rows changed by replacing w_t: ", (after - before).abs().max().item())
assert torch.allclose(after[:, t - 1], before[:, t - 1], atol=1e-6), "the blank's own word leaks into its prediction"


# %% [markdown]
# Training: Adam with a one-cycle learning-rate schedule, batches of 128 sentences drawn
# with a seeded generator. Every 100 steps we record the mean training loss of those steps
# and the held-out blank cross-entropy. The same loop trains the Transformer below.

# %%
def train(model: nn.Module, batch_loss, held_out_loss, steps: int, lr: float, name: str,
          batch_size: int = 128, every: int = 100, seed: int = 0) -> dict[str, list[float]]:
    """Train on train_set; every `every` steps record the mean training loss and held_out_loss(model)."""
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.1)
    curve = {"step": [], "train": [], "held_out": []}
    recent = []
    start = time.perf_counter()
    bar = tqdm(range(1, steps + 1), desc=name)
    for step in bar:
        batch = train_set[torch.randint(len(train_set), (batch_size,), generator=g)]
        loss = batch_loss(model, batch, g)
        opt.zero_grad()
        loss.backward()
        opt.step()
        schedule.step()
        recent.append(loss.item())
        if step % every == 0:
            model.eval()
            with torch.no_grad():
                h = held_out_loss(model, held_out)
            model.train()
            curve["step"].append(step)
            curve["train"].append(sum(recent) / len(recent))
            curve["held_out"].append(h)
            recent = []
            bar.set_postfix(held_out=f"{h:.4f}", optimum=f"{OPTIMUM:.4f}")
    curve["seconds"] = time.perf_counter() - start
    return curve


def rnn_batch_loss(model: nn.Module, batch: grammar.Sentences, g: torch.Generator) -> torch.Tensor:
    """The blank loss at every position at once (the states before and after each blank)."""
    return blank_cross_entropy(model(batch.ids.to(device), batch.lengths.to(device)), batch)


def rnn_held_out_loss(model: nn.Module, batch: grammar.Sentences) -> float:
    return rnn_batch_loss(model, batch, None).item()


curves = {}
if not is_grading():
    torch.manual_seed(0)
    rnn = BiRNNBlankLM(V).to(device)
    curves["bidirectional GRU"] = train(rnn, rnn_batch_loss, rnn_held_out_loss, steps=800, lr=1e-2,
                                        name="bidirectional GRU")
    c = curves["bidirectional GRU"]
    print(f"bidirectional GRU: held-out {c['held_out'][-1]:.4f} nats, optimum {OPTIMUM:.4f}, "
          f"gap {100 * (c['held_out'][-1] / OPTIMUM - 1):.1f}% after {c['step'][-1]} steps, "
          f"{c['seconds']:.0f} s on {device.type} ({torch.get_num_threads()} threads)")


# %% [markdown]
# ## 4.4 A Transformer blank language model
#
# BERT does the same job with self-attention instead of recurrence. The blank is not left
# out of the input: it is replaced by a special word `<mask>`, and since attention has no
# notion of order (Chapter 1: permuting the rows permutes the output), a learned
# **position embedding** $P[t, j]$ is added to every word vector. Each layer is Chapter 1's
# self-attention, run on a batch of sentences, with three additions that every practical
# Transformer has: a residual connection and layer normalisation around the attention, and a
# small two-layer perceptron after it. The attention may not look at padding, so the scores
# of `<pad>` keys are set to $-\infty$ before the softmax. The output at the `<mask>`
# position, mapped to $V$ logits, predicts the blank.
#
# Training uses one blank per sentence (position drawn uniformly), exactly the seed's
# objective; the held-out loss blanks every position of every sentence in turn.

# %%
def batched_self_attention(M: torch.Tensor, WQ: torch.Tensor, WK: torch.Tensor, WV: torch.Tensor,
                           keep: torch.Tensor) -> torch.Tensor:
    """Chapter 1's layer on a batch: M[B,T,J], WQ/WK[H,K,J], WV[H,I,J], keep[B,T] (False: padding) -> [B,T,H*I]."""
    K = WQ.shape[1]
    Query = torch.einsum("hkj,btj->bhtk", WQ, M)
    Key = torch.einsum("hkj,btj->bhtk", WK, M)
    Value = torch.einsum("hij,btj->bhti", WV, M)
    s = torch.einsum("bhtk,bhsk->bhts", Query, Key) / math.sqrt(K)  # s = t', the key position
    s = s.masked_fill(~keep[:, None, None, :], float("-inf"))
    alpha = torch.softmax(s, dim=-1)
    out = torch.einsum("bhts,bhsi->bthi", alpha, Value)
    return out.reshape(M.shape[0], M.shape[1], -1)  # heads concatenated, head 0 first


class Block(nn.Module):
    """Pre-norm Transformer block: M + attention(LN(M)), then + MLP(LN(M))."""

    def __init__(self, J: int, H: int, K: int, hidden: int) -> None:
        super().__init__()
        I = J // H
        self.WQ = nn.Parameter(torch.randn(H, K, J) / J**0.5)
        self.WK = nn.Parameter(torch.randn(H, K, J) / J**0.5)
        self.WV = nn.Parameter(torch.randn(H, I, J) / J**0.5)
        self.WO = nn.Linear(H * I, J)
        self.norm1, self.norm2 = nn.LayerNorm(J), nn.LayerNorm(J)
        self.mlp = nn.Sequential(nn.Linear(J, hidden), nn.GELU(), nn.Linear(hidden, J))

    def forward(self, M: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        M = M + self.WO(batched_self_attention(self.norm1(M), self.WQ, self.WK, self.WV, keep))
        return M + self.mlp(self.norm2(M))


class TransformerBlankLM(nn.Module):
    """BERT-style: word + position embeddings, L blocks, logits read at the <mask> position."""

    def __init__(self, V: int, J: int = 64, H: int = 4, K: int = 16, L: int = 2, hidden: int = 128,
                 max_len: int = grammar.MAX_WORDS + 2) -> None:
        super().__init__()
        self.E = nn.Embedding(V, J)
        self.P = nn.Parameter(0.1 * torch.randn(max_len, J))
        self.blocks = nn.ModuleList(Block(J, H, K, hidden) for _ in range(L))
        self.norm = nn.LayerNorm(J)
        self.out = nn.Linear(J, V)

    def forward(self, ids: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """ids[B, S] with <mask> at position t[b] of row b -> logits[B, V] for the blank."""
        M = self.E(ids) + self.P[:ids.shape[1]]
        keep = ids != PAD
        for block in self.blocks:
            M = block(M, keep)
        return self.out(self.norm(M[torch.arange(len(ids), device=ids.device), t]))


def mask_at(ids: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Replace ids[b, t[b]] by <mask>: (masked ids, the hidden words)."""
    rows = torch.arange(len(ids), device=ids.device)
    masked = ids.clone()
    masked[rows, t] = MASK
    return masked, ids[rows, t]


def transformer_batch_loss(model: nn.Module, batch: grammar.Sentences, g: torch.Generator) -> torch.Tensor:
    """One blank per sentence, at t uniform in 1..T."""
    t = 1 + (torch.rand(len(batch), generator=g) * batch.lengths).long()
    ids, target = mask_at(batch.ids, t)
    return F.cross_entropy(model(ids.to(device), t.to(device)), target.to(device))


def transformer_held_out_loss(model: nn.Module, batch: grammar.Sentences) -> float:
    """Every position blanked in turn; mean over sentences of the mean over t."""
    total = torch.zeros(len(batch))
    for t in range(1, int(batch.lengths.max()) + 1):
        rows = (batch.lengths >= t).nonzero().squeeze(1)
        ids, target = mask_at(batch.ids[rows], torch.full((len(rows),), t))
        logits = model(ids.to(device), torch.full((len(rows),), t, device=device))
        total[rows] += F.cross_entropy(logits, target.to(device), reduction="none").cpu()
    return (total / batch.lengths).mean().item()


if not is_grading():
    torch.manual_seed(0)
    bert = TransformerBlankLM(V).to(device)
    curves["Transformer"] = train(bert, transformer_batch_loss, transformer_held_out_loss, steps=800, lr=5e-3,
                                  name="Transformer")
    c = curves["Transformer"]
    print(f"Transformer: held-out {c['held_out'][-1]:.4f} nats, optimum {OPTIMUM:.4f}, "
          f"gap {100 * (c['held_out'][-1] / OPTIMUM - 1):.1f}% after {c['step'][-1]} steps, "
          f"{c['seconds']:.0f} s on {device.type} ({torch.get_num_threads()} threads)")

# %% [markdown]
# ## 4.5 Side by side

# %%
if curves:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (name, c), color in zip(curves.items(), ("C0", "C1")):
        ax.plot(c["step"], c["train"], "--", color=color, label=f"{name}, training batches")
        ax.plot(c["step"], c["held_out"], "o-", color=color, label=f"{name}, held-out")
    ax.axhline(OPTIMUM, color="k", lw=1, label=f"Bayes optimum {OPTIMUM:.3f}")
    ax.axhline(1.1 * OPTIMUM, color="k", lw=1, ls=":", label="optimum + 10%")
    ax.set_ylim(OPTIMUM - 0.1, OPTIMUM + 0.9)
    ax.set_xlabel("training step (batches of 128 sentences)")
    ax.set_ylabel("blank cross-entropy (nats)")
    ax.set_title("Blank language models on the grammar")
    ax.legend(fontsize=8)
    plt.show()
    for name, c in curves.items():
        print(f"{name:>18}: held-out {c['held_out'][-1]:.4f}, gap to optimum "
              f"{100 * (c['held_out'][-1] / OPTIMUM - 1):5.2f}%, trained in {c['seconds']:.0f} s")


# %% [markdown]
# The dashed training curves are the mean loss over the preceding 100 steps, so early on
# they lag behind the held-out points, which are measured after those steps.
#
# Where does the remaining gap sit? Below, the held-out cross-entropy split by the kind of
# word that was blanked, for the optimum and for both models (averaged over the blanks of
# that kind). The optimum itself is far from zero: the grammar draws its words at random
# within each state, so even a perfect model can only name a distribution. Nouns are the
# least predictable (any noun of the right number fits, the topic only tilts the choice);
# the verb's *form* is fixed by the subject's number, its identity is not. The models' excess
# over the optimum is a small fraction of a nat for every kind of word.

# %%
def nll_per_position(model: nn.Module, batch: grammar.Sentences) -> torch.Tensor:
    """[N, T] -ln P_model(w_t | rest) (0 past each sentence's end)."""
    with torch.no_grad():
        if isinstance(model, BiRNNBlankLM):
            logits = model(batch.ids.to(device), batch.lengths.to(device)).cpu()
            return F.cross_entropy(logits.transpose(1, 2), batch.words(), reduction="none") * (batch.words() != PAD)
        out = torch.zeros(batch.words().shape)
        for t in range(1, int(batch.lengths.max()) + 1):
            rows = (batch.lengths >= t).nonzero().squeeze(1)
            ids, target = mask_at(batch.ids[rows], torch.full((len(rows),), t))
            logits = model(ids.to(device), torch.full((len(rows),), t, device=device)).cpu()
            out[rows, t - 1] = F.cross_entropy(logits, target, reduction="none")
        return out


KINDS = {
    "determiner": {*grammar.DETERMINERS["sg"], *grammar.DETERMINERS["pl"]},
    "adjective": set(grammar.ADJECTIVES),
    "noun": {w for pairs in grammar.NOUNS.values() for pair in pairs for w in pair},
    "verb": {w for pair in grammar.INTRANSITIVE + grammar.TRANSITIVE for w in pair},
    "preposition": set(grammar.PREPOSITIONS),
    "adverb": set(grammar.ADVERBS),
}
if curves:
    words = held_out.words()
    table = {"optimum": GRAMMAR.blank_nll(held_out).float(), "bidirectional GRU": nll_per_position(rnn, held_out),
             "Transformer": nll_per_position(bert, held_out)}
    print(f"{'blanked word':>12} {'share':>6} " + " ".join(f"{k:>18}" for k in table))
    for kind, members in KINDS.items():
        sel = torch.isin(words, torch.tensor([GRAMMAR.word_id[w] for w in members]))
        print(f"{kind:>12} {sel.float().sum() / (words != PAD).sum():6.1%} "
              + " ".join(f"{v[sel].mean():18.3f}" for v in table.values()))

# %% [markdown]
# Finally one held-out sentence with its verb blanked: the exact posterior and each model's
# top guesses. Both models have learned the agreement across the prepositional phrase.

# %%
if curves:
    verbs = torch.tensor([GRAMMAR.word_id[w] for w in KINDS["verb"]])
    preps = torch.tensor([GRAMMAR.word_id[w] for w in KINDS["preposition"]])
    n = next(n for n in range(len(held_out)) if torch.isin(held_out.words()[n], preps).any())
    one = held_out[n:n + 1]
    t = 1 + int(torch.isin(one.words()[0], verbs).nonzero()[0])
    words = GRAMMAR.text(one, 0).split()
    print(" ".join(w if i != t - 1 else "____" for i, w in enumerate(words)), f"   (the blank was '{words[t - 1]}')")
    exact = GRAMMAR.blank_posteriors(one)[0, t - 1]
    with torch.no_grad():
        p_rnn = rnn(one.ids.to(device), one.lengths.to(device))[0, t - 1].softmax(-1).cpu()
        ids, _ = mask_at(one.ids, torch.tensor([t]))
        p_bert = bert(ids.to(device), torch.tensor([t], device=device))[0].softmax(-1).cpu()
    for name, p in (("exact", exact), ("bidirectional GRU", p_rnn), ("Transformer", p_bert)):
        top = p.topk(4)
        print(f"{name:>18}: " + ", ".join(f"{GRAMMAR.vocab[w]} {q:.2f}" for q, w in zip(top.values.tolist(), top.indices.tolist())))

# %% [markdown]
# **What to take away.** Both families approach the optimum on this data; the bidirectional
# RNN predicts all $T$ blanks of a sentence in one pass (its states before and after each
# position are shared by all blanks), while the Transformer must be run once per blank,
# because the blank is part of its input. BERT's answer to that cost is to blank about 15%
# of the positions at once, which changes the objective slightly: each blank is then
# predicted from a sentence with other holes in it. The Transformer's advantage, parallel
# time, is the subject of Chapters 1 and 6: its depth does not grow with $T$, the RNN's does.
