"""The parallel-time profiler: the critical-path depth of ordinary torch code.

Run any function on *meta* tensors (shapes only: no memory, any size) and get the
length of its longest chain of dependent scalar operations (the **depth** D, the
running time on unboundedly many processors) and the total number of scalar
operations (the **work** W), under a stated cost model for sums::

    >>> import torch
    >>> from attnlab.profiler import parallel_time
    >>> parallel_time(lambda x: x.sum(), (1024,), model="serial")
    ParallelTime(depth=1024, work=1024, model='serial')
    >>> parallel_time(lambda x: x.sum(), (1024,), model="log").depth
    10
    >>> parallel_time(lambda x, W: x @ W, (8,), (8, 5), model="serial")  # vector times matrix
    ParallelTime(depth=9, work=80, model='serial')
    >>> mlp = lambda x, W1, W2: torch.relu(x @ W1) @ W2
    >>> parallel_time(mlp, (16,), (16, 64), (64, 10), model="log").depth  # (1 + 4) + 1 + (1 + 6)
    13

Example arguments may be tensors (converted to meta tensors of the same shape and
dtype), ``torch.Size`` or tuples of ints ("a float32 tensor of this shape"), or lists,
tuples and dicts nesting these; ints, floats, strings and lists of ints pass through.
Keyword arguments of ``fn`` are converted the same way (``model`` and ``rules`` are
the profiler's own). A tuple of ints *is* a shape: pass a tuple meant literally
through a lambda. Inside the run, factory calls such as ``torch.zeros(N, M)`` are
moved to the meta device too, so nothing is ever allocated. Modules work too (an op
copies the parameters it meets to meta); build a large one with ``device="meta"``
(``torch.nn.Linear(16, 64, device="meta")``) so that its parameters are never allocated.

How depth is measured
---------------------
Depth is carried by the data. Every tensor holds a depth: 0 for the inputs, for
parameters and for anything created inside the run (zeros, ones, arange, ...). Each
operation gives its outputs ``depth = max(depth of its tensor inputs) + cost(op)``.
Views (``x[1:3]``, ``x.T``, ``view``, ``permute``, ``unsqueeze``, ``expand``, ...)
share the depth of their base, and an in-place operation (``add_``, ``copy_``,
``x[i] = v``) raises the depth of the tensor it writes (and of every view of it).
A Python loop whose every step reads the previous step's result therefore
accumulates depth step after step, while a hand-written pairwise tree sum has
logarithmic depth even under the serial model. The depth of the result is the
largest depth among the tensors ``fn`` returns.

Depth is kept per tensor, not per element: a tensor's depth is the depth of its
deepest element. Stacking results into one tensor and slicing them out again gives
every slice the depth of the deepest one.

The cost model: ``S(N)``, the depth of a sum of N terms
-------------------------------------------------------
- ``"serial"``: ``S(N) = N`` (one addition after another);
- ``"log"``: ``S(N) = ceil(log2 N)`` (a balanced tree of additions);
- a callable ``N -> cost`` of your own (e.g. ``lambda N: math.sqrt(N)``).

In every model a "sum" of a single term is that term: ``S(1) = 0`` (and ``S(0) = 0``).
So a contraction over a dimension of size 1 costs exactly what the elementwise
multiply that ``torch.einsum`` turns it into costs.

The cost rules (depth, and work = number of scalar operations)
--------------------------------------------------------------
Every rule is registered with :func:`register_cost` in ``COST_RULES``; an op with
none raises :class:`UnknownOpError`.

- **Elementwise** ops (every op torch tags ``torch.Tag.pointwise``: ``add``, ``mul``,
  ``div``, ``exp``, ``log``, ``tanh``, ``sigmoid``, ``relu``, ``gelu``, ``silu``,
  ``where``, ``masked_fill``, comparisons, ...; their in-place forms ``add_``,
  ``relu_``, ``masked_fill_``, ...; plus ``tril``, ``triu``, ``native_dropout``,
  ``bernoulli``): depth 1, work = output numel. An activation torch runs as one
  kernel (``gelu``, ``silu``, ``sigmoid``, a fused ``addcmul``) is one step, though
  written out by hand it would take several.
- **Free** ops, depth 0, work 0: views (``view``, ``reshape``, ``permute``, ``t``,
  ``transpose``, ``expand``, ``unsqueeze``, ``squeeze``, ``select``, ``slice``,
  ``unfold``, ``split``, ``unbind``, ``detach``, ...), in-place views (``squeeze_``,
  ``unsqueeze_``, ``t_``, ``transpose_``/``swapdims_``, ``as_strided_``, ``detach_``:
  they relabel a tensor's shape), copies (``clone``, ``contiguous``,
  ``_to_copy``/``.to``, ``copy_``, ``_unsafe_view``), concatenation (``cat``,
  ``stack``), padding, ``flip``, ``roll``, ``repeat``, indexing and gathering
  (``x[idx]``, ``x[idx] = v``, ``index_select``, ``gather``, ``embedding``,
  ``scatter`` without ``reduce``), and filling (``fill_``, ``zero_``, and the random
  fills ``uniform_``, ``bernoulli_``, ...). ``clone`` is tagged pointwise by torch but
  is a copy: the registry wins over the tag.
- **Creation** (``zeros``, ``ones``, ``empty``, ``full``, ``arange``, ``randn``, ...,
  ``zeros_like``, ``new_zeros``, ...): depth 0 whatever the input, work 0.
- **Contractions**: ``mm``, ``bmm``, ``matmul`` (which reaches the profiler as ``mm``,
  ``bmm``, ``mv`` or ``dot``, with views around them: a vector times a matrix is
  ``unsqueeze``, ``mm``, ``squeeze_``), ``einsum`` (views and ``bmm``),
  ``F.linear``, ``dot``, ``mv``, ``convolution``: one layer of multiplies, then the
  sum over the reduced size R: depth ``1 + S(R)``, work ``2 * numel(out) * R`` (one
  multiply and one add per term). R is the inner dimension (``k`` of
  ``[n,k] @ [k,m]``); for ``convolution`` it is ``C_in / groups * prod(kernel)``.
  The fused forms ``addmm`` (``F.linear`` with a bias), ``baddbmm``, ``addmv``,
  ``addbmm`` (``beta * c + alpha * (a @ b)``, the scaled add one fused step) and a
  ``convolution`` with a bias add one elementwise step: depth ``2 + S(R)``, work
  ``+ numel(out)``, so ``F.linear(x, W, b)`` costs the same as ``x @ W.T + b``.
  ``torch.outer`` is a broadcast multiply: depth 1.
- **Reductions** over N = the number of terms reduced into each output: ``sum``,
  ``amax``, ``amin``, ``max``/``min`` (with or without ``dim``), ``prod``, ``argmax``,
  ``argmin``, ``any``, ``all``: depth ``S(N)``; ``mean``: ``S(N) + 1`` (the divide);
  ``logsumexp``: ``S(N) + 2`` (exp, sum, log); ``var``: ``2 S(N) + 4`` (mean,
  subtract, square, sum, divide); ``std``: ``2 S(N) + 5`` (and a square root); the
  prefix sums ``cumsum``, ``cumprod``: ``S(N)`` (a parallel scan has the depth of a
  tree sum). Work: input numel per pass over the input (one add per term; ``var``
  and ``std`` make two), plus one per output for a divide.
- **Softmax** over N (``torch.softmax`` reaches the profiler as ``_softmax`` or
  ``_safe_softmax``): ``exp`` (1) + sum over N + divide (1) = ``S(N) + 2``, work
  ``3 * numel``; torch's internal max pass (for numerical safety) is not counted.
  ``log_softmax`` (``_log_softmax``): exp, sum, log, subtract = ``S(N) + 3``, work
  ``3 * numel`` plus one log per row.
- **Layer norm** over the last N = prod(normalized_shape) entries
  (``F.layer_norm``, ``nn.LayerNorm``: ``native_layer_norm``), written like softmax:
  mean (``S(N) + 1``) + variance (subtract, square, sum, divide: ``S(N) + 3``) +
  normalise (add eps, ``rsqrt``, multiply: 3) = ``2 S(N) + 7``, the same as ``var``
  followed by three elementwise steps; a weight and a bias add 1 each (``2 S(N) + 9``
  for ``nn.LayerNorm``). Work ``5 * numel + 4 * rows`` (+ numel each for weight and
  bias). **RMS norm** (``F.rms_norm``, ``nn.RMSNorm``) reaches the profiler as its
  steps (square, ``mean``, add eps, ``rsqrt``, multiply, times the weight):
  ``S(N) + 5``, or ``S(N) + 6`` with a weight; ``_fused_rms_norm`` (GPU) costs the same.
- **Dropout**: in eval mode (``model.eval()``, ``training=False``, ``p = 0``) torch
  runs no op: depth 0. In training mode torch draws a random mask (``bernoulli_``:
  free), scales it by ``1 / (1 - p)`` (1 step, off the data's path) and multiplies:
  depth ``max(depth(x), 1) + 1``, i.e. one step on any computed ``x``; work
  ``2 * numel``.
- Anything else (``sort``, ``linalg.svd``, ``scatter_add``, ``group_norm``, ...)
  raises :class:`UnknownOpError` naming the op: the profiler never guesses. Give a
  rule of your own for one run with ``parallel_time(fn, ..., rules={op: rule})`` or
  ``DepthMode(rules=...)``; a rule maps ``(args, kwargs, out, S)`` to
  ``(depth cost, work)``. Reading a value (``.item()``, ``if x > 0:``) raises
  :class:`DataDependentError`: a meta tensor has a shape but no values.

The first call in a process also pays for code torch loads lazily for its meta
kernels: ``sympy`` (about 0.5 s, for their shape checks) and, once the function runs an
op whose meta kernel torch writes in Python behind ``torch._disable_dynamo`` (most
elementwise ops, ``cat``, ``mean``, ``addmm``, ``native_layer_norm``, ...),
``torch._dynamo`` (1 to 2 s more). Later calls take milliseconds per layer.

Brent's theorem turns (W, D) into a running time on C processors (the book's letter for them; P is a
probability): ``time_C <= W / C + D`` (:meth:`ParallelTime.brent`).

This module relies on torch's private dispatch API (``TorchDispatchMode``, op tags,
``torch.utils._pytree``); its op set is tested against the pinned torch (2.13.0).
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch._ops import OpOverload, OpOverloadPacket
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import arg_tree_leaves, tree_leaves, tree_map, tree_map_only
from torch.utils.weak import WeakTensorKeyDictionary

__all__ = [
    "COST_RULES", "DataDependentError", "DepthMode", "ParallelTime", "UnknownOpError",
    "depth_of", "parallel_time", "register_cost", "sum_cost",
]

aten = torch.ops.aten
Cost = int | float
Model = str | Callable[[int], Cost]
Op = OpOverloadPacket | OpOverload
# A rule maps (args, kwargs, out, S) to (depth cost, work) of one op.
Rule = Callable[[tuple, dict, Any, Callable[[int], Cost]], tuple[Cost, int]]
META = torch.device("meta")


class UnknownOpError(RuntimeError):
    """The profiler has no cost rule for this aten op (it never guesses one)."""


class DataDependentError(RuntimeError):
    """The code read a tensor's value (``.item()``, ``if``): meta tensors have none."""


