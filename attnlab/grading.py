"""The student-side half of the hidden tests.

A hidden test in a chapter notebook is one line, the same in every mode:

    hidden_check("ch1.self_attention", self_attention)

`answer` is the student's function or value. What happens next depends on who runs the
notebook:

* the trusted grader (`autograder grade`) installs a `Channel` before the notebook runs:
  the trial inputs arrive as plain data from the grader, the student's function is
  called on them here, and only its outputs go back; the grader compares them with
  `solutions/` in its own process and decides the score. Nothing in this process can
  change that decision.
* anywhere else (stock `nbgrader autograde`, an instructor running the source notebook,
  nbval in CI) the checks are judged in this process by `autograder.judge`, on inputs
  drawn from a fresh random seed, and a failure raises AssertionError with a sentence
  that explains it.
"""
from __future__ import annotations

import os
import secrets
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

GRADING_ENV = "ATTNLAB_GRADING"  # set by the autograder in the notebook's process
SEED_ENV = "ATTNLAB_SEED"  # fixes the local-mode seed (to reproduce a failure)


@dataclass(frozen=True)
class Outcome:
    """What one trial produced: a plain value, or the error it raised (one line)."""

    value: Any = None
    error: str | None = None


class Channel(Protocol):
    """The grader's side of the notebook process, installed by the autograder worker."""

    def trials(self, name: str) -> Sequence[tuple]:
        """Argument tuples for check `name` (plain data, already on their device)."""

    def submit(self, name: str, outcomes: list[Outcome]) -> None:
        """Send the outcomes of check `name` back to the grader."""


_channel: Channel | None = None


def install_channel(channel: Channel | None) -> None:
    """Route hidden checks to the trusted grader (None: judge locally)."""
    global _channel
    _channel = channel


def is_grading() -> bool:
    """True while a grader runs this notebook: skip long demos (training, benchmarks)."""
    return _channel is not None or bool(os.environ.get(GRADING_ENV)) or \
        os.environ.get("NBGRADER_EXECUTION") in {"autograde", "validate"}


def run_trials(answer: object, trials: Sequence[tuple]) -> list[Outcome]:
    """Call `answer` on every trial (or take it as the value); never raises."""
    if not callable(answer):
        return [Outcome(value=answer)]
    outcomes = []
    for args in trials:
        try:
            with torch.no_grad():
                outcomes.append(Outcome(value=answer(*args)))
        except Exception as exc:  # noqa: BLE001 - the student's error is the result
            outcomes.append(Outcome(error=_one_line(exc)))
    return outcomes


def hidden_check(name: str, answer: object) -> None:
    """Check the student's `answer` (function or value) for check `name`."""
    if _channel is not None:
        _channel.submit(name, run_trials(answer, _channel.trials(name) if callable(answer) else ()))
        return
    from autograder.judge import judge, make_trials  # instructor-only, local mode

    seed = int(os.environ.get(SEED_ENV) or secrets.randbits(31))
    trials = make_trials(name, seed) if callable(answer) else []
    verdict = judge(name, trials, run_trials(answer, trials))
    if not verdict.passed:
        raise AssertionError(f"{verdict.message} [check {name}, seed {seed}]")


def _one_line(exc: BaseException) -> str:
    last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = f" (line {last[0].lineno})" if last else ""
    return f"{type(exc).__name__}: {exc}{where}"[:500]
