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

from attnlab.fits import fit, fit_terms, spread
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


def by_terms(measured: list[float], sizes: list[Sizes], answer: str) -> bool:
    """Chapter 8's reading: the answer's terms, each with a factor >= 0 of its own, plus a constant, follow the points
    (attnlab.fits.fit_terms). Unlike the others it reads the answer's text, not only its values."""
    return fit_terms(measured, sizes, answer).follows


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


def per_head_attention(M, WQ, WK, WV):
    """Chapter 1's self_attention written as a loop over the heads (a correct layer the text allows): one
    head's T x T scores at a time."""
    import torch

    K = WQ.shape[1]
    heads = []
    for h in range(WQ.shape[0]):
        s = (M @ WQ[h].T) @ (M @ WK[h].T).T / math.sqrt(K)
        heads.append(torch.softmax(s, dim=-1) @ (M @ WV[h].T))
    return torch.cat(heads, dim=-1)


# Section 1.4's sweeps: what -> (base sizes, the values each size takes in turn)
LAYER_SWEEPS = {"work": ({"T": 64, "H": 4, "K": 4, "J": 64},
                         {"T": [8, 32, 128, 512, 2048], "H": [1, 4, 16, 64], "K": [2, 4, 16, 64], "J": [16, 64, 256, 1024]}),
                "memory": ({"T": 256, "H": 4, "K": 4, "J": 32},
                           {"T": [256, 512, 1024, 2048, 4096], "H": [1, 2, 4, 8, 16, 32], "K": [2, 4, 16, 32],
                            "J": [32, 64, 128, 256]})}


