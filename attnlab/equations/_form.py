"""The form check: names, index counts, free and summed indices, sizes (never correctness)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from attnlab.equations._shapes import Spec, function_spec, spec
from attnlab.equations._tree import (
    Apply,
    Budget,
    Equation,
    EquationError,
    Gather,
    Node,
    Num,
    Pow,
    Reduce,
    Ref,
    Slice,
    Sym,
    Var,
    _clip,
    children,
    indices_of,
    show,
)


@dataclass
class Typed:
    """One equation after the form check: each index's size, and the shape it defines."""

    eq: Equation
    sizes: dict[str, Sym | None]
    shape: tuple[Sym | None, ...]
    summed: frozenset[str] = frozenset()


@dataclass
class _Env:
    shapes: dict[str, tuple[Sym | None, ...]]
    values: dict[str, Sym | None]           # integer tensors: the range of their values
    inputs: frozenset[str]
    size_names: frozenset[str] | None       # names usable as numbers (None: any other bare name)
    declared: dict[str, Spec]
    functions: dict[str, tuple[tuple[Sym, ...], Sym] | None] = field(default_factory=dict)
    defined_at: dict[str, int] = field(default_factory=dict)


def check(equations: Sequence[Equation], inputs: Mapping[str, Spec | str], defines: Mapping[str, Spec | str] | None = None,
          sizes: Iterable[str] | None = None, *, require: bool = True,
          functions: Mapping[str, str | None] | None = None, budget: Budget | None = None) -> list[Typed]:
    """The form check: names, index counts, free and summed indices, sizes; the shapes of `defines`.

    `inputs` and `defines` map names to specs (`"H,K,J"`); sizes are names or numbers. With `sizes`,
    only those names may be used as numbers. `require`: every name in `defines` must be defined.
    `functions`: the functions the question declares (`{"MIX": "C,C -> C"}`; None: sizes unchecked).
    Raises EquationError listing every problem found (never checks that the equations are right).
    """
    in_specs = {k: spec(v) for k, v in inputs.items()}
    declared = {k: spec(v) for k, v in (defines or {}).items()}
    size_names = None if sizes is None else frozenset(sizes)
    if size_names is None and all(isinstance(a, str) for s in [*in_specs.values(), *declared.values()] for a in s.axes):
        named = {a for s in [*in_specs.values(), *declared.values()] for a in s.axes if isinstance(a, str)}
        named |= {s.values for s in in_specs.values() if isinstance(s.values, str)}
        size_names = frozenset(named) or None
    env = _Env({k: s.axes for k, s in in_specs.items()}, {k: s.values for k, s in in_specs.items() if s.integer},
               frozenset(in_specs), size_names, declared, {k: function_spec(v) for k, v in (functions or {}).items()})
    problems: list[str] = []
    typed = []
    for eq in equations:
        if budget is not None:
            budget.spend()  # the check is linear in the tree parse counted; this keeps its deadline
        t = _check_equation(eq, env, problems)
        if t is not None:
            typed.append(t)
    if require:
        missing = [d for d in declared if d not in env.defined_at]
        if missing:
            problems.append(f"the answer does not define {_and(missing)} (it must define {_and(list(declared))})")
    if problems:
        raise EquationError("\n".join(_dedupe(problems)[:8]))
    return typed


