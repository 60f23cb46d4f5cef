"""The tree of an index equation: its nodes, their text, and the limits on an answer."""
from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from attnlab._lexicon import EQUATION_MAX_BUILT as MAX_BUILT
from attnlab._lexicon import too_large_to_judge, too_slow_to_judge

TIME_BUDGET = 2.0         # seconds to evaluate one answer on one set of tensors

Sym = str | int  # a size: its name ("K") or its value (4)


class EquationError(ValueError):
    """A malformed answer, or one that cannot be evaluated; str(error) says what and where."""


class TooLarge(EquationError):
    """An answer whose judging would build more than its budget allows, or outlast its deadline."""


class Budget:
    """What one answer may cost from here on: `nodes` tree nodes built, until `seconds` from now.
    `spend` counts what a stage builds and checks the clock; past either it raises TooLarge."""

    def __init__(self, seconds: float, nodes: int = MAX_BUILT) -> None:
        self.seconds, self.limit = seconds, nodes
        self.deadline, self.nodes = time.monotonic() + seconds, nodes

    def spend(self, nodes: int = 1) -> None:
        """Count `nodes` built; raise TooLarge once the nodes or the time are spent."""
        self.nodes -= nodes
        self.afford(0)
        if time.monotonic() > self.deadline:
            raise TooLarge(too_slow_to_judge(self.seconds))

    def afford(self, nodes: int) -> None:
        """Raise TooLarge now if building `nodes` more would overrun the budget."""
        if nodes > self.nodes:
            raise TooLarge(too_large_to_judge(self.limit))

    def seconds_left(self) -> float:
        """Seconds until the deadline (at least 0)."""
        return max(0.0, self.deadline - time.monotonic())


# --------------------------------------------------------------------------- the tree

@dataclass(frozen=True)
class Num:
    """A number."""

    value: float


@dataclass(frozen=True)
class Var:
    """A bare name on the right side: a size used as a number (`K`), or a tensor with no indices."""

    name: str


@dataclass(frozen=True)
class Affine:
    """An index position: sum of coef*index plus a constant (`n`, `2*n + 1`, `n - 1`)."""

    terms: tuple[tuple[str, int], ...]  # (index, coefficient) in the order written, no zero coefficient
    const: int = 0

    @property
    def plain(self) -> str | None:
        """The index name if this position holds one index as it is."""
        return self.terms[0][0] if len(self.terms) == 1 and self.terms[0][1] == 1 and self.const == 0 else None


@dataclass(frozen=True)
class Gather:
    """An index position read from an integer tensor (`item[o,q]` in `price[item[o,q]]`)."""

    ref: Ref


@dataclass(frozen=True)
class Slice:
    """`:` in an argument of a question's function: the whole vector along that axis (`MIX(u[:], v[:])`)."""


Index = Affine | Gather | Slice


@dataclass(frozen=True)
class Ref:
    """A tensor read at some indices: `M[x,y,j]`."""

    name: str
    indices: tuple[Index, ...]


@dataclass(frozen=True)
class Call:
    """A function applied elementwise: `exp(...)`, `sigmoid(...)`."""

    fn: str
    arg: Node


@dataclass(frozen=True)
class Apply:
    """A function the question declares (`MIX(u[:], v[:])`): vectors in, a vector out (its axis `:`)."""

    fn: str
    args: tuple[Node, ...]


@dataclass(frozen=True)
class Reduce:
    """`sum_{over} body` or `softmax_{over} body`."""

    op: str
    over: tuple[str, ...]
    body: Node


@dataclass(frozen=True)
class BinOp:
    """`left op right` for op in + - * /."""

    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class Neg:
    """`-arg`."""

    arg: Node


@dataclass(frozen=True)
class Pow:
    """`base ^ exponent` (a constant exponent)."""

    base: Node
    exponent: Node


Node = Num | Var | Ref | Call | Apply | Reduce | BinOp | Neg | Pow


@dataclass(frozen=True)
class Equation:
    """One line: `name[indices] = rhs`, with its line number and text (for messages)."""

    name: str
    indices: tuple[str, ...]
    rhs: Node
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.name}[{','.join(self.indices)}] = {show(self.rhs)}"


def show(node: Node | Index) -> str:
    """The text of a tree, brackets where needed."""
    return _show(node, 0)


_PREC = {"+": 1, "-": 1, "*": 2, "/": 2}


def _show(n: Node | Index, outer: int) -> str:
    if isinstance(n, Num):
        return f"{n.value:g}"
    if isinstance(n, Var):
        return n.name
    if isinstance(n, Affine):
        parts = []
        for name, c in n.terms:
            term = name if abs(c) == 1 else f"{abs(c)}*{name}"
            parts.append(("- " if c < 0 else "+ ") + term if parts else ("-" if c < 0 else "") + term)
        if n.const or not parts:
            parts.append((f"- {-n.const}" if n.const < 0 else f"+ {n.const}") if parts else str(n.const))
        return " ".join(parts)
    if isinstance(n, Gather):
        return _show(n.ref, 0)
    if isinstance(n, Slice):
        return ":"
    if isinstance(n, Apply):
        return f"{n.fn}({', '.join(_show(a, 0) for a in n.args)})"
    if isinstance(n, Ref):
        return f"{n.name}[{','.join(_show(i, 0) for i in n.indices)}]" if n.indices else n.name
    if isinstance(n, Call):
        return f"{n.fn}({_show(n.arg, 0)})"
    if isinstance(n, Reduce):
        over = n.over[0] if len(n.over) == 1 else "{" + ",".join(n.over) + "}"
        text = f"{n.op}_{over} {_show(n.body, 2)}"
        return f"({text})" if outer > 0 else text
    if isinstance(n, Neg):
        text = f"-{_show(n.arg, 3)}"
        return f"({text})" if outer > 1 else text
    if isinstance(n, Pow):
        return f"{_show(n.base, 4)}^{_show(n.exponent, 4)}"
    if isinstance(n, BinOp):
        p = _PREC[n.op]
        right = _show(n.right, p + 1 if n.op in "-/" else p)
        text = f"{_show(n.left, p)} {n.op} {right}"
        return f"({text})" if outer > p else text
    raise TypeError(type(n))


def children(n: Node) -> tuple[Node, ...]:
    """The sub-expressions of a node (index positions excluded)."""
    if isinstance(n, (Call, Neg)):
        return (n.arg,)
    if isinstance(n, Reduce):
        return (n.body,)
    if isinstance(n, BinOp):
        return (n.left, n.right)
    if isinstance(n, Pow):
        return (n.base, n.exponent)
    if isinstance(n, Apply):
        return n.args
    return ()


def walk(n: Node) -> Iterable[Node]:
    """Every node of a tree, parents first (gathers' integer refs included)."""
    stack = [n]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, Ref):
            stack.extend(i.ref for i in reversed(node.indices) if isinstance(i, Gather))
        stack.extend(reversed(children(node)))


def indices_of(ix: Index) -> tuple[str, ...]:
    """The index names an index position depends on."""
    if isinstance(ix, Affine):
        return tuple(name for name, _ in ix.terms)
    if isinstance(ix, Slice):
        return ()
    out: list[str] = []
    for inner in ix.ref.indices:
        out += [i for i in indices_of(inner) if i not in out]
    return tuple(out)



def _clip(s: str, n: int = 60) -> str:
    return s if len(s) <= n else s[:n - 3] + "..."
