"""Every plot or assertion that measures a student's answer tells a right answer from a wrong one (issue 35.1).

For each measured question, the measurements its chapter draws (the profiler's counts of the reference on meta
tensors, or the closed forms the chapter asserts its measurements equal) are read the way the chapter reads them
(`attnlab.fits`: `fit` for depths, a * answer + b; `spread` for work on log axes): the chapter's reference
answer must follow the points, and every mistake of the same question in the corpus (`solutions/mistakes/`),
with a few wrong answers a student would plausibly give, must not. A reading that cannot tell them apart (the
old one-multiplier fit of Section 7.8) is caught: `test_a_reading_that_cannot_fail_is_caught`.
"""
from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Callable, Sequence

import pytest

from attnlab.fits import fit, spread
from attnlab.symbolic import parse_answer
from autograder.checks import CHECKS
from solutions.mistakes import Assign, wrong_for

Sizes = dict[str, int]
Panel = tuple[list[float], list[Sizes]]   # the measured values and the sizes of each point
Reading = Callable[[list[float], list[float]], bool]  # (measured, answer at each point) -> follows


def follows_fit(measured: list[float], answer: list[float]) -> bool:
    """The depth plots' reading (Sections 6.7, 6.8, 7.8): a * answer + b follows the points."""
    return fit(measured, answer).follows


def within_spread(bound: float) -> Reading:
    """The work plots' reading (Sections 1.4, 7.8): measured / answer moves by less than `bound` along a sweep."""
    return lambda measured, answer: spread(measured, answer) < bound


def one_multiplier(measured: list[float], answer: list[float]) -> bool:
    """The old reading of Section 7.8 (planted): one fitted factor, no constant; the ratio within a factor 8
    along the sweep and its last two values within 10%."""
    if not all(math.isfinite(a) and a > 0 for a in answer):
        return False
    ratios = [m / a for m, a in zip(measured, answer)]
    return max(ratios) / min(ratios) < 8 and abs(ratios[-1] / ratios[-2] - 1) < 0.1


# ---------------------------------------------------------------- the chapters' measurements


@functools.cache
def block_sweeps() -> dict[str, list[tuple[Sizes, int, int]]]:
    """Section 7.8: T, then J, doubled eight times from 64 (H = 4, 4J hidden units): (sizes, depth, work)."""
    import solutions.ch7 as reference
    from attnlab.profiler import parallel_time

    def shapes(J: int) -> dict[str, tuple[int, ...]]:
        return {"W": (3 * J, J), "WO": (J, J), "gain1": (J,), "shift1": (J,), "gain2": (J,), "shift2": (J,),
                "W1": (4 * J, J), "beta1": (4 * J,), "W2": (J, 4 * J), "beta2": (J,)}

    out = {}
    for name in ("T", "J"):
        points = []
        for d in range(9):
            sizes = {"T": 64, "J": 64} | {name: 64 * 2**d}
            m = parallel_time(reference.block, (sizes["T"], sizes["J"]), shapes(sizes["J"]), 4, sizes["J"] // 4,
                              model="log")
            points.append((sizes, m.depth, m.work))
        out[name] = points
    return out


def block_panels(what: str) -> list[Panel]:
    return [([depth if what == "depth" else work for _, depth, work in points], [s for s, *_ in points])
            for points in block_sweeps().values()]


@functools.cache
def attention_times(Ls: tuple[int, ...] = (1, 2, 4), Ts: tuple[int, ...] = tuple(2**k for k in range(6, 31, 4))) -> Panel:
    """Section 6.8: the depth of L one-head attention layers (J = 4) on meta tensors, L = 1, 2, 4, T = 2^6 .. 2^30."""
    import torch.nn.functional as F

    from attnlab.profiler import parallel_time

    def stack(M, layers):
        for WQ, WK, WV in layers:
            M = F.scaled_dot_product_attention(M @ WQ, M @ WK, M @ WV)
        return M

    keys = [{"L": L, "T": T} for L in Ls for T in Ts]
    return [parallel_time(stack, (s["T"], 4), [((4, 4),) * 3] * s["L"], model="log").depth for s in keys], keys


def closed_form(form: Callable[[int, int], float], keys: Sequence[Sizes]) -> Panel:
    return [form(s["L"], s["T"]) for s in keys], list(keys)