# ---------------------------------------------------------------------------- results

@dataclass(frozen=True)
class ParallelTime:
    """Depth D (parallel time, critical path), work W (scalar ops) and the cost model."""

    depth: int | float
    work: int
    model: str

    def brent(self, C: int) -> float:
        """Brent's bound on the time with C processors: W / C + D."""
        return self.work / C + self.depth

    def __str__(self) -> str:
        return (f"depth {self.depth} under the {self.model!r} cost model, "
                f"work {self.work:.4g} scalar ops (time on C processors <= work/C + depth)")


# ---------------------------------------------------------------------------- cost model

def _serial(N: int) -> int:
    """S(N) = N: add the terms one after another."""
    return N


def _log(N: int) -> int:
    """S(N) = ceil(log2 N): a balanced tree of additions."""
    return (N - 1).bit_length()


_MODELS: dict[str, Callable[[int], Cost]] = {"serial": _serial, "log": _log}


def sum_cost(model: Model) -> Callable[[int], Cost]:
    """The depth S(N) of a sum of N terms under `model`; S(N) = 0 for N <= 1 in every model."""
    if callable(model):
        base = model
    elif model in _MODELS:
        base = _MODELS[model]
    else:
        raise ValueError(f"model must be 'serial', 'log' or a callable N -> cost, not {model!r}")

    def S(N: int) -> Cost:
        return 0 if N <= 1 else base(N)
    return S


