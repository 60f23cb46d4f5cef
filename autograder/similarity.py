"""Similar submissions: every pair of students per assignment, compared on the code they wrote.

What is compared is each student's own code: for every solution cell, the lines of their
cell that are not the release's (difflib against the released cell: the signature, the
docstring and the stub are the course's, not theirs), concatenated in notebook order. The
comparison is copydetect's (winnowed k-gram fingerprints of the code after Pygments
tokenising, with names, strings and comments folded, as in MOSS): the release's own code is
boilerplate, and so is code that many students share (a fingerprint found in more than
`common` of the submissions: the natural way to write a line, or the reference everyone
converged on), as MOSS's `-m` does. A pair is ranked by how many characters of
uncommon code they share, then by the larger of the two similarity fractions; the report
is one HTML page (no script, nothing remote) with the pairs ranked and, for each, the two
students' code side by side with the shared passages highlighted.
"""
from __future__ import annotations

import difflib
import io
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import nbformat

from coursenb import cells

K, WINDOW = 25, 4  # copydetect's noise threshold (characters of filtered code) and winnowing window


@dataclass(frozen=True)
class Work:
    """One student's own code for one assignment, as one Python document."""

    student: str
    assignment: str
    code: str


@dataclass(frozen=True)
class Pair:
    """Two students' shared uncommon code."""

    assignment: str
    a: str
    b: str
    shared: int  # characters of filtered code in shared passages (of a)
    similarity: tuple[float, float]  # fraction of each one's uncommon code that is shared
    slices: tuple  # copydetect's copied slices in a's and b's code
    codes: tuple[str, str]

    @property
    def score(self) -> float:
        return max(self.similarity)


def own_code(submitted: nbformat.NotebookNode, release: nbformat.NotebookNode) -> str:
    """The lines of the student's code solution cells that the release does not have, cell by cell."""
    released = {cells.grade_id(c): c.source for c in release.cells if cells.grade_id(c)}
    parts = []
    for cell in submitted.cells:
        gid = cells.grade_id(cell)
        if cell.get("cell_type") != "code" or gid is None or gid not in released or not cells.is_solution(cell):
            continue
        theirs = str(cell.source).splitlines()
        stub = released[gid].splitlines()
        lines = []
        for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, stub, theirs, autojunk=False).get_opcodes():
            if tag in ("insert", "replace"):
                lines.extend(theirs[j1:j2])
        if any(line.strip() for line in lines):
            parts.append(f"# ---- {gid}\n" + "\n".join(lines))
    return "\n\n".join(parts) + "\n" if parts else ""


def collect_work(course_dir: Path, assignment: str) -> list[Work]:
    """Every submitted student's own code for `assignment` (all its notebooks)."""
    course_dir = Path(course_dir)
    releases = {p.stem: nbformat.read(p, as_version=4) for p in sorted((course_dir / "release" / assignment).glob("*.ipynb"))}
    out = []
    for folder in sorted(p for p in (course_dir / "submitted").glob(f"*/{assignment}") if p.is_dir()):
        code = []
        for name, release in releases.items():
            try:
                nb = nbformat.read(folder / f"{name}.ipynb", as_version=4)
            except Exception:  # noqa: BLE001 - missing or unreadable: nothing to compare
                continue
            code.append(own_code(nb, release))
        if any(code):
            out.append(Work(folder.parent.name, assignment, "".join(code)))
    return out


def _fingerprint(code: str, boilerplate=None):
    from copydetect import CodeFingerprint

    return CodeFingerprint("answer.py", K, WINDOW, boilerplate=boilerplate, fp=io.StringIO(code), language="python")


def _release_code(course_dir: Path, assignment: str) -> str:
    out = []
    for path in sorted((Path(course_dir) / "release" / assignment).glob("*.ipynb")):
        out += [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    return "\n\n".join(out)


def _without(fp, drop: set) -> None:
    """Remove fingerprints `drop` from `fp` (and recount its coverage), as copydetect does for boilerplate."""
    from copydetect.utils import get_token_coverage

    fp.hashes = {h for h in fp.hashes if h not in drop}
    fp.hash_idx = {h: i for h, i in fp.hash_idx.items() if h not in drop}
    fp.token_coverage = get_token_coverage(fp.hash_idx, fp.k, len(fp.filtered_code))


def compare(works: list[Work], release_code: str = "", common: float = 0.25) -> list[Pair]:
    """Every pair of `works`, ranked (most shared uncommon code first); fingerprints of the release and those
    found in more than max(2, common x the number of works) of the works are left out."""
    from copydetect import compare_files

    if len(works) < 2:
        return []
    fps = [_fingerprint(w.code) for w in works]
    boiler = _fingerprint(release_code).hashes if release_code.strip() else set()
    seen: dict[int, int] = {}
    for fp in fps:
        for h in fp.hashes:
            seen[h] = seen.get(h, 0) + 1
    limit = max(2, int(common * len(works)))
    drop = boiler | {h for h, n in seen.items() if n > limit}
    for fp in fps:
        _without(fp, drop)
    pairs = []
    for (i, wa), (j, wb) in combinations(enumerate(works), 2):
        if not fps[i].hashes or not fps[j].hashes:
            continue
        overlap, sims, slices = compare_files(fps[i], fps[j])
        if overlap:
            pairs.append(Pair(wa.assignment, wa.student, wb.student, int(overlap), (float(sims[0]), float(sims[1])),
                              slices, (fps[i].raw_code, fps[j].raw_code)))
    return sorted(pairs, key=lambda p: (-p.shared, -p.score, p.a, p.b))


# ----------------------------------------------------------------------------- the report


def _spans(slices) -> list[tuple[int, int]]:
    """copydetect's [2, n] array of shared character ranges as (start, end) pairs."""
    import numpy as np

    slices = np.asarray(slices)
    return [] if slices.size == 0 else list(zip(slices[0].tolist(), slices[1].tolist()))


def report(pairs_by_assignment: dict[str, list[Pair]], students_by_assignment: dict[str, int], path: Path,
           top: int = 20) -> Path:
    """One HTML page (templates/similarity.html.j2): per assignment, the ranked pairs and each pair's code side
    by side, the shared passages marked."""
    from autograder.pages import marked, render

    sections = [{"assignment": a, "n": students_by_assignment.get(a, 0),
                 "pairs": [{"rank": k, "a": p.a, "b": p.b, "shared": p.shared, "score": p.score,
                            "of": p.similarity, "codes": [marked(p.codes[i], _spans(p.slices[i])) for i in (0, 1)]}
                           for k, p in enumerate(pairs[:top], start=1)]}
                for a, pairs in pairs_by_assignment.items()]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render("similarity.html.j2", title="Similar submissions", sections=sections), encoding="utf-8")
    return path


def run(course_dir: Path, assignment: str | None = None, common: float = 0.25) -> tuple[dict[str, list[Pair]], dict[str, int], Path]:
    """Compare every assignment (or one) and write course_dir/similarity/index.html."""
    course_dir = Path(course_dir)
    release = course_dir / "release"
    from autograder.grades import _order

    assignments = [assignment] if assignment else sorted((p.name for p in release.iterdir() if p.is_dir()), key=_order)
    pairs, counts = {}, {}
    for a in assignments:
        works = collect_work(course_dir, a)
        counts[a] = len(works)
        pairs[a] = compare(works, _release_code(course_dir, a), common)
    return pairs, counts, report(pairs, counts, course_dir / "similarity" / "index.html")
