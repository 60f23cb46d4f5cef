r"""Index equations: the book's answer language for derivations.

A derivation's answer is a string of equations in the book's index notation
(`front/notation.md`), one per line (or separated by `;`), each defining one tensor:

    LAYER_EQUATIONS = r'''
    Query[h,t,k] = sum_j WQ[h,k,j] * M[t,j]
    Key[h,t,k]   = sum_j WK[h,k,j] * M[t,j]
    Value[h,t,i] = sum_j WV[h,i,j] * M[t,j]
    alpha[h,t,t2] = softmax_{t2} (sum_k Query[h,t,k] * Key[h,t2,k]) / sqrt(K)
    V[h,t,i] = sum_{t2} alpha[h,t,t2] * Value[h,t2,i]
    '''

(Chapter 1's layer, which the book states; no question asks for it.)

The language, exactly:

* `Name[i, j, ...] = expression`: the left side names the tensor and its indices (distinct
  names, any you like: `x'`, `x2` and `t1` are all indices). Every index on the left must
  appear on the right, and every index on the right that no `sum` binds must be on the left.
  A tensor is defined once, from the question's inputs and tensors defined on earlier lines.
* `sum_j`, `sum_{j,k}` (also `\sum_{j}`, `Σ_j`) sum over the listed indices; `softmax_{t2}`
  normalises over the listed indices (they stay indices of the result). Both apply to the
  **whole product that follows them**, up to the next `+` or `-` outside brackets:
  `sum_j a[j] * b[j] + c` is (Σ_j a b) + c, and `softmax_{t2}(s[t,t2]) / sqrt(K)` is the softmax
  of s/√K. Use brackets to say otherwise: `(softmax_{t2} s[t,t2]) * v[t2]`.
* `+ - * /`, `^` (or `**`) with a constant exponent, numbers, brackets `( )` or `{ }`, and
  multiplication by juxtaposition: `WQ[h,k,j] M[x,y,j]`.
* sizes as numbers: `sqrt(K)`, `1/sqrt(K)`, `K^(1/2)` (the question names its sizes).
* functions `exp`, `log` (natural), `sigmoid` (also `σ`, `\sigma`), `tanh`, `sqrt`, `relu`.
* an index position holds an index (`M[t, j]`), an integer combination of indices
  (`M[b, 2*t + d, j]`, `z[t-1, j]`), or a word id read from an integer tensor (`E[w[b,t], j]`).
* a function the question declares by the sizes of its vectors (the captioner's `CELL`, declared
  `"J,K,U -> J"`) is called on whole vectors, `:` marking each vector's axis, and its result's
  axis is `:` on the left: `z_next[:] = CELL(z[:], V[:], E[w[t], :])`.
* LaTeX and Unicode where cheap: `\mathrm{softmax}`, `\exp`, `\frac{a}{b}`, `\sqrt{K}`, `\cdot`,
  `·`, `×`, `−`, `W^Q[h,k,j]` (= `WQ`), `\alpha`/`α` (= `alpha`), `\tilde{W}^Q` or `W̃Q`
  (= `WQ_tilde`); `#` starts a comment.
* an einsum spec is shorthand where a question names its operands: `"hkj,tj->htk"` (with the
  operands WQ, M), with an optional scale after it: `"hkj,tj->htk / sqrt(K)"` or
  `"hkj,tj->htk * 1/sqrt(K)"`.

Nothing is ever evaluated as Python: a lark grammar reads the text, and `evaluate` interprets
the tree with torch on the tensors you give it, under caps on the text, the number of
equations and indices, nesting, the size of every intermediate tensor, and time.

    evaluate(LAYER_EQUATIONS, {"WQ": WQ, "WK": WK, "WV": WV, "M": M})["V"]   # V[h,t,i]

(`sizes={"K": 4}` gives a size used as a number when no index named k tells it; `functions=` gives a
declared function as a callable.)

`attnlab.testing.expect_equations` checks an answer's form (names, indices, sizes) for a
visible test; only the grader checks that the equations are right.
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache

import torch

__all__ = [
    "Affine", "BinOp", "Call", "Equation", "EquationError", "Gather", "Neg", "Num", "Pow", "Ref", "Reduce",
    "Spec", "Typed", "Var", "check", "einsum_equation", "evaluate", "evaluate_typed", "indices_of", "is_einsum",
    "parse", "parse_answer", "show", "spec",
]

MAX_CHARS = 6000          # characters in an answer
MAX_LINE = 600            # characters in one equation
MAX_EQUATIONS = 24        # equations in an answer
MAX_INDICES = 12          # distinct indices in one equation
MAX_NODES = 300           # nodes of one equation's tree
MAX_DEPTH = 40            # nesting of brackets and of the tree
MAX_ELEMENTS = 1_000_000  # elements of any tensor computed while evaluating
TIME_BUDGET = 2.0         # seconds to evaluate one answer on one set of tensors
FUNCTIONS = ("exp", "log", "sigmoid", "tanh", "sqrt", "relu")
REDUCTIONS = ("sum", "softmax")

Sym = str | int  # a size: its name ("K") or its value (4)


class EquationError(ValueError):
    """A malformed answer, or one that cannot be evaluated; str(error) says what and where."""


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
    """An index position: sum of coef*index plus a constant (`t`, `2*t + d`, `t - 1`)."""

    terms: tuple[tuple[str, int], ...]  # (index, coefficient) in the order written, no zero coefficient
    const: int = 0

    @property
    def plain(self) -> str | None:
        """The index name if this position holds one index as it is."""
        return self.terms[0][0] if len(self.terms) == 1 and self.terms[0][1] == 1 and self.const == 0 else None


@dataclass(frozen=True)
class Gather:
    """An index position read from an integer tensor (`w[b,t]` in `E[w[b,t], j]`)."""

    ref: Ref


@dataclass(frozen=True)
class Slice:
    """`:` in an argument of a question's function: the whole vector along that axis (`CELL(z[:], V[:], e[:])`)."""


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
    """A function the question declares (`CELL(z[:], V[:], e[:])`): vectors in, a vector out (its axis `:`)."""

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


