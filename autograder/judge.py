"""The trusted comparison: a student's outcomes against `solutions/`, decided here.

Runs in the grader's own process (or, in local mode, in the notebook's). It reads only
plain data from the student's side: tensors are checked to be plain `torch.Tensor`s
before any of their methods are trusted, and every comparison uses this process's torch.
"""
from __future__ import annotations

import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from attnlab.grading import Outcome, run_trials
from attnlab.wire import Received
from autograder.checks import CHECKS, AnswerCheck, FunctionCheck
from autograder.checks.base import BehaviourCheck, ValueCheck

SEED_ENV = "ATTNLAB_SEED"  # fixes the local judge's seed (to reproduce a failure)


@dataclass(frozen=True)
class Verdict:
    """Pass or fail, with one sentence a student can act on."""

    passed: bool
    message: str


def make_trials(name: str, seed: int) -> list[tuple]:
    """The trial inputs of check `name`, drawn from `seed`."""
    check = _lookup(name)
    if isinstance(check, AnswerCheck):
        return []
    gen = torch.Generator().manual_seed(seed)
    return check.trials(gen)


def sent(name: str, trials: Sequence[tuple]) -> list[tuple]:
    """What the student's function is called on: the trials without the parts only the judge sees."""
    check = _lookup(name)
    return [check.public(t) for t in trials] if isinstance(check, BehaviourCheck) else list(trials)


def judge(name: str, trials: Sequence[tuple], outcomes: Sequence[Outcome]) -> Verdict:
    """Decide check `name` from the student's outcomes on `trials`."""
    check = _lookup(name)
    if isinstance(check, AnswerCheck):
        return _judge_answer(check, outcomes)
    if len(outcomes) != len(trials):
        return Verdict(False, f"expected results for {len(trials)} trials, got {len(outcomes)}")
    if isinstance(check, BehaviourCheck):
        return _judge_behaviour(check, trials, outcomes)
    for i, (args, outcome) in enumerate(zip(trials, outcomes)):
        where = f"on trial {i + 1} of {len(trials)} ({describe(args)})"
        if outcome.error is not None:
            return Verdict(False, f"your function raised {outcome.error} {where}")
        expected = check.reference(*args)
        problem = compare(outcome.value, expected, check)
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


def _lookup(name: str) -> FunctionCheck | AnswerCheck | ValueCheck | BehaviourCheck:
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
    return Verdict(problem is None, problem or f"all {len(trials)} trials behave as asked")


def _judge_answer(check: AnswerCheck, outcomes: Sequence[Outcome]) -> Verdict:
    from attnlab.symbolic import check_answer

    if len(outcomes) != 1 or outcomes[0].error is not None:
        return Verdict(False, "no answer was given")
    result = check_answer(outcomes[0].value, check.reference, check.variables, relations=check.relations)
    return Verdict(result.ok, result.message)


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
    if a.is_floating_point() and not torch.isfinite(a).all():
        return f"{path} contains NaN or inf"
    if not a.is_floating_point():
        return None if torch.equal(a, e) else f"{path} differs from the reference"
    rtol, atol = check.tolerances(e.dtype) if isinstance(check, FunctionCheck) else (0.0, 0.0)
    if not torch.allclose(a, e, rtol=rtol, atol=atol):
        err = (a - e).abs().max().item()
        return f"{path} differs from the reference by up to {err:.3g} (tolerance rtol={rtol:g}, atol={atol:g})"
    return None


def _kind(x: object) -> str:
    if isinstance(x, Received):
        return f"a tensor of shape {tuple(x.tensor.shape)}"
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
    return repr(a)