def _model_name(model: Model) -> str:
    """'serial', 'log', or the name of a custom callable ('custom' for a lambda)."""
    if isinstance(model, str):
        return model
    name = getattr(model, "__name__", "custom")
    return "custom" if name == "<lambda>" else name


# ---------------------------------------------------------------------------- registry

COST_RULES: dict[Op, Rule] = {}
_FRESH: set[Op] = set()  # creation from another tensor's shape: depth 0 whatever its depth


def _how_to_add_a_rule(op: Op) -> str:
    """The one way to give the profiler a rule for `op` (names the op as the student types it)."""
    packet = op.overloadpacket if isinstance(op, OpOverload) else op
    return ("Give it a rule of your own for this run: parallel_time(fn, ..., "
            f"rules={{torch.ops.{packet}: rule}}) (or DepthMode(rules=...)), where "
            "rule(args, kwargs, out, S) returns (depth cost, work) and S(N) is the depth "
            "of a sum of N terms.")


def _unknown(op: Op, what: str = "") -> UnknownOpError:
    """The error for an op (or one use of it, `what`) that has no cost rule."""
    return UnknownOpError(f"the parallel-time profiler has no cost rule for {op}{what} yet, "
                          f"and will not guess one. {_how_to_add_a_rule(op)}")


class _NoRuleForThisUse(Exception):
    """Raised by a rule for a use of its op it does not cover; the mode names the op."""


