"""Hidden checks of Chapter 7: the parts of a Transformer block and the block (BLOCK_TIME and BLOCK_WORK come
from solutions.answers)."""
from __future__ import annotations

import torch

from autograder.checks.base import Draw, FunctionCheck, Sizes, between, grid
from solutions import ch7

# (T, J, H, K, I, hidden units): T = 1, H = 1 and H > 1, K != I, J = H*I and J != H*I (the parts alone), hidden != J
SIZES = [(1, 4, 1, 3, 4, 6), (5, 8, 2, 3, 4, 16), (7, 12, 3, 5, 4, 10), (16, 16, 4, 2, 4, 64), (6, 10, 2, 4, 3, 7)]


def _drawn(g: torch.Generator) -> tuple[int, ...]:
    """Sizes beyond the public ones (T > 16: a mask or buffer built for at most 16 positions fails), J = H*I."""
    T, H, K, I, F = between(g, 17, 48), between(g, 1, 4), between(g, 2, 8), between(g, 2, 6), between(g, 17, 64)
    return T, H * I, H, K, I, F


PARTS = Sizes(SIZES, _drawn)


def stacked_projection_trials(gen: torch.Generator) -> list[tuple]:
    """M[T,J], W[H(2K+I), J], H, K: every size in both dtypes on every device."""
    return grid(gen, PARTS, lambda r, T, J, H, K, I, _: (r.randn(T, J), r.randn(H * (2 * K + I), J), H, K))


def attention_trials(gen: torch.Generator) -> list[tuple]:
    """Query, Key[H,T,K], Value[H,T,I], with and without the mask."""
    return grid(gen, PARTS, lambda r, T, _, H, K, I, __: [(r.randn(H, T, K), r.randn(H, T, K), r.randn(H, T, I), causal)
                                                          for causal in (False, True)])


def output_projection_trials(gen: torch.Generator) -> list[tuple]:
    """V[H,T,I], WO[J, H*I] (J != H*I in some)."""
    return grid(gen, PARTS, lambda r, T, J, H, _, I, __: (r.randn(H, T, I), r.randn(J, H * I)))


def layer_norm_trials(gen: torch.Generator) -> list[tuple]:
    """M[T,J] off-centre and not of unit scale, gain and shift, eps given or not; J = 2 and a constant row too."""
    def build(r: Draw, T: int, J: int, *_: int) -> list[tuple]:
        M = 2.0 + r.randn(T, J, scale=3.0)
        M[0] = 5.0  # a constant row: variance 0, only eps keeps it finite
        gain, shift = r.randn(J), r.randn(J)
        return [(M, gain, shift), (M, gain, shift, 0.1)]

    return grid(gen, Sizes([(3, 2), *SIZES], _drawn), build)


def feed_forward_trials(gen: torch.Generator) -> list[tuple]:
    """M[T,J], W1[F,J], beta1[F], W2[J,F], beta2[J]."""
    return grid(gen, PARTS, lambda r, T, J, H, K, I, F: (r.randn(T, J), r.randn(F, J, scale=J ** -0.5), r.randn(F),
                                                          r.randn(J, F, scale=F ** -0.5), r.randn(J)))


def _params(draw: Draw, J: int, H: int, K: int, I: int, F: int) -> dict[str, torch.Tensor]:
    """A block's parameters, scaled so that its layers neither vanish nor blow up."""
    r = draw.randn
    return {"W": r(H * (2 * K + I), J, scale=J ** -0.5), "WO": r(J, H * I, scale=(H * I) ** -0.5),
            "gain1": 1 + r(J, scale=0.3), "shift1": r(J, scale=0.3), "gain2": 1 + r(J, scale=0.3),
            "shift2": r(J, scale=0.3), "W1": r(F, J, scale=J ** -0.5), "beta1": r(F, scale=0.3),
            "W2": r(J, F, scale=F ** -0.5), "beta2": r(J, scale=0.3)}


def block_trials(gen: torch.Generator) -> list[tuple]:
    """M[T,J] with J = H*I, a block's parameters, H, K, with and without the mask."""
    def build(r: Draw, T: int, _: int, H: int, K: int, I: int, F: int) -> list[tuple]:
        M = 1.0 + r.randn(T, H * I, scale=2.0)
        return [(M, _params(r, H * I, H, K, I, F), H, K, causal) for causal in (False, True)]

    return grid(gen, PARTS, build)


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
