"""`autograder`: the instructor's command line, on nbgrader's course directory and gradebook.

    autograder release [--chapters ch1 ch2] [-o release.zip]
    autograder example-class [--zip FILE | --to DIR]
    autograder collect SRC [SRC ...]          # a folder (nbgrader submitted/ layout) or an LMS zip
    autograder deadlines [--due [chN=]DATE] [--late none|per-day --per-day 10% --cap 50% --grace MIN]
    autograder deadlines --extend STUDENT --chapter chN --until DATE | --by 2d
    autograder attempts [STUDENT [--assignment chN] [--choose N]] [--rule last|last-on-time]
    autograder roster import FILE             # Canvas's gradebook CSV or nbgrader's student CSV: who each student is
    autograder roster alias KEEP OTHER        # one person under two ids: OTHER's LMS ids and attempts become KEEP's
    autograder grade [--student ID] [--assignment chN] [--workers N] [--force]
    autograder feedback [--student ID] [--assignment chN] [--lms canvas|moodle -o ZIP]
    autograder export --format csv|canvas -o FILE [--cells]
    autograder manual export [--assignment chN] [-o DIR] | autograder manual import FILE
    autograder similarity [--assignment chN]
    autograder report
    autograder gradebook
    autograder serve [--host H] [--port P] [--workers N] [--scheduler tcp://HOST:PORT]   # the submission service
    autograder tokens issue [--student ID ...] [--instructor] [-o tokens.csv] | revoke ID | list
    autograder limits [--limit NAME=VALUE]   # what a notebook, an upload and a step may use; where each is set

Every subcommand takes --course DIR (default ./course). A user error prints one line on
stderr and exits non-zero. Each command is one call of `autograder.course.Course` and a
table of what it returned: the work is there, the words are here.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from autograder import config, late, startup
from autograder.course import Course, CourseError, select
from autograder.errors import AutograderError
from autograder.gradebook import GradebookError
from autograder.tables import printable, table

EXIT_USAGE = 2
EXIT_FAILED = 1


def _print(*args: object) -> None:
    print(*args, flush=True)


# ----------------------------------------------------------------------------- release, deadlines

def cmd_release(args: argparse.Namespace) -> int:
    """Build the course directory from chapters/ and zip the student notebooks for the LMS."""
    done = Course(args.course).release(args.chapters, Path(args.output) if args.output else None)
    _print(table(["chapter", "student notebook"], [[c.assignment, str(p)] for c, p in zip(done.chapters, done.notebooks)],
                 title=f"released {len(done.notebooks)} chapter(s) into {args.course}"))
    _print(f"upload to the LMS: {done.zip}")
    return 0


def cmd_deadlines(args: argparse.Namespace) -> int:
    """Show, or set, the due dates and the late policy (the policy block of nbgrader_config.py)."""
    course = Course(args.course)
    if args.extend is None and (args.chapter or args.until or args.by):
        raise CourseError("--chapter, --until and --by go with --extend STUDENT")
    if args.extend is not None:
        own = course.extend(args.extend, args.chapter, args.until, args.by)
        _print(f"{own.student}'s {own.assignment} is due {_when(own.due, args.course)}"
               + (f" (the course's due date {_when(own.course_due, args.course)} plus {_span(own.extension)}); "
                  "kept in nbgrader's gradebook as the submission's extension" if own.extension else
                  ", the course's due date (no extension)"))
    d = course.deadlines(args.due or (), args.timezone, args.late, args.per_day, args.cap, args.grace)
    rows = [[a, d.due[a].strftime("%Y-%m-%d %H:%M %Z") if a in d.due else "-"] for a in d.assignments]
    _print(table(["chapter", "due"], rows, title=f"due dates ({d.timezone}){'; updated' if d.changed else ''}"))
    _print(f"late policy: {d.late.describe()}")
    if d.extensions:
        _print()
        _print(table(["student", "chapter", "extension", "due for them"],
                     [[e.student, e.assignment, _span(e.extension), _when(e.due, args.course)] for e in d.extensions],
                     title="extensions (autograder deadlines --extend STUDENT --chapter chN --until DATE | --by 2d)"))
    for m in d.moved:
        _print(f"note: {m.assignment} stays due at the same moment: {m.before} is {m.after} in {d.timezone}; to keep "
               f"its clock time, set it again (--due '{m.assignment}={m.before.rsplit(' ', 1)[0]}')")
    return 0


def _when(when, course_dir: Path) -> str:
    return _local_time(when, course_dir) if when is not None else "no due date"


def _span(delta) -> str:
    """A duration as '2 d', '1 d 12 h', '90 min'."""
    if not delta:
        return "none"
    days, rest = divmod(int(delta.total_seconds()), 86_400)
    hours, minutes = rest // 3600, rest % 3600 // 60
    return " ".join([f"{days} d"] * bool(days) + [f"{hours} h"] * bool(hours) + [f"{minutes} min"] * bool(minutes)) \
        or f"{int(delta.total_seconds())} s"


# ----------------------------------------------------------------------------- example class

def cmd_example_class(args: argparse.Namespace) -> int:
    """Write the bundled example class (a Canvas-style zip, or its files in a folder)."""
    from autograder import example_class

    chapters = select(args.chapters)
    release_dir = args.course / "release"
    if args.add_prose_question:
        Course(args.course).require()
        if example_class.add_prose_question(args.course, chapters[0].assignment):
            _print(f"added the manually graded question {example_class.PROSE_ID} to {chapters[0].assignment} "
                   f"(source and release of {args.course})")
    have_release = all((release_dir / c.assignment / f"{c.notebook}.ipynb").exists() for c in chapters)
    subs = example_class.build(chapters, release_dir if have_release else None)
    if args.to:
        where = example_class.write_dir(subs, args.to)
    else:
        where = example_class.write_zip(subs, args.zip or Path("example_class.zip"))
    _print(table(["student", "LMS id", "what they did"], example_class.roster(),
                 title=f"example class: {len(subs)} files for {', '.join(c.assignment for c in chapters)} -> {where}"))
    return 0


# ----------------------------------------------------------------------------- collect, grade

def cmd_collect(args: argparse.Namespace) -> int:
    """Place an LMS zip's or a folder's notebooks in course/submitted; list what could not be placed."""
    result = Course(args.course, overrides=args.limit).collect(args.sources, pattern=args.pattern,
                                                               file_times=args.file_times)
    rows = [[p.student, p.assignment, p.notebook, _local_time(p.entry.timestamp, args.course),
             "LATE (LMS)" if p.late else "", "by content" if p.how == "content" else "", status, p.entry.path.name]
            for p, status in result.placed]
    _print(table(["student", "chapter", "notebook", "uploaded", "late", "placed", "status", "from"], rows,
                 title=f"collected {len(rows)} submission(s) into {args.course / 'submitted'}"))
    if result.notes:
        _print()
        _print(table(["file", "note"], result.notes, title="notes: placed by content, cut to the caps, times"))
    if result.problems:
        _print()
        _print(table(["file", "problem"], result.problems,
                     title=f"{len(result.problems)} problem(s): files not placed, duplicates, unreadable notebooks"))
    counts = {s: sum(1 for _, st in result.placed if st == s) for s in ("new", "replaced", "unchanged")}
    _print(f"\n{counts['new']} new, {counts['replaced']} replaced, {counts['unchanged']} unchanged, "
           f"{len(result.problems)} problem(s); {len(result.students)} student(s)")
    if not result.placed:
        print(f"autograder collect: error: collect placed nothing from {', '.join(str(s) for s in args.sources)}"
              f"{' (see the problems above)' if result.problems else ' (no files)'}", file=sys.stderr)
        return EXIT_FAILED
    return 0


def _local_time(when, course_dir: Path) -> str:
    """A time in the course's time zone, to the minute."""
    try:
        tz = config.load(course_dir).timezone
    except config.ConfigError:
        tz = None
    return when.astimezone(tz).strftime("%Y-%m-%d %H:%M %Z") if when is not None else "-"


