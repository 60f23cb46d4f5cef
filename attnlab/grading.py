"""The student-side half of the hidden tests.

A hidden test in a chapter notebook is one line, the same in every mode:

    hidden_check("ch1.self_attention", self_attention)

`answer` is the student's function or value. What happens next depends on who runs the
notebook:

* the trusted grader installs a `Channel` before the notebook runs:
  the trial inputs arrive as plain data from the grader, the student's function is
  called on them here, and only its outputs go back; the grader compares them with the
  reference solutions in its own process and decides the score. Nothing in this process can
  change that decision.
* anywhere else (stock `nbgrader autograde`, an instructor running the source notebook,
  nbval in CI) the line is handed to the course's *local judge*: whatever the installed
  instructor package registers under the entry-point group `attnlab.local_judge`. It
  judges in this process on inputs drawn from a fresh random seed and raises
  AssertionError with a sentence that explains a failure. This kit names no grader:
  without one installed (a student's machine), a hidden check says so and does nothing
  else (the released notebooks contain no hidden checks anyway).
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import os
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

GRADING_ENV = "ATTNLAB_GRADING"  # set by the grader in the notebook's process
LOCAL_JUDGE_GROUP = "attnlab.local_judge"  # entry points: (name, answer) -> None, raising AssertionError
RECORD = "attnlab.record"  # a trial ending in {RECORD: [names]}: record the answer's calls to those globals
MAX_RECORDED_CALLS = 256   # per function and trial
MAX_RECORDED_ELEMENTS = 4_000_000  # tensor elements recorded per trial


@dataclass(frozen=True)
class Outcome:
    """What one trial produced: a plain value, or the error it raised (one line)."""

    value: Any = None
    error: str | None = None


class Channel(Protocol):
    """The grader's side of the notebook process, installed by the grader before the notebook runs."""

    def trials(self, name: str) -> Sequence[tuple]:
        """Argument tuples for check `name` (plain data, already on their device)."""

    def submit(self, name: str, outcomes: list[Outcome]) -> None:
        """Send the outcomes of check `name` back to the grader."""


_channel: Channel | None = None
_pins: dict[str, object] = {}


def install_channel(channel: Channel | None) -> None:
    """Route hidden checks to the trusted grader (None: judge locally)."""
    global _channel
    _channel = channel
    _pins.clear()


class PinError(RuntimeError):
    """A name pinned while grading was pinned again to another object."""


def pin(name: str, value: object) -> object:
    """Fix what `name` means to the locked cells for the rest of a graded run, and return `value`.

    A locked cell pins what it judged (Chapter 4's `test_blank_head` pins the `BlankHead` it judged), and
    the locked cells that use it later ask `pinned(name, ...)`, not the notebook's global: a cell that
    rebinds the name in between changes nothing they run. While a grader runs the notebook the first pin
    holds: pinning the name again to another object raises PinError (a cell that pinned first makes the
    locked cell's own pin fail, and with it that cell). Anywhere else (your Jupyter, nbval) a pin is only
    the value: `pinned` gives the current binding, so a head you edit is the head you train.
    """
    if _channel is not None:
        held = _pins.setdefault(name, value)
        if held is not value:
            raise PinError(f"{name} was pinned by a locked cell already; a notebook cannot change it while graded")
    return value


def pinned(name: str, current: object) -> object:
    """While graded: the object pinned as `name` (`current`, the notebook's binding now, if none was); anywhere
    else: `current`."""
    return _pins.get(name, current) if _channel is not None else current


def is_grading() -> bool:
    """True while a grader runs this notebook: skip long demos (training, benchmarks)."""
    return _channel is not None or bool(os.environ.get(GRADING_ENV)) or \
        os.environ.get("NBGRADER_EXECUTION") in {"autograde", "validate"}


def runs_slow_check(what: str) -> bool:
    """Whether a slow visible check (one that trains a model) runs now; when it does not, it says so.

    The grader skips it: its hidden twin runs instead, on the grader's own data. `python -m
    attnlab.validate --quick` skips it and prints one line, which validate reports as SKIPPED
    (`what`: what the check does and how long it takes). Anywhere else (Jupyter, validate's
    default, nbval) it runs.
    """
    from attnlab.validate import QUICK_ENV, SKIPPED_MARK

    if _channel is not None or os.environ.get(GRADING_ENV) or os.environ.get("NBGRADER_EXECUTION") == "autograde":
        return False
    if os.environ.get(QUICK_ENV):
        print(SKIPPED_MARK, what, flush=True)
        return False
    return True


