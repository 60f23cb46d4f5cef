"""Collect a class's submissions into nbgrader's `submitted/` layout.

A source is a folder or a zip. Every file in it is an *upload*, and whose upload it is
comes from where the LMS or the folder put it, never from anything the student wrote:

* nbgrader's layout, `.../<student>/<assignment>/<file>`, when `<assignment>` is one of the
  course's assignments;
* the instructor's own layout: a pattern with nbgrader's named groups `student_id` and
  `file_id` (and optionally `timestamp`), as nbgrader's `zip_collect` takes it
  (`collect --pattern`, or `c.FileNameCollectorPlugin.named_regexp` in nbgrader_config.py),
  matched from the start of the path inside the source, else of the file name;
* an LMS download. Canvas's "Download Submissions" zip names every file
  `<sortablename>[_LATE]_<user id>_<attachment id>_<file name>` (lib/content_zipper.rb:
  the sortable name lower-cased with every non-word character removed; `anon_<id>` in
  place of the user id when grading is anonymous; a re-uploaded file of the same name
  gets `-1`, `-2`, ... before its extension); `LATE` is the LMS's own mark that the
  upload came after the due date. Moodle's puts each student's files in a folder
  `<Full Name>_<participant id>_assignsubmission_file_/` (or prefixes the file name with
  it); its participant id is per assignment. Blackboard's names every file
  `<assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>_<file name>` beside a receipt
  `..._attempt_<time>.txt` (skipped), the attempt's time in the course's time zone.

One person is one student: the Canvas user id is the identity. A user keeps the student id
collect first gave them (kept in `collected.json`), whatever their name or the rest of a
later zip; a new user gets their name part (Moodle's full name lower-cased without
non-word characters; Blackboard's username), or `<name>_<user id>` when another user has
that name already or in the same zip. Moodle's participant ids only tell namesakes in one
zip apart.

An upload that is itself a zip (a student zipped their notebook) is opened once: every
file in it belongs to the upload's student, with the upload's time and late mark, whatever
its entries are called (a zip whose entries are named like other students' files places
nothing for them). A notebook is matched to the course by its file name (without Canvas's
`-N` or a browser's ` (N)` suffix), and when the name matches nothing, by its content: the
cells of the release it holds (graded-cell ids and locked cells that belong to exactly one
notebook of the course).

Zips are read as streams with caps (`Caps`): a member larger than the cap is refused after
reading at most the cap, whatever its header claims, so a zip bomb costs at most the caps
in time and one member's cap in memory; nothing is extracted to disk but the placed
notebooks. Student ids must start with a letter or digit and hold only letters, digits and
`_ . @ + -`; a file is written only inside `submitted/`.

An upload's time is the LMS's (a zip member's time, Blackboard's attempt time) or nbgrader's
`timestamp.txt` beside it. A file in a folder without `timestamp.txt` is not timed (no
late penalty, and collect says so) unless the instructor asks for the files' modification
times (`collect --file-times`): a copied folder's file times say nothing about the upload.

A placed notebook is capped (`Caps`): outputs larger than `output_bytes` are dropped
(grading runs the notebook again), a cell's source longer than `cell_bytes` is cut there,
and a notebook still larger than `notebook_bytes` is not placed; each cut is a note that
names the cell and says why.

Anything else is reported, never fatal: not a notebook, a name or content matching no
notebook of the course, an unknown chapter, a bad student id, an oversized file, and
duplicates (the latest is kept: highest attachment id, then newest time). A notebook file
that cannot be read (truncated, not JSON, nested too deeply) is placed all the same, so
that the grader scores it 0 with a reason, and reported.

What collect decided is kept in `course/collected.json` (`Manifest`): for every placed
notebook its origin, upload time, the LMS's late mark and how it was placed; every file
it could not place, with the reason (`autograder gradebook` lists them).
"""
from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import re
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path, PurePosixPath

from coursenb import cells

# Canvas: [name_][LATE_]<user id | anon_xxx>_<attachment id>_<display name>
CANVAS_NAME = re.compile(
    r"^(?:(?P<name>\w+?)_)??(?:(?P<late>LATE|late)_)?"
    r"(?P<user_id>\d+|anon_[A-Za-z0-9]+)_(?P<attachment_id>\d+)_(?P<file>.+)$")
