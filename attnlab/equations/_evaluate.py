"""The evaluator: checked equations interpreted with torch, under caps on size and time."""
from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import torch

from attnlab._lexicon import EQUATION_MAX_ELEMENTS as MAX_ELEMENTS
from attnlab._lexicon import EQUATION_MAX_WORK as MAX_WORK
from attnlab.equations._form import Typed, check
from attnlab.equations._grammar import parse
from attnlab.equations._shapes import Spec
from attnlab.equations._tree import (
    TIME_BUDGET,
    Affine,
    Apply,
    BinOp,
    Call,
    Equation,
    EquationError,
    Index,
    Neg,
    Node,
    Num,
    Pow,
    Reduce,
    Ref,
    Slice,
    TooLarge,
    Var,
    indices_of,
    show,
    walk,
)


class _Named:
    """A tensor whose axes are named by indices."""

    __slots__ = ("t", "axes")

    def __init__(self, t: torch.Tensor, axes: tuple[str, ...]) -> None:
        self.t, self.axes = t, axes


@dataclass
class _Run:
    tensors: dict[str, torch.Tensor]
    size_values: dict[str, float]
    sizes: dict[str, int]
    dtype: torch.dtype
    device: torch.device
    deadline: float
    budget: float = TIME_BUDGET
    functions: Mapping[str, Callable[..., torch.Tensor]] = field(default_factory=dict)
    eq: Equation | None = None

    def err(self, msg: str, kind: type[EquationError] = EquationError) -> EquationError:
        eq = self.eq
        return kind(f"line {eq.line} ({eq.name}): {msg}" if eq else msg)

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise TooLarge(f"evaluating the equations took too long (the limit is {self.budget:.2g} s)")

    def cap(self, axes: Iterable[str]) -> None:
        n = 1
        for a in axes:
            n *= self.sizes[a]
        if n > MAX_ELEMENTS:
            raise self.err(f"an intermediate tensor over indices {','.join(axes)} would have {n} elements "
                           f"(at most {MAX_ELEMENTS})", TooLarge)

    def work(self, axes: Iterable[str]) -> None:
        """Refuse a step whose loops over `axes` would take more than MAX_WORK multiply-adds."""
        n = math.prod(self.sizes[a] for a in axes)
        if n > MAX_WORK:
            raise self.err(f"a product over indices {','.join(axes)} would take {n} multiply-adds "
                           f"(at most {MAX_WORK})", TooLarge)


def evaluate(answer: str | Sequence[Equation], tensors: Mapping[str, torch.Tensor],
             sizes: Mapping[str, float] | None = None,
             functions: Mapping[str, Callable[..., torch.Tensor]] | None = None) -> dict[str, torch.Tensor]:
    """Evaluate equations on your own tensors: {name: tensor} for every tensor the answer defines, axes in
    the order of its left side. `tensors` are the inputs (integer tensors for word ids); `sizes` gives the
    value of a size used as a number (`D` in sqrt(D)) when it cannot be read from an index named d;
    `functions` gives a declared function (`MIX`) as a callable: each argument arrives with its vector
    as the last axis (other axes broadcast), and it returns [..., size of its result]."""
    eqs = parse(answer) if isinstance(answer, str) else tuple(answer)
    for k, v in tensors.items():
        if not isinstance(v, torch.Tensor):
            raise EquationError(f"{k} should be a torch.Tensor, got {type(v).__name__}")
    specs = {k: Spec(tuple(v.shape), integer=not v.is_floating_point()) for k, v in tensors.items()}
    for eq in eqs:
        for node in walk(eq.rhs):
            if isinstance(node, Apply) and node.fn not in (functions or {}):
                raise EquationError(f"line {eq.line} ({eq.name}): to evaluate {node.fn}(...), pass it as a function: "
                                    f"evaluate(..., functions={{'{node.fn}': ...}})")
    typed = check(eqs, specs, {}, sizes=None, require=False, functions=dict.fromkeys(functions or {}))
    values = dict(sizes or {})
    defined = {eq.name for eq in eqs}
    for eq in eqs:
        for node in walk(eq.rhs):
            if isinstance(node, Var) and node.name not in tensors and node.name not in values and node.name not in defined:
                values[node.name] = _size_from_letter(node.name, typed)
    return evaluate_typed(typed, dict(tensors), values, functions=functions)


def _letter(index: str) -> str:
    return re.sub(r"[\d_']+$", "", index)