def run_trials(answer: object, trials: Sequence[tuple]) -> list[Outcome]:
    """Call `answer` on every trial (or take it as the value); never raises.

    A trial that ends with a recording request `{RECORD: ["self_attention"]}` is called without it,
    while each named global of the answer's module (the notebook's namespace) is replaced by a
    wrapper that records its calls; its outcome is then `{"output": value, "calls": {name: [[args,
    result], ...]}}`, plain data the grader checks the answer's composition with.
    """
    if not callable(answer):
        return [Outcome(value=answer)]
    outcomes = []
    for trial in trials:
        args, names = split_record_request(tuple(trial))
        try:
            with torch.no_grad():
                if names is None:
                    outcomes.append(Outcome(value=answer(*args)))
                    continue
                with recording(answer, names) as calls:
                    value = answer(*args)
                outcomes.append(Outcome(value={"output": value, "calls": calls}))
        except Exception as exc:  # noqa: BLE001 - the student's error is the result
            outcomes.append(Outcome(error=_one_line(exc)))
    return outcomes


def split_record_request(trial: tuple) -> tuple[tuple, list[str] | None]:
    """(arguments, names to record) of a trial: a trailing `{RECORD: [names]}` is a request, not an argument."""
    if trial and type(trial[-1]) is dict and set(trial[-1]) == {RECORD}:
        names = trial[-1][RECORD]
        if type(names) in (list, tuple) and all(type(n) is str for n in names):
            return trial[:-1], list(names)
    return trial, None


@contextlib.contextmanager
def recording(answer: object, names: Sequence[str]) -> Iterator[dict[str, list]]:
    """While inside, calls from `answer`'s module to the functions `names` are logged (as plain data) in the
    dict yielded: {name: [[args, result], ...]}. Only functions found as globals of `answer` are wrapped."""
    namespace = getattr(answer, "__globals__", None)
    calls: dict[str, list] = {}
    if not isinstance(namespace, dict):
        yield calls
        return
    saved = {n: namespace[n] for n in names if callable(namespace.get(n))}
    budget = [MAX_RECORDED_ELEMENTS]
    try:
        for name, fn in saved.items():
            calls[name] = []
            namespace[name] = _recorder(fn, calls[name], budget)
        yield calls
    finally:
        namespace.update(saved)


def _recorder(fn: Callable, log: list, budget: list[int]) -> Callable:
    try:
        signature: inspect.Signature | None = inspect.signature(fn)
    except (TypeError, ValueError):
        signature = None

    @functools.wraps(fn)
    def recorded(*args: Any, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        if len(log) < MAX_RECORDED_CALLS:
            try:
                if kwargs:
                    if signature is None:
                        raise _Unrecordable
                    bound = signature.bind(*args, **kwargs)
                    if bound.kwargs:
                        raise _Unrecordable
                    args = bound.args
                log.append([_plain(tuple(args), budget), _plain(result, budget)])
            except _Unrecordable:
                log.append(None)  # a call the grader cannot use
        return result

    return recorded


class _Unrecordable(Exception):
    """An argument or result that is not plain data, or the recording budget is spent."""


def _plain(x: Any, budget: list[int], depth: int = 0) -> Any:
    """A detached copy of nested tensors, numbers and strings (lists and tuples kept apart)."""
    if depth > 16:
        raise _Unrecordable
    if type(x) is torch.Tensor or isinstance(x, torch.nn.Parameter):
        budget[0] -= x.numel()
        if budget[0] < 0:
            raise _Unrecordable
        return x.detach().clone()
    if x is None or type(x) in (bool, int, float, str):
        return x
    if type(x) in (list, tuple):
        return type(x)(_plain(v, budget, depth + 1) for v in x)
    raise _Unrecordable


def hidden_check(name: str, answer: object) -> None:
    """Check the student's `answer` (function or value) for check `name`."""
    if _channel is not None:
        _channel.submit(name, run_trials(answer, _channel.trials(name) if callable(answer) else ()))
        return
    judge = local_judge()
    if judge is None:
        print(f"hidden check {name}: not run here (it runs when your notebook is graded)")
        return
    judge(name, answer)


@functools.cache
def local_judge() -> Callable[[str, object], None] | None:
    """The course's local judge (entry-point group `attnlab.local_judge`), or None if none is installed."""
    from importlib.metadata import entry_points

    found = sorted(entry_points(group=LOCAL_JUDGE_GROUP), key=lambda ep: ep.name)
    return found[0].load() if found else None


def _one_line(exc: BaseException) -> str:
    last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = f" (line {last[0].lineno})" if last else ""
    return f"{type(exc).__name__}: {exc}{where}"[:500]