# Moodle: "<Full Name>_<participant id>_assignsubmission_<plugin>_" as a folder, or before the file name.
MOODLE_NAME = re.compile(r"^(?P<name>.+?)_(?P<participant>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<file>.*)$")
# Blackboard: "<assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>[_<file>]" (no file: the attempt's receipt)
BLACKBOARD_NAME = re.compile(r"^(?P<assignment>.+)_(?P<user>[^_\s]+)_attempt_"
                             r"(?P<time>\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d)(?:_(?P<file>.+)|\.txt)?$")
PATTERN_GROUPS = ("student_id", "file_id")  # nbgrader's FileNameCollectorPlugin: required named groups
# What an LMS or a browser appends to a re-uploaded or re-downloaded file name.
COPY_SUFFIX = re.compile(r"(?:-\d+| ?\(\d+\))$")
ASSIGNMENT_ID = re.compile(r"^ch\d+$")
# A student id: a letter or digit first (never `.` or `..`), then word characters and . @ + -.
STUDENT_ID = re.compile(r"^[^\W_][\w.@+-]{0,99}$")
IGNORED = ("__MACOSX/", ".DS_Store", "Thumbs.db", ".ipynb_checkpoints/")
MANIFEST = "collected.json"
MiB = 1 << 20


@dataclass(frozen=True)
class Caps:
    """How much of a zip is read: per member, in all (per source), and how many members."""

    member_bytes: int = 64 * MiB
    total_bytes: int = 2048 * MiB
    members: int = 100_000
    notebook_bytes: int = 16 * MiB  # a placed notebook, once oversized outputs are dropped
    cell_bytes: int = 256 * 1024  # a cell's source (the book's longest is a few KiB)
    output_bytes: int = 1 * MiB  # a cell's outputs (grading runs the notebook again)


@dataclass(frozen=True)
class Entry:
    """One file of a source: where it came from, its bytes and its time (aware, UTC)."""

    origin: str  # "<source>:<path inside it>" for messages
    path: PurePosixPath  # path inside the source
    data: bytes
    timestamp: dt.datetime | None  # None: nothing says when it was uploaded
    problem: str | None = None  # set: the file could not be read (data is empty)
    timed_by: str = "zip"  # what gave the time: "zip", "timestamp.txt", "file time", "name", "" (untimed)


@dataclass(frozen=True)
class Owner:
    """Whose upload a file is, from its LMS name or the folder layout (never from its content)."""

    student: str
    file: str  # the file name as uploaded
    timestamp: dt.datetime | None
    assignment: str | None = None  # the folder layout's assignment
    lms_user_id: str | None = None  # the LMS's identity of the user (Canvas)
    attachment_id: int = 0
    late: bool = False  # the LMS marked it late
    participant: str | None = None  # an id that tells namesakes apart in one download only (Moodle's)


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
    how: str = "name"  # "name" or "content"
    note: str = ""  # a line for the instructor (how a notebook was placed by its content)
    participant: str | None = None


@dataclass(frozen=True)
class Problem:
    """A file that cannot be placed: why, and whose it is when its name says so."""

    reason: str
    student: str | None = None
    lms_user_id: str | None = None
    assignment: str | None = None
    participant: str | None = None


@dataclass
class CollectResult:
    """What `collect` did: placed submissions and the files it could not place."""

    placed: list[tuple[Placed, str]] = field(default_factory=list)  # (submission, "new" | "replaced" | "unchanged")
    problems: list[tuple[str, str]] = field(default_factory=list)  # (origin, reason)
    notes: list[tuple[str, str]] = field(default_factory=list)  # (origin, what collect did that a reader should know)
    students: dict[str, str | None] = field(default_factory=dict)  # student id -> LMS user id


class CollectError(RuntimeError):
    """A source that cannot be read at all, or a collect pattern that cannot be used."""


def compile_pattern(pattern: str | None, where: str = "--pattern") -> re.Pattern | None:
    """The instructor's collect pattern, checked: a regular expression with nbgrader's named groups."""
    if not pattern:
        return None
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise CollectError(f"{where} {pattern!r} is not a regular expression ({exc})") from None
    missing = [g for g in PATTERN_GROUPS if g not in compiled.groupindex]
    if missing:
        raise CollectError(f"{where} {pattern!r} needs the named group(s) {', '.join(f'(?P<{g}>...)' for g in missing)}"
                           " (as nbgrader's zip_collect: student_id, file_id, optionally timestamp)")
    return compiled


# ----------------------------------------------------------------------------- reading sources


