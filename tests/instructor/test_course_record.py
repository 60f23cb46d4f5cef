"""The instructor's course keeps its data and its word (issue 25): a copied or moved course is its own, one
LMS user is one student, lateness comes only from what says so, collect reads the common LMS downloads and
says when it placed nothing, and a copy ring in a small class is reported.

Each test reproduces a failure an instructor met, on the CLI's one released Chapter-1 course (tests/instructor/test_cli.py's
fixtures; grades written straight into the gradebook where the engine is not the point).
"""
from __future__ import annotations

import csv
import shutil
import zipfile
from pathlib import Path

import pytest

from autograder import collect, similarity
from tests.instructor import test_cli
from tests.instructor.test_cli import NB, canvas, engine_ready, fake_grade, fresh, one_line_error, run

released, graded, class_zip = test_cli.released, test_cli.graded, test_cli.class_zip  # the CLI tests' fixtures

pytestmark = pytest.mark.filterwarnings("ignore:Object of type")  # nbgrader's own add_submission


def outputs(capsys, course_dir: Path, tmp: Path) -> dict[str, str]:
    """Everything an instructor reads of a course: gradebook, deadlines, both exports, the gradebook file."""
    tmp.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, argv in (("gradebook", ["gradebook"]), ("deadlines", ["deadlines"]),
                       ("csv", ["export", "-o", tmp / "t.csv"]),
                       ("canvas", ["export", "--format", "canvas", "-o", tmp / "c.csv"])):
        code, text, err = run(capsys, *argv, "--course", course_dir)
        assert code == 0, err
        out[name] = text.replace(str(tmp), "TMP")
    out["t.csv"], out["c.csv"] = (tmp / "t.csv").read_text(), (tmp / "c.csv").read_text()
    return out


def release_nb(course_dir: Path) -> bytes:
    return (course_dir / "release" / "ch1" / f"{NB}.ipynb").read_bytes()


# ----------------------------------------------------------------------------- 1. a course is relocatable

def test_a_copied_course_never_writes_into_the_original(capsys, graded, tmp_path) -> None:
    """`cp -r course c2/course`, then deadlines, collect and grade on the copy: the original's gradebook,
    exports and deadlines are unchanged, and the copy has what was done to it."""
    original = fresh(graded, tmp_path / "orig")  # a course of its own where it is
    before = outputs(capsys, original, tmp_path / "before")
    copy = tmp_path / "c2" / "course"
    shutil.copytree(original, copy)  # what an instructor does: a plain copy, nothing rewritten
    assert run(capsys, "deadlines", "--course", copy, "--due", "ch1=2025-01-31 20:00")[0] == 0
    zip_path = tmp_path / "later.zip"
    with zipfile.ZipFile(zip_path, "w") as zf:
        zf.writestr(zipfile.ZipInfo(canvas("zoe", 31, 1, f"{NB}.ipynb"), (2025, 1, 30, 12, 0, 0)), release_nb(copy))
    code, _, err = run(capsys, "collect", zip_path, "--course", copy)
    assert code == 0, err
    fake_grade(copy, "zoe", "all")
    from autograder import grades

    grades.apply_late(copy)
    assert outputs(capsys, original, tmp_path / "before") == before
    after = outputs(capsys, copy, tmp_path / "after")
    assert "zoe" in after["gradebook"] and "zoe" not in before["gradebook"]
    assert "2025-01-31 20:00" in after["deadlines"]
    assert not (original / "submitted").exists()


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.skipif(not engine_ready(), reason="the grading engine (autograder.engine.grade) is not installed")
def test_grading_a_copy_grades_the_copy(capsys, released, class_zip, tmp_path) -> None:
    """The engine too writes only the copy's gradebook."""
    original = fresh(released, tmp_path / "orig")
    assert run(capsys, "collect", class_zip, "--course", original)[0] == 0
    copy = tmp_path / "c2" / "course"
    shutil.copytree(original, copy)
    gradebook_bytes = (original / "gradebook.db").read_bytes()
    code, out, err = run(capsys, "grade", "--quiet", "--student", "ada", "--course", copy)
    assert code == 0, err
    assert (original / "gradebook.db").read_bytes() == gradebook_bytes
    assert not (original / "autograded").exists() and (copy / "autograded" / "ada").is_dir()


def test_a_moved_course_works(capsys, released, tmp_path) -> None:
    first = fresh(released, tmp_path / "here")
    moved = tmp_path / "there" / "course"
    shutil.move(first, moved)
    src = tmp_path / "dl"
    src.mkdir()
    (src / canvas("ada", 1, 1, f"{NB}.ipynb")).write_bytes(release_nb(moved))
    code, out, err = run(capsys, "collect", src, "--course", moved)
    assert code == 0, err
    assert (moved / "submitted" / "ada").is_dir() and not first.exists()


