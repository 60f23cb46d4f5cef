"""The instructor CLI `autograder`: every subcommand, with good and bad input.

Runs in-process through `autograder.cli.main([...])` on one released Chapter-1 course
(module scope). Grades for export, feedback and report are written straight into
nbgrader's gradebook (no kernel), so this file stays fast; `grade` itself runs the
engine on two submissions when the engine is installed.
"""
from __future__ import annotations

import csv
import datetime as dt
import json
import re
import shutil
import statistics
import subprocess
import sys
import zipfile
from pathlib import Path, PurePosixPath

import nbformat
import pytest

from autograder import cli, collect, course, example_class, gradinglog, limits
from autograder.checks import CHECKS
from autograder.gradinglog import CellLog, NotebookLog
from coursenb import cells
from coursenb.chapters import select
from tests import nbgrader_support as nbs

pytestmark = pytest.mark.filterwarnings("ignore:Object of type")  # nbgrader's own add_submission

CHAPTER = select(["ch1"])[0]
NB = CHAPTER.notebook


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """`autograder argv...` in-process: (exit status, stdout, stderr)."""
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str, *words: str) -> None:
    """A user error: a single 'autograder CMD: error: ...' line on stderr, no traceback."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0] and "Traceback" not in err, err
    for w in words:
        assert w in lines[0], lines[0]


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    """A course with Chapter 1 released through the CLI."""
    course_dir = tmp_path_factory.mktemp("released") / "course"
    assert cli.main(["release", "--chapters", "ch1", "--course", str(course_dir)]) == 0
    return course_dir


@pytest.fixture(scope="module")
def class_zip(released, tmp_path_factory) -> Path:
    """The example class for Chapter 1 as a Canvas-style zip."""
    path = tmp_path_factory.mktemp("zip") / "class.zip"
    example_class.write_zip(example_class.build([CHAPTER], released / "release"), path)
    return path


def fresh(released: Path, tmp_path: Path) -> Path:
    """A private copy of the released course."""
    return nbs.course_copy(released, tmp_path / "course")


# ----------------------------------------------------------------------------- release

def test_release_writes_course_and_lms_zip(released) -> None:
    assert (released / "source" / "ch1" / f"{NB}.ipynb").exists()
    release_nb = released / "release" / "ch1" / f"{NB}.ipynb"
    assert "BEGIN HIDDEN TESTS" not in release_nb.read_text()
    with zipfile.ZipFile(released / "release.zip") as zf:
        names = zf.namelist()
        assert f"{NB}.ipynb" in names and "attnlab/grading.py" in names
        assert not any(n.startswith(("solutions/", "autograder/")) for n in names)
        assert "BEGIN SOLUTION" not in zf.read(f"{NB}.ipynb").decode()


def test_release_unknown_chapter_is_one_line_error(capsys, tmp_path) -> None:
    code, _, err = run(capsys, "release", "--chapters", "ch99", "--course", tmp_path / "c")
    assert code == 1
    one_line_error(err, "ch99")


# ----------------------------------------------------------------------------- collect

def canvas(name: str, user: int, att: int, file: str, late: bool = False) -> str:
    return "_".join([name] + (["LATE"] if late else []) + [str(user), str(att), file])


@pytest.mark.parametrize("filename, expected", [
    ("doejane_12345_67890_ch1_parallel_time.ipynb", ("doejane", "12345", False, "ch1_parallel_time")),
    ("doejane_LATE_12345_67890_ch1_parallel_time-1.ipynb", ("doejane", "12345", True, "ch1_parallel_time")),
    ("anon_k3Xz9_67890_ch1_parallel_time.ipynb", ("anon_k3Xz9", "anon_k3Xz9", False, "ch1_parallel_time")),
    ("LATE_anon_k3Xz9_67890_ch1_parallel_time (2).ipynb", ("anon_k3Xz9", "anon_k3Xz9", True, "ch1_parallel_time")),
    ("smith_jr_777_1_ch1_parallel_time.ipynb", ("smith_jr", "777", False, "ch1_parallel_time")),
])
def test_canvas_names_map_to_student_and_notebook(filename, expected) -> None:
    entry = collect.Entry(filename, PurePosixPath(filename), b"", dt.datetime(2025, 1, 1))
    placed = collect.classify(entry, {"ch1": ["ch1_parallel_time"]})
    assert isinstance(placed, collect.Placed), placed
    assert (placed.student, placed.identity.id, placed.late, placed.notebook) == expected


@pytest.mark.parametrize("path, problem", [
    ("doejane_12345_67890_notes.txt", "not a notebook"),
    ("doejane_12345_67890_homework.ipynb", "wrong name"),
    ("doejane_12345_67890_ch1_final.ipynb", "wrong name"),
    ("doejane_12345_67890_ch7_language_cnn.ipynb", "unknown chapter ch7"),
    ("random.ipynb", "wrong name"),
    ("ada/ch7/ch7_language_cnn.ipynb", "unknown chapter ch7"),
    ("ada/ch1/ch1_wrong.ipynb", "wrong name"),
    ("ada/ch1/notes.md", "not a notebook"),
])
def test_unplaceable_files_say_why(path, problem) -> None:
    entry = collect.Entry(path, PurePosixPath(path), b"", dt.datetime(2025, 1, 1))
    result = collect.classify(entry, {"ch1": ["ch1_parallel_time"]})
    assert isinstance(result, collect.Problem) and problem in result.reason, result


def test_collect_lms_zip_with_junk_and_duplicates(capsys, released, tmp_path) -> None:
    course_dir = fresh(released, tmp_path)
    nb = (released / "release" / "ch1" / f"{NB}.ipynb").read_bytes()
    src = tmp_path / "canvas.zip"
    with zipfile.ZipFile(src, "w") as zf:
        zf.writestr(zipfile.ZipInfo(canvas("doejane", 11, 100, f"{NB}.ipynb"), (2025, 1, 1, 9, 0, 0)), b"older")
        zf.writestr(zipfile.ZipInfo(canvas("doejane", 11, 105, f"{NB}-1.ipynb"), (2025, 1, 1, 10, 0, 0)), nb)
        zf.writestr(canvas("roe", 12, 200, f"{NB}.ipynb", late=True), nb)
        zf.writestr(canvas("roe", 12, 201, "notes.txt"), b"hello")
        zf.writestr(canvas("poe", 13, 300, "ch9_other.ipynb"), nb)  # a renamed ch1 notebook: placed by content
        zf.writestr(canvas("zoe", 15, 500, "ch9_other.ipynb"), b'{"cells": []}')
        zf.writestr(canvas("moe", 14, 400, f"{NB}.ipynb"), b'{"cells": [')
        zf.writestr("__MACOSX/._junk", b"\0")
        zf.writestr("readme.pdf", b"%PDF")
    code, out, err = run(capsys, "collect", src, "--course", course_dir)
    assert code == 0, err
    placed = sorted(p.parent.parent.name for p in (course_dir / "submitted").glob(f"*/ch1/{NB}.ipynb"))
    assert placed == ["doejane", "moe", "poe", "roe"]  # moe's file is unreadable: placed, it will score 0
    assert (course_dir / "submitted" / "doejane" / "ch1" / f"{NB}.ipynb").read_bytes() == nb  # the later one
    for words in ("duplicate of doejane", "not a notebook (notes.txt)", "unknown chapter ch9",
                  "not a readable notebook", "not a notebook (readme.pdf)"):
        assert words in out, words
    assert "__MACOSX" not in out
    assert "5 problem(s)" in out and "it will score 0" in out
    assert f"ch9_other.ipynb placed as ch1/{NB}.ipynb by its content" in out
    with_ids = {r[0]: r[1] for r in _students(course_dir)}
    assert with_ids == {"doejane": "11", "roe": "12", "poe": "13", "moe": "14", "zoe": "15"}
    # collecting again changes nothing
    code, out, _ = run(capsys, "collect", src, "--course", course_dir)
    assert code == 0 and "0 new, 0 replaced, 4 unchanged" in out


def _students(course_dir: Path) -> list[tuple[str, str | None]]:
    from autograder.gradebook import open_course as gradebook

    with gradebook(course_dir) as gb:
        return sorted((s.id, s.lms_user_id) for s in gb.students)


def test_collect_nbgrader_folder_layout(capsys, released, tmp_path) -> None:
    course_dir = fresh(released, tmp_path)
    src = tmp_path / "downloaded" / "submitted"
    nb = (released / "release" / "ch1" / f"{NB}.ipynb").read_bytes()
    for student in ("ada", "bob"):
        (src / student / "ch1").mkdir(parents=True)
        (src / student / "ch1" / f"{NB}.ipynb").write_bytes(nb)
    (src / "bob" / "ch3").mkdir()
    (src / "bob" / "ch3" / "ch3_merged.ipynb").write_bytes(nb)
    code, out, _ = run(capsys, "collect", src, "--course", course_dir)
    assert code == 0
    assert sorted(p.name for p in (course_dir / "submitted").iterdir()) == ["ada", "bob"]
    assert "unknown chapter ch3" in out and "2 new" in out


def test_collect_shared_lms_name_is_split_by_user_id(capsys, released, tmp_path) -> None:
    course_dir = fresh(released, tmp_path)
    nb = (released / "release" / "ch1" / f"{NB}.ipynb").read_bytes()
    src = tmp_path / "dl"
    src.mkdir()
    (src / canvas("smithjohn", 21, 1, f"{NB}.ipynb")).write_bytes(nb)
    (src / canvas("smithjohn", 22, 2, f"{NB}.ipynb")).write_bytes(nb)
    assert run(capsys, "collect", src, "--course", course_dir)[0] == 0
    assert sorted(p.name for p in (course_dir / "submitted").iterdir()) == ["smithjohn_21", "smithjohn_22"]


@pytest.mark.parametrize("make, words", [
    (lambda tmp: tmp / "nope.zip", "does not exist"),
    (lambda tmp: (tmp / "x.txt", (tmp / "x.txt").write_text("hi"))[0], "neither a folder nor a zip"),
])
def test_collect_bad_source(capsys, released, tmp_path, make, words) -> None:
    course_dir = fresh(released, tmp_path)
    code, _, err = run(capsys, "collect", make(tmp_path), "--course", course_dir)
    assert code == 1
    one_line_error(err, words)


# ----------------------------------------------------------------------------- missing course, bad options

@pytest.mark.parametrize("argv", [
    ["collect", "x.zip"], ["grade"], ["feedback"], ["export", "-o", "x.csv"], ["report"], ["gradebook"],
    ["deadlines"], ["manual", "export"], ["manual", "import", "x.csv"], ["similarity"],
])
def test_missing_course_dir(capsys, tmp_path, argv) -> None:
    code, _, err = run(capsys, *argv, "--course", tmp_path / "no-such-course")
    assert code == 1
    one_line_error(err, "no course at")


def test_bad_format_and_usage_errors(capsys, released) -> None:
    code, _, err = run(capsys, "export", "--format", "xls", "-o", "x.csv", "--course", released)
    assert code == 2 and "invalid choice: 'xls'" in err
    code, _, err = run(capsys, "export", "--format", "canvas", "--cells", "-o", "x.csv", "--course", released)
    assert code == 1
    one_line_error(err, "--cells")
    code, _, err = run(capsys, "export", "--format", "canvas", "--canvas-id", "ch1", "-o", "x.csv",
                       "--course", released)
    assert code == 1
    one_line_error(err, "CHAPTER=NUMBER")
    assert run(capsys, "frobnicate")[0] == 2
    assert run(capsys)[0] == 2


def test_before_grading_everything_says_so(capsys, released, tmp_path) -> None:
    course_dir = fresh(released, tmp_path)
    for argv in (["export", "-o", tmp_path / "x.csv"], ["report"], ["feedback"], ["gradebook"]):
        code, _, err = run(capsys, *argv, "--course", course_dir)
        assert code == 1
        one_line_error(err, "nothing graded yet")
    assert not (tmp_path / "x.csv").exists()
    code, _, err = run(capsys, "grade", "--course", course_dir)
    assert code == 1
    one_line_error(err, "nothing submitted")


def test_grade_rejects_unknown_student_assignment_and_workers(capsys, released, tmp_path, class_zip) -> None:
    course_dir = fresh(released, tmp_path)
    assert run(capsys, "collect", class_zip, "--course", course_dir)[0] == 0
    for argv, words in ((["--student", "nobody"], "nobody"), (["--assignment", "ch42"], "ch42"),
                        (["--workers", "0"], "--workers")):
        code, _, err = run(capsys, "grade", *argv, "--course", course_dir)
        assert code == 1
        one_line_error(err, words)


# ----------------------------------------------------------------------------- example class

def test_example_class_is_deterministic_and_collects(capsys, released, tmp_path, class_zip) -> None:
    again = tmp_path / "again.zip"
    code, out, _ = run(capsys, "example-class", "--chapters", "ch1", "--zip", again, "--course", released)
    assert code == 0 and "ada" in out
    assert again.read_bytes() == class_zip.read_bytes()
    course_dir = fresh(released, tmp_path)
    code, out, _ = run(capsys, "collect", class_zip, "--course", course_dir)
    assert code == 0
    placed = sorted(p.name for p in (course_dir / "submitted").iterdir())
    assert placed == ["ada", "alan", "barbara", "donald", "edsger", "frances", "grace", "hedy", "john", "linus",
                      "margaret", "niklaus", "tim"]
    for words in ("duplicate of grace", "not a notebook", f"ch1_final_version.ipynb placed as ch1/{NB}.ipynb by its content",
                  "not a readable notebook"):
        assert words in out
    # the folder form carries the same files
    folder = tmp_path / "folder"
    assert run(capsys, "example-class", "--chapters", "ch1", "--to", folder, "--course", released)[0] == 0
    with zipfile.ZipFile(class_zip) as zf:
        assert sorted(zf.namelist()) == sorted(p.name for p in folder.iterdir())


def test_example_class_students_are_what_they_claim(released) -> None:
    subs = {s.student: s for s in example_class.build([CHAPTER], released / "release") if s.kind != "earlier upload, superseded"}
    src = nbformat.read(released / "source" / "ch1" / f"{NB}.ipynb", as_version=4)
    answers = {c.metadata.nbgrader["grade_id"]: c.source for c in src.cells if c.metadata.get("nbgrader", {}).get("solution")}
    ada = nbformat.reads(subs["ada"].data.decode(), as_version=4)
    assert "BEGIN HIDDEN TESTS" not in subs["ada"].data.decode()  # built from the release, like a student's
    for cell in ada.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            assert cell.source.strip() == re.sub(r"[ \t]*### (BEGIN|END) SOLUTION\n?", "", answers[gid]).strip()
    assert subs["edsger"].data == nbformat.writes(nbformat.read(released / "release" / "ch1" / f"{NB}.ipynb",
                                                                as_version=4)).encode()
    assert subs["grace"].late and subs["grace"].canvas_name.startswith("grace_LATE_")
    with pytest.raises(ValueError):  # nbformat's NotJSONError
        nbformat.reads(subs["niklaus"].data.decode(), as_version=4)


# ----------------------------------------------------------------------------- gradebook, export, feedback, report

SCORES = {  # student -> grade_ids lost (every other cell full marks)
    "ada": set(), "alan": {"test_self_attention"}, "edsger": "all", "grace": {"test_transformer", "test_softmax_time"},
}
# What the chapter's cells are worth today (a chapter may gain a question): the expectations below follow.
POINTS = {cells.grade_id(c): cells.points(c) for c in CHAPTER.read().cells if cells.is_graded(c)}
TOTAL = sum(POINTS.values())


def raw(student: str) -> float:
    """The student's score before any late penalty."""
    lost = SCORES[student]
    return 0.0 if lost == "all" else TOTAL - sum(POINTS[g] for g in lost)


