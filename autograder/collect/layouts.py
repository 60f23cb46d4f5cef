"""Who owns an uploaded file: one class per LMS or exchange, tried in the one order of `LAYOUTS`.

A path is read from its outermost part inwards: at each part, the layouts are asked in the
order of `LAYOUTS`, and the first that names an owner there owns the file. What the LMS or the
exchange controls is outermost (the LMS's name for the upload, the exchange's student folder);
everything below it is the student's own (their folders, the names inside their zip, a
backslash in a file name they chose), and never names an owner: a student's part that a layout
would read as another student's is a problem collect names (`nested_owner`), not a placement.

Adding a layout is one class: a `kind`, how its names look (`expected`), a `claim` that reads
an owner from the path at a part, optionally `ignores`; then one place in `LAYOUTS`.
"""
from __future__ import annotations

import datetime as dt
import re
import unicodedata
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import ClassVar

from autograder.collect.sources import CollectError, Entry

# A student id: a letter or digit first (never `.` or `..`), then word characters and . @ + - (used with fullmatch).
STUDENT_ID = re.compile(r"[^\W_][\w.@+-]{0,99}")
ASSIGNMENT_ID = re.compile(r"ch\d+")  # a chapter's assignment (fullmatch)
PATTERN_GROUPS = ("student_id", "file_id")  # nbgrader's FileNameCollectorPlugin: required named groups
OS_LITTER = ("__MACOSX/", ".DS_Store", "Thumbs.db", ".ipynb_checkpoints/")  # what no layout means as a submission


def is_student_id(text: str | None) -> bool:
    """Whether `text` may name a student's folder in submitted/ (the whole text: a trailing newline is refused)."""
    return isinstance(text, str) and STUDENT_ID.fullmatch(text) is not None


def is_assignment(text: str, notebooks: dict[str, list[str]]) -> bool:
    """Whether a folder name is a chapter's assignment (`chN`) or one of the course's."""
    return ASSIGNMENT_ID.fullmatch(text) is not None or text in notebooks


@dataclass(frozen=True)
class Identity:
    """Who the LMS or exchange says uploaded a file: the layout's kind and its id for the user."""

    kind: str  # a layout's kind: "canvas", "moodle", ...
    id: str  # its id for the user (Canvas's user id, Moodle's participant id, Blackboard's username, ...)

    def __str__(self) -> str:
        return f"{self.kind}:{self.id}"

    @classmethod
    def parse(cls, text: str) -> Identity:
        """An identity as `str` writes it; a bare id (collected.json before identities had kinds) is Canvas's."""
        kind, sep, ident = str(text).partition(":")
        return cls(kind, ident) if sep else cls("canvas", kind)


@dataclass(frozen=True)
class Owner:
    """Whose upload a file is, from what the LMS or exchange controls (never from what the student wrote)."""

    student: str  # the student id the layout proposes (`batch.identify` settles namesakes)
    file: str  # the file's name as uploaded
    timestamp: dt.datetime | None
    identity: Identity | None = None
    assignment: str | None = None  # the exchange's assignment folder
    order: int = 0  # the LMS's upload order (Canvas's attachment id): larger is later
    late: bool = False  # the LMS marked it late
    area: tuple[str, ...] = ()  # the student's own folders between what the LMS controls and the file


@dataclass(frozen=True)
class Problem:
    """A file that cannot be placed: why, and whose it is when the LMS says so."""

    reason: str
    student: str | None = None
    identity: Identity | None = None
    assignment: str | None = None


@dataclass(frozen=True)
class Context:
    """What the layouts of one collect know: the course's notebooks, its time zone, the instructor's pattern."""

    notebooks: dict[str, list[str]]
    tz: dt.tzinfo = dt.UTC
    pattern: re.Pattern | None = None


BAD_ID = "bad student id {!r} (a letter or digit first, then letters, digits and _ . @ + -)"


class Layout:
    """One LMS's or exchange's way of naming uploads."""

    kind: ClassVar[str]
    expected: ClassVar[str]  # how its names look, for the message when no layout owns a file
    person_id: ClassVar[bool] = False  # its id is one person in every download (kept in collected.json and the gradebook)
    nested: ClassVar[bool] = True  # read inside a student's part too, to name a nested owner
    one_name: ClassVar[bool] = False  # reads the owner from one LMS name, whose tail (the file's name) is the student's

    @classmethod
    def claim(cls, parts: tuple[str, ...], i: int, entry: Entry, ctx: Context) -> Owner | Problem | None:
        """The owner of the file at path `parts` if this layout names one at parts[i] (the outermost part not
        yet claimed), a Problem if it names one wrongly, None if parts[i] is not this layout's."""
        raise NotImplementedError

    @classmethod
    def ignores(cls, path: PurePosixPath) -> bool:
        """Whether a file of this layout is no submission and is skipped unreported (receipts, litter)."""
        return False


