"""What a hidden check keeps to itself, and where it looks (issue 32, items 3 and 6).

* Feedback on a wrong answer names the symptom and, for a public trial, its arguments by name; it never
  shows a secret trial's inputs (its sizes, its integer arguments), the student's own result on it, or the
  reference's value (a wrong answer here is right on every public trial and wrong, or raising an error that
  quotes its sizes, on every trial drawn from the secret seed).
* Every check with trials draws some of its sizes from the notebook's secret seed: they change with the
  seed and go beyond the largest size of its public trials (which its chapter's visible tests stay within),
  so a function that works only up to the sizes it was shown (a fixed 16 x 16 mask) fails.
"""
from __future__ import annotations

import re

import pytest
import torch

from attnlab.grading import Outcome
from autograder.checks import CHECKS
from autograder.checks.base import Secret
from autograder.judge import judge, make_trials, reference_outcomes

# The one check whose trial is the chapter's: Chapter 4's trainer trains the chapter's fixed model (J = 64, U = 32)
# on sentences of the grammar; the seed draws the sentences, the renaming, the blanks and the training seed.
FIXED_BY_THE_CHAPTER = {"ch4.blank_lm"}
WITH_TRIALS = [n for n, c in CHECKS.items() if not c.whole_answer]
SIZED = [n for n in WITH_TRIALS if n not in FIXED_BY_THE_CHAPTER]
# Checks that hold a count the student's process measured (Chapter 8's work per cached position and largest tensor)
# to a bound, not to the reference's value: a count made wrong is one far past any bound.
COUNTED = {"ch8.block_step_work", "ch8.tiled_attention_memory"}


def _wrong(value: object) -> object:
    """A value that differs from `value` everywhere it can (a right answer's output, made wrong)."""
    if type(value) is torch.Tensor:
        return value + 1 if value.is_floating_point() else value + 1
    if type(value) in (int, float):
        return value + 1
    if type(value) in (list, tuple):
        return type(value)(_wrong(v) for v in value)
    return value


def _ints(x: object) -> set[int]:
    """The integers an argument holds or is made of: its int values and every tensor's sizes."""
    if type(x) is bool:
        return set()
    if type(x) is int:
        return {x}
    if isinstance(x, torch.Tensor):
        return set(x.shape)
    if type(x) in (list, tuple):
        return set().union(*(_ints(v) for v in x)) | {len(x)} if x else set()
    if type(x) is dict:
        return set().union(*(_ints(v) for v in x.values())) if x else set()
    return set()


def _numbers(message: str) -> set[int]:
    """The integers a message states, dtypes and tolerances aside."""
    said = re.sub(r"float(16|32|64)|int(8|16|32|64)|\(tolerance [^)]*\)|by up to \S+|line \d+", " ", message)
    return {int(n) for n in re.findall(r"(?<![\w.])\d+(?![\w.])", said)}


def _public_ints(trials: list[tuple]) -> set[int]:
    return set().union(*(_ints(tuple(t)) for t in trials if type(t) is not Secret))


@pytest.mark.parametrize("name", SIZED)
def test_a_wrong_answer_on_secret_trials_hears_nothing_of_them(name: str) -> None:
    trials = make_trials(name, 21)
    right = reference_outcomes(name, trials)
    secret = [i for i, t in enumerate(trials) if type(t) is Secret]
    assert secret, f"{name} draws no trial from the secret seed"
    # what the message may not state: the secret trials' sizes and integers, and the reference's values on them,
    # unless a public trial shows the same number anyway
    hidden = set().union(*(_ints(tuple(trials[i])) | _ints(right[i].value) for i in secret)) - _public_ints(trials)
    hidden = {n for n in hidden if n > 1}
    wrong = (lambda v: v * 10**6) if name in COUNTED else _wrong
    for label, bad in (("wrong value", lambda i: Outcome(value=wrong(right[i].value))),
                       ("error quoting its sizes",
                        lambda i: Outcome(error=f"RuntimeError: sizes {sorted(_ints(tuple(trials[i])))} (line 3)"))):
        outcomes = [bad(i) if i in secret else right[i] for i in range(len(trials))]
        verdict = judge(name, trials, outcomes)
        assert not verdict.passed, (name, label)
        assert not _numbers(verdict.message) & hidden, (name, label, verdict.message, sorted(hidden))
        assert "drawn for this notebook" in verdict.message, (name, label, verdict.message)