@pytest.mark.parametrize("recorded", ["root", "db_url"])
def test_a_course_recording_another_place_stops_before_writing(capsys, released, tmp_path, recorded) -> None:
    """A course whose nbgrader_config.py records another location (as courses made before the fix did):
    one line naming both places, and nothing written anywhere."""
    elsewhere = tmp_path / "old" / "course"
    course_dir = tmp_path / "new" / "course"
    shutil.copytree(released, course_dir)
    line = (f"c.CourseDirectory.root = {str(elsewhere)!r}" if recorded == "root"
            else f"c.CourseDirectory.db_url = 'sqlite:///{elsewhere / 'gradebook.db'}'")
    config = course_dir / "nbgrader_config.py"
    config.write_text(config.read_text() + line + "\n")
    src = tmp_path / "dl"
    src.mkdir()
    (src / canvas("ada", 1, 1, f"{NB}.ipynb")).write_bytes(release_nb(course_dir))
    listing = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    for argv in (["collect", src], ["deadlines", "--due", "2025-01-01 10:00"], ["grade"], ["gradebook"]):
        code, _, err = run(capsys, *argv, "--course", course_dir)
        assert code == 1, argv
        one_line_error(err, str(elsewhere))
        assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == listing, argv
    assert "c.CourseDirectory.root" not in config.read_text().replace(line, "")


# ----------------------------------------------------------------------------- 2. one LMS user, one student

def collect_files(capsys, course_dir: Path, tmp: Path, names: list[str]) -> tuple[int, str]:
    src = tmp / f"dl{len(list(tmp.glob('dl*')))}"
    src.mkdir()
    for name in names:
        (src / name).write_bytes(release_nb(course_dir))
    code, out, err = run(capsys, "collect", src, "--course", course_dir)
    return code, out + err


def student_ids(course_dir: Path) -> dict[str, str | None]:
    from autograder.gradebook import open_course as gradebook

    with gradebook(course_dir) as gb:
        return {s.id: s.lms_user_id for s in gb.students}


@pytest.mark.parametrize("zips, expected", [
    # two users of one sortable name, then one of them alone: he stays who he was
    ([[(1010, 1), (1011, 2)], [(1010, 3)]], {"smithjohn_1010": "1010", "smithjohn_1011": "1011"}),
    # one user alone first, the namesake later: the first keeps the name, the second gets his id
    ([[(1010, 1)], [(1010, 3), (1011, 2)]], {"smithjohn": "1010", "smithjohn_1011": "1011"}),
])
def test_one_lms_user_is_one_student(capsys, released, tmp_path, zips, expected) -> None:
    course_dir = fresh(released, tmp_path)
    for batch in zips:
        code, text = collect_files(capsys, course_dir, tmp_path, [canvas("smithjohn", u, a, f"{NB}.ipynb")
                                                                  for u, a in batch])
        assert code == 0, text
    assert student_ids(course_dir) == expected
    assert sorted(p.name for p in (course_dir / "submitted").iterdir()) == sorted(expected)


def test_a_renamed_lms_user_stays_the_same_student(capsys, released, tmp_path) -> None:
    course_dir = fresh(released, tmp_path)
    assert collect_files(capsys, course_dir, tmp_path, [canvas("smithjohn", 1010, 1, f"{NB}.ipynb")])[0] == 0
    assert collect_files(capsys, course_dir, tmp_path, [canvas("smithjonathan", 1010, 2, f"{NB}.ipynb")])[0] == 0
    assert student_ids(course_dir) == {"smithjohn": "1010"}


# ----------------------------------------------------------------------------- 3. lateness from what says so

def fake_grade_timed(course_dir: Path, student: str) -> None:
    """fake_grade, with the submission's time read from its timestamp.txt as the engine does."""
    from nbgrader.utils import parse_utc

    from autograder.gradebook import open_course as gradebook

    fake_grade(course_dir, student, set())
    stamp = course_dir / "submitted" / student / "ch1" / "timestamp.txt"
    with gradebook(course_dir) as gb:
        gb.find_submission("ch1", student).timestamp = parse_utc(stamp.read_text()) if stamp.is_file() else None
        gb.db.commit()


def test_an_untimed_nbgrader_folder_costs_no_penalty_and_says_so(capsys, released, tmp_path) -> None:
    course_dir = fresh(released, tmp_path)
    assert run(capsys, "deadlines", "--course", course_dir, "--due", "2020-01-01 00:00", "--late", "per-day",
               "--per-day", "10%", "--cap", "50%")[0] == 0
    src = tmp_path / "submitted"
    (src / "ada" / "ch1").mkdir(parents=True)
    (src / "ada" / "ch1" / f"{NB}.ipynb").write_bytes(release_nb(course_dir))  # no timestamp.txt
    code, out, err = run(capsys, "collect", src, "--course", course_dir)
    assert code == 0, err
    assert "no timestamp.txt" in out and "not timed" in out
    assert not (course_dir / "submitted" / "ada" / "ch1" / "timestamp.txt").exists()
    records, _ = collect.Manifest.read(course_dir)
    assert records[f"ada/ch1/{NB}"].uploaded_at == ""
    fake_grade_timed(course_dir, "ada")
    from autograder import grades

    assert grades.apply_late(course_dir) == []  # on time: nothing says otherwise
    # the instructor may ask for the files' times
    course2 = fresh(released, tmp_path / "two")
    run(capsys, "deadlines", "--course", course2, "--due", "2020-01-01 00:00", "--late", "per-day", "--per-day", "0.1")
    code, out, err = run(capsys, "collect", src, "--file-times", "--course", course2)
    assert code == 0, err
    assert "file time" in out and (course2 / "submitted" / "ada" / "ch1" / "timestamp.txt").is_file()
    fake_grade_timed(course2, "ada")
    assert [x[0] for x in grades.apply_late(course2)] == ["ada"]


