"""Plain-text tables for the terminal."""
from __future__ import annotations

from collections.abc import Sequence


def cell(x: object) -> str:
    """A table cell: numbers without trailing zeros, None as a dash."""
    if x is None:
        return "-"
    if isinstance(x, float):
        return "nan" if x != x else f"{x:.2f}".rstrip("0").rstrip(".")
    return str(x)


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], title: str | None = None) -> str:
    """Columns aligned (numbers right, text left), a rule under the header."""
    text = [[cell(x) for x in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in text]) for i, h in enumerate(headers)]
    numeric = [all(_is_number(r[i]) for r in text) and bool(text) for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)).rstrip()

    out = [title] if title else []
    out += [line(list(headers)), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in text]
    return "\n".join(out)


def _is_number(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return s in ("-", "")
