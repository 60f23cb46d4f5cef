"""`autograder`: the instructor's command line, on nbgrader's course directory and gradebook.

    autograder release [--chapters ch1 ch2] [-o release.zip]
    autograder example-class [--zip FILE | --to DIR]
    autograder collect SRC [SRC ...]          # a folder (nbgrader submitted/ layout) or an LMS zip
    autograder grade [--student ID] [--assignment chN] [--workers N]
    autograder feedback [--student ID] [--assignment chN]
    autograder export --format csv|canvas -o FILE [--cells]
    autograder report
    autograder gradebook

Every subcommand takes --course DIR (default ./course). A user error prints one line on
stderr and exits non-zero.
"""
from __future__ import annotations

import argparse
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

from autograder import course
from autograder.tables import table
from coursenb.chapters import CHAPTERS, ChapterError, select

EXIT_USAGE = 2
EXIT_FAILED = 1


class CliError(RuntimeError):
    """A user error: printed as one line, no traceback."""


def _print(*args: object) -> None:
    print(*args, flush=True)


# ----------------------------------------------------------------------------- release

def cmd_release(args: argparse.Namespace) -> int:
    """Build the course directory from chapters/ and zip the student notebooks for the LMS."""
    course_dir = args.course
    chosen = select(args.chapters)  # raises ChapterError on an unknown chapter
    if not chosen:
        raise CliError(f"no chapters found in {CHAPTERS}")
    names = [c.assignment for c in chosen]
    course.init_course(course_dir, names)
    notebooks = course.release(course_dir, names)
    out = Path(args.output) if args.output else course_dir / "release.zip"
    write_release_zip(notebooks, out)
    _print(table(["chapter", "student notebook"], [[c.assignment, str(p)] for c, p in zip(chosen, notebooks)],
                 title=f"released {len(notebooks)} chapter(s) into {course_dir}"))
    _print(f"upload to the LMS: {out}")
    return 0