def test_within_the_grace_period_every_output_says_on_time(capsys, graded, tmp_path) -> None:
    """ada uploaded 10 minutes after the due date, inside 15 minutes' grace: on time everywhere."""
    code, out, _ = run(capsys, "gradebook", "--course", graded)
    assert code == 0
    ada = next(line.split() for line in out.splitlines() if line.startswith("ada "))
    assert not ada[1].endswith("L"), ada
    assert not any(line.startswith("ada ") for line in out.split("late work")[1].splitlines()) \
        if "late work" in out else True
    assert run(capsys, "export", "-o", tmp_path / "t.csv", "--course", graded)[0] == 0
    row = next(r for r in csv.DictReader((tmp_path / "t.csv").open()) if r["student_id"] == "ada")
    assert row["late"] == "no" and row["days_late"] in ("", "0") and row["late_penalty"] == "0"


def test_penalties_never_print_as_minus_zero(capsys, graded, tmp_path) -> None:
    """edsger scored 0 and came two days late: the penalty takes nothing, and prints as 0."""
    import datetime as dt
    import re

    from autograder import grades, late
    from autograder.gradebook import open_course as gradebook

    course_dir = fresh(graded, tmp_path)
    with gradebook(course_dir) as gb:
        gb.find_submission("ch1", "edsger").timestamp = dt.datetime(2025, 2, 2, 22, 0)
        gb.db.commit()
    grades.apply_late(course_dir)
    code, out, _ = run(capsys, "gradebook", "--course", course_dir)
    assert code == 0 and re.search(r"^edsger\s+ch1\s+1 d 23 h late\s+0\s+0\s+0$", out, re.M), out
    assert not re.search(r"(^|\s)-0(\s|$)", out), out
    assert [late.points_lost(x) for x in (0.0, 0.001, 2.4)] == ["0", "0", "-2.4"]


# ----------------------------------------------------------------------------- 4. the common LMS downloads

def test_collect_reads_a_moodle_zip(capsys, released, tmp_path) -> None:
    course_dir = fresh(released, tmp_path)
    src = tmp_path / "moodle.zip"
    with zipfile.ZipFile(src, "w") as zf:
        zf.writestr(zipfile.ZipInfo(f"Alice Smith_123456_assignsubmission_file_/{NB}.ipynb", (2025, 1, 30, 12, 0, 0)),
                    release_nb(course_dir))
        zf.writestr(zipfile.ZipInfo(f"Bob O'Neil_123457_assignsubmission_file_/{NB}.ipynb", (2025, 1, 30, 12, 0, 0)),
                    release_nb(course_dir))
        zf.writestr("Bob O'Neil_123457_assignsubmission_onlinetext_/onlinetext.html", b"<p>hi</p>")
    code, out, err = run(capsys, "collect", src, "--course", course_dir)
    assert code == 0, err
    assert sorted(p.name for p in (course_dir / "submitted").iterdir()) == ["alicesmith", "boboneil"]
    assert "onlinetext.html" in out


def test_collect_reads_a_blackboard_zip(capsys, released, tmp_path) -> None:
    course_dir = fresh(released, tmp_path)
    src = tmp_path / "bb.zip"
    with zipfile.ZipFile(src, "w") as zf:
        zf.writestr(f"Chapter 1_jsmith_attempt_2025-01-30-12-00-00_{NB}.ipynb", release_nb(course_dir))
        zf.writestr("Chapter 1_jsmith_attempt_2025-01-30-12-00-00.txt", b"Name: John Smith (jsmith)\n")
    code, out, err = run(capsys, "collect", src, "--course", course_dir)
    assert code == 0, err
    assert [p.name for p in (course_dir / "submitted").iterdir()] == ["jsmith"]
    records, _ = collect.Manifest.read(course_dir)
    assert records[f"jsmith/ch1/{NB}"].uploaded_at == "2025-01-30T12:00:00Z"