# --------------------------------------------------------------------------- reading text

GRAMMAR = r"""
start: lhs "=" sum
lhs: NAME ("[" [lhs_index ("," lhs_index)*] "]")?
lhs_index: NAME | COLON
?sum: product
    | sum "+" product       -> add
    | sum "-" product       -> minus
?product: unary
    | product "*" unary     -> mul
    | product "/" unary     -> div
    | product atom          -> mul
    | product reduce        -> mul
?unary: power
    | "-" unary             -> neg
    | "+" unary
    | reduce
reduce: REDUCE over product
over: NAME | "{" NAME ([","] NAME)* "}"
?index: sum
    | COLON                 -> whole
?power: atom
    | atom ("^" | "**") exponent -> pow
?exponent: atom
    | "-" exponent          -> neg
?atom: NUMBER               -> number
    | NAME                  -> var
    | NAME "[" index ("," index)* "]"  -> ref
    | NAME "(" sum ("," sum)* ")"  -> call
    | NAME "{" sum "}"      -> call
    | "(" sum ")"           -> group
    | "{" sum "}"           -> group
REDUCE.2: /(sum|softmax)_/
COLON: ":"
NAME: /[^\W\d]\w*'*/
NUMBER: /\d+(\.\d*)?([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?/
%ignore /[ \t\f\r]+/
"""


@cache
def _parser():
    from lark import Lark

    return Lark(GRAMMAR, parser="lalr", maybe_placeholders=True)