def cmd_attempts(args: argparse.Namespace) -> int:
    """A student's attempts (every upload collect kept, with its time) and the one graded; pin one; the rule."""
    from autograder import late

    course = Course(args.course)
    rule = course.attempt_rule(args.rule.replace("_", "-") if args.rule else None)
    if args.rule:
        _print(f"the graded attempt is now {rule} (a pinned attempt stays graded); collect applies it")
    if not args.student:
        if not args.rule:
            _print(f"the graded attempt: {rule}; autograder attempts STUDENT lists one student's")
        return 0
    if args.choose is not None:
        number = None if args.choose.strip().lower() == "none" else int(args.choose) if args.choose.isdigit() else -1
        if number == -1:
            raise CourseError(f"--choose takes an attempt's number (see the listing) or none, not {args.choose!r}")
        choice = course.choose_attempt(args.student, args.assignment, number)
        _print(f"{args.student}: graded attempt {'pinned' if choice.pinned else 'back to the rule: ' + choice.why}, "
               f"uploaded {_local_time(choice.attempt.uploaded_at, args.course)}; placed in submitted/ "
               "(autograder grade grades it)")
    cfg = course.config()
    from autograder.record import extensions

    for assignment, notebook, kept, choice in course.attempts(args.student, args.assignment):
        due = extensions.due_for(args.course, args.student, assignment).due
        rows = [[str(k), _local_time(a.uploaded_at, args.course), late.lateness(a.uploaded_at, due, a.lms_late,
                                                                               cfg.late).describe(),
                 a.origin, ("graded: " + choice.why) if a == choice.attempt else ""]
                for k, a in enumerate(kept, start=1)]
        _print(table(["#", "uploaded", "lateness", "from", ""], rows,
                     title=f"{args.student}'s {notebook}: {len(kept)} attempt(s) (rule: {rule}; due "
                           f"{_when(due, args.course)})"))
    return 0