def test_collect_takes_nbgraders_own_pattern(capsys, released, tmp_path) -> None:
    """A layout of the instructor's own: a pattern with nbgrader's named groups (student_id, file_id,
    timestamp), from --pattern or c.FileNameCollectorPlugin.named_regexp in nbgrader_config.py."""
    course_dir = fresh(released, tmp_path)
    src = tmp_path / "dl"
    src.mkdir()
    (src / f"hw-ada@uni.edu-{NB}.ipynb").write_bytes(release_nb(course_dir))
    pattern = r"hw-(?P<student_id>[^-]+)-(?P<file_id>.+)"
    code, out, err = run(capsys, "collect", src, "--pattern", pattern, "--course", course_dir)
    assert code == 0, err
    assert [p.name for p in (course_dir / "submitted").iterdir()] == ["ada@uni.edu"]
    config = course_dir / "nbgrader_config.py"
    config.write_text(config.read_text() + f"c.FileNameCollectorPlugin.named_regexp = {pattern!r}\n")
    shutil.rmtree(course_dir / "submitted")
    assert run(capsys, "collect", src, "--course", course_dir)[0] == 0
    assert [p.name for p in (course_dir / "submitted").iterdir()] == ["ada@uni.edu"]
    code, _, err = run(capsys, "collect", src, "--pattern", "(?P<student_id>x", "--course", course_dir)
    assert code == 1
    one_line_error(err, "--pattern")
    code, _, err = run(capsys, "collect", src, "--pattern", "(?P<who>.+)", "--course", course_dir)
    assert code == 1
    one_line_error(err, "student_id")


def test_a_collect_that_places_nothing_fails_and_names_what_it_did_not_understand(capsys, released, tmp_path) -> None:
    course_dir = fresh(released, tmp_path)
    src = tmp_path / "odd.zip"
    with zipfile.ZipFile(src, "w") as zf:
        zf.writestr(f"Some Folder/{NB}.ipynb", b"{}")
    code, out, err = run(capsys, "collect", src, "--course", course_dir)
    assert code == 1
    assert "placed nothing" in err and "Some Folder" in out + err
    assert not (course_dir / "submitted").exists()


# ----------------------------------------------------------------------------- 5. a copy ring in a small class

def _answer(k: int) -> str:
    """A student's own code, different for every k."""
    names = ["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta"]
    ops = ["+", "-", "*", "/"]
    return "\n".join(f"def step_{names[k]}_{i}(x, y):\n    total = 0\n    for j in range({k + i + 3}):\n"
                     f"        total = total {ops[(k + i) % 4]} x[j] {ops[(k * i + 1) % 4]} {k * 7 + i} * y\n"
                     f"    return total {ops[i % 4]} {k + 11}\n" for i in range(6))


def test_a_copy_ring_in_a_small_class_is_reported() -> None:
    """Four byte-identical notebooks among seven: every pair of the four is reported, by default."""
    ring = _answer(0)
    works = [similarity.Work(s, "ch1", ring) for s in ("ann", "ben", "cat", "dan")]
    works += [similarity.Work(s, "ch1", _answer(k)) for k, s in enumerate(("eve", "fay", "gus"), start=1)]
    pairs = similarity.compare(works)
    found = {(p.a, p.b) for p in pairs}
    ring_pairs = {(a, b) for i, a in enumerate(("ann", "ben", "cat", "dan")) for b in ("ann", "ben", "cat", "dan")[i + 1:]}
    assert ring_pairs <= found, found
    assert all(p.score == pytest.approx(1.0) for p in pairs if (p.a, p.b) in ring_pairs)
    assert {(p.a, p.b) for p in pairs[:len(ring_pairs)]} == ring_pairs  # ranked first


def test_identical_submissions_are_always_reported() -> None:
    """Even when every submission is the same (the code is 'common' by any count)."""
    works = [similarity.Work(s, "ch1", _answer(0)) for s in ("ann", "ben", "cat", "dan", "eve", "fay", "gus", "hal")]
    assert len(similarity.compare(works)) == 28