def _check_key(target: Any) -> None:
    """A rule's key is an aten op: torch.ops.aten.mm (packet) or torch.ops.aten.mm.default."""
    if not isinstance(target, (OpOverloadPacket, OpOverload)):
        raise TypeError(f"a cost rule is keyed by an op such as torch.ops.aten.sort or "
                        f"torch.ops.aten.sort.default, not {target!r}")


def register_cost(*targets: Op, fresh: bool = False) -> Callable[[Rule], Rule]:
    """Decorator: `rule` is the cost of each target op (packet or overload); refuses duplicates.

    ``fresh=True`` marks creation ops: their outputs start at depth `cost`, whatever the
    depth of their tensor arguments (``zeros_like(x)`` reads only x's shape). An
    overload and its packet may not both have a rule (that would be two rules for one op).
    """
    for target in targets:
        _check_key(target)

    def register(rule: Rule) -> Rule:
        for target in targets:
            clash = _registered_rule_for(target)
            if clash is not None:
                raise ValueError(f"duplicate cost rule for {target}: {clash[0]} already has "
                                 f"the rule {clash[1].__name__}")
            COST_RULES[target] = rule
            if fresh:
                _FRESH.add(target)
        return rule
    return register


def _registered_rule_for(target: Op) -> tuple[Op, Rule] | None:
    """The (key, rule) already covering `target`: itself, its packet, or one of its overloads."""
    if isinstance(target, OpOverload):
        keys = [target, target.overloadpacket]
    else:
        keys = [target, *(k for k in COST_RULES if isinstance(k, OpOverload) and k.overloadpacket is target)]
    return next(((k, COST_RULES[k]) for k in keys if k in COST_RULES), None)


def _packets(names: str) -> list[OpOverloadPacket]:
    """torch.ops.aten packets from a whitespace-separated list of names."""
    return [getattr(aten, name) for name in names.split()]


# ---------------------------------------------------------------------------- rules

def _numel(out: Any) -> int:
    """numel of the first tensor in `out`."""
    return next((t.numel() for t in tree_leaves(out) if isinstance(t, torch.Tensor)), 0)


@register_cost(*_packets("""
    clone _to_copy copy copy_ lift_fresh lift_fresh_copy _unsafe_view alias contiguous
    cat stack constant_pad_nd flip roll repeat
    index _unsafe_index index_select gather embedding
    select_scatter slice_scatter diagonal_scatter masked_scatter
    zeros ones empty empty_strided full arange scalar_tensor linspace eye rand randn randint
    randperm tril_indices triu_indices
    fill fill_ zero_ normal_ uniform_ random_ bernoulli_ exponential_
    squeeze_ unsqueeze_ t_ transpose_ as_strided_ detach_
"""))
@register_cost(aten.scatter.src, aten.scatter.value, aten.scatter_.src, aten.scatter_.value)
def _free(args: tuple, kwargs: dict, out: Any, S: Callable) -> tuple[Cost, int]:
    """Copies, concatenation, indexing, creation, filling, in-place views: depth 0, work 0."""
    return 0, 0


@register_cost(*_packets("""
    zeros_like ones_like empty_like full_like rand_like randn_like randint_like
    new_zeros new_ones new_empty new_full new_empty_strided
"""), fresh=True)
def _created(args: tuple, kwargs: dict, out: Any, S: Callable) -> tuple[Cost, int]:
    """x-shaped creation (zeros_like(x), x.new_zeros(n)): depth 0 whatever x's depth, work 0."""
    return 0, 0


@register_cost(aten.tril, aten.triu, aten.native_dropout, aten.bernoulli)
def _elementwise(args: tuple, kwargs: dict, out: Any, S: Callable) -> tuple[Cost, int]:
    """One parallel step over every output element."""
    return 1, _numel(out)


