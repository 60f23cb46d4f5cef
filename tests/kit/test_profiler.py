"""The parallel-time profiler (attnlab.profiler) against the book's closed forms (solutions.depth)."""
from __future__ import annotations

import ast
import itertools
import math
import re
import resource
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from attnlab import profiler
from attnlab.profiler import DataDependentError, DepthMode, ParallelTime, UnknownOpError, depth_of, parallel_time
from solutions import ch1, ch2, ch6
from solutions import depth as closed

MODELS = ["serial", "log", lambda N: N * N]  # the last one: a custom model
aten = torch.ops.aten


def depth(fn, *args, model="log", **kwargs):
    """Measured depth of fn(*args) under `model`."""
    return parallel_time(fn, *args, model=model, **kwargs).depth


def layers(L: int, H: int, K: int, I: int, J: int) -> list:
    """L layers of (WQ, WK, WV) shapes."""
    return [((H, K, J), (H, K, J), (H, I, J))] * L


# ---------------------------------------------------------------------------- pin

def test_torch_is_the_pinned_version():
    """The profiler uses private dispatch API: its op set is tested against the one torch the project pins. The pin
    has one value wherever it is written (the book's and the kit's pyproject.toml, scripts/venv.sh), and it is the
    torch installed here."""
    import re
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    pins = {str(p.relative_to(root)): [d for d in tomllib.loads(p.read_text())["project"]["dependencies"]
                                       if d.startswith("torch")]
            for p in (root / "pyproject.toml", root / "attnlab" / "pyproject.toml")}
    pins["scripts/venv.sh"] = re.findall(r'"(torch==[^"]+)"', (root / "scripts" / "venv.sh").read_text())
    assert len({tuple(v) for v in pins.values()}) == 1 and len(pins["pyproject.toml"]) == 1, pins
    assert torch.__version__.split("+")[0] == pins["pyproject.toml"][0].removeprefix("torch==")


def ops_seen(fn, *args) -> set[str]:
    """The aten ops fn(*args) sends to the dispatch mode."""
    meta_args = profiler.as_meta(args)
    with DepthMode(meta=True) as mode:
        fn(*meta_args)
    return set(mode.op_counts)


VIEWS = {"aten.view.default", "aten.permute.default", "aten.unsqueeze.default"}


@pytest.mark.parametrize("fn, args, expected", [
    (ch1.self_attention, [(5, 8), (2, 3, 8), (2, 3, 8), (2, 4, 8)],
     VIEWS | {"aten.bmm.default", "aten.div.Tensor", "aten._softmax.default",
              "aten.clone.default", "aten._unsafe_view.default"}),
    (ch2.spatial_self_attention, [(3, 4, 8), (2, 3, 8), (2, 3, 8), (2, 4, 8)],
     VIEWS | {"aten.bmm.default", "aten.div.Tensor", "aten._softmax.default",
              "aten.clone.default", "aten._unsafe_view.default"}),
    (ch6.conv_stride2, [(2, 9, 4), (3, 4, 5), (5,)],
     VIEWS | {"aten.unfold.default", "aten.clone.default", "aten._unsafe_view.default",
              "aten.bmm.default", "aten.sub.Tensor", "aten.sigmoid.default"}),
    (closed.rnn, [(4, 3), (5, 5), (5, 3)],
     {"aten.unbind.int", "aten.new_zeros.default", "aten.mv.default", "aten.add.Tensor",
      "aten.tanh.default", "aten.stack.default"}),
    (lambda q, k, v: F.scaled_dot_product_attention(q, k, v), [(2, 4, 6)] * 3,
     {"aten.mul.Scalar", "aten.transpose.int", "aten.expand.default", "aten.view.default",
      "aten.bmm.default", "aten._unsafe_view.default", "aten._safe_softmax.default"}),
])
def test_exact_op_set_of_the_reference_models(fn, args, expected):
    """What torch 2.13.0 decomposes the reference models into (the rules are written for these)."""
    assert ops_seen(fn, *args) == expected


def test_pointwise_tag_is_overridden_where_it_misleads():
    """clone is tagged pointwise but is a copy (free); max.other is elementwise, max.dim a reduction."""
    assert torch.Tag.pointwise in aten.clone.default.tags
    assert depth(lambda x: x.clone(), (4, 4)) == 0
    assert torch.Tag.pointwise in aten.max.other.tags
    assert depth(lambda x, y: torch.max(x, y), (4, 8), (4, 8), model="serial") == 1
    assert depth(lambda x: torch.max(x, dim=1).values, (4, 8), model="serial") == 8


# ---------------------------------------------------------------------------- closed forms

@pytest.mark.parametrize("model", MODELS, ids=["serial", "log", "custom"])
def test_transformer_matches_closed_form(model):
    """ch1.transformer: L (6 + S(J) + S(K) + 2 S(T)), over a grid including sizes of 1."""
    for T, H, I, K, L in itertools.product([1, 5, 16], [1, 3], [1, 4], [1, 8], [1, 2]):
        J = H * I
        assert depth(ch1.transformer, (T, J), layers(L, H, K, I, J), model=model) == \
            closed.transformer_depth(L, T, J, K, model), (T, H, I, K, L)


@pytest.mark.parametrize("model", MODELS, ids=["serial", "log", "custom"])
def test_self_attention_matches_closed_form(model):
    """One layer, with J != H I allowed for a single layer."""
    for T, J, H, K, I in itertools.product([3, 17], [5, 64], [2], [2, 9], [3]):
        assert depth(ch1.self_attention, (T, J), (H, K, J), (H, K, J), (H, I, J), model=model) == \
            closed.self_attention_depth(T, J, K, model)


@pytest.mark.parametrize("model", MODELS, ids=["serial", "log", "custom"])
def test_spatial_transformer_matches_closed_form(model):
    """ch2.spatial_self_attention stacked L times: L (6 + S(J) + S(K) + 2 S(XY))."""
    for X, Y, H, I, K, L in itertools.product([1, 3], [2, 5], [2], [1, 3], [1, 4], [1, 2]):
        J = H * I
        assert depth(closed.spatial_transformer, (X, Y, J), layers(L, H, K, I, J), model=model) == \
            closed.spatial_transformer_depth(L, X, Y, J, K, model), (X, Y, I, K, L)