def test_similarity_help_says_what_common_means_in_students(capsys) -> None:
    from autograder import cli

    with pytest.raises(SystemExit):
        cli.parser().parse_args(["similarity", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    common = out[out.rindex("--common"):]
    assert "students" in common[:300], common[:300]



# ----------------------------------------------------------------------------- 9. the words around the commands

def test_per_day_takes_a_percentage_or_a_fraction_and_says_so(capsys, released, tmp_path) -> None:
    from autograder import config

    course_dir = fresh(released, tmp_path)
    for value in ("10%", "0.1"):
        assert run(capsys, "deadlines", "--late", "per-day", "--per-day", value, "--course", course_dir)[0] == 0
        assert config.load(course_dir).late.per_day == pytest.approx(0.1)
    for value in ("10", "150%", "-0.1", "nan"):
        code, _, err = run(capsys, "deadlines", "--per-day", value, "--course", course_dir)
        assert code == 1, value
        one_line_error(err, "--per-day", "10%", "0.1")
        assert "c.LatePolicy" not in err
    assert "10%" in run(capsys, "deadlines", "--per-day", "10", "--course", course_dir)[2]  # "for 10% write 10%"
    assert config.load(course_dir).late.per_day == pytest.approx(0.1)  # nothing changed by the refused values


def test_a_new_time_zone_shows_the_due_dates_it_moves(capsys, released, tmp_path) -> None:
    course_dir = fresh(released, tmp_path)
    assert run(capsys, "deadlines", "--due", "ch1=2025-01-31 23:00", "--course", course_dir)[0] == 0
    code, out, _ = run(capsys, "deadlines", "--timezone", "Europe/Zurich", "--course", course_dir)
    assert code == 0
    assert "ch1 stays due at the same moment: 2025-01-31 23:00 UTC is 2025-02-01 00:00 CET" in out
    code, out, _ = run(capsys, "deadlines", "--timezone", "UTC", "--due", "ch1=2025-01-31 23:00", "--course", course_dir)
    assert code == 0 and "stays due" not in out  # set in the same call: its clock time is the one given


def test_autograder_alone_prints_the_help(capsys) -> None:
    from autograder import cli

    code, out, _ = run(capsys)
    assert code == 2 and out.startswith("usage: autograder")
    commands = sorted({command for command, _ in cli.parser().subcommands})
    assert len(commands) >= 14, commands
    # every command is in the help and in the module's synopsis (a new command documented in neither fails here)
    listed = {line.split()[0] for line in out.splitlines() if line.startswith("    ") and line.split()}
    assert [c for c in commands if c not in listed] == [], out
    assert [c for c in commands if f"autograder {c}" not in cli.__doc__] == []


def test_the_instructors_install_line_installs_the_kit() -> None:
    from autograder import course

    text = (course.ROOT / "front" / "instructors.md").read_text()
    assert "pip install -e ./attnlab -e ." in text.split("## The `autograder` command")[1][:600]


# ----------------------------------------------------------------------------- 8. exports an LMS accepts

def test_a_canvas_export_without_ids_warns_and_takes_them_from_canvas_gradebook(capsys, graded, tmp_path) -> None:
    code, _, err = run(capsys, "export", "--format", "canvas", "-o", tmp_path / "c.csv", "--course", graded)
    assert code == 0 and "warning: ch1 has no Canvas assignment id" in err
    book = tmp_path / "canvas_gradebook.csv"
    book.write_text("Student,ID,SIS User ID,SIS Login ID,Section,ch1 Parallel time (4321),Quiz 1 (99),"
                    "Current Score\n    Points Possible,,,,,12,5,\n")
    code, _, err = run(capsys, "export", "--format", "canvas", "--canvas-gradebook", book, "-o", tmp_path / "c.csv",
                       "--course", graded)
    assert code == 0 and "warning" not in err, err
    assert next(csv.reader((tmp_path / "c.csv").open()))[5] == "ch1 (4321)"
    (tmp_path / "other.csv").write_text("name,score\nada,1\n")
    code, _, err = run(capsys, "export", "--format", "canvas", "--canvas-gradebook", tmp_path / "other.csv",
                       "-o", tmp_path / "c2.csv", "--course", graded)
    assert code == 1 and not (tmp_path / "c2.csv").exists()
    one_line_error(err, "not a gradebook exported from Canvas")


@pytest.mark.parametrize("argv, words", [
    (["--canvas-id", "ch1=4321"], "--format canvas only"),
    (["--canvas-gradebook", "x.csv"], "--format canvas only"),
    (["--format", "canvas", "--cells"], "--format csv only"),
    (["--format", "canvas", "--canvas-id", "ch9=1"], "ch9"),
])
def test_an_export_option_that_does_not_apply_is_an_error(capsys, graded, tmp_path, argv, words) -> None:
    code, _, err = run(capsys, "export", *argv, "-o", tmp_path / "x.csv", "--course", graded)
    assert code == 1 and not (tmp_path / "x.csv").exists()
    one_line_error(err, words)


def test_export_to_standard_output(capsys, graded) -> None:
    code, out, err = run(capsys, "export", "-o", "-", "--course", graded)
    assert code == 0 and "student-notebook rows to standard output" in err
    rows = list(csv.DictReader(out.splitlines()))
    assert {r["student_id"] for r in rows} >= {"ada", "grace"} and not Path("-").exists()


# ----------------------------------------------------------------------------- issue 22.5: big input, bounded

def _with_big_cell(nb_bytes: bytes, size: int, outputs: int = 0) -> bytes:
    """The notebook with its first solution cell `size` bytes long, and `outputs` bytes of output on it."""
    import nbformat

    from coursenb import cells

    nb = nbformat.reads(nb_bytes.decode(), as_version=4)
    cell = next(c for c in nb.cells if cells.is_solution(c) and c.cell_type == "code")
    cell.source += "\n" + "# " + "x" * size
    if outputs:
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="y" * outputs)]
    return nbformat.writes(nb).encode()


