"""Hidden checks of Chapter 7: the parts of a Transformer block and the block (BLOCK_TIME and BLOCK_WORK come
from solutions.answers)."""
from __future__ import annotations

import torch

from autograder.checks.base import DTYPES, FunctionCheck, devices, randn
from solutions import ch7

# (T, J, H, K, I, hidden units): T = 1, H = 1 and H > 1, K != I, J = H*I and J != H*I (the parts alone), hidden != J
SIZES = [(1, 4, 1, 3, 4, 6), (5, 8, 2, 3, 4, 16), (7, 12, 3, 5, 4, 10), (16, 16, 4, 2, 4, 64), (6, 10, 2, 4, 3, 7)]


def stacked_projection_trials(gen: torch.Generator) -> list[tuple]:
    """M[T,J], W[H(2K+I), J], H, K: every size in both dtypes on every device."""
    return [(randn(gen, T, J, dtype=dtype, device=dev), randn(gen, H * (2 * K + I), J, dtype=dtype, device=dev), H, K)
            for dev in devices() for dtype in DTYPES for T, J, H, K, I, _ in SIZES]


def attention_trials(gen: torch.Generator) -> list[tuple]:
    """Query, Key[H,T,K], Value[H,T,I], with and without the mask."""
    return [(randn(gen, H, T, K, dtype=dtype, device=dev), randn(gen, H, T, K, dtype=dtype, device=dev),
             randn(gen, H, T, I, dtype=dtype, device=dev), causal)
            for dev in devices() for dtype in DTYPES for T, _, H, K, I, _ in SIZES for causal in (False, True)]


def output_projection_trials(gen: torch.Generator) -> list[tuple]:
    """V[H,T,I], WO[J, H*I] (J != H*I in some)."""
    return [(randn(gen, H, T, I, dtype=dtype, device=dev), randn(gen, J, H * I, dtype=dtype, device=dev))
            for dev in devices() for dtype in DTYPES for T, J, H, _, I, _ in SIZES]


def layer_norm_trials(gen: torch.Generator) -> list[tuple]:
    """M[T,J] off-centre and not of unit scale, gain and shift, eps given or not; J = 2 and a constant row too."""
    trials = []
    for dev in devices():
        for dtype in DTYPES:
            for T, J, *_ in [(3, 2), *SIZES]:
                M = 2.0 + randn(gen, T, J, dtype=dtype, device=dev, scale=3.0)
                M[0] = 5.0  # a constant row: variance 0, only eps keeps it finite
                gain, shift = randn(gen, J, dtype=dtype, device=dev), randn(gen, J, dtype=dtype, device=dev)
                trials += [(M, gain, shift), (M, gain, shift, 0.1)]
    return trials


def feed_forward_trials(gen: torch.Generator) -> list[tuple]:
    """M[T,J], W1[F,J], beta1[F], W2[J,F], beta2[J]."""
    return [(randn(gen, T, J, dtype=dtype, device=dev), randn(gen, F, J, dtype=dtype, device=dev, scale=J ** -0.5),
             randn(gen, F, dtype=dtype, device=dev), randn(gen, J, F, dtype=dtype, device=dev, scale=F ** -0.5),
             randn(gen, J, dtype=dtype, device=dev))
            for dev in devices() for dtype in DTYPES for T, J, _, _, _, F in SIZES]


def _params(gen: torch.Generator, J: int, H: int, K: int, I: int, F: int, dtype: torch.dtype,
            device: torch.device) -> dict[str, torch.Tensor]:
    r = lambda *shape, scale=1.0: randn(gen, *shape, dtype=dtype, device=device, scale=scale)  # noqa: E731
    return {"W": r(H * (2 * K + I), J, scale=J ** -0.5), "WO": r(J, H * I, scale=(H * I) ** -0.5),
            "gain1": 1 + r(J, scale=0.3), "shift1": r(J, scale=0.3), "gain2": 1 + r(J, scale=0.3),
            "shift2": r(J, scale=0.3), "W1": r(F, J, scale=J ** -0.5), "beta1": r(F, scale=0.3),
            "W2": r(J, F, scale=F ** -0.5), "beta2": r(J, scale=0.3)}


def block_trials(gen: torch.Generator) -> list[tuple]:
    """M[T,J] with J = H*I, a block's parameters, H, K, with and without the mask."""
    trials = []
    for dev in devices():
        for dtype in DTYPES:
            for T, _, H, K, I, F in SIZES:
                J = H * I
                M = 1.0 + randn(gen, T, J, dtype=dtype, device=dev, scale=2.0)
                for causal in (False, True):
                    trials.append((M, _params(gen, J, H, K, I, F, dtype, dev), H, K, causal))
    return trials


CHECKS = {
    "ch7.stacked_projection": FunctionCheck(ch7.stacked_projection, stacked_projection_trials),
    "ch7.attention": FunctionCheck(ch7.attention, attention_trials),
    "ch7.output_projection": FunctionCheck(ch7.output_projection, output_projection_trials),
    "ch7.layer_norm": FunctionCheck(ch7.layer_norm, layer_norm_trials),
    "ch7.feed_forward": FunctionCheck(ch7.feed_forward, feed_forward_trials),
    # judged over the student's own five parts too: a wrong part costs only its own cell
    "ch7.block": FunctionCheck(ch7.block, block_trials, upstream=("layer_norm", "stacked_projection", "attention",
                                                                  "output_projection", "feed_forward")),
}