# question -> (its panels, how the chapter reads them, wrong answers beyond the corpus that must fail too)
MEASURED: dict[str, tuple[Callable[[], list[Panel]], Reading, list[str]]] = {
    "ch7.BLOCK_TIME": (lambda: block_panels("depth"), follows_fit, ["log(J)", "log(T)", "1", "T + log(J)"]),
    "ch7.BLOCK_WORK": (lambda: block_panels("work"), within_spread(8), ["T^2*J", "T*J^2", "T*J", "T^3"]),
    "ch6.ATTENTION_TIME": (lambda: [attention_times()], follows_fit, ["L", "log(T)", "L + log(T)", "L*T"]),
    # the path lengths the chapter measures, equal to these closed forms by its own assertions (ch6-rnn-path, ...)
    "ch6.RNN_PATH": (lambda: [closed_form(lambda L, T: T + L - 1, [{"L": L, "T": T} for L in (1, 2, 4)
                                                                    for T in (2, 4, 8)])],
                     follows_fit, ["T", "T*L", "L"]),
    "ch6.CNN_PATH": (lambda: [closed_form(lambda L, T: L, [{"L": L, "T": 1 + 2 * (2**L - 1)} for L in range(1, 6)])],
                     follows_fit, ["T", "1"]),  # sqrt(T) follows r_L up to L = 5
    "ch6.ATTENTION_PATH": (lambda: [closed_form(lambda L, T: L, [{"L": L, "T": 64} for L in (1, 2, 4)])],
                           follows_fit, ["1", "log(L)"]),
}


def _value(answer: str, variables: Sequence[str], sizes: Sizes) -> float:
    expr = parse_answer(answer, list(variables))
    return float(expr.subs({s: sizes[s.name] for s in expr.free_symbols}))


def passes(question: str, answer: str, reading: Reading | None = None) -> bool:
    """Whether `answer` follows every panel of `question`'s measurements under `reading` (the chapter's)."""
    panels, chapter_reading, _ = MEASURED[question]
    variables = CHECKS[question].variables
    read = reading or chapter_reading
    return all(read(measured, [_value(answer, variables, s) for s in sizes]) for measured, sizes in panels())


def wrong_answers(question: str) -> list[str]:
    """The corpus's wrong answers to `question`, then the extra ones of MEASURED."""
    chapter, _, name = question.partition(".")
    corpus = [m.value for m in wrong_for(chapter) if isinstance(m, Assign) and m.name == name]
    return corpus + [a for a in MEASURED[question][2] if a not in corpus]


def misjudged(question: str, reading: Reading | None = None) -> list[str]:
    """What the reading gets wrong for `question`: the reference if it fails, each wrong answer that passes."""
    reference = CHECKS[question].reference
    found = [] if passes(question, reference, reading) else [f"the reference {reference!r} does not follow"]
    return found + [f"the wrong {w!r} follows" for w in wrong_answers(question) if passes(question, w, reading)]


@pytest.mark.parametrize("question", sorted(MEASURED))
def test_each_measured_answer_tells_right_from_wrong(question: str) -> None:
    chapter, _, name = question.partition(".")
    assert any(isinstance(m, Assign) and m.name == name for m in wrong_for(chapter)), "the corpus has a mistake"
    assert not misjudged(question), misjudged(question)


def test_a_reading_that_cannot_fail_is_caught() -> None:
    """The old Section 7.8 (one multiplier, no constant) passed BLOCK_TIME = 'log(J)' and '1': the test sees it."""
    assert {"the wrong 'log(J)' follows", "the wrong '1' follows"} <= set(misjudged("ch7.BLOCK_TIME", one_multiplier))


def test_attentions_depth_needs_lengths_where_the_order_dominates() -> None:
    """Section 6.8's old sweep, T = 4, 16, 64: the per-layer constant dominates and the reference L*log(T)
    misses as much as the wrong L; up to T = 2^30 the reference follows and L does not."""
    def miss(answer: str, panel: Panel) -> float:
        measured, keys = panel
        return fit(measured, [_value(answer, ("L", "T"), s) for s in keys]).miss

    old = attention_times((1, 2, 3), (4, 16, 64))
    assert miss("L*log(T)", old) > 0.2 and miss("L", old) > 0.2
    assert miss("L*log(T)", attention_times()) < 0.1 < miss("L", attention_times())


def test_fit_and_spread_read_the_points() -> None:
    depth = [96 + 2 * k for k in range(9)]
    assert fit(depth, [6 + k for k in range(9)]).follows and not fit(depth, [1.0] * 9).follows
    assert not fit(depth, [-(6 + k) for k in range(9)]).follows, "a falling answer does not follow a rising depth"
    assert fit([3.0, 3.0], [1.0, 2.0]).miss == 0.0 and not fit([3.0, 3.0], [1.0, 2.0]).follows, "a = 0"
    assert spread([1, 2, 4], [1, 2, 4]) == 1 and spread([1, 2], [0, 1]) == math.inf
    assert statistics.fmean([fit(depth, [float("nan")] * 9).miss]) == math.inf, "NaN is no fit"
