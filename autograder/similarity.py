"""Similar submissions: every pair of students per assignment, compared on the code they wrote.

What is compared is each student's own code, what their notebook runs that the release does
not have: for every answer cell, the lines of their cell that are not the released cell's
(difflib: the signature, the docstring and the stub are the course's, not theirs), and for every
other code cell (one they added, or a release cell they changed) the lines that are not the
release's code; test and locked cells are left out (the grader runs the release's). Code pasted
into a cell of one's own below an untouched stub is compared like an answer. The
comparison is copydetect's (winnowed k-gram fingerprints of the code after Pygments
tokenising, with names, strings and comments folded, as in MOSS): the release's own code is
boilerplate, and so is code that many students share (a fingerprint found in more than
`common` of the submissions: the natural way to write a line, or the reference everyone
converged on), as MOSS's `-m` does. The common-code rule cannot hide copying: a pair
whose code is the same (identical after the folding) or nearly all shared (`NEAR` of each
one's code, the release's code left out) is reported whatever the rule drops, so a copy
ring of any size whose members' code is the same or nearly all shared is found, every pair
of it, in a small class too (where "more than a quarter of the class" is two students);
a ring whose members rewrite more than that is found only through its uncommon code (tests/
test_manual_similarity.py::test_a_copy_ring_of_any_size_is_found). Such pairs rank first; the others by how many characters of uncommon
code they share, then by the larger of the two similarity fractions; the report
is one HTML page (no script, nothing remote) with the pairs ranked and, for each, the two
students' code side by side with the shared passages highlighted.
"""
from __future__ import annotations

import copy
import difflib
import io
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import nbformat

from autograder.collect import read_bounded
from autograder.pages import marked, render
from autograder.record import releases
from coursenb import cells
from coursenb.chapters import assignment_order

K, WINDOW = 25, 4  # copydetect's noise threshold (characters of filtered code) and winnowing window
OWN_CODE_BYTES = 64 * 1024  # of one student's own code compared (answers are a few KiB); the page says so past it
NEAR = 0.9  # a pair sharing this much of each one's code (the release's left out) is reported, common code or not
MIN_COMMON = 2  # code is common only when found in more than this many students' work, whatever the fraction


@dataclass(frozen=True)
class Work:
    """One student's own code for one assignment, as one Python document."""

    student: str
    assignment: str
    code: str
    notes: tuple[str, ...] = ()  # what was cut before comparing (a notebook or its code past the caps)


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
    kind: str = ""  # "identical", "nearly all shared" (reported whatever the common-code rule says), or ""

    @property
    def score(self) -> float:
        return max(self.similarity)


def own_code(submitted: nbformat.NotebookNode, release: nbformat.NotebookNode) -> str:
    """What the student's notebook runs that the release does not have, cell by cell: of an answer cell, the lines
    that are not the released cell's; of any other code cell (one they added, or a release cell they changed), the
    lines that are not the release's code. Test and locked cells are left out: the grader runs the release's."""
    by_id = {cells.grade_id(c): c for c in release.cells if cells.grade_id(c)}
    release_lines = {line for c in release.cells if c.get("cell_type") == "code" for line in str(c.source).splitlines()}
    parts = []
    for k, cell in enumerate(submitted.cells):
        if cell.get("cell_type") != "code":
            continue
        gid = cells.grade_id(cell)
        released = by_id.get(gid) if gid is not None else None
        if released is not None and not cells.is_solution(released):
            continue  # a test or locked cell: restored from the release before it runs
        theirs = str(cell.source).splitlines()
        if released is None:  # linear: a diff against the whole release costs its repeated lines times theirs
            lines = [line for line in theirs if line not in release_lines]
        else:  # against the released cell (a stub of a few lines): a diff, cheap
            lines = []
            for tag, _, _, j1, j2 in difflib.SequenceMatcher(None, str(released.source).splitlines(), theirs,
                                                             autojunk=False).get_opcodes():
                if tag in ("insert", "replace"):
                    lines.extend(theirs[j1:j2])
        if any(line.strip() for line in lines):
            parts.append(f"# ---- {gid if released is not None else f'cell {k + 1}'}\n" + "\n".join(lines))
    return "\n\n".join(parts) + "\n" if parts else ""


def collect_work(course_dir: Path, assignment: str) -> list[Work]:
    """Every submitted student's own code for `assignment` (all its notebooks), each notebook against its own
    release where the course keeps it (autograder.record.releases), else today's."""
    course_dir = Path(course_dir)
    releases = {p.stem: nbformat.read(p, as_version=4) for p in sorted((course_dir / "release" / assignment).glob("*.ipynb"))}
    out = []
    for folder in sorted(p for p in (course_dir / "submitted").glob(f"*/{assignment}") if p.is_dir()):
        code, notes = [], []
        for name, release in releases.items():
            if not (folder / f"{name}.ipynb").is_file():
                continue
            nb, cuts = read_bounded(folder / f"{name}.ipynb")  # bounded whoever wrote the file
            notes += cuts
            if nb is not None:
                code.append(own_code(nb, _own_release(course_dir, assignment, name, nb) or release))
        text = "".join(code)
        if len(text.encode()) > OWN_CODE_BYTES:
            notes.append(f"own code of {len(text.encode()) // 1024} KiB: compared on its first {OWN_CODE_BYTES // 1024} KiB")
            text = text.encode()[:OWN_CODE_BYTES].decode("utf-8", "ignore")
        if text or notes:
            out.append(Work(folder.parent.name, assignment, text, tuple(notes)))
    return [w for w in out if w.code] + [w for w in out if not w.code]


