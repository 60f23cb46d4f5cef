"""The course: one Python API for everything an instructor does with a class's notebooks.

    from autograder.course import Course
    course = Course("course")
    course.release(["ch1"])                      # source, release, release.zip for the LMS
    course.collect([Path("submissions.zip")])    # placed in submitted/, students registered
    course.grade(workers=2)                      # the engine, then the late policy
    course.feedback(); course.export("csv", Path("grades.csv")); course.report()

The command line (`autograder.cli`), the book (`publish`), the tests and the benchmarks call
this class; each step checks what it needs first and raises `CourseError` (one sentence) for
a course that cannot do it.

The steps that parse what students uploaded (collect, feedback, similarity, the manual export
and import) run in a process of their own (`Course.bounded`), forked for the step, under a memory bound
(`autograder.engine.membound`: a cgroup's memory.max where there is one, else RLIMIT_DATA on
what the step adds) and a time limit (`StepLimits`): a notebook that blows up costs that step
one clear line, never the instructor's shell or the machine.

Underneath, the nbgrader course directory: a chapter (`coursenb.chapters`, text source
`chapters/chN_name.py`) is assignment `chN` holding one notebook `chN_name`. The course's
source notebook is the chapter without its solutions-only cells
(`coursenb.cells.without_solutions_only`); nbgrader's release then replaces solution
regions with stubs and removes hidden tests (`init_course`, `release`).
"""
from __future__ import annotations

import datetime as dt
import math
import re
import shutil
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from autograder import config, courselock, gradebook, startup
from autograder.engine import membound
from autograder.errors import AutograderError
from autograder.kit import kit_files, write_release_zip  # noqa: F401 - part of the API
from coursenb import cells, chapters

if TYPE_CHECKING:  # imported where a notebook is written (autograder.startup: the sandboxes start first)
    import nbformat

    from autograder.limits import StepLimits

ROOT = chapters.ROOT
COURSE_ID = "attention-book"
# nbgrader scores a test cell 0 on ANY stderr; library warnings must not cost points.
IGNORED_STDERR = r"(Warning|warn\()"
STOCK_REFUSAL_LINE = 'c.Autograde.sanitize_preprocessors.prepend(["autograder.stock.RefuseStockAutograde"])'


class CourseError(AutograderError):
    """A clear, user-facing problem with the course directory."""


def select(names: Iterable[str] | None = None) -> list[chapters.Chapter]:
    """The chapters named (all without names); CourseError for a name that is not a chapter (coursenb sits
    below autograder, so its ChapterError becomes this family's here, once)."""
    try:
        return chapters.select(names)
    except chapters.ChapterError as exc:
        raise CourseError(str(exc)) from None


def config_text(db_url: str | None = None, timeout: int = 120) -> str:
    """The course's nbgrader_config.py. It records no path (autograder.config resolves the course from where
    the file is); `db_url` names a database other than the course's own gradebook.db."""
    return "\n".join([
        "c = get_config()  # noqa: F821",
        "# No paths: the course is this folder, wherever it is copied or moved (its gradebook is gradebook.db).",
        f"c.CourseDirectory.course_id = {COURSE_ID!r}",
        *([f"c.CourseDirectory.db_url = {db_url!r}"] if db_url else []),
        f"c.ExecutePreprocessor.timeout = {timeout}",
        f"c.Execute.timeout = {timeout}",
        "c.IgnorePattern.enabled = True",
        f"c.IgnorePattern.pattern = {IGNORED_STDERR!r}",
        f"c.ClearSolutions.code_stub = {{'python': {cells.CODE_STUB!r}}}",
        "# `nbgrader autograde` and formgrader's Autograde button refuse: `autograder grade` grades this course",
        "# (autograder/stock.py; c.RefuseStockAutograde.allow = True runs stock nbgrader on trusted notebooks).",
        STOCK_REFUSAL_LINE,
        "",
    ])


def source_notebook(chapter: chapters.Chapter) -> nbformat.NotebookNode:
    """The course's source notebook of `chapter`: the chapter without its worked solutions."""
    return cells.without_solutions_only(chapter.read())


def init_course(course_dir: Path, names: Iterable[str] | None = None,
                db_url: str | None = None) -> list[chapters.Chapter]:
    """Write nbgrader_config.py and source/<chN>/<notebook>.ipynb for the chosen chapters."""
    course_dir = Path(course_dir).resolve()
    course_dir.mkdir(parents=True, exist_ok=True)
    (course_dir / "nbgrader_config.py").write_text(config_text(db_url))
    chosen = select(names)
    for ch in chosen:
        nb = source_notebook(ch)
        dest = course_dir / "source" / ch.assignment / f"{ch.notebook}.ipynb"
        dest.parent.mkdir(parents=True, exist_ok=True)
        import nbformat

        nbformat.write(nb, str(dest))
    return chosen


