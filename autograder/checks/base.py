"""The kinds of hidden check, and helpers to draw trial inputs."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

DTYPES = (torch.float32, torch.float64)


def devices() -> list[torch.device]:
    """The CPU, and CUDA when present."""
    return [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])


def randn(gen: torch.Generator, *shape: int, dtype: torch.dtype, device: torch.device,
          scale: float = 1.0) -> torch.Tensor:
    """Seeded standard normal draw (drawn on the CPU so every device sees the same numbers)."""
    return (scale * torch.randn(*shape, generator=gen, dtype=torch.float64)).to(dtype=dtype, device=device)


def qkv(gen: torch.Generator, H: int, K: int, I: int, J: int, *, dtype: torch.dtype,
        device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Seeded W^Q[H,K,J], W^K[H,K,J], W^V[H,I,J], scaled by 1/sqrt(J) so softmax is not saturated."""
    WQ, WK = (randn(gen, H, K, J, dtype=dtype, device=device, scale=J ** -0.5) for _ in range(2))
    return WQ, WK, randn(gen, H, I, J, dtype=dtype, device=device, scale=J ** -0.5)


@dataclass(frozen=True)
class FunctionCheck:
    """Call the student's function on seeded trials and compare with the reference."""

    reference: Callable[..., object]
    trials: Callable[[torch.Generator], list[tuple]]
    rtol: dict[torch.dtype, float] | None = None
    atol: dict[torch.dtype, float] | None = None

    def tolerances(self, dtype: torch.dtype) -> tuple[float, float]:
        """(rtol, atol) for outputs of this dtype."""
        rtol = {torch.float32: 1e-4, torch.float64: 1e-9, torch.float16: 1e-2, torch.bfloat16: 2e-2}
        atol = {torch.float32: 1e-5, torch.float64: 1e-10, torch.float16: 1e-3, torch.bfloat16: 1e-2}
        rtol.update(self.rtol or {})
        atol.update(self.atol or {})
        return rtol.get(dtype, 0.0), atol.get(dtype, 0.0)


@dataclass(frozen=True)
class AnswerCheck:
    """A symbolic answer: a Θ-order (or an equation) in named variables, under the question's
    relations between the sizes (such as "K <= J")."""

    reference: str
    variables: tuple[str, ...]
    relations: tuple[str, ...] = ()


@dataclass(frozen=True)
class ValueCheck:
    """A plain value (an integer, say) compared exactly, or a function of small ints."""

    reference: Callable[..., object]
    trials: Callable[[torch.Generator], list[tuple]]


@dataclass(frozen=True)
class BehaviourCheck:
    """A check decided by one function of all the outcomes, not by comparing each with one output: a
    design question with many right answers, graded by what the answer does, or a value whose feedback
    must say what is wrong without showing the reference.

    `trials(gen)` draws the trials; the last `private` items of each trial stay in the grader (a
    held-out set's answers, a secret relabelling) and the student's function is called on the
    others. `verify(trials, values)` sees the whole trials and every output (plain data as it
    arrived: read tensors with `received`), and returns None if they pass or one sentence saying
    why not. `reference(*trial)` is an acceptable answer's output for one trial: the grader checks
    at start-up that it passes.
    """

    reference: Callable[..., object]
    trials: Callable[[torch.Generator], list[tuple]]
    verify: Callable[[Sequence[tuple], Sequence[object]], str | None]
    private: int = 0

    def public(self, trial: tuple) -> tuple:
        """What the student's function is called on."""
        return trial[:len(trial) - self.private]


def received(value: object) -> tuple[torch.Tensor, str] | None:
    """(the tensor on the CPU, the device type it was made on) for a plain tensor from the student's
    side, None for anything else."""
    from attnlab.wire import Received

    if isinstance(value, Received):
        return value.tensor, value.device_type
    if type(value) is torch.Tensor:
        return value.detach().cpu(), value.device.type
    return None


Check = FunctionCheck | AnswerCheck | ValueCheck | BehaviourCheck
