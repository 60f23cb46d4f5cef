"""Visible-test helpers: each failure says in words what is wrong and what to check."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch


class Explained(AssertionError):
    """A visible test failed; the message says what was expected and what to look at."""


def expect_tensor(x: object, what: str) -> torch.Tensor:
    """Fail unless `x` is a torch.Tensor."""
    if not isinstance(x, torch.Tensor):
        raise Explained(f"{what} should return a torch.Tensor, but it returned {type(x).__name__}.")
    return x


def expect_shape(x: object, shape: Sequence[int], what: str, hint: str = "") -> None:
    """Fail unless tensor `x` has exactly `shape`."""
    x = expect_tensor(x, what)
    if tuple(x.shape) != tuple(shape):
        raise Explained(f"{what} has shape {tuple(x.shape)}, expected {tuple(shape)}. {hint}".rstrip())


def expect_like(x: object, like: torch.Tensor, what: str) -> None:
    """Fail unless `x` has the dtype and device of `like` (work on the inputs' dtype and device)."""
    x = expect_tensor(x, what)
    if x.dtype != like.dtype:
        raise Explained(f"{what} has dtype {x.dtype} but its inputs are {like.dtype}: "
                        "do not create tensors with a fixed dtype; use the inputs' dtype.")
    if x.device != like.device:
        raise Explained(f"{what} is on {x.device} but its inputs are on {like.device}: "
                        "create new tensors with device=inputs.device.")


def expect_close(actual: object, expected: torch.Tensor, what: str, hint: str = "",
                 rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Fail unless `actual` matches `expected` in shape and values."""
    expect_shape(actual, expected.shape, what, hint)
    assert isinstance(actual, torch.Tensor)
    if not torch.isfinite(actual).all():
        raise Explained(f"{what} contains NaN or inf. {hint}".rstrip())
    diff = (actual.detach().double() - expected.detach().double()).abs().max().item()
    if not torch.allclose(actual.detach().double(), expected.detach().double(), rtol=rtol, atol=atol):
        raise Explained(f"{what} differs from the expected values by up to {diff:.3g}. {hint}\n"
                        f"expected:\n{expected}\ngot:\n{actual}".rstrip())


def expect_answer(answer: object, variables: Sequence[str], what: str) -> None:
    """Fail unless `answer` is a well-formed expression in the allowed variables (not its order)."""
    from attnlab.symbolic import parse_answer

    parse_answer(answer, variables, what=what)


def expect_equations(answer: object, inputs: Mapping[str, str], defines: Mapping[str, str], what: str = "your equations",
                     operands: Sequence[str] | None = None, sizes: Sequence[str] = (),
                     functions: Mapping[str, str] | None = None) -> None:
    """Fail unless `answer` is well-formed index equations that define `defines` from `inputs`.

    `inputs` and `defines` map tensor names to their sizes axis by axis (`{"P": "A,D"}`; word ids:
    `{"item": "O,Q in N"}`). Checks that every line reads, that each tensor in `defines` is defined once
    with indices of the right sizes in the right order, that each line uses only inputs and tensors
    defined above it with the right number of indices, that an index runs over one size, that every
    index on the right is summed or on the left, and that sizes used as numbers exist. It never checks
    that the equations are right: the hidden test does. With `operands`, an einsum spec over those
    tensors is accepted for the one tensor in `defines` (`"ad,bd->ab / sqrt(D)"`).
    `functions`: functions the question declares, by the sizes of their vectors (`{"MIX": "C,C -> C"}`,
    called as `MIX(u[:], v[:])`), or None to leave its sizes unchecked where they are part of the
    answer (`{"MIX": None}`).
    """
    from attnlab.equations import EquationError, check, parse_answer, spec

    if isinstance(answer, str) and not answer.strip():
        raise Explained(f"{what}: the answer is empty; write one equation per line, Name[i,j] = ...")
    names = {a for text in [*inputs.values(), *defines.values()] for a in spec(text).axes if isinstance(a, str)}
    names |= {s for text in inputs.values() if isinstance(s := spec(text).values, str)} | set(sizes)
    try:
        equations = parse_answer(answer, operands, next(iter(defines)) if operands and len(defines) == 1 else None)
        check(equations, inputs, defines, sizes=names | {a.strip() for f in (functions or {}).values() if f
                                                         for a in f.replace("->", ",").split(",") if a.strip()},
              functions=functions)
    except EquationError as exc:
        raise Explained(f"{what}:\n{exc}") from None
