"""One collect: every source read, every file owned and placed, the latest upload of each notebook written.

Files come one at a time (`sources`); a placed notebook's bytes wait on disk in a spool
inside the course folder (removed at the end), so memory holds one file at a time whatever the
class's size. Then the uploaders' identities are settled (`identify`), the latest upload of
each (student, notebook) is chosen, checked by the one guard, cut to the caps and written to
submitted/ with nbgrader's timestamp.txt; the decisions go to collected.json (`Manifest`).
"""
from __future__ import annotations

import datetime as dt
import hashlib
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from autograder import config
from autograder.collect import layouts
from autograder.collect.caps import capped, check_notebook, too_deep
from autograder.collect.layouts import Context, Identity, Problem, claimed, compile_pattern, ignored, is_student_id
from autograder.collect.manifest import Manifest, sha256
from autograder.collect.placement import Placed, Signatures, course_notebooks, expand
from autograder.collect.sources import Budget, Caps, CollectError, Entry, MiB, read_source
from autograder.record import attempts


@dataclass
class CollectResult:
    """What `collect` did: placed submissions and the files it could not place."""

    placed: list[tuple[Placed, str]] = field(default_factory=list)  # (submission, "new" | "replaced" | "unchanged")
    problems: list[tuple[str, str]] = field(default_factory=list)  # (origin, reason)
    notes: list[tuple[str, str]] = field(default_factory=list)  # (origin, what collect did that a reader should know)
    students: dict[str, str | None] = field(default_factory=dict)  # student id -> the LMS's user id (Canvas's)


class Spool:
    """Where placed notebooks' bytes wait, on disk, until collect writes the chosen ones."""

    def __init__(self, course_dir: Path) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix=".collect-spool-", dir=course_dir if course_dir.is_dir() else None)
        self._n = 0

    def keep(self, entry: Entry) -> Entry:
        """`entry` with its bytes on disk and none in memory."""
        self._n += 1
        path = Path(self._dir.name) / str(self._n)
        path.write_bytes(entry.data)
        return replace(entry, data=b"", held=path)

    def close(self) -> None:
        self._dir.cleanup()


def collect(course_dir: Path, sources: Iterable[Path], caps: Caps = Caps(), pattern: str | None = None,
            file_times: bool = False) -> CollectResult:
    """Place every submission of `sources` in course_dir/submitted; report what was not placed. `pattern`
    (else the course's c.FileNameCollectorPlugin.named_regexp) reads a layout of the instructor's own;
    `file_times` times a folder's files without timestamp.txt by their modification time."""
    course_dir = Path(course_dir)
    cfg = config.load(course_dir) if (course_dir / config.CONFIG_NAME).is_file() else None
    tz = cfg.timezone if cfg else dt.UTC
    compiled = (compile_pattern(pattern) if pattern else
                compile_pattern(cfg.collect_pattern, "c.FileNameCollectorPlugin.named_regexp") if cfg else None)
    ctx = Context(course_notebooks(course_dir), tz, compiled)
    signatures = Signatures.of_course(course_dir, ctx.notebooks)
    budget, spool = Budget(caps), Spool(course_dir)
    try:
        seen: list[tuple[Entry, Placed | Problem]] = []
        for src in sources:
            for entry in read_source(Path(src), tz, caps, file_times, budget, owned=lambda rel: claimed(rel, ctx)):
                if ignored(entry.path):
                    continue
                for e, p in expand(entry, ctx, signatures, caps, budget):  # one file at a time: its bytes to disk or dropped
                    if isinstance(p, Placed) and len(e.data) > caps.notebook_bytes and (why := check_notebook(e.data)):
                        p = Problem(f"larger than {caps.notebook_bytes // MiB} MiB and {why}: not placed", p.student,
                                    p.identity, p.assignment)  # nothing to score: not kept
                    if isinstance(p, Placed):
                        p = replace(p, entry=spool.keep(e))
                        seen.append((p.entry, p))
                    else:
                        seen.append((replace(e, data=b""), p))
        return _decide(course_dir, seen, caps)
    finally:
        spool.close()


