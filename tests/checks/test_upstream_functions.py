"""One mistake costs one cell: a graded function that calls an earlier student function is judged over
the student's own upstream function (`FunctionCheck(..., upstream=(...))`).

The kit's recorder (`attnlab.grading.run_trials` with a recording request) and the trusted judge's
composition (`autograder.judge`) are tested on Chapter 1's `transformer` over `self_attention`, in
process (as the local judge runs them) and through the wire (as the engine runs them). What a
forged call log can buy is shown too: exactly what a correct composition over some function buys.
"""
from __future__ import annotations

import functools
import math
import textwrap

import pytest
import torch

from attnlab import grading, wire
from attnlab.grading import RECORD, Outcome, run_trials, split_record_request
from autograder import judge as J
from autograder.checks import CHECKS
from solutions import ch1

NAME = "ch1.transformer"
NOTEBOOK = '''
import math
import torch

def self_attention(M, WQ, WK, WV):
    K = WQ.shape[1]
    Query = torch.einsum("hkj,tj->htk", WQ, M)
    Key = torch.einsum("hkj,tj->htk", WK, M)
    Value = torch.einsum("hij,tj->hti", WV, M)
    alpha = torch.softmax(torch.einsum("htk,hsk->hts", Query, Key) / math.sqrt(K), dim=-1)
    V = torch.einsum("hts,hsi->hti", alpha, Value)
    return V.permute(1, 0, 2).reshape(M.shape[0], -1)

def transformer(M, layers):
    for WQ, WK, WV in layers:
        M = self_attention(M, WQ, WK, WV)
    return M
'''
WRONG_SA = "/ math.sqrt(K), dim=-1)"  # replaced to make self_attention wrong
COMPOSITIONS = {
    "right": "",
    "every layer reads the input": '''
        def transformer(M, layers):
            out = M
            for WQ, WK, WV in layers:
                out = self_attention(M, WQ, WK, WV)
            return out
        ''',
    "layers in reverse": '''
        def transformer(M, layers):
            for WQ, WK, WV in reversed(layers):
                M = self_attention(M, WQ, WK, WV)
            return M
        ''',
    "keywords": '''
        def transformer(M, layers):
            for WQ, WK, WV in layers:
                M = self_attention(M=M, WQ=WQ, WK=WK, WV=WV)
            return M
        ''',
    "inlined, no call": '''
        def transformer(M, layers):
            for WQ, WK, WV in layers:
                Query = torch.einsum("hkj,tj->htk", WQ, M)
                Key = torch.einsum("hkj,tj->htk", WK, M)
                Value = torch.einsum("hij,tj->hti", WV, M)
                a = torch.softmax(torch.einsum("htk,hsk->hts", Query, Key) / math.sqrt(WQ.shape[1]), dim=-1)
                M = torch.einsum("hts,hsi->hti", a, Value).permute(1, 0, 2).reshape(M.shape[0], -1)
            return M
        ''',
}


def notebook(self_attention_right: bool, composition: str) -> dict:
    """A student's namespace: their self_attention (right or not) and transformer."""
    src = NOTEBOOK if self_attention_right else NOTEBOOK.replace(WRONG_SA, ", dim=-1)")
    ns: dict = {}
    exec(src + textwrap.dedent(COMPOSITIONS[composition]), ns)  # noqa: S102 - the test's own code
    return ns


# (self_attention right?, composition, transformer passes?)
CASES = [
    (True, "right", True), (False, "right", True),
    (True, "keywords", True), (False, "keywords", True),
    (True, "inlined, no call", True), (False, "inlined, no call", True),
    (True, "every layer reads the input", False), (False, "every layer reads the input", False),
    (True, "layers in reverse", False), (False, "layers in reverse", False),
]