def test_collect_caps_cells_and_notebooks_and_says_what_it_cut(released, tmp_path) -> None:
    import nbformat

    course_dir = fresh(released, tmp_path)
    caps = collect.Caps(notebook_bytes=2 * collect.MiB, cell_bytes=64 * 1024, output_bytes=128 * 1024)
    nb = release_nb(course_dir)
    assert collect.capped(nb, collect.Caps()) == (nb, [])  # the course's own notebook is never cut
    src = tmp_path / "dl"
    src.mkdir()
    (src / canvas("big", 1, 1, f"{NB}.ipynb")).write_bytes(_with_big_cell(nb, 1 << 20, outputs=1 << 20))
    (src / canvas("huge", 2, 1, f"{NB}.ipynb")).write_bytes(_with_big_cell(nb, 3 << 20).replace(b'"x', b'"\\u00e9x'))
    # a notebook of many cells each under the cell cap, over the notebook cap once read
    many = nbformat.reads(nb.decode(), as_version=4)
    many.cells += [nbformat.v4.new_code_cell("# " + "z" * 60_000) for _ in range(40)]
    (src / canvas("many", 3, 1, f"{NB}.ipynb")).write_bytes(nbformat.writes(many).encode())
    result = collect.collect(course_dir, [src], caps=caps)
    notes = dict(result.notes)
    big = next(v for k, v in notes.items() if "big_1" in k)
    assert "source (1.0 MiB) cut to its first 64 KiB" in big and "outputs (1.0 MiB) dropped" in big, big
    placed = (course_dir / "submitted" / "big" / "ch1" / f"{NB}.ipynb").read_bytes()
    assert len(placed) < 2 * 64 * 1024 + len(nb) and nbformat.reads(placed.decode(), as_version=4)
    problems = dict(result.problems)
    assert "larger than 2 MiB" in next(v for k, v in problems.items() if "many_3" in k)
    assert not (course_dir / "submitted" / "many").exists()
    assert (course_dir / "submitted" / "huge").is_dir()  # cut inside a multi-byte character: still a notebook
    records, _ = collect.Manifest.read(course_dir)
    assert "cut to its first 64 KiB" in records[f"big/ch1/{NB}"].note


def test_feedback_and_similarity_read_a_bounded_part_and_say_so(capsys, graded, tmp_path) -> None:
    course_dir = fresh(graded, tmp_path)
    nb = release_nb(course_dir)
    huge = _with_big_cell(nb, 8 << 20)
    for folder in ("autograded", "submitted"):
        (course_dir / folder / "alan" / "ch1").mkdir(parents=True, exist_ok=True)
        (course_dir / folder / "alan" / "ch1" / f"{NB}.ipynb").write_bytes(huge)  # written by hand: never capped
    (course_dir / "submitted" / "ada" / "ch1").mkdir(parents=True, exist_ok=True)
    (course_dir / "submitted" / "ada" / "ch1" / f"{NB}.ipynb").write_bytes(_with_big_cell(nb, 40_000) + b" " * (17 << 20))
    assert run(capsys, "feedback", "--student", "alan", "--course", course_dir)[0] == 0
    page = (course_dir / "feedback" / "alan" / "ch1" / f"{NB}.html").read_text()
    assert "This page shows part of your notebook" in page and "cut to its first 256 KiB" in page
    assert len(page) < 2 << 20
    assert run(capsys, "similarity", "--course", course_dir)[0] == 0
    report = (course_dir / "similarity" / "index.html").read_text()
    assert "Read in part" in report and "more than the 16.0 MiB read" in report  # ada's 17 MiB file
    assert "compared on its first 64 KiB" in report  # alan's 256 KiB of own code


# ----------------------------------------------------------------------------- handing back (issue 33, item 7)

def test_the_canvas_export_uses_canvas_names_and_sis_ids_and_can_post_zero(capsys, graded, tmp_path) -> None:
    """Given Canvas's own gradebook CSV, the import names each student as Canvas does ('Hopper, Grace', her SIS ids;
    it showed the course's id), matches 'Chapter 1: ... (4321)', and `--missing zero` posts 0 for a missing
    submission and for a Canvas student who submitted nothing at all (blank, the default, leaves Canvas's grade)."""
    from autograder.gradebook import open_course as gradebook

    course_dir = fresh(graded, tmp_path)
    shutil.copy(graded / "collected.json", course_dir / "collected.json")
    with gradebook(course_dir) as gb:
        gb.update_or_create_student("grace", lms_user_id="1004")
    book = tmp_path / "canvas_gradebook.csv"
    book.write_text('Student,ID,SIS User ID,SIS Login ID,Section,Chapter 1: Parallel time (4321),Current Score\n'
                    '    Points Possible,,,,,14,\n"Hopper, Grace",1004,G-77,ghopper,Sec 1,,\n'
                    '"Kim, Alex",1012,A-12,akim,Sec 2,,\n"Absent, Al",1099,A-99,aabsent,Sec 2,,\n')
    out = tmp_path / "c.csv"
    code, _, err = run(capsys, "export", "--format", "canvas", "--canvas-gradebook", book, "-o", out, "--course", course_dir)
    assert code == 0 and "warning" not in err, err
    rows = list(csv.reader(out.open()))
    assert rows[0][5] == "ch1 (4321)"
    by = {r[1]: r for r in rows[2:]}
    assert by["1004"][:5] == ["Hopper, Grace", "1004", "G-77", "ghopper", "Sec 1"]
    assert by["1012"][:6] == ["Kim, Alex", "1012", "A-12", "akim", "Sec 2", ""] and "1099" not in by
    code, _, err = run(capsys, "export", "--format", "canvas", "--canvas-gradebook", book, "--missing", "zero",
                       "-o", out, "--course", course_dir)
    assert code == 0, err
    by = {r[1]: r for r in list(csv.reader(out.open()))[2:]}
    assert by["1012"][5] == "0" and by["1099"][:6] == ["Absent, Al", "1099", "A-99", "aabsent", "Sec 2", "0"]
    assert by["1004"][5] not in ("", "0")
    code, _, err = run(capsys, "export", "--missing", "zero", "-o", out, "--course", course_dir)
    assert code == 1 and "--format canvas only" in err


