"""Every identifier pattern of the project, fed a trailing newline: no second "ada".

Python's `$` matches before a final newline too, so `re.match(r"^ada$", "ada\\n")` passes; each
identifier (a student id, an assignment, an LMS name, a grade id, a cell id, a chapter's file
name) is checked against the whole text (`fullmatch` or `\\Z`). Each check below goes through the
code that decides, not the pattern alone.
"""
from __future__ import annotations

import datetime as dt
import zipfile
from pathlib import Path, PurePosixPath

import nbformat
import pytest

from autograder import collect
from autograder.collect import layouts
from autograder.engine import notebook as nbmod
from coursenb import cells, chapters

NOTEBOOKS = {"ch1": ["ch1_parallel_time"]}
NB = "ch1_parallel_time"


def owner(path: str, pattern: str | None = None):
    entry = collect.Entry(path, PurePosixPath(path), b"", dt.datetime(2025, 1, 1, tzinfo=dt.UTC))
    return collect.owner_of(entry, collect.Context(NOTEBOOKS, dt.UTC, collect.compile_pattern(pattern)))


@pytest.mark.parametrize("path, pattern", [
    (f"ada\n/ch1/{NB}.ipynb", None),  # nbgrader's submitted/ layout
    (f"ada\n/{NB}.ipynb", None),  # a plain folder
    (f"hw-ada\n-{NB}.ipynb", r"hw-(?P<student_id>[^-]+)-(?P<file_id>.+)"),  # the instructor's pattern
    (f"Chapter 1_ada\n_attempt_2025-01-30-12-00-00_{NB}.ipynb", None),  # Blackboard
    (f"Ada\n_12_assignsubmission_file_/{NB}.ipynb", None),  # Moodle
    (f"ada\n_1001_1_{NB}.ipynb", None),  # Canvas
])
def test_a_trailing_newline_names_no_student(path, pattern) -> None:
    assert collect.is_student_id("ada") and not collect.is_student_id("ada\n")
    found = owner(path, pattern)
    assert not (isinstance(found, collect.Owner) and found.student != "ada"), found
    assert owner(path.replace("\n", ""), pattern).student in ("ada", "Ada".lower())  # without it: ada's


def test_an_assignment_folder_with_a_newline_is_no_assignment() -> None:
    assert layouts.is_assignment("ch1", NOTEBOOKS) and not layouts.is_assignment("ch1\n", NOTEBOOKS)
    assert not isinstance(owner(f"ada/ch1\n/{NB}.ipynb"), collect.Owner)


def test_a_second_ada_is_never_collected(tmp_path: Path) -> None:
    """`ada\\n/ch1/<notebook>` beside ada's own: one student ada, the other file a bad id (a second 'ada' in every
    export before)."""
    course_dir = tmp_path / "course"
    (course_dir / "source" / "ch1").mkdir(parents=True)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    nbformat.write(nb, course_dir / "source" / "ch1" / f"{NB}.ipynb")
    src = tmp_path / "layout.zip"
    with zipfile.ZipFile(src, "w") as zf:
        zf.writestr(f"ada/ch1/{NB}.ipynb", nbformat.writes(nb))
        zf.writestr(f"ada\n/ch1/{NB}.ipynb", nbformat.writes(nb))
    result = collect.collect(course_dir, [src])
    assert sorted(p.name for p in (course_dir / "submitted").iterdir()) == ["ada"]
    assert list(result.students) == ["ada"] and any("bad student id 'ada\\n'" in r for _, r in result.problems)


def test_grade_ids_cell_ids_and_chapter_files_are_whole() -> None:
    assert cells.GRADE_ID.fullmatch("test_attention") and not cells.GRADE_ID.fullmatch("test_attention\n")
    assert chapters.is_chapter_source(chapters.CHAPTERS / "ch1_parallel_time.py")
    assert not chapters.is_chapter_source(chapters.CHAPTERS / "ch1_parallel_time.py\n")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("y = 2")])
    nb.cells[0].id, nb.cells[1].id = "kept", "newline\n"
    nbmod._unique_ids(nb)
    assert [c.id for c in nb.cells] == ["kept", "cell-1"]