@pytest.mark.parametrize("sa_right, composition, passes", CASES)
def test_transformer_is_judged_on_its_own(sa_right: bool, composition: str, passes: bool) -> None:
    ns = notebook(sa_right, composition)
    if passes:
        J.local_check(NAME, ns["transformer"])
    else:
        with pytest.raises(AssertionError, match="not the expected composition of your own self_attention either"):
            J.local_check(NAME, ns["transformer"])
    with (pytest.raises(AssertionError) if not sa_right else _nothing()):
        J.local_check("ch1.self_attention", ns["self_attention"])


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False


def test_the_same_through_the_wire_as_the_engine_sends_it() -> None:
    trials = J.make_trials(NAME, seed=7)
    sent = wire.decode(wire.encode(J.sent(NAME, trials)))  # what the sandboxed notebook receives (public parts)
    for sa_right, composition, passes in CASES:
        ns = notebook(sa_right, composition)
        outcomes = []
        for o in run_trials(ns["transformer"], sent):
            d = wire.decode(wire.encode({"value": o.value, "error": o.error}), record_device=True)
            outcomes.append(Outcome(value=d["value"], error=d["error"]))
        verdict = J.judge(NAME, trials, outcomes)
        assert verdict.passed is passes, (sa_right, composition, verdict.message)


# --------------------------------------------------------------------------- the kit's recorder

def test_trials_carry_the_request_and_the_reference_ignores_it() -> None:
    trials = J.make_trials(NAME, seed=3)
    assert all(t[-1] == {RECORD: ["self_attention"]} for t in trials)
    args, names = split_record_request(trials[0])
    assert names == ["self_attention"] and len(args) == 2
    check = CHECKS[NAME]
    # the engine's warm-up calls reference(*trial): it gets the pure reference
    torch.testing.assert_close(check.reference(*trials[0]), ch1.transformer(*args))
    assert J.judge(NAME, trials, J.reference_outcomes(NAME, trials)).passed
    assert "attnlab.record" not in J.describe(args)


def test_split_record_request_takes_only_the_exact_form() -> None:
    assert split_record_request((1, {RECORD: ["f"]})) == ((1,), ["f"])
    for trial in [(1, {RECORD: "f"}), (1, {RECORD: ["f"], "x": 1}), (1, {"other": ["f"]}), ({RECORD: ["f"]}, 1), ()]:
        assert split_record_request(trial)[1] is None


def test_recording_logs_calls_and_restores_the_namespace() -> None:
    ns = notebook(True, "right")
    original = ns["self_attention"]
    M = torch.randn(4, 6)
    layers = [tuple(torch.randn(2, d, 6) for d in (3, 3, 3)) for _ in range(2)]
    (outcome,) = run_trials(ns["transformer"], [(M, layers, {RECORD: ["self_attention", "absent"]})])
    assert ns["self_attention"] is original and "absent" not in ns
    assert set(outcome.value) == {"output", "calls"} and list(outcome.value["calls"]) == ["self_attention"]
    calls = outcome.value["calls"]["self_attention"]
    assert len(calls) == 2 and all(len(args) == 4 for args, _ in calls)
    torch.testing.assert_close(calls[0][0][0], M)
    torch.testing.assert_close(calls[1][0][0], calls[0][1])  # the second layer read the first one's output
    torch.testing.assert_close(outcome.value["output"], calls[1][1])


def test_recording_survives_errors_and_odd_answers() -> None:
    ns = notebook(True, "right")
    original = ns["self_attention"]
    exec("def transformer(M, layers):\n    self_attention(M, *layers[0])\n    raise ValueError('late')", ns)
    M, layer = torch.randn(3, 6), tuple(torch.randn(2, 3, 6) for _ in range(3))
    (o,) = run_trials(ns["transformer"], [(M, [layer], {RECORD: ["self_attention"]})])
    assert o.error is not None and "ValueError: late" in o.error
    assert ns["self_attention"] is original
    part = functools.partial(notebook(True, "right")["transformer"])  # no __globals__: nothing to record
    (o,) = run_trials(part, [(M, [layer], {RECORD: ["self_attention"]})])
    assert o.error is None and o.value["calls"] == {}


