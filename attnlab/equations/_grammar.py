"""Reading text: the lark grammar, LaTeX/Unicode spellings, one equation per line."""
from __future__ import annotations

import re
from functools import cache

from attnlab import _lexicon as lex
from attnlab._lexicon import EQUATION_FUNCTIONS as FUNCTIONS
from attnlab._lexicon import EQUATION_MAX_CHARS as MAX_CHARS
from attnlab._lexicon import EQUATION_MAX_EQUATIONS as MAX_EQUATIONS
from attnlab._lexicon import EQUATION_MAX_INDICES as MAX_INDICES
from attnlab._lexicon import EQUATION_MAX_LINE as MAX_LINE
from attnlab._lexicon import EQUATION_MAX_NODES as MAX_NODES
from attnlab._lexicon import EQUATION_REDUCTIONS as REDUCTIONS
from attnlab._lexicon import MAX_DEPTH
from attnlab.equations._tree import (
    Affine,
    Apply,
    BinOp,
    Budget,
    Call,
    Equation,
    EquationError,
    Gather,
    Index,
    Neg,
    Node,
    Num,
    Pow,
    Reduce,
    Ref,
    Slice,
    Var,
    _clip,
    children,
    indices_of,
    show,
    walk,
)

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


def _replacements() -> list[tuple[str, str]]:
    """(pattern, replacement) pairs that turn the lexicon's spellings into the plain language, in order."""
    return [
        (lex.latex(lex.WRAPPERS) + r"\s*\{\s*([^{}]*?)\s*\}", r"\1"),
        (lex.latex(lex.SIZING) + r"\s*", ""),
        (r"\\[,;:! ]", " "),
        (lex.spelled({"symbols": lex.TIMES["symbols"][1:], "latex": lex.TIMES["latex"]}), "*"),
        (lex.spelled({"symbols": lex.DIVIDE["symbols"][1:], "latex": lex.DIVIDE["latex"]}), "/"),
        (lex.symbols(lex.MINUS["symbols"][1:]), "-"),
        *((prime, plain) for prime, plain in lex.PRIMES.items()),
        *((sup, f"^{power}") for sup, power in lex.SUPERSCRIPTS.items()),
        *((v, f"({a}/{b})") for v, (a, b) in lex.VULGAR.items()),
        (lex.spelled(lex.SUM), "sum"),
        ("(?:" + lex.spelled(lex.ROOT) + r")\s*([\w.]+)", r"sqrt(\1)"), (lex.symbols(lex.ROOT["symbols"]), "sqrt"),
        (r"\\sigma\b|σ", "sigmoid"),
        (r"\\(exp|log|ln|tanh|sqrt)\b", r"\1"),
        (r"\bln\b", "log"),
        (r"\\tilde\s*\{?\s*([A-Za-z])\s*\}?\s*(?:\^\s*\{?\s*([A-Za-z])\s*\}?)?", r"\1\2_tilde"),
        (r"([A-Za-z])\u0303\s*(?:\^\s*\{?\s*([A-Za-z])\s*\}?|([A-Za-z]))?", r"\1\2\3_tilde"),
        (r"([^\W\d]\w*)\^\s*\{?\s*(\w+)\s*\}?(?=\s*\[)", r"\1\2"),
        (r"\\([A-Za-z]+)", r"\1"),  # \alpha -> alpha (any other command: its name)
        (r"\$+", " "),
    ]


_REPLACE = [(re.compile(pattern), repl) for pattern, repl in _replacements()]


def _normalise(text: str) -> str:
    """Unicode and LaTeX spellings -> the plain language."""
    text = "".join(lex.GREEK.get(c, c) for c in text)
    text = _expand_frac(text)
    for pattern, repl in _REPLACE:
        text = pattern.sub(repl, text)
    return text


def _expand_frac(text: str) -> str:
    r"""`\frac{a}{b}` -> `((a)/(b))` (balanced braces); a part may be one character, as in `\frac12`."""
    out, pos = [], 0
    for m in re.finditer(lex.latex(lex.FRACTION) + r"\s*", text):
        if m.start() < pos:
            continue
        args, k = [], m.end()
        for _ in range(2):
            while k < len(text) and text[k].isspace():
                k += 1
            if k < len(text) and text[k].isascii() and text[k].isalnum():
                args.append(text[k])
                k += 1
                continue
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


def parse(text: object, budget: Budget | None = None) -> tuple[Equation, ...]:
    """The equations in `text`; EquationError says what cannot be read and where. With a `budget`, each
    equation's nodes are counted against it and its deadline checked (TooLarge past either)."""
    if not isinstance(text, str):
        raise EquationError(f"the answer should be a string of equations, got {type(text).__name__}")
    if len(text) > MAX_CHARS:
        raise EquationError(f"the answer is {len(text)} characters long; at most {MAX_CHARS} are read")
    lines = _lines(_normalise(text))
    if not lines:
        raise EquationError("the answer holds no equation (write one per line: Name[i,j] = ...)")
    if len(lines) > MAX_EQUATIONS:
        raise EquationError(f"the answer has {len(lines)} equations; at most {MAX_EQUATIONS} are read")
    out = []
    for n, s in lines:
        eq = _parse_line(n, s)
        if budget is not None:
            budget.spend(sum(1 for _ in walk(eq.rhs)))
        out.append(eq)
    return tuple(out)


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
                                "the question declares, like MIX(u[:], ...)")
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
        if not {i for n in walk(node) if isinstance(n, Ref) for ix in n.indices for i in indices_of(ix)} & set(over):
            return  # a scale written first, `softmax_b (1/tau) * s[a,b]`: only the product can be meant
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
        if fn not in FUNCTIONS:  # a function the question may declare (MIX): checked against the question
            if not any(isinstance(i, Slice) for a in args if isinstance(a, Ref) for i in a.indices):
                raise self._err(f"{fn}(...) is not a known function (known: {', '.join(FUNCTIONS)}, and the functions "
                                f"a question declares, called on vectors like MIX(u[:], v[:])); to multiply, write "
                                f"{fn} * (...)")
            for k, a in enumerate(args):
                if not (isinstance(a, Ref) and sum(isinstance(i, Slice) for i in a.indices) == 1):
                    raise self._err(f"{fn}(...): argument {k + 1} is `{show(a)}`; each argument of a function is one "
                                    "tensor with `:` on the axis of its vector, like u[:] or guess[a, :]")
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
                            "an integer combination of indices (2*n + 1, n - 1) or an id read from an integer tensor, item[o]")
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
