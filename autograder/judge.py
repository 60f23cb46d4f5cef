"""The trusted comparison: a student's outcomes against `solutions/`, decided here.

Runs in the grader's own process (or, in local mode, in the notebook's). It reads only
plain data from the student's side: tensors are checked to be plain `torch.Tensor`s
before any of their methods are trusted, and every comparison uses this process's torch.
"""
from __future__ import annotations

import math
import os
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from attnlab.grading import RECORD, Outcome, run_trials, split_record_request
from attnlab.wire import Received
from autograder.checks import CHECKS, AnswerCheck, FunctionCheck
from autograder.checks.base import BehaviourCheck, Check, EquationCheck, Passed, ValueCheck

SEED_ENV = "ATTNLAB_SEED"  # fixes the local judge's seed (to reproduce a failure)


@dataclass(frozen=True)
class Verdict:
    """Pass or fail, with one sentence a student can act on."""

    passed: bool
    message: str


def make_trials(name: str, seed: int) -> list[tuple]:
    """The trial inputs of check `name`, drawn from `seed`.

    A symbolic answer has none; an equation answer has one empty trial (it is a value, judged here);
    a function with upstream functions gets a recording request `{RECORD: [names]}` at the end of
    each trial (the student's process calls the function without it: `attnlab.grading.run_trials`).
    """
    check = _lookup(name)
    if isinstance(check, AnswerCheck):
        return []
    if isinstance(check, EquationCheck):
        return [()]
    gen = torch.Generator().manual_seed(seed)
    trials = check.trials(gen)
    if isinstance(check, FunctionCheck) and check.upstream:
        return [(*args, {RECORD: list(check.upstream)}) for args in trials]
    return trials


def reference_outcomes(name: str, trials: Sequence[tuple]) -> list[Outcome]:
    """What a right answer sends for check `name` on `trials` (to warm the judge up and test a check)."""
    check = _lookup(name)
    if isinstance(check, AnswerCheck):
        return [Outcome(value=check.reference)]
    return [Outcome(value=check.reference(*args)) for args in trials]


def sent(name: str, trials: Sequence[tuple]) -> list[tuple]:
    """What the student's function is called on: the trials without the parts only the judge sees."""
    check = _lookup(name)
    return [check.public(t) for t in trials] if isinstance(check, BehaviourCheck) else list(trials)


def judge(name: str, trials: Sequence[tuple], outcomes: Sequence[Outcome],
          passed: frozenset[str] = frozenset()) -> Verdict:
    """Decide check `name` from the student's outcomes on `trials`. `passed`: the checks of the same
    notebook already passed (an upstream function that passed its own check must agree with the
    results recorded for it inside the function judged; see `_judge_composition`)."""
    check = _lookup(name)
    if isinstance(check, AnswerCheck):
        return _judge_answer(check, outcomes)
    if isinstance(check, EquationCheck):
        return _judge_equations(check, outcomes)
    if len(outcomes) != len(trials):
        return Verdict(False, f"expected results for {len(trials)} trials, got {len(outcomes)}")
    if isinstance(check, BehaviourCheck):
        return _judge_behaviour(check, trials, outcomes)
    for i, (trial, outcome) in enumerate(zip(trials, outcomes)):
        args, _ = split_record_request(tuple(trial))
        where = f"on trial {i + 1} of {len(trials)} ({describe(args)})"
        if outcome.error is not None:
            return Verdict(False, f"your function raised {outcome.error} {where}")
        if isinstance(check, FunctionCheck) and check.upstream:
            chapter = name.split(".", 1)[0]
            problem = _judge_composition(check, args, outcome.value,
                                         frozenset(n for n in check.upstream if f"{chapter}.{n}" in passed))
        else:
            problem = compare(outcome.value, check.reference(*args), check)
        if problem:
            return Verdict(False, f"{problem} {where}")
    return Verdict(True, f"all {len(trials)} trials match the reference")


def local_check(name: str, answer: object) -> None:
    """The local judge (entry point `attnlab.local_judge`): check `answer` in this process on a fresh
    seed; AssertionError with the reason if it fails. Used by nbval, stock nbgrader, an instructor's Jupyter."""
    seed = int(os.environ.get(SEED_ENV) or secrets.randbits(31))
    trials = make_trials(name, seed) if callable(answer) else []
    verdict = judge(name, trials, run_trials(answer, sent(name, trials)))
    if not verdict.passed:
        raise AssertionError(f"{verdict.message} [check {name}, seed {seed}]")


def _lookup(name: str) -> Check:
    try:
        return CHECKS[name]
    except KeyError:
        raise KeyError(f"no hidden check named {name!r}") from None


def _judge_behaviour(check: BehaviourCheck, trials: Sequence[tuple], outcomes: Sequence[Outcome]) -> Verdict:
    for i, (args, outcome) in enumerate(zip(trials, outcomes)):
        if outcome.error is not None:
            where = f"on trial {i + 1} of {len(trials)} ({describe(check.public(args))})"
            return Verdict(False, f"your function raised {outcome.error} {where}")
    problem = check.verify(trials, [o.value for o in outcomes])
    if isinstance(problem, Passed):
        return Verdict(True, str(problem))
    return Verdict(problem is None, problem or f"all {len(trials)} trials behave as asked")