def release(course_dir: Path, names: Iterable[str] | None = None) -> list[Path]:
    """nbgrader generate_assignment for each chapter, each release stamped and kept (autograder.record.releases);
    returns the release notebooks."""
    course_dir = Path(course_dir).resolve()
    from autograder.record import releases

    api = gradebook.api(course_dir)
    out = []
    for ch in select(names):
        result = api.generate_assignment(ch.assignment, force=True, create=True)
        if not result["success"]:
            raise CourseError(f"nbgrader could not release {ch.assignment}: {_last_error(result)}\n{result.get('log', '')[-3000:]}")
        student = course_dir / "release" / ch.assignment / f"{ch.notebook}.ipynb"
        releases.keep(course_dir, ch.assignment, course_dir / "source" / ch.assignment / f"{ch.notebook}.ipynb", student)
        out.append(student)
    return out


def _last_error(result: dict) -> str:
    text = (result.get("error") or result.get("log") or "").strip().splitlines()
    return text[-1] if text else "unknown error"



# ----------------------------------------------------------------------------- what the steps return

@dataclass
class Released:
    """What `Course.release` made: the chapters, their student notebooks and the LMS zip."""

    chapters: list[chapters.Chapter]
    notebooks: list[Path]
    zip: Path


@dataclass
class Deadlines:
    """The course's due dates (assignment -> aware datetime, in the course's zone) and late policy."""

    timezone: str
    due: dict
    assignments: list[str]
    late: config.LatePolicy
    changed: bool
    moved: list = field(default_factory=list)  # config.Moved: other due dates whose clock time a new zone changed
    extensions: list = field(default_factory=list)  # record.StudentDue: each student's own due date, where extended


@dataclass
class Graded:
    """What `Course.grade` did: the engine's summary, and the grading logs before and after the run."""

    summary: object  # autograder.engine.GradeSummary
    before: dict = field(default_factory=dict)  # (student, assignment, notebook) -> NotebookLog
    after: list = field(default_factory=list)  # NotebookLog, every notebook of the course
    late: list = field(default_factory=list)  # grades.apply_late's rows: (student, assignment, notebook, lateness, points)
    feedback: list[Path] = field(default_factory=list)  # feedback pages this grading made out of date, written again

    @property
    def failed(self) -> int:
        return int(getattr(self.summary, "failed", 0) or 0)


@dataclass
class Exported:
    """What `Course.export` wrote: rows, the file, and students Canvas must match by name."""

    rows: int
    path: Path
    without_lms_id: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # e.g. an assignment Canvas cannot match by id


@dataclass
class Report:
    """The instructor's report: per-chapter summary rows, failures per graded cell and per hidden check, the
    behaviour checks' figures, and the files written (plots, index.html, one CSV per table)."""

    summary: list
    cells: list
    checks: list
    figures: list
    plots: list[Path]
    files: list[Path] = field(default_factory=list)


@dataclass
class ManualExport:
    """What `Course.manual_export` wrote: the CSV to fill, one page per question, and the answers' count."""

    questions: list
    csv: Path | None
    pages: list[Path]
    answers: int


@dataclass
class Similarity:
    """What `Course.similarity` found: pairs per assignment, submissions per assignment, the HTML report."""

    pairs: dict
    counts: dict
    path: Path


# ----------------------------------------------------------------------------- bounded steps

def _vm_data() -> int:
    """This process's private writable memory (VmData), in bytes (0 where /proc does not say)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _bounded_child(conn, bound, added: int, fn, args: tuple, kwargs: dict) -> None:
    """In the forked child: enter the bound, run the step, send back ('ok', result) or ('error', exception)."""
    if bound is not None and bound.cgroup is not None:
        bound.enter()
    else:  # RLIMIT_DATA counts what the child inherited too: bound what the step adds
        membound.limit_this_process(_vm_data() + added)
    try:
        conn.send(("ok", fn(*args, **kwargs)))
    except MemoryError:
        conn.send(("memory", None))
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises it
        try:
            conn.send(("error", exc))
        except Exception:  # noqa: BLE001 - an exception that does not pickle
            conn.send(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))
    finally:
        conn.close()


def _as_placed(raw: bytes) -> bytes:
    """A file's bytes as collect places them (cut to its caps; an unreadable notebook as it is)."""
    from autograder import collect

    return raw if collect.check_notebook(raw) else collect.capped(raw, collect.Caps())[0]