def write_release_zip(notebooks: list[Path], out: Path) -> Path:
    """The student notebooks (flat: the names students must submit), the student kit attnlab/ (its
    source, README and pyproject.toml: `pip install ./attnlab` works from the unzipped folder) and a
    README.md with the exact commands. Reproducible: the same inputs give the same bytes."""
    out.parent.mkdir(parents=True, exist_ok=True)
    kit = course.ROOT / "attnlab"
    readme = (kit / "README.md").read_text(encoding="utf-8")
    if notebooks:  # the README's examples name a notebook of this zip
        readme = readme.replace("ch1_parallel_time.ipynb", notebooks[0].name)
    readme += "\n## The notebooks in this folder\n\n" + "".join(f"- `{nb.name}`\n" for nb in notebooks)
    files = {nb.name: nb.read_bytes() for nb in notebooks}
    files.update({f"attnlab/{rel}": (kit / rel).read_bytes() for rel in kit_files(kit)})
    files["README.md"] = readme.encode()
    tmp = out.with_name(f".{out.name}.tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, files[name])
    tmp.replace(out)
    return out


def kit_files(kit: Path) -> list[str]:
    """The kit's distributable files, relative to `kit`: its Python source, README.md and pyproject.toml
    (never build outputs, egg-info, caches or hidden files)."""
    found = []
    for path in sorted(kit.rglob("*")):
        rel = path.relative_to(kit)
        if not path.is_file() or any(part.startswith(".") or part in {"build", "dist", "__pycache__"}
                                     or part.endswith(".egg-info") for part in rel.parts):
            continue
        if path.suffix == ".py" or rel.as_posix() in {"README.md", "pyproject.toml"}:
            found.append(rel.as_posix())
    return found


# ----------------------------------------------------------------------------- example class

def cmd_example_class(args: argparse.Namespace) -> int:
    """Write the bundled example class (a Canvas-style zip, or its files in a folder)."""
    from autograder import example_class

    chapters = select(args.chapters)
    release_dir = args.course / "release"
    have_release = all((release_dir / c.assignment / f"{c.notebook}.ipynb").exists() for c in chapters)
    subs = example_class.build(chapters, release_dir if have_release else None)
    if args.to:
        where = example_class.write_dir(subs, args.to)
    else:
        where = example_class.write_zip(subs, args.zip or Path("example_class.zip"))
    _print(table(["student", "LMS id", "what they did"], example_class.roster(),
                 title=f"example class: {len(subs)} files for {', '.join(c.assignment for c in chapters)} -> {where}"))
    return 0


# ----------------------------------------------------------------------------- collect

def cmd_collect(args: argparse.Namespace) -> int:
    """Place an LMS zip's or a folder's notebooks in course/submitted; list what could not be placed."""
    from autograder import collect

    _require_course(args.course)
    try:
        result = collect.collect(args.course, args.sources)
    except collect.CollectError as exc:
        raise CliError(str(exc)) from None
    _register_students(args.course, result.students)
    rows = [[p.student, p.assignment, p.notebook, "late" if p.late else "", status, p.entry.path.name]
            for p, status in result.placed]
    _print(table(["student", "chapter", "notebook", "late", "status", "from"], rows,
                 title=f"collected {len(rows)} submission(s) into {args.course / 'submitted'}"))
    if result.problems:
        _print()
        _print(table(["file", "problem"], result.problems,
                     title=f"{len(result.problems)} problem(s): files not placed, duplicates, unreadable notebooks"))
    counts = {s: sum(1 for _, st in result.placed if st == s) for s in ("new", "replaced", "unchanged")}
    _print(f"\n{counts['new']} new, {counts['replaced']} replaced, {counts['unchanged']} unchanged, "
           f"{len(result.problems)} problem(s); {len(result.students)} student(s)")
    return 0


def _register_students(course_dir: Path, students: dict[str, str | None]) -> None:
    """Add the students to the gradebook (with their LMS user id, for the Canvas export)."""
    from autograder.grades import gradebook

    with gradebook(course_dir) as gb:
        known = {s.id: s.lms_user_id for s in gb.students}
        for student, lms_id in sorted(students.items()):
            if student in known and (not lms_id or known[student] == lms_id):
                continue
            gb.update_or_create_student(student, **({"lms_user_id": lms_id} if lms_id else {}))


# ----------------------------------------------------------------------------- grade

def cmd_grade(args: argparse.Namespace) -> int:
    """Grade every submitted, not yet graded notebook with the trusted engine (resumable)."""
    _require_course(args.course)
    submitted = args.course / "submitted"
    students = sorted(p.name for p in submitted.iterdir() if p.is_dir()) if submitted.is_dir() else []
    if not students:
        raise CliError(f"nothing submitted in {submitted}: run `autograder collect` first")
    if args.student and args.student not in students:
        raise CliError(f"no submission from student {args.student!r} in {submitted}")
    if args.assignment and args.assignment not in _assignments(args.course):
        raise CliError(f"no assignment {args.assignment!r} in this course "
                       f"(it has {', '.join(_assignments(args.course)) or 'none'})")
    if args.workers < 1:
        raise CliError("--workers must be at least 1")
    try:
        from autograder.engine import grade
    except ImportError as exc:
        raise CliError(f"the grading engine is not available ({exc})") from None
    try:
        from autograder.engine import EngineError
    except ImportError:
        EngineError = CliError  # noqa: N806 - an engine without its error type
    try:
        summary = grade(args.course, assignment=args.assignment, student=args.student, workers=args.workers,
                        progress=not args.quiet)
    except EngineError as exc:
        raise CliError(str(exc)) from None
    _print(describe_summary(summary))
    _print()
    cmd_gradebook(args)
    failed = int(getattr(summary, "failed", 0) or 0)
    if failed:
        print(f"autograder grade: error: {failed} notebook(s) could not be graded; run `autograder grade` "
              "again to retry them", file=sys.stderr)
        return EXIT_FAILED
    return 0


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

def _load_graded(course_dir: Path):  # -> grades.Class
    from autograder import grades

    _require_course(course_dir)
    cls = grades.load(course_dir)
    grades.require_graded(cls, course_dir)
    return cls


def cmd_gradebook(args: argparse.Namespace) -> int:
    """The gradebook: student x assignment totals."""
    cls = _load_graded(args.course)
    assignments, max_by, totals = cls.assignments(), cls.assignment_max(), cls.assignment_totals()
    rows = []
    for student in sorted(cls.students):
        mine = [totals[student, a] for a in assignments]
        cells = ["-" if t.status == "missing" else f"{t.score:g}" + ("*" if t.status == "ungraded" else "") for t in mine]
        rows.append([student, *cells, f"{sum(t.score for t in mine):g}"])
    headers = ["student"] + [f"{a} /{max_by[a]:g}" for a in assignments] + [f"total /{sum(max_by.values()):g}"]
    _print(table(headers, rows, title=f"gradebook of {args.course} ({len(rows)} students; - = no submission, "
                                      "* = some cells not scored)"))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """Write grades to a CSV file (totals, per-cell, or Canvas's gradebook import)."""
    from autograder import export

    if args.cells and args.format != "csv":
        raise CliError("--cells works with --format csv only")
    canvas_ids = _parse_canvas_ids(args.canvas_id)
    cls = _load_graded(args.course)
    out = Path(args.output)
    if args.format == "canvas":
        n = export.write_canvas(cls, out, canvas_ids)
        missing = sorted(s for s, info in cls.students.items() if not info.get("lms_user_id"))
        _print(f"wrote {n} student rows for Canvas to {out}")
        if missing:
            _print(f"note: {len(missing)} student(s) have no LMS user id (Canvas will match them by name): "
                   + ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else ""))
    elif args.cells:
        _print(f"wrote {export.write_cells(cls, out)} graded-cell rows to {out}")
    else:
        _print(f"wrote {export.write_totals(cls, out)} student-notebook rows to {out}")
    return 0


