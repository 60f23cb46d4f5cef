"""Placing an owned file: which notebook of the course it is, by its name, else by its content.

A notebook is matched by its file name (without Canvas's `-N` or a browser's ` (N)` suffix),
and when the name matches nothing, by its content: the cells of the release it holds
(graded-cell ids and locked cells that belong to exactly one notebook of the course). A
student's zip is opened once: each file in it is its owner's (the owner's time and late mark),
whatever its entries are called; a zip inside it is not opened.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from autograder import notebook_guard
from autograder.collect.layouts import Context, Owner, Problem, ignored, nested_owner, owner_of, split_name
from autograder.collect.sources import Budget, Caps, Entry, read_zip
from coursenb import cells

# What an LMS or a browser appends to a re-uploaded or re-downloaded file name.
COPY_SUFFIX = re.compile(r"(?:-\d+| ?\(\d+\))\Z")


@dataclass(frozen=True)
class Placed:
    """A file mapped to (student, assignment, notebook)."""

    entry: Entry
    owner: Owner
    assignment: str
    notebook: str
    how: str = "name"  # "name" or "content"
    note: str = ""  # a line for the instructor (how a notebook was placed by its content)

    @property
    def student(self) -> str:
        return self.owner.student

    @property
    def identity(self):
        return self.owner.identity

    @property
    def late(self) -> bool:
        return self.owner.late

    @property
    def order(self) -> tuple:
        """Larger is the later upload: the LMS's order, then the upload's time."""
        return self.owner.order, self.entry.timestamp or dt.datetime.min.replace(tzinfo=dt.UTC)


def course_notebooks(course_dir: Path) -> dict[str, list[str]]:
    """{assignment: [notebook names]} of the course (from its source/ folder)."""
    source = Path(course_dir) / "source"
    return {a.name: sorted(p.stem for p in a.glob("*.ipynb"))
            for a in sorted(source.iterdir()) if a.is_dir()} if source.is_dir() else {}


@dataclass(frozen=True)
class Signatures:
    """What identifies each notebook of the course by content: graded-cell ids and locked cells of
    exactly one notebook (cells shared by several notebooks, such as imports, say nothing)."""

    ids: dict[str, tuple[str, str]]  # grade_id -> (assignment, notebook)
    locked: dict[str, tuple[str, str]]  # hash of a locked cell's text -> (assignment, notebook)

    @classmethod
    def of_course(cls, course_dir: Path, notebooks: dict[str, list[str]]) -> Signatures:
        """The signatures of the course's release notebooks (the source's, hidden tests removed, if unreleased)."""
        import nbformat

        ids: dict[str, set] = {}
        locked: dict[str, set] = {}
        for assignment, names in notebooks.items():
            for name in names:
                path = Path(course_dir) / "release" / assignment / f"{name}.ipynb"
                if not path.exists():
                    path = Path(course_dir) / "source" / assignment / f"{name}.ipynb"
                try:
                    nb = nbformat.read(path, as_version=4)
                except Exception:  # noqa: BLE001 - a course file we cannot read identifies nothing
                    continue
                for cell in nb.cells:
                    if gid := cells.grade_id(cell):
                        ids.setdefault(gid, set()).add((assignment, name))
                    if cells.is_locked(cell) and (h := _cell_hash(cells.strip_hidden_tests(cell.source))):
                        locked.setdefault(h, set()).add((assignment, name))
        return cls({k: next(iter(v)) for k, v in ids.items() if len(v) == 1},
                   {k: next(iter(v)) for k, v in locked.items() if len(v) == 1})

    def identify(self, data: bytes) -> tuple[tuple[str, str] | None, str]:
        """(assignment, notebook) whose cells `data` holds, or None; and a sentence saying why."""
        try:
            nb = notebook_guard.parse(data)
        except notebook_guard.UnreadableNotebook as exc:
            return None, f"it is not a readable notebook ({exc})"
        votes: dict[tuple[str, str], list[int]] = {}
        for cell in nb.get("cells") or []:
            if not isinstance(cell, dict):
                continue
            meta = cell.get("metadata", {}).get("nbgrader") if isinstance(cell.get("metadata"), dict) else None
            gid = meta.get("grade_id") if isinstance(meta, dict) else None
            if isinstance(gid, str) and gid in self.ids:
                votes.setdefault(self.ids[gid], [0, 0])[0] += 1
            src = cell.get("source", "")
            src = "".join(s for s in src if isinstance(s, str)) if isinstance(src, list) else src
            if isinstance(src, str) and (h := _cell_hash(src)) in self.locked:
                votes.setdefault(self.locked[h], [0, 0])[1] += 1
        ranked = sorted(votes.items(), key=lambda kv: -sum(kv[1]))
        if not ranked or sum(ranked[0][1]) < 2:
            return None, "its cells match no notebook of this course"
        if len(ranked) > 1:
            names = " and ".join(f"{nb}" for (_, nb), _ in ranked[:2])
            return None, f"its cells come from several notebooks ({names})"
        (assignment, notebook), (n_ids, n_locked) = ranked[0]
        return (assignment, notebook), (f"its cells are {notebook}'s ({n_ids} graded-cell id(s), "
                                        f"{n_locked} locked cell(s) of the release)")


def _cell_hash(source: str) -> str | None:
    """A hash of a cell's text without trailing spaces (None for a cell too short to identify anything)."""
    text = "\n".join(line.rstrip() for line in source.strip().splitlines())
    return hashlib.sha256(text.encode()).hexdigest() if len(text) >= 40 else None


