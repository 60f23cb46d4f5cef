"""The trusted judge of index-equation answers (`EquationCheck`), in the grader's process.

The student's answer is a string: data, never code. It is read by `attnlab.equations` (a lark
grammar), checked for form exactly as the visible test does, then evaluated together with the
reference on random tensors for every draw of sizes in the question. Each tensor the question
asks for is compared axis by axis, and each student equation is evaluated on the *expected*
values of the tensors it reads, so one wrong line is reported as that line. For a wrong tensor
the message comes from comparing the two equations' structure (which indices are summed, which
axes are normalised, which operand carries which index, affine positions, functions applied) and
a numeric test for constant factors; it names indices and tensors, never the reference equation.
"""
from __future__ import annotations

import contextvars
import itertools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from attnlab import equations as eqn
from attnlab.equations import (
    Affine,
    Apply,
    BinOp,
    Budget,
    Call,
    Equation,
    EquationError,
    Gather,
    Neg,
    Node,
    Pow,
    Reduce,
    Ref,
    Slice,
    Spec,
    TooLarge,
    Typed,
    show,
)

if TYPE_CHECKING:  # a type only: the checks import this module to judge their equation questions
    from autograder.checks.base import EquationQuestion


@dataclass(frozen=True)
class Decision:
    """Pass or fail, and one message for the student."""

    passed: bool
    message: str


TIME_BUDGET = 5.0  # seconds to judge one answer (every stage: reading, form, each draw of sizes, the diagnosis)
# What the answer being judged may still build and until when; every stage spends from it.
_BUDGET: contextvars.ContextVar[Budget] = contextvars.ContextVar("equation_judge_budget")


def judge_equations(q: EquationQuestion, answer: object) -> Decision:
    """Decide a student's equations for question `q`: within TIME_BUDGET seconds and MAX_BUILT tree nodes
    for every stage together, past which the answer is refused with a sentence."""
    if not isinstance(answer, str):
        return Decision(False, f"your answer should be a string of equations, got {type(answer).__name__}")
    budget = Budget(TIME_BUDGET)
    token = _BUDGET.set(budget)
    try:
        return _judge(q, answer, budget)
    except TooLarge as exc:
        return Decision(False, str(exc))
    finally:
        _BUDGET.reset(token)


def _judge(q: EquationQuestion, answer: str, budget: Budget) -> Decision:
    define = next(iter(q.defines))
    try:
        eqs = eqn.parse_answer(answer, q.operands, define, budget=budget)
    except TooLarge:
        raise
    except EquationError as exc:
        return Decision(False, f"your answer could not be read: {exc}")
    try:
        typed = eqn.check(eqs, q.inputs, q.defines, sizes=q.size_names, functions=q.functions, budget=budget)
    except TooLarge:
        raise
    except EquationError as exc:
        return Decision(False, str(exc))
    specs = _specs(q)
    wrong: dict[str, str] = {}
    for draw, tensors, shapes, expected, functions in _expected(q):
        try:
            mine = eqn.evaluate_typed(typed, dict(tensors), draw, declared=shapes, replace=expected,
                                      budget=budget.seconds_left(), functions=functions)
        except TooLarge:
            raise
        except EquationError as exc:
            return Decision(False, f"your equations cannot be evaluated: {exc}")
        for d in q.defines:
            if d in wrong:
                continue
            problem = _compare(mine[d], expected[d], q)
            if problem is not None:
                wrong[d] = _diagnose(d, problem, typed, q, specs, tensors, draw, expected, mine, functions)
    if not wrong:
        n = len(q.sizes)
        return Decision(True, f"your equations give the expected {', '.join(q.defines)} on {n} draw{'s' * (n > 1)} "
                              "of sizes")
    first, *rest = wrong
    also = f" ({_and(rest)} {'is' if len(rest) == 1 else 'are'} wrong too)" if rest else ""
    return Decision(False, wrong[first] + also)


_CACHE: dict[int, tuple[EquationQuestion, list]] = {}


