"""Shapes: a tensor's axes as sizes (`"H,K,J"`), and a declared function's vectors."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from attnlab.equations._tree import Sym


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


def function_spec(text: str | None) -> tuple[tuple[Sym, ...], Sym] | None:
    """`"J,K,U -> J"` -> ((J, K, U), J): the sizes of a declared function's argument vectors and of its result."""
    if text is None:
        return None
    args, arrow, out = text.partition("->")
    if not arrow or not out.strip():
        raise ValueError(f"a function is declared as 'J,K,U -> J' (its vectors' sizes), not {text!r}")
    return spec(args).axes, spec(out).axes[0]