def _collect(course_dir: Path, sources: list[Path], **options):  # -> collect.CollectResult
    """collect.collect; each notebook it placed kept as an attempt and the graded one placed (a pin, the course's
    rule); then the release of each recognised (a note for another release's)."""
    from autograder import collect
    from autograder.record import attempts, releases

    result = collect.collect(course_dir, sources, **options)
    result.notes += attempts.record_collected(course_dir, [p for p, _ in result.placed], _as_placed)
    result.notes += releases.record_collected(course_dir, [(p.student, p.assignment, p.notebook, p.entry.origin)
                                                           for p, _ in result.placed])
    return result


# ----------------------------------------------------------------------------- the course


def fraction(text: str | float, option: str) -> float:
    """'10%' or '0.1' (or 0.1) as 0.1; CourseError naming `option` otherwise (a bare number above 1, such as
    '10', is refused: 10% or 0.1 says which was meant)."""
    hint = "a percentage such as 10% or a fraction such as 0.1"
    try:
        value = float(text) if isinstance(text, (int, float)) else \
            float(text.strip()[:-1]) / 100 if text.strip().endswith("%") else float(text)
    except ValueError:
        raise CourseError(f"{option} expects {hint}, got {text!r}") from None
    if not (math.isfinite(value) and 0 <= value <= 1):
        raise CourseError(f"{option} expects {hint}, between 0% and 100%, got {text!r}"
                          + (f" (for {value:g}% write {value:g}%)" if 1 < value <= 100 and "%" not in str(text) else ""))
    return value