GRACE_PENALTY = min(raw("grace"), 0.2 * TOTAL)  # two started days late at 10% a day
GRACE_FINAL = raw("grace") - GRACE_PENALTY


def num(x: float) -> str:
    """A score as the tables and exports print it."""
    return f"{round(x, 2):g}"


def fake_grade(course_dir: Path, student: str, lost: set[str] | str) -> None:
    """Scores in the gradebook, an autograded notebook and a grading_log.json, as the engine writes them."""
    from autograder.gradebook import open_course as gradebook

    source = nbformat.read(course_dir / "source" / "ch1" / f"{NB}.ipynb", as_version=4)
    points = {c.metadata.nbgrader["grade_id"]: float(c.metadata.nbgrader["points"])
              for c in source.cells if c.metadata.get("nbgrader", {}).get("grade")}
    lost = set(points) if lost == "all" else lost
    with gradebook(course_dir) as gb:
        gb.update_or_create_student(student)
        gb.add_submission("ch1", student)
        for gid, pts in points.items():
            grade = gb.find_grade(gid, NB, "ch1", student)
            grade.auto_score, grade.needs_manual_grade = (0.0 if gid in lost else pts), False
        gb.db.commit()
    # worst case for feedback: the autograded notebook still holds the hidden tests and a check name
    for cell in source.cells:
        if cell.metadata.get("nbgrader", {}).get("grade"):
            context = ("\x1b[0;32mCell In[7], line 1\x1b[0m\n----> 1 expect_answer(X)\n"
                       "      2 \x1b[38;5;66m### BEGIN HIDDEN TESTS\x1b[39;00m\n"
                       "      3 from attnlab.grading import hidden_check\n      4 secret_helper = 42\n")
            cell.outputs = [nbformat.v4.new_output("error", ename="AssertionError",
                                                   evalue="wrong [check ch1.self_attention, seed 5]",
                                                   traceback=[context, "AssertionError: ch1.transformer failed"])]
    folder = course_dir / "autograded" / student / "ch1"
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(source, folder / f"{NB}.ipynb")
    visible = student == "edsger"  # the release untouched: its visible tests fail first, no hidden check runs
    cells = tuple(CellLog(gid, 0.0 if gid in lost else pts, pts,
                          ("the cell raised NotImplementedError: " if visible else
                           f"REASON-{gid}: hidden test ch1.self_attention failed") if gid in lost else "passed",
                          (f"ch1.{gid[5:]}",) if gid in lost and not visible else ())
                  for gid, pts in points.items())
    gradinglog.write(folder, NotebookLog(student, "ch1", NB, None, None, "2025-01-31T23:00:00Z", cells, execution_time=1.0))


