"""The course's record around its grades: per-student deadlines (extensions) and the releases.

    from autograder import record
    record.due_for(course_dir, "ada", "ch3")   # StudentDue: the course's due date, her extension, her own

What the instructor decided is kept in the course folder (`COURSE/record/`) and what nbgrader
keeps is synced from it, as the due dates are (`late.sync_due_dates`): an extension lives in
`record/extensions.json` as the instructor gave it (`--until` a moment, or `--by` a duration)
and in nbgrader's `SubmittedAssignment.extension` once the student has a submission, which
is what every output and nbgrader's own `total_seconds_late` read. An extension set through
nbgrader's API alone is honoured too (nothing in the record overrides it).

This is the small API the submission service reads: a student's own due date (`due_for`).
"""
from __future__ import annotations

from autograder.record.extensions import Extension, ExtensionError, StudentDue, due_for  # noqa: F401