def test_feedback_goes_back_in_the_lms_bulk_format(capsys, graded, tmp_path) -> None:
    """`feedback --lms canvas|moodle` zips an assignment's pages named as each LMS's bulk upload keys them: Canvas by
    the user and attachment ids of its download's name, Moodle by the participant's folder; a page of a submission
    that came from elsewhere is listed, never guessed."""
    import json

    from autograder import handback

    course_dir = fresh(graded, tmp_path)
    record = json.loads((graded / "collected.json").read_text())
    subs = record["submissions"]
    subs[f"ada/ch1/{NB}"]["origin"] = f"class.zip:lovelaceada_1001_5001_{NB}.ipynb"
    subs[f"grace/ch1/{NB}"]["origin"] = f"class.zip:hoppergrace_LATE_1004_5004_{NB}-1.ipynb"
    subs[f"alan/ch1/{NB}"]["origin"] = f"moodle.zip:Alan Turing_77_assignsubmission_file_/{NB}.ipynb"
    (course_dir / "collected.json").write_text(json.dumps(record))
    code, out, err = run(capsys, "feedback", "--lms", "canvas", "--assignment", "ch1", "-o", tmp_path / "c.zip",
                         "--course", course_dir)
    assert code == 0, err
    with zipfile.ZipFile(tmp_path / "c.zip") as zf:
        names = sorted(zf.namelist())
        page = zf.read(f"lovelaceada_1001_5001_{NB}_feedback.html")
    assert names == [f"hoppergrace_1004_5004_{NB}_feedback.html", f"lovelaceada_1001_5001_{NB}_feedback.html"]
    assert page == (course_dir / "feedback" / "ada" / "ch1" / f"{NB}.html").read_bytes()
    canvas_names = handback.download_names()[0]
    assert [canvas_names.fullmatch(n)["user_id"] for n in names] == ["1004", "1001"]  # what Canvas keys by
    assert "2 page(s) left out" in out and "alan" in out and "edsger" in out
    code, out, err = run(capsys, "feedback", "--lms", "moodle", "--assignment", "ch1", "-o", tmp_path / "m.zip",
                         "--course", course_dir)
    assert code == 0, err
    with zipfile.ZipFile(tmp_path / "m.zip") as zf:
        assert zf.namelist() == [f"Alan Turing_77_assignsubmission_file_/{NB}_feedback.html"]
    code, _, err = run(capsys, "feedback", "--lms", "canvas", "--course", course_dir)
    assert code == 1 and "--assignment" in err


# ----------------------------------------------------------------------------- the roster (issue 33, item 4)