def _parse_canvas_ids(pairs: Sequence[str] | None) -> dict[str, str]:
    out = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        if not sep or not value.isdigit():
            raise CliError(f"--canvas-id expects CHAPTER=NUMBER (e.g. ch1=4321), got {pair!r}")
        out[name] = value
    return out


def cmd_feedback(args: argparse.Namespace) -> int:
    """One HTML feedback page per student and notebook, in course/feedback/."""
    from autograder import feedback, gradinglog

    cls = _load_graded(args.course)
    written = feedback.generate(args.course, cls, gradinglog.read_all(args.course), args.student, args.assignment)
    if not written:
        raise CliError("no graded notebook matches --student/--assignment")
    _print(f"wrote {len(written)} feedback page(s) under {args.course / 'feedback'}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Summary table per chapter and plots in course/report/."""
    from autograder import gradinglog, report

    cls = _load_graded(args.course)
    logs = gradinglog.read_all(args.course)
    _print(table(report.SUMMARY_HEADERS, report.chapter_summary(cls), title="class summary (graded submissions)"))
    counts = report.failed_checks(logs)
    if counts:
        _print()
        _print(table(["hidden check", "submissions failing it"], counts.most_common(10),
                     title="hidden checks failed most often"))
    paths = report.plot_all(cls, logs, args.course / "report")
    _print(f"\nplots: {', '.join(str(p) for p in paths)}")
    return 0


# ----------------------------------------------------------------------------- plumbing

def _require_course(course_dir: Path) -> None:
    if not (course_dir / "nbgrader_config.py").exists():
        raise CliError(f"no course at {course_dir}: run `autograder release --course {course_dir}` first")


def _assignments(course_dir: Path) -> list[str]:
    source = course_dir / "source"
    return sorted(p.name for p in source.iterdir() if p.is_dir()) if source.is_dir() else []


def parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    top = argparse.ArgumentParser(prog="autograder", description="Release, collect, grade and report a course's "
                                                                 "notebooks (nbgrader course directory).")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--course", type=Path, default=Path("course"), help="course directory (default ./course)")

    def add(name: str, fn, help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help_, description=help_)
        p.set_defaults(fn=fn)
        return p

    p = add("release", cmd_release, "build the course from chapters/ and zip the student notebooks")
    p.add_argument("--chapters", nargs="+", metavar="CHAPTER", help="e.g. ch1 ch2 (default: all)")
    p.add_argument("-o", "--output", help="zip to upload to the LMS (default COURSE/release.zip)")

    p = add("example-class", cmd_example_class, "write the bundled example class (an LMS-style zip)")
    p.add_argument("--chapters", nargs="+", metavar="CHAPTER", help="default: all")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--zip", type=Path, help="write a Canvas-style zip (default ./example_class.zip)")
    where.add_argument("--to", type=Path, help="write the files into this folder instead")

    p = add("collect", cmd_collect, "place submissions (a folder in nbgrader's layout, or an LMS zip) in the course")
    p.add_argument("sources", nargs="+", type=Path, metavar="SRC")

    p = add("grade", cmd_grade, "grade every collected, not yet graded notebook (resumable)")
    p.add_argument("--student", help="only this student")
    p.add_argument("--assignment", help="only this assignment (e.g. ch1)")
    p.add_argument("--workers", type=int, default=2, help="parallel workers (default 2)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")

    p = add("feedback", cmd_feedback, "write one HTML feedback page per student and notebook")
    p.add_argument("--student", help="only this student")
    p.add_argument("--assignment", help="only this assignment")

    p = add("export", cmd_export, "write grades to CSV (totals, per cell, or a Canvas gradebook import)")
    p.add_argument("--format", choices=["csv", "canvas"], default="csv")
    p.add_argument("-o", "--output", required=True, help="CSV file to write")
    p.add_argument("--cells", action="store_true", help="one row per student, notebook and graded cell (csv)")
    p.add_argument("--canvas-id", action="append", metavar="CHAPTER=ID",
                   help="Canvas assignment id of a chapter, e.g. ch1=4321 (repeatable)")

    add("report", cmd_report, "class summary per chapter, and plots in COURSE/report/")
    add("gradebook", cmd_gradebook, "print the gradebook (student x assignment totals)")
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; returns the exit status."""
    from autograder.collect import CollectError
    from autograder.config import ConfigError
    from autograder.grades import ResultsError
    from autograder.gradinglog import LogError

    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:  # argparse printed usage and the error
        return int(exc.code or 0)
    args.course = Path(args.course)
    try:
        return args.fn(args)
    except (CliError, course.CourseError, ChapterError, CollectError, ResultsError, LogError, ConfigError) as exc:
        first, _, details = str(exc).partition("\n")
        print(f"autograder {args.command}: error: {first}", file=sys.stderr)
        if details.strip():
            print(details.rstrip(), file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print(f"autograder {args.command}: interrupted (grading resumes where it stopped)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