def test_what_cannot_be_recorded_is_marked_not_sent() -> None:
    ns: dict = {}
    exec("def up(x, y=None):\n    return x\n\ndef f(x):\n    up(x, y=object())\n    up(x, y=2)\n"
         "    for _ in range(300):\n        up(x)\n    return x", ns)
    (o,) = run_trials(ns["f"], [(torch.ones(2), {RECORD: ["up"]})])
    calls = o.value["calls"]["up"]
    assert calls[0] is None  # an object() argument is not plain data
    assert calls[1][0][1] == 2  # a keyword argument recorded by position
    assert len(calls) == grading.MAX_RECORDED_CALLS
    wire.encode(o.value)  # everything recorded can be sent


# --------------------------------------------------------------------------- forged call logs

def _trial(seed: int = 5) -> tuple:
    trials = J.make_trials(NAME, seed)
    return next(t for t in trials if len(t[1]) == 2)  # two layers


def _lookup_table(M: torch.Tensor, layers: list, outputs: list[torch.Tensor]) -> list:
    """A call log of some function f with f(M_l, layer_l) = outputs[l], chained as a transformer chains."""
    log, x = [], M
    for layer, y in zip(layers, outputs):
        log.append([(x, *layer), y])
        x = y
    return log


def test_a_forged_log_buys_only_what_a_correct_composition_buys() -> None:
    trial = _trial()
    (M, layers), _ = split_record_request(trial)
    f = [torch.randn_like(M) for _ in layers]  # "self_attention" as a lookup table
    log = _lookup_table(M, layers, f)
    honest = {"output": f[-1], "calls": {"self_attention": log}}
    assert J.judge(NAME, [trial], [Outcome(value=honest)]).passed  # = transformer over that function
    lying = {"output": f[0], "calls": {"self_attention": log}}  # an output the composition does not give
    assert not J.judge(NAME, [trial], [Outcome(value=lying)]).passed
    unchained = _lookup_table(M, layers, f)
    unchained[1][0] = (M, *layers[1])  # the second call does not read the first one's output
    forged = {"output": f[-1], "calls": {"self_attention": unchained}}
    verdict = J.judge(NAME, [trial], [Outcome(value=forged)])
    assert not verdict.passed and "never called self_attention on the arguments the composition passes it" in verdict.message
    twice = log + [[log[0][0], torch.randn_like(M)]]  # not a function: two results for the same arguments
    verdict = J.judge(NAME, [trial], [Outcome(value={"output": f[-1], "calls": {"self_attention": twice}})])
    assert not verdict.passed and "returned different results for the same arguments" in verdict.message


def test_a_log_that_disagrees_with_an_upstream_function_that_passed_its_own_check_buys_nothing() -> None:
    """Attack: self_attention right (it passes its own check), a transformer that returns anything and a log,
    written in the student's process, that makes the output look like a composition. When the notebook's
    self_attention passed, its recorded results must be the reference's on the same arguments."""
    trial = _trial()
    (M, layers), _ = split_record_request(trial)
    f = [torch.randn_like(M) for _ in layers]
    forged = {"output": f[-1], "calls": {"self_attention": _lookup_table(M, layers, f)}}
    assert J.judge(NAME, [trial], [Outcome(value=forged)]).passed  # a failing self_attention's log counts
    verdict = J.judge(NAME, [trial], [Outcome(value=forged)], passed=frozenset({"ch1.self_attention"}))
    assert not verdict.passed and "passed its own check, but the results recorded" in verdict.message
    honest, x = [], M
    for layer in layers:
        x = ch1.self_attention(x, *layer) * (1 + 3e-6)  # right within the tolerance, not bit for bit
        honest.append(x)
    right = {"output": honest[-1], "calls": {"self_attention": _lookup_table(M, layers, honest)}}
    assert J.judge(NAME, [trial], [Outcome(value=right)], passed=frozenset({"ch1.self_attention"})).passed