DUE = "2025-01-31 23:00"
SUBMITTED = {  # student -> (upload time, the LMS's late mark): grace 2 days late, ada 10 minutes (grace period)
    "ada": ("2025-01-31 23:10", False), "alan": ("2025-01-31 20:00", False), "edsger": ("2025-01-30 09:00", False),
    "grace": ("2025-02-02 22:00", True)}


@pytest.fixture(scope="module")
def graded(released, tmp_path_factory) -> Path:
    """A copy of the course with four students graded (no kernel: grades written directly), a due date, a
    late policy of 10% a started day (cap 50%, 15 minutes' grace), and grace's work two days late."""
    import datetime as dt

    from autograder import grades
    from autograder.gradebook import open_course as gradebook

    course_dir = fresh(released, tmp_path_factory.mktemp("graded"))
    assert cli.main(["deadlines", "--course", str(course_dir), "--due", f"ch1={DUE}", "--late", "per-day",
                     "--per-day", "10%", "--cap", "50%", "--grace", "15"]) == 0
    for student, lost in SCORES.items():
        fake_grade(course_dir, student, lost)
    with gradebook(course_dir) as gb:
        gb.update_or_create_student("ken", lms_user_id="1012")  # collected, but nothing placed
        gb.update_or_create_student("grace", first_name="Grace", last_name='=HYPERLINK("http://evil","Hopper")')
        for student, (when, _) in SUBMITTED.items():
            gb.find_submission("ch1", student).timestamp = dt.datetime.fromisoformat(when)
        gb.db.commit()
    records = {f"{s}/ch1/{NB}": {"student": s, "assignment": "ch1", "notebook": NB, "origin": "x", "file": "x",
                                 "uploaded_at": when.replace(" ", "T") + ":00Z", "lms_late": lms, "lms_user_id": None,
                                 "sha256": "", "how": "name"} for s, (when, lms) in SUBMITTED.items()}
    unplaced = {"zip:ken": {"origin": f"zip:ken_1012_9_{NB}.py", "reason": f"not a notebook ({NB}.py)",
                            "student": "ken", "assignment": None, "collected_at": ""}}
    (course_dir / "collected.json").write_text(json.dumps({"submissions": records, "unplaced": unplaced}))
    grades.apply_late(course_dir)
    return course_dir


def test_gradebook_table(capsys, graded) -> None:
    code, out, _ = run(capsys, "gradebook", "--course", graded)
    assert code == 0
    table_lines = out.split("\n\n")[0].splitlines()[3:]
    rows = {line.split()[0]: line.split()[1:] for line in table_lines if line.strip()}
    assert rows["ada"] == [num(TOTAL), num(TOTAL)] and rows["alan"] == [num(raw("alan"))] * 2  # ada: in the grace
    assert rows["edsger"] == ["0", "0"]
    assert rows["grace"] == [f"{num(GRACE_FINAL)}L", num(GRACE_FINAL)]  # 2 started days late: 20% of the points
    assert rows["ken"][:2] == ["-", "0"] and " ".join(rows["ken"][2:]) == f"not a notebook ({NB}.py)"
    late_table = out[out.index("late work (policy: 10% of the points per started day late, at most 50%; 15 min grace)"):]
    assert re.search(rf"grace\s+ch1\s+1 d 23 h late\s+{num(raw('grace'))}\s+-{num(GRACE_PENALTY)}\s+{num(GRACE_FINAL)}",
                     late_table)
    assert not re.search(r"^ada ", late_table, re.M)  # on time: within the grace period
    assert f"ken_1012_9_{NB}.py" in out and "1 file(s) collected but not placed" in out