def _judge_answer(check: AnswerCheck, outcomes: Sequence[Outcome]) -> Verdict:
    from attnlab.symbolic import check_answer

    if len(outcomes) != 1 or outcomes[0].error is not None:
        return Verdict(False, "no answer was given")
    result = check_answer(outcomes[0].value, check.reference, check.variables, relations=check.relations)
    return Verdict(result.ok, result.message)


def _judge_equations(check: EquationCheck, outcomes: Sequence[Outcome]) -> Verdict:
    from autograder.equation_judge import judge_equations

    if len(outcomes) != 1 or outcomes[0].error is not None:
        return Verdict(False, "no answer was given")
    decision = judge_equations(check.question, outcomes[0].value)
    return Verdict(decision.passed, decision.message)


# --------------------------------------------------------------------------- upstream functions

class _NotRecorded(Exception):
    """The reference composition asked for a call the student's log does not answer."""


def _judge_composition(check: FunctionCheck, args: tuple, value: object,
                       agreeing: frozenset[str] = frozenset()) -> str | None:
    """None if the output equals the reference, or the reference composed over the student's own upstream
    functions (their recorded calls); else a sentence saying how it differs from both.

    The calls are recorded in the student's process, which could write any log. An upstream function
    named in `agreeing` passed its own check in this notebook: its recorded results must then be the
    reference's on the same arguments (within the check's tolerance), or the log does not count."""
    output, calls = _split_recorded(value, check.upstream)
    problem = compare(output, check.reference(*args), check)
    if problem is None:
        return None
    if calls is None:
        return problem
    names = _and(check.upstream)
    try:
        lookups = {n: _lookup_calls(n, calls[n], check, check.upstream_reference(n), n in agreeing)
                   for n in check.upstream}
        composed = check.reference(*args, **lookups)
    except _NotRecorded as exc:
        return f"{problem}, and it is not the expected composition of your own {names} either ({exc})"
    except Exception as exc:  # noqa: BLE001 - the student's recorded results may be anything
        return f"{problem}, and the expected composition over your own {names} fails ({type(exc).__name__})"
    other = compare(output, composed, check)
    if other is None:
        return None
    return f"{problem}; built on your own {names} the expected result differs too: {other}"


def _split_recorded(value: object, names: Sequence[str]) -> tuple[object, dict[str, list] | None]:
    """(output, calls) from an outcome sent by `run_trials` with a recording request; (value, None) otherwise."""
    if type(value) is dict and set(value) == {"output", "calls"} and type(value["calls"]) is dict:
        calls = value["calls"]
        if all(type(calls.get(n, [])) is list for n in names):
            return value["output"], {n: calls.get(n, []) for n in names}
    return value, None


def _lookup_calls(name: str, log: list, check: FunctionCheck, reference: Callable[..., object], agree: bool = False):
    """A stand-in for the student's `name` that answers from its recorded calls (arguments matched by value).

    A recorded result is used only if it has the structure and shapes of the reference's own result on the
    same arguments, so whatever the log holds, the composition runs on tensors of the trials' sizes; with
    `agree` (the student's `name` passed its own check) only if it equals that result too."""
    entries = [e for e in log if type(e) is list and len(e) == 2 and type(e[0]) in (list, tuple)]

    def lookup(*args: object) -> object:
        found = [result for recorded, result in entries
                 if len(recorded) == len(args) and all(compare(r, a, check) is None for r, a in zip(recorded, args))]
        if not found:
            raise _NotRecorded(f"your function never called {name} on the arguments the composition passes it")
        first = _local(found[0], args)
        if not _finite(first):
            raise _NotRecorded(f"your {name} returned NaN or inf")
        if any(compare(other, first, check) is not None for other in found[1:]):
            raise _NotRecorded(f"your {name} returned different results for the same arguments")
        expected = reference(*args)
        if not _same_form(first, expected):
            raise _NotRecorded(f"your {name} returned {_kind(found[0])} where {describe([expected])} was expected")
        if agree and compare(first, expected, check) is not None:
            raise _NotRecorded(f"your {name} passed its own check, but the results recorded for it here differ "
                               "from what it must return on the same arguments")
        return first

    return lookup


def _finite(x: object) -> bool:
    """True if every number in `x` (nested tensors, lists, tuples, floats) is finite."""
    if type(x) is torch.Tensor:
        return not x.is_floating_point() or bool(torch.isfinite(x).all())
    if type(x) in (list, tuple):
        return all(_finite(v) for v in x)
    return type(x) is not float or math.isfinite(x)


def _same_form(x: object, like: object) -> bool:
    """Same nesting and tensor shapes (values and dtypes aside: the composition runs on what the student's returned)."""
    if isinstance(like, torch.Tensor):
        return type(x) is torch.Tensor and x.shape == like.shape
    if isinstance(like, (list, tuple)):
        return type(x) in (list, tuple) and len(x) == len(like) and all(_same_form(a, b) for a, b in zip(x, like))
    return type(x) in (int, float, bool, str, type(None)) and type(x) is type(like)