class Course:
    """One course directory (nbgrader's): release, deadlines, collect, grade, manual grading, feedback,
    export, report and similarity, each a method that checks what it needs before it writes."""

    def __init__(self, root: Path | str, limits: StepLimits | None = None, overrides: Sequence[str] = ()) -> None:
        """`limits`: the steps' limits (else the course's, `autograder.limits`); `overrides`: the command line's
        `--limit NAME=VALUE` items, over nbgrader_config.py's."""
        self.root = Path(root)
        self._steps = limits
        self.overrides = tuple(overrides)

    def all_limits(self, kinds: Iterable[str] = config.LIMIT_SECTIONS):  # -> limits.CourseLimits
        """The course's limits of `kinds` (all: Limits, Caps, StepLimits), with where each was set (the defaults
        where there is no course yet)."""
        from autograder import limits

        return limits.load(self.root if (self.root / config.CONFIG_NAME).is_file() else None, self.overrides, kinds)

    @property
    def limits(self) -> StepLimits:
        """What one step that parses student data may use."""
        return self._steps or self.all_limits(["StepLimits"]).steps

    def __repr__(self) -> str:
        return f"Course({str(self.root)!r})"

    def lock(self, command: str):  # -> a context manager
        """Hold the course's lock while a writing `command` runs (CourseBusy if another holds it)."""
        return courselock.hold(self.root, command)

    # -- steps that parse student data

    def bounded(self, step: str, fn, *args, **kwargs):
        """`fn(*args, **kwargs)` in a forked process under this course's `StepLimits`; its result, or its exception
        raised here; CourseError naming `step` if it ran out of memory or time."""
        import multiprocessing

        steps = self.limits
        limit = steps.memory_mb << 20
        bound = membound.memory_bound(limit, step)
        receive, send = multiprocessing.Pipe(duplex=False)
        # fork (no start-up cost) from a process with one thread; a process with threads (the engine's, after a
        # grading) forks a clean server first, so no lock another thread held is copied into the step
        how = "fork" if threading.active_count() == 1 else "forkserver"
        child = multiprocessing.get_context(how).Process(target=_bounded_child, name=f"autograder-{step}",
                                                            args=(send, bound, limit, fn, args, kwargs), daemon=True)
        try:
            child.start()
            send.close()
            got = receive.recv() if receive.poll(steps.seconds) else ("time", None)
        except EOFError:  # it died without a word: killed (a cgroup's OOM kill, a signal)
            got = ("memory" if bound.oom_killed() or child.join(5) or child.exitcode in (-9, None) else "died", None)
        finally:
            if child.pid is not None:  # it started (a step that cannot be sent to a clean process never does)
                if child.is_alive():
                    child.kill()
                child.join(5)
            bound.release()
        kind, value = got
        if kind == "ok":
            return value
        if kind == "error":
            raise value
        what = {"memory": f"ran out of memory (bound: {steps.memory_mb} MiB more than the command's own)",
                "time": f"ran longer than its limit of {steps.seconds:g} s",
                "died": f"stopped unexpectedly (exit status {child.exitcode})"}[kind]
        raise CourseError(f"{step} {what} reading the students' files; nothing it wrote before stopping is "
                          "trusted: find the file with `autograder gradebook` and the collect report")

    # -- what the course has

    def require(self) -> None:
        """CourseError unless there is a course here; ConfigError if its configuration does not hold."""
        if not (self.root / config.CONFIG_NAME).exists():
            raise CourseError(f"no course at {self.root}: run `autograder release --course {self.root}` first")
        config.load(self.root)  # a course recording another place, or a bad setting: stop before writing

    def assignments(self) -> list[str]:
        """The course's assignments (its source folders), by name."""
        source = self.root / "source"
        return sorted(p.name for p in source.iterdir() if p.is_dir()) if source.is_dir() else []

    def require_assignment(self, assignment: str | None) -> None:
        """CourseError if `assignment` is given and not one of the course's."""
        if assignment and assignment not in self.assignments():
            raise CourseError(f"no assignment {assignment!r} in this course "
                              f"(it has {', '.join(self.assignments()) or 'none'})")

    def config(self) -> config.CourseConfig:
        """The course's configuration (nbgrader_config.py)."""
        return config.load(self.root)

    def students_submitted(self) -> list[str]:
        """Students with a folder in submitted/."""
        submitted = self.root / "submitted"
        return sorted(p.name for p in submitted.iterdir() if p.is_dir()) if submitted.is_dir() else []

    def grades(self):  # -> grades.Class
        """Every grade of the course (ResultsError while nothing is graded)."""
        from autograder import grades

        self.require()
        cls = grades.load(self.root)
        grades.require_graded(cls, self.root)
        return cls

    def logs(self) -> list:
        """Every notebook's grading log (autograder.gradinglog.NotebookLog)."""
        from autograder import gradinglog

        return gradinglog.read_all(self.root)

    def unplaced(self) -> list:
        """Files collect could not place (collect.Unplaced), with why."""
        from autograder.collect import Manifest

        return Manifest.read(self.root)[1]

    # -- release and deadlines

    def release(self, names: Iterable[str] | None = None, zip_path: Path | None = None) -> Released:
        """Build the course from chapters/ (source, nbgrader release) and zip the student notebooks for the
        LMS (default COURSE/release.zip); the course's due dates and late policy survive a release."""
        chosen = select(names)  # CourseError on an unknown chapter
        if not chosen:
            raise CourseError(f"no chapters found in {chapters.CHAPTERS}")
        assignments = [c.assignment for c in chosen]
        policy = config.read_policy_block(self.root)
        init_course(self.root, assignments)
        config.write_policy_block(self.root, policy or config.policy_block("UTC", {}, config.LatePolicy()))
        notebooks = release(self.root, assignments)
        self._sync_due_dates()
        out = write_release_zip(notebooks, Path(zip_path) if zip_path else self.root / "release.zip")
        return Released(chosen, notebooks, out)

    def deadlines(self, due: Sequence[str] = (), timezone: str | None = None, late: str | None = None,
                  per_day: str | float | None = None, cap: str | float | None = None,
                  grace: float | None = None) -> Deadlines:
        """Show, or set, the due dates (`due`: '[chN=]DATE' items; 'none' removes one) and the late policy
        (the policy block of nbgrader_config.py, synced into the gradebook)."""
        self.require()
        cfg = self.config()
        block = config.read_policy_block(self.root) or ""
        m = re.search(r"^c\.Deadlines\.timezone = '([^']*)'", block, re.M)
        tz_name = timezone or (m[1] if m else None) or "UTC"
        tz = config.timezone(tz_name)
        dates = {a: when.astimezone(tz).strftime("%Y-%m-%d %H:%M") for a, when in cfg.due.items()}
        assignments = self.assignments()
        for item in due or []:
            name, sep, when = item.rpartition("=")
            for a in [name] if sep else assignments:
                if a not in assignments:
                    raise CourseError(f"no assignment {a!r} in this course (it has {', '.join(assignments) or 'none'})")
                if when.strip().lower() in ("", "none"):
                    dates.pop(a, None)
                else:
                    config.parse_time(when, tz, f"--due {item}")
                    dates[a] = when.strip()
        policy = cfg.late
        if late or per_day is not None or cap is not None or grace is not None:
            policy = config.late_policy({
                "kind": (late or policy.kind).replace("-", "_"),
                "per_day": fraction(per_day, "--per-day") if per_day is not None else policy.per_day,
                "cap": fraction(cap, "--cap") if cap is not None else policy.cap,
                "grace_minutes": grace if grace is not None else policy.grace.total_seconds() / 60})
        set_now = set()  # assignments this call gives a due date: their clock time is the one given
        for item in due or []:
            name, sep, _ = item.rpartition("=")
            set_now |= {name} if sep else set(assignments)
        moved = [m for m in config.clock_times_moved(cfg.due, cfg.timezone, tz) if m.assignment not in set_now]
        changed = bool(due or timezone or policy != cfg.late)
        if changed:
            before = self._shown()
            config.write_policy_block(self.root, config.policy_block(tz_name, dates, policy))
            cfg = self.config()
            self._sync_due_dates()
            self._recharge(before)
        from autograder.record import extensions

        return Deadlines(tz_name, {a: cfg.due[a].astimezone(cfg.timezone) for a in assignments if a in cfg.due},
                         assignments, cfg.late, changed, moved, extensions.every(self.root))

    def extend(self, student: str, assignment: str, until: str | None = None, by: str | None = None):
        """Give `student` more time on `assignment`: until a moment (`until`, a date and time in the course's zone) or
        by a duration (`by`: '2d', '36h'); 'none' or '0' takes it back. Kept in the course's record and in nbgrader's
        `SubmittedAssignment.extension` (formgrader agrees); the late policy is applied again. Returns the student's
        due date (record.StudentDue)."""
        from autograder.record import extensions

        self.require()
        if not assignment:
            raise CourseError("--extend needs --chapter chN: the assignment the extension is for")
        self.require_assignment(assignment)
        if not re.fullmatch(r"[^\W_][\w.@+-]{0,99}", student or ""):
            raise CourseError(f"--extend expects a student id (letters, digits, _ . @ + -), got {student!r}")
        if (until is None) == (by is None):
            raise CourseError("--extend needs one of --until DATE (e.g. '2025-02-10 23:00') or --by DURATION (e.g. 2d)")
        cfg = self.config()
        before = self._shown()
        taken_back = (until or "").strip().lower() == "none"
        given = extensions.Extension(
            student, assignment,
            until=config.parse_time(until, cfg.timezone, "--until") if until and not taken_back else None,
            by=extensions.parse_duration(by) if by is not None else dt.timedelta(0) if taken_back else None)
        extensions.give(self.root, given, cfg.due.get(assignment))
        with gradebook.open_course(self.root) as gb:
            extensions.sync(gb, self.root, cfg.due, removed=((assignment, student),))
        self._recharge(before)
        return extensions.due_for(self.root, student, assignment)

    def _shown(self) -> dict[tuple[str, str, str], tuple]:
        """What every feedback page shows from the gradebook now (`feedback.shown`); {} before any grading."""
        from autograder import feedback, grades

        try:
            return feedback.shown(grades.load(self.root))
        except grades.ResultsError:
            return {}

    def _recharge(self, before: dict[tuple[str, str, str], tuple]) -> list[Path]:
        """The late policy applied again to what is graded (a penalty depends on the due date and the policy), and
        the feedback pages whose content changed since `before` (`_shown` taken before the due dates changed: a
        penalty, or only the lateness a page states) written again."""
        from autograder import grades

        if not before:
            return []
        grades.apply_late(self.root)
        after = self._shown()
        return self._refresh_feedback({k for k, v in after.items() if before.get(k) != v})

    def _sync_due_dates(self) -> None:
        """The config's due dates into nbgrader's gradebook (Assignment.duedate), where nbgrader's tools read them."""
        from autograder import late

        cfg = self.config()
        with gradebook.open_course(self.root) as gb:
            late.sync_due_dates(gb, cfg)

    # -- collect and grade

    def collect(self, sources: Sequence[Path], pattern: str | None = None,
                file_times: bool = False):  # -> collect.CollectResult
        """Place an LMS zip's or a folder's notebooks in submitted/ and register their students (`pattern`: a
        layout of one's own, as nbgrader's zip_collect; `file_times`: time untimed folders by file times)."""
        self.require()
        result = self.bounded("collect", _collect, self.root, list(sources), caps=self.all_limits().caps,
                              pattern=pattern, file_times=file_times)
        self._register_students(result.students)
        return result

    def _register_students(self, students: dict[str, str | None]) -> None:
        """Add the students to the gradebook (with their LMS user id, for the Canvas export), named as the roster
        names them."""
        from autograder.record import roster

        with gradebook.open_course(self.root) as gb:
            known = {s.id: s.lms_user_id for s in gb.students}
            for student, lms_id in sorted(students.items()):
                if student in known and (not lms_id or known[student] == lms_id):
                    continue
                gb.update_or_create_student(student, **({"lms_user_id": lms_id} if lms_id else {}))
        roster.sync(self.root)

    def alias(self, keep: str, other: str) -> list[str]:
        """Merge student `other` into `keep` (one person collected under two ids, e.g. from two LMSs): `other`'s LMS
        identities name `keep` at every later collect, its attempts become `keep`'s (the graded one placed by the pin
        or the rule), and `other` leaves submitted/, the gradebook and its pages; returns what moved."""
        from autograder import collect
        from autograder.record import attempts

        self.require()
        if keep == other or not all(collect.is_student_id(s) for s in (keep, other)):
            raise CourseError(f"roster alias takes two different student ids, not {keep!r} and {other!r}")
        known = collect.Manifest.identities(self.root)
        with gradebook.open_course(self.root) as gb:
            students = {s.id: s.lms_user_id for s in gb.students}
        mine = [i for i, s in known.items() if s == other]
        if other not in students and not mine and not (self.root / "submitted" / other).is_dir():
            raise CourseError(f"no student {other!r} in this course")
        moved = [f"{i} now names {keep}" for i in mine]
        collect.Manifest.update(self.root, [], [], {i: keep for i in mine})
        for a in self.assignments():
            for nb in sorted(p.stem for p in (self.root / "source" / a).glob("*.ipynb")):
                theirs = attempts.every(self.root, other, a, nb)
                for t in theirs:
                    attempts.keep(self.root, keep, a, nb, attempts.data(self.root, other, a, nb, t), t.uploaded_at,
                                  t.origin, t.lms_late, t.order)
                if theirs:
                    choice = attempts.graded(self.root, keep, a, nb)
                    attempts.place(self.root, keep, a, nb, choice.attempt,
                                   _as_placed(attempts.data(self.root, keep, a, nb, choice.attempt)))
                    moved.append(f"{len(theirs)} attempt(s) of {nb}; graded: the one uploaded "
                                 f"{choice.attempt.uploaded_at or 'untimed'} ({choice.why})")
        for folder in ("submitted", "autograded", "feedback", f"record/{attempts.DIR}"):
            shutil.rmtree(self.root / folder / other, ignore_errors=True)
        with gradebook.open_course(self.root) as gb:
            if other in students:
                lms = students[other]
                gb.remove_student(other)
                if lms and not students.get(keep):
                    gb.update_or_create_student(keep, lms_user_id=lms)
        return moved

    def import_roster(self, path: Path):  # -> roster.Imported
        """Who the students are: an LMS gradebook CSV (Canvas's) or nbgrader's student CSV, into the roster and
        nbgrader's student table (their names)."""
        from autograder.record import roster

        self.require()
        return roster.import_csv(self.root, Path(path))

    def grade(self, assignment: str | None = None, student: str | list[str] | None = None, workers: int = 2,
              force: bool = False, progress: bool = True, **engine_options) -> Graded:
        """Grade every submitted, not yet graded notebook with the trusted engine (resumable), then apply the
        late policy (a penalty depends on the raw score). With `force`, grade again what the other options
        select. `engine_options` go to `autograder.engine.grade` (seed, scheduler, and `limits`, else the
        course's: `autograder.limits`)."""
        from autograder import grades, gradinglog

        self.require()
        students = self.students_submitted()
        if not students:
            raise CourseError(f"nothing submitted in {self.root / 'submitted'}: run `autograder collect` first")
        for one in [student] if isinstance(student, str) else student or []:  # one id, or a list (the service's round)
            if one not in students:
                raise CourseError(f"no submission from student {one!r} in {self.root / 'submitted'}")
        self.require_assignment(assignment)
        if workers < 1:
            raise CourseError("--workers must be at least 1")
        from autograder.engine import grade

        chosen = None if student is None else [student] if isinstance(student, str) else list(student)
        before = {(lg.student, lg.assignment, lg.notebook): lg for lg in gradinglog.read_all(self.root, chosen)}
        # the engine first: its sandboxes start while this process goes on to read the gradebook
        one = student if isinstance(student, str) else None
        summary = grade(self.root, assignment=assignment, student=student, workers=workers,
                        progress=progress, force=force, meanwhile=self._while_sandboxes_start(one, assignment),
                        **{"limits": self.all_limits(["Limits"]).engine, **engine_options})
        # the late policy (it syncs the due dates it reads into the gradebook first): the chosen students' (or everyone's)
        charged = grades.apply_late(self.root, chosen)
        after = gradinglog.read_all(self.root, chosen)
        changed = {(lg.student, lg.assignment, lg.notebook) for lg in after
                   if (old := before.get((lg.student, lg.assignment, lg.notebook))) is None or old != lg}
        return Graded(summary, before, after, charged, self._refresh_feedback(changed, after))

    def _while_sandboxes_start(self, student: str | None, assignment: str | None) -> Callable[[], None]:
        """What this process prepares while a run's sandboxes start (`autograder.startup`): the feedback pages it
        may write again (some exist for what it grades: `feedback.warm`), and the collector back on."""
        from autograder import feedback

        pages = any((self.root / "feedback").glob(f"{student or '*'}/{assignment or '*'}/*.html"))

        def prepare() -> None:
            try:
                if pages:
                    feedback.warm()
            finally:
                startup.collector_on()
        return prepare

    def _refresh_feedback(self, changed: set[tuple[str, str, str]], logs: list | None = None) -> list[Path]:
        """Write again the existing feedback pages of `changed` (student, assignment, notebook): a page never
        shows a grade the gradebook no longer holds. Pages not written yet stay for `feedback` to write."""
        from autograder import feedback, grades

        stale = {key for key in changed if feedback.page_path(self.root, *key).is_file()}
        if not stale:
            return []
        cls = grades.load(self.root)
        return self.bounded("feedback", feedback.generate, self.root, cls, logs if logs is not None else self.logs(),
                            only=stale)

    # -- manual grading

    def manual_questions(self, assignment: str | None = None) -> list:
        """The course's manually graded cells (manual.Question)."""
        from autograder import manual

        self.require()
        self.require_assignment(assignment)
        return manual.questions(self.root, assignment)

    def manual_export(self, out_dir: Path | None = None, assignment: str | None = None) -> ManualExport:
        """A page per manually graded question with every answer, and one CSV to fill (default COURSE/manual)."""
        from autograder import manual

        qs = self.manual_questions(assignment)
        if not qs:
            return ManualExport([], None, [], 0)
        path, pages, n = self.bounded("manual export", manual.export, self.root,
                                      Path(out_dir) if out_dir else self.root / "manual", assignment)
        return ManualExport(qs, path, pages, n)

    def manual_import(self, path: Path) -> list:
        """The filled CSV's scores and comments into the gradebook (all or nothing), then the late policy; the
        feedback pages they change are written again."""
        from autograder import grades, manual

        self.require()
        rows = self.bounded("manual import", manual.import_scores, self.root, Path(path))
        grades.apply_late(self.root)  # a penalty depends on the raw score
        self._refresh_feedback({(r.answer.student, r.answer.question.assignment, r.answer.question.notebook)
                                for r in rows})
        return rows

    def notes(self, cls=None) -> dict[str, str]:
        """student -> what the gradebook's note column says: why a notebook scored nothing because it could not
        be read (the grader's reason), why a submission is missing (collect's reason)."""
        notes: dict[str, list[str]] = {}
        for lg in self.logs():
            if lg.error:
                notes.setdefault(lg.student, []).append(f"{lg.assignment}: {lg.error}")
        cls = cls or self.grades()
        totals = cls.assignment_totals()
        for u in self.unplaced():
            if u.student and u.student in cls.students and not notes.get(u.student) and any(
                    t.status == "missing" for (s, _), t in totals.items() if s == u.student):
                notes.setdefault(u.student, []).append(u.reason)
        return {s: "; ".join(n) for s, n in notes.items()}

    # -- what the instructor sends and reads

    def feedback(self, student: str | None = None, assignment: str | None = None) -> list[Path]:
        """One HTML feedback page per graded student and notebook, in COURSE/feedback/."""
        from autograder import feedback

        cls = self.grades()
        written = self.bounded("feedback", feedback.generate, self.root, cls, self.logs(), student, assignment)
        if not written:
            raise CourseError("no graded notebook matches --student/--assignment")
        return written

    def attempts(self, student: str, assignment: str | None = None) -> list:
        """Every kept attempt of `student`'s notebooks (optionally one assignment's): (assignment, notebook, attempts
        oldest first, the one graded: record.attempts.Choice)."""
        from autograder.record import attempts

        self.require()
        self.require_assignment(assignment)
        out = []
        for a in [assignment] if assignment else self.assignments():
            for nb in sorted(p.stem for p in (self.root / "source" / a).glob("*.ipynb")):
                kept = attempts.every(self.root, student, a, nb)
                if kept:
                    out.append((a, nb, kept, attempts.graded(self.root, student, a, nb)))
        if not out:
            raise CourseError(f"no attempt of {student!r}{' for ' + assignment if assignment else ''} is kept: "
                              "collect keeps every upload it places")
        return out

    def choose_attempt(self, student: str, assignment: str | None, number: int | None):  # -> attempts.Choice
        """Pin attempt `number` (1 = the oldest) of `student`'s notebook as the graded one (None: back to the course's
        rule) and place it in submitted/, so the next grading grades it; the pin survives later collects."""
        from autograder.record import attempts, releases

        found = self.attempts(student, assignment)
        if len(found) > 1:
            raise CourseError(f"{student} has attempts in {', '.join(a for a, _, _, _ in found)}: give --assignment")
        a, nb, _, _ = found[0]
        attempts.pin(self.root, student, a, nb, number)
        choice = attempts.graded(self.root, student, a, nb)
        attempts.place(self.root, student, a, nb, choice.attempt,
                       _as_placed(attempts.data(self.root, student, a, nb, choice.attempt)))
        releases.record_collected(self.root, [(student, a, nb, choice.attempt.origin)])
        return choice

    def attempt_rule(self, name: str | None = None) -> str:
        """The course's rule for the graded attempt ('last' or 'last-on-time'), set to `name` when given."""
        from autograder.record import attempts

        self.require()
        if name is not None:
            attempts.set_rule(self.root, name)
        return attempts.rule(self.root)

    def hand_back(self, lms: str, assignment: str | None, out: Path | None = None):  # -> handback.HandedBack
        """The feedback pages of one assignment in the LMS's own bulk-upload zip (default COURSE/<chN>_feedback_<lms>.zip),
        keyed by the ids its download gave each submission."""
        from autograder import handback

        self.require()
        if not assignment:
            raise CourseError(f"--lms {lms} needs --assignment chN: {lms.capitalize()} takes feedback one assignment "
                              "at a time")
        self.require_assignment(assignment)
        return handback.write_zip(self.root, lms, assignment,
                                  Path(out) if out else self.root / f"{assignment}_feedback_{lms}.zip")

    def export(self, fmt: str, out: Path, cells: bool = False, canvas_ids: dict[str, str] | None = None,
               canvas_gradebook: Path | None = None, missing: str = "blank",
               credit: dict[tuple[str, str], float] | None = None) -> Exported:
        """Grades to a CSV file ('-': standard output): totals (`csv`), one row per graded cell (`csv`, `cells`),
        or Canvas's import, its assignment ids from `canvas_ids` and/or a gradebook CSV exported from Canvas (whose
        names, SIS ids and sections it then uses); a missing submission blank (Canvas keeps its grade) or `missing`
        'zero'. `credit`: (student, assignment) -> the share of its points the graded attempt earns (the service's
        decaying credit; `grades.Class.credit`)."""
        from autograder import export

        if fmt not in ("csv", "canvas"):
            raise CourseError(f"unknown export format {fmt!r} (csv or canvas)")
        if cells and fmt != "csv":
            raise CourseError("--cells works with --format csv only")
        if (canvas_ids or canvas_gradebook or missing != "blank") and fmt != "canvas":
            raise CourseError("--canvas-id, --canvas-gradebook and --missing work with --format canvas only")
        if missing not in ("blank", "zero"):
            raise CourseError(f"--missing is blank or zero, not {missing!r}")
        cls = self.grades()
        cls.credit = dict(credit or {})
        out = Path(out)
        if fmt != "canvas":
            return Exported(export.write_cells(cls, out) if cells else export.write_totals(cls, out), out)
        unknown = sorted(set(canvas_ids or {}) - set(cls.assignments()))
        if unknown:
            raise CourseError(f"--canvas-id names {', '.join(unknown)}, not an assignment of this course "
                              f"(it has {', '.join(cls.assignments())})")
        from autograder.record import roster

        ids, notes, people = {}, [], roster.people(self.root)
        if canvas_gradebook is not None:
            notebooks = {a: [nb for b, nb, _ in cls.notebooks if b == a] for a in cls.assignments()}
            ids, notes = export.canvas_ids_from_gradebook(canvas_gradebook, notebooks)
            people.update(export.canvas_people(canvas_gradebook))
        ids.update(canvas_ids or {})
        warnings = [f"{a} has no Canvas assignment id: Canvas will match the column by its title {a!r} or create a "
                    f"new assignment (give --canvas-id {a}=ID, or --canvas-gradebook with the gradebook CSV Canvas "
                    "exports)" for a in cls.assignments() if a not in ids]
        n = export.write_canvas(cls, out, ids, missing, people)
        return Exported(n, out, sorted(s for s, info in cls.students.items() if not info.get("lms_user_id")),
                        notes + warnings if canvas_gradebook is not None else warnings)

    def report(self, out_dir: Path | None = None) -> Report:
        """The class summary per chapter, where points were lost (per graded cell and per hidden check), and
        plots in COURSE/report/."""
        from autograder import report

        cls = self.grades()
        logs = self.logs()
        out = Path(out_dir) if out_dir else self.root / "report"
        cells_, checks = report.failures(cls, logs, self.root)
        plots = report.plot_all(cls, logs, out, self.root)
        summary, figures = report.chapter_summary(cls), report.figure_rows(logs)
        files = report.write_tables(out, {"summary": (report.SUMMARY_HEADERS, summary),
                                          "cells": (report.CELL_HEADERS, report.cell_rows(cells_)),
                                          "checks": (report.CHECK_HEADERS, report.check_rows(checks)),
                                          "figures": (report.FIGURE_HEADERS, figures)}, plots)
        return Report(summary, cells_, checks, figures, plots, files)

    def similarity(self, assignment: str | None = None, common: float = 0.25) -> Similarity:
        """Every pair of students per assignment ranked by the uncommon code they share; COURSE/similarity/."""
        from autograder import similarity

        self.require()
        self.require_assignment(assignment)
        if not (self.root / "release").is_dir():
            raise CourseError(f"no release in {self.root}: run `autograder release` first")
        if not 0 < common <= 1:
            raise CourseError("--common must be a fraction between 0 and 1")
        return Similarity(*self.bounded("similarity", similarity.run, self.root, assignment, common))