def cmd_roster(args: argparse.Namespace) -> int:
    """Who the students are: import an LMS gradebook CSV or nbgrader's student CSV; merge two ids of one person."""
    if args.action == "alias":
        moved = Course(args.course).alias(args.keep, args.other)
        _print(f"{args.other} is now {args.keep}" + "".join(f"\n  {m}" for m in moved))
        _print(f"grade again to grade {args.keep}'s work: autograder grade --student {args.keep}")
        return 0
    done = Course(args.course).import_roster(Path(args.file))
    _print(f"read {done.people} {'Canvas' if done.kind == 'canvas' else 'nbgrader'} student row(s) from {args.file}; "
           f"named {len(done.named)} student(s) in nbgrader's gradebook"
           + (f"; {len(done.waiting)} not collected yet (named when they are)" if done.waiting else ""))
    return 0


def cmd_grade(args: argparse.Namespace) -> int:
    """Grade every submitted, not yet graded notebook with the trusted engine (resumable); apply the late
    policy. With --force, grade again what the other options select (one student, one notebook)."""
    with startup.collector_off():  # until the sandboxes are starting (autograder.startup)
        done = Course(args.course, overrides=args.limit).grade(
            args.assignment, args.student, args.workers, args.force, progress=not args.quiet,
            **({"scheduler": args.scheduler} if args.scheduler else {}))
    _print(describe_summary(done.summary))
    if args.force:
        _print_regrades(done.before, done.after, args)
    if done.feedback:
        _print(f"wrote again {len(done.feedback)} feedback page(s) this grading changed")
    if not args.quiet:  # -q: the summary line only (`autograder gradebook` prints the table)
        _print()
        cmd_gradebook(args)
    if done.failed:
        print(f"autograder grade: error: {done.failed} notebook(s) could not be graded; run `autograder grade` "
              "again to retry them", file=sys.stderr)
        return EXIT_FAILED
    return 0


def _print_regrades(before: dict, after: list, args: argparse.Namespace) -> None:
    """What a forced regrade changed, notebook by notebook (the earlier logs stay in the grading log's history)."""
    rows = []
    for lg in after:
        if (args.student and lg.student != args.student) or (args.assignment and lg.assignment != args.assignment):
            continue
        old = before.get((lg.student, lg.assignment, lg.notebook))
        was = f"{old.score:g}/{old.max_score:g} ({old.graded_at})" if old else "-"
        rows.append([lg.student, lg.notebook, was, f"{lg.score:g}/{lg.max_score:g}",
                     "same" if old and old.score == lg.score else "changed" if old else "new"])
    if rows:
        _print()
        _print(table(["student", "notebook", "was", "now", ""], rows,
                     title="regraded (earlier gradings kept under \"history\" in grading_log.json)"))


def describe_summary(summary: object) -> str:
    """One line about a grading run, from the engine's GradeSummary."""
    get = lambda name: getattr(summary, name, None)  # noqa: E731
    text = (f"graded {get('graded')} notebook(s), skipped {get('skipped')} already graded, "
            f"failed {get('failed')}, in {get('seconds') or 0:.1f} s")
    extra = []
    if get("graded"):
        extra.append(f"{get('throughput') or 0:.2f} notebooks/s")
    if get("workers"):
        extra.append(f"{get('workers')} workers")
    if get("worker_start_s") is not None:
        extra.append(f"worker start {get('worker_start_s'):.1f} s")
    if get("per_notebook_overhead_s") is not None:
        extra.append(f"per-notebook overhead {get('per_notebook_overhead_s'):.3f} s")
    return text + (f" ({', '.join(extra)})" if extra else "")


# ----------------------------------------------------------------------------- gradebook, export, feedback, report

def cmd_limits(args: argparse.Namespace) -> int:
    """Every limit of the course: its value, its default and where it was set (autograder.limits)."""
    done = Course(args.course, overrides=args.limit).all_limits()
    rows = [[f"{section}.{name}", _limit(value), _limit(default), by] for section, name, value, default, by in done.rows()]
    _print(table(["limit", "value", "default", "set by"], rows,
                 title=f"limits of {args.course} (set in {config.CONFIG_NAME} as c.SECTION.NAME = VALUE, or "
                       "--limit NAME=VALUE on grade and collect)"))
    return 0


def _limit(value: object) -> str:
    if isinstance(value, tuple):
        return ", ".join(value) or "-"
    return "-" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def _credit(course_dir: Path) -> dict[tuple[str, str], tuple[int, float]]:
    """(student, chapter) -> (attempt number, credit) of each graded upload to the service, where service.toml's
    [credit] decays (autograder.service.views.credit_in_gradebook; empty otherwise)."""
    from autograder.service import views

    return views.credit_in_gradebook(course_dir)


def _credit_note(credit: dict[tuple[str, str], tuple[int, float]]) -> str:
    below = sum(share < 1 for _, share in credit.values())
    return (f"scores are credited (service.toml's [credit]): {below} student chapter(s) below full credit, their "
            "points times their attempt's credit" if below else "")


