"""Collect a class's submissions into nbgrader's `submitted/` layout.

A source is a folder or a zip. Each file in it is placed by one of two rules:

* nbgrader's layout, `.../<student>/<assignment>/<notebook>.ipynb`, when `<assignment>`
  is one of the course's assignments;
* an LMS download name. Canvas's "Download Submissions" zip names every file
  `<sortablename>[_LATE]_<user id>_<attachment id>_<file name>` (lib/content_zipper.rb:
  the sortable name lower-cased with every non-word character removed; `anon_<id>` in
  place of the user id when grading is anonymous; a re-uploaded file of the same name
  gets `-1`, `-2`, ... before its extension). The student id is the name part (the
  LMS user id is kept in the gradebook for the Canvas export); the notebook is the
  file name without Canvas's `-N` or a browser's ` (N)` suffix.

Anything else is reported, never fatal: not a notebook, a name matching no notebook of
the course, an unknown chapter, and duplicates (the latest is kept: highest attachment
id, then newest timestamp). A notebook file that cannot be read (truncated, not JSON) is
placed all the same, so that the grader scores it 0 with a reason, and reported.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath

import nbformat

# Canvas: [name_][LATE_]<user id | anon_xxx>_<attachment id>_<display name>
CANVAS_NAME = re.compile(
    r"^(?:(?P<name>\w+?)_)??(?:(?P<late>LATE|late)_)?"
    r"(?P<user_id>\d+|anon_[A-Za-z0-9]+)_(?P<attachment_id>\d+)_(?P<file>.+)$")
# What an LMS or a browser appends to a re-uploaded or re-downloaded file name.
COPY_SUFFIX = re.compile(r"(?:-\d+| ?\(\d+\))$")
ASSIGNMENT_ID = re.compile(r"^ch\d+$")
STUDENT_ID = re.compile(r"^[\w.@+-]+$")
IGNORED = ("__MACOSX/", ".DS_Store", "Thumbs.db", ".ipynb_checkpoints/")


@dataclass(frozen=True)
class Entry:
    """One file of a source: where it came from, its bytes and its timestamp."""

    origin: str  # "<source>:<path inside it>" for messages
    path: PurePosixPath  # path inside the source
    data: bytes
    timestamp: dt.datetime


@dataclass(frozen=True)
class Placed:
    """A file mapped to (student, assignment, notebook)."""

    entry: Entry
    student: str
    assignment: str
    notebook: str
    order: tuple  # larger = later submission
    late: bool = False
    lms_user_id: str | None = None


@dataclass(frozen=True)
class Problem:
    """A file that cannot be placed: why, and whose it is when its name says so."""

    reason: str
    student: str | None = None
    lms_user_id: str | None = None


@dataclass
class CollectResult:
    """What `collect` did: placed submissions and the files it could not place."""

    placed: list[tuple[Placed, str]] = field(default_factory=list)  # (submission, "new" | "replaced" | "unchanged")
    problems: list[tuple[str, str]] = field(default_factory=list)  # (origin, reason)
    students: dict[str, str | None] = field(default_factory=dict)  # student id -> LMS user id


def read_source(src: Path) -> Iterator[Entry]:
    """Every file of a folder or a zip (zips inside a folder are read too)."""
    src = Path(src)
    if src.is_dir():
        for path in sorted(p for p in src.rglob("*") if p.is_file()):
            rel = PurePosixPath(path.relative_to(src).as_posix())
            if path.suffix.lower() == ".zip":
                yield from read_zip(path, prefix=f"{src.name}/{rel}")
            else:
                yield Entry(f"{src.name}/{rel}", rel, path.read_bytes(),
                            dt.datetime.fromtimestamp(path.stat().st_mtime))
    elif zipfile.is_zipfile(src):
        yield from read_zip(src, prefix=src.name)
    elif src.exists():
        raise CollectError(f"{src} is neither a folder nor a zip file")
    else:
        raise CollectError(f"{src} does not exist")


def read_zip(path: Path, prefix: str) -> Iterator[Entry]:
    """The files of a zip archive."""
    try:
        with zipfile.ZipFile(path) as zf:
            for info in sorted(zf.infolist(), key=lambda i: i.filename):
                if info.is_dir():
                    continue
                yield Entry(f"{prefix}:{info.filename}", PurePosixPath(info.filename), zf.read(info),
                            dt.datetime(*info.date_time))
    except zipfile.BadZipFile as exc:
        raise CollectError(f"{path} is not a readable zip file ({exc})") from None


class CollectError(RuntimeError):
    """A source that cannot be read at all."""


def course_notebooks(course_dir: Path) -> dict[str, list[str]]:
    """{assignment: [notebook names]} of the course (from its source/ folder)."""
    source = Path(course_dir) / "source"
    return {a.name: sorted(p.stem for p in a.glob("*.ipynb"))
            for a in sorted(source.iterdir()) if a.is_dir()} if source.is_dir() else {}


def classify(entry: Entry, notebooks: dict[str, list[str]]) -> Placed | Problem:
    """Map `entry` to a submission, or say in a few words why it cannot be placed."""
    name = entry.path.name
    parts = entry.path.parts
    if len(parts) >= 3 and (ASSIGNMENT_ID.match(parts[-2]) or parts[-2] in notebooks):
        if entry.path.suffix.lower() != ".ipynb":
            return Problem(f"not a notebook ({name})", parts[-3])
        return _classify_nbgrader(entry, parts[-3], parts[-2], notebooks)
    match = CANVAS_NAME.match(name)
    if not match:
        if entry.path.suffix.lower() != ".ipynb":
            return Problem(f"not a notebook ({name})")
        return Problem(f"wrong name {name!r}: expected an LMS download name "
                       "(name_userid_attachmentid_notebook.ipynb) or <student>/<assignment>/<notebook>.ipynb")
    student = match["name"] or match["user_id"]
    if PurePosixPath(match["file"]).suffix.lower() != ".ipynb":
        return Problem(f"not a notebook ({match['file']})", student, match["user_id"])
    stem = COPY_SUFFIX.sub("", PurePosixPath(match["file"]).stem)
    found = _notebook_named(stem, notebooks)
    if isinstance(found, str):
        return Problem(found, student, match["user_id"])
    assignment, notebook = found
    return Placed(entry, student, assignment, notebook,
                  order=(int(match["attachment_id"]), entry.timestamp), late=bool(match["late"]),
                  lms_user_id=match["user_id"])


def _classify_nbgrader(entry: Entry, student: str, assignment: str, notebooks: dict[str, list[str]]) -> Placed | Problem:
    if not STUDENT_ID.match(student):
        return Problem(f"bad student id {student!r} (letters, digits and _ . @ + - only)")
    if assignment not in notebooks:
        return Problem(f"unknown chapter {assignment} (this course has {', '.join(notebooks) or 'none'})", student)
    stem = COPY_SUFFIX.sub("", entry.path.stem)
    if stem not in notebooks[assignment]:
        expected = ", ".join(n + ".ipynb" for n in notebooks[assignment])
        return Problem(f"wrong name {entry.path.name!r}: {assignment} expects {expected}", student)
    return Placed(entry, student, assignment, stem, order=(0, entry.timestamp))


def _notebook_named(stem: str, notebooks: dict[str, list[str]]) -> tuple[str, str] | str:
    for assignment, names in notebooks.items():
        if stem in names:
            return assignment, stem
    chapter = re.match(r"^(ch\d+)(?:_|$)", stem)
    if chapter and chapter[1] not in notebooks:
        return f"unknown chapter {chapter[1]} in {stem}.ipynb (this course has {', '.join(notebooks) or 'none'})"
    if chapter:
        expected = ", ".join(n + ".ipynb" for n in notebooks[chapter[1]])
        return f"wrong name {stem}.ipynb: {chapter[1]} expects {expected}"
    return f"wrong name {stem}.ipynb: no chapter of this course is called that"


def check_notebook(data: bytes) -> str | None:
    """None if `data` is a readable notebook, else why not."""
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    except UnicodeDecodeError:
        return "not a readable notebook (not UTF-8 text)"
    except (json.JSONDecodeError, nbformat.reader.NotJSONError):
        return "not a readable notebook (not valid JSON: truncated or not a notebook)"
    except Exception as exc:  # noqa: BLE001 - nbformat raises several kinds on bad input
        return f"not a readable notebook ({type(exc).__name__})"
    if not isinstance(nb.get("cells"), list):
        return "not a readable notebook (no cells)"
    return None


def collect(course_dir: Path, sources: Iterable[Path]) -> CollectResult:
    """Place every submission of `sources` in course_dir/submitted; report what was not placed."""
    course_dir = Path(course_dir)
    notebooks = course_notebooks(course_dir)
    result = CollectResult()
    chosen: dict[tuple[str, str, str], Placed] = {}
    entries = [e for src in sources for e in read_source(Path(src)) if not any(i in str(e.path) for i in IGNORED)]
    classified = [(entry, classify(entry, notebooks)) for entry in entries]
    for entry, placed in _disambiguate(classified):
        if isinstance(placed, Problem):
            result.problems.append((entry.origin, placed.reason))
            if placed.student:
                result.students.setdefault(placed.student, placed.lms_user_id)
            continue
        result.students.setdefault(placed.student, placed.lms_user_id)
        key = (placed.student, placed.assignment, placed.notebook)
        if key in chosen:
            old, new = sorted([chosen[key], placed], key=lambda p: p.order)
            result.problems.append((old.entry.origin, f"duplicate of {placed.student}/{placed.notebook}: "
                                                      f"kept the later {new.entry.path.name}"))
            chosen[key] = new
        else:
            chosen[key] = placed
    for placed in chosen.values():  # the latest upload counts, even when it is broken: it scores 0
        if problem := check_notebook(placed.entry.data):
            result.problems.append((placed.entry.origin, f"{problem}: placed anyway, it will score 0"))
    for key in sorted(chosen):
        result.placed.append((chosen[key], _write(course_dir, chosen[key])))
    return result


def _disambiguate(classified: list[tuple[Entry, Placed | Problem]]) -> list[tuple[Entry, Placed | Problem]]:
    """Students whose LMS name part is shared by several LMS user ids become `<name>_<user id>`."""
    ids: dict[str, set[str]] = {}
    for _, placed in classified:
        if placed.student and placed.lms_user_id:
            ids.setdefault(placed.student, set()).add(placed.lms_user_id)
    shared = {name for name, users in ids.items() if len(users) > 1}
    return [(entry, replace(placed, student=f"{placed.student}_{placed.lms_user_id}")
             if placed.student in shared and placed.lms_user_id else placed)
            for entry, placed in classified]


def _write(course_dir: Path, placed: Placed) -> str:
    """Write one submission (and nbgrader's timestamp.txt); 'new', 'replaced' or 'unchanged'."""
    folder = course_dir / "submitted" / placed.student / placed.assignment
    dest = folder / f"{placed.notebook}.ipynb"
    if dest.exists() and hashlib.sha256(dest.read_bytes()).digest() == hashlib.sha256(placed.entry.data).digest():
        return "unchanged"
    status = "replaced" if dest.exists() else "new"
    folder.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(placed.entry.data)
    (folder / "timestamp.txt").write_text(placed.entry.timestamp.strftime("%Y-%m-%d %H:%M:%S.%f"))
    return status
