"""Collect a class's submissions into nbgrader's `submitted/` layout.

A source is a folder or a zip. Every file in it is an *upload*, and whose upload it is
comes from where the LMS or the folder put it, never from anything the student wrote:

* nbgrader's layout, `.../<student>/<assignment>/<file>`, when `<assignment>` is one of the
  course's assignments;
* an LMS download name. Canvas's "Download Submissions" zip names every file
  `<sortablename>[_LATE]_<user id>_<attachment id>_<file name>` (lib/content_zipper.rb:
  the sortable name lower-cased with every non-word character removed; `anon_<id>` in
  place of the user id when grading is anonymous; a re-uploaded file of the same name
  gets `-1`, `-2`, ... before its extension). The student id is the name part (the
  LMS user id is kept in the gradebook for the Canvas export); `LATE` is the LMS's own
  mark that the upload came after the due date.

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


@dataclass(frozen=True)
class Entry:
    """One file of a source: where it came from, its bytes and its time (aware, UTC)."""

    origin: str  # "<source>:<path inside it>" for messages
    path: PurePosixPath  # path inside the source
    data: bytes
    timestamp: dt.datetime
    problem: str | None = None  # set: the file could not be read (data is empty)


@dataclass(frozen=True)
class Owner:
    """Whose upload a file is, from its LMS name or the folder layout (never from its content)."""

    student: str
    file: str  # the file name as uploaded
    timestamp: dt.datetime
    assignment: str | None = None  # the folder layout's assignment
    lms_user_id: str | None = None
    attachment_id: int = 0
    late: bool = False  # the LMS marked it late


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


@dataclass(frozen=True)
class Problem:
    """A file that cannot be placed: why, and whose it is when its name says so."""

    reason: str
    student: str | None = None
    lms_user_id: str | None = None
    assignment: str | None = None


@dataclass
class CollectResult:
    """What `collect` did: placed submissions and the files it could not place."""

    placed: list[tuple[Placed, str]] = field(default_factory=list)  # (submission, "new" | "replaced" | "unchanged")
    problems: list[tuple[str, str]] = field(default_factory=list)  # (origin, reason)
    notes: list[tuple[str, str]] = field(default_factory=list)  # (origin, what collect did that a reader should know)
    students: dict[str, str | None] = field(default_factory=dict)  # student id -> LMS user id


class CollectError(RuntimeError):
    """A source that cannot be read at all."""


# ----------------------------------------------------------------------------- reading sources


def read_source(src: Path, tz: dt.tzinfo = dt.UTC, caps: Caps = Caps()) -> Iterator[Entry]:
    """Every file of a folder or a zip. A zip given as the source, or lying in a folder without an
    owner's name (neither an LMS name nor inside <student>/<assignment>/), is the LMS's and is read;
    any other zip is a student's upload and comes as one entry (opened later, under its owner)."""
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
            if size > caps.member_bytes:
                yield Entry(origin, rel, b"", _file_time(path, tz), f"larger than {caps.member_bytes // MiB} MiB: not read")
                continue
            yield Entry(origin, rel, path.read_bytes(), _file_time(path, tz))
    elif src.is_file() and zipfile.is_zipfile(src):
        yield from read_zip(src, src.name, tz, caps)
    elif src.exists():
        raise CollectError(f"{src} is neither a folder nor a zip file")
    else:
        raise CollectError(f"{src} does not exist")


def _has_owner(rel: PurePosixPath) -> bool:
    """A file whose place names its owner: an LMS name, or <student>/<assignment>/<file>."""
    return bool(CANVAS_NAME.match(rel.name)) or (len(rel.parts) >= 3 and bool(ASSIGNMENT_ID.match(rel.parts[-2])))


def _file_time(path: Path, tz: dt.tzinfo) -> dt.datetime:
    """nbgrader's timestamp.txt next to the file, else the file's modification time."""
    stamp = path.parent / "timestamp.txt"
    if stamp.is_file() and stamp.stat().st_size < 200:
        try:
            return _parse_stamp(stamp.read_text().strip(), tz)
        except (ValueError, OverflowError):
            pass
    return dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC)


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


def owner_of(entry: Entry, notebooks: dict[str, list[str]]) -> Owner | Problem:
    """Whose upload `entry` is, from its path: the folder layout or an LMS name; else why not."""
    name, parts = entry.path.name, entry.path.parts
    if len(parts) >= 3 and (ASSIGNMENT_ID.match(parts[-2]) or parts[-2] in notebooks):
        student, assignment = parts[-3], parts[-2]
        if not STUDENT_ID.match(student):
            return Problem(f"bad student id {student!r} (a letter or digit first, then letters, digits and _ . @ + -)")
        if assignment not in notebooks:
            return Problem(f"unknown chapter {assignment} (this course has {', '.join(notebooks) or 'none'})", student)
        return Owner(student, name, entry.timestamp, assignment=assignment)
    match = CANVAS_NAME.match(name)
    if not match:
        if PurePosixPath(name).suffix.lower() != ".ipynb":
            return Problem(f"not a notebook ({name})")
        return Problem(f"wrong name {name!r}: expected an LMS download name "
                       "(name_userid_attachmentid_notebook.ipynb) or <student>/<assignment>/<notebook>.ipynb")
    student = match["name"] or match["user_id"]
    if not STUDENT_ID.match(student):
        return Problem(f"bad student id {student!r}")
    return Owner(student, match["file"], entry.timestamp, lms_user_id=match["user_id"],
                 attachment_id=int(match["attachment_id"]), late=bool(match["late"]))