def test_late_policy_is_what_nbgrader_sees(graded) -> None:
    """The penalty sits in nbgrader's own columns: its gradebook agrees on lateness and penalty."""
    from autograder.gradebook import open_course as gradebook

    with gradebook(graded) as gb:
        sub = gb.find_submission("ch1", "grace")
        assert sub.assignment.duedate.isoformat() == "2025-01-31T23:00:00"
        assert sub.total_seconds_late == pytest.approx(47 * 3600)
        assert sub.notebooks[0].late_submission_penalty == pytest.approx(GRACE_PENALTY)
        assert gb.find_submission("ch1", "alan").notebooks[0].late_submission_penalty in (None, 0)


@pytest.mark.parametrize("uploaded, lms, expected_days, words", [
    ("2025-01-31 22:59", False, 0, "on time"),
    ("2025-01-31 23:14", False, 0, "within the grace period"),
    ("2025-01-31 23:16", False, 1, "16 min late"),
    ("2025-02-01 23:00", False, 1, "1 d late"),
    ("2025-02-01 23:01", False, 2, "1 d late"),
    ("2025-02-15 00:00", False, 15, "14 d 1 h late"),
    ("2025-01-31 20:00", True, 0, "on time"),  # the LMS says late, the clocks say not: the clocks decide
    (None, True, 1, "marked by the LMS"),  # nothing to measure: the LMS's mark is all there is
])
def test_lateness_and_penalty(uploaded, lms, expected_days, words) -> None:
    import datetime as dt

    from autograder import config, late

    policy = config.late_policy({"kind": "per_day", "per_day": 0.1, "cap": 0.5, "grace_minutes": 15})
    utc = dt.UTC
    lat = late.lateness(dt.datetime.fromisoformat(uploaded).replace(tzinfo=utc) if uploaded else None,
                        dt.datetime(2025, 1, 31, 23, 0, tzinfo=utc), lms, policy)
    assert lat.days == expected_days and words in lat.describe()
    assert late.penalty(policy, lat, raw=10, max_score=11) == pytest.approx(min(0.5, 0.1 * expected_days) * 11 if
                                                                            expected_days else 0.0)
    assert late.penalty(policy, lat, raw=1, max_score=11) <= 1  # never below zero
    none = config.late_policy({"kind": "none"})
    assert late.penalty(none, lat, raw=10, max_score=11) == 0


def test_bad_late_settings_are_one_line_errors(capsys, graded, tmp_path) -> None:
    from autograder import config

    course_dir = fresh(graded, tmp_path)
    config.write_policy_block(course_dir, config.read_policy_block(graded))
    for argv, *words in ((["--due", "ch1=tomorrow"], "not a date"), (["--due", "ch42=2025-01-01 10:00"], "ch42"),
                        (["--per-day", "150%"], "between 0% and 100%"), (["--cap", "lots"], "percentage"),
                        (["--timezone", "Mars/Olympus"], "unknown time zone"),
                        (["--due", "ch1=2025-02-07"], "gives a day but no time", "2025-02-07 00:00"),
                        (["--extend", "grace", "--chapter", "ch1", "--until", "2025-02-07"], "gives a day but no time"),
                        (["--extend", "grace", "--chapter", "ch1", "--by", "2 fortnights"], "duration"),
                        (["--extend", "grace", "--chapter", "ch1", "--until", "2025-01-30 10:00"], "not after"),
                        (["--extend", "grace", "--by", "2d"], "--chapter"),
                        (["--chapter", "ch1", "--by", "2d"], "--extend STUDENT")):
        code, _, err = run(capsys, "deadlines", *argv, "--course", course_dir)
        assert code == 1, argv
        one_line_error(err, *words)
    code, out, _ = run(capsys, "deadlines", "--course", course_dir)
    assert code == 0 and "2025-01-31 23:00 UTC" in out and "at most 50%" in out


def test_new_deadlines_charge_again_what_is_graded(capsys, graded, tmp_path) -> None:
    """A due date moved after grading: the penalties follow at once (they stayed at the old due date's until the
    next grading), and a feedback page already written shows the new one. The LMS's LATE mark is evidence, not the
    verdict: an upload before the new due date is on time (it stayed 'late (marked by the LMS)', one day)."""
    from autograder import config

    course_dir = fresh(graded, tmp_path)
    config.write_policy_block(course_dir, config.read_policy_block(graded))
    assert run(capsys, "feedback", "--student", "grace", "--course", course_dir)[0] == 0
    page = (course_dir / "feedback" / "grace" / "ch1" / f"{NB}.html").read_text()
    assert f"late penalty &minus;{num(GRACE_PENALTY)}" in page
    code, _, err = run(capsys, "deadlines", "--due", "2025-02-02 00:00", "--course", course_dir)  # still before her upload
    assert code == 0, err
    one_day = min(raw("grace"), 0.1 * TOTAL)  # 22 h late: two started days became one
    late_rows = run(capsys, "gradebook", "--course", course_dir)[1].split("late work")[1]
    assert re.search(rf"grace\s+ch1\s+22 h late\s+{num(raw('grace'))}\s+-{num(one_day)}\s+{num(raw('grace') - one_day)}",
                     late_rows)
    page = (course_dir / "feedback" / "grace" / "ch1" / f"{NB}.html").read_text()
    assert f"late penalty &minus;{num(one_day)}" in page
    code, _, err = run(capsys, "deadlines", "--due", "2025-02-03 12:00", "--course", course_dir)  # after her upload
    assert code == 0, err
    out = run(capsys, "gradebook", "--course", course_dir)[1]
    assert "late work" not in out and "marked by the LMS" not in out
    rows = {line.split()[0]: line.split()[1:] for line in out.split("\n\n")[0].splitlines()[3:] if line.strip()}
    assert rows["grace"][:2] == [num(raw("grace"))] * 2
    page = (course_dir / "feedback" / "grace" / "ch1" / f"{NB}.html").read_text()
    assert "late penalty" not in page


def test_a_deadline_change_that_keeps_the_penalty_rewrites_the_lateness_on_the_page(capsys, graded, tmp_path) -> None:
    """Issue 33.5: a due date moved by an hour leaves grace's penalty (one started day) as it was but not the lateness
    her page states: the page is written again (on main it kept '22 h late')."""
    from autograder import config

    course_dir = fresh(graded, tmp_path)
    config.write_policy_block(course_dir, config.read_policy_block(graded))
    assert run(capsys, "deadlines", "--due", "2025-02-02 00:00", "--course", course_dir)[0] == 0
    assert run(capsys, "feedback", "--student", "grace", "--course", course_dir)[0] == 0
    page = course_dir / "feedback" / "grace" / "ch1" / f"{NB}.html"
    one_day = min(raw("grace"), 0.1 * TOTAL)
    assert "Submitted 22 h late" in page.read_text() and f"late penalty &minus;{num(one_day)}" in page.read_text()
    assert run(capsys, "deadlines", "--due", "2025-02-01 23:00", "--course", course_dir)[0] == 0
    text = page.read_text()
    assert "Submitted 23 h late" in text and "22 h late" not in text and f"late penalty &minus;{num(one_day)}" in text