def cmd_gradebook(args: argparse.Namespace) -> int:
    """The gradebook: student x assignment totals (final: after late penalties, times the credit), late work, credit
    below full, files not placed."""
    from autograder.collect import Manifest

    course = Course(args.course)
    try:
        cls = course.grades()
    except GradebookError:  # nothing graded yet (grades.ResultsError): what collect could not place is what there is to see
        unplaced = course.unplaced() if course.root.is_dir() else []
        if not unplaced:
            raise
        _print(table(["student", "file", "why it was not placed"], [[u.student or "?", u.origin, u.reason]
                                                                     for u in unplaced],
                     title=f"{len(unplaced)} file(s) collected but not placed (kept in {Manifest.path(args.course)})"))
        _print(f"\nnothing graded yet in {args.course}: place the files above (collect them again, or with "
               "--pattern), then `autograder grade`")
        return 0
    credit = _credit(args.course)
    cls.credit = {k: share for k, (_, share) in credit.items()}
    assignments, max_by, totals = cls.assignments(), cls.assignment_max(), cls.assignment_totals()
    unplaced, notes = course.unplaced(), course.notes(cls)
    rows = []
    for student in sorted(cls.students):
        mine = [totals[student, a] for a in assignments]
        rows.append([student, *[_gradebook_cell(t) for t in mine], f"{sum(t.score for t in mine):g}",
                     notes.get(student, "")])
    headers = ["student"] + [f"{a} /{max_by[a]:g}" for a in assignments] + [f"total /{sum(max_by.values()):g}", "note"]
    _print(table(headers, rows, title=f"gradebook of {args.course} ({len(rows)} students; - = no submission, "
                                      "* = some cells not scored yet (manual grading), L = late, C = credited below "
                                      "full)"))
    late_rows = [[t.student, t.assignment, t.lateness.describe(), f"{t.raw_score:g}", late.points_lost(t.penalty),
                  f"{t.score:g}"]
                 for (_, a), t in sorted(totals.items()) if t.lateness and t.lateness.late]
    if late_rows:
        _print()
        _print(table(["student", "chapter", "lateness", "raw", "penalty", "final"], late_rows,
                     title=f"late work (policy: {cls.late_policy.describe()})"))
    credit_rows = [[s, a, str(credit[s, a][0]), f"{t.raw_score - t.penalty:g}", f"{t.credit:.4g}", f"{t.score:g}"]
                   for (s, a), t in sorted(totals.items()) if (s, a) in credit and t.credit < 1 and t.status != "missing"]
    if credit_rows:
        _print()
        _print(table(["student", "chapter", "attempt", "points", "credit", "final"], credit_rows,
                     title=_credit_note(credit)))
    if unplaced:
        _print()
        _print(table(["student", "file", "why it was not placed"],
                     [[u.student or "?", u.origin, u.reason] for u in unplaced],
                     title=f"{len(unplaced)} file(s) collected but not placed (kept in {Manifest.path(args.course)})"))
    return 0


def _gradebook_cell(t) -> str:
    if t.status == "missing":
        return "-"
    return (f"{t.score:g}" + ("*" if t.status == "ungraded" else "") + ("L" if t.lateness and t.lateness.late else "")
            + ("C" if t.credit < 1 else ""))


def cmd_export(args: argparse.Namespace) -> int:
    """Write grades to a CSV file (totals, per-cell, or Canvas's gradebook import)."""
    credit = _credit(args.course)
    done = Course(args.course).export(args.format, Path(args.output), args.cells, _parse_canvas_ids(args.canvas_id),
                                      args.canvas_gradebook, args.missing, {k: share for k, (_, share) in credit.items()})
    say = (lambda text: print(text, file=sys.stderr)) if args.output == "-" else _print  # stdout holds the CSV
    if _credit_note(credit) and not args.cells:
        say(_credit_note(credit) + " (the credit column)")
    where = "standard output" if args.output == "-" else done.path
    if args.format == "canvas":
        say(f"wrote {done.rows} student rows for Canvas to {where}")
        missing = done.without_lms_id
        if missing:
            say(f"note: {len(missing)} student(s) have no LMS user id (Canvas will match them by name): "
                + ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else ""))
        for warning in done.warnings:
            print(f"autograder export: warning: {warning}", file=sys.stderr)
    elif args.cells:
        say(f"wrote {done.rows} graded-cell rows to {where}")
    else:
        say(f"wrote {done.rows} student-notebook rows to {where}")
    return 0


def _parse_canvas_ids(pairs: Sequence[str] | None) -> dict[str, str]:
    out = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not value.isdigit():
            raise CourseError(f"--canvas-id expects CHAPTER=NUMBER (e.g. ch1=4321), got {pair!r}")
        out[name] = value
    return out