def _contraction(R: int, out: Any, S: Callable, fused_add: bool = False) -> tuple[Cost, int]:
    """Multiply, then sum R terms (then add): depth 1 + S(R) (+ 1), work 2 numel(out) R (+ numel(out))."""
    n = _numel(out)
    return 1 + S(R) + int(fused_add), 2 * n * R + (n if fused_add else 0)


@register_cost(aten.mm, aten.bmm, aten.mv, aten.dot, aten.vdot)
def _product(args: tuple, kwargs: dict, out: Any, S: Callable) -> tuple[Cost, int]:
    """a[..., R] times b[R, ...] (mm, bmm, mv, dot): 1 + S(R)."""
    return _contraction(args[0].shape[-1], out, S)


@register_cost(aten.addmm, aten.baddbmm, aten.addmv)
def _product_plus(args: tuple, kwargs: dict, out: Any, S: Callable) -> tuple[Cost, int]:
    """beta c + alpha (a[..., R] @ b[R, ...]): 2 + S(R), the scaled add one fused step."""
    return _contraction(args[1].shape[-1], out, S, fused_add=True)


@register_cost(aten.addbmm)
def _batch_product_plus(args: tuple, kwargs: dict, out: Any, S: Callable) -> tuple[Cost, int]:
    """beta c + alpha sum_b (a[b, n, R] @ b[b, R, m]): the sum runs over b and R, 2 + S(B R)."""
    a = args[1]
    return _contraction(a.shape[0] * a.shape[2], out, S, fused_add=True)


@register_cost(aten.convolution)
def _convolution(args: tuple, kwargs: dict, out: Any, S: Callable) -> tuple[Cost, int]:
    """convolution(x, w[C_out, C_in / groups, *kernel], bias): 1 + S(prod(w.shape[1:])) (+ 1)."""
    weight, bias, transposed = args[1], args[2], args[6]
    if transposed:
        raise _NoRuleForThisUse(" with transposed=True (a transposed convolution)")
    return _contraction(math.prod(weight.shape[1:]), out, S, fused_add=bias is not None)


def _dim(args: tuple, kwargs: dict) -> Any:
    """The `dim` argument of a reduction (None or [] when it reduces over everything)."""
    return args[1] if len(args) > 1 else kwargs.get("dim")


def _terms(x: torch.Tensor, dim: Any) -> int:
    """N: how many entries of x are reduced into each output when reducing over `dim`."""
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return x.numel()
    dims = [dim] if isinstance(dim, int) else list(dim)
    return math.prod(x.shape[d] if x.dim() else 1 for d in dims)


_SUMS = [aten.sum.default, aten.sum.dim_IntList, aten.amax.default, aten.amin.default,
         aten.max.default, aten.max.dim, aten.min.default, aten.min.dim, aten.prod.default,
         aten.prod.dim_int, aten.argmax.default, aten.argmin.default, aten.any.default,
         aten.any.dim, aten.any.dims, aten.all.default, aten.all.dim, aten.all.dims,
         aten.cumsum.default, aten.cumprod.default]


@register_cost(*_SUMS)
def _sum(args: tuple, kwargs: dict, out: Any, S: Callable) -> tuple[Cost, int]:
    """Sum (max, prod, any, prefix sum, ...) of N terms per output: S(N), work numel(x)."""
    x = args[0]
    return S(_terms(x, _dim(args, kwargs))), x.numel()


@register_cost(aten.mean.default, aten.mean.dim)
def _mean(args: tuple, kwargs: dict, out: Any, S: Callable) -> tuple[Cost, int]:
    """Sum of N terms, divide: S(N) + 1."""
    x = args[0]
    return S(_terms(x, _dim(args, kwargs))) + 1, x.numel() + _numel(out)


@register_cost(aten.logsumexp.default)
def _logsumexp(args: tuple, kwargs: dict, out: Any, S: Callable) -> tuple[Cost, int]:
    """exp, sum of N terms, log: S(N) + 2."""
    x = args[0]
    return S(_terms(x, _dim(args, kwargs))) + 2, x.numel()


@register_cost(aten.var.correction)
def _var(args: tuple, kwargs: dict, out: Any, S: Callable) -> tuple[Cost, int]:
    """mean (S(N) + 1), subtract, square, sum, divide: 2 S(N) + 4."""
    x = args[0]
    return 2 * S(_terms(x, _dim(args, kwargs))) + 4, 2 * x.numel() + _numel(out)


@register_cost(aten.std.correction)
def _std(args: tuple, kwargs: dict, out: Any, S: Callable) -> tuple[Cost, int]:
    """var (2 S(N) + 4), square root: 2 S(N) + 5."""
    x = args[0]
    return 2 * S(_terms(x, _dim(args, kwargs))) + 5, 2 * x.numel() + _numel(out)