@functools.cache
def layer_panels(what: str) -> list[Panel]:
    """Section 1.4: the work (the profiler's, of the reference) or the scores normalised (`softmax_entries`) of a
    per-head loop."""
    import torch

    import solutions.ch1 as reference
    from attnlab.kernels import softmax_entries
    from attnlab.profiler import parallel_time

    base, grown = LAYER_SWEEPS[what]
    panels = []
    for name, values in grown.items():
        measured, keys = [], []
        for v in values:
            s = {**base, name: v}
            shapes = [(s["T"], s["J"]), (s["H"], s["K"], s["J"]), (s["H"], s["K"], s["J"]), (s["H"], s["J"] // s["H"], s["J"])]
            if what == "work":
                measured.append(parallel_time(reference.self_attention, *shapes, model="log").work)
            else:
                measured.append(softmax_entries(per_head_attention, *(torch.empty(*x, device="meta") for x in shapes)))
            keys.append(s)
        panels.append((measured, keys))
    return panels


def cnn_depth_keys() -> list[Sizes]:
    """Section 6.7's CNNs: T = 2^k - 1 (k = 4..11) with the layers full context needs (D = 3), then with 3 layers."""
    import solutions.ch6 as reference

    Ts = [2**k - 1 for k in range(4, 12)]
    return [{"L": reference.layers_needed(T, 3), "T": T} for T in Ts] + [{"L": 3, "T": T} for T in Ts]


# Section 1.5's sweeps: base sizes (H = 4), then the values each size takes
DEPTH_SWEEPS = ({"L": 2, "T": 64, "J": 64, "K": 16},
                {"L": [1, 2, 4, 8, 16], "T": [4, 64, 1024, 16384, 262144], "J": [16, 64, 256, 1024], "K": [2, 4, 16, 64]})


@functools.cache
def depth_panels(model: str) -> list[Panel]:
    """Section 1.5: the depth of the reference transformer along each size's sweep, under `model`."""
    import solutions.ch1 as reference
    from attnlab.profiler import parallel_time

    base, grown = DEPTH_SWEEPS
    panels = []
    for name, values in grown.items():
        keys = [{**base, name: v, "H": 4} for v in values]
        measured = [parallel_time(reference.transformer, (s["T"], s["J"]),
                                  [((4, s["K"], s["J"]), (4, s["K"], s["J"]), (4, s["J"] // 4, s["J"]))] * s["L"],
                                  model=model).depth for s in keys]
        panels.append((measured, keys))
    return panels


# Section 2.3's sweeps of one spatial layer: base sizes (H = 4), then each size's values
SPATIAL_SWEEPS = ({"X": 8, "Y": 8, "J": 64, "K": 16},
                  {"X": [2, 8, 32, 128, 512], "Y": [2, 8, 32, 128, 512], "J": [16, 64, 256, 1024], "K": [2, 4, 16, 64]})


@functools.cache
def spatial_panels() -> list[Panel]:
    """The depth (log sums) of the reference spatial_self_attention along each size's sweep."""
    import solutions.ch2 as reference
    from attnlab.profiler import parallel_time

    base, grown = SPATIAL_SWEEPS
    panels = []
    for name, values in grown.items():
        keys = [{**base, name: v, "H": 4} for v in values]
        panels.append(([parallel_time(reference.spatial_self_attention, (s["X"], s["Y"], s["J"]), (4, s["K"], s["J"]),
                                      (4, s["K"], s["J"]), (4, s["J"] // 4, s["J"]), model="log").depth for s in keys],
                       keys))
    return panels


@functools.cache
def generation_sweeps() -> dict[str, list[tuple[Sizes, dict[str, int]]]]:
    """Section 8.3 on smaller sweeps: the work and depth of generating T rows with L blocks (H = 2, K = I = J/H)
    without and with the cache, and the caches' numbers (the chapter's `measure_generation`), along T (L = 1,
    J = 8), J (L = 1, T = 8) and L (T = 8, J = 32): (sizes, measurements)."""
    import solutions.ch8 as reference

    sweeps = {"T": [{"L": 1, "T": T, "J": 8} for T in (8, 16, 32, 64)],
              "J": [{"L": 1, "T": 8, "J": J} for J in (32, 64, 128, 256)],
              "L": [{"L": L, "T": 8, "J": 32} for L in (1, 2, 3)]}
    return {name: [(s, reference.measure_generation(**s)) for s in points] for name, points in sweeps.items()}


def generation_panels(question: str) -> list[Panel]:
    return [([m[question] for _, m in points], [s for s, _ in points]) for points in generation_sweeps().values()]


@functools.cache
def tiled_panels() -> list[Panel]:
    """Section 8.5: the largest tensor of the reference tiled_attention (causal, meta tensors) along T, Ttile and K."""
    import solutions.ch8 as reference

    sweeps = [[{"H": 2, "T": T, "K": 8, "Ttile": 16} for T in (128, 256, 512, 1024)],
              [{"H": 2, "T": 512, "K": 8, "Ttile": b} for b in (16, 32, 64, 128)],
              [{"H": 2, "T": 256, "K": K, "Ttile": 4} for K in (16, 32, 64, 128)]]
    return [([reference.largest_allocation(reference.tiled_attention, s["H"], s["T"], s["K"], s["Ttile"]) for s in sweep],
             sweep) for sweep in sweeps]


def closed_form(form: Callable[[int, int], float], keys: Sequence[Sizes]) -> Panel:
    return [form(s["L"], s["T"]) for s in keys], list(keys)


# question -> (its panels, how the chapter reads them, wrong answers beyond the corpus that must fail too)
MEASURED: dict[str, tuple[Callable[[], list[Panel]], Reading, list[str]]] = {
    # Section 1.4 reads the work and the scores of your own layer; the scores here of one that loops over the heads
    "ch1.LAYER_WORK": (lambda: layer_panels("work"), within_spread(3), ["T^2*J + T*J^2", "T^2*H*K + T*J*H*K",
                                                                        "H*T^2*K + T^2*J", "T*J*H*K + T*J^2"]),
    "ch1.SCORES_MEMORY": (lambda: layer_panels("memory"), within_spread(3), ["T^2", "J*T^2", "H*K*T^2"]),
    "ch2.SPATIAL_TIME_LAYER": (spatial_panels, follows_fit, ["log(X*Y)", "X + Y", "log(X) + log(Y) + J"]),
    # Section 1.5 reads the depth of your transformer the same way, along L, T, J and K
    "ch1.PARALLEL_TIME_SERIAL": (lambda: depth_panels("serial"), within_spread(3), ["L*(K + T)", "J + K + T"]),
    "ch1.PARALLEL_TIME_LOG": (lambda: depth_panels("log"), within_spread(3), ["L*log(T)", "log(J) + log(K) + log(T)"]),
    "ch7.BLOCK_TIME": (lambda: block_panels("depth"), follows_fit, ["log(J)", "log(T)", "1", "T + log(J)"]),
    "ch7.BLOCK_WORK": (lambda: block_panels("work"), within_spread(8), ["T^2*J", "T*J^2", "T*J", "T^3"]),
    "ch6.ATTENTION_TIME": (lambda: [attention_times()], follows_fit, ["L", "log(T)", "L + log(T)", "L*T"]),
    # depths and path lengths the chapter measures, equal to these closed forms by its own assertions (ch6-rnn-pipeline:
    # L layers of RNN take T + L - 1 steps; ch6-cnn-flat, ch6-cnn-climbs: a CNN's depth is a constant per layer;
    # ch6-rnn-path, ...), up to a constant factor and a constant, which the fit leaves free
    "ch6.RNN_TIME": (lambda: [closed_form(lambda L, T: T + L - 1, [{"L": L, "T": T} for L in (1, 4, 8)
                                                                    for T in (4, 8, 16)])],
                     follows_fit, ["T", "T*L", "L"]),
    "ch6.CNN_TIME": (lambda: [closed_form(lambda L, T: 5 + L, cnn_depth_keys())], follows_fit, ["T", "log(T)", "1"]),
    "ch6.RNN_PATH": (lambda: [closed_form(lambda L, T: T + L - 1, [{"L": L, "T": T} for L in (1, 2, 4)
                                                                    for T in (2, 4, 8)])],
                     follows_fit, ["T", "T*L", "L"]),
    "ch6.CNN_PATH": (lambda: [closed_form(lambda L, T: L, [{"L": L, "T": 1 + 2 * (2**L - 1)} for L in range(1, 6)])],
                     follows_fit, ["T", "1"]),  # sqrt(T) follows r_L up to L = 5
    "ch6.ATTENTION_PATH": (lambda: [closed_form(lambda L, T: L, [{"L": L, "T": 64} for L in (1, 2, 4)])],
                           follows_fit, ["1", "log(L)"]),
    # Sections 8.3 and 8.5 read every answer term by term
    **{f"ch8.{q}": (lambda q=q: generation_panels(q), by_terms, extra) for q, extra in (
        ("NOCACHE_WORK", ["L*T^2*J^2", "L*(T^3*J + T^2*J^2 + T^4)"]), ("NOCACHE_TIME", ["L*T", "L*log(T)*log(J)"]),
        ("CACHE_WORK", ["L*T^2*J", "L*T*J"]), ("CACHE_TIME", ["L*T", "T*(log(T) + log(J))"]),
        ("CACHE_MEMORY", ["L*T", "L*T^2*J", "L*J"]))},
    "ch8.TILED_MEMORY": (tiled_panels, by_terms, ["H*T*K", "T*Ttile", "H*T^2*Ttile"]),
}


def _value(answer: str, variables: Sequence[str], sizes: Sizes) -> float:
    expr = parse_answer(answer, list(variables))
    return float(expr.subs({s: sizes[s.name] for s in expr.free_symbols}))


def passes(question: str, answer: str, reading: Reading | None = None) -> bool:
    """Whether `answer` follows every panel of `question`'s measurements under `reading` (the chapter's)."""
    panels, chapter_reading, _ = MEASURED[question]
    if reading is None and chapter_reading is by_terms:
        return all(by_terms(measured, sizes, answer) for measured, sizes in panels())
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


@pytest.mark.parametrize("question", sorted(MEASURED))
def test_a_reading_that_passes_everything_is_caught(question: str) -> None:
    """Each question's check can fail: a reading that says 'follows' to every answer passes a wrong one."""
    assert misjudged(question, lambda measured, answer: True)


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


def test_the_per_head_loop_is_a_correct_layer() -> None:
    import torch

    import solutions.ch1 as reference

    g = torch.Generator().manual_seed(0)
    M, WQ, WK, WV = (torch.randn(*shape, generator=g, dtype=torch.float64)
                     for shape in [(5, 8), (2, 3, 8), (2, 3, 8), (2, 4, 8)])
    assert torch.allclose(per_head_attention(M, WQ, WK, WV), reference.self_attention(M, WQ, WK, WV))


def test_the_largest_tensor_of_a_per_head_loop_would_misjudge_the_memory() -> None:
    """What Section 1.4 once measured: the largest tensor of a per-head loop is one head's scores, and the
    right H*T^2 then drifts along H (the chapter printed 'NOT level')."""
    import torch

    from attnlab.kernels import largest_tensor

    base, grown = LAYER_SWEEPS["memory"]
    sizes = [{**base, "H": H} for H in grown["H"]]
    largest = [largest_tensor(per_head_attention, *(torch.empty(*x, device="meta") for x in
                                                   [(s["T"], s["J"]), (s["H"], s["K"], s["J"]), (s["H"], s["K"], s["J"]),
                                                    (s["H"], s["J"] // s["H"], s["J"])])) for s in sizes]
    assert not within_spread(3)(largest, [_value("H*T^2", ("T", "H", "J", "K"), s) for s in sizes])
