"""Attempts: every upload of a notebook that collect saw, kept with its time, and the one that is graded.

Each attempt's bytes are kept once (by their sha256) in
`COURSE/record/attempts/<student>/<assignment>/<notebook>/`, with its upload time, where it
came from, the LMS's late mark and its order in the LMS (`index.json`). Collecting the same
file again adds nothing. The graded attempt is the instructor's pin where there is one
(`autograder attempts STUDENT --choose N`; a pin survives every later collect), else the
course's stated rule (`COURSE/record/attempts.json`, `autograder attempts --rule`):

* `last`: the latest upload (by its time, then the LMS's order), as nbgrader keeps the latest;
* `last-on-time`: the latest upload on time against the student's own due date (extension and
  grace period included); the latest of all when none is on time.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from autograder import config, late
from autograder.errors import AutograderError
from autograder.gradinglog import atomic_write
from autograder.record import extensions

RULES = ("last", "last-on-time")
DIR = "attempts"
INDEX = "index.json"
EARLIEST = dt.datetime.min.replace(tzinfo=dt.UTC)


class AttemptError(AutograderError, ValueError):
    """An attempt that cannot be chosen as asked (a user-facing sentence)."""


@dataclass(frozen=True)
class Attempt:
    """One upload of one notebook: its bytes' sha256, its time (aware UTC, or None), where it came from."""

    sha256: str
    uploaded_at: dt.datetime | None
    origin: str
    lms_late: bool = False
    order: int = 0  # the LMS's upload order (Canvas's attachment id), for uploads of one time
    collected_at: str = ""

    def key(self) -> tuple:
        return (self.uploaded_at or EARLIEST, self.order, self.collected_at, self.sha256)


@dataclass(frozen=True)
class Choice:
    """The attempt graded, and why (pinned, or which rule picked it)."""

    attempt: Attempt
    why: str
    pinned: bool = False


def folder(course_dir: Path, student: str, assignment: str, notebook: str) -> Path:
    """Where one notebook's attempts are kept."""
    return Path(course_dir) / "record" / DIR / student / assignment / notebook