def _size_from_letter(name: str, typed: list[Typed]) -> int:
    found = {s for t in typed for i, s in t.sizes.items() if isinstance(s, int) and _letter(i).upper() == name}
    if len(found) == 1:
        return found.pop()
    why = "no index" if not found else f"indices of different sizes {sorted(found)}"
    raise EquationError(f"{name} is used as a number, but {why} named {name.lower()} tells its value: "
                        f"pass sizes={{'{name}': ...}}")


def evaluate_typed(typed: Sequence[Typed], tensors: dict[str, torch.Tensor], size_values: Mapping[str, float],
                   declared: Mapping[str, Sequence[int]] | None = None, replace: Mapping[str, torch.Tensor] | None = None,
                   budget: float = TIME_BUDGET,
                   functions: Mapping[str, Callable[..., torch.Tensor]] | None = None) -> dict[str, torch.Tensor]:
    """Evaluate checked equations. `declared`: the shape a defined tensor must have (sizes of indices that only
    appear in index combinations); `replace`: after a tensor is defined, later lines read this value instead
    (the judge uses it to check each equation on the expected values of the ones before)."""
    floats = [t.dtype for t in tensors.values() if t.is_floating_point()]
    dtype = floats[0] if floats else torch.get_default_dtype()
    for d in floats[1:]:
        dtype = torch.promote_types(dtype, d)
    devices = {t.device for t in tensors.values()}
    if len(devices) > 1:
        raise EquationError(f"the tensors are on different devices: {sorted(map(str, devices))}")
    device = devices.pop() if devices else torch.device("cpu")
    env = dict(tensors)
    run = _Run(env, {k: float(v) for k, v in size_values.items()}, {}, dtype, device, time.monotonic() + budget, budget,
               dict(functions or {}))
    out: dict[str, torch.Tensor] = {}
    for t in typed:
        run.eq = t.eq
        run.sizes = _numeric_sizes(t, env, (declared or {}).get(t.eq.name), run)
        run.cap([i for i in t.eq.indices if i in run.sizes])
        value = _eval(t.eq.rhs, run, 0)
        lhs = t.eq.indices
        res = _expand(value, lhs, run)
        out[t.eq.name] = res
        env[t.eq.name] = replace[t.eq.name] if replace and t.eq.name in replace else res
    return out


def _numeric_sizes(t: Typed, env: Mapping[str, torch.Tensor], declared: Sequence[int] | None, run: _Run) -> dict[str, int]:
    """Each index's size on these tensors: from plain uses, the declared shape, or the valid range of a combination."""
    eq = t.eq
    sizes: dict[str, int] = {}
    refs = [n for n in walk(eq.rhs) if isinstance(n, Ref)]
    for r in refs:
        shape = env[r.name].shape
        if len(shape) != len(r.indices):
            raise run.err(f"{show(r)} has {len(r.indices)} indices, but {r.name} has shape {tuple(shape)}")
        for ix, s in zip(r.indices, shape):
            if isinstance(ix, Affine) and ix.plain is not None:
                if sizes.setdefault(ix.plain, int(s)) != int(s):
                    raise run.err(f"index {ix.plain} runs over {sizes[ix.plain]} and over {int(s)} ({show(r)})")
    if declared is not None and len(declared) == len(eq.indices):
        for i, s in zip(eq.indices, declared):
            sizes.setdefault(i, int(s))
    all_names = ({i for r in refs for ix in r.indices for i in indices_of(ix)} | set(eq.indices)) - {":"}
    for _ in range(len(all_names)):
        missing = all_names - set(sizes)
        if not missing:
            break
        for i in sorted(missing):
            n = _valid_range(i, refs, env, sizes)
            if n is not None:
                sizes[i] = n
    missing = all_names - set(sizes)
    if missing:
        raise run.err(f"the range of index {sorted(missing)[0]} cannot be told from the tensors")
    return sizes


def _valid_range(i: str, refs: list[Ref], env: Mapping[str, torch.Tensor], sizes: dict[str, int]) -> int | None:
    """The largest n such that i < n keeps every combination that holds i inside its axis."""
    best = None
    for r in refs:
        for ix, s in zip(r.indices, env[r.name].shape):
            if not isinstance(ix, Affine) or i not in dict(ix.terms):
                continue
            coef = dict(ix.terms)
            if coef[i] <= 0 or any(n not in sizes for n in coef if n != i):
                return None
            hi = ix.const + sum(c * (sizes[n] - 1) for n, c in coef.items() if n != i and c > 0)
            n = (int(s) - 1 - hi) // coef[i] + 1
            best = n if best is None else min(best, n)
    return best if best is not None and best > 0 else None