def test_an_extension_is_nbgraders_and_ours(capsys, graded, tmp_path) -> None:
    """`deadlines --extend` is nbgrader's own extension: nbgrader's lateness and every output of ours agree, with it,
    after it is taken back, and with one set through nbgrader's API alone (before: charged whatever nbgrader said)."""
    import datetime as dt

    from autograder import config, grades
    from autograder.gradebook import open_course as gradebook
    from autograder.record import due_for

    course_dir = fresh(graded, tmp_path)
    config.write_policy_block(course_dir, config.read_policy_block(graded))

    def agree(late_seconds: float, final: float) -> None:
        with gradebook(course_dir) as gb:
            assert gb.find_submission("ch1", "grace").total_seconds_late == pytest.approx(late_seconds)
        out = run(capsys, "gradebook", "--course", course_dir)[1]
        rows = {line.split()[0]: line.split()[1:] for line in out.split("\n\n")[0].splitlines()[3:] if line.strip()}
        assert rows["grace"][1] == num(final)
        assert run(capsys, "export", "-o", tmp_path / "t.csv", "--course", course_dir)[0] == 0
        by = {r["student_id"]: r for r in csv.DictReader((tmp_path / "t.csv").open())}
        assert (by["grace"]["score"], by["grace"]["late"]) == (num(final), "yes" if late_seconds else "no")

    code, out, err = run(capsys, "deadlines", "--extend", "grace", "--chapter", "ch1", "--by", "3d", "--course", course_dir)
    assert code == 0, err
    assert "grace's ch1 is due 2025-02-03 23:00 UTC" in out and re.search(r"grace\s+ch1\s+3 d\s+2025-02-03 23:00", out)
    agree(0, raw("grace"))
    assert by_due(due_for(course_dir, "grace", "ch1")) == "2025-02-03 23:00"
    assert run(capsys, "feedback", "--student", "grace", "--course", course_dir)[0] == 0
    assert "late penalty" not in (course_dir / "feedback" / "grace" / "ch1" / f"{NB}.html").read_text()

    code, _, err = run(capsys, "deadlines", "--extend", "grace", "--chapter", "ch1", "--until", "2025-02-02 21:00",
                       "--course", course_dir)
    assert code == 0, err
    one_day = min(raw("grace"), 0.1 * TOTAL)
    agree(3600, raw("grace") - one_day)  # an hour after her own due date: one started day

    assert run(capsys, "deadlines", "--extend", "grace", "--chapter", "ch1", "--by", "0", "--course", course_dir)[0] == 0
    agree(47 * 3600, GRACE_FINAL)
    assert due_for(course_dir, "grace", "ch1").extension is None

    with gradebook(course_dir) as gb:  # nbgrader's own API, as formgrader's users do
        gb.grant_extension("ch1", "grace", days=3)
    grades.apply_late(course_dir)  # what every grading and manual import does
    agree(0, raw("grace"))
    assert due_for(course_dir, "grace", "ch1").extension == dt.timedelta(days=3)


def by_due(own) -> str:
    return own.due.strftime("%Y-%m-%d %H:%M")


def test_release_keeps_the_course_policy(capsys, graded, tmp_path) -> None:
    course_dir = fresh(graded, tmp_path)
    from autograder import config

    block = config.read_policy_block(graded)
    config.write_policy_block(course_dir, block)
    assert run(capsys, "release", "--chapters", "ch1", "--course", course_dir)[0] == 0
    cfg = config.load(course_dir)
    assert cfg.late.kind == "per_day" and cfg.due["ch1"].isoformat() == "2025-01-31T23:00:00+00:00"


def test_export_csv_totals_and_cells(capsys, graded, tmp_path) -> None:
    assert run(capsys, "export", "--format", "csv", "-o", tmp_path / "t.csv", "--course", graded)[0] == 0
    rows = list(csv.DictReader((tmp_path / "t.csv").open()))
    by = {r["student_id"]: r for r in rows}
    assert (by["alan"]["score"], by["alan"]["max_score"], by["alan"]["status"], by["alan"]["late"]) == \
        (num(raw("alan")), num(TOTAL), "graded", "no")
    assert (by["grace"]["score"], by["grace"]["raw_score"], by["grace"]["late_penalty"], by["grace"]["late"],
            by["grace"]["days_late"], by["grace"]["submitted_at"], by["grace"]["due"]) == \
        (num(GRACE_FINAL), num(raw("grace")), num(GRACE_PENALTY), "yes", "1.96", "2025-02-02T22:00:00Z",
         "2025-01-31T23:00:00Z")
    assert (by["ken"]["score"], by["ken"]["status"]) == ("", "missing")
    assert run(capsys, "export", "--cells", "-o", tmp_path / "c.csv", "--course", graded)[0] == 0
    cells = list(csv.DictReader((tmp_path / "c.csv").open()))
    assert list(cells[0]) == ["student_id", "assignment", "notebook", "grade_id", "score", "max_score", "graded_by",
                              "comment"]
    assert len(cells) == 4 * len(POINTS)  # four students, every graded cell
    grace = {r["grade_id"]: r["score"] for r in cells if r["student_id"] == "grace"}
    assert grace["test_transformer"] == "0" and grace["test_self_attention"] == "4"