@pytest.mark.parametrize("name", [n for n in SIZED if n.startswith(("ch3.params", "ch6.receptive"))])
def test_a_wrong_value_on_a_public_trial_is_not_told_the_right_one(name: str) -> None:
    """'output is 3, expected 2 ... (1, 1, 1)': the reference's value is never stated; the arguments are named."""
    trials = make_trials(name, 5)
    right = reference_outcomes(name, trials)
    outcomes = [Outcome(value=_wrong(right[0].value)), *right[1:]]
    verdict = judge(name, trials, outcomes)
    assert not verdict.passed
    assert repr(right[0].value) not in re.sub(r"trial \d+ of \d+|=\d+", "", verdict.message), verdict.message
    assert re.search(r"\(\w+=\d+", verdict.message), verdict.message  # (K=1, J=1)


def test_a_public_trial_names_its_arguments() -> None:
    """Chapter 7's layer_norm with eps given: the student can tell which number is eps."""
    trials = make_trials("ch7.layer_norm", 2)
    right = reference_outcomes("ch7.layer_norm", trials)
    k = next(i for i, t in enumerate(trials) if len(t) == 4 and type(t) is not Secret)
    outcomes = [Outcome(value=_wrong(o.value)) if i == k else o for i, o in enumerate(right)]
    verdict = judge("ch7.layer_norm", trials, outcomes)
    assert not verdict.passed and "eps=0.1" in verdict.message and "M: [" in verdict.message, verdict.message


def _axes(x: object, path: tuple = ()) -> dict[tuple, int]:
    """Every size in an argument by where it is: (argument, ..., axis) -> size; an int argument is its own size."""
    if type(x) is int:
        return {path: x}
    if isinstance(x, torch.Tensor):
        return {(*path, k): n for k, n in enumerate(x.shape)}
    if type(x) in (list, tuple):  # the trial's arguments by position; the items of a list argument together
        out: dict[tuple, int] = {}
        for i, item in enumerate(x):
            for where, n in _axes(item, (*path, "item" if path else i)).items():
                out[where] = max(out.get(where, n), n)
        return out
    if type(x) is dict:
        return {k: v for key, item in x.items() for k, v in _axes(item, (*path, key)).items()}
    return {}


def _largest(trials: list[tuple], secret: bool) -> dict[tuple, int]:
    out: dict[tuple, int] = {}
    for t in trials:
        if (type(t) is Secret) == secret:
            for where, n in _axes(tuple(t)).items():
                out[where] = max(out.get(where, n), n)
    return out


@pytest.mark.parametrize("name", SIZED)
def test_each_check_draws_sizes_beyond_its_public_ones_from_the_seed(name: str) -> None:
    """Some size of every check (a length, a width, a count) goes beyond all of its public trials, on every seed."""
    drawn = {seed: make_trials(name, seed) for seed in (1, 2, 3)}
    sizes = {seed: sorted(_largest(trials, True).items()) for seed, trials in drawn.items()}
    assert all(sizes.values()), f"{name} has no trial drawn from the secret seed"
    assert len({tuple(s) for s in sizes.values()}) > 1, f"{name}: the drawn sizes do not change with the seed"
    for trials in drawn.values():
        public, secret = _largest(trials, False), _largest(trials, True)
        beyond = [where for where, n in secret.items() if n > public.get(where, 0)]
        assert beyond, (name, public, secret)


def test_the_largest_visible_sizes_stay_within_the_public_ones() -> None:
    """Chapter 7's visible tests use T <= 6 and its public trials T <= 16: every seed's drawn trials reach T > 16."""
    for seed in range(5):
        for name in ("ch7.attention", "ch7.block"):
            T = {t[0].shape[-2] for t in make_trials(name, seed) if type(t) is Secret}
            assert T and min(T) > 16, (name, seed, T)