def test_a_roster_names_every_student_as_the_lms_does(capsys, released, tmp_path) -> None:
    """`roster import` of Canvas's gradebook CSV names each collected student in nbgrader's student table (they were
    empty) and those collected later too; the Canvas export then shows Canvas's name and SIS ids (it showed
    'kimalex'); nbgrader's own student CSV names students as `nbgrader db student import` does."""
    from autograder.gradebook import open_course as gradebook

    course_dir = fresh(released, tmp_path)
    nb = release_nb(course_dir)
    first, later = tmp_path / "first.zip", tmp_path / "later.zip"
    with zipfile.ZipFile(first, "w") as zf:
        zf.writestr(zipfile.ZipInfo(canvas("kimalex", 1005, 1, f"{NB}.ipynb"), (2025, 1, 30, 12, 0, 0)), nb)
    with zipfile.ZipFile(later, "w") as zf:
        zf.writestr(zipfile.ZipInfo(canvas("leeann", 1006, 2, f"{NB}.ipynb"), (2025, 1, 30, 12, 0, 0)), nb)
    assert run(capsys, "collect", first, "--course", course_dir)[0] == 0
    book = tmp_path / "canvas.csv"
    book.write_text("Student,ID,SIS User ID,SIS Login ID,Section,ch1 (4321)\n    Points Possible,,,,,14\n"
                    '"Kim, Alex",1005,S-5,akim,Sec 1,\n"Lee, Ann",1006,S-6,alee,Sec 1,\n')
    code, out, err = run(capsys, "roster", "import", book, "--course", course_dir)
    assert code == 0, err
    assert "read 2 Canvas student row(s)" in out and "named 1 student(s)" in out and "1 not collected yet" in out
    assert run(capsys, "collect", later, "--course", course_dir)[0] == 0
    with gradebook(course_dir) as gb:
        names = {s.id: (s.first_name, s.last_name) for s in gb.students}
    assert names == {"kimalex": ("Alex", "Kim"), "leeann": ("Ann", "Lee")}
    fake_grade(course_dir, "kimalex", set())
    assert run(capsys, "export", "--format", "canvas", "-o", tmp_path / "c.csv", "--course", course_dir)[0] == 0
    rows = {r[1]: r for r in csv.reader((tmp_path / "c.csv").open())}
    assert rows["1005"][:5] == ["Kim, Alex", "1005", "S-5", "akim", "Sec 1"]
    (tmp_path / "nbgrader.csv").write_text("id,first_name,last_name,email\nkimalex,Alexandra,Kim,ak@example.org\n")
    code, out, err = run(capsys, "roster", "import", tmp_path / "nbgrader.csv", "--course", course_dir)
    assert code == 0 and "read 1 nbgrader student row(s)" in out, err
    with gradebook(course_dir) as gb:
        assert (gb.find_student("kimalex").first_name, gb.find_student("kimalex").email) == ("Alexandra", "ak@example.org")
    (tmp_path / "other.csv").write_text("name,score\nada,1\n")
    code, _, err = run(capsys, "roster", "import", tmp_path / "other.csv", "--course", course_dir)
    assert code == 1
    one_line_error(err, "neither an LMS gradebook")


def test_namesakes_stay_apart_and_an_alias_merges_one_person(capsys, released, tmp_path) -> None:
    """Two Moodle 'Alex Kim' with different participant ids are two students (never merged on a display name);
    `roster alias` merges one person's two ids (a second Canvas account): its attempts become the kept id's, and a
    later upload of the merged id lands there (on main there was no alias: it stayed a student of its own)."""
    from autograder.gradebook import open_course as gradebook

    course_dir = fresh(released, tmp_path)
    nb = release_nb(course_dir)
    moodle, first, later = tmp_path / "moodle.zip", tmp_path / "first.zip", tmp_path / "later.zip"
    with zipfile.ZipFile(moodle, "w") as zf:
        for pid in (77, 78):
            zf.writestr(zipfile.ZipInfo(f"Alex Kim_{pid}_assignsubmission_file_/{NB}.ipynb", (2025, 1, 30, 12, 0, 0)), nb)
    with zipfile.ZipFile(first, "w") as zf:
        zf.writestr(zipfile.ZipInfo(canvas("kimalex", 1005, 1, f"{NB}.ipynb"), (2025, 1, 30, 12, 0, 0)), nb)
        zf.writestr(zipfile.ZipInfo(canvas("kimalex", 2005, 2, f"{NB}.ipynb"), (2025, 1, 30, 13, 0, 0)), nb + b" ")
    with zipfile.ZipFile(later, "w") as zf:
        zf.writestr(zipfile.ZipInfo(canvas("kimalex", 2005, 3, f"{NB}.ipynb"), (2025, 1, 31, 9, 0, 0)), nb + b"  ")
    assert run(capsys, "collect", moodle, "--course", course_dir)[0] == 0
    assert sorted(p.name for p in (course_dir / "submitted").iterdir()) == ["alexkim_77", "alexkim_78"]
    assert run(capsys, "collect", first, "--course", course_dir)[0] == 0
    students = sorted(p.name for p in (course_dir / "submitted").iterdir())
    assert students == ["alexkim_77", "alexkim_78", "kimalex_1005", "kimalex_2005"], students
    code, out, err = run(capsys, "roster", "alias", "kimalex_1005", "kimalex_2005", "--course", course_dir)
    assert code == 0 and "canvas:2005 now names kimalex_1005" in out, err
    assert not (course_dir / "submitted" / "kimalex_2005").exists()
    with gradebook(course_dir) as gb:
        assert "kimalex_2005" not in {s.id for s in gb.students}
    graded_file = course_dir / "submitted" / "kimalex_1005" / "ch1" / f"{NB}.ipynb"
    assert graded_file.read_bytes() == nb + b" "  # the last of the person's two uploads
    assert run(capsys, "collect", later, "--course", course_dir)[0] == 0
    assert not (course_dir / "submitted" / "kimalex_2005").exists() and graded_file.read_bytes() == nb + b"  "
    code, out, _ = run(capsys, "attempts", "kimalex_1005", "--course", course_dir)
    assert code == 0 and "3 attempt(s)" in out
    code, _, err = run(capsys, "roster", "alias", "kimalex_1005", "nobody", "--course", course_dir)
    assert code == 1 and "no student 'nobody'" in err