_GREEK = {
    "α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "epsilon", "ζ": "zeta", "η": "eta",
    "θ": "theta", "ι": "iota", "κ": "kappa", "λ": "lambda", "μ": "mu", "ν": "nu", "ξ": "xi", "π": "pi",
    "ρ": "rho", "τ": "tau", "υ": "upsilon", "φ": "phi", "χ": "chi", "ψ": "psi", "ω": "omega",
    "Γ": "Gamma", "Δ": "Delta", "Θ": "Theta", "Λ": "Lambda", "Ξ": "Xi", "Π": "Pi", "Φ": "Phi",
    "Ψ": "Psi", "Ω": "Omega", "ℓ": "l",
}
_REPLACE = [
    (r"\\(?:mathrm|operatorname|text|textrm|rm|mathit|textit)\s*\{\s*([^{}]*?)\s*\}", r"\1"),
    (r"\\(?:left|right|big|Big|bigg|Bigg)\b", ""),
    (r"\\[,;:! ]", " "),
    (r"\\(?:cdot|times)\b|[·×⋅∙]", "*"),
    (r"[−–]", "-"),
    (r"′", "'"), (r"″", "''"),
    (r"\\sum\b|[Σ∑]", "sum"),
    (r"√\s*([\w.]+)", r"sqrt(\1)"), (r"√", "sqrt"),
    (r"\\sigma\b|σ", "sigmoid"),
    (r"\\(exp|log|ln|tanh|sqrt)\b", r"\1"),
    (r"\bln\b", "log"),
    (r"\\tilde\s*\{?\s*([A-Za-z])\s*\}?\s*(?:\^\s*\{?\s*([A-Za-z])\s*\}?)?", r"\1\2_tilde"),
    (r"([A-Za-z])\u0303\s*(?:\^\s*\{?\s*([A-Za-z])\s*\}?|([A-Za-z]))?", r"\1\2\3_tilde"),
    (r"([^\W\d]\w*)\^\s*\{?\s*(\w+)\s*\}?(?=\s*\[)", r"\1\2"),
    (r"\\([A-Za-z]+)", r"\1"),  # \alpha -> alpha (any other command: its name)
    (r"\$+", " "),
]


def _normalise(text: str) -> str:
    """Unicode and LaTeX spellings -> the plain language."""
    text = "".join(_GREEK.get(c, c) for c in text)
    text = _expand_frac(text)
    for pattern, repl in _REPLACE:
        text = re.sub(pattern, repl, text)
    return text


def _expand_frac(text: str) -> str:
    r"""`\frac{a}{b}` -> `((a)/(b))` (balanced braces)."""
    out, pos = [], 0
    for m in re.finditer(r"\\[dt]?frac\s*(?=\{)", text):
        if m.start() < pos:
            continue
        args, k = [], m.end()
        for _ in range(2):
            while k < len(text) and text[k].isspace():
                k += 1
            if k >= len(text) or text[k] != "{":
                break
            depth, start = 0, k
            while k < len(text):
                depth += {"{": 1, "}": -1}.get(text[k], 0)
                k += 1
                if depth == 0:
                    break
            args.append(text[start + 1:k - 1])
        if len(args) == 2:
            out.append(text[pos:m.start()] + f"(({args[0]})/({args[1]}))")
            pos = k
    return "".join(out) + text[pos:]


def _lines(text: str) -> list[tuple[int, str]]:
    """(line number, text) of each equation: `;` and newlines end one, except inside brackets."""
    out: list[tuple[int, str]] = []
    depth, buf, start, line = 0, [], 1, 1
    closing = {")": "(", "]": "[", "}": "{"}
    stack: list[str] = []
    comment = False
    for c in text + "\n":
        if c == "\n":
            line += 1
            comment = False
        if comment:
            continue
        if c == "#":
            comment = True
            continue
        if c in "([{":
            stack.append(c)
            if len(stack) > MAX_DEPTH:
                raise EquationError(f"line {start}: brackets nested more than {MAX_DEPTH} deep")
        elif c in ")]}":
            if not stack or stack[-1] != closing[c]:
                raise EquationError(f"line {line}: `{c}` closes a bracket that was not opened: "
                                    f"{''.join(buf).strip()}{c}")
            stack.pop()
        depth = len(stack)
        if c in "\n;" and depth == 0:
            if "".join(buf).strip():
                out.append((start, " ".join("".join(buf).split())))
            buf, start = [], line
            continue
        buf.append(" " if c == "\n" else c)
    if stack:
        raise EquationError(f"line {start}: a bracket `{stack[-1]}` is never closed: {''.join(buf).strip()}")
    return out


def parse(text: object) -> tuple[Equation, ...]:
    """The equations in `text`; EquationError says what cannot be read and where."""
    if not isinstance(text, str):
        raise EquationError(f"the answer should be a string of equations, got {type(text).__name__}")
    if len(text) > MAX_CHARS:
        raise EquationError(f"the answer is {len(text)} characters long; at most {MAX_CHARS} are read")
    lines = _lines(_normalise(text))
    if not lines:
        raise EquationError("the answer holds no equation (write one per line: Name[i,j] = ...)")
    if len(lines) > MAX_EQUATIONS:
        raise EquationError(f"the answer has {len(lines)} equations; at most {MAX_EQUATIONS} are read")
    return tuple(_parse_line(n, s) for n, s in lines)