def owned(student: str, file: str, area: tuple[str, ...], when: dt.datetime | None, **kw) -> Owner | Problem:
    """An Owner, with the student id checked."""
    if not is_student_id(student):
        return Problem(BAD_ID.format(student))
    return Owner(student, file, when, area=area, **kw)


def below(parts: tuple[str, ...], i: int, name: str) -> tuple[tuple[str, ...], str]:
    """(the student's folders, the file) when the LMS's name for an upload is `name`, at parts[i]: the file it names,
    or, where that name is a folder (a student's zip unpacked under its LMS name), everything below it."""
    area, file = split_name(name)
    return (area, file) if i == len(parts) - 1 else (area + (file, *parts[i + 1:-1]), parts[-1])


def split_name(name: str) -> tuple[tuple[str, ...], str]:
    """(the folders, the file) in a name a student chose, where a backslash separates folders as Windows writes
    them: only the file name is used, and the folders are checked for nested owners."""
    pieces = [p for p in re.split(r"[\\/]", name) if p not in ("", ".")]
    return tuple(pieces[:-1]), (pieces[-1] if pieces else name)


class Submitted(Layout):
    """nbgrader's submitted/ (and exchange) layout: `<student>/<assignment>/<file>`, nbgrader's timestamp.txt beside."""

    kind = "nbgrader"
    expected = "<student>/<assignment>/<notebook>.ipynb (nbgrader's submitted/ layout)"

    @classmethod
    def claim(cls, parts, i, entry, ctx):
        if len(parts) - i < 3 or not is_assignment(parts[i + 1], ctx.notebooks):
            return None
        student, assignment = parts[i], parts[i + 1]
        if not is_student_id(student):
            return Problem(BAD_ID.format(student))
        if assignment not in ctx.notebooks:
            return Problem(f"unknown chapter {assignment} (this course has {', '.join(ctx.notebooks) or 'none'})", student)
        return Owner(student, parts[-1], entry.timestamp, Identity(cls.kind, student), assignment=assignment,
                     area=parts[i + 2:-1])

    @classmethod
    def ignores(cls, path):
        return path.name == "timestamp.txt" and len(path.parts) >= 3  # read with the notebook beside it


class Pattern(Layout):
    """The instructor's own layout: a pattern with nbgrader's named groups `student_id`, `file_id` (optionally
    `timestamp`), matched from the start of the path inside the source (`collect --pattern`, or
    `c.FileNameCollectorPlugin.named_regexp` in nbgrader_config.py)."""

    kind = "pattern"
    expected = "your --pattern"
    nested = False  # the instructor's pattern describes the LMS's names only

    @classmethod
    def claim(cls, parts, i, entry, ctx):
        if ctx.pattern is None or i != 0 or not (m := ctx.pattern.match("/".join(parts))):
            return None
        when = stamp_time(m.groupdict().get("timestamp"), ctx.tz)
        area, file = split_name(m["file_id"] or parts[-1])
        return owned(m["student_id"], file, area, when or entry.timestamp,
                     identity=Identity(cls.kind, m["student_id"] or ""))


class Moodle(Layout):
    """Moodle's download: a folder `<Full Name>_<participant id>_assignsubmission_file_/` per student (or that
    prefix on the file name). The participant id is per assignment: it tells namesakes apart in one download only.
    The student id is the full name lower-cased without non-word characters (`participant_<id>` when marking
    is blind)."""

    one_name = True
    kind = "moodle"
    expected = "Moodle's <Full Name>_<participant id>_assignsubmission_file_/ folders"
    NAME = re.compile(r"(?P<name>.+?)_(?P<participant>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<file>.*)")

    @classmethod
    def claim(cls, parts, i, entry, ctx):
        m = cls.NAME.fullmatch(parts[i])
        last = i == len(parts) - 1
        if not m or (last and not m["file"]) or (not last and m["file"]):
            return None
        slug = re.sub(r"[\W_]+", "", m["name"].lower())  # lower first: "İ" lowers to "i" and a combining dot
        student = f"participant_{m['participant']}" if slug in ("", "participant") else slug
        area, file = split_name(m["file"]) if last else (parts[i + 1:-1], parts[-1])
        return owned(student, file, area, entry.timestamp, identity=Identity(cls.kind, m["participant"]))


