"""Hidden checks of Chapter 8: one cached step of the block, grouped-query attention, the online softmax and tiled
attention (the cost answers come from solutions.answers).

Two checks measure the answer's behaviour rather than its values, in the student's process on meta tensors (with the
kit's profiler and `attnlab.kernels.largest_tensor`): `ch8.block_step_work` (the work a step adds per cached position
must stay within a constant times J, so an answer that recomputes the prefix loses the cell even with right values)
and `ch8.tiled_attention_memory` (the largest tensor within a constant times H T (Ttile + K), so an answer that
stores the T x T scores loses it). A student who replaces the kit's counters in their own process can fake these two
numbers, not the values, which the judge compares with the reference's (docs/security.md).

Every size is drawn from the secret seed, over ranges wider than the visible tests use.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from autograder.checks.base import BehaviourCheck, Draw, EquationCheck, EquationQuestion, FunctionCheck, Secret, Sizes, between, grid, where
from solutions import ch8

# ---------------------------------------------------------------- one step on a cache

# (T, H, K, I): one position, one head, K != I; the visible test's sequence is T = 5, H = 2, K = 3, I = 4
STEP = Sizes([(1, 1, 2, 3), (4, 2, 3, 2), (6, 3, 2, 2)],
             lambda g: (between(g, 8, 24), between(g, 1, 4), between(g, 2, 6), between(g, 2, 6)))


def block_step_trials(gen: torch.Generator) -> list[tuple]:
    """(m[J], Key[H,t,K], Value[H,t,I], params, H, K) for every position t of a random sequence, in order, the cache
    made by the reference: one sequence per size, public and drawn (lengths up to 24)."""
    def build(r: Draw, T: int, H: int, K: int, I: int) -> list[tuple]:
        J = H * I
        params = {n: w.to(dtype=r.dtype, device=r.device)
                  for n, w in ch8.random_weights(r.gen, J, H, K, I, 4 * J, torch.float64).items()}
        M = 1.0 + r.randn(T, J, scale=2.0)
        Key, Value = M.new_zeros(H, 0, K), M.new_zeros(H, 0, I)
        trials = []
        for t in range(T):
            trials.append((M[t], Key, Value, params, H, K))
            _, Key, Value = ch8.block_step(M[t], Key, Value, params, H, K)
        return trials

    return grid(gen, STEP, build)


STEP_WORK_PER_POSITION = 16  # the work a step may add per cached position, in units of J (the reference's: about 4)


def step_work_reference(J: int, H: int, t: int) -> int:
    """The reference block_step's work count on a cache of t positions (the chapter's `step_work`: the kit's
    profiler on meta tensors)."""
    return ch8.step_work(ch8.block_step, J, H, t)


def step_work_trials(gen: torch.Generator) -> list[tuple]:
    """(J, H, t) in pairs, t and 2t, J and t large enough that a step's J^2 and t J terms are far apart: one public
    pair, then pairs drawn from the secret seed (the judge reads them in pairs)."""
    H = between(gen, 1, 4)
    J, t = H * 16 * between(gen, 2, 4), between(gen, 100, 256)
    return [(32, 2, 64), (32, 2, 128), Secret((J, H, t)), Secret((J, H, 2 * t))]


def verify_step_work(trials: Sequence[tuple], values: Sequence[object]) -> str | None:
    """None if every pair's extra work per added cached position is within STEP_WORK_PER_POSITION * J."""
    for k in range(0, len(trials) - 1, 2):
        (J, _, t), (_, _, t2), shorter, longer = trials[k], trials[k + 1], values[k], values[k + 1]
        if not all(type(v) is int and v >= 0 for v in (shorter, longer)):
            return f"the work of block_step could not be counted on meta tensors {where(trials, k + 1)}"
        per_position = (longer - shorter) / ((t2 - t) * J)
        if not (math.isfinite(per_position) and per_position <= STEP_WORK_PER_POSITION):
            return ("the work of one step grows too fast with the number of cached positions (counted by the "
                    f"profiler {where(trials, k + 1)}): the step recomputes what the cache already holds")
    return None


# ---------------------------------------------------------------- grouped-query attention

# (Hkv, group, T, K, I): multi-query (Hkv = 1), one head per group (Hkv = H), groups between; the visible test's
# is Hkv = 2, group 3, T = 5
GROUPED = Sizes([(1, 3, 4, 2, 3), (3, 1, 5, 3, 2), (2, 2, 1, 4, 2)],
                lambda g: (between(g, 1, 4), between(g, 2, 4), between(g, 9, 40), between(g, 2, 8), between(g, 2, 8)))