def read_source(src: Path, tz: dt.tzinfo = dt.UTC, caps: Caps = Caps(), file_times: bool = False) -> Iterator[Entry]:
    """Every file of a folder or a zip. A zip given as the source, or lying in a folder without an
    owner's name (neither an LMS name nor inside <student>/<assignment>/), is the LMS's and is read;
    any other zip is a student's upload and comes as one entry (opened later, under its owner).
    A folder's file is timed by nbgrader's timestamp.txt beside it, else (with `file_times`) by its
    modification time, else not at all."""
    src = Path(src)
    if src.is_dir():
        for path in sorted(p for p in src.rglob("*") if p.is_file() and not p.is_symlink()):
            rel = PurePosixPath(path.relative_to(src).as_posix())
            origin = f"{src.name}/{rel}"
            if path.name == "timestamp.txt" and len(rel.parts) >= 3:
                continue  # nbgrader's, read with the notebook next to it
            if path.suffix.lower() == ".zip" and not _has_owner(rel):
                yield from read_zip(path, origin, tz, caps)
                continue
            size = path.stat().st_size
            when, timed_by = _file_time(path, tz, file_times)
            if size > caps.member_bytes:
                yield Entry(origin, rel, b"", when, f"larger than {caps.member_bytes // MiB} MiB: not read", timed_by)
                continue
            yield Entry(origin, rel, path.read_bytes(), when, None, timed_by)
    elif src.is_file() and zipfile.is_zipfile(src):
        yield from read_zip(src, src.name, tz, caps)
    elif src.exists():
        raise CollectError(f"{src} is neither a folder nor a zip file")
    else:
        raise CollectError(f"{src} does not exist")


def _has_owner(rel: PurePosixPath) -> bool:
    """A file whose place names its owner: an LMS name, or <student>/<assignment>/<file>."""
    return (bool(CANVAS_NAME.match(rel.name) or MOODLE_NAME.match(rel.name) or BLACKBOARD_NAME.match(rel.name))
            or any(MOODLE_NAME.match(part) for part in rel.parts[:-1])
            or (len(rel.parts) >= 3 and bool(ASSIGNMENT_ID.match(rel.parts[-2]))))


def _file_time(path: Path, tz: dt.tzinfo, file_times: bool = False) -> tuple[dt.datetime | None, str]:
    """(time, what gave it): nbgrader's timestamp.txt next to the file, else with `file_times` the file's
    modification time, else (None, "")."""
    stamp = path.parent / "timestamp.txt"
    if stamp.is_file() and stamp.stat().st_size < 200:
        try:
            return _parse_stamp(stamp.read_text().strip(), tz), "timestamp.txt"
        except (ValueError, OverflowError):
            pass
    if file_times:
        return dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC), "file time"
    return None, ""


def _parse_stamp(text: str, tz: dt.tzinfo) -> dt.datetime:
    """A timestamp.txt: nbgrader writes '%Y-%m-%d %H:%M:%S.%f %Z' (zone optional)."""
    parts = text.split()
    zone = parts[2] if len(parts) == 3 else None
    when = dt.datetime.fromisoformat(" ".join(parts[:2]))
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC if zone in ("UTC", "Z", "GMT") else tz)
    return when.astimezone(dt.UTC)


