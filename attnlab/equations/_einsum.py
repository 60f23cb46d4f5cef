"""The einsum shorthand: `"ad,bd->ab / sqrt(D)"` where a question names its operands."""
from __future__ import annotations

import re
from collections.abc import Sequence

from attnlab.equations._grammar import _normalise, parse
from attnlab.equations._tree import Budget, Equation, EquationError

_EINSUM = re.compile(r"^\s*([A-Za-z]+(?:\s*,\s*[A-Za-z]+)*)\s*->\s*([A-Za-z]*)\s*(.*)$", re.S)


def is_einsum(text: object) -> bool:
    """True if `text` looks like an einsum spec (`"ad,bd->ab"`, maybe with a scale)."""
    return isinstance(text, str) and "=" not in text and _EINSUM.match(_normalise(text)) is not None


def einsum_equation(text: str, operands: Sequence[str], define: str) -> str:
    """The equation an einsum spec stands for: `"ad,bd->ab / sqrt(D)"` with operands (P, Q)
    and define S -> `S[a,b] = (sum_d P[a,d] * Q[b,d]) / sqrt(D)`."""
    m = _EINSUM.match(_normalise(text))
    if m is None:
        raise EquationError(f"`{text}` is not an einsum spec like \"ad,bd->ab\"")
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
            raise EquationError(f"after the spec, write the scale as `/ sqrt(D)` or `* 1/sqrt(D)`, not `{tail}`")
        scale = f" {tail[0]} ({tail[1:].strip()})"
    return f"{define}[{','.join(out)}] = ({body}){scale}"


def parse_answer(text: object, operands: Sequence[str] | None = None, define: str | None = None,
                 budget: Budget | None = None) -> tuple[Equation, ...]:
    """`parse`, accepting an einsum spec where the question names its operands and the one tensor it defines."""
    if operands and define and is_einsum(text):
        return parse(einsum_equation(str(text), operands, define), budget)
    return parse(text, budget)