def _read_index(where: Path) -> dict:
    try:
        data = json.loads((where / INDEX).read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_index(where: Path, data: dict) -> None:
    where.mkdir(parents=True, exist_ok=True)
    atomic_write(where / INDEX, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())


def _attempt(sha: str, e: dict) -> Attempt:
    when = e.get("uploaded_at")
    return Attempt(sha, dt.datetime.fromisoformat(when.replace("Z", "+00:00")) if when else None, str(e.get("origin", "")),
                   bool(e.get("lms_late")), int(e.get("order") or 0), str(e.get("collected_at", "")))


def keep(course_dir: Path, student: str, assignment: str, notebook: str, data: bytes, uploaded_at: dt.datetime | None,
         origin: str, lms_late: bool = False, order: int = 0) -> Attempt:
    """Keep one upload (its bytes once, by sha256; the same bytes again keep their first record)."""
    where = folder(course_dir, student, assignment, notebook)
    root = (Path(course_dir) / "record" / DIR).resolve()
    if where.resolve().parent.parent.parent != root:
        raise AttemptError(f"refusing to keep an attempt outside {root}: {student}/{assignment}/{notebook}")
    sha = hashlib.sha256(data).hexdigest()
    index = _read_index(where)
    attempts = index.setdefault("attempts", {})
    if sha not in attempts:
        where.mkdir(parents=True, exist_ok=True)
        (where / f"{sha}.ipynb").write_bytes(data)
        now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        attempts[sha] = {"uploaded_at": uploaded_at.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                         if uploaded_at else None, "origin": origin, "lms_late": lms_late, "order": order,
                         "collected_at": now}
        _write_index(where, index)
    return _attempt(sha, attempts[sha])


def every(course_dir: Path, student: str, assignment: str, notebook: str) -> list[Attempt]:
    """One notebook's attempts, oldest first."""
    index = _read_index(folder(course_dir, student, assignment, notebook))
    return sorted((_attempt(sha, e) for sha, e in index.get("attempts", {}).items() if isinstance(e, dict)),
                  key=Attempt.key)


def data(course_dir: Path, student: str, assignment: str, notebook: str, attempt: Attempt) -> bytes:
    """The bytes of a kept attempt."""
    return (folder(course_dir, student, assignment, notebook) / f"{attempt.sha256}.ipynb").read_bytes()


def pinned(course_dir: Path, student: str, assignment: str, notebook: str) -> str | None:
    """The sha256 of the attempt the instructor pinned, or None."""
    pin = _read_index(folder(course_dir, student, assignment, notebook)).get("pin")
    return pin if isinstance(pin, str) else None


def pin(course_dir: Path, student: str, assignment: str, notebook: str, number: int | None) -> Attempt | None:
    """Pin attempt `number` (1 = the oldest, as `every` lists them) as the graded one; None takes the pin back."""
    where = folder(course_dir, student, assignment, notebook)
    kept = every(course_dir, student, assignment, notebook)
    if not kept:
        raise AttemptError(f"no attempt of {student}'s {notebook} is kept: collect it first")
    index = _read_index(where)
    if number is None:
        index.pop("pin", None)
        _write_index(where, index)
        return None
    if not 1 <= number <= len(kept):
        raise AttemptError(f"{student}'s {notebook} has attempts 1 to {len(kept)}, not {number}")
    index["pin"] = kept[number - 1].sha256
    _write_index(where, index)
    return kept[number - 1]


def rule(course_dir: Path) -> str:
    """The course's rule for the graded attempt ('last' unless the instructor chose another)."""
    try:
        found = json.loads((Path(course_dir) / "record" / "attempts.json").read_text()).get("rule")
    except (OSError, ValueError, AttributeError):
        found = None
    return found if found in RULES else "last"


def set_rule(course_dir: Path, name: str) -> None:
    """State the course's rule (one of RULES)."""
    if name not in RULES:
        raise AttemptError(f"the rule is one of {', '.join(RULES)}, not {name!r}")
    path = Path(course_dir) / "record" / "attempts.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps({"rule": name}) + "\n").encode())


def choose(attempts: list[Attempt], the_rule: str, on_time, pin_sha: str | None = None) -> Choice:
    """The graded attempt of `attempts` (not empty): the pinned one, else the rule's; `on_time(attempt) -> bool`
    says whether one is on time against the student's own due date."""
    ordered = sorted(attempts, key=Attempt.key)
    if pin_sha is not None and (found := next((a for a in ordered if a.sha256 == pin_sha), None)):
        return Choice(found, "pinned by the instructor", True)
    if the_rule == "last-on-time":
        timely = [a for a in ordered if on_time(a)]
        if timely:
            return Choice(timely[-1], "the last on time" + (" (a later one came after the due date)"
                                                            if timely[-1] is not ordered[-1] else ""))
        return Choice(ordered[-1], "the last (none on time)")
    return Choice(ordered[-1], "the last")


def graded(course_dir: Path, student: str, assignment: str, notebook: str) -> Choice | None:
    """The attempt the course grades for one notebook (the pin, else its rule), or None when none is kept."""
    kept = every(course_dir, student, assignment, notebook)
    if not kept:
        return None
    the_rule, pin_sha = rule(course_dir), pinned(course_dir, student, assignment, notebook)
    if pin_sha is None and (len(kept) == 1 or the_rule == "last"):  # no due date needed
        return choose(kept, "last", lambda a: True)
    cfg = config.load(course_dir)
    due = extensions.due_for(course_dir, student, assignment).due

    def on_time(a: Attempt) -> bool:
        return not late.lateness(a.uploaded_at, due, a.lms_late, cfg.late).late

    return choose(kept, the_rule, on_time, pin_sha)


def as_json(a: Attempt) -> dict:
    """An attempt for the service or a listing."""
    out = asdict(a)
    out["uploaded_at"] = a.uploaded_at.strftime("%Y-%m-%dT%H:%M:%SZ") if a.uploaded_at else None
    return out


def place(course_dir: Path, student: str, assignment: str, notebook: str, attempt: Attempt, body: bytes) -> None:
    """Write a kept attempt into submitted/ as collect writes a submission (`body`: its bytes as collect places them,
    cut to its caps), with nbgrader's timestamp.txt, so the next grading grades it."""
    root = (Path(course_dir) / "submitted").resolve()
    where = root / student / assignment
    if not where.resolve().is_relative_to(root):
        raise AttemptError(f"refusing to write outside {root}")
    where.mkdir(parents=True, exist_ok=True)
    (where / f"{notebook}.ipynb").write_bytes(body)
    if attempt.uploaded_at is None:
        (where / "timestamp.txt").unlink(missing_ok=True)
    else:
        (where / "timestamp.txt").write_text(attempt.uploaded_at.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f UTC"))


def record_collected(course_dir: Path, placed: list, cap) -> list[tuple[str, str]]:
    """After a collect: place the graded attempt of each notebook it placed (collect's Placed) where that is another
    (a pin, or the rule); `cap(raw) -> bytes` is collect's placing of a file's bytes. A notebook no attempt of which is
    kept (a collect that keeps none) is kept as placed. Returns collect's notes (origin, what is graded instead)."""
    notes = []
    for p in placed:
        where = Path(course_dir) / "submitted" / p.student / p.assignment / f"{p.notebook}.ipynb"
        try:
            raw = where.read_bytes()
        except OSError:
            continue
        if not every(course_dir, p.student, p.assignment, p.notebook):
            keep(course_dir, p.student, p.assignment, p.notebook, raw, p.entry.timestamp, p.entry.origin, bool(p.late))
        choice = graded(course_dir, p.student, p.assignment, p.notebook)
        if choice is None:
            continue
        body = cap(data(course_dir, p.student, p.assignment, p.notebook, choice.attempt))
        if body != raw or choice.attempt.uploaded_at != p.entry.timestamp:
            place(course_dir, p.student, p.assignment, p.notebook, choice.attempt, body)
            when = choice.attempt.uploaded_at.strftime("%Y-%m-%d %H:%M UTC") if choice.attempt.uploaded_at else "untimed"
            notes.append((p.entry.origin, f"kept as an attempt; graded instead: the one uploaded {when} "
                                          f"({choice.why}; autograder attempts {p.student})"))
    return notes
