"""The parallel-time profiler: the critical-path depth of ordinary torch code.

Run any function on *meta* tensors (shapes only: no memory, any size) and get the
length of its longest chain of dependent scalar operations (the **depth** D, the
running time on unboundedly many processors) and the total number of scalar
operations (the **work** W), under a stated cost model for sums::

    >>> from attnlab.profiler import parallel_time
    >>> parallel_time(lambda x: x.sum(), (1024,), model="serial")
    ParallelTime(depth=1024, work=1024, model='serial')
    >>> parallel_time(lambda x: x.sum(), (1024,), model="log").depth
    10

Example arguments may be tensors (converted to meta tensors of the same shape and
dtype), ``torch.Size`` or tuples of ints ("a float32 tensor of this shape"), or lists,
tuples and dicts nesting these; ints, floats, strings and lists of ints pass through.
Keyword arguments of ``fn`` are converted the same way (``model`` is the profiler's
own). A tuple of ints *is* a shape: pass a tuple meant literally through a lambda. Inside the run, factory calls such as
``torch.zeros(T, J)`` are moved to the meta device too, so nothing is ever allocated.

How depth is measured
---------------------
Depth is carried by the data. Every tensor holds a depth: 0 for the inputs, for
parameters and for anything created inside the run (zeros, ones, arange, ...). Each
operation gives its outputs ``depth = max(depth of its tensor inputs) + cost(op)``.
Views (``x[1:3]``, ``x.T``, ``view``, ``permute``, ``unsqueeze``, ``expand``, ...)
share the depth of their base, and an in-place operation (``add_``, ``copy_``,
``x[t] = h``) raises the depth of the tensor it writes (and of every view of it).
A Python loop over time (an RNN) therefore accumulates depth step after step, while a
hand-written pairwise tree sum has logarithmic depth even under the serial model.
The depth of the result is the largest depth among the tensors ``fn`` returns.

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
- **Elementwise** ops (every op torch tags ``torch.Tag.pointwise``: ``add``, ``mul``,
  ``div``, ``exp``, ``log``, ``tanh``, ``sigmoid``, ``relu``, ``where``, ``masked_fill``,
  comparisons, ...; their in-place forms ``add_``, ``masked_fill_``, ...; plus ``tril``,
  ``triu``, ``native_dropout``, ``bernoulli``): depth 1, work = output numel. A fused
  elementwise op (``addcmul``, ``sigmoid``) is one step.
- **Free** ops, depth 0, work 0: views (``view``, ``reshape``, ``permute``, ``t``,
  ``transpose``, ``expand``, ``unsqueeze``, ``squeeze``, ``select``, ``slice``,
  ``unfold``, ``split``, ``unbind``, ``detach``, ...), copies (``clone``,
  ``contiguous``, ``_to_copy``/``.to``, ``copy_``, ``_unsafe_view``), concatenation
  (``cat``, ``stack``), padding, ``flip``, ``roll``, ``repeat``, indexing and
  gathering (``x[idx]``, ``x[idx] = v``, ``index_select``, ``gather``, ``embedding``,
  ``scatter`` without ``reduce``), and filling (``fill_``, ``zero_``). ``clone`` is
  tagged pointwise by torch but is a copy: the explicit table wins over the tag.
- **Creation** (``zeros``, ``ones``, ``empty``, ``full``, ``arange``, ``randn``, ...,
  ``zeros_like``, ``new_zeros``, ...): depth 0 whatever the input, work 0.
- **Contractions**: ``mm``, ``bmm``, ``matmul`` (which reaches the profiler as ``mm``,
  ``bmm``, ``mv`` or ``dot``), ``einsum`` (which torch decomposes into views and
  ``bmm``), ``F.linear``, ``dot``, ``mv``, ``convolution``: one layer of multiplies,
  then the sum over the reduced size R: depth ``1 + S(R)``, work ``2 * numel(out) * R``
  (one multiply and one add per term). R is the inner dimension (``k`` of
  ``[n,k] @ [k,m]``); for ``convolution`` it is ``C_in / groups * prod(kernel)``.
  The fused-bias forms ``addmm`` (``F.linear``), ``baddbmm``, ``addmv``, ``addbmm``
  and a ``convolution`` with a bias add one elementwise add: depth ``2 + S(R)``,
  work ``+ numel(out)``, so ``F.linear(x, W, b)`` costs the same as ``x @ W.T + b``.
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
- Anything else (``sort``, ``linalg.svd``, ``scatter_add``, ``layer_norm``, ...) raises :class:`UnknownOpError` naming the op: the profiler never guesses.
  ``DepthMode(rules=...)`` adds rules. Reading a value (``.item()``, ``if x > 0:``)
  raises :class:`DataDependentError`: a meta tensor has a shape but no values.

The first call in a process takes a few seconds: torch imports its meta kernels
(and ``torch._dynamo``) lazily. Later calls take milliseconds per layer.

Brent's theorem turns (W, D) into a running time on P processors:
``time_P <= W / P + D`` (:meth:`ParallelTime.brent`).

This module relies on torch's private dispatch API (``TorchDispatchMode``, op tags);
its op set is tested against the pinned torch (2.13.0).
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.weak import WeakTensorKeyDictionary

__all__ = [
    "DataDependentError", "DepthMode", "ParallelTime", "UnknownOpError",
    "depth_of", "parallel_time", "sum_cost",
]

aten = torch.ops.aten
Cost = int | float
Model = str | Callable[[int], Cost]
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

    def brent(self, P: int) -> float:
        """Brent's bound on the time with P processors: W / P + D."""
        return self.work / P + self.depth

    def __str__(self) -> str:
        return (f"depth {self.depth} under the {self.model!r} cost model, "
                f"work {self.work:.4g} scalar ops (time on P processors <= work/P + depth)")


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