def _decide(course_dir: Path, seen: list[tuple[Entry, Placed | Problem]], caps: Caps) -> CollectResult:
    """Settle identities, keep the latest upload of each notebook, check, cap and write it; record everything."""
    result = CollectResult()
    chosen: dict[tuple[str, str, str], Placed] = {}
    unplaced: list[tuple[str, Problem, dt.datetime | None]] = []
    settled, identities = identify(seen, Manifest.identities(course_dir))

    def refuse(entry: Entry, problem: Problem) -> None:
        unplaced.append((entry.origin, problem, entry.timestamp))
        result.problems.append((entry.origin, problem.reason))

    for entry, p in settled:
        if p.student:
            result.students.setdefault(p.student, lms_user_id(p.identity))
        if isinstance(p, Problem):
            refuse(entry, p)
            continue
        if is_student_id(p.student):  # every upload stays, with its time (an id that is not one is refused below)
            attempts.keep(course_dir, p.student, p.assignment, p.notebook,
                          p.entry.held.read_bytes() if p.entry.held else p.entry.data, p.entry.timestamp,
                          p.entry.origin, p.late)
        key = (p.student, p.assignment, p.notebook)
        if key in chosen:
            old, new = sorted([chosen[key], p], key=lambda x: x.order)
            refuse(old.entry, Problem(f"duplicate of {p.student}/{p.notebook}: kept the later {new.entry.path.name}",
                                      old.student, old.identity, old.assignment))
            chosen[key] = new
        else:
            chosen[key] = p
    untimed: dict[str, int] = {}
    written = []
    for key in sorted(chosen):  # the latest upload counts, even when it is broken: it scores 0
        placed = chosen[key]
        data = placed.entry.held.read_bytes() if placed.entry.held else placed.entry.data
        if too_deep(data):
            refuse(placed.entry, Problem(f"not a notebook: {too_deep(data)}; not placed", placed.student,
                                         placed.identity, placed.assignment))
            continue
        if problem := check_notebook(data):
            result.problems.append((placed.entry.origin, f"{problem}: placed anyway, it will score 0"))
        else:
            data, cuts = capped(data, caps)
            if len(data) > caps.notebook_bytes:
                reason = (f"larger than {caps.notebook_bytes // MiB} MiB{' after ' + '; '.join(cuts) if cuts else ''}:"
                          " not placed (no notebook of the course is that large)")
                refuse(placed.entry, Problem(reason, placed.student, placed.identity, placed.assignment))
                continue
            if cuts:
                placed = replace(placed, note="; ".join(filter(None, [placed.note, *cuts])))
        if placed.note:
            result.notes.append((placed.entry.origin, placed.note))
        folder = placed.entry.origin.split("/")[0]
        if placed.entry.timestamp is None:
            untimed[folder] = untimed.get(folder, 0) + 1
        elif placed.entry.timed_by == "file time":
            result.notes.append((placed.entry.origin, "timed by its file time (--file-times)"))
        result.placed.append((placed, _write(course_dir, placed, data)))
        written.append((placed, sha256(data)))
    for folder, n in untimed.items():
        result.notes.append((f"{folder} ({n} notebook(s))", "no timestamp.txt beside them: not timed, so never late "
                             "(collect --file-times takes the files' modification times instead)"))
    Manifest.update(course_dir, written, unplaced, identities)
    return result


def lms_user_id(identity: Identity | None) -> str | None:
    """The id the gradebook keeps for a student (the Canvas export's): an identity that is one person in every download."""
    return identity.id if identity is not None and _person(identity) else None


def _person(identity: Identity | None) -> bool:
    return identity is not None and any(layout.kind == identity.kind and layout.person_id for layout in layouts.LAYOUTS)


def identify(seen: list[tuple[Entry, Placed | Problem]],
             known: dict[Identity, str]) -> tuple[list[tuple[Entry, Placed | Problem]], dict[Identity, str]]:
    """One person, one student: an identity collect has seen before (`known`: one of a layout whose id is a person,
    Canvas's user id) keeps its student id; a new one gets its name part, or `<name>_<id>` when that name is taken
    or wanted by several now. Other identities (Moodle's participant ids) only tell namesakes in this collect apart:
    `<name>_<id>`. Returns the settled list and every person identity seen with its student id."""
    ids, taken = dict(known), set(known.values())
    wanted: dict[str, set[Identity]] = {}
    namesakes: dict[str, set[Identity]] = {}
    for _, p in seen:
        if p.student and _person(p.identity) and p.identity not in ids:
            wanted.setdefault(p.student, set()).add(p.identity)
        elif p.student and p.identity is not None and not _person(p.identity) and p.identity.id != p.student:
            namesakes.setdefault(p.student, set()).add(p.identity)
    for name in sorted(wanted):
        users = sorted(wanted[name], key=str)
        for user in users:
            ids[user] = name if len(users) == 1 and name not in taken else f"{name}_{user.id}"
        taken.update(ids[u] for u in users)
    shared = {name for name, who in namesakes.items() if len(who) > 1}

    def who(p: Placed | Problem) -> str | None:
        if p.student and _person(p.identity):
            return ids[p.identity]
        if p.student in shared and p.identity is not None and p.identity.id != p.student:
            return f"{p.student}_{p.identity.id}"
        return p.student

    def settled(p: Placed | Problem) -> Placed | Problem:
        student = who(p)
        return replace(p, owner=replace(p.owner, student=student)) if isinstance(p, Placed) else replace(p, student=student)

    out = [(entry, settled(p)) for entry, p in seen]
    return out, {i: ids[i] for _, p in seen if _person(p.identity) and p.student for i in [p.identity]}


def _write(course_dir: Path, placed: Placed, data: bytes) -> str:
    """Write one submission (and nbgrader's timestamp.txt); 'new', 'replaced' or 'unchanged'."""
    root = (course_dir / "submitted").resolve()
    folder = root / placed.student / placed.assignment
    dest = folder / f"{placed.notebook}.ipynb"
    if not dest.resolve().is_relative_to(root) or not is_student_id(placed.student):
        raise CollectError(f"refusing to write outside {root}: {dest}")  # unreachable: ids are checked above
    when = placed.entry.timestamp
    stamp = when.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f UTC") if when is not None else None
    old_stamp = (folder / "timestamp.txt").read_text() if (folder / "timestamp.txt").is_file() else None
    if dest.exists() and hashlib.sha256(dest.read_bytes()).digest() == hashlib.sha256(data).digest() \
            and old_stamp == stamp:
        return "unchanged"
    status = "replaced" if dest.exists() else "new"
    folder.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)
    if stamp is None:  # untimed: no time of an earlier upload stays beside it
        (folder / "timestamp.txt").unlink(missing_ok=True)
    else:
        (folder / "timestamp.txt").write_text(stamp)
    return status