def read_zip(path: Path | bytes, origin: str, tz: dt.tzinfo = dt.UTC, caps: Caps = Caps()) -> Iterator[Entry]:
    """The files of a zip archive (a path, or bytes in memory), read as streams within `caps`."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(path) if isinstance(path, bytes) else path)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        if isinstance(path, bytes):
            yield Entry(origin, PurePosixPath(origin), b"", _now(), f"not a readable zip file ({exc})")
            return
        raise CollectError(f"{path} is not a readable zip file ({exc})") from None
    with zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        if len(infos) > caps.members:
            yield Entry(origin, PurePosixPath(origin), b"", _now(),
                        f"holds {len(infos)} files, more than the {caps.members} collect reads: not read")
            return
        left = caps.total_bytes
        for info in sorted(infos, key=lambda i: i.filename):
            rel = PurePosixPath(info.filename.replace("\\", "/"))
            where = f"{origin}:{info.filename}"
            when = _zip_time(info, tz)
            if left <= 0:
                yield Entry(where, rel, b"", when, f"not read: the zip holds more than {caps.total_bytes // MiB} MiB")
                continue
            data, problem = _read_member(zf, info, min(caps.member_bytes, left))
            left -= len(data)
            yield Entry(where, rel, data if problem is None else b"", when, problem)


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, cap: int) -> tuple[bytes, str | None]:
    """At most `cap` bytes of a member, counted as they are inflated (headers can lie)."""
    chunks, size = [], 0
    try:
        with zf.open(info) as stream:
            while chunk := stream.read(min(1 * MiB, cap + 1 - size)):
                size += len(chunk)
                if size > cap:
                    return b"", f"larger than {cap // MiB or 1} MiB uncompressed: not read"
                chunks.append(chunk)
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError, ValueError) as exc:
        return b"", f"cannot be read from the zip ({type(exc).__name__}: {str(exc)[:80]})"
    except Exception as exc:  # noqa: BLE001 - zlib and lzma raise their own kinds on damaged data
        return b"", f"cannot be read from the zip ({type(exc).__name__})"
    return b"".join(chunks), None


def _zip_time(info: zipfile.ZipInfo, tz: dt.tzinfo) -> dt.datetime:
    """A zip member's time (zips carry no zone: the course's time zone)."""
    try:
        return dt.datetime(*info.date_time, tzinfo=tz).astimezone(dt.UTC)
    except ValueError:
        return _now()


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


# ----------------------------------------------------------------------------- the course's notebooks


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
        if too_deep(data):
            return None, "it is not a notebook (nested too deeply)"
        try:
            nb = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            return None, "it is not a readable notebook"
        raw_cells = nb.get("cells") if isinstance(nb, dict) else None
        if not isinstance(raw_cells, list):
            return None, "it is not a notebook"
        votes: dict[tuple[str, str], list[int]] = {}
        for cell in raw_cells:
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


# ----------------------------------------------------------------------------- placing


def owner_of(entry: Entry, notebooks: dict[str, list[str]], pattern: re.Pattern | None = None,
             tz: dt.tzinfo = dt.UTC) -> Owner | Problem:
    """Whose upload `entry` is, from its path: the folder layout, the instructor's pattern or an LMS name;
    else why not (naming the folder or file that says nothing)."""
    name, parts = entry.path.name, entry.path.parts
    if len(parts) >= 3 and (ASSIGNMENT_ID.match(parts[-2]) or parts[-2] in notebooks):
        student, assignment = parts[-3], parts[-2]
        if not STUDENT_ID.match(student):
            return Problem(f"bad student id {student!r} (a letter or digit first, then letters, digits and _ . @ + -)")
        if assignment not in notebooks:
            return Problem(f"unknown chapter {assignment} (this course has {', '.join(notebooks) or 'none'})", student)
        return Owner(student, name, entry.timestamp, assignment=assignment)
    if pattern is not None and (m := pattern.match(str(entry.path)) or pattern.match(name)):
        return _owner(m["student_id"], PurePosixPath(m["file_id"] or "").name, entry,
                      when=_pattern_time(m, tz) or entry.timestamp)
    for folder in reversed(parts[:-1]):  # Moodle: "<Full Name>_<participant id>_assignsubmission_file_/<file>"
        if (m := MOODLE_NAME.match(folder)) and not m["file"]:
            return _owner(_moodle_student(m), name, entry, participant=m["participant"])
    if (m := MOODLE_NAME.match(name)) and m["file"]:
        return _owner(_moodle_student(m), m["file"], entry, participant=m["participant"])
    if m := BLACKBOARD_NAME.match(name):
        when = _stamp_time(m["time"], tz)
        return _owner(m["user"], m["file"] or name, entry, when=when or entry.timestamp)
    match = CANVAS_NAME.match(name)
    if not match:
        if PurePosixPath(name).suffix.lower() != ".ipynb":
            return Problem(f"not a notebook ({name})")
        expected = ("a Canvas, Moodle or Blackboard download name, <student>/<assignment>/<notebook>.ipynb"
                    + (", or the --pattern" if pattern is not None else ", or a layout of your own (--pattern)"))
        if len(parts) >= 2:
            return Problem(f"whose is it? neither the folder {parts[-2]!r} nor the file name {name!r} names a student: "
                           f"expected {expected}")
        return Problem(f"wrong name {name!r}: no student in it: expected {expected}")
    student = match["name"] or match["user_id"]
    if not STUDENT_ID.match(student):
        return Problem(f"bad student id {student!r}")
    return Owner(student, match["file"], entry.timestamp, lms_user_id=match["user_id"],
                 attachment_id=int(match["attachment_id"]), late=bool(match["late"]))


def _owner(student: str, file: str, entry: Entry, when: dt.datetime | None = None,
           participant: str | None = None) -> Owner | Problem:
    """An owner named by a pattern, Moodle or Blackboard, with the student id checked."""
    if not STUDENT_ID.match(student or ""):
        return Problem(f"bad student id {student!r} (a letter or digit first, then letters, digits and _ . @ + -)")
    return Owner(student, file or entry.path.name, when if when is not None else entry.timestamp,
                 participant=participant)


def _moodle_student(m: re.Match) -> str:
    """A Moodle full name as a student id (lower-cased, non-word characters removed, as Canvas's sortable
    name); with blind marking ('Participant'), the participant id."""
    slug = re.sub(r"[\W_]+", "", m["name"]).lower()
    return f"participant_{m['participant']}" if slug in ("", "participant") else slug


def _stamp_time(text: str | None, tz: dt.tzinfo) -> dt.datetime | None:
    """'2025-01-30-12-00-00' (Blackboard) or an ISO 8601 time, in `tz` without an offset; None if neither."""
    if not text:
        return None
    m = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)-(\d\d)-(\d\d)-(\d\d)", text.strip())
    try:
        when = dt.datetime(*map(int, m.groups())) if m else dt.datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=tz)).astimezone(dt.UTC)


def _pattern_time(m: re.Match, tz: dt.tzinfo) -> dt.datetime | None:
    return _stamp_time(m.groupdict().get("timestamp"), tz)


def place(entry: Entry, owner: Owner, notebooks: dict[str, list[str]], signatures: Signatures | None) -> Placed | Problem:
    """Map one notebook file of `owner` to a notebook of the course: by its name, else by its content."""
    file = PurePosixPath(owner.file)
    whose = {"student": owner.student, "lms_user_id": owner.lms_user_id, "assignment": owner.assignment,
             "participant": owner.participant}
    if file.suffix.lower() != ".ipynb":
        return Problem(f"not a notebook ({owner.file})", **whose)
    stem = COPY_SUFFIX.sub("", file.stem)
    order = (owner.attachment_id, owner.timestamp or dt.datetime.min.replace(tzinfo=dt.UTC))
    common = {"order": order, "late": owner.late, "lms_user_id": owner.lms_user_id, "participant": owner.participant}
    candidates = notebooks if owner.assignment is None else {owner.assignment: notebooks[owner.assignment]}
    for assignment, names in candidates.items():
        if stem in names:
            return Placed(entry, owner.student, assignment, stem, **common)
    by_name = _why_not_by_name(stem, owner.assignment, notebooks)
    if signatures is not None:
        found, why = signatures.identify(entry.data)
        if found is not None:
            return Placed(entry, owner.student, *found, **common, how="content",
                          note=f"{owner.file} placed as {found[0]}/{found[1]}.ipynb by its content: {why}")
        return Problem(f"{by_name}, and {why}", **whose)
    return Problem(by_name, **whose)


def _why_not_by_name(stem: str, assignment: str | None, notebooks: dict[str, list[str]]) -> str:
    chapter = re.match(r"^(ch\d+)(?:_|$)", stem)
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
    owner = owner_of(entry, notebooks, pattern, tz)
    return owner if isinstance(owner, Problem) else place(_timed(entry, owner), owner, notebooks, signatures)


def _timed(entry: Entry, owner: Owner) -> Entry:
    """`entry` with the time its name gave (Blackboard's attempt, a pattern's timestamp), if it gave one."""
    return entry if owner.timestamp == entry.timestamp else replace(entry, timestamp=owner.timestamp, timed_by="name")


def expand(entry: Entry, notebooks: dict[str, list[str]], signatures: Signatures | None, tz: dt.tzinfo,
           caps: Caps, pattern: re.Pattern | None = None) -> Iterator[tuple[Entry, Placed | Problem]]:
    """Every file `entry` stands for, placed or not: itself, or for a student's zip, each file in it
    under the zip's owner (the owner's time and late mark; the names inside are only file names)."""
    owner = owner_of(entry, notebooks, pattern, tz)
    if entry.problem:
        whose = {} if isinstance(owner, Problem) else {"student": owner.student, "lms_user_id": owner.lms_user_id,
                                                       "participant": owner.participant}
        yield entry, Problem(entry.problem, **whose)
        return
    if isinstance(owner, Problem):
        yield entry, owner
        return
    entry = _timed(entry, owner)
    if PurePosixPath(owner.file).suffix.lower() != ".zip":
        yield entry, place(entry, owner, notebooks, signatures)
        return
    inner = [e for e in read_zip(entry.data, entry.origin, tz, caps) if not _ignored(e.path)]
    whose = (owner.student, owner.lms_user_id, owner.assignment, owner.participant)
    for e in inner:
        if e.problem:
            yield e, Problem(e.problem, *whose)
        elif e.path.suffix.lower() == ".zip":
            yield e, Problem("a zip inside a zip is not opened", *whose)
        else:  # the member's own time and folders are the student's to choose: only its file name counts
            mine = replace(owner, file=e.path.name)
            e = replace(e, timestamp=entry.timestamp, timed_by=entry.timed_by)
            yield e, place(e, mine, notebooks, signatures)


def _ignored(path: PurePosixPath) -> bool:
    """Files no LMS download means as a submission: OS litter, and Blackboard's receipts."""
    text = str(path)
    receipt = (m := BLACKBOARD_NAME.match(path.name)) and not m["file"] and path.suffix.lower() == ".txt"
    return bool(receipt) or any(i in text or text.endswith(i.rstrip("/")) for i in IGNORED)