def _own_release(course_dir: Path, assignment: str, notebook: str, nb: nbformat.NotebookNode):
    """The kept release notebook `nb` was made from (by its locked and test cells), or None."""
    try:
        version = releases.identify(course_dir, assignment, notebook, nb).version
        found = next((k for k in releases.kept(course_dir, assignment, notebook) if k.version == version), None)
        return nbformat.read(found.student, as_version=4) if found is not None else None
    except Exception:  # noqa: BLE001 - a release that cannot be read: today's is the reference
        return None


def _fingerprint(code: str, boilerplate=None):
    from copydetect import CodeFingerprint

    return CodeFingerprint("answer.py", K, WINDOW, boilerplate=boilerplate, fp=io.StringIO(code), language="python")


def _release_code(course_dir: Path, assignment: str) -> str:
    """The code of every student notebook of `assignment` the course released: today's and every kept release's."""
    out = []
    for path in sorted((Path(course_dir) / "release" / assignment).glob("*.ipynb")):
        for p in [path] + [k.student for k in releases.kept(course_dir, assignment, path.stem) if k.student.is_file()]:
            out += [c.source for c in nbformat.read(p, as_version=4).cells if c.cell_type == "code"]
    return "\n\n".join(out)


def _without(fp, drop: set) -> None:
    """Remove fingerprints `drop` from `fp` (and recount its coverage), as copydetect does for boilerplate."""
    from copydetect.utils import get_token_coverage

    fp.hashes = {h for h in fp.hashes if h not in drop}
    fp.hash_idx = {h: i for h, i in fp.hash_idx.items() if h not in drop}
    fp.token_coverage = get_token_coverage(fp.hash_idx, fp.k, len(fp.filtered_code))


def common_limit(common: float, students: int) -> int:
    """Code found in more than this many of `students` works is common: the fraction `common` of them, and
    never fewer than MIN_COMMON."""
    return max(MIN_COMMON, int(common * students))


def compare(works: list[Work], release_code: str = "", common: float = 0.25) -> list[Pair]:
    """Every pair of `works` that shares code, ranked: identical and nearly-all-shared pairs first (whatever the
    common-code rule says), then by shared uncommon code. Fingerprints of the release are left out everywhere;
    those found in more than `common_limit(common, len(works))` works are left out of the uncommon comparison."""
    from copydetect import compare_files

    if len(works) < 2:
        return []
    boiler = _fingerprint(release_code).hashes if release_code.strip() else set()
    whole = [_fingerprint(w.code) for w in works]
    for fp in whole:
        _without(fp, boiler)
    seen: dict[int, int] = {}
    for fp in whole:
        for h in fp.hashes:
            seen[h] = seen.get(h, 0) + 1
    limit = common_limit(common, len(works))
    drop = {h for h, n in seen.items() if n > limit}
    uncommon = [copy.copy(fp) for fp in whole]
    for fp in uncommon:
        _without(fp, drop)
    pairs = []
    for (i, wa), (j, wb) in combinations(enumerate(works), 2):
        fa, fb = whole[i], whole[j]
        if not fa.hashes or not fb.hashes:
            continue
        found = None
        if fa.filtered_code == fb.filtered_code or \
                len(fa.hashes & fb.hashes) >= NEAR * min(len(fa.hashes), len(fb.hashes)):
            overlap, sims, slices = compare_files(fa, fb)
            kind = "identical" if fa.filtered_code == fb.filtered_code else \
                "nearly all shared" if min(sims) >= NEAR else ""
            if kind:
                found = (overlap, sims, slices, kind)
        if found is None and uncommon[i].hashes and uncommon[j].hashes:
            overlap, sims, slices = compare_files(uncommon[i], uncommon[j])
            found = (overlap, sims, slices, "") if overlap else None
        if found:
            overlap, sims, slices, kind = found
            pairs.append(Pair(wa.assignment, wa.student, wb.student, int(overlap), (float(sims[0]), float(sims[1])),
                              slices, (fa.raw_code, fb.raw_code), kind))
    rank = {"identical": 0, "nearly all shared": 1, "": 2}
    return sorted(pairs, key=lambda p: (rank[p.kind], -p.shared, -p.score, p.a, p.b))


# ----------------------------------------------------------------------------- the report


def _spans(slices) -> list[tuple[int, int]]:
    """copydetect's [2, n] array of shared character ranges as (start, end) pairs."""
    import numpy as np

    slices = np.asarray(slices)
    return [] if slices.size == 0 else list(zip(slices[0].tolist(), slices[1].tolist()))


def report(pairs_by_assignment: dict[str, list[Pair]], students_by_assignment: dict[str, int], path: Path,
           top: int = 20, notes: dict[str, list[tuple[str, str]]] | None = None) -> Path:
    """One HTML page (templates/similarity.html.j2): per assignment, what was cut before comparing (`notes`:
    (student, what)), the ranked pairs and each pair's code side by side, the shared passages marked."""
    notes = notes or {}
    sections = [{"assignment": a, "n": students_by_assignment.get(a, 0), "notes": notes.get(a, []),
                 "pairs": [{"rank": k, "a": p.a, "b": p.b, "shared": p.shared, "score": p.score, "kind": p.kind,
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
    assignments = [assignment] if assignment else sorted((p.name for p in release.iterdir() if p.is_dir()), key=assignment_order)
    pairs, counts, notes = {}, {}, {}
    for a in assignments:
        works = collect_work(course_dir, a)
        notes[a] = [(w.student, n) for w in works for n in w.notes]
        works = [w for w in works if w.code]
        counts[a] = len(works)
        pairs[a] = compare(works, _release_code(course_dir, a), common)
    return pairs, counts, report(pairs, counts, course_dir / "similarity" / "index.html", notes=notes)
