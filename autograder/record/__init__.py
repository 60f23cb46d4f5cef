"""The course's record around its grades: who the students are, every attempt with its time and the one graded,
each release, and each student's own due date.

    from autograder import record
    record.due_for(course_dir, "ada", "ch3")              # StudentDue: the course's due date, her extension, hers
    record.graded_attempt(course_dir, "ada", "ch3", nb)   # Choice: the attempt graded, and why (a pin, the rule)
    record.attempts_of(course_dir, "ada", "ch3", nb)      # every kept Attempt, oldest first

What the instructor decided is kept in the course folder (`COURSE/record/`), and what nbgrader
keeps is synced from it, as the due dates are (`late.sync_due_dates`):

* `extensions`: an extension as the instructor gave it (`--until` a moment, `--by` a duration), and in
  nbgrader's `SubmittedAssignment.extension` once the student has a submission, which every output
  and nbgrader's own `total_seconds_late` read (one set through nbgrader's API alone is honoured);
* `releases`: each release stamped and kept (`COURSE/releases/`), a submission recognised by its
  cells, and graded by its own release where that is kept;
* `attempts`: every upload collect placed, kept with its time, the pin and the course's rule;
* `roster`: who each student is (names, SIS ids), from an LMS's gradebook CSV or nbgrader's.

This is the small API the submission service reads (the functions above).
"""
from __future__ import annotations

from autograder.record.attempts import Attempt, Choice  # noqa: F401
from autograder.record.attempts import every as attempts_of  # noqa: F401
from autograder.record.attempts import graded as graded_attempt  # noqa: F401
from autograder.record.extensions import Extension, ExtensionError, StudentDue, due_for  # noqa: F401
