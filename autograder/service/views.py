"""What a result shows: one model (`Shown`) that the page and `attnlab.submit` both render, at the tier the
instructor chose for the chapter and the moment (before the due date, after it, once published); and the
credit of each attempt (service.toml's [credit]: `settings.Credit.multiplier` of its number, `numbers`)."""
from __future__ import annotations

import datetime as dt
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from autograder import config, gradinglog, late
from autograder.record import attempts as record
from autograder.record import extensions
from autograder.service import settings as settings_mod
from autograder.service.settings import Settings, percent
from autograder.service.store import Attempt, Store, has_gradebook, now

PHASES = {"before_due": "before the due date", "after_due": "after the due date", "after_published": "grades published"}


@dataclass(frozen=True)
class CellShown:
    grade_id: str
    passed: bool
    sentence: str
    score: float | None  # None: not shown at this tier, or left for the instructor (manual grading)
    max_score: float | None
    manual: bool = False


@dataclass(frozen=True)
class Shown:
    """One attempt as its student may see it now."""

    id: str
    assignment: str
    state: str  # queued, grading, done, failed
    received: str
    tier: str  # nothing, cells, points
    phase: str
    later: str  # what a later phase will show, in words ("" when nothing more will)
    cells: tuple[CellShown, ...] = ()
    score: float | None = None
    max_score: float | None = None
    penalty: float | None = None
    lateness: str = ""
    message: str = ""  # why it could not be run or graded
    due: str = ""
    attempts_left: int = 0
    limits: str = ""
    counts: str = ""
    queue_position: int | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    number: int | None = None  # the attempt's number for its credit (None: the grader could not grade it)
    credit: float | None = None  # the share of its points it earns (None: the course's credit does not decay)
    credited: float | None = None  # its points (less any late penalty) times its credit, at the points tier
    next_attempt: str = ""  # what the student's next upload of the chapter would earn ('' without decaying credit)

    def to_dict(self) -> dict:
        return asdict(self)


EXTENSIONS_TTL_S = 10.0  # the extensions are read again at most this often (a page or a poll opens no gradebook)
_extensions: dict = {}


def _every(store: Store) -> list:
    """Every student's extension (record.extensions.every), read at most every EXTENSIONS_TTL_S seconds."""
    at, found = _extensions.get(store.course_dir, (-EXTENSIONS_TTL_S, None))
    if found is None or time.monotonic() - at >= EXTENSIONS_TTL_S:
        cfg = config.load(store.course_dir)
        if not has_gradebook(store.course_dir):  # no gradebook yet: only the record holds extensions
            found = [extensions.StudentDue(e.student, e.assignment, cfg.due.get(e.assignment),
                                           e.length(cfg.due.get(e.assignment)) or None)
                     for e in extensions.read(store.course_dir).values()]
        else:
            found = extensions.every(store.course_dir)
        _extensions[store.course_dir] = (time.monotonic(), found)
    return found


def own_due(store: Store, cfg: config.CourseConfig, student: str, assignment: str):  # -> extensions.StudentDue
    """The student's own due date (the course's plus their extension), from the course's record."""
    mine = [d for d in _every(store) if d.student == student and d.assignment == assignment]
    return mine[0] if mine else extensions.StudentDue(student, assignment, cfg.due.get(assignment), None)


def last_due(store: Store, cfg: config.CourseConfig, assignment: str) -> dt.datetime | None:
    """The latest due date of anyone in the course for `assignment` (extensions included): what a result shows
    changes after it, so that no student reads points while another may still submit."""
    dues = [cfg.due.get(assignment)] + [d.due for d in _every(store) if d.assignment == assignment]
    dues = [d for d in dues if d is not None]
    return max(dues) if dues else None