def test_export_canvas_matches_canvas_importer_rules(capsys, graded, tmp_path) -> None:
    out = tmp_path / "canvas.csv"
    assert run(capsys, "export", "--format", "canvas", "--canvas-id", "ch1=4321", "-o", out, "--course", graded)[0] == 0
    rows = list(csv.reader(out.open()))
    header = rows[0]
    # lib/gradebook_importer.rb: "Student" then "ID"; SIS User ID needs SIS Login ID; info columns end at "Section"
    assert header[:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert header[5:] == ["ch1 (4321)", "ch1 raw score", "ch1 late penalty", "ch1 lateness"]
    assert "Points Possible" in rows[1][0] and rows[1][5] == num(TOTAL)
    assert rows[1][6:] == ["(read only)"] * 3  # readonly_assignment?: the importer drops these columns
    by = {r[0]: r for r in rows[2:]}
    assert by["alan"][5] == num(raw("alan")) and by["ken"][1] == "1012" and by["ken"][5] == ""
    grace = by["'=HYPERLINK(\"http://evil\",\"Hopper\"), Grace"]  # a name from the LMS is not a formula either
    assert grace[5:] == [num(GRACE_FINAL), num(raw("grace")), num(GRACE_PENALTY), "1 d 23 h late"]


def test_csv_cells_never_start_a_formula(tmp_path) -> None:
    """Issue 32.2: no piece of any cell starts a formula, whichever separator the spreadsheet splits on; `unquote`
    gives back exactly what was written (on main, ';=cmd' and a tab before '=1+2' were formulas read with ; or tab)."""
    import random

    from autograder import export
    from tests.adversarial.outputs import SPREADSHEET, formula_cells

    for evil in ("=1+1", "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\t=1", "\r=1"):
        assert export.neutral(evil).lstrip("\t\r").startswith("'") and export.unquote(export.neutral(evil)) == evil
    assert export.neutral("ada") == "ada" and export.unquote("'quoted'") == "'quoted'"
    export.write_csv(tmp_path / "x.csv", ["student", "comment"], [["=evil()", "-1 for units"], *([x, x] for x in SPREADSHEET)])
    text = (tmp_path / "x.csv").read_text()
    assert text.splitlines()[1] == '"\'=evil()","\'-1 for units"'  # every field quoted
    assert formula_cells(text) == []
    back = [export.unquote(row[1]) for row in export.read_csv(tmp_path / "x.csv", "comment")[1]]
    assert back == ["-1 for units", *SPREADSHEET]
    rng = random.Random(0)  # the inverse is exact on any text, neutralised pieces and apostrophes included
    for _ in range(2000):
        text = "".join(rng.choice("ab'\"=+-@,; \t\r\n") for _ in range(rng.randrange(12)))
        assert export.unquote(export.neutral(text)) == text, repr(text)
    huge = "\t" * 40_000 + "\n" * 40_000 + ' ,"' * 10_000  # linear: a pattern quadratic in runs of separators takes hours
    assert export.unquote(export.neutral(huge)) == huge


def test_a_csv_on_a_terminal_is_inert_and_exact_in_a_pipe(monkeypatch) -> None:
    """`autograder export -o -` writes the CSV to standard output: on a terminal, a name or answer with escape codes,
    a carriage return or a bidirectional override (tests/adversarial/outputs.TERMINAL; Canvas display names come
    from the roster) is shown escaped (on main it reached the terminal raw); into a pipe, it is written exactly."""
    import io

    from autograder import export
    from tests.adversarial.outputs import CONTROL, TERMINAL

    class Out(io.StringIO):
        def __init__(self, tty: bool) -> None:
            super().__init__()
            self.tty = tty

        def isatty(self) -> bool:
            return self.tty

    for tty in (True, False):
        out = Out(tty)
        monkeypatch.setattr(sys, "stdout", out)
        export.write_csv("-", ["Student", "ID"], [[name, "1001"] for name in TERMINAL])
        names = [row[0] for row in csv.reader(io.StringIO(out.getvalue()))][1:]
        if tty:
            assert not any(CONTROL.search(n) for n in names) and "\\x1b[2J" in names[0], names
        else:
            assert [export.unquote(n) for n in names] == list(TERMINAL)


def test_feedback_has_scores_and_reasons_but_no_hidden_tests(capsys, graded) -> None:
    code, out, _ = run(capsys, "feedback", "--course", graded)
    assert code == 0 and "wrote 4 feedback page(s)" in out
    pages = sorted((graded / "feedback").glob(f"*/ch1/{NB}.html"))
    assert [p.parent.parent.name for p in pages] == sorted(SCORES)
    assert "BEGIN HIDDEN TESTS" in (graded / "autograded" / "alan" / "ch1" / f"{NB}.ipynb").read_text()
    for page in pages:
        text = page.read_text()
        assert "BEGIN HIDDEN TESTS" not in text and "hidden_check" not in text and "secret_helper" not in text
        leaked = [name for name in CHECKS if name in text]
        assert not leaked, f"{page}: {leaked}"
    alan = (graded / "feedback" / "alan" / "ch1" / f"{NB}.html").read_text()
    assert "Feedback for alan: ch1_parallel_time" in alan and f"Score: <b>{num(raw('alan'))} / {num(TOTAL)}</b>" in alan
    assert "REASON-test_self_attention: a hidden test failed" in alan
    grace = (graded / "feedback" / "grace" / "ch1" / f"{NB}.html").read_text()
    assert (f"<b>{num(GRACE_FINAL)} / {num(TOTAL)}</b> &nbsp;(cells {num(raw('grace'))}, "
            f"late penalty &minus;{num(GRACE_PENALTY)})") in grace and "Submitted 1 d 23 h late" in grace
    code, _, err = run(capsys, "feedback", "--student", "nobody", "--course", graded)
    assert code == 1
    one_line_error(err, "no graded notebook")


def test_report_summary_and_plots(capsys, graded) -> None:
    code, out, _ = run(capsys, "report", "--course", graded)
    assert code == 0
    from autograder import report

    line = next(line for line in out.splitlines() if line.startswith("ch1"))
    # final: ada all, alan all but test_self_attention, edsger 0, grace late: one full, one zero, one late
    finals = [TOTAL, raw("alan"), 0.0, GRACE_FINAL]
    assert line.split() == ["ch1", num(TOTAL), "4", num(statistics.fmean(finals)), num(statistics.median(finals)),
                            "1", "1", "1"]
    cells = out[out.index("where points were lost"):]
    # test_self_attention: alan (a hidden check) and edsger (the visible test, before any hidden check ran)
    assert re.search(r"ch1\s+test_self_attention\s+4\s+4\s+2\s+1\s+1\s+0", cells)
    checks = out[out.index("hidden checks failed most often"):]
    assert re.search(r"ch1.self_attention\s+test_self_attention\s+4\s+2\s+1\s+1", checks)
    messages = out[out.index("most common failure messages"):]
    assert re.search(r"test_self_attention\s+1\s+the cell raised NotImplementedError", messages)
    pngs = sorted(p.name for p in (graded / "report").glob("*.png"))
    assert pngs == ["ch1_cells.png", "hidden_checks_failed.png", "totals.png"]
    assert all((graded / "report" / p).stat().st_size > 5_000 for p in pngs)
    with (graded / "report" / "summary.csv").open(newline="") as f:  # the tables beside the plots
        assert next(csv.reader(f)) == report.SUMMARY_HEADERS
    page = (graded / "report" / "index.html").read_text()
    assert "submissions that lost points" in page and page.count('src="data:image/png;base64,') == 3
    assert "<script" not in page and "nan" not in page.split("<h2>Plots")[0]


def test_report_says_no_submissions_and_shows_figures_on_pass_and_fail() -> None:
    from autograder import report
    from autograder.grades import CellGrade, Class
    from autograder.gradinglog import figure

    cls = Class([("ch1", "a", 4.0), ("ch2", "b", 3.0)], {("ch1", "a"): {"t": 4.0}, ("ch2", "b"): {"u": 3.0}},
                {"ada": {}}, [CellGrade("ada", "ch1", "a", "t", 4.0, 4.0)])
    rows = {r[0]: r for r in report.chapter_summary(cls)}
    assert rows["ch2"][2:5] == [0, report.NO_SUBMISSIONS, report.NO_SUBMISSIONS] and rows["ch1"][3] == 4.0
    logs = [NotebookLog(s, "ch4", "b", None, None, "t", (CellLog("test_blank_lm", score, 3.0, reason),))
            for s, score, reason in (("ada", 3.0, f"passed: after 150 steps ... {figure('gap in nats', 0.071, 0.1)}"),
                                     ("bob", 0.0, f"hidden test failed: ... {figure('gap in nats', 0.765, 0.1)}"),
                                     ("cy", 0.0, "the cell raised NameError: x"))]
    assert report.figure_rows(logs) == [["ch4", "test_blank_lm", "ada", "passed", "gap in nats", "0.071", "0.1", "0.029"],
                                        ["ch4", "test_blank_lm", "bob", "failed", "gap in nats", "0.765", "0.1", "-0.665"]]


def test_report_groups_messages_and_spreads_equal_scores() -> None:
    from autograder import report

    assert report.group_message("shape (4, 6), expected (4, 8) for 'M'") == \
        report.group_message("shape (5, 6), expected (5, 9) for 'h'") == "shape (#, #), expected (#, #) for '…'"
    assert report.group_message("ch1_parallel_time.ipynb line 12") == "ch1_parallel_time.ipynb line #"
    offsets = report.dot_offsets([5.0, 5.0, 5.0, 7.0])
    assert len(set(offsets[:3])) == 3 and offsets[3] == 0 and abs(sum(offsets[:3])) < 1e-9


# ----------------------------------------------------------------------------- grade (the engine)

def engine_ready() -> bool:
    """True once the grading engine is installed."""
    try:
        from autograder.engine import grade  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.skipif(not engine_ready(), reason="the grading engine (autograder.engine.grade) is not installed")
def test_grade_with_engine_is_resumable(capsys, released, tmp_path, class_zip, monkeypatch) -> None:
    from autograder import feedback

    warmed = []  # a run that may write pages again prepares them while its sandboxes start; another does not
    monkeypatch.setattr(feedback, "warm", lambda: warmed.append(1))
    course_dir = fresh(released, tmp_path)
    assert run(capsys, "collect", class_zip, "--course", course_dir)[0] == 0
    for student in [p.name for p in (course_dir / "submitted").iterdir() if p.name not in ("ada", "edsger")]:
        shutil.rmtree(course_dir / "submitted" / student)
    code, out, err = run(capsys, "grade", "--quiet", "--course", course_dir)
    assert code == 0 and out.startswith("graded 2 notebook(s)") and "gradebook of" not in out, err  # -q: the summary
    code, out, err = run(capsys, "gradebook", "--course", course_dir)
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines() if line.startswith(("ada ", "edsger "))}
    assert rows == {"ada": num(TOTAL), "edsger": "0"}
    assert (course_dir / "autograded" / "ada" / "ch1" / f"{NB}.ipynb").exists()
    code, out, _ = run(capsys, "grade", "--quiet", "--course", course_dir)  # nothing left to grade
    assert code == 0
    assert run(capsys, "feedback", "--course", course_dir)[0] == 0
    page = course_dir / "feedback" / "edsger" / "ch1" / f"{NB}.html"
    assert f"Score: <b>0 / {num(TOTAL)}</b>" in page.read_text()
    # edsger resubmits a working notebook: the regrade writes his page again (it said 0 after a regrade to full)
    shutil.copy(course_dir / "submitted" / "ada" / "ch1" / f"{NB}.ipynb", course_dir / "submitted" / "edsger" / "ch1")
    code, out, err = run(capsys, "grade", "--quiet", "--course", course_dir)
    assert code == 0 and "graded 1 notebook(s)" in out and "wrote again 1 feedback page(s)" in out, out + err
    assert f"Score: <b>{num(TOTAL)} / {num(TOTAL)}</b>" in page.read_text()
    assert warmed == [1]  # only the regrade after `feedback`


