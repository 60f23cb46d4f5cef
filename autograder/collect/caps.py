"""A notebook a student wrote, read within `Caps` for the instructor's tools (collect, feedback, similarity).

Outputs larger than `output_bytes` are dropped (grading runs the notebook again), a cell's
source longer than `cell_bytes` is cut there, and a notebook still larger than
`notebook_bytes` is not placed or shown; each cut is a sentence that names the cell and says why.
Whether the bytes are a notebook at all is the one guard's question (`autograder.notebook_guard`).
"""
from __future__ import annotations

import json
from pathlib import Path

from autograder import notebook_guard
from autograder.collect.sources import Caps, MiB


def check_notebook(data: bytes) -> str | None:
    """None if `data` is a readable notebook (the one guard, then nbformat), else why not."""
    return checked(data)[1]


def checked(data: bytes) -> tuple[dict | None, str | None]:
    """`check_notebook`, with the file's JSON (None where it is not a readable notebook) for `capped`."""
    try:
        parsed = notebook_guard.parse(data)
        notebook_guard.notebook(parsed)
    except notebook_guard.UnreadableNotebook as exc:
        return None, f"not a readable notebook: {exc}"
    return parsed, None


def too_deep(data: bytes) -> str | None:
    """Why `data` is refused outright (JSON nested deeper than any notebook: tools that read notebooks recurse
    over it), else None."""
    try:
        notebook_guard.parse(data)
    except notebook_guard.TooDeep as exc:
        return str(exc)
    except notebook_guard.UnreadableNotebook:
        return None
    return None


def capped(data: bytes, caps: Caps, parsed: dict | None = None) -> tuple[bytes, list[str]]:
    """A readable notebook's bytes within `caps` (outputs larger than output_bytes dropped, sources longer than
    cell_bytes cut) and a sentence per cut naming the cell; the bytes unchanged when nothing is cut. `parsed`:
    the bytes' JSON as `checked` gave it (changed here), else they are parsed again."""
    nb = notebook_guard.parse(data) if parsed is None else parsed
    cuts = []
    for k, cell in enumerate(nb.get("cells") or []):
        if not isinstance(cell, dict):
            continue
        meta = cell.get("metadata")
        gid = meta.get("nbgrader", {}).get("grade_id") if isinstance(meta, dict) and isinstance(
            meta.get("nbgrader"), dict) else None
        name = f"cell {gid}" if isinstance(gid, str) else f"cell {k + 1}"
        outputs = cell.get("outputs")
        if isinstance(outputs, list) and outputs:
            size = len(json.dumps(outputs))
            if size > caps.output_bytes:
                cell["outputs"] = []
                cuts.append(f"{name}'s outputs ({size_text(size)}) dropped: more than {size_text(caps.output_bytes)}, "
                            "and grading runs the notebook again")
        source = cell.get("source")
        text = "".join(x for x in source if isinstance(x, str)) if isinstance(source, list) else source
        if isinstance(text, str) and len(text.encode()) > caps.cell_bytes:
            cell["source"] = text.encode()[:caps.cell_bytes].decode("utf-8", "ignore")
            cuts.append(f"{name}'s source ({size_text(len(text.encode()))}) cut to its first {size_text(caps.cell_bytes)}: "
                        "no answer of the course is that long")
    return (json.dumps(nb, indent=1, ensure_ascii=False).encode() + b"\n", cuts) if cuts else (data, [])


def read_bounded(path: Path, caps: Caps = Caps()):  # -> tuple[nbformat.NotebookNode | None, list[str]]
    """A notebook file as the instructor's pages read it (feedback, similarity): within `caps`, whoever wrote
    the file. Larger than `notebook_bytes`: not read, (None, [why]); unreadable: (None, [why]); else the
    notebook with outputs over `output_bytes` dropped and sources over `cell_bytes` cut, and a sentence per cut."""
    import nbformat

    path = Path(path)
    try:
        size = path.stat().st_size
        if size > caps.notebook_bytes:
            return None, [f"{path.name} is {size_text(size)}, more than the {size_text(caps.notebook_bytes)} read: not shown"]
        data = path.read_bytes()
    except OSError as exc:
        return None, [f"{path.name} cannot be read ({type(exc).__name__})"]
    if problem := check_notebook(data):
        return None, [f"{path.name}: {problem}"]
    data, cuts = capped(data, caps)
    return nbformat.reads(data.decode("utf-8"), as_version=4), cuts


def size_text(n: int) -> str:
    return f"{n / MiB:.1f} MiB" if n >= MiB else f"{n / 1024:.0f} KiB"
