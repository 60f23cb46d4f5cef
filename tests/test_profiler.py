"""The parallel-time profiler (attnlab.profiler) against the book's closed forms (solutions.depth)."""
from __future__ import annotations

import ast
import itertools
import math
import resource
from pathlib import Path

import pytest
import torch
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
    """The profiler uses private dispatch API: its op set is tested against torch 2.13.0 only."""
    assert torch.__version__.split("+")[0] == "2.13.0"


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
