"""Plain-text tables for the terminal, safe to print whatever a student put in a name."""
from __future__ import annotations

import re
from collections.abc import Sequence

# C0 and C1 control characters, DEL, and the Unicode bidirectional controls: a file name or a
# student id holding them must not move the cursor, recolour or reorder the instructor's terminal.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: object, newlines: bool = False) -> str:
    """`text` with every control character shown as an escape (`\\x1b`), never sent raw."""
    text = str(text)
    if not newlines:
        text = text.replace("\n", "\\n").replace("\t", "\\t")
    return _CONTROL.sub(lambda m: m[0].encode("unicode_escape").decode("ascii"), text)


def cell(x: object) -> str:
    """A table cell: numbers without trailing zeros, None as a dash, control characters escaped."""
    if x is None:
        return "-"
    if isinstance(x, float):
        return "nan" if x != x else f"{x:.2f}".rstrip("0").rstrip(".")
    return printable(x)


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], title: str | None = None) -> str:
    """Columns aligned (numbers right, text left), a rule under the header."""
    text = [[cell(x) for x in row] for row in rows]
    headers = [printable(h) for h in headers]
    widths = [max([len(h)] + [len(r[i]) for r in text]) for i, h in enumerate(headers)]
    numeric = [all(_is_number(r[i]) for r in text) and bool(text) for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)).rstrip()

    out = [printable(title, newlines=True)] if title else []
    out += [line(list(headers)), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in text]
    return "\n".join(out)


def _is_number(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return s in ("-", "")