def _eval(n: Node, run: _Run, depth: int) -> _Named:
    run.tick()
    if isinstance(n, Num):
        return _Named(torch.tensor(n.value, dtype=run.dtype, device=run.device), ())
    if isinstance(n, Var):
        if n.name in run.tensors:
            return _Named(run.tensors[n.name].to(run.dtype), ())
        if n.name not in run.size_values:
            raise run.err(f"{n.name} has no value")
        return _Named(torch.tensor(run.size_values[n.name], dtype=run.dtype, device=run.device), ())
    if isinstance(n, Ref):
        out = _read(n, run)
        return _Named(out.t.to(run.dtype), out.axes)
    if isinstance(n, Call):
        a = _eval(n.arg, run, depth + 1)
        fn = {"exp": torch.exp, "log": torch.log, "sigmoid": torch.sigmoid, "tanh": torch.tanh,
              "sqrt": torch.sqrt, "relu": torch.relu}[n.fn]
        return _Named(fn(a.t), a.axes)
    if isinstance(n, Neg):
        a = _eval(n.arg, run, depth + 1)
        return _Named(-a.t, a.axes)
    if isinstance(n, Pow):
        a, e = _eval(n.base, run, depth + 1), _eval(n.exponent, run, depth + 1)
        return _Named(a.t ** e.t, a.axes)
    if isinstance(n, BinOp):
        a, b = _eval(n.left, run, depth + 1), _eval(n.right, run, depth + 1)
        axes = a.axes + tuple(x for x in b.axes if x not in a.axes)
        run.cap(axes)
        ta, tb = _align(a, axes), _align(b, axes)
        op = {"+": torch.add, "-": torch.sub, "*": torch.mul, "/": torch.div}[n.op]
        return _Named(op(ta, tb), axes)
    if isinstance(n, Apply):
        return _apply(n, run)
    if isinstance(n, Reduce) and n.op == "sum" and isinstance(n.body, BinOp) and n.body.op == "*":
        return _contract(n, run, depth)
    if isinstance(n, Reduce):
        body = _eval(n.body, run, depth + 1)
        if any(i not in body.axes for i in n.over):
            raise run.err(f"{n.op}_{{{','.join(n.over)}}} over an expression without {','.join(n.over)}")
        dims = [body.axes.index(i) for i in n.over]
        if n.op == "sum":
            return _Named(body.t.sum(dim=dims), tuple(a for a in body.axes if a not in n.over))
        t = body.t
        if any(body.t.shape[d] == 0 for d in dims):
            return body
        shifted = t - t.amax(dim=dims, keepdim=True)
        e = torch.exp(shifted)
        return _Named(e / e.sum(dim=dims, keepdim=True), body.axes)
    raise TypeError(type(n))


def _apply(n: Apply, run: _Run) -> _Named:
    """A declared function on its argument vectors (the vector last, the other indices broadcast)."""
    fn = run.functions.get(n.fn)
    if fn is None:
        raise run.err(f"{n.fn} has no value here: pass it, functions={{'{n.fn}': ...}}")
    parts = []
    for k, a in enumerate(n.args):
        assert isinstance(a, Ref)
        pos = next(p for p, i in enumerate(a.indices) if isinstance(i, Slice))
        vec = f":{k}"
        run.sizes[vec] = int(run.tensors[a.name].shape[pos])
        ref = Ref(a.name, tuple(Affine(((vec, 1),)) if p == pos else i for p, i in enumerate(a.indices)))
        read = _read(ref, run)
        parts.append(_Named(read.t.to(run.dtype), read.axes))
    batch: list[str] = []
    for p in parts:
        batch += [x for x in p.axes if not x.startswith(":") and x not in batch]
    run.cap(batch)
    args = [_align(p, (*batch, f":{k}")) for k, p in enumerate(parts)]
    out = fn(*args)
    if not isinstance(out, torch.Tensor) or out.dim() != len(batch) + 1:
        raise run.err(f"{n.fn} should return a tensor of {len(batch) + 1} axes (the vector last)")
    shape = [run.sizes[b] for b in batch]
    run.sizes[":"] = int(out.shape[-1])
    return _Named(out.expand(*shape, out.shape[-1]), (*batch, ":"))


def _factors(n: Node) -> list[Node]:
    """The factors of a product `a * b * c` (brackets and divisions end it)."""
    if isinstance(n, BinOp) and n.op == "*":
        return _factors(n.left) + _factors(n.right)
    return [n]