# ----------------------------------------------------------------------------- python -m autograder

def test_python_dash_m_help() -> None:
    proc = subprocess.run([sys.executable, "-m", "autograder", "--help"], capture_output=True, text=True,
                          timeout=120, cwd=course.ROOT)
    assert proc.returncode == 0
    for command in ("release", "collect", "grade", "feedback", "export", "report", "gradebook", "example-class",
                    "deadlines", "manual", "similarity"):
        assert command in proc.stdout


def test_manual_import_takes_its_file_before_or_after_the_course() -> None:
    """`manual import --course DIR FILE` (as scripts/grade_example_class.sh writes it) and `manual import FILE
    --course DIR` both parse; `manual import` without a file is a usage error."""
    for argv in (["manual", "import", "--course", "C", "f.csv"], ["manual", "import", "f.csv", "--course", "C"]):
        args = cli.parser().parse_args(argv)
        assert (args.action, args.file, str(args.course)) == ("import", "f.csv", "C"), argv
    with pytest.raises(SystemExit):
        cli.parser().parse_args(["manual", "import", "--course", "C"])


# ----------------------------------------------------------------------------- steps that parse student data

def _allocate(n: int) -> int:
    return len(bytearray(n))


def _unreadable_zip() -> None:
    """A step that fails with its own error (module level: a clean process must be able to receive it)."""
    raise collect.CollectError("unreadable zip")


def test_a_step_that_reads_student_data_runs_bounded(tmp_path) -> None:
    """Course.bounded: the step's result and its own errors come back; a blow-up past the bound is one CourseError
    (the same allocation is fine unbounded), and this process is untouched."""
    c = course.Course(tmp_path, limits.StepLimits(memory_mb=256, seconds=600))
    assert c.bounded("similarity", _allocate, 64 << 20) == 64 << 20
    with pytest.raises(collect.CollectError, match="unreadable"):
        c.bounded("collect", _unreadable_zip)
    with pytest.raises(course.CourseError, match="similarity ran out of memory"):
        c.bounded("similarity", _allocate, 2 << 30)
    assert _allocate(512 << 20) == 512 << 20  # the bound was the child's alone
    slow = course.Course(tmp_path, limits.StepLimits(memory_mb=256, seconds=1))
    with pytest.raises(course.CourseError, match="feedback ran longer than its limit of 1 s"):
        slow.bounded("feedback", __import__("time").sleep, 30)


def test_a_bounded_step_from_a_process_with_threads_starts_clean(tmp_path) -> None:
    """With another thread alive (the engine's, after a grading), the step runs in a process started clean (a fork
    could copy a lock that thread holds) and still comes back."""
    import threading

    stop = threading.Event()
    helper = threading.Thread(target=stop.wait, daemon=True)
    helper.start()
    try:
        assert course.Course(tmp_path).bounded("feedback", _allocate, 1 << 20) == 1 << 20
    finally:
        stop.set()
        helper.join()


# ----------------------------------------------------------------------------- releases