def test_a_log_never_makes_the_grader_compute_on_other_sizes() -> None:
    """A forged result of another shape (a huge M would make the reference's T x T scores huge) is refused
    before the composition reads it."""
    trial = _trial()
    (M, layers), _ = split_record_request(trial)
    huge = torch.zeros(4 * M.shape[0], M.shape[1], dtype=M.dtype)
    log = _lookup_table(M, layers, [huge, huge])
    verdict = J.judge(NAME, [trial], [Outcome(value={"output": huge, "calls": {"self_attention": log}})])
    assert not verdict.passed
    assert f"your self_attention returned a tensor of shape {tuple(huge.shape)} where [{M.shape[0]},{M.shape[1]}]" \
        in verdict.message


def test_an_upstream_reference_must_take_the_function_as_a_keyword() -> None:
    from autograder.checks.base import FunctionCheck

    def composed(M, layers):
        return M

    with pytest.raises(ValueError, match="must take self_attention as a keyword argument"):
        FunctionCheck(composed, lambda gen: [], upstream=("self_attention",))
    check = FunctionCheck(ch1.transformer, lambda gen: [], upstream=("self_attention",))
    assert check.upstream_reference("self_attention") is ch1.self_attention


def test_malformed_logs_are_ignored_not_trusted() -> None:
    trial = _trial()
    (M, layers), _ = split_record_request(trial)
    want = ch1.transformer(M, layers)
    for value in [{"output": want, "calls": "x"}, {"output": want, "calls": {"self_attention": "x"}},
                  {"output": want, "calls": {"self_attention": [None, [1], "x"]}, "extra": 1}]:
        verdict = J.judge(NAME, [trial], [Outcome(value=value)])
        assert verdict.passed is (type(value["calls"]) is dict and set(value) == {"output", "calls"} and
                                  type(value["calls"]["self_attention"]) is list), value
    wrong = {"output": want + 1, "calls": {"self_attention": [[("junk",), want]]}}
    assert not J.judge(NAME, [trial], [Outcome(value=wrong)]).passed
    garbage = {"output": want + 1, "calls": {"self_attention": _lookup_table(M, layers, [torch.zeros(1)] * 2)}}
    verdict = J.judge(NAME, [trial], [Outcome(value=garbage)])
    assert not verdict.passed  # the composition over shape-less results fails, and says so


def test_a_plain_output_is_judged_against_the_pure_reference() -> None:
    trial = _trial()
    (M, layers), _ = split_record_request(trial)
    assert J.judge(NAME, [trial], [Outcome(value=ch1.transformer(M, layers))]).passed
    verdict = J.judge(NAME, [trial], [Outcome(value=M)])
    assert not verdict.passed and verdict.message.startswith("output differs from the reference")


def test_the_reference_composes_over_what_it_is_given() -> None:
    M = torch.randn(3, 4, dtype=torch.float64)
    layers = [tuple(torch.randn(2, 2, 4, dtype=torch.float64) for _ in range(3))] * 2
    calls = []

    def fake(M, WQ, WK, WV):
        calls.append(M)
        return M * 2

    torch.testing.assert_close(ch1.transformer(M, layers, self_attention=fake), 4 * M)
    assert len(calls) == 2
    torch.testing.assert_close(ch1.transformer(M, []), M)
    assert math.isclose(float(ch1.transformer(M, layers).sum()), float(ch1.transformer(M, layers).sum()))


def test_the_judge_decides_an_upstream_check_before_the_function_built_on_it() -> None:
    """A notebook that runs transformer's check before self_attention's still has self_attention judged first
    (so a disagreeing log is caught); otherwise the notebook's order stands (a budget runs out where it would)."""
    from autograder.engine.judging import upstream_first

    assert upstream_first(["ch1.transformer", "ch1.LAYER_TIME", "ch1.self_attention", "ch1.SOFTMAX_TIME"]) == [1, 2, 0, 3]
    assert upstream_first(["ch1.self_attention", "ch1.transformer", "ch1.LAYER_TIME"]) == [0, 1, 2]