def _contract(n: Reduce, run: _Run, depth: int) -> _Named:
    """`sum_{over} a * b * ...` as einsums of two factors at a time, left to right, each summed index summed
    as soon as no later factor reads it: no product over every index, and every step under the caps."""
    parts = [_eval(f, run, depth + 1) for f in _factors(n.body)]
    present = {a for p in parts for a in p.axes}
    if any(i not in present for i in n.over):
        raise run.err(f"sum_{{{','.join(n.over)}}} over an expression without {','.join(n.over)}")
    acc: _Named | None = None
    for k, p in enumerate(parts):
        later = {a for q in parts[k + 1:] for a in q.axes}
        operands = [p] if acc is None else [acc, p]
        union: list[str] = []
        for o in operands:
            union += [a for a in o.axes if a not in union]
        keep = tuple(a for a in union if a not in n.over or a in later)
        run.work(union)
        run.cap(keep)
        letter = {a: chr(ord("a") + j) for j, a in enumerate(union)}
        spec_ = ",".join("".join(letter[a] for a in o.axes) for o in operands) + "->" + "".join(letter[a] for a in keep)
        acc = _Named(torch.einsum(spec_, *[o.t for o in operands]), keep)
    assert acc is not None
    return acc


def _align(a: _Named, axes: tuple[str, ...]) -> torch.Tensor:
    """`a`'s tensor with its axes in the order `axes` (new axes of size 1)."""
    t = a.t
    if not a.axes:
        return t.reshape((1,) * len(axes)) if axes else t
    perm = [a.axes.index(x) for x in axes if x in a.axes]
    t = t.permute(perm)
    shape, k = [], 0
    for x in axes:
        if x in a.axes:
            shape.append(t.shape[k])
            k += 1
        else:
            shape.append(1)
    return t.reshape(shape)


def _expand(v: _Named, axes: tuple[str, ...], run: _Run) -> torch.Tensor:
    """`v` with exactly the axes `axes` (broadcast where it does not depend on one)."""
    t = _align(_Named(v.t, v.axes), axes) if set(v.axes) <= set(axes) else None
    if t is None:
        extra = [a for a in v.axes if a not in axes]
        raise run.err(f"the right side keeps indices {','.join(extra)} that the left side does not have")
    return t.expand([run.sizes[a] for a in axes]).contiguous()


def _read(r: Ref, run: _Run) -> _Named:
    """`r` read through its index positions: a tensor over the indices it depends on."""
    src = run.tensors[r.name]
    order: list[str] = []
    for ix in r.indices:
        order += [i for i in indices_of(ix) if i not in order]
    run.cap(order)
    positions = []
    for k, ix in enumerate(r.indices):
        size = src.shape[k]
        if isinstance(ix, Affine):
            idx = torch.full((1,) * len(order), ix.const, dtype=torch.long, device=run.device)
            for name, c in ix.terms:
                shape = [1] * len(order)
                shape[order.index(name)] = run.sizes[name]
                idx = idx + c * torch.arange(run.sizes[name], device=run.device).reshape(shape)
        else:
            inner = _read(ix.ref, run)
            vals = inner.t
            if vals.is_floating_point():
                if not torch.equal(vals, vals.round()):
                    raise run.err(f"{show(ix.ref)} holds non-integer values; it cannot be an index of {r.name}")
            idx = _align(_Named(vals.long(), inner.axes), tuple(order))
        if idx.numel() and (idx.min() < 0 or idx.max() >= size):
            bad = int(idx.min()) if idx.min() < 0 else int(idx.max())
            raise run.err(f"{show(r)} reads position {bad} of {r.name}'s axis {k + 1}, which has size {size}"
                          + _at(ix, idx, bad, order, run))
        positions.append(idx)
    if not positions:
        return _Named(src, ())
    out = src[tuple(positions)]
    shape = [run.sizes[o] for o in order]
    return _Named(out.expand(shape) if list(out.shape) != shape else out, tuple(order))


def _at(ix: Index, idx: torch.Tensor, bad: int, order: list[str], run: _Run) -> str:
    if not isinstance(ix, Affine):
        return ""
    where = (idx.expand([run.sizes[o] for o in order]) == bad).nonzero()
    if not len(where):
        return ""
    at = ", ".join(f"{o}={int(v)}" for o, v in zip(order, where[0]) if o in dict(ix.terms))
    return f" (at {at})" if at else ""