def cmd_feedback(args: argparse.Namespace) -> int:
    """One HTML feedback page per student and notebook, in course/feedback/."""
    if args.output and not args.lms:
        raise CourseError("-o goes with --lms canvas|moodle (the zip to upload)")
    course = Course(args.course)
    if args.lms and not args.assignment:
        raise CourseError(f"--lms {args.lms} needs --assignment chN: the LMS takes feedback one assignment at a time")
    written = course.feedback(args.student, args.assignment)
    _print(f"wrote {len(written)} feedback page(s) under {args.course / 'feedback'}")
    if args.lms:
        done = course.hand_back(args.lms, args.assignment, Path(args.output) if args.output else None)
        _print(f"{len(done.entries)} page(s) in {done.path}: upload it to {args.lms.capitalize()} ("
               + ("the assignment's Re-upload submissions" if args.lms == "canvas" else
                  "Upload multiple feedback files in a zip") + ")")
        if done.left_out:
            _print(table(["student", "notebook", "why"], [list(r) for r in done.left_out],
                         title=f"{len(done.left_out)} page(s) left out: {args.lms.capitalize()} could not match them "
                               "(hand them back another way)"))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Summary per chapter, where the class lost points (per graded cell and per hidden check, with the most
    common failure messages), the behaviour checks' figures, and plots, an HTML page and CSV files in
    course/report/."""
    from autograder import report

    done = Course(args.course).report()
    _print(table(report.SUMMARY_HEADERS, done.summary, title="class summary (final scores of the submissions)"))
    _print()
    _print(table(report.CELL_HEADERS, report.cell_rows(done.cells),
                 title="where points were lost, per graded cell (submissions)"))
    messages = [[c.grade_id, n, m] for c in done.cells for m, n in c.messages.most_common(3)]
    if messages:
        _print()
        _print(table(["graded cell", "submissions", "failure message (numbers as #)"], messages,
                     title="most common failure messages (up to 3 per cell)"))
    if done.checks:
        _print()
        _print(table(report.CHECK_HEADERS, report.check_rows(done.checks)[:20],
                     title="hidden checks failed most often (submissions)"))
    if done.figures:
        _print()
        _print(table(report.FIGURE_HEADERS, done.figures, title="behaviour checks: the statistic, its bound and the "
                                                                "margin (bound - value), per submission"))
    _print(f"\nplots: {', '.join(str(p) for p in done.plots)}")
    _print(f"tables: {', '.join(str(p) for p in done.files)}")
    return 0


def cmd_manual(args: argparse.Namespace) -> int:
    """Manually graded answers: export them (a page per question, a CSV to fill), or import the scores."""
    course = Course(args.course)
    if args.action == "export":
        done = course.manual_export(Path(args.output) if args.output else None, args.assignment)
        if not done.questions:
            _print("no manually graded cells in this course: nothing to export")
            return 0
        rows = [[q.assignment, q.grade_id, f"{q.points:g}", str(p)] for q, p in zip(done.questions, done.pages)]
        _print(table(["chapter", "question", "points", "answers (HTML)"], rows,
                     title=f"{done.answers} answer(s) to {len(done.questions)} question(s)"))
        _print(f"fill in the score and comment columns of {done.csv}, then: autograder manual import {done.csv}")
        return 0
    rows = course.manual_import(Path(args.file))
    scored = sum(1 for r in rows if r.score is not None)
    _print(f"imported {scored} score(s) and {sum(1 for r in rows if r.comment)} comment(s) from {args.file} "
           "into the gradebook (nbgrader's formgrader shows the same)")
    return 0


def cmd_similarity(args: argparse.Namespace) -> int:
    """Rank every pair of students per assignment by the uncommon code they share; an HTML report."""
    from autograder import similarity

    done = Course(args.course).similarity(args.assignment, args.common)
    rows = [[a, k, p.a, p.b, p.shared, f"{p.similarity[0]:.0%}", f"{p.similarity[1]:.0%}", p.kind]
            for a, ps in done.pairs.items() for k, p in enumerate(ps[: args.top], start=1)]
    _print(table(["chapter", "rank", "student", "student", "shared", "of first", "of second", ""], rows,
                 title="most similar pairs (own code only: the release's code and code most students share left out)"))
    _print("\n" + "; ".join(f"{a}: code in more than {similarity.common_limit(args.common, n)} of {n} students' work "
                            "is common" for a, n in done.counts.items() if n > 1)
           + " (identical and nearly identical pairs are listed whatever it says)")
    _print(f"\nreport with the code side by side: {done.path}")
    return 0


# ----------------------------------------------------------------------------- the submission service

def cmd_serve(args: argparse.Namespace) -> int:
    """Run the submission service on this course until interrupted (autograder/service)."""
    from autograder.service import serve

    Course(args.course).require()
    if args.finalize:
        from autograder.service.grader import finalize

        counted = finalize(args.course, None if args.finalize == "all" else args.finalize, args.workers)
        _print(table(["student", "chapter", "upload that counts"], [list(c) for c in counted],
                     title=f"final: {len(counted)} attempt(s) placed in submitted/ and graded"))
        return 0
    serve.run(args.course, args.host, args.port, args.workers, args.scheduler, args.accept_only,
              args.forwarded_allow_ips)
    return 0


def cmd_tokens(args: argparse.Namespace) -> int:
    """Issue, revoke or list the service's sign-in tokens (stored hashed; shown once, in a CSV for a mail merge)."""
    from autograder.service import tokens

    Course(args.course).require()
    if args.action == "issue":
        issued = tokens.issue(args.course, args.student, args.instructor, args.again)
        if not issued:
            _print("every student already has a live token (--again replaces them)")
            return 0
        out = Path(args.output or args.course / "service" / "tokens.csv")
        tokens.write_csv(issued, out, args.server or "")
        _print(f"issued {len(issued)} token(s): {', '.join(i.who for i in issued[:10])}"
               f"{' ...' if len(issued) > 10 else ''}")
        _print(f"they are in {out} (readable by you only; the service keeps only their hashes): mail-merge it, "
               "then delete it")
    elif args.action == "revoke":
        n = tokens.revoke(args.course, args.who)
        _print(f"revoked {n} token(s) of {args.who}; their sessions ended")
    else:
        _print(table(["who", "role", "issued (UTC)", "revoked (UTC)"], tokens.listing(args.course),
                     title="tokens (hashes only are stored)"))
    return 0