def _expected(q: EquationQuestion) -> list[tuple[Mapping[str, int], dict, dict, dict, dict]]:
    """(sizes, inputs, shapes, expected tensors, functions) for every draw: the reference evaluated once."""
    hit = _CACHE.get(id(q))
    if hit is not None and hit[0] is q:
        return hit[1]
    out = []
    for k, draw in enumerate(q.sizes):
        tensors = _draw(q, draw, seed=1234 + k)
        shapes = {d: tuple(draw[a] if isinstance(a, str) else a for a in spec.axes) for d, spec in _declared(q).items()}
        functions = {name: _random_function(name, text, draw, seed=4321 + k) for name, text in q.functions.items()}
        expected = eqn.evaluate_typed(q.typed, dict(tensors), draw, declared=shapes, budget=30.0, functions=functions)
        out.append((draw, tensors, shapes, expected, functions))
    if len(_CACHE) > 256:
        _CACHE.clear()
    _CACHE[id(q)] = (q, out)
    return out


def _and(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _declared(q: EquationQuestion) -> dict[str, Spec]:
    return {d: eqn.spec(s) for d, s in q.defines.items()}


def _specs(q: EquationQuestion) -> dict[str, Spec]:
    return {**{k: eqn.spec(s) for k, s in q.inputs.items()}, **_declared(q)}


def _draw(q: EquationQuestion, draw: Mapping[str, int], seed: int) -> dict[str, torch.Tensor]:
    """Random inputs for one draw of sizes: standard normal floats, uniform integers for word ids."""
    gen = torch.Generator().manual_seed(seed)
    out = {}
    for name, text in q.inputs.items():
        s = eqn.spec(text)
        shape = tuple(draw[a] if isinstance(a, str) else a for a in s.axes)
        if s.integer:
            hi = draw[s.values] if isinstance(s.values, str) else int(s.values or 1)
            out[name] = torch.randint(0, hi, shape, generator=gen)
        else:
            out[name] = torch.randn(shape, generator=gen, dtype=torch.float64)
    return out


def _random_function(name: str, text: str, draw: Mapping[str, int], seed: int):
    """A fixed nonlinear map for a declared function: tanh(sum_a R_a v_a + c), a different R_a per argument."""
    args, result = eqn.function_spec(text)
    n_out = draw[result] if isinstance(result, str) else int(result)
    gen = torch.Generator().manual_seed(seed + sum(map(ord, name)))
    weights = [torch.randn(n_out, draw[a] if isinstance(a, str) else int(a), generator=gen, dtype=torch.float64)
               for a in args]
    bias = torch.randn(n_out, generator=gen, dtype=torch.float64)

    def fn(*vectors: torch.Tensor) -> torch.Tensor:
        pre = sum(torch.einsum("...i,oi->...o", v, w.to(v.dtype)) for v, w in zip(vectors, weights))
        return torch.tanh(pre + bias.to(pre.dtype))

    return fn


def _compare(mine: torch.Tensor, expected: torch.Tensor, q: EquationQuestion) -> str | None:
    """None when `mine` is `expected` within the question's tolerance, else what differs. The statistic is
    the largest excess over the relative tolerance; it passes only finite and within atol (NaN, inf fail)."""
    if tuple(mine.shape) != tuple(expected.shape):
        return f"shape {tuple(mine.shape)}, expected {tuple(expected.shape)}"
    if not bool(torch.isfinite(mine).all()):
        return "NaN or infinite values"
    excess = float(((mine - expected).abs() - q.rtol * expected.abs()).max()) if mine.numel() else 0.0
    if not (math.isfinite(excess) and excess <= q.atol):
        return "different values"
    return None


# --------------------------------------------------------------------------- diagnosis

@dataclass
class _Occ:
    """One tensor read in an equation: its name, its axes' letters, and what sits on each axis."""

    name: str
    axes: tuple[str, ...]
    roles: tuple[tuple, ...]   # ("free", letter) | ("sum", key) | ("affine", key, text) | ("gather", name) | ("?",)
    text: str


@dataclass
class _Form:
    occ: list[_Occ]
    softmax: list[frozenset[str]]
    functions: Counter
    operands: Counter


def _diagnose(d: str, problem: str, typed: Sequence[Typed], q: EquationQuestion, specs: dict[str, Spec],
              tensors: dict[str, torch.Tensor], draw: Mapping[str, int], expected: dict[str, torch.Tensor],
              mine: dict[str, torch.Tensor], functions: dict) -> str:
    """One sentence on how the student's tensor `d` differs from the expected one."""
    if problem == "NaN or infinite values":
        return f"your {d} has NaN or infinite values (a log of a negative number, or a division by zero?)"
    student = {t.eq.name: t.eq for t in typed}
    reference = {t.eq.name: t.eq for t in q.typed}
    try:
        s_eq, r_eq = _inline(student[d], student, q), _inline(reference[d], reference, q)
        letters = specs[d].letters
        s_form, r_form = _form(s_eq, specs, letters), _form(r_eq, specs, letters)
        message = _structural(d, s_form, r_form)
    except TooLarge:
        raise
    except (EquationError, KeyError, ValueError, RecursionError):
        message = None
    if message:
        return message
    factor = _ratio(mine[d], expected[d])
    if factor is not None:
        if abs(factor + 1) < 1e-6:
            return f"your {d} has the wrong sign"
        return f"your {d} differs from the expected one by a constant factor: check the scale"
    scale = _softmax_scale(d, student, reference, q, tensors, draw, expected, functions)
    if scale:
        return scale
    return (f"your {d} gives different values, though its indices, sums and functions look like the expected "
            f"ones: check signs, constant factors and the terms you add")


def _ratio(a: torch.Tensor, b: torch.Tensor) -> float | None:
    """c if a == c*b everywhere (c != 1), else None."""
    mask = b.abs() > 1e-6 * (b.abs().max() + 1e-30)
    if not mask.any():
        return None
    r = a[mask] / b[mask]
    c = r.median().item()
    if not math.isfinite(c) or abs(c - 1) <= 1e-9:
        return None
    excess = float(((a - c * b).abs() - 1e-6 * (c * b).abs()).max())
    return c if math.isfinite(excess) and excess <= 1e-9 else None


def _inline(eq: Equation, defs: dict[str, Equation], q: EquationQuestion) -> Equation:
    """`eq` with the answer's own helper tensors (not inputs, not asked for) written out in place."""
    keep = set(q.inputs) | set(q.defines)
    _BUDGET.get().afford(_inlined_size(eq.rhs, defs, keep, {}))
    counter = itertools.count()

    def sub(n: Node, depth: int) -> Node:
        if depth > 8:
            raise ValueError("helpers nested too deep to inline")
        if isinstance(n, Ref) and n.name not in keep and n.name in defs:
            plain = [ix.plain if isinstance(ix, Affine) else None for ix in n.indices]
            if None in plain or len(set(plain)) != len(plain):
                return n
            h = defs[n.name]
            rename = dict(zip(h.indices, plain))
            body = _rename(h.rhs, rename, counter)
            return sub(body, depth + 1)
        return _map(n, lambda c: sub(c, depth))

    return Equation(eq.name, eq.indices, sub(eq.rhs, 0), eq.line, eq.text)


def _inlined_size(n: Node, defs: dict[str, Equation], keep: set[str], memo: dict[str, int]) -> int:
    """At most how many nodes `n` has with the helpers it reads written out (each helper sized once)."""
    total = 0
    for node in eqn.walk(n):
        if isinstance(node, Ref) and node.name not in keep and node.name in defs:
            if node.name not in memo:
                memo[node.name] = 1  # a helper is defined before it is read: no cycle, but stay finite
                memo[node.name] = _inlined_size(defs[node.name].rhs, defs, keep, memo)
            total += memo[node.name]
        else:
            total += 1
    return total


def _map(n: Node, f) -> Node:
    """`n` with `f` applied to its direct sub-expressions (one node built, counted against the budget)."""
    _BUDGET.get().spend()
    if isinstance(n, Call):
        return Call(n.fn, f(n.arg))
    if isinstance(n, Neg):
        return Neg(f(n.arg))
    if isinstance(n, Reduce):
        return Reduce(n.op, n.over, f(n.body))
    if isinstance(n, BinOp):
        return BinOp(n.op, f(n.left), f(n.right))
    if isinstance(n, Pow):
        return Pow(f(n.base), f(n.exponent))
    if isinstance(n, Apply):
        return Apply(n.fn, tuple(f(a) for a in n.args))
    return n


def _rename(n: Node, names: dict[str, str], counter) -> Node:
    """`n` with indices renamed (free ones by `names`, summed ones to fresh names)."""
    _BUDGET.get().spend()
    if isinstance(n, Reduce) and n.op == "sum":
        fresh = {i: f"{i}__{next(counter)}" for i in n.over}
        inner = {**names, **fresh}
        return Reduce(n.op, tuple(fresh[i] for i in n.over), _rename(n.body, inner, counter))
    if isinstance(n, Reduce):
        return Reduce(n.op, tuple(names.get(i, i) for i in n.over), _rename(n.body, names, counter))
    if isinstance(n, Ref):
        return Ref(n.name, tuple(_rename_index(ix, names, counter) for ix in n.indices))
    return _map(n, lambda c: _rename(c, names, counter))


def _rename_index(ix, names: dict[str, str], counter):
    if isinstance(ix, Affine):
        coef: dict[str, int] = {}
        for name, c in ix.terms:
            coef[names.get(name, name)] = coef.get(names.get(name, name), 0) + c
        return Affine(tuple(sorted((k, v) for k, v in coef.items() if v)), ix.const)
    if isinstance(ix, Gather):
        return Gather(_rename(ix.ref, names, counter))
    return ix


def _softmaxes(n: Node) -> Node:
    """`exp(a) / sum_S exp(b)` (b = a with indices renamed) -> softmax over the renamed indices."""
    n = _map(n, _softmaxes)
    if (isinstance(n, BinOp) and n.op == "/" and isinstance(n.left, Call) and n.left.fn == "exp"
            and isinstance(n.right, Reduce) and n.right.op == "sum" and isinstance(n.right.body, Call)
            and n.right.body.fn == "exp"):
        a, b, over = n.left.arg, n.right.body.arg, n.right.over
        free_a, free_b = _free_indices(a), _free_indices(b)
        targets = sorted(free_a - (free_b - set(over)))
        if len(targets) == len(over) <= 4:
            for perm in itertools.permutations(targets):
                if _canonical(_rename(b, dict(zip(over, perm)), itertools.count())) == _canonical(a):
                    return Reduce("softmax", tuple(perm), a)
    return n


def _canonical(n: Node) -> str:
    """The text of `n` with summed indices renamed in order of appearance (equal up to bound names)."""
    counter = itertools.count()

    def go(x: Node) -> Node:
        if isinstance(x, Reduce) and x.op == "sum":
            fresh = {i: f"_{next(counter)}" for i in x.over}
            return Reduce(x.op, tuple(fresh.values()), go(_rename(x.body, fresh, itertools.count())))
        return _map(x, go)

    return show(go(n))


def _free_indices(n: Node) -> set[str]:
    if isinstance(n, Ref):
        return {i for ix in n.indices for i in eqn.indices_of(ix)}
    if isinstance(n, Reduce) and n.op == "sum":
        return _free_indices(n.body) - set(n.over)
    out: set[str] = set()
    for c in eqn.children(n):
        out |= _free_indices(c)
    return out


def _form(eq: Equation, specs: dict[str, Spec], letters: tuple[str, ...]) -> _Form:
    """The structure of an equation in the question's letters."""
    rhs = _softmaxes(eq.rhs)
    free = dict(zip(eq.indices, letters))
    bindings: dict[str, set[tuple[str, str]]] = {}
    refs: list[Ref] = []
    functions: Counter = Counter()
    softmax: list[frozenset[str]] = []
    for node in eqn.walk(rhs):
        if isinstance(node, Ref):
            refs.append(node)
        elif isinstance(node, Call) and _free_indices(node.arg):  # sqrt(K) is a constant, not a function applied
            functions[node.fn] += 1
        elif isinstance(node, Apply):
            functions[node.fn] += 1
        elif isinstance(node, Reduce) and node.op == "softmax":
            functions["softmax"] += 1
            softmax.append(frozenset(free.get(i, i) for i in node.over))
    inner = {id(ix.ref) for r in refs for ix in r.indices if isinstance(ix, Gather)}
    top = [r for r in refs if id(r) not in inner]
    for r in top:
        axes = _axes(r.name, specs, len(r.indices))
        for ix, a in zip(r.indices, axes):
            if isinstance(ix, Affine) and ix.plain is not None and ix.plain not in free:
                bindings.setdefault(ix.plain, set()).add((r.name, a))

    def key(i: str) -> object:
        return ("free", free[i]) if i in free else ("sum", frozenset(bindings.get(i, ())))

    occ = []
    for r in top:
        axes = _axes(r.name, specs, len(r.indices))
        roles = []
        for ix in r.indices:
            if isinstance(ix, Gather):
                roles.append(("gather", ix.ref.name))
            elif isinstance(ix, Slice):
                roles.append(("vector",))
            elif ix.plain is not None:
                roles.append(("free", free[ix.plain]) if ix.plain in free else ("sum",))
            else:
                terms = tuple(sorted((repr(key(i)), c) for i, c in ix.terms))
                roles.append(("affine", (terms, ix.const), show(ix)))
        occ.append(_Occ(r.name, axes, tuple(roles), show(r)))
    operands = Counter(r.name for r in refs)
    return _Form(occ, softmax, functions, operands)


def _axes(name: str, specs: dict[str, Spec], n: int) -> tuple[str, ...]:
    s = specs.get(name)
    return s.letters if s is not None and len(s.axes) == n else tuple(f"axis {k + 1}" for k in range(n))


def _set(letters) -> str:
    items = sorted(letters, key=str)
    return items[0] if len(items) == 1 else "(" + ", ".join(items) + ")"


def _structural(d: str, s: _Form, r: _Form) -> str | None:
    """The first structural difference between the student's form `s` and the expected form `r`, in words."""
    # which tensors are read
    missing = [n for n in r.operands if n not in s.operands]
    extra = [n for n in s.operands if n not in r.operands]
    if missing and extra:
        return f"your {d} reads {_and(extra)} where the expected one reads {_and(missing)}"
    if missing:
        return f"your {d} does not use {_and(missing)}"
    # what is normalised
    if len(s.softmax) == len(r.softmax) == 1 and s.softmax[0] != r.softmax[0]:
        mine, want = s.softmax[0], r.softmax[0]
        only = " only" if mine < want else ""
        return f"your {d} is normalised over {_set(mine)}{only}, not over {_set(want)}"
    if r.softmax and not s.softmax:
        return f"your {d} is not normalised (no softmax over {_set(r.softmax[0])})"
    # what sits on each axis of each tensor read
    for name in r.operands:
        mine_occ = [o for o in s.occ if o.name == name]
        want_occ = [o for o in r.occ if o.name == name]
        if len(mine_occ) != len(want_occ):
            continue
        for mo, wo in _pair(mine_occ, want_occ):
            message = _axis_message(d, mo, wo)
            if message:
                return message
    if extra:
        return f"your {d} also uses {_and(extra)}, which it should not need"
    # functions
    for fn in r.functions:
        if s.functions[fn] < r.functions[fn]:
            return f"your {d} does not apply {fn}" if fn != "softmax" else f"your {d} is missing a softmax"
    for fn in s.functions:
        if s.functions[fn] > r.functions[fn]:
            return f"your {d} applies {fn}, which it should not"
    return None


def _pair(mine: list[_Occ], want: list[_Occ]) -> list[tuple[_Occ, _Occ]]:
    """Pair occurrences of one tensor, closest first."""
    if len(mine) == 1 or len(mine) > MAX_PAIRED:
        return list(zip(mine, want))
    best = min(itertools.permutations(mine), key=lambda p: sum(_distance(a, b) for a, b in zip(p, want)))
    return list(zip(best, want))


MAX_PAIRED = 6  # occurrences of one tensor paired by trying every order (6! = 720 orders)


def _distance(a: _Occ, b: _Occ) -> int:
    return sum(x[:2] != y[:2] for x, y in zip(a.roles, b.roles))


def _axis_message(d: str, mo: _Occ, wo: _Occ) -> str | None:
    name = mo.name
    shown = f"{name}[{','.join(mo.axes)}]"
    s_sum = {a for a, r in zip(mo.axes, mo.roles) if r[0] == "sum"}
    w_sum = {a for a, r in zip(wo.axes, wo.roles) if r[0] == "sum"}
    if s_sum != w_sum and s_sum and w_sum:
        return f"your {d} sums over {_set(s_sum)}, not {_set(w_sum)} (the axes of {shown})"
    for a, mr, wr in zip(mo.axes, mo.roles, wo.roles):
        if mr == wr or (mr[0] == wr[0] == "affine" and mr[1] == wr[1]):
            continue
        if wr[0] == "sum" and mr[0] == "free":
            return f"your {d} keeps {mr[1]} on the {a} axis of {shown}, where that axis is summed over"
        if wr[0] == "free" and mr[0] == "sum":
            return f"your {d} sums over the {a} axis of {shown}, which should carry {wr[1]}"
        if wr[0] == "free" and mr[0] == "free":
            return f"your {d} reads {name} with {mr[1]} on its {a} axis, not {wr[1]}"
        if wr[0] == "affine":
            mine = mr[2] if mr[0] == "affine" else ("a plain index" if mr[0] in ("free", "sum") else "a word id")
            return f"your {d} reads the {a} axis of {shown} at {mine}: check the stride and the offset"
        if wr[0] == "gather":
            return f"your {d} does not read the {a} axis of {shown} through {wr[1]}"
        if mr[0] == "affine":
            return f"your {d} reads the {a} axis of {shown} at {mr[2]}, not at a plain index"
        if mr[0] == "gather":
            return f"your {d} reads the {a} axis of {shown} through {mr[1]}, which it should not"
    return None


def _softmax_scale(d: str, student: dict[str, Equation], reference: dict[str, Equation], q: EquationQuestion,
                   tensors: dict[str, torch.Tensor], draw: Mapping[str, int],
                   expected: dict[str, torch.Tensor], functions: dict) -> str | None:
    """If both equations normalise the same axes and the scores inside differ by a constant factor, say so."""
    try:
        s_eq = _inline(student[d], student, q)
        r_eq = _inline(reference[d], reference, q)
        s_soft = [n for n in eqn.walk(_softmaxes(s_eq.rhs)) if isinstance(n, Reduce) and n.op == "softmax"]
        r_soft = [n for n in eqn.walk(_softmaxes(r_eq.rhs)) if isinstance(n, Reduce) and n.op == "softmax"]
        if len(s_soft) != 1 or len(r_soft) != 1:
            return None
        a = _scores(s_eq, s_soft[0], q, tensors, draw, expected, functions)
        b = _scores(r_eq, r_soft[0], q, tensors, draw, expected, functions)
    except TooLarge:
        raise
    except (EquationError, KeyError, ValueError, RuntimeError):
        return None
    if a is None or b is None or a.shape != b.shape:
        return None
    c = _ratio(a, b)
    if c is not None:
        return f"the scores inside your {d}'s softmax differ from the expected ones by a constant factor: check the scale"
    return None


def _scores(eq: Equation, soft: Reduce, q: EquationQuestion, tensors: dict[str, torch.Tensor],
            draw: Mapping[str, int], expected: dict[str, torch.Tensor], functions: dict) -> torch.Tensor | None:
    """The argument of the softmax `soft` in `eq`, over the left side's indices (axes in its order)."""
    free = _free_indices(soft.body)
    if not free <= set(eq.indices):
        return None
    lhs = tuple(i for i in eq.indices if i in free)
    if not lhs:
        return None
    probe = Equation("__scores", lhs, soft.body, eq.line, eq.text)
    env = {**tensors, **{k: v for k, v in expected.items() if k != eq.name}}
    inputs = {k: Spec(tuple(v.shape), integer=not v.is_floating_point()) for k, v in env.items()}
    typed = eqn.check([probe], inputs, {}, sizes=None, require=False, functions=dict.fromkeys(functions))
    shape = tuple(expected[eq.name].shape[eq.indices.index(i)] for i in lhs)
    out = eqn.evaluate_typed(typed, env, draw, declared={"__scores": shape}, functions=functions,
                             budget=_BUDGET.get().seconds_left())["__scores"]
    return out