class Blackboard(Layout):
    """Blackboard's download: `<assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>_<file name>` beside a receipt
    `..._attempt_<time>.txt` (skipped); the attempt's time is in the course's time zone."""

    one_name = True
    kind = "blackboard"
    expected = "a Blackboard download name"
    # The assignment's name is the instructor's, the file's the student's: the first `_<user>_attempt_<time>` is
    # Blackboard's (a file named `x_ada_attempt_<earlier time>_<notebook>` must not give its user or time).
    NAME = re.compile(r"(?P<assignment>.+?)_(?P<user>[^_\s]+)_attempt_"
                      r"(?P<time>\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d)(?:_(?P<file>.+)|\.txt)?", re.S)

    @classmethod
    def claim(cls, parts, i, entry, ctx):
        if not (m := cls.NAME.fullmatch(parts[i])) or (not m["file"] and i != len(parts) - 1):
            return None
        area, file = below(parts, i, m["file"] or parts[i])
        return owned(m["user"], file, area, stamp_time(m["time"], ctx.tz) or entry.timestamp,
                     identity=Identity(cls.kind, m["user"]))

    @classmethod
    def ignores(cls, path):
        m = cls.NAME.fullmatch(path.name)
        return bool(m) and not m["file"] and path.suffix.lower() == ".txt"


class Canvas(Layout):
    """Canvas's "Download Submissions": `<sortablename>[_LATE]_<user id>_<attachment id>_<file name>`
    (lib/content_zipper.rb: the sortable name lower-cased with every non-word character removed; `anon_<id>` in
    place of the user id when grading is anonymous; a re-upload of the same name gets `-1`, `-2`, ... before its
    extension); `LATE` is Canvas's own mark. The user id is the person: a user keeps the student id collect
    first gave them, whatever their name later."""

    one_name = True
    kind = "canvas"
    expected = "a Canvas download name"
    person_id = True
    NAME = re.compile(r"(?:(?P<name>\w+?)_)??(?:(?P<late>LATE|late)_)?"
                      r"(?P<user_id>\d+|anon_[A-Za-z0-9]+)_(?P<attachment_id>\d+)_(?P<file>.+)", re.S)
    # The name part is the user's (an editable display name): were it `ada_1001`, the shortest parse would read
    # ada's user id. A file part that starts with `<digits>_` means such a longer name parses too: refused.
    SHIFTED = re.compile(r"\d+_")

    @classmethod
    def claim(cls, parts, i, entry, ctx):
        if not (m := cls.NAME.fullmatch(parts[i])):
            return None
        if cls.SHIFTED.match(m["file"]):  # "<name>_<digits>" as a name would make the ids another user's
            return Problem(f"ambiguous Canvas name {parts[i]!r}: a number follows the ids, so the name part may hold "
                           "digits that shift which number is the user id; not placed (rename the file without a "
                           "leading number and upload again)")
        area, file = below(parts, i, m["file"])
        return owned(m["name"] or m["user_id"], file, area, entry.timestamp,
                     identity=Identity(cls.kind, m["user_id"]), order=int(m["attachment_id"]), late=bool(m["late"]))


class PlainFolder(Layout):
    """A plain folder of students' folders: `<student>/<file>` at the top of the source, nothing between."""

    kind = "folder"
    expected = "<student>/<notebook>.ipynb"
    nested = False  # a student's own folder `ch1/` is no owner

    @classmethod
    def claim(cls, parts, i, entry, ctx):
        if i != 0 or len(parts) != 2 or is_assignment(parts[0], ctx.notebooks):  # `ch1/<file>`: whose? nobody says
            return None
        return owned(parts[0], parts[1], (), entry.timestamp, identity=Identity(cls.kind, parts[0]))


# The one order: at each part of a path, outermost first, the first of these that names an owner owns the file.
LAYOUTS: list[type[Layout]] = [Submitted, Pattern, Moodle, Blackboard, Canvas, PlainFolder]


def parts_of(path: PurePosixPath) -> tuple[str, ...]:
    """A path's parts without a root (`/abs/x` is `abs/x` inside the source), each in Unicode's composed form (NFC):
    a name unpacked on macOS, decomposed (NFD), names the same student as the LMS's composed one."""
    return tuple(unicodedata.normalize("NFC", p) for p in path.parts if p not in ("/", ""))