def describe_due(mine, tz) -> str:
    """'2025-02-02 23:00 UTC (your extension: 2 d 0 h)', or 'no due date'."""
    if mine.due is None:
        return "no due date"
    text = mine.due.astimezone(tz).strftime("%Y-%m-%d %H:%M %Z")
    if mine.extension:
        hours = int(mine.extension.total_seconds() // 3600)
        text += f" (your extension: {hours // 24} d {hours % 24} h)"
    return text


def phase(settings: Settings, assignment: str, due: dt.datetime | None, when: dt.datetime) -> str:
    if assignment in settings.published:
        return "after_published"
    return "after_due" if due is not None and when > due else "before_due"


def _later(settings: Settings, assignment: str, current: str) -> str:
    show = settings.show_for(assignment)
    order = ["before_due", "after_due", "after_published"]
    rank = {"nothing": 0, "cells": 1, "points": 2}
    now_rank = rank[getattr(show, current)]
    for p in order[order.index(current) + 1:]:
        tier = getattr(show, p)
        if rank[tier] > now_rank:
            what = "each graded cell's pass or fail" if tier == "cells" else "each graded cell and its points"
            return f"{what}, {PHASES[p]}" if p != "after_published" else f"{what}, once the instructor publishes grades"
    return ""


def attempts_used(store: Store, settings: Settings, student: str, assignment: str, when: dt.datetime) -> list[Attempt]:
    """The attempts that count against the limit: accepted in the window and not lost to a grader failure."""
    since = when - dt.timedelta(hours=settings.window_hours)
    return [a for a in store.attempts(student, assignment) if a.received_at > since and a.state != "failed"]


ALL = 10**9  # every attempt of a student's chapter (Store.attempts' limit)


def numbers(store: Store, student: str, assignment: str) -> dict[str, int]:
    """Each upload's attempt number (1 = the first): the student's uploads of the chapter in the order they arrived,
    all of them (not the window's), less those the grader could not grade (failed: they cost no attempt)."""
    kept = [a for a in reversed(store.attempts(student, assignment, limit=ALL)) if a.state != "failed"]
    return {a.id: n for n, a in enumerate(kept, 1)}


def next_attempt(store: Store, settings: Settings, student: str, assignment: str) -> str:
    """What the student's next upload would earn, in words ('' when the course's credit does not decay)."""
    if not settings.credit.decays:
        return ""
    n = len(numbers(store, student, assignment)) + 1
    return f"your next attempt (number {n}) earns {percent(settings.credit.multiplier(n))} of its points"


def counting(store: Store, settings: Settings, cfg: config.CourseConfig, student: str, assignment: str) -> Attempt | None:
    """The graded upload that counts for the grade: the best (service.toml's `final = "best"`: the most points times
    the attempt's credit, the later of two equal), else the one the course's record chooses (the instructor's pin,
    else the course's rule: `autograder attempts`, whatever its credit); None when nothing graded counts yet (or
    what counts came from elsewhere, such as an LMS download)."""
    done = [a for a in store.attempts(student, assignment, limit=ALL) if a.state == "done" and a.result_json]
    if not done:
        return None
    if settings.final == "best":
        number = numbers(store, student, assignment)
        return max(done, key=lambda a: (settings.credit.multiplier(number[a.id]) * float(a.result.get("score", 0)),
                                        a.seq))
    choice = record.graded(store.course_dir, student, assignment, done[0].notebook)
    return next((a for a in done if choice is not None and a.sha256 == choice.attempt.sha256), None)


def shown(store: Store, settings: Settings, cfg: config.CourseConfig, a: Attempt, when: dt.datetime | None = None) -> Shown:
    """Attempt `a` at the tier its chapter shows at `when` (now)."""
    when = when or now()
    mine = own_due(store, cfg, a.student, a.assignment)
    due = mine.due
    ph = phase(settings, a.assignment, last_due(store, cfg, a.assignment), when)
    tier = getattr(settings.show_for(a.assignment), ph)
    used = attempts_used(store, settings, a.student, a.assignment, when)
    counted = counting(store, settings, cfg, a.student, a.assignment)
    number = numbers(store, a.student, a.assignment)
    credit = settings.credit.multiplier(number[a.id]) if settings.credit.decays and a.id in number else None
    base = dict(id=a.id, assignment=a.assignment, state=a.state, tier=tier, phase=PHASES[ph],
                later=_later(settings, a.assignment, ph),
                received=a.received_at.astimezone(cfg.timezone).strftime("%Y-%m-%d %H:%M:%S %Z"),
                due=describe_due(mine, cfg.timezone),
                attempts_left=max(0, settings.attempts - len(used)), limits=settings.describe(),
                counts=f"attempt {number[counted.id]} of {len(number)}" if counted else "none graded yet",
                number=number.get(a.id), credit=credit,
                next_attempt=next_attempt(store, settings, a.student, a.assignment))
    lateness = late.lateness(a.received_at, due, False, cfg.late)
    base["lateness"] = lateness.describe() if due else ""
    if a.pending:
        queued = [x.id for x in store.pending()]
        return Shown(**base, queue_position=queued.index(a.id) + 1 if a.id in queued else None)
    if a.state == "failed":
        return Shown(**base, message=a.error or "not graded")
    log = a.result or {}
    if tier == "nothing":
        return Shown(**base)
    cells = []
    for c in log.get("cells", []):
        manual = c.get("score") is None
        cells.append(CellShown(str(c.get("grade_id")), bool(c.get("passed")),
                               "left for the instructor to grade" if manual else str(c.get("reason", "")),
                               c.get("score") if tier == "points" else None,
                               c.get("max_score") if tier == "points" else None, manual))
    extra = {}
    if tier == "points":
        raw, top = float(log.get("score", 0.0)), float(log.get("max_score", 0.0))
        penalty = late.penalty(cfg.late, lateness, raw, top)
        extra = dict(score=raw, max_score=top, penalty=penalty,
                     credited=None if credit is None else (raw - penalty) * credit)
    return Shown(**base, **extra, cells=tuple(cells), message=str(log.get("error") or ""),
                 notes=tuple(str(n) for n in log.get("notes", [])))


def credit_in_gradebook(course_dir: Path) -> dict[tuple[str, str], tuple[int, float]]:
    """(student, chapter) -> (attempt number, credit) of the upload whose points the gradebook holds (the one its
    grading log's file is: the attempt that counts once `serve --finalize` ran), for each notebook graded from an
    upload to the service; empty when the course's credit does not decay or it never ran the service. Read only."""
    course_dir = Path(course_dir)
    chosen = settings_mod.load(course_dir)
    if not chosen.credit.decays or not (course_dir / "service" / "service.db").is_file():
        return {}
    store = Store(course_dir)
    out = {}
    try:
        cfg = config.load(course_dir)
        for student, assignment in sorted({(a.student, a.assignment) for a in store.attempts(limit=ALL)}):
            mine = [a for a in store.attempts(student, assignment, limit=ALL) if a.state != "failed"]
            log = gradinglog.read(course_dir / "autograded" / student / assignment, mine[0].notebook) if mine else None
            if log is None:
                continue
            same = [a for a in mine if a.sha256 == log.submission_sha256]  # newest first
            counted = counting(store, chosen, cfg, student, assignment)
            held = next((a for a in same if counted is not None and a.id == counted.id), same[0] if same else None)
            if held is not None:
                n = numbers(store, student, assignment)[held.id]
                out[student, assignment] = (n, chosen.credit.multiplier(n))
    finally:
        store.close()
    return out


def as_text(s: Shown) -> str:
    """The result as plain text (what `python -m attnlab.submit` prints; the page shows the same)."""
    lines = [f"{s.assignment}: upload {s.id}, received {s.received}" + (f" ({s.lateness})" if s.lateness else "")]
    if s.state in ("queued", "grading"):
        where = f", number {s.queue_position} in the queue" if s.queue_position else ""
        lines.append(f"status: {s.state}{where}")
    elif s.state == "failed":
        lines.append(f"status: not graded: {s.message}")
    else:
        lines.append("status: graded")
        if s.tier == "nothing":
            lines.append(f"results are not shown {s.phase}")
        if s.message:
            lines.append(f"the notebook could not be run: {s.message}")
        for n in s.notes:
            lines.append(f"note: {n}")
        for c in s.cells:
            mark = "manual" if c.manual else "PASS" if c.passed else "FAIL"
            pts = f" {c.score:g}/{c.max_score:g}" if c.score is not None and c.max_score is not None else ""
            lines.append(f"  {mark:6} {c.grade_id}{pts}: {c.sentence}")
        if s.score is not None:
            pen = f", late penalty -{s.penalty:g}" if s.penalty else ""
            lines.append(f"score: {s.score:g}/{s.max_score:g}{pen}")
    if s.credit is not None:
        earned = f": {s.credited:g}/{s.max_score:g}" if s.credited is not None else ""
        lines.append(f"credit: attempt {s.number} earns {percent(s.credit)} of its points{earned}")
    if s.next_attempt:
        lines.append(s.next_attempt)
    if s.later:
        lines.append(f"shown later: {s.later}")
    lines.append(f"due: {s.due}; attempts left: {s.attempts_left}; counts: {s.counts}")
    lines.append(f"limits: {s.limits}")
    return "\n".join(lines)