def _answered(release: nbformat.NotebookNode, source: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The student notebook `release` with every answer written as the source's (a careful student's work)."""
    import copy

    answers = {cells.grade_id(c): c.source for c in source.cells if cells.is_solution(c)}
    nb = copy.deepcopy(release)
    for c in nb.cells:
        if cells.is_solution(c) and cells.grade_id(c) in answers:
            c.source = answers[cells.grade_id(c)]
    return nb


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.skipif(not engine_ready(), reason="the grading engine (autograder.engine.grade) is not installed")
def test_an_old_release_is_warned_at_collect_and_graded_by_its_own(capsys, released, tmp_path) -> None:
    """A course released, its text changed (a setup cell defines a new name that a test cell now calls), released
    again: a careful student's notebook of the first release is named at collect and graded by its own release's
    test cells, full marks (today's test cells in it raised NameError: ONLY_TODAY, and lost that cell)."""
    from attnlab import release as stamps
    from autograder import course as course_mod
    from autograder.record import releases

    course_dir = fresh(released, tmp_path)
    src_path = course_dir / "source" / "ch1" / f"{NB}.ipynb"
    first = nbformat.read(course_dir / "release" / "ch1" / f"{NB}.ipynb", as_version=4)
    old = _answered(first, nbformat.read(src_path, as_version=4))
    v1 = stamps.stamp(first)["version"]
    assert stamps.checksum(first) == stamps.stamp(first)["checksum"]

    source = nbformat.read(src_path, as_version=4)
    setup = next(c for c in source.cells if c.cell_type == "code" and "nbgrader" not in c.metadata)
    setup.source += "\nONLY_TODAY = True\n"
    test = next(c for c in source.cells if cells.grade_id(c) == "test_self_attention")
    test.source = "assert ONLY_TODAY\n" + test.source
    text = next(c for c in source.cells if c.cell_type == "markdown" and "nbgrader" not in c.metadata)
    text.source += "\n\nA sentence the second release adds."
    nbformat.write(source, src_path)
    course_mod.release(course_dir, ["ch1"])
    v2 = releases.current(course_dir, "ch1", NB)
    assert v2 and v2 != v1 and [k.version for k in releases.kept(course_dir, "ch1", NB)] == [v1, v2]

    folder = tmp_path / "subs"
    for student, nb in (("ada", old), ("alan", _answered(nbformat.read(course_dir / "release" / "ch1" / f"{NB}.ipynb",
                                                                     as_version=4), source))):
        (folder / student / "ch1").mkdir(parents=True)
        nbformat.write(nb, folder / student / "ch1" / f"{NB}.ipynb")
    code, out, err = run(capsys, "collect", folder, "--course", course_dir)
    assert code == 0, err
    assert f"from release {v1}, not the current {v2}" in out and out.count("from release") == 1  # alan's is current
    code, out, err = run(capsys, "grade", "--quiet", "--course", course_dir)
    assert code == 0, err
    scores = {lg.student: (lg.score, lg.max_score) for lg in gradinglog.read_all(course_dir)}
    assert scores["ada"] == scores["alan"] == (TOTAL, TOTAL), scores
    log = next(lg for lg in gradinglog.read_all(course_dir) if lg.student == "ada")
    assert any(f"own release {v1}" in n for n in log.notes)
    assert run(capsys, "feedback", "--student", "ada", "--course", course_dir)[0] == 0
    page = (course_dir / "feedback" / "ada" / "ch1" / f"{NB}.html").read_text()
    assert "your text, as written" not in page  # the first release's text is the course's, not hers


# ----------------------------------------------------------------------------- attempts

def test_an_on_time_attempt_pinned_survives_later_collects(capsys, released, tmp_path) -> None:
    """Every upload collect places is kept with its time; `attempts --choose` pins the on-time one and a later collect
    of the zip with the accidental late upload leaves it graded (on main the next collect switched back silently);
    `--rule last-on-time` picks it without a pin."""
    course_dir = fresh(released, tmp_path)
    assert run(capsys, "deadlines", "--due", "ch1=2025-01-31 23:00", "--course", course_dir)[0] == 0
    on_time = (released / "release" / "ch1" / f"{NB}.ipynb").read_bytes()
    nb = nbformat.reads(on_time.decode(), as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("an accidental second upload"))
    late = nbformat.writes(nb).encode()
    first, full = tmp_path / "first.zip", tmp_path / "full.zip"
    with zipfile.ZipFile(first, "w") as zf:
        zf.writestr(zipfile.ZipInfo(canvas("doejane", 11, 100, f"{NB}.ipynb"), (2025, 1, 31, 20, 0, 0)), on_time)
    with zipfile.ZipFile(full, "w") as zf:
        zf.writestr(zipfile.ZipInfo(canvas("doejane", 11, 100, f"{NB}.ipynb"), (2025, 1, 31, 20, 0, 0)), on_time)
        zf.writestr(zipfile.ZipInfo(canvas("doejane", 11, 105, f"{NB}-1.ipynb", late=True), (2025, 2, 1, 10, 0, 0)), late)
    graded_file = course_dir / "submitted" / "doejane" / "ch1" / f"{NB}.ipynb"
    stamp = graded_file.parent / "timestamp.txt"
    assert run(capsys, "collect", first, "--course", course_dir)[0] == 0
    assert run(capsys, "collect", full, "--course", course_dir)[0] == 0
    assert graded_file.read_bytes() == late  # the rule is the last upload (nbgrader's)
    code, out, err = run(capsys, "attempts", "doejane", "--course", course_dir)
    assert code == 0, err
    assert re.search(r"1\s+2025-01-31 20:00 UTC\s+on time\s+first.zip", out), out
    assert re.search(r"2\s+2025-02-01 10:00 UTC\s+11 h late\s+full.zip\S*\s+graded: the last", out), out
    code, out, err = run(capsys, "attempts", "doejane", "--choose", "1", "--course", course_dir)
    assert code == 0, err
    assert graded_file.read_bytes() == on_time and stamp.read_text().startswith("2025-01-31 20:00:00")
    code, out, _ = run(capsys, "collect", full, "--course", course_dir)
    assert code == 0 and "graded instead: the one uploaded 2025-01-31 20:00 UTC (pinned by the instructor" in out
    assert graded_file.read_bytes() == on_time and stamp.read_text().startswith("2025-01-31 20:00:00")
    assert re.search(r"1\s+2025-01-31 20:00 UTC.*graded: pinned", run(capsys, "attempts", "doejane", "--course",
                                                                      course_dir)[1])
    assert run(capsys, "attempts", "doejane", "--choose", "none", "--course", course_dir)[0] == 0
    assert graded_file.read_bytes() == late
    assert run(capsys, "attempts", "--rule", "last-on-time", "--course", course_dir)[0] == 0
    code, out, _ = run(capsys, "collect", full, "--course", course_dir)
    assert code == 0 and "(the last on time (a later one came after the due date)" in out
    assert graded_file.read_bytes() == on_time
    code, _, err = run(capsys, "attempts", "doejane", "--choose", "3", "--course", course_dir)
    assert code == 1 and "attempts 1 to 2" in err
    other = fresh(released, tmp_path / "one_zip")  # both uploads in one zip: the earlier is kept too, not dropped
    assert run(capsys, "deadlines", "--due", "ch1=2025-01-31 23:00", "--course", other)[0] == 0
    assert run(capsys, "attempts", "--rule", "last-on-time", "--course", other)[0] == 0
    code, out, _ = run(capsys, "collect", full, "--course", other)
    assert code == 0 and "duplicate of doejane" in out and "graded instead: the one uploaded 2025-01-31 20:00" in out
    assert (other / "submitted" / "doejane" / "ch1" / f"{NB}.ipynb").read_bytes() == on_time
    assert re.search(r"1\s+2025-01-31 20:00 UTC\s+on time\s+full.zip\S*\s+graded: the last on time",
                     run(capsys, "attempts", "doejane", "--course", other)[1])


def test_an_old_release_is_graded_by_todays_when_its_own_cannot_be_and_says_why(tmp_path) -> None:
    """A kept release whose tests call a hidden check the current release no longer calls (the grader judges only
    today's), or that grades other cells, is graded by today's release, with the reason."""
    from autograder.record import releases

    def meta(**kw) -> dict:
        return {"nbgrader": {"schema_version": 3, "grade": False, "solution": False, "locked": False, **kw}}

    def notebook(test: str, points: float = 1) -> nbformat.NotebookNode:
        return nbformat.v4.new_notebook(cells=[
            nbformat.v4.new_code_cell("def f(): pass", metadata=meta(solution=True, grade_id="f")),
            nbformat.v4.new_code_cell(test, metadata=meta(grade=True, locked=True, points=points, grade_id="test_f"))])

    def release(nb: nbformat.NotebookNode) -> dict:
        for sub in ("source", "release"):
            (tmp_path / sub / "ch9").mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, tmp_path / sub / "ch9" / "ch9_x.ipynb")
        releases.keep(tmp_path, "ch9", tmp_path / "source/ch9/ch9_x.ipynb", tmp_path / "release/ch9/ch9_x.ipynb")
        return json.loads((tmp_path / "release/ch9/ch9_x.ipynb").read_text())

    gone = release(notebook("hidden_check('ch9.gone')"))
    other_points = release(notebook("hidden_check('ch9.f')", points=2))
    same = release(notebook("hidden_check('ch9.f') # a comment"))
    release(notebook("hidden_check('ch9.f')"))
    assert "no longer has (ch9.gone)" in releases.grading_source(tmp_path, "ch9", "ch9_x", gone)[1]
    assert "other cells or points" in releases.grading_source(tmp_path, "ch9", "ch9_x", other_points)[1]
    source, why = releases.grading_source(tmp_path, "ch9", "ch9_x", same)
    assert source is not None and source.is_relative_to(tmp_path / "releases") and "own release" in why
