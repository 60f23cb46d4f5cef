"""The trusted comparison: a student's outcomes against `solutions/`, decided here.

Runs in the grader's own process (or, in local mode, in the notebook's). It reads only
plain data from the student's side: tensors are checked to be plain `torch.Tensor`s
before any of their methods are trusted, and every comparison uses this process's torch.
Each check decides by its own protocol (`autograder.checks.base.Check`): this module finds
the check by name and hands it the trials and outcomes.
"""
from __future__ import annotations

import os
import secrets
from collections.abc import Sequence

from attnlab.grading import Outcome, run_trials
from autograder.checks import CHECKS
from autograder.checks.base import ChapterId, Check, Verdict, short_name
from autograder.checks.compare import compare, describe

SEED_ENV = "ATTNLAB_SEED"  # fixes the local judge's seed (to reproduce a failure)

__all__ = ["SEED_ENV", "Verdict", "compare", "describe", "judge", "local_check", "make_trials",
           "reference_outcomes", "sent"]


def make_trials(name: str, seed: int) -> list[tuple]:
    """The trial inputs of check `name`, drawn from `seed` (whole: the judge's side of them).

    A symbolic answer has none; an equation answer has one empty trial (it is a value, judged here);
    a function with upstream functions gets a recording request `{RECORD: [names]}` at the end of
    each trial (the student's process calls the function without it: `attnlab.grading.run_trials`).
    """
    return _lookup(name).draw(seed)


def reference_outcomes(name: str, trials: Sequence[tuple]) -> list[Outcome]:
    """What a right answer sends for check `name` on `trials` (to warm the judge up and test a check)."""
    return [Outcome(value=value) for value in _lookup(name).expected(trials)]


def sent(name: str, trials: Sequence[tuple]) -> list[tuple]:
    """What the student's function is called on: the trials without the parts only the judge sees."""
    return [_lookup(name).public(t) for t in trials]


def judge(name: str, trials: Sequence[tuple], outcomes: Sequence[Outcome],
          passed: frozenset[str] = frozenset(), expected: Sequence[object] | None = None) -> Verdict:
    """Decide check `name` from the student's outcomes on `trials`. `passed`: the checks of the same
    notebook already passed (an upstream function that passed its own check must agree with the
    results recorded for it inside the function judged; `autograder.checks.compare.judge_composition`).
    `expected`: the reference's outputs on `trials` if computed before (`Check.expected`)."""
    chapter = ChapterId.of(name)
    own = frozenset(short_name(n) for n in passed if ChapterId.of(n) == chapter)
    return _lookup(name).verdict(trials, outcomes, own, expected)


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