# ----------------------------------------------------------------------------- plumbing

def parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    # allow_abbrev=False everywhere: `--f` is not `--force`, and a new option never changes what an old prefix meant
    top = argparse.ArgumentParser(prog="autograder", description="Release, collect, grade and report a course's "
                                                                 "notebooks (nbgrader course directory).",
                                  allow_abbrev=False)
    top.add_argument("--version", action="version", version=f"autograder {version()}")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    common.add_argument("--course", type=Path, default=Path("course"), help="course directory (default ./course)")
    top.subcommands = {}  # (command, action) -> its parser: a mistyped option is told with that parser's usage

    def add(name: str, fn, help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help_, description=help_, allow_abbrev=False)
        p.set_defaults(fn=fn)
        top.subcommands[name, None] = p
        return p

    limit_help = "a limit for this run, e.g. cell_seconds=30 (repeatable; `autograder limits` lists them)"
    p = add("release", cmd_release, "build the course from chapters/ and zip the student notebooks")
    p.add_argument("--chapters", nargs="+", metavar="CHAPTER", help="e.g. ch1 ch2 (default: all)")
    p.add_argument("-o", "--output", help="zip to upload to the LMS (default COURSE/release.zip)")

    p = add("example-class", cmd_example_class, "write the bundled example class (an LMS-style zip)")
    p.add_argument("--chapters", nargs="+", metavar="CHAPTER", help="default: all")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--zip", type=Path, help="write a Canvas-style zip (default ./example_class.zip)")
    where.add_argument("--to", type=Path, help="write the files into this folder instead")
    p.add_argument("--add-prose-question", action="store_true",
                   help="first add a manually graded prose question to the course's first chapter (source and "
                        "release), for the class to answer, until the chapters have such cells")

    p = add("collect", cmd_collect, "place submissions (a folder in nbgrader's layout, or an LMS zip) in the course")
    p.add_argument("sources", nargs="+", type=Path, metavar="SRC")
    p.add_argument("--pattern", metavar="REGEX",
                   help="a layout of your own, as nbgrader's zip_collect takes it: a regular expression with the named "
                        "groups student_id and file_id (optionally timestamp), matched from the start of each file's "
                        "path in SRC (default: c.FileNameCollectorPlugin.named_regexp of nbgrader_config.py)")
    p.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE", help=limit_help)
    p.add_argument("--file-times", action="store_true",
                   help="time a folder's notebooks that have no timestamp.txt by their modification time (without "
                        "it they are not timed, so never late)")

    p = add("attempts", cmd_attempts, "a student's attempts (every upload, with its time) and the one graded; pin one")
    p.add_argument("student", nargs="?", metavar="STUDENT")
    p.add_argument("--assignment", help="only this assignment (e.g. ch1)")
    p.add_argument("--choose", metavar="N", help="grade attempt N of the listing, whatever later collects bring ("
                                                 "'none' goes back to the course's rule)")
    p.add_argument("--rule", choices=["last", "last-on-time"],
                   help="the course's rule for the graded attempt: the last upload (default) or the last on time")

    help_ = "who the students are: import an LMS gradebook CSV (Canvas's) or nbgrader's student CSV"
    p = sub.add_parser("roster", help=help_, description=help_)
    actions = p.add_subparsers(dest="action", required=True, metavar="import | alias")
    q = actions.add_parser("import", parents=[common], help="names, SIS ids and LMS user ids, from a CSV")
    q.set_defaults(fn=cmd_roster)
    q.add_argument("file", help="Canvas's gradebook CSV (Student, ID, SIS User ID, ...) or nbgrader's (id, first_name, "
                                "last_name, email)")
    q = actions.add_parser("alias", parents=[common], help="one person under two student ids: merge OTHER into KEEP")
    q.set_defaults(fn=cmd_roster)
    q.add_argument("keep", metavar="KEEP", help="the student id that stays")
    q.add_argument("other", metavar="OTHER", help="the student id merged into it (its LMS ids, attempts and files)")

    p = add("grade", cmd_grade, "grade every collected, not yet graded notebook (resumable)")
    p.add_argument("--student", help="only this student")
    p.add_argument("--assignment", help="only this assignment (e.g. ch1)")
    p.add_argument("--workers", type=int, default=2, help="parallel workers (default 2)")
    p.add_argument("--force", action="store_true",
                   help="grade again what is selected, even if graded (e.g. --student ada --assignment ch1); "
                        "earlier gradings stay in the grading log's history")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar, and no gradebook after the run")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run the notebooks on this Dask scheduler's workers")
    p.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE", help=limit_help)

    p = add("deadlines", cmd_deadlines, "show or set due dates and the late policy")
    p.add_argument("--due", action="append", metavar="[CHAPTER=]DATE",
                   help="due date, e.g. ch1='2025-01-31 23:00' (all chapters without CHAPTER=; 'none' removes it)")
    p.add_argument("--timezone", help="zone of due dates and LMS zip times without an offset (e.g. Europe/Zurich)")
    p.add_argument("--late", choices=["none", "per-day"], help="late policy: none (marked only) or per-day")
    p.add_argument("--per-day", help="points lost per started day late: a percentage (10%%) or a fraction (0.1)")
    p.add_argument("--cap", help="the most lateness costs: a percentage (50%%) or a fraction (0.5)")
    p.add_argument("--grace", type=float, metavar="MINUTES", help="this late still counts as on time")
    p.add_argument("--extend", metavar="STUDENT", help="give one student more time on one chapter (with --chapter and "
                                                       "--until or --by); kept as nbgrader's extension")
    p.add_argument("--chapter", metavar="CHAPTER", help="the chapter an extension is for (e.g. ch3)")
    until = p.add_mutually_exclusive_group()
    until.add_argument("--until", metavar="DATE", help="the student's own due date, e.g. '2025-02-10 23:00' (the "
                                                       "course's zone unless it gives an offset; 'none' takes it back)")
    until.add_argument("--by", metavar="DURATION", help="the extension's length, e.g. 2d, 36h, '1d 12h' (0 takes it back)")

    p = add("feedback", cmd_feedback, "write one HTML feedback page per student and notebook")
    p.add_argument("--student", help="only this student")
    p.add_argument("--assignment", help="only this assignment")
    p.add_argument("--lms", choices=["canvas", "moodle"],
                   help="also zip the assignment's pages in the LMS's bulk feedback format, keyed by its own ids")
    p.add_argument("-o", "--output", help="the zip to write with --lms (default COURSE/<chN>_feedback_<lms>.zip)")

    p = add("export", cmd_export, "write grades to CSV (totals, per cell, or a Canvas gradebook import)")
    p.add_argument("--format", choices=["csv", "canvas"], default="csv")
    p.add_argument("-o", "--output", required=True, help="CSV file to write ('-': standard output)")
    p.add_argument("--cells", action="store_true", help="one row per student, notebook and graded cell (csv)")
    p.add_argument("--canvas-gradebook", type=Path, metavar="CSV",
                   help="the gradebook CSV Canvas exports (Grades > Export): the assignment ids are taken from its "
                        "column titles, 'Title (id)' (canvas)")
    p.add_argument("--missing", choices=["blank", "zero"], default="blank",
                   help="a missing submission in the Canvas import: blank (Canvas keeps its grade; the default) or zero "
                        "(0 points, and a row of zeros for each student of --canvas-gradebook who submitted nothing)")
    p.add_argument("--canvas-id", action="append", metavar="CHAPTER=ID",
                   help="Canvas assignment id of a chapter, e.g. ch1=4321 (repeatable)")

    help_ = "manually graded answers: export pages and a CSV to fill, import the scores"
    p = sub.add_parser("manual", help=help_, description=help_, allow_abbrev=False)
    top.subcommands["manual", None] = p
    # export and import are subcommands of their own, so that `import --course DIR FILE` parses (one parser with
    # two positionals would give FILE to neither once an option stands between them)
    actions = p.add_subparsers(dest="action", required=True, metavar="export | import")
    q = actions.add_parser("export", parents=[common], help="a page per question and a CSV to fill", allow_abbrev=False)
    q.set_defaults(fn=cmd_manual)
    top.subcommands["manual", "export"] = q
    q.add_argument("--assignment", help="only this assignment")
    q.add_argument("-o", "--output", help="folder for the pages and the CSV (default COURSE/manual)")
    q = actions.add_parser("import", parents=[common], help="the filled CSV's scores and comments, into the gradebook",
                           allow_abbrev=False)
    q.set_defaults(fn=cmd_manual)
    top.subcommands["manual", "import"] = q
    q.add_argument("file", help="the filled CSV")

    p = add("similarity", cmd_similarity, "rank pairs of students by the code they share (HTML report)")
    p.add_argument("--assignment", help="only this assignment")
    p.add_argument("--top", type=int, default=5, help="pairs printed per assignment (default 5; the report has 20)")
    p.add_argument("--common", type=float, default=0.25,
                   help="code found in more than this fraction of the students' submissions (and in more than 2 "
                        "students' at least: 0.25 of 40 students is more than 10 students) is common and not compared; "
                        "identical and nearly identical submissions are reported whatever it says (default 0.25)")

    p = add("serve", cmd_serve, "run the submission service (students upload, results at once)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: behind a TLS reverse proxy)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free port)")
    p.add_argument("--workers", type=int, default=2, help="grading workers (default 2)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="grade on this Dask scheduler's workers")
    p.add_argument("--accept-only", action="store_true", help="accept and queue uploads, grade nothing yet")
    p.add_argument("--finalize", metavar="CHAPTER|all", help="do not serve: put each student's attempt that counts "
                   "(service.toml's final: the course's rule or pin, or the best) in submitted/ and grade it, then exit")
    p.add_argument("--forwarded-allow-ips", default="127.0.0.1",
                   help="the reverse proxy's address, whose X-Forwarded-* headers are trusted (default 127.0.0.1)")

    p = sub.add_parser("tokens", help="sign-in tokens of the submission service",
                       description="sign-in tokens of the submission service", allow_abbrev=False)
    top.subcommands["tokens", None] = p
    actions = p.add_subparsers(dest="action", required=True, metavar="issue | revoke | list")
    q = actions.add_parser("issue", parents=[common], help="new tokens, in a CSV for a mail merge", allow_abbrev=False)
    q.set_defaults(fn=cmd_tokens)
    top.subcommands["tokens", "issue"] = q
    q.add_argument("--student", nargs="+", metavar="ID", help="these students (default: every one without a token)")
    q.add_argument("--instructor", action="store_true", help="one instructor token (the status page)")
    q.add_argument("--again", action="store_true", help="replace live tokens (the old ones stop working)")
    q.add_argument("-o", "--output", help="the CSV (default COURSE/service/tokens.csv)")
    q.add_argument("--server", help="the service's URL, written in the CSV's server column")
    q = actions.add_parser("revoke", parents=[common], help="revoke a student's tokens ('instructor': those)",
                           allow_abbrev=False)
    q.set_defaults(fn=cmd_tokens)
    top.subcommands["tokens", "revoke"] = q
    q.add_argument("who", help="student id, or 'instructor'")
    q = actions.add_parser("list", parents=[common], help="who has which token, issued and revoked when",
                           allow_abbrev=False)
    q.set_defaults(fn=cmd_tokens)
    top.subcommands["tokens", "list"] = q

    add("report", cmd_report, "class summary per chapter, and plots in COURSE/report/")
    add("gradebook", cmd_gradebook, "print the gradebook (student x assignment totals)")
    p = add("limits", cmd_limits, "show every limit: value, default, and where it was set")
    p.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE", help="as grade and collect take it")
    return top


def writes(args: argparse.Namespace) -> bool:
    """Whether the command writes the course (and so holds its lock, autograder.courselock)."""
    if args.command == "deadlines":
        return bool(args.due or args.timezone or args.late or args.per_day is not None or args.cap is not None
                    or args.grace is not None or args.extend)
    if args.command == "example-class":
        return bool(args.add_prose_question)
    if args.command == "tokens":
        return args.action != "list"
    # serve runs for days beside the instructor's commands: the service orders its own writes (autograder.service)
    return args.command not in ("gradebook", "export", "limits", "serve")


def version() -> str:
    """The installed distribution's version."""
    try:
        return metadata.version("attention-problem-book")
    except metadata.PackageNotFoundError:
        return "(not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; returns the exit status."""
    if not (sys.argv[1:] if argv is None else list(argv)):  # no command: the help, as `--help` prints it
        parser().print_help()
        return EXIT_USAGE
    top = parser()
    try:
        args, unknown = top.parse_known_args(argv)
        if unknown:  # told with the subcommand's own usage, not the top level's
            top.subcommands[args.command, getattr(args, "action", None)].error(
                f"unrecognized arguments: {' '.join(unknown)}")
    except SystemExit as exc:  # argparse printed usage and the error
        return int(exc.code or 0)
    args.course = Path(args.course)
    try:
        if not writes(args):
            return args.fn(args)
        if args.command == "release":
            args.course.mkdir(parents=True, exist_ok=True)
        if not args.course.is_dir():  # the command says there is no course
            return args.fn(args)
        with Course(args.course).lock(args.command):
            return args.fn(args)
    except AutograderError as exc:  # the one error family (autograder.errors)
        first, _, details = str(exc).partition("\n")
        remedy = f"; to fix: {exc.remedy}" if exc.remedy and exc.remedy not in str(exc) else ""
        print(f"autograder {args.command}: error: {printable(first + remedy)}", file=sys.stderr)
        if details.strip():
            print(printable(details.rstrip(), newlines=True), file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print(f"autograder {args.command}: interrupted (grading resumes where it stopped)", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `autograder gradebook | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def run() -> None:
    """The `autograder` command: `main()`, then the quick exit of `autograder.startup.exit_now`."""
    startup.exit_now(main())


if __name__ == "__main__":
    run()