# ---------------------------------------------------------------------------- rules

def _numel(out: Any) -> int:
    """numel of the first tensor in `out`."""
    return next((t.numel() for t in _tensors(out)), 0)


def _bind(func: torch._ops.OpOverload, args: tuple, kwargs: dict) -> dict[str, Any]:
    """The op's arguments by schema name, defaults filled in."""
    bound: dict[str, Any] = {}
    for i, a in enumerate(func._schema.arguments):
        if i < len(args) and not a.kwarg_only:
            bound[a.name] = args[i]
        elif a.name in kwargs:
            bound[a.name] = kwargs[a.name]
        elif a.has_default_value():
            bound[a.name] = a.default_value
    return bound


def _free(args: tuple, kwargs: dict, out: Any, S: Callable) -> tuple[Cost, int]:
    """Views, copies, indexing, concatenation, creation: depth 0, work 0."""
    return 0, 0


def _elementwise(args: tuple, kwargs: dict, out: Any, S: Callable) -> tuple[Cost, int]:
    """One parallel step over every output element."""
    return 1, _numel(out)


def _contraction(reduced: Callable[[tuple], int], bias: bool = False) -> Rule:
    """Multiply, then sum R terms: depth 1 + S(R) (+1 for a bias add), work 2 numel(out) R."""
    def rule(args: tuple, kwargs: dict, out: Any, S: Callable) -> tuple[Cost, int]:
        R, n = reduced(args), _numel(out)
        return 1 + S(R) + int(bias), 2 * n * R + (n if bias else 0)
    return rule


def _conv_reduced(args: tuple) -> int:
    """Terms per output of a (non-transposed) convolution: C_in / groups * prod(kernel)."""
    weight = args[1]
    return math.prod(weight.shape[1:])


def _convolution(args: tuple, kwargs: dict, out: Any, S: Callable) -> tuple[Cost, int]:
    """convolution(input, weight, bias, stride, padding, dilation, transposed, ...)."""
    b = _bind(aten.convolution.default, args, kwargs)
    if b["transposed"]:
        raise UnknownOpError("aten.convolution.default with transposed=True: the profiler "
                             "has no cost rule for transposed convolutions")
    has_bias = b["bias"] is not None
    return _contraction(_conv_reduced, bias=has_bias)(args, kwargs, out, S)


def _reduced_numel(x: torch.Tensor, dim: Any) -> int:
    """How many entries of x are reduced into each output when reducing over `dim`."""
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return x.numel()
    dims = [dim] if isinstance(dim, int) else list(dim)
    return math.prod(x.shape[d] if x.dim() else 1 for d in dims)