@pytest.mark.parametrize("model", MODELS, ids=["serial", "log", "custom"])
def test_language_cnn_matches_closed_form(model):
    """ch6.embed + L ch6.conv_stride2: L (3 + S(D I)), whatever T and B."""
    for B, D, I, L, extra in itertools.product([1, 2], [1, 2, 3], [1, 4], [1, 2, 3], [0, 7]):
        T = D * 2 ** L + extra
        w = torch.zeros(B, T, dtype=torch.long)
        assert depth(closed.language_cnn, w, (11, I), [((D, I, I), (I,))] * L, model=model) == \
            closed.language_cnn_depth(L, D, I, model), (B, D, I, L, T)


@pytest.mark.parametrize("model", MODELS, ids=["serial", "log", "custom"])
def test_rnn_matches_closed_form(model):
    """RNN and stacked RNN: (T + L - 1)(3 + S(J)) + max(0, S(I) - S(J))."""
    for T, I, J, L in itertools.product([1, 2, 7], [1, 16], [1, 4], [1, 2]):
        stack = [((J, J), (J, I))] + [((J, J), (J, J))] * (L - 1)
        assert depth(closed.stacked_rnn, (T, I), stack, model=model) == \
            closed.rnn_depth(T, I, J, model, L), (T, I, J, L)
        if L == 1:
            assert depth(closed.rnn, (T, I), (J, J), (J, I), model=model) == closed.rnn_depth(T, I, J, model)


@pytest.mark.parametrize("model", MODELS, ids=["serial", "log", "custom"])
def test_bidirectional_rnn_matches_closed_form(model):
    """Both directions run side by side: the depth of one RNN."""
    for T, I, J in itertools.product([1, 2, 6], [2, 16], [1, 4]):
        assert depth(closed.birnn, (T, I), (J, J), (J, I), (J, J), (J, I), model=model) == \
            closed.birnn_depth(T, I, J, model), (T, I, J)


# ---------------------------------------------------------------------------- orders

def fit(rows: list[list[float]], ys: list[float]) -> list[float]:
    """Least-squares coefficients of ys on the feature rows."""
    A = torch.tensor(rows, dtype=torch.float64)
    y = torch.tensor(ys, dtype=torch.float64).unsqueeze(1)
    return torch.linalg.lstsq(A, y).solution.squeeze(1).tolist()


def test_transformer_serial_order_is_L_times_J_plus_K_plus_T():
    """Measured serial depths are exactly a L + b L J + c L K + d L T: Theta(L (J + K + T))."""
    rows, ys = [], []
    for L, T, K, I in itertools.product([1, 2], [4, 64], [2, 8], [2, 16]):
        J = 2 * I
        rows.append([L, L * J, L * K, L * T])
        ys.append(depth(ch1.transformer, (T, J), layers(L, 2, K, I, J), model="serial"))
    a, b, c, d = fit(rows, ys)
    assert [round(v, 6) for v in (a, b, c, d)] == [6, 1, 1, 2]
    assert max(abs(y - (a * r[0] + b * r[1] + c * r[2] + d * r[3])) for r, y in zip(rows, ys)) < 1e-6


