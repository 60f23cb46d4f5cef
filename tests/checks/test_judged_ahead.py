"""The reference's outputs computed ahead (while the notebook runs) decide exactly as the reference run at judging.

The judge process computes `Check.expected(trials)` for the trials it drew, one trial at a time while it has no
request (`autograder.engine.judging.Ahead`), and a verdict given them only compares (`Check.verdict(...,
expected)`): the same verdicts, and the outputs given are the ones compared.
"""
from __future__ import annotations

import pytest

from attnlab import wire
from attnlab.grading import Outcome, run_trials
from autograder import judge as J
from autograder.checks import CHECKS
from autograder.engine.judging import Ahead
from tests.checks.test_upstream_functions import notebook


def _outcomes(fn, name: str, trials: list[tuple]) -> list[Outcome]:
    """What the engine's judge receives from a notebook's `fn` on the public parts of `trials`."""
    sent = wire.decode(wire.encode(J.sent(name, trials)))
    out = []
    for o in run_trials(fn, sent):
        d = wire.decode(wire.encode({"value": o.value, "error": o.error}), record_device=True)
        out.append(Outcome(value=d["value"], error=d["error"]))
    return out


def test_outputs_computed_ahead_give_the_same_verdicts() -> None:
    # a wrong self_attention (fails) under a right transformer (passes over the student's own self_attention); a
    # right self_attention (passes) under a wrong composition (fails)
    for sa_right, composition in [(False, "right"), (True, "layers in reverse")]:
        ns = notebook(sa_right, composition)
        for name, passed in (("ch1.self_attention", frozenset()), ("ch1.transformer", frozenset({"ch1.self_attention"}))):
            trials = J.make_trials(name, seed=11)
            outcomes = _outcomes(ns[name.split(".")[1]], name, trials)
            ahead = CHECKS[name].expected(trials)
            assert J.judge(name, trials, outcomes, passed, ahead) == J.judge(name, trials, outcomes, passed)


@pytest.mark.parametrize("name, shift, said", [("ch1.self_attention", 1.0, "differs from the reference"),
                                               ("ch3.params_separate", 1, "not the right value")])
def test_the_outputs_given_are_the_ones_compared(name: str, shift: object, said: str) -> None:
    trials = J.make_trials(name, seed=5)
    reference = CHECKS[name].reference
    outcomes = _outcomes(reference, name, trials)  # the reference's own: a right answer
    expected = CHECKS[name].expected(trials)
    assert J.judge(name, trials, outcomes, expected=expected).passed
    expected[0] = expected[0] + shift  # an output given ahead that the answer does not match
    verdict = J.judge(name, trials, outcomes, expected=expected)
    assert not verdict.passed and said in verdict.message
    with pytest.raises(ValueError, match="reference outputs given"):
        J.judge(name, trials, outcomes, expected=expected[1:])


class _Doubles:
    uses_expected = True

    def __init__(self) -> None:
        self.calls = 0

    def expected(self, trials: list[tuple]) -> list[object]:
        self.calls += 1
        return [2 * t[0] for t in trials]


class _Fails(_Doubles):
    def expected(self, trials: list[tuple]) -> list[object]:
        raise RuntimeError("the reference failed")


class _Judged(_Doubles):
    uses_expected = False  # a behaviour or a symbolic check: its verdict compares with no reference output


def test_ahead_computes_a_trial_per_step_and_hands_them_over_once() -> None:
    checks = {"a": _Doubles(), "b": _Fails(), "c": _Judged()}
    ahead = Ahead(checks, lambda name, seed: [(seed,), (seed + 1,), (seed + 2,)])
    for name in checks:
        ahead.want(name, 10)
    assert list(ahead.outputs) == [("a", 10), ("b", 10)]
    assert ahead.step()
    assert ahead.take("a", 10) is None  # one trial of three computed: judged as before, and it goes
    ahead.want("a", 10)
    steps = 0
    while ahead.step():
        steps += 1
    assert steps == 3 + 1  # a's three trials, and b's reference failing once (b is then judged as before)
    assert checks["a"].calls == 4 and ahead.take("b", 10) is None
    assert ahead.take("a", 10) == [20, 22, 24]
    assert ahead.take("a", 10) is None and not ahead.outputs


def test_ahead_keeps_a_bounded_number_of_notebooks() -> None:
    ahead = Ahead({"a": _Doubles()}, lambda name, seed: [(seed,)])
    for seed in range(Ahead.LIMIT + 5):
        ahead.want("a", seed)
    assert len(ahead.outputs) == Ahead.LIMIT and ("a", 0) not in ahead.outputs
    assert ahead.step() and ahead.take("a", 5) == [10]  # the oldest kept first