def _rows(x: torch.Tensor, N: int) -> int:
    """How many groups of N entries x holds (0 when N = 0)."""
    return x.numel() // N if N else 0


@register_cost(aten._softmax, aten._safe_softmax)
def _softmax(args: tuple, kwargs: dict, out: Any, S: Callable) -> tuple[Cost, int]:
    """softmax(x, dim) over N: exp (1) + sum over N + divide (1) = S(N) + 2."""
    x, dim = args[0], args[1]
    N = x.shape[dim] if x.dim() else 1
    return 1 + S(N) + 1, 3 * x.numel()


@register_cost(aten._log_softmax)
def _log_softmax(args: tuple, kwargs: dict, out: Any, S: Callable) -> tuple[Cost, int]:
    """log_softmax(x, dim) over N: exp (1) + sum over N + log (1) + subtract (1) = S(N) + 3."""
    x, dim = args[0], args[1]
    N = x.shape[dim] if x.dim() else 1
    return 1 + S(N) + 1 + 1, 3 * x.numel() + _rows(x, N)


@register_cost(aten.native_layer_norm)
def _layer_norm(args: tuple, kwargs: dict, out: Any, S: Callable) -> tuple[Cost, int]:
    """layer_norm(x, shape, w, b) over N = prod(shape): mean, variance, normalise = 2 S(N) + 7 (+ w, + b)."""
    x, shape, weight, bias = args[0], args[1], args[2], args[3]
    N = math.prod(shape)
    mean = S(N) + 1                  # sum, divide by N
    variance = 1 + 1 + S(N) + 1      # subtract the mean, square, sum, divide by N
    normalise = 1 + 1 + 1            # add eps, rsqrt, multiply
    affine = (weight is not None) + (bias is not None)  # times w, plus b
    return mean + variance + normalise + affine, (5 + affine) * x.numel() + 4 * _rows(x, N)


@register_cost(aten._fused_rms_norm)
def _rms_norm(args: tuple, kwargs: dict, out: Any, S: Callable) -> tuple[Cost, int]:
    """_fused_rms_norm(x, shape, w, eps) over N = prod(shape): S(N) + 5 (+ w), as its steps cost."""
    x, shape, weight = args[0], args[1], args[2]
    N = math.prod(shape)
    affine = int(weight is not None)
    return 1 + (S(N) + 1) + 3 + affine, (3 + affine) * x.numel() + 3 * _rows(x, N)


@register_cost(aten.index_put, aten.index_put_, aten._index_put_impl_)
def _index_put(args: tuple, kwargs: dict, out: Any, S: Callable) -> tuple[Cost, int]:
    """x[idx] = v is free; index_put_(..., accumulate=True) is a scatter-add: no rule."""
    accumulate = args[3] if len(args) > 3 else kwargs.get("accumulate", False)
    if accumulate:
        raise _NoRuleForThisUse(" with accumulate=True (a scatter-add: repeated indices add up)")
    return 0, 0


def _data_dependent() -> DataDependentError:
    """For .item(), bool(x), int(x): the values of meta tensors do not exist."""
    return DataDependentError(
        "the code reads a tensor's value (aten._local_scalar_dense: .item(), bool(x), "
        "`if x > 0:`); the profiler runs on meta tensors, which have shapes but no "
        "values, so the depth may not depend on the data")


def _in_place_pointwise(func: OpOverload) -> bool:
    """x.op_() whose out-of-place x.op() is tagged pointwise (masked_fill_, gelu_, abs_, ...)."""
    name = func.overloadpacket.__name__
    if not name.endswith("_") or name.startswith("_"):
        return False
    functional = getattr(getattr(aten, name[:-1], None), func._overloadname, None)
    return functional is not None and torch.Tag.pointwise in functional.tags


def _rule_for(func: OpOverload, extra: Mapping[Op, Rule]) -> Rule:
    """The rule for one op: custom, then registered (overload, then packet), then tags, then views."""
    if func.overloadpacket is aten._local_scalar_dense:
        raise _data_dependent()
    for table in (extra, COST_RULES):
        for key in (func, func.overloadpacket):
            if key in table:
                return table[key]
    if torch.Tag.pointwise in func.tags or _in_place_pointwise(func):
        return _elementwise
    if func.is_view:
        return _free
    raise _unknown(func)


# ---------------------------------------------------------------------------- the mode

