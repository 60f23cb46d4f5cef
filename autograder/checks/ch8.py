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

from autograder.checks.base import BehaviourCheck, Draw, EquationCheck, EquationQuestion, FunctionCheck, grid, small_ints
from solutions import ch8


def _draw(gen: torch.Generator, low: int, high: int) -> int:
    """An integer drawn uniformly from low..high from the secret seed."""
    return small_ints(gen, 1, low, high + 1)[0]


# ---------------------------------------------------------------- one step on a cache

def block_step_trials(gen: torch.Generator) -> list[tuple]:
    """(m[J], Key[H,t,K], Value[H,t,I], params, H, K) for every position t of random sequences, in order, the cache
    made by the reference: lengths (up to 24, beyond the visible test's 5), heads and widths drawn (K != I in some)."""
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

    return grid(gen, [(_draw(gen, 2, 24), _draw(gen, 1, 4), _draw(gen, 1, 6), _draw(gen, 1, 6)) for _ in range(3)],
                build)


STEP_WORK_PER_POSITION = 16  # the work a step may add per cached position, in units of J (the reference's: about 4)


def step_work_reference(J: int, H: int, t: int) -> int:
    """The reference block_step's work count on a cache of t positions (the chapter's `step_work`: the kit's
    profiler on meta tensors)."""
    return ch8.step_work(ch8.block_step, J, H, t)


def step_work_trials(gen: torch.Generator) -> list[tuple]:
    """(J, H, t) in pairs, t and 2t: J and t drawn large enough that a step's J^2 and t J terms are far apart."""
    trials = []
    for _ in range(2):
        H = _draw(gen, 1, 4)
        J, t = H * 16 * _draw(gen, 1, 4), _draw(gen, 64, 256)
        trials += [(J, H, t), (J, H, 2 * t)]
    return trials


def verify_step_work(trials: Sequence[tuple], values: Sequence[object]) -> str | None:
    """None if every pair's extra work per added cached position is within STEP_WORK_PER_POSITION * J."""
    for (J, _, t), (_, _, t2), shorter, longer in zip(trials[::2], trials[1::2], values[::2], values[1::2]):
        if not all(type(v) is int and v >= 0 for v in (shorter, longer)):
            return "the work of block_step could not be counted on meta tensors (an error, or not a count)"
        per_position = (longer - shorter) / ((t2 - t) * J)
        if not (math.isfinite(per_position) and per_position <= STEP_WORK_PER_POSITION):
            return ("the work of one step grows too fast with the number of cached positions (counted by the "
                    "profiler): the step recomputes what the cache already holds")
    return None


# ---------------------------------------------------------------- grouped-query attention

def grouped_attention_trials(gen: torch.Generator) -> list[tuple]:
    """Query[H,T,K], Key[Hkv,T,K], Value[Hkv,T,I]: Hkv = 1, Hkv = H and groups between, T up to 40, with and without
    the mask."""
    groupings = [(1, _draw(gen, 2, 4)), (_draw(gen, 2, 3), 1), (_draw(gen, 2, 3), _draw(gen, 2, 3)),
                 (_draw(gen, 2, 4), _draw(gen, 2, 4))]
    sizes = [(Hkv, group, _draw(gen, 1, 40), _draw(gen, 1, 8), _draw(gen, 1, 8)) for Hkv, group in groupings]

    def build(r: Draw, Hkv: int, group: int, T: int, K: int, I: int) -> list[tuple]:
        Query, Key, Value = r.randn(Hkv * group, T, K), r.randn(Hkv, T, K), r.randn(Hkv, T, I)
        return [(Query, Key, Value, causal) for causal in (False, True)]

    return grid(gen, sizes, build)


# ---------------------------------------------------------------- the online softmax

ONLINE_SOFTMAX = EquationQuestion(
    inputs={"s": "T,U", "Value": "U,I", "mu": "T", "munew": "T", "Z": "T", "Vt": "T,I"},
    defines={"Znew": "T", "Vtnew": "T,I"},
    reference=ch8.ONLINE_SOFTMAX,
    sizes=({"T": 3, "U": 5, "I": 2}, {"T": 6, "U": 2, "I": 4}, {"T": 2, "U": 7, "I": 5}),
)


# ---------------------------------------------------------------- tiled attention

def tiled_attention_trials(gen: torch.Generator) -> list[tuple]:
    """Query, Key[H,T,K], Value[H,T,I], tile, causal: T drawn up to 64 (the visible test's is 7), tiles of 1, between
    and longer than T; scores near 1e4 in one size."""
    sizes = []
    for scale in (1.0, 1.0, 3e3):
        T = _draw(gen, 8, 64)
        sizes.append((scale, _draw(gen, 1, 3), T, _draw(gen, 1, 8), _draw(gen, 1, 8),
                      (1, _draw(gen, 2, T - 1), T + _draw(gen, 0, 5))))

    def build(r: Draw, scale: float, H: int, T: int, K: int, I: int, tiles: tuple[int, ...]) -> list[tuple]:
        Query, Key, Value = r.randn(H, T, K, scale=scale), r.randn(H, T, K), r.randn(H, T, I)
        return [(Query, Key, Value, tile, causal) for tile in tiles for causal in (False, True)]

    return grid(gen, sizes, build)


TILED_MEMORY_FACTOR = 4  # the largest tensor may hold this many times H T (Ttile + K) entries (the reference: 1)


def tiled_memory_reference(H: int, T: int, K: int, tile: int) -> int:
    """The reference's largest tensor on one causal call (the chapter's `largest_allocation`, on meta tensors)."""
    return ch8.largest_allocation(ch8.tiled_attention, H, T, K, tile)


def tiled_memory_trials(gen: torch.Generator) -> list[tuple]:
    """(H, T, K, tile) with T at least 16 times the tile and K: a T x T score tensor is far over the bound."""
    return [(_draw(gen, 1, 4), 64 * _draw(gen, 8, 24), _draw(gen, 4, 32), _draw(gen, 8, 32)) for _ in range(2)]


def verify_tiled_memory(trials: Sequence[tuple], values: Sequence[object]) -> str | None:
    """None if every trial's largest tensor is within TILED_MEMORY_FACTOR * H T (tile + K) entries."""
    for (H, T, K, tile), largest in zip(trials, values):
        if type(largest) is not int or largest < 0:
            return "the largest tensor of tiled_attention could not be measured on meta tensors (an error, or not a count)"
        ratio = largest / (H * T * (tile + K))
        if not (math.isfinite(ratio) and ratio <= TILED_MEMORY_FACTOR):
            return ("tiled_attention allocates a tensor far larger than one tile's scores and the running sums "
                    "need: does it store every score at once?")
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