def _reduction(extra: int = 0, sums: int = 1, divides: bool = False) -> Callable[[Any], Rule]:
    """Reduction over N: depth sums * S(N) + extra; work numel(in) (+ numel(out) to divide)."""
    def for_op(op: torch._ops.OpOverload) -> Rule:
        def rule(args: tuple, kwargs: dict, out: Any, S: Callable) -> tuple[Cost, int]:
            x = args[0]
            N = _reduced_numel(x, _bind(op, args, kwargs).get("dim"))
            return sums * S(N) + extra, sums * x.numel() + (_numel(out) if divides else 0)
        return rule
    return for_op


def _softmax(extra: int) -> Rule:
    """exp, sum over N, divide: depth S(N) + 2 (+1 for the log of log_softmax)."""
    def rule(args: tuple, kwargs: dict, out: Any, S: Callable) -> tuple[Cost, int]:
        x, dim = args[0], args[1]
        N = x.shape[dim] if x.dim() else 1
        rows = x.numel() // N if N else 0
        return S(N) + 2 + extra, 3 * x.numel() + extra * rows
    return rule


def _index_put(args: tuple, kwargs: dict, out: Any, S: Callable) -> tuple[Cost, int]:
    """x[idx] = v is free; x[idx] += v with repeated indices is a scatter-add: unknown."""
    if _bind(aten.index_put.default, args, kwargs)["accumulate"]:
        raise UnknownOpError("aten.index_put with accumulate=True (a scatter-add): "
                             "the profiler has no cost rule for it")
    return 0, 0


def _data_dependent() -> DataDependentError:
    """For .item(), bool(x), int(x): the values of meta tensors do not exist."""
    return DataDependentError(
        "the code reads a tensor's value (aten._local_scalar_dense: .item(), bool(x), "
        "`if x > 0:`); the profiler runs on meta tensors, which have shapes but no "
        "values, so the depth may not depend on the data")


_FREE_PACKETS = [
    # copies and dtype/device moves
    "clone", "_to_copy", "copy", "copy_", "lift_fresh", "lift_fresh_copy", "_unsafe_view",
    "alias", "contiguous",
    # concatenation, padding, rearrangement
    "cat", "stack", "constant_pad_nd", "flip", "roll", "repeat",
    # indexing, gathering, scattering (no arithmetic)
    "index", "_unsafe_index", "index_select", "gather", "embedding",
    "select_scatter", "slice_scatter", "diagonal_scatter", "masked_scatter",
    # creation (no tensor input) and filling
    "zeros", "ones", "empty", "empty_strided", "full", "arange", "scalar_tensor",
    "linspace", "eye", "rand", "randn", "randint", "randperm", "tril_indices",
    "triu_indices", "fill", "fill_", "zero_", "normal_", "uniform_", "random_",
    "bernoulli_", "exponential_",
]
# Creation from another tensor's shape only: depth 0 whatever that tensor's depth.
_FRESH_PACKETS = [
    "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like",
    "randint_like", "new_zeros", "new_ones", "new_empty", "new_full", "new_empty_strided",
]
_ELEMENTWISE_PACKETS = ["tril", "triu", "native_dropout", "bernoulli"]