def _local(x: object, like: Sequence[object]) -> object:
    """A recorded result as tensors on the device of the arguments it answers."""
    device = next((a.device for a in like if isinstance(a, torch.Tensor)), torch.device("cpu"))
    if isinstance(x, Received):
        return x.tensor.to(device)
    if type(x) is torch.Tensor:
        return x.detach().to(device)
    if type(x) in (list, tuple):
        return type(x)(_local(v, like) for v in x)
    return x


def _and(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def compare(actual: object, expected: object, check: FunctionCheck | ValueCheck, path: str = "output") -> str | None:
    """None if `actual` matches `expected`, else a sentence saying how it differs."""
    if isinstance(expected, torch.Tensor):
        return _compare_tensor(actual, expected, check, path)
    if isinstance(expected, (list, tuple)):
        if type(actual) not in (list, tuple) or len(actual) != len(expected):
            return f"{path} should be a sequence of {len(expected)} items, got {_kind(actual)}"
        for k, (a, e) in enumerate(zip(actual, expected)):
            if problem := compare(a, e, check, f"{path}[{k}]"):
                return problem
        return None
    if type(actual) is not type(expected) and not (type(actual) in (int, float) and type(expected) in (int, float)):
        return f"{path} should be {type(expected).__name__} {expected!r}, got {_kind(actual)}"
    if type(actual) is float and not math.isfinite(actual) and not (actual == -math.inf and expected == -math.inf):
        return f"{path} is {actual!r}, expected {expected!r} (a number must be finite)"
    return None if actual == expected else f"{path} is {actual!r}, expected {expected!r}"


def _compare_tensor(actual: object, expected: torch.Tensor, check: FunctionCheck | ValueCheck, path: str) -> str | None:
    if isinstance(actual, Received):
        tensor, device_type = actual.tensor, actual.device_type
    elif type(actual) is torch.Tensor:
        tensor, device_type = actual.detach(), actual.device.type
    else:
        return f"{path} should be a torch.Tensor, got {_kind(actual)}"
    if tuple(tensor.shape) != tuple(expected.shape):
        return f"{path} has shape {tuple(tensor.shape)}, expected {tuple(expected.shape)}"
    if tensor.dtype != expected.dtype:
        return f"{path} has dtype {tensor.dtype}, expected {expected.dtype} (keep the inputs' dtype)"
    if device_type != expected.device.type:
        return f"{path} is on {device_type}, expected {expected.device.type} (keep the inputs' device)"
    a, e = tensor.cpu(), expected.detach().cpu()
    if not a.is_floating_point():
        return None if torch.equal(a, e) else f"{path} differs from the reference"
    if problem := _nonfinite(a, e, path):
        return problem
    rtol, atol = check.tolerances(e.dtype) if isinstance(check, FunctionCheck) else (0.0, 0.0)
    finite = torch.isfinite(e)  # -inf where the reference has -inf is settled by _nonfinite
    err = (a[finite].double() - e[finite].double()).abs()
    allowed = atol + rtol * e[finite].double().abs()
    if err.numel() and not bool((err <= allowed).all()):
        return (f"{path} differs from the reference by up to {err.max().item():.3g} "
                f"(tolerance rtol={rtol:g}, atol={atol:g})")
    return None


def _nonfinite(a: torch.Tensor, e: torch.Tensor, path: str) -> str | None:
    """None if `a` is finite wherever the reference `e` is, and -inf exactly where `e` is -inf (a log of zero);
    NaN and +inf are always refused."""
    if bool(torch.isnan(e).any()) or bool((e == math.inf).any()):
        return f"{path} cannot be judged: the expected result is not finite"
    if bool(torch.isnan(a).any()):
        return f"{path} contains NaN"
    if bool((a == math.inf).any()):
        return f"{path} contains +inf"
    if not torch.equal(a == -math.inf, e == -math.inf):
        return f"{path} has -inf where the reference is finite, or a finite value where it is -inf"
    return None


def _kind(x: object) -> str:
    if isinstance(x, Received):
        return f"a tensor of shape {tuple(x.tensor.shape)}"
    if type(x) is torch.Tensor:
        return f"a tensor of shape {tuple(x.shape)}"
    return f"{type(x).__name__}"


def describe(args: Sequence[object]) -> str:
    """Short text for a trial's arguments: shapes, dtype and device of tensors."""
    return ", ".join(_describe(a) for a in args)


def _describe(a: object) -> str:
    if isinstance(a, torch.Tensor):
        return f"[{','.join(map(str, a.shape))}] {str(a.dtype).removeprefix('torch.')} {a.device.type}"
    if isinstance(a, (list, tuple)):
        inner = _describe(a[0]) if a else ""
        return f"{len(a)} x ({inner})" if a else "[]"
    if isinstance(a, dict):  # named tensors (a block's parameters): each by its shape, not its values
        return "{" + ", ".join(f"{k}: {_describe(v)}" for k, v in a.items()) + "}"
    return repr(a)
