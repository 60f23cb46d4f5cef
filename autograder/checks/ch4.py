"""Hidden checks of Chapter 4: the student's blank head, graded by behaviour (a design question).

`ch4.blank_head` (Problem 4.1, the head alone): a fresh head on states and word vectors the grader
draws must return log-probabilities over the vocabulary, for any vocabulary size; renaming the
words (permuting the rows of E) must permute its columns (it sees words only through their
vectors), reordering the blanks must reorder its rows (blank n reads row n only), and redrawing
the states, or the word vectors, must change its output (a head that ignores its inputs, such as
a constant log(1/|V|), has every other property). No formula is prescribed.

`ch4.blank_lm` (Problem 4.1, the head trained): the chapter's bidirectional GRU with the student's head,
trained in the student's process for a bounded number of steps on sentences the grader draws
from the chapter's grammar, must fill held-out blanks within `GAP` nats of the Bayes optimum.
What the student's process receives: the training sentences, and every held-out sentence once
with ONE position replaced by <mask>, all under a secret renaming of the words (a permutation
of the word ids, the special tokens kept). It never sees a held-out blank's word. What it
returns: log P(w | rest) for every word, per held-out blank. The judge renormalises each row,
and computes the expected cross-entropy under the exact posterior (forward-backward over the
grammar) and the optimum, the posterior's entropy, on the same blanks; their difference is the
mean KL divergence, never negative. Some held-out blanks are sent twice, with <mask> and with a
random word in the blank: the two predictions must be equal.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from attnlab.data import grammar
from attnlab.data.grammar import GRAMMAR, MASK, SPECIALS
from autograder.checks.base import BehaviourCheck, Draw, Passed, Secret, Sizes, between, grid, received
from autograder.gradinglog import figure
from solutions import ch4

# ---------------------------------------------------------------- the head alone

# (F blanks, J, U, |V|): U < J, U > J, U = J; one word, a few, the grammar's 52, more words than anything else;
# the trainer's own J = 64, U = 32 on the grammar's words (the head that test_blank_lm trains, at its sizes).
# Drawn: more blanks, wider states and word vectors, and more words than any of these.
HEAD_SIZES = Sizes([(1, 3, 2, 2), (5, 6, 3, 7), (7, 4, 8, 52), (6, 16, 16, 300), (3, 5, 5, 1), (4, 64, 32, 52)],
                   lambda g: (between(g, 8, 24), between(g, 17, 48), between(g, 17, 48), between(g, 301, 700)))
NORMALISED = {torch.float32: 1e-4, torch.float64: 1e-9}  # |log sum_w P(w)| allowed
SAME = {torch.float32: 1e-4, torch.float64: 1e-9}  # absolute difference allowed between equal outputs
DEPENDS = 1e-3  # a fresh head's output must move by more than this when its states or word vectors are redrawn


def blank_head_trials(gen: torch.Generator) -> list[tuple]:
    """(J, U, seed, z_fwd_prev[F,J], z_bwd_next[F,J], E[|V|,U], private) for every size, dtype and device;
    each base trial followed by the same with the words renamed, with the blanks reordered, with other
    states and with other word vectors (the same fresh head each time: the same seed)."""
    count = iter(range(0, 10**9, 5))  # the index of each base trial: five trials per size

    def build(r: Draw, blanks: int, J: int, U: int, n_words: int) -> list[tuple]:
        base, seed = next(count), r.seed()
        z_fwd, z_bwd = r.randn(blanks, J), r.randn(blanks, J)
        E = r.randn(n_words, U)
        words = r.perm(n_words)
        renamed = (J, U, seed, z_fwd, z_bwd, E[words.to(r.device)], {"kind": "words", "base": base, "perm": words})
        rows = r.perm(blanks)
        reordered = (J, U, seed, z_fwd[rows.to(r.device)], z_bwd[rows.to(r.device)], E,
                     {"kind": "rows", "base": base, "perm": rows})
        states = (J, U, seed, r.randn(blanks, J), r.randn(blanks, J), E, {"kind": "states", "base": base})
        vectors = (J, U, seed, z_fwd, z_bwd, r.randn(n_words, U), {"kind": "vectors", "base": base})
        return [(J, U, seed, z_fwd, z_bwd, E, {"kind": "base"}), renamed, reordered, states, vectors]

    return grid(gen, HEAD_SIZES, build)


def head_reference(J: int, U: int, seed: int, z_fwd_prev: torch.Tensor, z_bwd_next: torch.Tensor,
                   E: torch.Tensor, private: dict) -> torch.Tensor:
    """The seed's two-matrix head on one trial."""
    return ch4.head_outputs(J, U, seed, z_fwd_prev, z_bwd_next, E)


