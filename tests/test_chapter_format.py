"""Every chapter notebook: no committed outputs, valid nbgrader schema 3, hidden checks that exist."""
from __future__ import annotations

import re

import nbformat
import pytest
from nbgrader.nbgraderformat.v3 import MetadataValidatorV3

from autograder import course
from autograder.checks import CHECKS

CHAPTERS = course.chapters()
HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", re.S)
CHECK_CALL = re.compile(r"""hidden_check\(\s*["']([\w.]+)["']""")


def _nb(chapter: course.Chapter) -> nbformat.NotebookNode:
    return nbformat.read(chapter.path, as_version=4)


def _grade_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if "nbgrader" in c.metadata]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.assignment)
def test_no_outputs_committed(chapter: course.Chapter) -> None:
    for k, cell in enumerate(_nb(chapter).cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"cell {k} of {chapter.path.name} carries outputs: clear them"
            assert cell.execution_count is None, f"cell {k} of {chapter.path.name} has an execution count"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.assignment)
def test_nbgrader_metadata_is_valid_schema_3(chapter: course.Chapter) -> None:
    nb = _nb(chapter)
    MetadataValidatorV3().validate_nb(nb)  # raises on any invalid cell
    ids = [c.metadata.nbgrader["grade_id"] for c in _grade_cells(nb)]
    assert len(ids) == len(set(ids)), f"duplicate grade_id in {chapter.path.name}"
    assert all(course.GRADE_ID.match(i) for i in ids)
    for cell in _grade_cells(nb):
        meta = cell.metadata.nbgrader
        assert meta["schema_version"] == 3
        if meta["solution"]:
            assert cell.source.count("### BEGIN SOLUTION") == cell.source.count("### END SOLUTION") >= 1
        if meta["grade"]:
            assert meta["locked"] and meta["points"] > 0
            assert not cell.source.rstrip().splitlines()[-1].startswith(("1", "2", "0.")), \
                "a test cell must not end in a number: nbgrader would read it as partial credit"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: c.assignment)
def test_every_test_cell_has_hidden_checks_that_exist(chapter: course.Chapter) -> None:
    for cell in _grade_cells(_nb(chapter)):
        if not cell.metadata.nbgrader["grade"]:
            continue
        hidden = HIDDEN.findall(cell.source)
        assert hidden, f"{cell.metadata.nbgrader['grade_id']} has no hidden tests"
        names = CHECK_CALL.findall("".join(hidden))
        assert names, f"{cell.metadata.nbgrader['grade_id']}: hidden tests call no hidden_check"
        for name in names:
            assert name in CHECKS, f"hidden_check({name!r}) is not in autograder.checks"
            assert name.startswith(chapter.assignment + "."), f"{name} belongs to another chapter"


def test_every_check_is_used_by_its_chapter() -> None:
    used = set()
    for chapter in CHAPTERS:
        used |= set(CHECK_CALL.findall("".join(c.source for c in _nb(chapter).cells)))
    present = {c.assignment for c in CHAPTERS}
    unused = {n for n in CHECKS if n.split(".")[0] in present} - used
    assert not unused, f"checks defined but never called: {sorted(unused)}"