def place(entry: Entry, owner: Owner, notebooks: dict[str, list[str]], signatures: Signatures | None) -> Placed | Problem:
    """Map one notebook file of `owner` to a notebook of the course: by its name, else by its content."""
    file = PurePosixPath(owner.file)
    whose = {"student": owner.student, "identity": owner.identity, "assignment": owner.assignment}
    if file.suffix.lower() != ".ipynb":
        return Problem(f"not a notebook ({owner.file})", **whose)
    stem = COPY_SUFFIX.sub("", file.stem)
    candidates = notebooks if owner.assignment is None else {owner.assignment: notebooks[owner.assignment]}
    for assignment, names in candidates.items():
        if stem in names:
            return Placed(entry, owner, assignment, stem)
    by_name = _why_not_by_name(stem, owner.assignment, notebooks)
    if signatures is not None:
        found, why = signatures.identify(entry.data)
        if found is not None:
            return Placed(entry, owner, *found, how="content",
                          note=f"{owner.file} placed as {found[0]}/{found[1]}.ipynb by its content: {why}")
        return Problem(f"{by_name}, and {why}", **whose)
    return Problem(by_name, **whose)


def _why_not_by_name(stem: str, assignment: str | None, notebooks: dict[str, list[str]]) -> str:
    chapter = re.match(r"(ch\d+)(?:_|\Z)", stem)
    if assignment is None and chapter and chapter[1] not in notebooks:
        return f"unknown chapter {chapter[1]} in {stem}.ipynb (this course has {', '.join(notebooks) or 'none'})"
    if assignment is None and chapter:
        assignment = chapter[1]
    if assignment is not None:
        return f"wrong name {stem}.ipynb: {assignment} expects {', '.join(n + '.ipynb' for n in notebooks[assignment])}"
    return f"wrong name {stem}.ipynb: no chapter of this course is called that"


def classify(entry: Entry, notebooks: dict[str, list[str]], signatures: Signatures | None = None,
             pattern: re.Pattern | None = None, tz: dt.tzinfo = dt.UTC) -> Placed | Problem:
    """Map a notebook `entry` to a submission, or say in a few words why it cannot be placed."""
    owner = owner_of(entry, Context(notebooks, tz, pattern))
    return owner if isinstance(owner, Problem) else place(_timed(entry, owner), owner, notebooks, signatures)


def _timed(entry: Entry, owner: Owner) -> Entry:
    """`entry` with the time its name gave (Blackboard's attempt, a pattern's timestamp), if it gave one."""
    return entry if owner.timestamp == entry.timestamp else replace(entry, timestamp=owner.timestamp, timed_by="name")


def expand(entry: Entry, ctx: Context, signatures: Signatures | None, caps: Caps,
           budget: Budget) -> Iterator[tuple[Entry, Placed | Problem]]:
    """Every file `entry` stands for, placed or not, one at a time: itself, or for a student's zip, each file in
    it under the zip's owner (the owner's time and late mark; the names inside are only the student's names)."""
    owner = owner_of(entry, ctx)
    if entry.problem:
        whose = {} if isinstance(owner, Problem) else {"student": owner.student, "identity": owner.identity}
        yield entry, Problem(entry.problem, **whose)
        return
    if isinstance(owner, Problem):
        yield entry, owner
        return
    entry = _timed(entry, owner)
    if PurePosixPath(owner.file).suffix.lower() != ".zip":
        yield entry, place(entry, owner, ctx.notebooks, signatures)
        return
    whose = (owner.student, owner.identity, owner.assignment)
    for e in read_zip(entry.data, entry.origin, ctx.tz, caps, budget, total=caps.upload_bytes):
        if ignored(e.path):
            continue
        area, name = split_name(str(e.path))
        mine = replace(owner, file=name, area=owner.area + area)
        e = replace(e, timestamp=entry.timestamp, timed_by=entry.timed_by)  # the member's own time is the student's
        if e.problem:
            yield e, Problem(e.problem, *whose)
        elif PurePosixPath(name).suffix.lower() == ".zip":
            yield e, Problem("a zip inside a zip is not opened", *whose)
        elif why := nested_owner(owner, area + (name,), e, ctx):
            yield e, Problem(why, *whose)
        else:
            yield e, place(e, mine, ctx.notebooks, signatures)