def owner_of(entry: Entry, ctx: Context) -> Owner | Problem:
    """Whose upload `entry` is (see the module doc), or why no layout says; a student's part that names another
    owner is a Problem of the outer owner."""
    parts = parts_of(entry.path)
    for i in range(len(parts)):
        for layout in LAYOUTS:
            found = layout.claim(parts, i, entry, ctx)
            if found is None:
                continue
            if layout.one_name and (why := two_readings(layout, found, parts, i, entry, ctx)):
                return Problem(why)
            if isinstance(found, Owner) and (why := nested_owner(found, found.area + (found.file,), entry, ctx)):
                return Problem(why, found.student, found.identity, found.assignment)
            return found
    return Problem(nobody(parts, ctx))


def two_readings(layout: type[Layout], found: Owner | Problem, parts: tuple[str, ...], i: int, entry: Entry,
                 ctx: Context) -> str | None:
    """Why an LMS name is refused: another LMS's layout reads another owner in it (a Canvas file named
    `x_ada_attempt_<time>_<notebook>` reads as Blackboard's upload of ada's); else None."""
    for other in LAYOUTS:
        if other is layout or not other.one_name:
            continue
        again = other.claim(parts, i, entry, ctx)
        if again is not None and (again.student, again.identity) != (found.student, found.identity):
            return (f"ambiguous name {parts[i]!r}: {layout.kind} reads it as {found.student}'s, {other.kind} as "
                    f"{again.student}'s; a name readable two ways is not placed (rename the file and upload again)")
    return None


def claimed(path: PurePosixPath, ctx: Context) -> bool:
    """Whether some layout names an owner (or a wrong one) for `path`: a zip there is a student's upload."""
    parts, entry = parts_of(path), Entry(str(path), path, b"", None)
    return any(layout.claim(parts, i, entry, ctx) is not None for i in range(len(parts)) for layout in LAYOUTS)


def nested_owner(owner: Owner, mine: tuple[str, ...], entry: Entry, ctx: Context) -> str | None:
    """Why a student's own part of a path (`mine`: their folders and file name) is refused: a layout reads another
    owner in it (nbgrader's <student>/<assignment>/, a Moodle folder, an LMS file name); else None."""
    for j in range(len(mine)):
        for layout in LAYOUTS:
            if not layout.nested:
                continue
            found = layout.claim(mine, j, entry, ctx)  # a Problem naming a student (an unknown chapter) counts too
            if found is not None and found.student and found.student != owner.student \
                    and found.identity != owner.identity:
                return (f"{owner.student}'s upload holds {'/'.join(mine[:j + 1])!r}, named like {found.student}'s "
                        f"({layout.kind} layout): whose a file is comes only from what the LMS or exchange names, "
                        "never from inside an upload; not placed")
    return None


def nobody(parts: tuple[str, ...], ctx: Context) -> str:
    """Why no layout owns a file, with what each expects."""
    name = parts[-1] if parts else ""
    if PurePosixPath(name).suffix.lower() != ".ipynb":
        return f"not a notebook ({name})"
    expected = ", ".join(layout.expected for layout in LAYOUTS if layout is not Pattern or ctx.pattern is not None)
    if ctx.pattern is None:
        expected += ", or a layout of your own (--pattern)"
    if len(parts) >= 2:
        return (f"whose is it? neither the folder {parts[-2]!r} nor the file name {name!r} names a student: "
                f"expected {expected}")
    return f"wrong name {name!r}: no student in it: expected {expected}"


def ignored(path: PurePosixPath) -> bool:
    """Whether a file is skipped unreported: OS litter, or what a layout skips (Blackboard's receipts, nbgrader's
    timestamp.txt)."""
    text = str(path)
    return any(i in text or text.endswith(i.rstrip("/")) for i in OS_LITTER) or any(layout.ignores(path) for layout in LAYOUTS)


def stamp_time(text: str | None, tz: dt.tzinfo) -> dt.datetime | None:
    """'2025-01-30-12-00-00' (Blackboard) or an ISO 8601 time, in `tz` without an offset; None if neither."""
    if not text:
        return None
    m = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)-(\d\d)-(\d\d)-(\d\d)", text.strip())
    try:
        when = dt.datetime(*map(int, m.groups())) if m else dt.datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return (when if when.tzinfo else when.replace(tzinfo=tz)).astimezone(dt.UTC)


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