def test_transformer_log_order_is_L_times_sum_of_logs():
    """Measured log depths are exactly L (6 + log J + log K + 2 log T) on powers of two."""
    rows, ys = [], []
    for L, t, k, i in itertools.product([1, 2], [2, 9], [1, 4], [1, 6]):
        T, K, J = 2 ** t, 2 ** k, 2 * 2 ** i
        rows.append([L, L * math.log2(J), L * math.log2(K), L * math.log2(T)])
        ys.append(depth(ch1.transformer, (T, J), layers(L, 2, K, J // 2, J), model="log"))
    assert [round(v, 6) for v in fit(rows, ys)] == [6, 1, 1, 2]


def test_log_depth_grows_by_2L_per_doubling_of_T_and_serial_depth_doubles():
    """Doubling T: +2L under "log", about x2 under "serial" once T dominates."""
    L, H, K, I = 2, 2, 4, 4
    J = H * I
    log = [depth(ch1.transformer, (T, J), layers(L, H, K, I, J)) for T in (2 ** 10, 2 ** 11, 2 ** 12)]
    assert [b - a for a, b in zip(log, log[1:])] == [2 * L, 2 * L]
    serial = [depth(ch1.transformer, (T, J), layers(L, H, K, I, J), model="serial") for T in (1000, 2000)]
    assert 1.95 < serial[1] / serial[0] < 2.0


def test_rnn_is_linear_in_T_even_under_log_and_a_cnn_is_independent_of_T():
    """The RNN's Python loop over time is a chain: O(T) in both models; the CNN is O(L)."""
    J = I = 8
    for model in ("serial", "log"):
        ds = [depth(closed.rnn, (T, I), (J, J), (J, I), model=model) for T in (5, 10, 20)]
        assert ds[1] - ds[0] == (ds[2] - ds[1]) / 2 == 5 * (3 + closed.S(J, model))
    cnn = {depth(closed.language_cnn, torch.zeros(1, T, dtype=torch.long), (5, 4), [((3, 4, 4), (4,))] * 2)
           for T in (16, 64, 256)}
    assert cnn == {2 * (3 + 4)}


def test_stacked_rnn_is_T_plus_L_not_T_times_L():
    """The wavefront: adding a layer adds one step, not T steps."""
    T, J = 10, 4
    ds = [depth(closed.stacked_rnn, (T, J), [((J, J), (J, J))] * L, model="serial") for L in (1, 2, 3)]
    assert ds[1] - ds[0] == ds[2] - ds[1] == 3 + J


# ---------------------------------------------------------------------------- rules

def test_views_and_copies_cost_nothing():
    """Views, reshapes, permutes, cat, stack, indexing, clone, .to: depth 0, work 0."""
    def shuffle(x, idx):
        y = x.view(4, 6).t().reshape(2, 12).permute(1, 0).unsqueeze(0).expand(3, 12, 2)
        z = torch.cat([y, y.flip(0)], 1)[1:, ::2]
        return torch.stack([z, z.contiguous().clone().detach().to(torch.float64).float()])[:, :, idx]
    r = parallel_time(shuffle, (24,), torch.tensor([0, 3]))
    assert (r.depth, r.work) == (0, 0)


def test_creation_has_depth_zero_whatever_its_argument():
    """zeros_like(x) and x.new_zeros do not read x's values."""
    r = parallel_time(lambda x: torch.zeros_like(x.exp()) + x.new_ones(3) + torch.arange(3.0), (3,))
    assert r.depth == 2  # exp is off the path of zeros_like; then two adds


def test_elementwise_ops_cost_one_each():
    """Pointwise ops (tanh, sigmoid, relu, exp, log, mul, where, ...) cost 1."""
    def f(x):
        return torch.where(x > 0, torch.relu(x), torch.sigmoid(x)).exp().log().tanh() * 2
    assert depth(f, (5, 3)) == 6  # gt | relu | sigmoid, where, exp, log, tanh, mul


def test_reductions():
    """sum, amax, prod over N: S(N); mean S(N) + 1; over several dims N is their product."""
    for model, S in (("serial", lambda N: N), ("log", lambda N: math.ceil(math.log2(N)))):
        assert depth(lambda x: x.sum(), (6, 10), model=model) == S(60)
        assert depth(lambda x: x.sum(dim=(0, 2)), (6, 10, 3), model=model) == S(18)
        assert depth(lambda x: x.amax(-1), (6, 10), model=model) == S(10)
        assert depth(lambda x: x.prod(0), (6, 10), model=model) == S(6)
        assert depth(lambda x: x.mean(-1), (6, 10), model=model) == S(10) + 1
        assert depth(lambda x: x.cumsum(-1), (6, 10), model=model) == S(10)
        assert depth(lambda x: torch.logsumexp(x, -1), (6, 10), model=model) == S(10) + 2


def test_softmax_costs_exp_sum_divide():
    """softmax over N: S(N) + 2 (not torch's max pass); log_softmax: S(N) + 3."""
    for N in (1, 2, 7, 64):
        assert depth(lambda x: torch.softmax(x, -1), (3, N), model="serial") == (N if N > 1 else 0) + 2
        assert depth(lambda x: torch.log_softmax(x, -1), (3, N), model="log") == math.ceil(math.log2(N)) + 3


def test_contractions_cost_multiply_then_sum():
    """mm, bmm, matmul, einsum, dot, mv, F.linear, conv1d: 1 + S(R); a bias adds 1."""
    R = 12
    cases = [
        (lambda a, b: a @ b, [(3, R), (R, 5)], 0),
        (lambda a, b: a @ b, [(2, 3, R), (R, 5)], 0),
        (lambda a, b: torch.bmm(a, b), [(2, 3, R), (2, R, 5)], 0),
        (lambda a, b: torch.einsum("tj,kj->tk", a, b), [(3, R), (5, R)], 0),
        (lambda a, b: torch.dot(a, b), [(R,), (R,)], 0),
        (lambda a, b: a @ b, [(4, R), (R,)], 0),
        (lambda x, w: F.linear(x, w), [(3, R), (5, R)], 0),
        (lambda x, w, b: F.linear(x, w, b), [(3, R), (5, R), (5,)], 1),
        (lambda x, w, b: x @ w.T + b, [(3, R), (5, R), (5,)], 1),
        (lambda x, w: F.conv1d(x, w), [(1, 3, 10), (2, 3, 4)], 0),       # R = 3 * 4
        (lambda x, w, b: F.conv1d(x, w, b), [(1, 3, 10), (2, 3, 4), (2,)], 1),
    ]
    for fn, args, bias in cases:
        assert depth(fn, *args, model="serial") == 1 + R + bias
        assert depth(fn, *args, model="log") == 1 + 4 + bias


def test_sdpa_costs_the_same_as_the_written_out_attention():
    """F.scaled_dot_product_attention = scale, scores, softmax, weighted sum."""
    H, T, K = 2, 16, 8
    sdpa = depth(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), (H, T, K), (H, T, K), (H, T, K))
    written = depth(lambda q, k, v: torch.softmax(q @ k.transpose(1, 2) / math.sqrt(K), -1) @ v,
                    (H, T, K), (H, T, K), (H, T, K))
    assert sdpa == written == 1 + 3 + 1 + (2 + 4) + (1 + 4)


def test_work_counts_scalar_operations():
    """Work: elementwise numel; contraction 2 numel(out) R; sum numel(in); softmax 3 numel."""
    assert parallel_time(lambda x: x.exp(), (3, 4)).work == 12
    assert parallel_time(lambda a, b: a @ b, (3, 7), (7, 5)).work == 2 * 15 * 7
    assert parallel_time(lambda x: x.sum(-1), (3, 7)).work == 21
    assert parallel_time(lambda x: torch.softmax(x, -1), (3, 7)).work == 63
    assert parallel_time(lambda x: x.view(21).permute(0), (3, 7)).work == 0


def test_tree_sum_has_log_depth_even_under_the_serial_model():
    """Pairwise halving: ceil(log2 N) adds on the critical path, whatever S is."""
    def tree_sum(x):
        while x.shape[0] > 1:
            if x.shape[0] % 2:
                x = torch.cat([x, x.new_zeros(1)])
            x = x[0::2] + x[1::2]
        return x
    for N in (2, 5, 64, 1000):
        assert depth(tree_sum, (N,), model="serial") == math.ceil(math.log2(N))
        assert depth(lambda x: x.sum(), (N,), model="serial") == N


def test_serial_python_loop_accumulates():
    """A running sum in a Python loop has depth N in any model."""
    def running(x):
        acc = x[0]
        for i in range(1, x.shape[0]):
            acc = acc + x[i]
        return acc
    assert depth(running, (9,), model="log") == 8


def test_in_place_updates_raise_the_depth_of_the_tensor_and_its_views():
    """x.add_ raises x and every view of x; writing h into buf[t] raises buf."""
    def f(x):
        v = x[0]
        x.mul_(2).add_(1)
        return v
    assert depth(f, (3, 4)) == 2

    def g(x, W):
        buf = x.new_zeros(4, 3)
        h = x
        for t in range(4):
            h = torch.tanh(W @ h)
            buf[t] = h
        return buf
    assert depth(g, (3,), (3, 3), model="serial") == 4 * (1 + 3 + 1)


def test_custom_model():
    """A callable model: S(N) = its value (and 0 for N = 1); its name is reported."""
    def sqrt_sum(N):
        return math.sqrt(N)
    r = parallel_time(lambda x: x.sum(-1), (2, 16), model=sqrt_sum)
    assert (r.depth, r.model) == (4.0, "sqrt_sum")
    assert parallel_time(lambda x: x.sum(-1), (2, 1), model=sqrt_sum).depth == 0
    assert parallel_time(lambda x: x.sum(), (8,), model=lambda N: 3 * N).model == "custom"
    with pytest.raises(ValueError, match="model"):
        parallel_time(lambda x: x.sum(), (8,), model="quadratic")


def test_unknown_ops_raise_naming_the_op():
    """Never a silent guess."""
    with pytest.raises(UnknownOpError, match=r"aten\.sort"):
        parallel_time(lambda x: torch.sort(x).values, (8,))
    with pytest.raises(UnknownOpError, match=r"aten\._linalg_svd"):
        parallel_time(lambda x: torch.linalg.svd(x).S, (4, 4))
    with pytest.raises(UnknownOpError, match="transposed"):
        parallel_time(lambda x, w: F.conv_transpose1d(x, w), (1, 2, 8), (2, 3, 3))
    assert not profiler._ACTIVE  # the mode was left


def test_reading_values_raises_data_dependent_error():
    """Meta tensors have no values: .item() and `if x > 0` cannot be profiled."""
    with pytest.raises(DataDependentError, match="item"):
        parallel_time(lambda x: x * x.sum().item(), (3,))
    with pytest.raises(DataDependentError):
        parallel_time(lambda x: x if x.sum() > 0 else -x, (3,))


def test_custom_rules_in_depth_mode():
    """DepthMode(rules=...) adds a cost rule: a sort as a log^2 N sorting network."""
    def bitonic(args, kwargs, out, S):
        N = args[0].shape[-1]
        return math.ceil(math.log2(N)) ** 2, 0
    with DepthMode(rules={aten.sort: bitonic}) as mode:
        y = torch.sort(torch.empty(16, device="meta")).values + 1
    assert mode.depth_of(y) == 17


# ---------------------------------------------------------------------------- API

def test_example_arguments():
    """Shapes, torch.Size, tensors of any dtype, meta tensors, nests, dicts, ints and kwargs."""
    def f(a, b, nest, n, scale=1.0, extra=None):
        assert a.is_meta and b.is_meta and b.dtype == torch.float64 and n == 3
        assert isinstance(nest, list) and isinstance(nest[0], tuple) and nest[1].dtype == torch.float32
        return (a @ nest[0][0]).sum() * scale + extra["x"].sum() + b.sum() + nest[1].sum()
    r = parallel_time(f, torch.Size([2, 4]), torch.ones(5, dtype=torch.float64),
                      [((4, 8),), torch.empty(2, device="meta")], 3, scale=2.0, extra={"x": (7,)})
    assert r.depth == (1 + 2) + 4 + 1 + 3  # log: a @ W, .sum() over 16, * scale, three adds


def test_real_tensors_are_not_touched_and_results_are_meta():
    """parallel_time converts real tensors to meta: fn never sees (or changes) their values."""
    x = torch.ones(3)
    seen = []
    parallel_time(lambda t: seen.append(t) or t.add_(1), x)
    assert seen[0].is_meta and x.tolist() == [1.0, 1.0, 1.0]


def test_factories_inside_fn_are_meta_and_huge_sizes_cost_no_memory():
    """T = 1,000,000, J = 4096 transformer layer (scores alone would be 64 TB) and 10^12-element zeros."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    T, J, H, K, I = 10 ** 6, 4096, 16, 256, 256
    r = parallel_time(ch1.transformer, (T, J), layers(1, H, K, I, J), model="log")
    assert r.depth == closed.transformer_depth(1, T, J, K, "log")
    assert r.work > 10 ** 16
    assert depth(lambda x: torch.zeros(10 ** 6, 10 ** 6, device="cpu") + x, (10 ** 6,)) == 1
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 200 * 1024


def test_parallel_time_result():
    """A frozen dataclass with Brent's bound W/P + D and a readable str."""
    r = parallel_time(lambda a, b: a @ b, (64, 64), (64, 64), model="serial")
    assert r == ParallelTime(depth=65, work=2 * 64 ** 3, model="serial")
    assert r.brent(1) == 2 * 64 ** 3 + 65 and r.brent(64 ** 3) == 2 + 65
    assert "depth 65" in str(r) and "serial" in str(r)
    with pytest.raises(AttributeError):
        r.depth = 0  # type: ignore[misc]
    with pytest.raises(TypeError, match="must return a tensor"):
        parallel_time(lambda x: None, (3,))


def test_depth_of_inside_the_profiled_function():
    """depth_of(h) while the mode is active: the RNN's depth per step."""
    per_step = []

    def f(x, W):
        h = x
        for _ in range(3):
            h = torch.tanh(W @ h)
            per_step.append(depth_of(h))
        return h
    parallel_time(f, (4,), (4, 4), model="serial")
    assert per_step == [6, 12, 18]
    with pytest.raises(RuntimeError, match="active DepthMode"):
        depth_of(torch.ones(2))


def test_depth_mode_on_real_tensors():
    """Without meta=True the ops really run; inputs made before the mode have depth 0."""
    x, W = torch.randn(4), torch.randn(4, 4)
    with DepthMode(model="log") as mode:
        y = torch.softmax(W @ x, 0)
    assert not y.is_meta and torch.allclose(y.sum(), torch.tensor(1.0))
    assert mode.depth_of(y) == (1 + 2) + (2 + 2) and mode.depth_of(x) == 0
    assert mode.result(y) == ParallelTime(7, 2 * 16 + 12, "log")


def test_compiled_functions_profile_like_eager_ones():
    """DepthMode leaves __torch_dispatch__ outside dynamo's disable wrapper: torch.compile still works."""
    def f(x, W):
        return torch.tanh(x @ W).sum(-1)
    compiled = torch.compile(f, backend="eager")
    assert parallel_time(compiled, (3, 8), (8, 4)) == parallel_time(f, (3, 8), (8, 4))


def test_docstring_examples():
    """The examples in the module docstring run as written."""
    import doctest
    assert doctest.testmod(profiler).failed == 0


def test_in_place_elementwise_and_scatter_rules():
    """masked_fill_ (untagged in-place form of a pointwise op) costs 1; scatter(reduce=) is unknown."""
    assert depth(lambda x: x.masked_fill_(x > 0, 0.0), (3, 4)) == 2
    with pytest.raises(UnknownOpError, match="scatter"):
        parallel_time(lambda x, i: x.scatter(0, i, x, reduce="add"), (3,), torch.tensor([0, 1, 1]))
    assert depth(lambda x, i: x.scatter(0, i, x), (3,), torch.tensor([2, 1, 0])) == 0


def test_student_package_holds_no_solution_code():
    """attnlab.profiler imports nothing from solutions/ and defines no model."""
    tree = ast.parse(Path(profiler.__file__).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not any(m.split(".")[0] in {"solutions", "autograder"} for m in imported)
    names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    assert not names & {"self_attention", "transformer", "spatial_self_attention", "conv_stride2", "rnn"}


# ---------------------------------------------------------------------------- registry (issue 11)

def test_register_cost_refuses_a_duplicate_naming_the_op():
    """A second rule for an op (its packet, or an overload of a registered packet) is refused."""
    def rule(args, kwargs, out, S):
        return 0, 0
    with pytest.raises(ValueError, match=r"aten\.mm"):
        profiler.register_cost(aten.mm)(rule)
    with pytest.raises(ValueError, match=r"aten\.mm"):
        profiler.register_cost(aten.mm.default)(rule)        # covered by the packet's rule
    with pytest.raises(ValueError, match=r"aten\.sum"):
        profiler.register_cost(aten.sum)(rule)               # sum.default has a rule
    with pytest.raises(TypeError, match="torch.ops.aten"):
        profiler.register_cost("sort")
    assert profiler.COST_RULES[aten.mm] is profiler._product


def test_register_cost_adds_a_rule_for_every_later_run():
    """@register_cost(op) is what the built-in rules use; a new op then profiles everywhere."""
    @profiler.register_cost(aten.sort)
    def sorting_network(args, kwargs, out, S):
        """A bitonic sorting network: log2(N)^2 compare-exchange steps."""
        return math.ceil(math.log2(args[0].shape[-1])) ** 2, 0
    try:
        assert depth(lambda x: torch.sort(x).values + 1, (16,)) == 17
        with pytest.raises(ValueError, match="duplicate"):
            profiler.register_cost(aten.sort.default)(sorting_network)
    finally:
        del profiler.COST_RULES[aten.sort]
    with pytest.raises(UnknownOpError):
        parallel_time(lambda x: torch.sort(x).values, (16,))


def test_registry_keys_are_aten_ops_with_no_packet_and_overload_both_registered():
    """Every key is an OpOverloadPacket or an OpOverload, and never both for one op."""
    keys = profiler.COST_RULES
    assert all(isinstance(k, (torch._ops.OpOverloadPacket, torch._ops.OpOverload)) for k in keys)
    assert not [k for k in keys if isinstance(k, torch._ops.OpOverload) and k.overloadpacket in keys]


def test_custom_rules_in_parallel_time_and_their_keys():
    """parallel_time(..., rules=) takes rules for one run; keys must be ops, not names."""
    def sorting_network(args, kwargs, out, S):
        return math.ceil(math.log2(args[0].shape[-1])) ** 2, 0
    assert depth(lambda x: torch.sort(x).values * 2, (16,), rules={aten.sort: sorting_network}) == 17
    # a rule given for one run wins over the registry (here: matmul as one step)
    assert depth(lambda a, b: a @ b, (3, 8), (8, 2), rules={aten.mm: lambda *a: (1, 0)}) == 1
    with pytest.raises(TypeError, match="torch.ops.aten.sort"):
        parallel_time(lambda x: torch.sort(x).values, (16,), rules={"sort": sorting_network})


def test_unknown_op_message_names_the_op_and_how_to_give_a_rule():
    """The message says which op, that it has no rule yet, and how to pass one; no other advice."""
    with pytest.raises(UnknownOpError) as err:
        parallel_time(lambda x: torch.sort(x).values, (8,))
    message = str(err.value)
    assert "aten.sort.default" in message and "no cost rule" in message
    assert "rules={torch.ops.aten.sort: rule}" in message
    assert "matmul" not in message and "einsum" not in message


def test_the_advice_in_an_unknown_op_message_works():
    """The op named in `rules={torch.ops.aten.<op>: rule}` is the one that reaches the mode."""
    def scatter_add(x, i):
        return x.index_put_((i,), x * 2, accumulate=True)
    with pytest.raises(UnknownOpError, match=r"accumulate=True") as err:
        parallel_time(scatter_add, (3,), torch.tensor([0, 1, 1]))
    key = re.search(r"rules=\{torch\.ops\.(\w+)\.(\w+): rule\}", str(err.value))
    op = getattr(getattr(torch.ops, key[1]), key[2])
    assert op is aten.index_put_
    assert depth(scatter_add, (3,), torch.tensor([0, 1, 1]), rules={op: lambda *a: (2, 0)}) == 3


def test_example_arguments_that_are_plain_ints():
    """parallel_time(fn, 3, 4): ints pass through (the argument tuple itself is not a shape)."""
    assert depth(lambda n, m: torch.zeros(n, m).exp().sum(), 3, 4, model="serial") == 1 + 12


def test_nests_are_walked_with_pytree():
    """Namedtuples and OrderedDicts of shapes become meta tensors (torch.utils._pytree does the walking)."""
    from collections import OrderedDict, namedtuple
    Pair = namedtuple("Pair", "W b")
    seen = {}

    def f(p, d):
        seen.update(W=p.W, b=p.b, x=d["x"])
        return d["x"] @ p.W + p.b
    r = parallel_time(f, Pair((4, 3), (3,)), OrderedDict(x=(2, 4)), model="serial")
    assert all(t.is_meta for t in seen.values()) and r.depth == 1 + 4 + 1


# ---------------------------------------------------------------------------- ordinary student code (issue 13)

R = 12
PRODUCTS = [
    # (name, fn, shapes, fused add)
    ("vector @ matrix", lambda a, b: a @ b, [(R,), (R, 5)], 0),
    ("matrix @ vector", lambda a, b: a @ b, [(5, R), (R,)], 0),
    ("vector @ vector", lambda a, b: a @ b, [(R,), (R,)], 0),
    ("3-D @ vector", lambda a, b: a @ b, [(2, 5, R), (R,)], 0),
    ("vector @ 3-D", lambda a, b: a @ b, [(R,), (2, R, 5)], 0),
    ("matrix @ 3-D", lambda a, b: a @ b, [(5, R), (2, R, 4)], 0),
    ("3-D @ matrix", lambda a, b: a @ b, [(2, 5, R), (R, 4)], 0),
    ("3-D @ 3-D", lambda a, b: a @ b, [(2, 5, R), (2, R, 4)], 0),
    ("4-D @ 4-D", lambda a, b: a @ b, [(3, 2, 5, R), (3, 2, R, 4)], 0),
    ("4-D @ 3-D broadcast", lambda a, b: a @ b, [(3, 2, 5, R), (2, R, 4)], 0),
    ("4-D @ matrix", lambda a, b: a @ b, [(3, 2, 5, R), (R, 4)], 0),
    ("torch.matmul", lambda a, b: torch.matmul(a, b), [(5, R), (R, 4)], 0),
    ("torch.mv", lambda a, b: torch.mv(a, b), [(5, R), (R,)], 0),
    ("torch.dot", lambda a, b: torch.dot(a, b), [(R,), (R,)], 0),
    ("F.linear vector", lambda x, w: F.linear(x, w), [(R,), (4, R)], 0),
    ("F.linear matrix", lambda x, w: F.linear(x, w), [(5, R), (4, R)], 0),
    ("F.linear 3-D", lambda x, w: F.linear(x, w), [(2, 5, R), (4, R)], 0),
    ("F.linear vector + bias", lambda x, w, b: F.linear(x, w, b), [(R,), (4, R), (4,)], 1),
    ("F.linear matrix + bias", lambda x, w, b: F.linear(x, w, b), [(5, R), (4, R), (4,)], 1),
    ("F.linear 3-D + bias", lambda x, w, b: F.linear(x, w, b), [(2, 5, R), (4, R), (4,)], 1),
    ("torch.addmm", lambda c, a, b: torch.addmm(c, a, b), [(5, 4), (5, R), (R, 4)], 1),
    ("torch.addmm beta alpha", lambda c, a, b: torch.addmm(c, a, b, beta=2, alpha=3), [(5, 4), (5, R), (R, 4)], 1),
    ("torch.baddbmm", lambda c, a, b: torch.baddbmm(c, a, b), [(2, 5, 4), (2, 5, R), (2, R, 4)], 1),
    ("torch.addmv", lambda c, a, b: torch.addmv(c, a, b), [(5,), (5, R), (R,)], 1),
]


@pytest.mark.parametrize("name, fn, shapes, fused", PRODUCTS, ids=[p[0] for p in PRODUCTS])
def test_every_product_student_code_writes(name, fn, shapes, fused):
    """Inner size R = 12: one multiply, the sum over R, and a fused add for the add* forms.

    Whatever views matmul wraps around mm, bmm, mv or dot (unsqueeze, squeeze_,
    expand, view) cost 0, so the depth is 1 + S(12) (+1): serial 13 (14), log 1 + 4 = 5 (6).
    """
    assert depth(fn, *shapes, model="serial") == 1 + R + fused
    assert depth(fn, *shapes, model="log") == 1 + 4 + fused


def test_vector_times_matrix_reaches_the_profiler_as_unsqueeze_mm_squeeze_():
    """x[R] @ W[R, M] is x.unsqueeze(0) @ W, then an in-place squeeze_ of the product."""
    assert ops_seen(lambda x, W: x @ W, (8,), (8, 8)) == \
        {"aten.unsqueeze.default", "aten.mm.default", "aten.squeeze_.dim"}
    assert parallel_time(lambda x, W: x @ W, (8,), (8, 8), model="serial") == \
        ParallelTime(depth=9, work=2 * 8 * 8, model="serial")


def test_outer_product_is_one_multiply():
    """torch.outer(a, b) = a[:, None] * b: a view and one multiply, depth 1 in every model."""
    for model in ("serial", "log"):
        assert depth(torch.outer, (7,), (5,), model=model) == 1


INPLACE_VIEWS = [
    ("squeeze_", lambda y: y.unsqueeze(0).squeeze_()),
    ("squeeze_(dim)", lambda y: y.unsqueeze(0).squeeze_(0)),
    ("unsqueeze_", lambda y: y.unsqueeze_(1)),
    ("t_", lambda y: y.t_()),
    ("transpose_", lambda y: y.transpose_(0, 1)),
    ("swapdims_", lambda y: y.swapdims_(0, 1)),
    ("swapaxes_", lambda y: y.swapaxes_(0, 1)),
    ("as_strided_", lambda y: y.as_strided_((4, 3), (1, 4))),
    ("detach_", lambda y: y.detach_()),
]


@pytest.mark.parametrize("name, relabel", INPLACE_VIEWS, ids=[v[0] for v in INPLACE_VIEWS])
def test_in_place_views_cost_nothing_and_keep_the_depth(name, relabel):
    """exp (1), the in-place view (0), then + 1 (1): depth 2, whatever the model."""
    for model in ("serial", "log"):
        assert depth(lambda x: relabel(x.exp()) + 1, (3, 4), model=model) == 2


def test_every_in_place_view_torch_tags_has_a_rule_except_storage_changes():
    """Ops tagged inplace_view that reach the mode: all free but resize_/resize_as_/set_ (storage).

    swapdims_ and swapaxes_ are composite (torch runs them as transpose_), so they never
    reach a dispatch mode and need no rule.
    """
    tagged = set()
    for name in torch._C._dispatch_get_all_op_names():  # "aten::squeeze_.dim", "aten::t_"
        namespace, _, op = name.partition("::")
        packet_name, _, overload = op.partition(".")
        composite = torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd")
        if namespace == "aten" and not composite:
            packet = getattr(aten, packet_name)
            if torch.Tag.inplace_view in getattr(packet, overload or "default").tags:
                tagged.add(packet)
    without_rule = {str(p) for p in tagged if p not in profiler.COST_RULES}
    assert without_rule == {"aten.resize_", "aten.resize_as_", "aten.set_"}


def S(N: int, model: str) -> int:
    """The depth of a sum of N terms: N (serial) or ceil(log2 N) (log), 0 for N <= 1."""
    return closed.S(N, model)


def hand_layer_norm(x, w=None, b=None, eps=1e-5):
    """Layer norm over the last dimension, written out: the rule's reference."""
    mu = x.mean(-1, keepdim=True)
    xc = x - mu
    y = xc * torch.rsqrt((xc * xc).mean(-1, keepdim=True) + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


@pytest.mark.parametrize("model", ["serial", "log"])
def test_layer_norm(model):
    """Over N entries: mean (S(N) + 1), subtract, square, mean (S(N) + 1), + eps, rsqrt, multiply.

    = 2 S(N) + 7, then + 1 for the weight and + 1 for the bias; nn.LayerNorm has both:
    2 S(N) + 9. N = 8: serial 23 (25), log 13 (15). Over normalized_shape (4, 8), N = 32:
    serial 71, log 17. Exactly the depth of the same steps written out by hand.
    """
    for N in (1, 2, 8, 13):
        bare = 2 * S(N, model) + 7
        assert depth(lambda x: F.layer_norm(x, (N,)), (5, N), model=model) == bare
        assert depth(lambda x, w: F.layer_norm(x, (N,), w), (5, N), (N,), model=model) == bare + 1
        assert depth(lambda x, w, b: F.layer_norm(x, (N,), w, b), (5, N), (N,), (N,), model=model) == bare + 2
        assert depth(nn.LayerNorm(N, device="meta"), (2, 5, N), model=model) == bare + 2
        assert depth(hand_layer_norm, (5, N), model=model) == bare
        assert depth(hand_layer_norm, (5, N), (N,), (N,), model=model) == bare + 2
    assert depth(lambda x: F.layer_norm(x, (4, 8)), (3, 4, 8), model=model) == 2 * S(32, model) + 7
    assert parallel_time(lambda x: F.layer_norm(x, (8,)), (5, 8)).work == 5 * 40 + 4 * 5


@pytest.mark.parametrize("model", ["serial", "log"])
def test_rms_norm(model):
    """F.rms_norm reaches the profiler as square (1), mean (S(N) + 1), + eps (1), rsqrt (1), multiply (1).

    = S(N) + 5, + 1 with a weight. N = 8: serial 13 (14), log 8 (9). The GPU kernel
    aten._fused_rms_norm has its own rule with the same count.
    """
    for N in (1, 8, 13):
        bare = S(N, model) + 5
        assert depth(lambda x: F.rms_norm(x, (N,)), (5, N), model=model) == bare
        assert depth(lambda x, w: F.rms_norm(x, (N,), w), (5, N), (N,), model=model) == bare + 1
        assert depth(nn.RMSNorm(N, device="meta"), (2, 5, N), model=model) == bare + 1
        assert depth(lambda x: aten._fused_rms_norm(x, [N], None, 1e-6)[0], (5, N), model=model) == bare
        assert depth(lambda x, w: aten._fused_rms_norm(x, [N], w, 1e-6)[0], (5, N), (N,), model=model) == bare + 1


ACTIVATIONS = [
    ("gelu", F.gelu), ("gelu tanh", lambda x: F.gelu(x, approximate="tanh")), ("relu", F.relu),
    ("silu", F.silu), ("tanh", torch.tanh), ("sigmoid", torch.sigmoid),
    ("relu_", lambda x: F.relu(x, inplace=True)), ("silu_", lambda x: F.silu(x, inplace=True)),
    ("nn.GELU", nn.GELU()), ("nn.SiLU", nn.SiLU()), ("nn.ReLU", nn.ReLU()), ("nn.Tanh", nn.Tanh()),
]


@pytest.mark.parametrize("name, act", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activations_are_one_elementwise_step(name, act):
    """An activation torch runs as one kernel is one step: depth 1 in every model."""
    for model in ("serial", "log"):
        assert depth(act, (5, 8), model=model) == 1


def test_dropout_in_eval_and_training_mode():
    """Eval: no op at all, depth 0. Training: mask (bernoulli_, free), mask / (1 - p) (1), x * mask (1).

    So dropout(y) has depth max(depth(y), 1) + 1: on y = exp(x) (depth 1) it adds 1
    (total 2), and on an input (depth 0) it gives 2 as well. Work in training: 2 numel.
    """
    for model in ("serial", "log"):
        for p in (0.1, 0.5):
            assert depth(lambda x: F.dropout(x.exp(), p, training=False), (5, 8), model=model) == 1
            assert depth(lambda x: F.dropout(x.exp(), p, training=True), (5, 8), model=model) == 2
            assert depth(lambda x: F.dropout(x, p, training=True), (5, 8), model=model) == 2
            drop = nn.Dropout(p)
            assert depth(lambda x: drop(x.exp()), (5, 8), model=model) == 2
            drop.eval()
            assert depth(lambda x: drop(x.exp()), (5, 8), model=model) == 1
    assert parallel_time(lambda x: F.dropout(x, 0.1, training=True), (5, 8)).work == 2 * 40
    assert ops_seen(lambda x: F.dropout(x, 0.1, training=False), (5, 8)) == set()


def feed_forward(J: int) -> nn.Module:
    """Linear(J, 4J) -> GELU -> Linear(4J, J), on the meta device."""
    return nn.Sequential(nn.Linear(J, 4 * J, device="meta"), nn.GELU(), nn.Linear(4 * J, J, device="meta"))


@pytest.mark.parametrize("model", ["serial", "log"])
def test_feed_forward_block_with_residual(model):
    """x + FFN(x): addmm over J (2 + S(J)), GELU (1), addmm over 4J (2 + S(4J)), residual add (1).

    = 6 + S(J) + S(4J): serial 6 + 5J; log 6 + ceil(log2 J) + ceil(log2 J) + 2.
    T and the batch do not appear (every position runs side by side).
    """
    for J, shape in itertools.product([1, 8, 12], [(7,), (5, 7), (2, 5, 7)]):
        ffn = feed_forward(J)
        expected = 6 + S(J, model) + S(4 * J, model)
        assert depth(lambda x: x + ffn(x), (*shape[:-1], J), model=model) == expected
        if J > 1:
            assert expected == (6 + 5 * J if model == "serial" else 8 + 2 * math.ceil(math.log2(J)))

    def functional(x, W1, b1, W2, b2):
        return x + F.linear(F.gelu(F.linear(x, W1, b1)), W2, b2)
    J = 8
    assert depth(functional, (5, J), (4 * J, J), (4 * J,), (J, 4 * J), (J,), model=model) == \
        6 + S(J, model) + S(4 * J, model)


class PreNormBlock(nn.Module):
    """x + MHA(LN(x)), then + FFN(LN(.)): the pre-norm Transformer block, built from torch.nn."""

    def __init__(self, J: int, H: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(J, device="meta"), nn.LayerNorm(J, device="meta")
        self.attn = nn.MultiheadAttention(J, H, batch_first=True, device="meta")
        self.ffn = feed_forward(J)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x[B, T, J] -> [B, T, J]."""
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.ffn(self.ln2(x))


def pre_norm_block_depth(T: int, J: int, H: int, model: str) -> int:
    """34 + 7 S(J) + S(4J) + S(J/H) + 2 S(T); see the test below."""
    return 34 + 7 * S(J, model) + S(4 * J, model) + S(J // H, model) + 2 * S(T, model)


@pytest.mark.parametrize("model", ["serial", "log"])
def test_pre_norm_transformer_block(model):
    """LN, self-attention, residual, LN, FFN, residual; J = H d.

        LN1 (nn.LayerNorm)                    2 S(J) + 9
        attention: in-projection addmm        2 + S(J)
                   scale q and k (side by side) 1
                   scores bmm over d           1 + S(d)
                   _safe_softmax over T        S(T) + 2
                   weighted sum bmm over T     1 + S(T)
                   out-projection addmm        2 + S(J)
        residual add                          1
        LN2                                   2 S(J) + 9
        FFN (Linear, GELU, Linear)            5 + S(J) + S(4J)
        residual add                          1
        total                                 34 + 7 S(J) + S(4J) + S(d) + 2 S(T)

    nn.TransformerEncoderLayer(norm_first=True, activation="gelu") in eval mode is the
    same block; in training mode its four dropouts (attention weights, after attention,
    inside the FFN, after the FFN) each add 1: + 4.
    """
    for T, J, H in [(5, 8, 2), (16, 12, 3), (1, 16, 4), (33, 8, 8)]:
        expected = pre_norm_block_depth(T, J, H, model)
        assert depth(PreNormBlock(J, H), (2, T, J), model=model) == expected, (T, J, H)
        layer = nn.TransformerEncoderLayer(J, H, 4 * J, dropout=0.1, activation="gelu", norm_first=True,
                                           batch_first=True, device="meta")
        assert depth(layer.eval(), (2, T, J), model=model) == expected
        assert depth(layer.train(), (2, T, J), model=model) == expected + 4
    assert pre_norm_block_depth(5, 8, 2, "serial") == 34 + 56 + 32 + 4 + 10 == 136
    assert pre_norm_block_depth(5, 8, 2, "log") == 34 + 21 + 5 + 2 + 6 == 68


# ---------------------------------------------------------------------------- no answers in the kit (issue 12)

def test_kit_states_no_graded_answer():
    """attnlab.profiler's text (docstrings, examples, comments) gives none of the book's closed forms."""
    source = Path(profiler.__file__).read_text()
    text = "".join(source.split())  # formulas, whatever the spacing
    for answer in ["J+K+T", "logJ+logK", "logT+logK", "logK+logT", "K+logT", "J+logT", "T+L", "L+T",
                   "L(J", "L*(", "logX+logY", "Theta(L", "Θ(L", "O(L", "Θ(T", "O(T", "Theta(T"]:
        assert answer not in text, answer
    for word in ["transformer", "RNN", "recurrent", "spatial", "CNN", "attention"]:
        assert not re.search(rf"\b{word}", source, re.IGNORECASE), word
