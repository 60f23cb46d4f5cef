"""Every decision passes only on a finite statistic inside its bound: NaN, +inf and -inf fed into each output
position of every function, value, upstream and behaviour check lose the check, while a right answer whose
-inf is legitimate (a log of a probability the exact distribution also gives zero) keeps it.

The equation and symbolic judges have their own tests (tests/checks/test_equation_judge.py, tests/kit/test_symbolic.py).
"""
from __future__ import annotations

import math

import pytest
import torch

from attnlab.grading import Outcome, run_trials
from autograder.checks import CHECKS, FunctionCheck
from autograder.checks import ch4 as checks4
from autograder.judge import judge, make_trials, reference_outcomes, sent
from solutions import ch1

POISONS = {"nan": math.nan, "+inf": math.inf, "-inf": -math.inf}
VALUED = sorted(name for name, c in CHECKS.items() if not c.whole_answer)  # answers with trials
# Outputs that are log-probabilities: -inf is a probability of zero, within the normalisation's tolerance where the
# reference gives the word less than it (test_a_non_finite_head_output_anywhere_loses_the_head puts it on the
# likeliest word); NaN and +inf lose everywhere.
LOG_PROBABILITIES = {"ch4.blank_head", "ch4.blank_lm"}


def _leaves(value: object, path: tuple = ()) -> list[tuple]:
    """Paths to every tensor or number in a nested output."""
    if type(value) is torch.Tensor:
        return [path] if value.is_floating_point() and value.numel() else []
    if type(value) in (int, float):
        return [path]
    if type(value) in (list, tuple):
        return [p for k, v in enumerate(value) for p in _leaves(v, (*path, k))]
    return []


def _poisoned(value: object, path: tuple, where: int, poison: float) -> object:
    """`value` with the leaf at `path` poisoned: a tensor at flat position `where`, a number replaced."""
    if not path:
        if type(value) is torch.Tensor:
            out = value.clone(memory_format=torch.contiguous_format)  # a transposed output keeps its strides otherwise
            out.view(-1)[where % out.numel()] = poison
            return out
        return poison
    items = list(value)
    items[path[0]] = _poisoned(items[path[0]], path[1:], where, poison)
    return type(value)(items)


@pytest.mark.parametrize("name", VALUED)
def test_a_non_finite_output_anywhere_loses_a_function_check(name: str) -> None:
    trials = make_trials(name, 3)
    right = reference_outcomes(name, trials)
    assert judge(name, trials, right).passed
    k = len(trials) - 1  # the last trial: every earlier one is judged (and passes) first
    for path in _leaves(right[k].value):
        for where in (0, -1):
            for label, poison in POISONS.items():
                if label == "-inf" and name in LOG_PROBABILITIES:
                    continue
                outcomes = list(right)
                outcomes[k] = Outcome(value=_poisoned(right[k].value, path, where, poison))
                verdict = judge(name, trials, outcomes)
                assert not verdict.passed, (name, k, path, where, label)


def test_minus_infinity_passes_exactly_where_the_reference_has_it() -> None:
    """A function whose reference holds -inf (a log of zero): the same -inf passes, -inf elsewhere or NaN fails."""
    from autograder.judge import compare

    check = FunctionCheck(lambda x: x, lambda gen: [()])
    expected = torch.tensor([[0.0, -math.inf], [-0.5, -1.0]])
    assert compare(expected.clone(), expected, check) is None
    assert compare(-math.inf, -math.inf, check) is None
    for bad in (torch.tensor([[0.0, -math.inf], [-math.inf, -1.0]]), torch.tensor([[0.0, -30.0], [-0.5, -1.0]]),
                torch.tensor([[0.0, math.nan], [-0.5, -1.0]]), torch.tensor([[0.0, math.inf], [-0.5, -1.0]])):
        assert compare(bad, expected, check) is not None, bad
    assert compare(math.inf, math.inf, check) is not None
    assert compare(torch.zeros(2), torch.tensor([0.0, math.nan]), check) is not None  # a NaN expected judges nothing


@pytest.mark.parametrize("label", POISONS)
def test_recorded_upstream_results_must_be_finite(label: str) -> None:
    """ch1.transformer is judged over the student's own self_attention: a recorded result that is not finite
    never makes a composition, even when the output is that composition."""
    name = "ch1.transformer"
    trials = make_trials(name, 4)
    outcomes = []
    for trial in trials:
        calls: list = []

        def poisoned_layer(*a: torch.Tensor, calls: list = calls) -> torch.Tensor:
            out = ch1.self_attention(*a).clone()
            out.view(-1)[0] = POISONS[label]
            calls.append([list(a), out])
            return out

        output = ch1.transformer(*trial[:-1], self_attention=poisoned_layer)
        outcomes.append(Outcome(value={"output": output, "calls": {"self_attention": calls}}))
    verdict = judge(name, trials, outcomes)
    assert not verdict.passed