def _parse_line(n: int, s: str) -> Equation:
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

    if len(s) > MAX_LINE:
        raise EquationError(f"line {n} is {len(s)} characters long; at most {MAX_LINE} are read")
    if s.count("=") != 1:
        what = "no `=`" if "=" not in s else "more than one `=`"
        raise EquationError(f"line {n} has {what}: write one equation per line, Name[i,j] = ... ({s})")
    try:
        tree = _parser().parse(s)
        eq = _Build(n, s).transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, EquationError):
            raise exc.orig_exc from None
        raise EquationError(f"line {n}: cannot read it ({exc.orig_exc})") from None
    except UnexpectedInput as exc:
        col = getattr(exc, "column", 0) or 0
        if isinstance(exc, UnexpectedEOF) or (isinstance(exc, UnexpectedToken) and exc.token.type == "$END"):
            why = "the line ends too early"
        elif isinstance(exc, UnexpectedCharacters):
            why = f"`{s[col - 1]}` is not part of the language"
        else:
            why = f"`{exc.token}` is unexpected here"  # type: ignore[attr-defined]
        raise EquationError(f"line {n}, column {col}: {why}\n    {s}\n    {' ' * max(col - 1, 0)}^") from None
    _check_size(eq)
    return eq


def _check_size(eq: Equation) -> None:
    nodes = 0
    stack: list[tuple[Node, int]] = [(eq.rhs, 1)]
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if depth > MAX_DEPTH or nodes > MAX_NODES:
            raise EquationError(f"line {eq.line}: the equation is too long or too deeply nested to read")
        stack.extend((c, depth + 1) for c in children(node))
        if isinstance(node, Ref):
            stack.extend((i.ref, depth + 1) for i in node.indices if isinstance(i, Gather))
    names = {i for node in walk(eq.rhs) if isinstance(node, Ref) for ix in node.indices for i in indices_of(ix)}
    if len(names | set(eq.indices)) > MAX_INDICES:
        raise EquationError(f"line {eq.line}: more than {MAX_INDICES} different indices in one equation")


def _lark_transformer():
    from lark.visitors import Transformer_NonRecursive

    return Transformer_NonRecursive