def _build_rules() -> tuple[dict[Any, Rule], set[Any]]:
    """The registry: OpOverloadPacket or OpOverload -> rule; and the fresh packets."""
    rules: dict[Any, Rule] = {}
    for name in _FREE_PACKETS:
        rules[getattr(aten, name)] = _free
    for name in _ELEMENTWISE_PACKETS:
        rules[getattr(aten, name)] = _elementwise
    fresh = {getattr(aten, name) for name in _FRESH_PACKETS}
    for p in fresh:
        rules[p] = _free
    for op in [aten.scatter.src, aten.scatter.value, aten.scatter_.src, aten.scatter_.value]:
        rules[op] = _free  # scatter with reduce= is a reduction: no rule
    rules[aten.index_put] = _index_put
    rules[aten.index_put_] = _index_put
    rules[aten._index_put_impl_] = _index_put

    last = lambda a: a[0].shape[-1]        # noqa: E731  [..., R] @ [R, ...]
    after_bias = lambda a: a[1].shape[-1]  # noqa: E731  bias, [..., R], [R, ...]
    rules[aten.mm] = rules[aten.bmm] = rules[aten.dot] = rules[aten.vdot] = rules[aten.mv] = \
        _contraction(last)
    rules[aten.addmm] = rules[aten.baddbmm] = rules[aten.addmv] = _contraction(after_bias, bias=True)
    rules[aten.addbmm] = _contraction(lambda a: a[1].shape[0] * a[1].shape[2], bias=True)
    rules[aten.convolution] = _convolution

    plain = _reduction()
    for op in [aten.sum.default, aten.sum.dim_IntList, aten.amax.default, aten.amin.default,
               aten.max.default, aten.max.dim, aten.min.default, aten.min.dim,
               aten.prod.default, aten.prod.dim_int, aten.argmax.default, aten.argmin.default,
               aten.any.default, aten.any.dim, aten.any.dims, aten.all.default, aten.all.dim,
               aten.all.dims, aten.cumsum.default, aten.cumprod.default]:
        rules[op] = plain(op)
    for op in [aten.mean.default, aten.mean.dim]:
        rules[op] = _reduction(extra=1, divides=True)(op)
    rules[aten.logsumexp.default] = _reduction(extra=2)(aten.logsumexp.default)
    rules[aten.var.correction] = _reduction(extra=4, sums=2, divides=True)(aten.var.correction)
    rules[aten.std.correction] = _reduction(extra=5, sums=2, divides=True)(aten.std.correction)

    rules[aten._softmax] = rules[aten._safe_softmax] = _softmax(extra=0)
    rules[aten._log_softmax] = _softmax(extra=1)
    return rules, fresh


_RULES, _FRESH = _build_rules()


def _rule_for(func: torch._ops.OpOverload, extra: Mapping[Any, Rule]) -> Rule:
    """The rule for one op: overload, then packet, then the pointwise tag, then views."""
    if func.overloadpacket is aten._local_scalar_dense:
        raise _data_dependent()
    for table in (extra, _RULES):
        for key in (func, func.overloadpacket):
            if key in table:
                return table[key]
    if torch.Tag.pointwise in func.tags or _in_place_pointwise(func):
        return _elementwise
    if func.is_view:
        return _free
    raise UnknownOpError(
        f"the parallel-time profiler has no cost rule for the aten op {func} and will "
        "not guess one. Write the computation with elementwise ops, sums, matmul/einsum "
        "and softmax, or give DepthMode(rules={...}) a rule for it.")


def _in_place_pointwise(func: torch._ops.OpOverload) -> bool:
    """x.op_() whose out-of-place x.op() is tagged pointwise (masked_fill_, gt_, abs_, ...)."""
    name = func.overloadpacket.__name__
    if not name.endswith("_") or name.startswith("_"):
        return False
    functional = getattr(getattr(aten, name[:-1], None), func._overloadname, None)
    return functional is not None and torch.Tag.pointwise in functional.tags


# ---------------------------------------------------------------------------- the mode

class _Cell:
    """The depth shared by a tensor and all its views."""

    __slots__ = ("depth",)

    def __init__(self, depth: Cost) -> None:
        self.depth = depth


_ACTIVE: list[DepthMode] = []