def verify_head(trials: Sequence[tuple], values: Sequence[object]) -> str | Passed:
    """A pass (with its figure: the worst normalisation error in units of its dtype's tolerance, bound 1) if every
    output is a log-distribution over the words that reads its inputs and renames and reorders as asked; else why not."""
    outputs: list[torch.Tensor] = []
    worst = 0.0  # max over outputs of |log sum_w P(w)| / NORMALISED[dtype]
    # redrawn inputs -> (whether the output moved on some trial, where it first did not): judged over every trial of
    # the kind, since one draw can leave even the reference's output still (|V| = 2, a head of width 2: 1 draw in
    # about 2000 moved it by under DEPENDS)
    unmoved: dict[str, tuple[bool, str | None]] = {}
    for trial, value in zip(trials, values):
        J, U, _, z_fwd, _, E, private = trial
        secret = type(trial) is Secret
        where = (f"(a fresh BlankHead on {str(E.dtype)[6:]} inputs whose sizes were drawn for this notebook)" if secret
                 else f"(a fresh BlankHead({J}, {U}) on {z_fwd.shape[0]} blank(s), |V| = {E.shape[0]}, {str(E.dtype)[6:]})")
        got = received(value)
        if got is None:
            return f"the head should return a torch.Tensor, got {type(value).__name__} {where}"
        out, device_type = got
        expected = (z_fwd.shape[0], E.shape[0])
        if tuple(out.shape) != expected:
            shapes = "" if secret else f" {tuple(out.shape)}, expected (blanks, |V|) = {expected}"
            return (f"the head returned the wrong shape{shapes} {where}: one row per blank, one column per word of "
                    "the vocabulary it is given")
        if out.dtype != E.dtype or device_type != E.device.type:
            return f"the head returned {str(out.dtype)[6:]} on {device_type} for inputs {str(E.dtype)[6:]} on {E.device.type} {where}"
        if torch.isnan(out).any() or (out == math.inf).any():
            return f"the head returned NaN or +inf {where}"
        mass = torch.logsumexp(out.double(), dim=1).abs().max().item()  # a row of -inf only: +inf
        error = mass / NORMALISED[E.dtype]
        if not (math.isfinite(error) and error <= 1.0):
            return (f"the rows are not log-probabilities {where}: log sum_w exp(row) is off by up to {mass:.3g} "
                    "(return the log-softmax over the words, the last axis) "
                    f"{figure('normalisation error in tolerances', error, 1.0)}")
        worst = max(worst, error)
        outputs.append(out)
        if private["kind"] == "base":
            continue
        base = outputs[private["base"]]
        if private["kind"] in ("states", "vectors"):
            if E.shape[0] > 1:  # one word: log 1 whatever the inputs
                moved, first = unmoved.get(private["kind"], (False, None))
                unmoved[private["kind"]] = (moved or _change(out, base) > DEPENDS, first or where)
            continue
        perm = private["perm"]
        if private["kind"] == "words":
            if not _same(out, base[:, perm], E.dtype):
                return (f"renaming the words (the rows of E permuted) did not permute the columns of the output {where}: "
                        "the head must see a word only through its vector E[w] (no table indexed by word id)")
        elif not _same(out, base[perm], E.dtype):
            return (f"reordering the blanks (the rows of both states permuted) did not reorder the rows of the output "
                    f"{where}: blank n must be predicted from row n of z_fwd_prev and z_bwd_next only")
    for kind, (moved, where) in unmoved.items():
        if not moved:
            what = "both states" if kind == "states" else "the word vectors E"
            return (f"the head's output did not change when {what} changed, on any trial (first {where}): a "
                    "prediction must be a function of the states before and after the blank and of the word vectors")
    return Passed(f"every output is a log-distribution over the words that reads both states and the word vectors, and "
                  f"renames and reorders as asked {figure('normalisation error in tolerances', worst, 1.0)}")