class _Build(_lark_transformer()):
    """lark tree -> Equation."""

    def __init__(self, line: int, text: str) -> None:
        super().__init__()
        self.line, self.text = line, text
        self.grouped: set[int] = set()  # ids of nodes written in brackets

    def group(self, c):
        self.grouped.add(id(c[0]))
        return c[0]

    def _err(self, msg: str) -> EquationError:
        return EquationError(f"line {self.line}: {msg} ({self.text})")

    def start(self, c):
        name, indices = c[0]
        args = {id(a) for n in walk(c[1]) if isinstance(n, Apply) for a in n.args}
        for n in walk(c[1]):
            if isinstance(n, Ref) and id(n) not in args and any(isinstance(i, Slice) for i in n.indices):
                raise self._err(f"{show(n)}: `:` (a whole vector) is only for the arguments of a function "
                                "the question declares, like CELL(z[:], ...)")
        return Equation(name, indices, c[1], self.line, self.text)

    def lhs_index(self, c):
        return str(c[0])

    def lhs(self, c):
        name, idx = str(c[0]), [str(t) for t in c[1:] if t is not None]
        for i in idx:
            if idx.count(i) > 1:
                what = "`:` (the output of a function)" if i == ":" else f"index {i}"
                raise self._err(f"{what} appears twice on the left of {name}")
        return name, tuple(idx)

    def whole(self, c):
        return _WHOLE

    def add(self, c):
        return BinOp("+", c[0], c[1])

    def minus(self, c):
        return BinOp("-", c[0], c[1])

    def mul(self, c):
        return BinOp("*", c[0], c[1])

    def div(self, c):
        return BinOp("/", c[0], c[1])

    def neg(self, c):
        return Neg(c[0])

    def pow(self, c):
        return Pow(c[0], c[1])

    def number(self, c):
        return Num(float(c[0]))

    def var(self, c):
        name = str(c[0])
        if name in REDUCTIONS or name.startswith(tuple(f"{r}_" for r in REDUCTIONS)):
            raise self._err(f"write {name} with its indices: {name}_j or {name}_{{j,k}}")
        return Var(name)

    def over(self, c):
        return tuple(str(t) for t in c if t is not None)

    def reduce(self, c):
        op, over, body = str(c[0]).rstrip("_"), c[1], c[2]
        for i in over:
            if over.count(i) > 1:
                raise self._err(f"{op}_{{...}} lists index {i} twice")
        if op == "softmax":
            self._check_scope(over, body)
        return Reduce(op, over, body)

    def _check_scope(self, over: tuple[str, ...], body: Node) -> None:
        """`softmax_{t2}(s[t,t2]) * v[t2]` reads as the softmax of the whole product: say so."""
        factors: list[tuple[str, Node]] = []
        node = body
        while isinstance(node, BinOp) and node.op in "*/" and id(node) not in self.grouped:
            factors.append((node.op, node.right))
            node = node.left
        if id(node) not in self.grouped or not factors:
            return
        for op, f in factors:
            used = {i for n in walk(f) if isinstance(n, Ref) for ix in n.indices for i in indices_of(ix)}
            if op == "*" and used & set(over):
                first, rest = show(node), show(f)
                sub = over[0] if len(over) == 1 else "{" + ",".join(over) + "}"
                raise self._err(f"softmax_{sub} applies to the whole product that follows it, ({_clip(first)}) * "
                                f"{_clip(rest)}; to multiply after normalising write (softmax_{sub} ...) * {_clip(rest)}, "
                                f"to normalise the product write softmax_{sub} (... * {_clip(rest)})")

    def call(self, c):
        fn, args = str(c[0]), c[1:]
        if fn in REDUCTIONS:
            raise self._err(f"write {fn} with its indices: {fn}_{{...}}(...)")
        if fn not in FUNCTIONS:  # a function the question may declare (CELL): checked against the question
            if not any(isinstance(i, Slice) for a in args if isinstance(a, Ref) for i in a.indices):
                raise self._err(f"{fn}(...) is not a known function (known: {', '.join(FUNCTIONS)}, and the functions "
                                f"a question declares, called on vectors like CELL(z[:], V[:])); to multiply, write "
                                f"{fn} * (...)")
            for k, a in enumerate(args):
                if not (isinstance(a, Ref) and sum(isinstance(i, Slice) for i in a.indices) == 1):
                    raise self._err(f"{fn}(...): argument {k + 1} is `{show(a)}`; each argument of a function is one "
                                    "tensor with `:` on the axis of its vector, like z[:] or E[w[t], :]")
            return Apply(fn, tuple(args))
        if len(args) != 1:
            raise self._err(f"{fn} takes one argument, got {len(args)}")
        return Call(fn, args[0])

    def ref(self, c):
        name = str(c[0])
        return Ref(name, tuple(self._index(name, k, x) for k, x in enumerate(c[1:])))

    def _index(self, name: str, k: int, x: Node) -> Index:
        if x is _WHOLE:
            return Slice()
        if isinstance(x, Ref):
            for inner in x.indices:
                if isinstance(inner, Gather):
                    raise self._err(f"{show(x)}: a word id cannot itself be read through another tensor")
            return Gather(x)
        affine = _affine(x)
        if affine is None:
            raise self._err(f"{name}[...]: position {k + 1} holds `{show(x)}`; an index position holds an index, "
                            "an integer combination of indices (2*t + d, t - 1) or a word id w[b,t]")
        return affine


_WHOLE = object()  # `:` while the tree is built