class DepthMode(TorchDispatchMode):
    """Context manager measuring depth and work of the torch ops run inside it.

    Like ``torch.utils.flop_counter.FlopCounterMode``::

        with DepthMode(model="log") as mode:
            y = f(x)
        mode.depth_of(y), mode.work, mode.result(y)

    Tensors made before entering (inputs, parameters) have depth 0. With
    ``meta=True`` (what :func:`parallel_time` uses) every tensor an op meets is moved
    to the meta device and factories create meta tensors, so nothing is allocated;
    with ``meta=False`` the ops really run. ``rules`` adds cost rules, keyed by
    ``torch.ops.aten.<op>`` (packet or overload); a rule maps
    ``(args, kwargs, out, S)`` to ``(depth cost, work)`` where ``S`` is the model's
    sum cost. ``op_counts`` counts the ops seen, by name.
    """

    def __init__(self, model: Model = "log", *, meta: bool = False,
                 rules: Mapping[Any, Rule] | None = None) -> None:
        super().__init__()
        self.model = _model_name(model)
        self.S = sum_cost(model)
        self.meta = meta
        self.rules = dict(rules or {})
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

    def _to_meta(self, op: _OpInfo, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """Move every tensor argument to meta (keeping its depth) and factories' device to meta."""
        def move(x: torch.Tensor) -> torch.Tensor:
            if x.is_meta:
                return x
            m = x.detach().to(META)
            self._cells[m] = self._cell(x)
            return m
        if any(not t.is_meta for t in _arg_tensors(args, kwargs)):
            args, kwargs = _map_tensors(move, args), _map_tensors(move, kwargs)
        if op.takes_device:  # a factory (torch.zeros) or a move (.to, .cpu)
            kwargs = {**kwargs, "device": META}
            if "pin_memory" in kwargs:
                kwargs["pin_memory"] = False
        return args, kwargs

    def __torch_dispatch__(self, func: torch._ops.OpOverload, types: Any,
                           args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        op = self._ops.get(id(func))
        if op is None:
            op = self._ops[id(func)] = _OpInfo.of(func, self.rules)
        if self.meta:
            args, kwargs = self._to_meta(op, args, kwargs)
        out = func(*args, **kwargs)
        cost, work = op.rule(args, kwargs, out, self.S)
        if op.fresh:
            depth = cost
        else:
            depth = cost + max((self._cell(t).depth for t in _arg_tensors(args, kwargs)), default=0)
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
    def of(cls, func: torch._ops.OpOverload, rules: Mapping[Any, Rule]) -> _OpInfo:
        """Look the op up (raises UnknownOpError for an op with no rule)."""
        written = tuple((i, a.name) for i, a in enumerate(func._schema.arguments)
                        if a.alias_info is not None and a.alias_info.is_write)
        takes_device = any(a.name == "device" and a.kwarg_only for a in func._schema.arguments)
        return cls(str(func), _rule_for(func, rules), func.overloadpacket in _FRESH,
                   func.is_view, written, takes_device)


def _tensors(x: Any) -> list[torch.Tensor]:
    """The tensors among the leaves of a nest of lists, tuples and dicts."""
    found, todo = [], [x]
    while todo:
        v = todo.pop()
        if isinstance(v, torch.Tensor):
            found.append(v)
        elif isinstance(v, (list, tuple)):
            todo.extend(v)
        elif isinstance(v, dict):
            todo.extend(v.values())
    return found


def _arg_tensors(args: tuple, kwargs: dict) -> list[torch.Tensor]:
    """The tensors among an aten op's arguments (lists in a schema are homogeneous)."""
    found = []
    for v in (*args, *kwargs.values()):
        if isinstance(v, torch.Tensor):
            found.append(v)
        elif isinstance(v, (list, tuple)) and v and not isinstance(v[0], (int, float)):
            found.extend(t for t in v if isinstance(t, torch.Tensor))
    return found


def _map_tensors(f: Callable[[torch.Tensor], Any], x: Any) -> Any:
    """x with every tensor t in its nest of lists, tuples and dicts replaced by f(t)."""
    if isinstance(x, torch.Tensor):
        return f(x)
    if isinstance(x, (list, tuple)) and not isinstance(x, torch.Size):
        return type(x)(_map_tensors(f, v) for v in x)
    if isinstance(x, dict):
        return {k: _map_tensors(f, v) for k, v in x.items()}
    return x


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


def as_meta(x: Any) -> Any:
    """Example argument -> meta tensors: tensors keep shape and dtype, shapes become float32."""
    if isinstance(x, torch.Tensor):
        return x if x.is_meta else x.detach().to(META)
    if _is_shape(x):
        return torch.empty(tuple(x), dtype=torch.float32, device=META)
    if isinstance(x, dict):
        return {k: as_meta(v) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # namedtuple
        return type(x)(*(as_meta(v) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)(as_meta(v) for v in x)
    return x


def parallel_time(fn: Callable[..., Any], *example_args: Any, model: Model = "log",
                  **kwargs: Any) -> ParallelTime:
    """Depth and work of fn(*example_args, **kwargs), run on meta tensors, under `model`."""
    args, kw = as_meta(example_args), as_meta(kwargs)
    with DepthMode(model, meta=True) as mode:
        out = fn(*args, **kw)
    return mode.result(out)