def _same(a: torch.Tensor, b: torch.Tensor, dtype: torch.dtype) -> bool:
    """Equal as torch.allclose(rtol=atol=SAME) says, with -inf (a probability of zero) exactly where the other is -inf."""
    a, b = a.double(), b.double()
    if torch.isnan(a).any() or torch.isnan(b).any() or not torch.equal(a == -math.inf, b == -math.inf):
        return False
    finite = b > -math.inf
    return bool(((a[finite] - b[finite]).abs() <= SAME[dtype] * (1 + b[finite].abs())).all())


def _change(a: torch.Tensor, b: torch.Tensor) -> float:
    """max |a - b| over entries, 0 where both are -inf, +inf where one is -inf and the other not, NaN in: +inf."""
    a, b = a.double(), b.double()
    if torch.isnan(a).any() or torch.isnan(b).any():
        return math.inf
    both = (a == -math.inf) & (b == -math.inf)
    diff = torch.where(both, torch.zeros_like(a), (a - b).abs())
    return diff.max().item() if diff.numel() else 0.0


# ---------------------------------------------------------------- the head trained, against the optimum

TRAIN_SENTENCES = 4000
HELD_OUT = 400  # held-out sentences, one blank each
PAIRS = 50  # of them sent a second time with a random word in the blank
STEPS = 150  # training steps of 128 sentences the student's process is asked to run
# nats above the Bayes optimum allowed on the held-out blanks: the chapter's locked cell blank_lm_bound (Problem 4.1
# states it; its visible test and plot read the same). One draw, no retry. Over 300
# secret draws each (benchmarks/ch4_false_fail.py, torch 2.11, one thread a draw) the reasonable heads measured: the
# seed's 0.035-0.055, a linear head with bias 0.038-0.069, a two-layer MLP 0.033-0.151 (99th percentile 0.125), so
# none failed at 0.20 (20 of the MLP's draws were above 0.10, one above 0.15); the wrong heads of the mistakes 0.71-0.79
# (one side only), 2.27-2.37 (no state) and +inf (constant) on every draw tried.
GAP = ch4.GAP_BOUND
INVARIANT = 1e-3  # |difference| of log-probabilities allowed between a blank with <mask> and with a word


def _renamed(ids: torch.Tensor, perm: torch.Tensor) -> torch.Tensor:
    """Word ids under the renaming `perm` (perm[w] is the new id of word w)."""
    return perm[ids]


def blank_lm_trials(gen: torch.Generator) -> list[tuple]:
    """One trial: (train_ids, train_lengths, query_ids, query_lengths, query_t, |V|, steps, seed, private)."""
    n_words, n_special = len(GRAMMAR.vocab), len(SPECIALS)
    seeds = torch.randint(2**31 - 1, (3,), generator=gen).tolist()
    train = grammar.sample(TRAIN_SENTENCES, seed=seeds[0])
    held = grammar.sample(HELD_OUT, seed=seeds[1])
    perm = torch.cat([torch.arange(n_special), n_special + torch.randperm(n_words - n_special, generator=gen)])
    t = 1 + (torch.rand(HELD_OUT, generator=gen) * held.lengths).long()  # the blank, uniform in 1..T
    rows = torch.arange(HELD_OUT)
    masked = held.ids.clone()
    masked[rows, t] = MASK
    other = masked[:PAIRS].clone()
    other[rows[:PAIRS], t[:PAIRS]] = torch.randint(n_special, n_words, (PAIRS,), generator=gen)
    query_ids = _renamed(torch.cat([masked, other]), perm)
    query_lengths = torch.cat([held.lengths, held.lengths[:PAIRS]])
    private = {"perm": perm, "held": held, "t": t}
    return [(_renamed(train.ids, perm), train.lengths, query_ids, query_lengths, torch.cat([t, t[:PAIRS]]),
             n_words, STEPS, seeds[2], private)]