def _affine(x: Node) -> Affine | None:
    """`x` as an integer combination of indices, or None."""
    if isinstance(x, Var):
        return Affine(((x.name, 1),))
    if isinstance(x, Num):
        return Affine((), int(x.value)) if float(x.value).is_integer() else None
    if isinstance(x, Neg):
        a = _affine(x.arg)
        return None if a is None else Affine(tuple((n, -c) for n, c in a.terms), -a.const)
    if isinstance(x, BinOp) and x.op in "+-":
        a, b = _affine(x.left), _affine(x.right)
        if a is None or b is None:
            return None
        sign = 1 if x.op == "+" else -1
        coef = dict(a.terms)
        for n, c in b.terms:
            coef[n] = coef.get(n, 0) + sign * c
        return Affine(tuple((n, c) for n, c in coef.items() if c), a.const + sign * b.const)
    if isinstance(x, BinOp) and x.op == "*":
        a, b = _affine(x.left), _affine(x.right)
        if a is None or b is None:
            return None
        if a.terms and b.terms:
            return None
        k, other = (a.const, b) if not a.terms else (b.const, a)
        return Affine(tuple((n, k * c) for n, c in other.terms if k * c), k * other.const)
    return None


# --------------------------------------------------------------------------- einsum shorthand

_EINSUM = re.compile(r"^\s*([A-Za-z]+(?:\s*,\s*[A-Za-z]+)*)\s*->\s*([A-Za-z]*)\s*(.*)$", re.S)


def is_einsum(text: object) -> bool:
    """True if `text` looks like an einsum spec (`"hkj,tj->htk"`, maybe with a scale)."""
    return isinstance(text, str) and "=" not in text and _EINSUM.match(_normalise(text)) is not None


def einsum_equation(text: str, operands: Sequence[str], define: str) -> str:
    """The equation an einsum spec stands for: `"hkj,tj->htk / sqrt(K)"` with operands (WQ, M)
    and define Query -> `Query[h,t,k] = (sum_j WQ[h,k,j] * M[t,j]) / sqrt(K)`."""
    m = _EINSUM.match(_normalise(text))
    if m is None:
        raise EquationError(f"`{text}` is not an einsum spec like \"hkj,tj->htk\"")
    ins = [s.strip() for s in m.group(1).split(",")]
    out, tail = m.group(2), m.group(3).strip()
    if len(ins) != len(operands):
        raise EquationError(f"the spec `{m.group(1)}->{out}` has {len(ins)} operand(s); this question's einsum "
                            f"takes {len(operands)}: {', '.join(operands)}")
    for c in out:
        if out.count(c) > 1:
            raise EquationError(f"index {c} appears twice after -> in `{text.strip()}`")
    seen = "".join(ins)
    for c in out:
        if c not in seen:
            raise EquationError(f"index {c} after -> appears in no operand of `{text.strip()}`")
    summed = sorted({c for c in seen if c not in out}, key=seen.index)
    product = " * ".join(f"{name}[{','.join(letters)}]" for name, letters in zip(operands, ins))
    body = f"sum_{{{','.join(summed)}}} {product}" if summed else product
    scale = ""
    if tail:
        if tail[0] not in "*/":
            raise EquationError(f"after the spec, write the scale as `/ sqrt(K)` or `* 1/sqrt(K)`, not `{tail}`")
        scale = f" {tail[0]} ({tail[1:].strip()})"
    return f"{define}[{','.join(out)}] = ({body}){scale}"


def parse_answer(text: object, operands: Sequence[str] | None = None, define: str | None = None) -> tuple[Equation, ...]:
    """`parse`, accepting an einsum spec where the question names its operands and the one tensor it defines."""
    if operands and define and is_einsum(text):
        return parse(einsum_equation(str(text), operands, define))
    return parse(text)


# --------------------------------------------------------------------------- shapes (specs)

@dataclass(frozen=True)
class Spec:
    """A tensor's axes as sizes (`H,K,J`), and for an integer tensor the range of its values (`B,T in V`)."""

    axes: tuple[Sym, ...]
    values: Sym | None = None  # an integer tensor's values lie in range(values)
    integer: bool = False      # an integer tensor (word ids), its range known or not

    @property
    def letters(self) -> tuple[str, ...]:
        """Axis names for messages: the size's letter in lower case, numbered when repeated (x, y, x2, y2)."""
        out: list[str] = []
        for a in self.axes:
            base = str(a).lower() if isinstance(a, str) else f"axis{len(out) + 1}"
            name, k = base, 1
            while name in out:
                k += 1
                name = f"{base}{k}"
            out.append(name)
        return tuple(out)

    def show(self, name: str) -> str:
        """`M[x,y,j]`."""
        return f"{name}[{','.join(self.letters)}]"