MAX_DEPTH = 64  # a notebook nests about 6 levels; widget state in metadata a few more


def json_depth(data: bytes, limit: int = MAX_DEPTH) -> int:
    """How deeply `data`'s JSON arrays and objects nest (counting stops past `limit`); a linear scan that
    never recurses, so a file of a million brackets is measured, not a crash."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        elif byte in (0x5D, 0x7D):  # ] }
            depth -= 1
    return deepest


def too_deep(data: bytes) -> str | None:
    """Why `data` is refused outright (JSON nested deeper than any notebook), else None."""
    if json_depth(data) > MAX_DEPTH:
        return (f"not a notebook: its JSON nests more than {MAX_DEPTH} levels deep (tools that read notebooks "
                "recurse over it); not placed")
    return None


def check_notebook(data: bytes) -> str | None:
    """None if `data` is a readable notebook, else why not."""
    import nbformat

    if too_deep(data):
        return "not a readable notebook (nested too deeply)"
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    except UnicodeDecodeError:
        return "not a readable notebook (not UTF-8 text)"
    except RecursionError:
        return "not a readable notebook (nested too deeply)"
    except (json.JSONDecodeError, nbformat.reader.NotJSONError):
        return "not a readable notebook (not valid JSON: truncated or not a notebook)"
    except Exception as exc:  # noqa: BLE001 - nbformat raises several kinds on bad input
        return f"not a readable notebook ({type(exc).__name__})"
    if not isinstance(nb.get("cells"), list):
        return "not a readable notebook (no cells)"
    return None


# ----------------------------------------------------------------------------- collect


def collect(course_dir: Path, sources: Iterable[Path], caps: Caps = Caps(), pattern: str | None = None,
            file_times: bool = False) -> CollectResult:
    """Place every submission of `sources` in course_dir/submitted; report what was not placed. `pattern`
    (else the course's c.FileNameCollectorPlugin.named_regexp) reads a layout of the instructor's own;
    `file_times` times a folder's files without timestamp.txt by their modification time."""
    from autograder import config

    course_dir = Path(course_dir)
    cfg = config.load(course_dir) if (course_dir / config.CONFIG_NAME).is_file() else None
    tz = cfg.timezone if cfg else dt.UTC
    compiled = (compile_pattern(pattern) if pattern else
                compile_pattern(cfg.collect_pattern, "c.FileNameCollectorPlugin.named_regexp") if cfg else None)
    notebooks = course_notebooks(course_dir)
    signatures = Signatures.of_course(course_dir, notebooks)
    result = CollectResult()
    chosen: dict[tuple[str, str, str], Placed] = {}
    placed_or_not: list[tuple[Entry, Placed | Problem]] = []
    for src in sources:
        for entry in read_source(Path(src), tz, caps, file_times):
            if not _ignored(entry.path):
                placed_or_not.extend((e, p) for e, p in expand(entry, notebooks, signatures, tz, caps, compiled))
    identities = Manifest.identities(course_dir)
    unplaced = []
    for entry, placed in _identify(placed_or_not, identities):
        if isinstance(placed, Placed) and (why := too_deep(entry.data)):
            placed = Problem(why, placed.student, placed.lms_user_id, placed.assignment)
        if isinstance(placed, Problem):
            unplaced.append((entry.origin, placed))
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
    untimed: dict[str, int] = {}
    for key, placed in list(chosen.items()):  # the latest upload counts, even when it is broken: it scores 0
        if problem := check_notebook(placed.entry.data):
            result.problems.append((placed.entry.origin, f"{problem}: placed anyway, it will score 0"))
        else:
            data, cuts = capped(placed.entry.data, caps)
            if len(data) > caps.notebook_bytes:
                del chosen[key]
                reason = (f"larger than {caps.notebook_bytes // MiB} MiB{' after ' + '; '.join(cuts) if cuts else ''}:"
                          " not placed (no notebook of the course is that large)")
                result.problems.append((placed.entry.origin, reason))
                unplaced.append((placed.entry.origin, Problem(reason, placed.student, placed.lms_user_id,
                                                              placed.assignment)))
                continue
            if cuts:
                chosen[key] = placed = replace(placed, entry=replace(placed.entry, data=data),
                                               note="; ".join(filter(None, [placed.note, *cuts])))
        if placed.note:
            result.notes.append((placed.entry.origin, placed.note))
        if placed.entry.timestamp is None:
            untimed[placed.entry.origin.split("/")[0]] = untimed.get(placed.entry.origin.split("/")[0], 0) + 1
        elif placed.entry.timed_by == "file time":
            result.notes.append((placed.entry.origin, "timed by its file time (--file-times)"))
    for folder, n in untimed.items():
        result.notes.append((f"{folder} ({n} notebook(s))", "no timestamp.txt beside them: not timed, so never late "
                             "(collect --file-times takes the files' modification times instead)"))
    for key in sorted(chosen):
        result.placed.append((chosen[key], _write(course_dir, chosen[key])))
    Manifest.update(course_dir, result, unplaced)
    return result


def capped(data: bytes, caps: Caps) -> tuple[bytes, list[str]]:
    """A readable notebook's bytes within `caps` (outputs larger than output_bytes dropped, sources longer than
    cell_bytes cut) and a sentence per cut naming the cell; the bytes unchanged when nothing is cut."""
    nb = json.loads(data.decode("utf-8"))
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
                cuts.append(f"{name}'s outputs ({_size(size)}) dropped: more than {_size(caps.output_bytes)}, "
                            "and grading runs the notebook again")
        source = cell.get("source")
        text = "".join(x for x in source if isinstance(x, str)) if isinstance(source, list) else source
        if isinstance(text, str) and len(text.encode()) > caps.cell_bytes:
            cell["source"] = text.encode()[:caps.cell_bytes].decode("utf-8", "ignore")
            cuts.append(f"{name}'s source ({_size(len(text.encode()))}) cut to its first {_size(caps.cell_bytes)}: "
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
            return None, [f"{path.name} is {_size(size)}, more than the {_size(caps.notebook_bytes)} read: not shown"]
        data = path.read_bytes()
    except OSError as exc:
        return None, [f"{path.name} cannot be read ({type(exc).__name__})"]
    if problem := check_notebook(data):
        return None, [f"{path.name}: {problem}"]
    data, cuts = capped(data, caps)
    return nbformat.reads(data.decode("utf-8"), as_version=4), cuts


def _size(n: int) -> str:
    return f"{n / MiB:.1f} MiB" if n >= MiB else f"{n / 1024:.0f} KiB"


def _identify(classified: list[tuple[Entry, Placed | Problem]],
              known: dict[str, str]) -> list[tuple[Entry, Placed | Problem]]:
    """One LMS user, one student: a user collect has seen before keeps their student id (`known`: user id ->
    student); a new user gets their name part, or `<name>_<user id>` when that name is another user's already
    or is wanted by several users now. Without a user id (Moodle), namesakes in this collect with different
    participant ids become `<name>_<participant id>`."""
    ids = dict(known)
    taken = set(known.values())
    wanted: dict[str, set[str]] = {}
    for _, p in classified:
        if p.student and p.lms_user_id and p.lms_user_id not in ids:
            wanted.setdefault(p.student, set()).add(p.lms_user_id)
    for name in sorted(wanted):
        users = sorted(wanted[name])
        for user in users:
            ids[user] = name if len(users) == 1 and name not in taken else f"{name}_{user}"
        taken.update(ids[u] for u in users)
    participants: dict[str, set[str]] = {}
    for _, p in classified:
        if p.student and not p.lms_user_id and p.participant:
            participants.setdefault(p.student, set()).add(p.participant)
    shared = {name for name, ps in participants.items() if len(ps) > 1}

    def who(p: Placed | Problem) -> str | None:
        if p.student and p.lms_user_id:
            return ids[p.lms_user_id]
        if p.student in shared and p.participant:
            return f"{p.student}_{p.participant}"
        return p.student

    return [(entry, replace(p, student=who(p))) for entry, p in classified]


def _write(course_dir: Path, placed: Placed) -> str:
    """Write one submission (and nbgrader's timestamp.txt); 'new', 'replaced' or 'unchanged'."""
    root = (course_dir / "submitted").resolve()
    folder = root / placed.student / placed.assignment
    dest = folder / f"{placed.notebook}.ipynb"
    if not dest.resolve().is_relative_to(root) or not STUDENT_ID.match(placed.student):
        raise CollectError(f"refusing to write outside {root}: {dest}")  # unreachable: ids are checked above
    when = placed.entry.timestamp
    stamp = when.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f UTC") if when is not None else None
    old_stamp = (folder / "timestamp.txt").read_text() if (folder / "timestamp.txt").is_file() else None
    if dest.exists() and hashlib.sha256(dest.read_bytes()).digest() == hashlib.sha256(placed.entry.data).digest() \
            and old_stamp == stamp:
        return "unchanged"
    status = "replaced" if dest.exists() else "new"
    folder.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(placed.entry.data)
    if stamp is None:  # untimed: no time of an earlier upload stays beside it
        (folder / "timestamp.txt").unlink(missing_ok=True)
    else:
        (folder / "timestamp.txt").write_text(stamp)
    return status


# ----------------------------------------------------------------------------- the manifest


@dataclass(frozen=True)
class Record:
    """What collect knows about one placed notebook."""

    student: str
    assignment: str
    notebook: str
    origin: str
    file: str
    uploaded_at: str  # ISO 8601, UTC; "" when nothing said when
    lms_late: bool
    lms_user_id: str | None
    sha256: str
    how: str  # "name" or "content"
    note: str = ""


@dataclass(frozen=True)
class Unplaced:
    """A file collect could not place, and why."""

    origin: str
    reason: str
    student: str | None = None
    assignment: str | None = None
    collected_at: str = ""


class Manifest:
    """course/collected.json: the record of every placed notebook and every file not placed."""

    @staticmethod
    def path(course_dir: Path) -> Path:
        return Path(course_dir) / MANIFEST

    @classmethod
    def read(cls, course_dir: Path) -> tuple[dict[str, Record], list[Unplaced]]:
        """(records by 'student/assignment/notebook', files not placed); empty if there is no manifest."""
        try:
            data = json.loads(cls.path(course_dir).read_text())
        except (OSError, ValueError):
            return {}, []
        records, unplaced = {}, []
        for key, value in (data.get("submissions") or {}).items() if isinstance(data, dict) else []:
            try:
                records[key] = Record(**value)
            except TypeError:
                continue
        for value in (data.get("unplaced") or {}).values() if isinstance(data, dict) else []:
            try:
                unplaced.append(Unplaced(**value))
            except TypeError:
                continue
        return records, unplaced

    @classmethod
    def identities(cls, course_dir: Path) -> dict[str, str]:
        """{LMS user id: student id} of every user collect has seen in this course."""
        try:
            data = json.loads(cls.path(course_dir).read_text())
        except (OSError, ValueError):
            return {}
        data = data if isinstance(data, dict) else {}
        out = {str(r.get("lms_user_id")): str(r.get("student")) for r in (data.get("submissions") or {}).values()
               if isinstance(r, dict) and r.get("lms_user_id") and r.get("student")}
        stored = data.get("identities") or {}
        out.update({str(u): str(s) for u, s in stored.items()} if isinstance(stored, dict) else {})
        return out

    @classmethod
    def update(cls, course_dir: Path, result: CollectResult, unplaced: list[tuple[str, Problem]]) -> None:
        """Add this collect's decisions: placed notebooks replace their record; files not placed are kept by
        origin (collecting the same source again replaces them)."""
        from autograder.gradinglog import atomic_write

        records, old = cls.read(course_dir)
        now = _now().strftime("%Y-%m-%dT%H:%M:%SZ")
        for placed, _status in result.placed:
            key = f"{placed.student}/{placed.assignment}/{placed.notebook}"
            records[key] = Record(placed.student, placed.assignment, placed.notebook, placed.entry.origin,
                                  placed.entry.path.name,
                                  placed.entry.timestamp.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                                  if placed.entry.timestamp is not None else "",
                                  placed.late, placed.lms_user_id, hashlib.sha256(placed.entry.data).hexdigest(),
                                  placed.how, placed.note)
        by_origin = {u.origin: u for u in old}
        for origin, problem in unplaced:
            by_origin[origin] = Unplaced(origin, problem.reason, problem.student, problem.assignment, now)
        identities = cls.identities(course_dir)
        identities.update({u: s for s, u in result.students.items() if u})
        data = {"submissions": {k: asdict(v) for k, v in sorted(records.items())},
                "unplaced": {k: asdict(v) for k, v in sorted(by_origin.items())},
                "identities": dict(sorted(identities.items()))}
        atomic_write(cls.path(course_dir), json.dumps(data, indent=1, ensure_ascii=True).encode())