def exact_posteriors(private: dict) -> torch.Tensor:
    """[held-out, |V|] P(w_t = w | rest) by forward-backward, columns in the renamed ids (float64)."""
    held, t, perm = private["held"], private["t"], private["perm"]
    post = GRAMMAR.blank_posteriors(held)[torch.arange(len(held)), t - 1]
    renamed = torch.zeros_like(post)
    renamed[:, perm] = post
    return renamed


def lm_reference(*trial: object) -> torch.Tensor:
    """An acceptable answer's output: the exact posterior (a model cannot do better), slightly smoothed."""
    post = exact_posteriors(trial[-1])
    post = torch.cat([post, post[:PAIRS]])
    return torch.log((post + 1e-6) / (post + 1e-6).sum(1, keepdim=True)).float()


def held_out_gap(trial: tuple, log_p: torch.Tensor) -> tuple[float, float]:
    """(expected blank cross-entropy of `log_p` on the held-out blanks, Bayes optimum), in nats."""
    post = exact_posteriors(trial[-1])
    log_q = torch.log_softmax(log_p[:len(post)].double(), dim=1)
    term = lambda p, log: torch.where(p > 0, -p * log, torch.zeros_like(p))  # noqa: E731 - 0 log 0 = 0
    return term(post, log_q).sum(1).mean().item(), term(post, torch.log(post)).sum(1).mean().item()


def verify_lm(trials: Sequence[tuple], values: Sequence[object]) -> str | Passed:
    """A pass (with its figure: the held-out gap, GAP, the margin) if the trained model's held-out blanks are within
    GAP of the optimum and ignore the blank's word; else why not (with the figure where the gap decided)."""
    (trial,), (value,) = trials, values
    n_words, queries = trial[5], trial[2].shape[0]
    got = received(value)
    if got is None:
        return f"fit_blank_lm should return a torch.Tensor, got {type(value).__name__}"
    out = got[0]
    if tuple(out.shape) != (queries, n_words) or not out.is_floating_point():
        return (f"fit_blank_lm returned {tuple(out.shape)} {str(out.dtype)[6:]}, expected floats of shape "
                f"(blanks, |V|) = ({queries}, {n_words})")
    if torch.isnan(out).any() or (out == math.inf).any():
        return "fit_blank_lm returned NaN or +inf for some held-out blank"
    if (out == -math.inf).all(dim=1).any():
        return "fit_blank_lm returned a row of -inf only (no word has a probability) for some held-out blank"
    log_q = torch.log_softmax(out.double(), dim=1)
    held = queries - PAIRS
    change = _change(log_q[held:], log_q[:PAIRS])
    if not (math.isfinite(change) and change <= INVARIANT):
        return (f"the prediction for a blank changed (by up to {change:.3g} in log-probability) when the word in the "
                "blank changed: the model reads the word it must predict")
    cross_entropy, optimum = held_out_gap(trial, out)
    gap = cross_entropy - optimum  # +inf where the model gives -inf to a word the exact posterior does not
    said = (f"after {trial[6]} training steps the held-out blank cross-entropy is {cross_entropy:.3f} nats, "
            f"{gap:.3f} above the Bayes optimum {optimum:.3f} {figure('gap in nats', gap, GAP)}")
    if not (math.isfinite(gap) and gap <= GAP):
        return said
    return Passed(said)


CHECKS = {
    "ch4.blank_head": BehaviourCheck(head_reference, blank_head_trials, verify_head, private=1),
    "ch4.blank_lm": BehaviourCheck(lm_reference, blank_lm_trials, verify_lm, private=1),
}