def spec(text: str | Spec | Sequence[Sym]) -> Spec:
    """`"H,K,J"` -> Spec(("H","K","J")); `"B,T in V"`: an integer tensor with values in range(V)."""
    if isinstance(text, Spec):
        return text
    if not isinstance(text, str):
        return Spec(tuple(text))
    body, _, values = text.partition(" in ")
    axes = tuple(a.strip() for a in body.split(",") if a.strip())
    values = values.strip()
    return Spec(tuple(int(a) if a.isdigit() else a for a in axes),
                (int(values) if values.isdigit() else values) if values else None, bool(values))


# --------------------------------------------------------------------------- form check

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


def function_spec(text: str | None) -> tuple[tuple[Sym, ...], Sym] | None:
    """`"J,K,U -> J"` -> ((J, K, U), J): the sizes of a declared function's argument vectors and of its result."""
    if text is None:
        return None
    args, arrow, out = text.partition("->")
    if not arrow or not out.strip():
        raise ValueError(f"a function is declared as 'J,K,U -> J' (its vectors' sizes), not {text!r}")
    return spec(args).axes, spec(out).axes[0]


def check(equations: Sequence[Equation], inputs: Mapping[str, Spec | str], defines: Mapping[str, Spec | str] | None = None,
          sizes: Iterable[str] | None = None, *, require: bool = True,
          functions: Mapping[str, str | None] | None = None) -> list[Typed]:
    """The form check: names, index counts, free and summed indices, sizes; the shapes of `defines`.

    `inputs` and `defines` map names to specs (`"H,K,J"`); sizes are names or numbers. With `sizes`,
    only those names may be used as numbers. `require`: every name in `defines` must be defined.
    `functions`: the functions the question declares (`{"CELL": "J,K,U -> J"}`; None: sizes unchecked).
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


def _clip(s: str, n: int = 60) -> str:
    return s if len(s) <= n else s[:n - 3] + "..."


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


# --------------------------------------------------------------------------- evaluation

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

    def err(self, msg: str) -> EquationError:
        eq = self.eq
        return EquationError(f"line {eq.line} ({eq.name}): {msg}" if eq else msg)

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise EquationError(f"evaluating the equations took too long (the limit is {self.budget:.2g} s)")

    def cap(self, axes: Iterable[str]) -> None:
        n = 1
        for a in axes:
            n *= self.sizes[a]
        if n > MAX_ELEMENTS:
            raise self.err(f"an intermediate tensor over indices {','.join(axes)} would have {n} elements "
                           f"(at most {MAX_ELEMENTS})")


def evaluate(answer: str | Sequence[Equation], tensors: Mapping[str, torch.Tensor],
             sizes: Mapping[str, float] | None = None,
             functions: Mapping[str, Callable[..., torch.Tensor]] | None = None) -> dict[str, torch.Tensor]:
    """Evaluate equations on your own tensors: {name: tensor} for every tensor the answer defines, axes in
    the order of its left side. `tensors` are the inputs (integer tensors for word ids); `sizes` gives the
    value of a size used as a number (`K` in sqrt(K)) when it cannot be read from an index named k;
    `functions` gives a declared function (`CELL`) as a callable: each argument arrives with its vector
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
    """`sum_{over} a * b * ...` as one einsum, without the product over every index."""
    parts = [_eval(f, run, depth + 1) for f in _factors(n.body)]
    axes: list[str] = []
    for p in parts:
        axes += [a for a in p.axes if a not in axes]
    if any(i not in axes for i in n.over):
        raise run.err(f"sum_{{{','.join(n.over)}}} over an expression without {','.join(n.over)}")
    out = tuple(a for a in axes if a not in n.over)
    run.cap(out)
    letter = {a: chr(ord("a") + k) for k, a in enumerate(axes)}
    spec_ = ",".join("".join(letter[a] for a in p.axes) for p in parts) + "->" + "".join(letter[a] for a in out)
    return _Named(torch.einsum(spec_, *[p.t for p in parts]), out)


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
