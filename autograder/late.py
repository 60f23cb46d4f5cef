"""Late work: how late each submission is, and what the course's policy charges for it.

Lateness comes from the upload time collect kept (nbgrader's `SubmittedAssignment.timestamp`,
from `timestamp.txt`) and the student's own due date: the assignment's (`Assignment.duedate`,
from the course config) plus the student's extension (`SubmittedAssignment.extension`, as
nbgrader's `total_seconds_late` adds it; `autograder.record.extensions`). The time decides:
the LMS's own late mark is evidence, used only where nothing can be measured (no upload time
or no due date: then it is charged one started day), so an upload the LMS marked late before
the due date moved, or before the student's extension, is on time (and says the LMS marked it).
A grace period forgives that much lateness: an upload within it is on time in every output
(gradebook, exports, feedback), which only adds how long after the due date it came. An
upload with no time (nothing said when: see `autograder.collect`) is on time unless the LMS
marked it late. The penalty is in points, per notebook:
`min(raw score, points x min(cap, per_day x started days late))`, so a score never goes
below zero. It is stored where nbgrader keeps it (`SubmittedNotebook.late_submission_penalty`),
so nbgrader's formgrader and exports agree with ours; `autograder.grades.apply_late` writes it after
every grading and every manual import, since it depends on the raw score. This module is the policy
alone: it opens no gradebook and imports nothing above `autograder.config`.
"""
from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

from autograder.config import CourseConfig, LatePolicy

DAY = 86_400.0


@dataclass(frozen=True)
class Lateness:
    """How late one submission is: `seconds` after the due date (None: no time or no due date)."""

    late: bool
    seconds: float | None
    days: int  # started days late that the policy charges (0 when on time)
    lms_late: bool = False
    note: str = ""

    def describe(self) -> str:
        """'2 d 3 h late', 'late (marked by the LMS)', 'on time', 'on time (10 min after the due date, within the
        grace period)'."""
        if not self.late:
            if self.seconds is not None and self.seconds > 0:
                return f"on time ({_duration(self.seconds)} after the due date, within the grace period)"
            return "on time"
        if self.seconds is None or self.seconds <= 0:
            return "late (marked by the LMS)"
        return f"{_duration(self.seconds)} late"


def lateness(uploaded: dt.datetime | None, due: dt.datetime | None, lms_late: bool, policy: LatePolicy) -> Lateness:
    """The lateness of an upload at `uploaded` for a student due at `due` (aware datetimes, the extension included).
    The clocks decide; the LMS's late mark only where they cannot (no time or no due date)."""
    seconds = (uploaded - due).total_seconds() if uploaded is not None and due is not None else None
    if seconds is not None and 0 < seconds <= policy.grace.total_seconds():  # forgiven: on time, everywhere
        return Lateness(False, seconds, 0, lms_late, "within the grace period")
    if seconds is not None and seconds > 0:
        return Lateness(True, seconds, math.ceil(seconds / DAY), lms_late)
    if seconds is not None:  # before the student's due date: on time, whatever the LMS marked
        return Lateness(False, seconds, 0, lms_late,
                        "the LMS marked it late, but it came before the due date that applies" if lms_late else "")
    if lms_late:  # nothing to measure: the LMS's mark is all there is, one day
        return Lateness(True, None, 1, True, "the LMS marked it late; no due date or time to measure it: one day")
    return Lateness(False, None, 0, False)


def penalty(policy: LatePolicy, late: Lateness, raw: float, max_score: float) -> float:
    """Points the policy takes from a notebook scoring `raw` of `max_score` (never more than `raw`)."""
    if policy.kind == "none" or not late.late or late.days <= 0:
        return 0.0
    fraction = min(policy.cap, policy.per_day * late.days)
    return round(min(max(raw, 0.0), max_score * fraction), 4)


def points_lost(points: float) -> str:
    """A penalty as printed: '-2.4', and '0' (never '-0') for none."""
    text = f"{round(points, 2):g}"
    return "0" if text in ("0", "-0") else f"-{text}"


def _duration(seconds: float) -> str:
    days, rest = divmod(int(seconds), 86_400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    parts = [f"{days} d"] if days else []
    parts += [f"{hours} h"] if hours else []
    parts += [f"{minutes} min"] if minutes and not days else []
    return " ".join(parts) or f"{int(seconds)} s"


def as_utc(naive_utc: dt.datetime | None) -> dt.datetime | None:
    """nbgrader's naive-UTC datetime as an aware one."""
    if naive_utc is None:
        return None
    return naive_utc.replace(tzinfo=dt.UTC) if naive_utc.tzinfo is None else naive_utc


def own_due(due: dt.datetime | None, extension: dt.timedelta | None) -> dt.datetime | None:
    """A student's own due date: the assignment's plus their extension (nbgrader's `SubmittedAssignment.duedate`)."""
    return due + extension if due is not None and extension else due


def sync_due_dates(gb, cfg: CourseConfig) -> list[str]:
    """Write the config's due dates into nbgrader's Assignment.duedate (naive UTC, as nbgrader keeps them);
    returns the assignments changed."""
    changed = []
    for assignment in gb.assignments:
        due = cfg.due.get(assignment.name)
        value = due.astimezone(dt.UTC).replace(tzinfo=None) if due else None
        if assignment.duedate != value:
            assignment.duedate = value
            changed.append(assignment.name)
    if changed:
        gb.db.commit()
    return changed