def grouped_attention_trials(gen: torch.Generator) -> list[tuple]:
    """Query[H,T,K], Key[Hkv,T,K], Value[Hkv,T,I] with H = Hkv * group, with and without the mask."""
    def build(r: Draw, Hkv: int, group: int, T: int, K: int, I: int) -> list[tuple]:
        Query, Key, Value = r.randn(Hkv * group, T, K), r.randn(Hkv, T, K), r.randn(Hkv, T, I)
        return [(Query, Key, Value, causal) for causal in (False, True)]

    return grid(gen, GROUPED, build)


# ---------------------------------------------------------------- the online softmax

ONLINE_SOFTMAX = EquationQuestion(
    inputs={"s": "T,U", "Value": "U,I", "mu": "T", "munew": "T", "Z": "T", "Vt": "T,I"},
    defines={"Znew": "T", "Vtnew": "T,I"},
    reference=ch8.ONLINE_SOFTMAX,
    sizes=({"T": 3, "U": 5, "I": 2}, {"T": 6, "U": 2, "I": 4}, {"T": 2, "U": 7, "I": 5}),
)


# ---------------------------------------------------------------- tiled attention

# (scale, H, T, K, I, tile): tiles of 1, dividing T, not dividing it, longer than T; scores near 1e4 (the visible
# test's T is 7)
TILED = Sizes([(1.0, 1, 4, 2, 3, 1), (1.0, 2, 6, 3, 2, 4), (1.0, 1, 5, 2, 2, 8), (3e3, 2, 6, 2, 3, 2)],
              lambda g: (1.0, between(g, 1, 3), between(g, 12, 64), between(g, 2, 8), between(g, 2, 8),
                         between(g, 2, 11)))


def tiled_attention_trials(gen: torch.Generator) -> list[tuple]:
    """Query, Key[H,T,K], Value[H,T,I], tile, with and without the mask."""
    def build(r: Draw, scale: float, H: int, T: int, K: int, I: int, tile: int) -> list[tuple]:
        Query, Key, Value = r.randn(H, T, K, scale=scale), r.randn(H, T, K), r.randn(H, T, I)
        return [(Query, Key, Value, tile, causal) for causal in (False, True)]

    return grid(gen, TILED, build)


TILED_MEMORY_FACTOR = 4  # the largest tensor may hold this many times H T (Ttile + K) entries (the reference: 1)


def tiled_memory_reference(H: int, T: int, K: int, tile: int) -> int:
    """The reference's largest tensor on one causal call (the chapter's `largest_allocation`, on meta tensors)."""
    return ch8.largest_allocation(ch8.tiled_attention, H, T, K, tile)


def tiled_memory_trials(gen: torch.Generator) -> list[tuple]:
    """(H, T, K, tile) with T at least 16 times the tile and K (a tensor of every score is far over the bound): one
    public size, then two drawn."""
    return [(2, 512, 8, 16), *(Secret((between(gen, 1, 4), 64 * between(gen, 9, 24), between(gen, 4, 32),
                                       between(gen, 8, 32))) for _ in range(2))]


def verify_tiled_memory(trials: Sequence[tuple], values: Sequence[object]) -> str | None:
    """None if every trial's largest tensor is within TILED_MEMORY_FACTOR * H T (tile + K) entries."""
    for k, ((H, T, K, tile), largest) in enumerate(zip(trials, values)):
        if type(largest) is not int or largest < 0:
            return f"the largest tensor of tiled_attention could not be measured on meta tensors {where(trials, k)}"
        ratio = largest / (H * T * (tile + K))
        if not (math.isfinite(ratio) and ratio <= TILED_MEMORY_FACTOR):
            return ("tiled_attention allocates a tensor far larger than one tile's scores and the running sums "
                    f"need {where(trials, k)}: does it store every score at once?")
    return None


CHECKS = {
    "ch8.block_step": FunctionCheck(ch8.block_step, block_step_trials),
    "ch8.block_step_work": BehaviourCheck(step_work_reference, step_work_trials, verify_step_work),
    "ch8.grouped_attention": FunctionCheck(ch8.grouped_attention, grouped_attention_trials),
    "ch8.ONLINE_SOFTMAX": EquationCheck(ONLINE_SOFTMAX),
    "ch8.tiled_attention": FunctionCheck(ch8.tiled_attention, tiled_attention_trials,
                                         rtol={torch.float32: 1e-3}, atol={torch.float32: 1e-4}),
    "ch8.tiled_attention_memory": BehaviourCheck(tiled_memory_reference, tiled_memory_trials, verify_tiled_memory),
}