# ------------------------------------------------------------------- the behaviour checks of Chapter 4

@pytest.fixture(scope="module")
def head_trials() -> list[tuple]:
    return make_trials("ch4.blank_head", 21)


@pytest.fixture(scope="module")
def lm_trials() -> list[tuple]:
    return make_trials("ch4.blank_lm", 22)


def test_a_non_finite_head_output_anywhere_loses_the_head(head_trials) -> None:
    """NaN or +inf anywhere loses; -inf (a probability of zero) loses on a word the head gives most of a row's mass
    (where it gives a word less than the normalisation's tolerance, ruling it out stays within it)."""
    right = reference_outcomes("ch4.blank_head", head_trials)
    assert judge("ch4.blank_head", head_trials, right).passed
    for k in range(0, len(head_trials), 7):
        likeliest = int(right[k].value.argmax())
        for label, poison in POISONS.items():
            for where in (likeliest,) if label == "-inf" else (0, -1):
                outcomes = list(right)
                outcomes[k] = Outcome(value=_poisoned(right[k].value, (), where, poison))
                assert not judge("ch4.blank_head", head_trials, outcomes).passed, (k, where, label)


def test_a_head_that_gives_some_words_zero_probability_passes(head_trials) -> None:
    """-inf is a legitimate log-probability: a head that rules out the words whose vector's first coordinate
    is below -1 (a property of the vector, so renamings permute it), as long as two words are left (one word
    left is certain whatever the states), keeps its points."""

    def ruling_out(J, U, seed, z_fwd, z_bwd, E):
        out = checks4.head_reference(J, U, seed, z_fwd, z_bwd, E, {})
        out_of = E[:, 0] < -1
        if (~out_of).sum() < 2:
            return out
        return torch.log_softmax(out.masked_fill(out_of, -math.inf), dim=1)

    outcomes = run_trials(ruling_out, sent("ch4.blank_head", head_trials))
    assert any((o.value == -math.inf).any() for o in outcomes)
    verdict = judge("ch4.blank_head", head_trials, outcomes)
    assert verdict.passed, verdict.message


def _lm(lm_trials, log_p: torch.Tensor):
    return judge("ch4.blank_lm", lm_trials, [Outcome(value=log_p)])


def test_a_trainer_returning_zeros_and_one_row_of_minus_infinity_fails(lm_trials) -> None:
    """The attack of issue 22: log_softmax turns the row into NaN, which once hid from every comparison."""
    queries, n_words = lm_trials[0][2].shape[0], lm_trials[0][5]
    log_p = torch.zeros(queries, n_words)
    log_p[3] = -math.inf
    verdict = _lm(lm_trials, log_p)
    assert not verdict.passed and "-inf" in verdict.message


def test_the_exact_log_posterior_with_its_minus_infinities_passes(lm_trials) -> None:
    post = checks4.exact_posteriors(lm_trials[0][-1])
    log_p = torch.log(torch.cat([post, post[:checks4.PAIRS]]))
    assert (log_p == -math.inf).any()
    verdict = _lm(lm_trials, log_p)
    assert verdict.passed, verdict.message


def test_a_non_finite_trained_output_anywhere_loses_the_trained_check(lm_trials) -> None:
    post = checks4.exact_posteriors(lm_trials[0][-1])
    right = torch.log(torch.cat([post, post[:checks4.PAIRS]]) + 1e-6)
    assert _lm(lm_trials, right).passed
    for row, col in ((0, 0), (-1, -1), (checks4.PAIRS - 1, 5), (checks4.HELD_OUT, 5)):
        for label, poison in POISONS.items():
            log_p = right.clone()
            log_p[row, col] = poison
            assert not _lm(lm_trials, log_p).passed, (row, col, label)


def test_minus_infinity_where_the_exact_posterior_is_not_zero_makes_the_gap_infinite(lm_trials) -> None:
    post = checks4.exact_posteriors(lm_trials[0][-1])
    log_p = torch.log(torch.cat([post, post[:checks4.PAIRS]]))
    n, w = (post > 0).nonzero()[-1].tolist()  # a blank of the held-out part whose pair is not sent
    log_p[n, w] = -math.inf
    cross, optimum = checks4.held_out_gap(lm_trials[0], log_p)
    assert cross == math.inf
    verdict = _lm(lm_trials, log_p)
    assert not verdict.passed and "above the Bayes optimum" in verdict.message
