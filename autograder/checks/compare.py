"""How an output differs from the reference's: the comparisons every kind of check uses, in the trusted process.

`compare` says in one sentence how a student's output differs from the reference's (None if it does not);
`judge_composition` also accepts the reference composed over the student's own upstream functions (their
calls, recorded in the sandbox). They read only plain data from the student's side: tensors are checked to
be plain `torch.Tensor`s before any of their methods are trusted.

What a sentence may say: the symptom (a shape, a dtype, NaN, the size of an error), never the
reference's value. On a trial drawn from the notebook's secret seed (`secret=True`) it says no
shape or value at all (not the student's own, which the secret inputs decide): a student learns
which property failed, not the inputs it failed on.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import torch

from attnlab.wire import Received
from autograder.errors import AutograderError

if TYPE_CHECKING:
    from autograder.checks.base import Check, FunctionCheck


class _NotRecorded(AutograderError):
    """The reference composition asked for a call the student's log does not answer."""


def judge_composition(check: FunctionCheck, args: tuple, value: object,
                      agreeing: frozenset[str] = frozenset(), secret: bool = False,
                      expected: object = None) -> str | None:
    """None if the output equals the reference, or the reference composed over the student's own upstream
    functions (their recorded calls); else a sentence saying how it differs from both.

    The calls are recorded in the student's process, which could write any log. An upstream function
    named in `agreeing` passed its own check in this notebook: its recorded results must then be the
    reference's on the same arguments (within the check's tolerance), or the log does not count. `expected`: the
    reference's output on `args` if computed before (None: computed here)."""
    output, calls = _split_recorded(value, check.upstream)
    problem = compare(output, check.reference(*args) if expected is None else expected, check, secret=secret)
    if problem is None:
        return None
    if calls is None:
        return problem
    names = _and(check.upstream)
    try:
        lookups = {n: _lookup_calls(n, calls[n], check, check.upstream_reference(n), n in agreeing, secret)
                   for n in check.upstream}
        composed = check.reference(*args, **lookups)
    except _NotRecorded as exc:
        return f"{problem}, and it is not the expected composition of your own {names} either ({exc})"
    except Exception as exc:  # noqa: BLE001 - the student's recorded results may be anything
        return f"{problem}, and the expected composition over your own {names} fails ({type(exc).__name__})"
    other = compare(output, composed, check, secret=secret)
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


def _lookup_calls(name: str, log: list, check: FunctionCheck, reference: Callable[..., object], agree: bool = False,
                  secret: bool = False):
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
            shown = "a result of another form" if secret else describe([expected])
            raise _NotRecorded(f"your {name} returned {_kind(found[0], secret)} where {shown} was expected")
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


def compare(actual: object, expected: object, check: Check, path: str = "output", *, secret: bool = False) -> str | None:
    """None if `actual` matches `expected`, else a sentence saying how it differs (without the reference's
    value; with `secret`, without any shape or value: the trial's inputs are the notebook's secret)."""
    if isinstance(expected, torch.Tensor):
        return _compare_tensor(actual, expected, check, path, secret)
    if isinstance(expected, (list, tuple)):
        if type(actual) not in (list, tuple) or len(actual) != len(expected):
            return f"{path} should be a sequence of {len(expected)} items, got {_kind(actual, secret)}"
        for k, (a, e) in enumerate(zip(actual, expected)):
            if problem := compare(a, e, check, f"{path}[{k}]", secret=secret):
                return problem
        return None
    if type(actual) is not type(expected) and not (type(actual) in (int, float) and type(expected) in (int, float)):
        return f"{path} should be {_a(type(expected).__name__)}, got {_kind(actual, secret)}"
    if type(actual) is float and not math.isfinite(actual) and not (actual == -math.inf and expected == -math.inf):
        return f"{path} is {actual!r} (a number must be finite)"
    if actual == expected:
        return None
    return f"{path} is not the right value" if secret else f"{path} is {actual!r}, not the right value"


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def _compare_tensor(actual: object, expected: torch.Tensor, check: Check, path: str, secret: bool) -> str | None:
    if isinstance(actual, Received):
        tensor, device_type = actual.tensor, actual.device_type
    elif type(actual) is torch.Tensor:
        tensor, device_type = actual.detach(), actual.device.type
    else:
        return f"{path} should be a torch.Tensor, got {_kind(actual, secret)}"
    if tuple(tensor.shape) != tuple(expected.shape):
        if secret:
            return f"{path} has the wrong shape ({tensor.dim()} axes, expected {expected.dim()})"
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
    rtol, atol = check.tolerances(e.dtype)
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


def _kind(x: object, secret: bool = False) -> str:
    if isinstance(x, Received | torch.Tensor):
        shape = tuple(x.tensor.shape) if isinstance(x, Received) else tuple(x.shape)
        return "a tensor" if secret else f"a tensor of shape {shape}"
    return _a(type(x).__name__)


def describe(args: Sequence[object], names: Sequence[str] = ()) -> str:
    """Short text for a trial's arguments: shapes, dtype and device of tensors, each by its parameter's name
    where `names` gives it (`M: [5,8] float32 cpu, eps=0.1`)."""
    named = [*names, *[""] * (len(args) - len(names))]
    return ", ".join(_named(name, _describe(a), a) for name, a in zip(named, args))


def _named(name: str, text: str, a: object) -> str:
    if not name:
        return text
    return f"{name}={text}" if type(a) in (int, float, bool, str) else f"{name}: {text}"


def secret_error(error: str) -> str:
    """A student's exception on a secret trial, without its message (which may hold the trial's sizes):
    its type and line (`attnlab.grading` writes "Type: message (line N)")."""
    kind = error.split(":", 1)[0].strip()
    line = re.search(r"\(line \d+\)$", error)
    kind = kind if re.fullmatch(r"[A-Za-z_][\w.]{0,80}", kind) else "an exception"
    return f"{kind}{' ' + line.group(0) if line else ''}"


def _describe(a: object) -> str:
    if isinstance(a, torch.Tensor):
        return f"[{','.join(map(str, a.shape))}] {str(a.dtype).removeprefix('torch.')} {a.device.type}"
    if isinstance(a, (list, tuple)):
        inner = _describe(a[0]) if a else ""
        return f"{len(a)} x ({inner})" if a else "[]"
    if isinstance(a, dict):  # named tensors (a block's parameters): each by its shape, not its values
        return "{" + ", ".join(f"{k}: {_describe(v)}" for k, v in a.items()) + "}"
    return repr(a)