def place(entry: Entry, owner: Owner, notebooks: dict[str, list[str]], signatures: Signatures | None) -> Placed | Problem:
    """Map one notebook file of `owner` to a notebook of the course: by its name, else by its content."""
    file = PurePosixPath(owner.file)
    whose = {"student": owner.student, "lms_user_id": owner.lms_user_id, "assignment": owner.assignment}
    if file.suffix.lower() != ".ipynb":
        return Problem(f"not a notebook ({owner.file})", **whose)
    stem = COPY_SUFFIX.sub("", file.stem)
    order = (owner.attachment_id, owner.timestamp)
    common = {"order": order, "late": owner.late, "lms_user_id": owner.lms_user_id}
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


def classify(entry: Entry, notebooks: dict[str, list[str]], signatures: Signatures | None = None) -> Placed | Problem:
    """Map a notebook `entry` to a submission, or say in a few words why it cannot be placed."""
    owner = owner_of(entry, notebooks)
    return owner if isinstance(owner, Problem) else place(entry, owner, notebooks, signatures)


def expand(entry: Entry, notebooks: dict[str, list[str]], signatures: Signatures | None, tz: dt.tzinfo,
           caps: Caps) -> Iterator[tuple[Entry, Placed | Problem]]:
    """Every file `entry` stands for, placed or not: itself, or for a student's zip, each file in it
    under the zip's owner (the owner's time and late mark; the names inside are only file names)."""
    if entry.problem:
        owner = owner_of(entry, notebooks)
        whose = {} if isinstance(owner, Problem) else {"student": owner.student, "lms_user_id": owner.lms_user_id}
        yield entry, Problem(entry.problem, **whose)
        return
    owner = owner_of(entry, notebooks)
    if isinstance(owner, Problem) or PurePosixPath(owner.file).suffix.lower() != ".zip":
        yield entry, owner if isinstance(owner, Problem) else place(entry, owner, notebooks, signatures)
        return
    inner = [e for e in read_zip(entry.data, entry.origin, tz, caps) if not _ignored(e.path)]
    for e in inner:
        if e.problem:
            yield e, Problem(e.problem, owner.student, owner.lms_user_id, owner.assignment)
        elif e.path.suffix.lower() == ".zip":
            yield e, Problem("a zip inside a zip is not opened", owner.student, owner.lms_user_id, owner.assignment)
        else:  # the member's own time and folders are the student's to choose: only its file name counts
            mine = replace(owner, file=e.path.name)
            yield replace(e, timestamp=owner.timestamp), place(replace(e, timestamp=owner.timestamp), mine,
                                                              notebooks, signatures)


def _ignored(path: PurePosixPath) -> bool:
    text = str(path)
    return any(i in text or text.endswith(i.rstrip("/")) for i in IGNORED)


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


def collect(course_dir: Path, sources: Iterable[Path], caps: Caps = Caps()) -> CollectResult:
    """Place every submission of `sources` in course_dir/submitted; report what was not placed."""
    from autograder import config

    course_dir = Path(course_dir)
    tz = config.load(course_dir).timezone if (course_dir / config.CONFIG_NAME).is_file() else dt.UTC
    notebooks = course_notebooks(course_dir)
    signatures = Signatures.of_course(course_dir, notebooks)
    result = CollectResult()
    chosen: dict[tuple[str, str, str], Placed] = {}
    placed_or_not: list[tuple[Entry, Placed | Problem]] = []
    for src in sources:
        for entry in read_source(Path(src), tz, caps):
            if not _ignored(entry.path):
                placed_or_not.extend((e, p) for e, p in expand(entry, notebooks, signatures, tz, caps))
    unplaced = []
    for entry, placed in _disambiguate(placed_or_not):
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
    for placed in chosen.values():  # the latest upload counts, even when it is broken: it scores 0
        if problem := check_notebook(placed.entry.data):
            result.problems.append((placed.entry.origin, f"{problem}: placed anyway, it will score 0"))
        if placed.note:
            result.notes.append((placed.entry.origin, placed.note))
    for key in sorted(chosen):
        result.placed.append((chosen[key], _write(course_dir, chosen[key])))
    Manifest.update(course_dir, result, unplaced)
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
    root = (course_dir / "submitted").resolve()
    folder = root / placed.student / placed.assignment
    dest = folder / f"{placed.notebook}.ipynb"
    if not dest.resolve().is_relative_to(root) or not STUDENT_ID.match(placed.student):
        raise CollectError(f"refusing to write outside {root}: {dest}")  # unreachable: ids are checked above
    stamp = placed.entry.timestamp.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    if dest.exists() and hashlib.sha256(dest.read_bytes()).digest() == hashlib.sha256(placed.entry.data).digest():
        return "unchanged"
    status = "replaced" if dest.exists() else "new"
    folder.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(placed.entry.data)
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
    uploaded_at: str  # ISO 8601, UTC
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
                                  placed.entry.timestamp.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                                  placed.late, placed.lms_user_id, hashlib.sha256(placed.entry.data).hexdigest(),
                                  placed.how, placed.note)
        by_origin = {u.origin: u for u in old}
        for origin, problem in unplaced:
            by_origin[origin] = Unplaced(origin, problem.reason, problem.student, problem.assignment, now)
        data = {"submissions": {k: asdict(v) for k, v in sorted(records.items())},
                "unplaced": {k: asdict(v) for k, v in sorted(by_origin.items())}}
        atomic_write(cls.path(course_dir), json.dumps(data, indent=1, ensure_ascii=True).encode())
