"""Which release a notebook is: the stamp `autograder release` writes in its metadata, and a checksum of
what the release fixes (its locked cells and its test cells, as nbgrader checksums them).

    {"metadata": {"attnlab_release": {"version": "ch1-3f9a0c12d4e5", "checksum": "..."}}}

The checksum is nbgrader's per-cell checksum (`nbgrader.utils.compute_checksum`: the source, the
cell type, whether it is graded, an answer or locked, its id and its points) of every locked or
test cell in order, hashed together. A notebook whose cells no longer give the checksum it
claims runs other visible tests than its release's: `validate` says so instead of "Ready to
submit", and the grader grades a notebook by the release its cells match.
"""
from __future__ import annotations

import hashlib

KEY = "attnlab_release"


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _meta(cell: dict) -> dict:
    meta = cell.get("metadata", {}) or {}
    nb = meta.get("nbgrader") if isinstance(meta, dict) else None
    return nb if isinstance(nb, dict) else {}


def is_fixed(cell: dict) -> bool:
    """A cell the release fixes: locked (nbgrader's rule: a graded cell that is no answer is locked) or a test."""
    meta = _meta(cell)
    return bool(meta) and not meta.get("solution", False) and bool(meta.get("grade", False) or meta.get("locked", False))


def cell_checksum(cell: dict) -> str:
    """nbgrader's checksum of one cell (nbgrader.utils.compute_checksum), on a plain dict."""
    meta = _meta(cell)
    m = hashlib.md5()
    m.update(_source(cell).encode("utf-8"))
    m.update(str(cell.get("cell_type", "")).encode("utf-8"))
    grade, solution = meta.get("grade", False), meta.get("solution", False)
    locked = False if solution else True if grade else meta.get("locked", False)
    for flag in (grade, solution, locked):
        m.update(str(flag).encode("utf-8"))
    m.update(str(meta.get("grade_id", "")).encode("utf-8"))
    if grade:
        m.update(str(float(meta.get("points", 0))).encode("utf-8"))
    return m.hexdigest()


def checksum(nb: dict) -> str:
    """The checksum of what a release fixes in notebook `nb` (its locked and test cells, in order)."""
    cells = nb.get("cells", []) if isinstance(nb, dict) else []
    digest = hashlib.sha256()
    for cell in cells:
        if isinstance(cell, dict) and is_fixed(cell):
            digest.update(cell_checksum(cell).encode() + b"\n")
    return digest.hexdigest()


def stamp(nb: dict) -> dict | None:
    """The release stamp a notebook carries ({'version', 'checksum'}), or None."""
    meta = nb.get("metadata", {}) if isinstance(nb, dict) else {}
    found = meta.get(KEY) if isinstance(meta, dict) else None
    if isinstance(found, dict) and isinstance(found.get("version"), str) and isinstance(found.get("checksum"), str):
        return {"version": found["version"][:80], "checksum": found["checksum"][:80]}
    return None


def mismatch(nb: dict) -> str | None:
    """A sentence when the notebook's locked and test cells are not those of the release it claims; else None."""
    claimed = stamp(nb)
    if claimed is None:
        return None
    if checksum(nb) != claimed["checksum"]:
        return (f"this notebook says it is release {claimed['version']}, but its visible tests or locked cells are not "
                "that release's (changed, or from another release): these checks are not the ones your notebook will "
                "be graded with. Download the course's current notebook and copy your answers into it.")
    return None