class _Cell:
    """The depth shared by a tensor and all its views."""

    __slots__ = ("depth",)

    def __init__(self, depth: Cost) -> None:
        self.depth = depth


_ACTIVE: list[DepthMode] = []


def _tensors(x: Any) -> list[torch.Tensor]:
    """The tensors among the leaves of a nest of lists, tuples and dicts."""
    return [t for t in tree_leaves(x) if isinstance(t, torch.Tensor)]


class DepthMode(TorchDispatchMode):
    """Context manager measuring depth and work of the torch ops run inside it.

    Like ``torch.utils.flop_counter.FlopCounterMode``::

        with DepthMode(model="log") as mode:
            y = f(x)
        mode.depth_of(y), mode.work, mode.result(y)

    Tensors made before entering (inputs, parameters) have depth 0. With
    ``meta=True`` (what :func:`parallel_time` uses) every tensor an op meets is moved
    to the meta device and factories create meta tensors, so nothing is allocated;
    with ``meta=False`` the ops really run. ``rules`` adds cost rules for this mode
    (and wins over ``COST_RULES``), keyed by ``torch.ops.aten.<op>`` (packet or
    overload); a rule maps ``(args, kwargs, out, S)`` to ``(depth cost, work)`` where
    ``S`` is the model's sum cost. ``op_counts`` counts the ops seen, by name.
    """

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """Leave __torch_dispatch__ unwrapped: torch's wrapper imports torch._dynamo (1-2 s) on first use.

        TorchDispatchMode wraps a subclass's ``__torch_dispatch__`` in
        ``torch._disable_dynamo``, whose first call imports ``torch._dynamo``. The
        wrapper only matters while dynamo compiles a frame that calls into the mode;
        a ``torch.compile``-d function inside the profiled one reaches the mode with
        the same ops either way (tested).
        """
        return False

    def __init__(self, model: Model = "log", *, meta: bool = False,
                 rules: Mapping[Op, Rule] | None = None) -> None:
        super().__init__()
        self.model = _model_name(model)
        self.S = sum_cost(model)
        self.meta = meta
        self.rules = dict(rules or {})
        for key in self.rules:
            _check_key(key)
        self.work = 0
        self.max_depth: Cost = 0
        self._ops: dict[int, _OpInfo] = {}  # by id(op): aten ops are long-lived singletons
        self._cells: WeakTensorKeyDictionary = WeakTensorKeyDictionary()

    # -- depth bookkeeping
    def _cell(self, t: torch.Tensor) -> _Cell:
        """The depth cell of t (a new depth-0 cell for a tensor never seen: an input)."""
        cell = self._cells.get(t)
        if cell is None:
            cell = self._cells[t] = _Cell(0)
        return cell

    def depth_of(self, x: Any) -> Cost:
        """The largest depth among the tensors in x (a tensor or a nest of them)."""
        return max((self._cell(t).depth for t in _tensors(x)), default=0)

    def result(self, output: Any) -> ParallelTime:
        """ParallelTime of `output` (its depth) with the work of everything run so far."""
        if not _tensors(output):
            raise TypeError("the profiled function must return a tensor (or a tuple, list "
                            f"or dict of tensors), not {type(output).__name__}")
        return ParallelTime(self.depth_of(output), self.work, self.model)

    # -- the mode
    def __enter__(self) -> DepthMode:
        _ACTIVE.append(self)
        return super().__enter__()

    def __exit__(self, *exc: Any) -> None:
        _ACTIVE.remove(self)
        return super().__exit__(*exc)

    def _to_meta(self, op: _OpInfo, args: tuple, kwargs: dict,
                 inputs: list[torch.Tensor]) -> tuple[tuple, dict]:
        """Move every tensor argument to meta (keeping its depth) and factories' device to meta."""
        def move(x: torch.Tensor) -> torch.Tensor:
            if x.is_meta:
                return x
            m = x.detach().to(META)
            self._cells[m] = self._cell(x)
            return m
        if any(not t.is_meta for t in inputs):
            args, kwargs = tree_map_only(torch.Tensor, move, (args, kwargs))
        if op.takes_device:  # a factory (torch.zeros) or a move (.to, .cpu)
            kwargs = {**kwargs, "device": META}
            if "pin_memory" in kwargs:
                kwargs["pin_memory"] = False
        return args, kwargs

    def __torch_dispatch__(self, func: OpOverload, types: Any,
                           args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        op = self._ops.get(id(func))
        if op is None:
            op = self._ops[id(func)] = _OpInfo.of(func, self.rules)
        inputs = [t for t in arg_tree_leaves(*args, **kwargs) if isinstance(t, torch.Tensor)]
        if self.meta:
            args, kwargs = self._to_meta(op, args, kwargs, inputs)
            inputs = [t for t in arg_tree_leaves(*args, **kwargs) if isinstance(t, torch.Tensor)]
        out = func(*args, **kwargs)
        try:
            cost, work = op.rule(args, kwargs, out, self.S)
        except _NoRuleForThisUse as refused:
            raise _unknown(func, str(refused)) from None
        depth = cost if op.fresh else cost + max((self._cell(t).depth for t in inputs), default=0)
        self._record(op, args, kwargs, out, depth)
        self.work += work
        self.max_depth = max(self.max_depth, depth)
        op.count += 1
        return out

    def _record(self, op: _OpInfo, args: tuple, kwargs: dict, out: Any, depth: Cost) -> None:
        """Give outputs their depth: views share the base's cell, writes raise the written cell."""
        written = [v for v in (args[i] if i < len(args) else kwargs.get(name)
                               for i, name in op.written)
                   if isinstance(v, torch.Tensor)]
        for t in written:
            cell = self._cell(t)
            cell.depth = max(cell.depth, depth)
        view_of = args[0] if op.is_view and args and isinstance(args[0], torch.Tensor) else None
        for o in _tensors(out):
            if any(o is t for t in written):
                continue  # an in-place op returns the tensor it wrote
            self._cells[o] = self._cell(view_of) if view_of is not None else _Cell(depth)

    @property
    def op_counts(self) -> Counter[str]:
        """How many times each aten op ran, by name."""
        return Counter({op.name: op.count for op in self._ops.values() if op.count})


@dataclass
class _OpInfo:
    """What the mode needs to know about one aten op, worked out once."""

    name: str
    rule: Rule
    fresh: bool                             # creation from a shape: depth 0
    is_view: bool                           # outputs alias args[0]
    written: tuple[tuple[int, str], ...]    # (position, name) of arguments it writes
    takes_device: bool                      # a factory or a move: sent to meta in meta mode
    count: int = 0

    @classmethod
    def of(cls, func: OpOverload, rules: Mapping[Op, Rule]) -> _OpInfo:
        """Look the op up (raises UnknownOpError for an op with no rule)."""
        arguments = func._schema.arguments
        written = tuple((i, a.name) for i, a in enumerate(arguments)
                        if a.alias_info is not None and a.alias_info.is_write)
        takes_device = any(a.name == "device" and a.kwarg_only for a in arguments)
        keys = (func, func.overloadpacket)
        fresh = not any(k in rules for k in keys) and any(k in _FRESH for k in keys)
        return cls(str(func), _rule_for(func, rules), fresh, func.is_view, written, takes_device)


def depth_of(x: Any) -> Cost:
    """Depth of a tensor (or nest of tensors) inside the innermost active DepthMode."""
    if not _ACTIVE:
        raise RuntimeError("depth_of() needs an active DepthMode (use it inside the "
                           "profiled function or a `with DepthMode(...)` block)")
    return _ACTIVE[-1].depth_of(x)


# ---------------------------------------------------------------------------- one-liner

def _is_shape(x: Any) -> bool:
    """torch.Size, or a non-empty tuple of ints: 'a float32 tensor of this shape'."""
    if isinstance(x, torch.Size):
        return True
    return (type(x) is tuple and len(x) > 0
            and all(isinstance(i, int) and not isinstance(i, bool) for i in x))


def _example_to_meta(x: Any) -> Any:
    """One example leaf -> meta: a tensor keeps shape and dtype, a shape becomes float32."""
    if isinstance(x, torch.Tensor):
        return x if x.is_meta else x.detach().to(META)
    if _is_shape(x):
        return torch.empty(tuple(x), dtype=torch.float32, device=META)
    return x


def as_meta(x: Any) -> Any:
    """Example arguments (a nest of tensors, shapes and plain values) -> meta tensors."""
    return tree_map(_example_to_meta, x, is_leaf=_is_shape)


def parallel_time(fn: Callable[..., Any], *example_args: Any, model: Model = "log",
                  rules: Mapping[Op, Rule] | None = None, **kwargs: Any) -> ParallelTime:
    """Depth and work of fn(*example_args, **kwargs) on meta tensors, under `model` (plus `rules`)."""
    args, kw = tuple(as_meta(a) for a in example_args), as_meta(kwargs)
    with DepthMode(model, meta=True, rules=rules) as mode:
        out = fn(*args, **kw)
    return mode.result(out)