def _and(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _check_equation(eq: Equation, env: _Env, problems: list[str]) -> Typed | None:
    where = f"line {eq.line} ({eq.name})"
    n0 = len(problems)
    if eq.name in env.inputs:
        problems.append(f"{where}: {eq.name} is an input of the question; give the tensor you define another name")
        return None
    if eq.name in env.defined_at:
        problems.append(f"{where}: {eq.name} is defined twice (lines {env.defined_at[eq.name]} and {eq.line})")
        return None
    uses: dict[str, list[tuple[Sym, str]]] = {}
    summed: set[str] = set()
    free = _free(eq.rhs, eq, env, problems, uses, bound=(), summed=summed)
    lhs = set(eq.indices)
    for i in sorted(free - lhs):
        if i == ":":
            problems.append(f"{where}: the result of a function is a vector: write its axis as `:` on the left, "
                            f"{eq.name}[...,:]")
            continue
        hint = (f": it is summed elsewhere on the line, but a sum covers only the product right after it; "
                f"use brackets, sum_{i} (...)" if i in summed else f": sum over it (sum_{i} ...) or add it to "
                f"{eq.name}'s indices")
        problems.append(f"{where}: index {i} appears on the right but not on the left{hint}")
    for i in eq.indices:
        if i == ":" and i not in free:
            problems.append(f"{where}: `:` on the left is the axis of a function's result, and the right side calls "
                            "no function")
        elif i in summed:
            problems.append(f"{where}: index {i} is summed on the right and is also an index of {eq.name}; rename one")
        elif i not in free:
            problems.append(f"{where}: index {i} of {eq.name} does not appear on the right side")
    sizes: dict[str, Sym | None] = {}
    for i, found in uses.items():
        known = [(s, w) for s, w in found if s is not None]
        distinct = list(dict.fromkeys(s for s, _ in known))
        if len(distinct) > 1:
            a, b = known[0], next(k for k in known if k[0] != known[0][0])
            problems.append(f"{where}: index {i} runs over {_size(a[0])} in {a[1]} but over {_size(b[0])} in {b[1]}")
        sizes[i] = distinct[0] if distinct else None
    decl = env.declared.get(eq.name)
    if decl is not None and len(decl.axes) != len(eq.indices):
        problems.append(f"{where}: {_shape_problem(eq, (None,) * len(eq.indices), decl)}")
    if decl is not None and len(decl.axes) == len(eq.indices):
        for i, s in zip(eq.indices, decl.axes):
            if sizes.get(i) is None:
                sizes[i] = s
    shape = tuple(sizes.get(i) for i in eq.indices)
    if decl is not None and len(problems) == n0 and len(decl.axes) == len(eq.indices):
        problem = _shape_problem(eq, shape, decl)
        if problem:
            problems.append(f"{where}: {problem}")
    env.defined_at[eq.name] = eq.line
    if len(problems) > n0:  # later lines are not checked against a shape that is already wrong
        env.shapes[eq.name] = (None,) * len(eq.indices)
        return None
    env.shapes[eq.name] = shape
    return Typed(eq, sizes, shape, frozenset(summed))


def _size(s: Sym) -> str:
    return str(s)


def _shape_problem(eq: Equation, shape: tuple[Sym | None, ...], decl: Spec) -> str | None:
    """How the left side's indices differ from the question's, in the question's letters; None if they agree."""
    want = list(decl.axes)
    letters = decl.letters
    shown = f"{eq.name}[{','.join(letters)}]"
    if len(shape) != len(want):
        return (f"the question's {shown} has {len(want)} indices, yours has {len(shape)} "
                f"({eq.name}[{','.join(eq.indices)}])")
    if all(s is None or s == w for s, w in zip(shape, want)):
        return None
    extra = [(i, s) for i, s in zip(eq.indices, shape) if s is not None and s not in want]
    if extra:
        i, s = extra[0]
        return f"your {eq.name} keeps index {i} (size {s}), which the question's {shown} does not have"
    if sorted(map(str, shape)) == sorted(map(str, want)):
        pool = list(zip(want, letters))
        mine = []
        for s in shape:
            k = next(k for k, (w, _) in enumerate(pool) if w == s)
            mine.append(pool.pop(k)[1])
        return f"{eq.name}'s indices are [{','.join(letters)}], yours defines [{','.join(mine)}]"
    return (f"{eq.name} should have sizes [{','.join(map(str, want))}]; yours has "
            f"[{','.join('?' if s is None else str(s) for s in shape)}]")


def _free(n: Node, eq: Equation, env: _Env, problems: list[str], uses: dict[str, list[tuple[Sym, str]]],
          bound: tuple[str, ...], summed: set[str]) -> set[str]:
    """The free indices of `n`; records index uses with their sizes and every problem found."""
    where = f"line {eq.line} ({eq.name})"
    if isinstance(n, Num):
        return set()
    if isinstance(n, Var):
        if n.name in env.shapes:
            if len(env.shapes[n.name]) != 0:
                problems.append(f"{where}: {n.name} is a tensor with {len(env.shapes[n.name])} indices; "
                                f"write {n.name}[...] with them")
            return set()
        if env.size_names is None or n.name in env.size_names:
            return set()  # a size: its value comes when the equations are evaluated
        names = ", ".join(sorted(env.size_names))
        problems.append(f"{where}: {n.name} is neither a size of this question ({names}) nor a tensor")
        return set()
    if isinstance(n, Ref):
        return _free_ref(n, eq, env, problems, uses, bound, summed)
    if isinstance(n, Apply):
        return _free_apply(n, eq, env, problems, uses, bound, summed)
    if isinstance(n, Reduce):
        for i in n.over:
            if i in bound and n.op == "sum":
                problems.append(f"{where}: index {i} is summed twice (nested sums over the same index)")
        body = _free(n.body, eq, env, problems, uses, bound + (n.over if n.op == "sum" else ()), summed)
        for i in n.over:
            if i not in body:
                problems.append(f"{where}: {n.op}_{i} covers `{_clip(show(n.body))}`, in which {i} does not appear "
                                f"(a {n.op} covers only the product right after it)")
        if n.op == "sum":
            summed.update(n.over)
            return body - set(n.over)
        return body
    if isinstance(n, Pow):
        base = _free(n.base, eq, env, problems, uses, bound, summed)
        if _free(n.exponent, eq, env, problems, uses, bound, summed):
            problems.append(f"{where}: an exponent must be a constant (`{show(n.exponent)}` has indices)")
        return base
    out: set[str] = set()
    for c in children(n):
        out |= _free(c, eq, env, problems, uses, bound, summed)
    return out


def _free_apply(n: Apply, eq: Equation, env: _Env, problems: list[str], uses: dict[str, list[tuple[Sym, str]]],
                bound: tuple[str, ...], summed: set[str]) -> set[str]:
    """A declared function: its arguments' other indices, and `:` (the axis of its result)."""
    where = f"line {eq.line} ({eq.name})"
    out: set[str] = {":"}
    if n.fn not in env.functions:
        declared = ", ".join(env.functions) or "none"
        problems.append(f"{where}: {n.fn}(...) is not a function of this question (its functions: {declared})")
        return out | {i for a in n.args for i in _free(a, eq, env, problems, uses, bound, summed)}
    sig = env.functions[n.fn]
    if sig is not None and len(sig[0]) != len(n.args):
        problems.append(f"{where}: {n.fn} takes {len(sig[0])} vectors, got {len(n.args)}")
        sig = None
    for k, a in enumerate(n.args):
        out |= _free(a, eq, env, problems, uses, bound, summed)
        assert isinstance(a, Ref)
        shape = env.shapes.get(a.name)
        if sig is None or shape is None or len(shape) != len(a.indices):
            continue
        size = shape[next(p for p, i in enumerate(a.indices) if isinstance(i, Slice))]
        if size is not None and size != sig[0][k]:
            problems.append(f"{where}: argument {k + 1} of {n.fn} should be a vector of size {sig[0][k]}; "
                            f"{show(a)} runs over {size}")
    if sig is not None:
        uses.setdefault(":", []).append((sig[1], f"the result of {n.fn}"))
    return out


def _free_ref(n: Ref, eq: Equation, env: _Env, problems: list[str], uses: dict[str, list[tuple[Sym, str]]],
              bound: tuple[str, ...], summed: set[str]) -> set[str]:
    where = f"line {eq.line} ({eq.name})"
    shown = show(n)
    if n.name not in env.shapes:
        if n.name == eq.name:
            problems.append(f"{where}: {n.name} is used in its own definition")
        elif n.name in env.declared:
            problems.append(f"{where}: {shown} uses {n.name} before it is defined: define {n.name} on an earlier line")
        else:
            known = ", ".join(env.shapes) or "none"
            problems.append(f"{where}: {shown}: {n.name} is not an input of the question nor defined above "
                            f"(known tensors: {known})")
        return {i for ix in n.indices for i in indices_of(ix)}
    shape = env.shapes[n.name]
    if len(n.indices) != len(shape):
        problems.append(f"{where}: {shown} has {len(n.indices)} indices, but {n.name} has {len(shape)}")
        return {i for ix in n.indices for i in indices_of(ix)}
    out: set[str] = set()
    for ix, size in zip(n.indices, shape):
        if isinstance(ix, Gather):
            inner = ix.ref
            out |= _free_ref(inner, eq, env, problems, uses, bound, summed)
            if inner.name in env.shapes and inner.name not in env.values and inner.name in env.inputs:
                problems.append(f"{where}: {shown} reads an index from {inner.name}, which does not hold integers")
            rng = env.values.get(inner.name)
            if rng is not None and size is not None and rng != size:
                problems.append(f"{where}: {shown}: {inner.name} holds values below {rng}, but that axis of "
                                f"{n.name} has size {size}")
            continue
        if isinstance(ix, Slice):
            continue
        name = ix.plain
        if name is not None:
            uses.setdefault(name, []).append((size, shown))
        out |= set(indices_of(ix))
    return out
