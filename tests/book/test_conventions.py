"""One home for the notebook conventions (`coursenb.cells`), and every component agrees with nbgrader.

A test cell carries a hidden-test region marked in each way nbgrader's ClearHiddenTests
accepts (a line that *contains* the delimiter: `### BEGIN HIDDEN TESTS`, `## ...`, no
comment mark, trailing words, indentation). nbgrader's real release (`generate_assignment`)
decides what a student sees; the release transform, the engine's restore and feedback copy,
the feedback page's scrubbing and the book's student edition and leak audit must all agree.
"""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from autograder import course, feedback, gradebook
from autograder.engine import notebook as nbmod
from coursenb import cells
from publish import audit
from publish.editions import student_notebook

VISIBLE = "assert answer() == 1  # a visible test"
BEGINS = ["### BEGIN HIDDEN TESTS", "## BEGIN HIDDEN TESTS", "# BEGIN HIDDEN TESTS", "BEGIN HIDDEN TESTS",
          "    ### BEGIN HIDDEN TESTS", "#### BEGIN HIDDEN TESTS (keep this region)", "# BEGIN HIDDEN TESTS, do not edit"]
ENDS = ["### END HIDDEN TESTS", "## END HIDDEN TESTS", "# END HIDDEN TESTS", "END HIDDEN TESTS",
        "    ### END HIDDEN TESTS", "#### END HIDDEN TESTS (keep this region)", "# END HIDDEN TESTS, do not edit"]


def _cell(k: int, begin: str, end: str) -> nbformat.NotebookNode:
    source = "\n".join([VISIBLE, begin, f'secret_value_{k} = 40 + 2', f'hidden_check("ch1.secret_{k}", answer)', end,
                        f"after_region_{k} = True"])
    cell = nbformat.v4.new_code_cell(source, id=f"test-{k}")
    cell.metadata["nbgrader"] = {"schema_version": 3, "grade": True, "locked": True, "solution": False,
                                 "grade_id": f"test_{k}", "points": 1}
    return cell


def _notebook() -> nbformat.NotebookNode:
    solution = nbformat.v4.new_code_cell("def answer():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION",
                                         id="answer")
    solution.metadata["nbgrader"] = {"schema_version": 3, "grade": False, "locked": False, "solution": True,
                                     "grade_id": "answer"}
    cells_ = [solution] + [_cell(k, b, e) for k, (b, e) in enumerate(zip(BEGINS, ENDS))]
    nb = nbformat.v4.new_notebook(cells=cells_)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """grade_id -> the source nbgrader's own generate_assignment gives students."""
    course_dir = tmp_path_factory.mktemp("conventions")
    (course_dir / "nbgrader_config.py").write_text(course.config_text())
    dest = course_dir / "source" / "ch1" / "ch1_markers.ipynb"
    dest.parent.mkdir(parents=True)
    nbformat.write(_notebook(), str(dest))
    result = gradebook.api(course_dir).generate_assignment("ch1", force=True, create=True)
    assert result["success"], result.get("log")
    nb = nbformat.read(course_dir / "release" / "ch1" / "ch1_markers.ipynb", as_version=4)
    return {cells.grade_id(c): c.source for c in nb.cells}


def _expected(k: int) -> str:
    return "\n".join([VISIBLE, f"after_region_{k} = True"])


def test_nbgrader_strips_every_variant(released: dict[str, str]) -> None:
    for k in range(len(BEGINS)):
        assert released[f"test_{k}"] == _expected(k), (BEGINS[k], released[f"test_{k}"])


def test_the_conventions_module_agrees_with_nbgrader(released: dict[str, str]) -> None:
    for cell in _notebook().cells[1:]:
        gid = cells.grade_id(cell)
        assert cells.strip_hidden_tests(cell.source) == released[gid]
        assert cells.has_hidden_tests(cell.source)
        assert cells.hidden_check_names(cell.source) == [gid.replace("test_", "ch1.secret_")]
        assert {line.strip() for line in cells.hidden_tests(cell.source)} == \
            {f"secret_value_{gid[5:]} = 40 + 2", f'hidden_check("ch1.secret_{gid[5:]}", answer)'}


def test_release_transform_agrees_with_nbgrader(released: dict[str, str]) -> None:
    """The book's student edition and the course's release share `cells.release`."""
    for cell in student_notebook(_notebook()).cells:
        assert cell.source == released[cells.grade_id(cell)], cells.grade_id(cell)


def test_engine_feedback_copy_agrees_with_nbgrader(released: dict[str, str]) -> None:
    executed = _notebook()
    for cell in executed.cells[1:]:  # a traceback that quotes the hidden region, as IPython shows it
        cell.outputs = [nbformat.v4.new_output("error", ename="AssertionError", evalue="",
                                               traceback=[f"      {n} {line}" for n, line in
                                                          enumerate(cell.source.split("\n"), start=1)])]
    for cell in nbmod.for_feedback(executed).cells[1:]:
        gid = cells.grade_id(cell)
        assert cell.source == released[gid], gid
        shown = "\n".join(cell.outputs[0].traceback)
        assert "secret_value" not in shown and "hidden_check" not in shown and "BEGIN HIDDEN" not in shown, shown


def test_engine_restores_a_released_cell_without_a_note(released: dict[str, str]) -> None:
    """A student who submits the released test cell untouched did not change it."""
    source = _notebook()
    submission = nbformat.from_dict(source)
    for cell in submission.cells[1:]:
        cell.source = released[cells.grade_id(cell)]
    restored = nbmod.restore(submission, source)
    assert not [n for n in restored.notes if "was changed" in n], restored.notes
    assert [c.source for c in restored.nb.cells] == [c.source for c in source.cells], "hidden tests come back"


def test_feedback_scrub_agrees_with_nbgrader(released: dict[str, str]) -> None:
    for cell in _notebook().cells[1:]:
        gid = cells.grade_id(cell)
        assert feedback.scrub(cell.source, ["ch1.secret_0"]) == released[gid], gid


def test_book_audit_counts_every_variant_as_secret(released: dict[str, str]) -> None:
    nb = _notebook()
    secrets = audit.secrets(nb)
    for k in range(len(BEGINS)):
        assert f"secret_value_{k} = 40 + 2" in secrets, k
    public = audit.public_text([nb])
    assert "secret_value" not in public and " ".join(VISIBLE.split()) in public


def test_only_the_conventions_module_spells_the_delimiters() -> None:
    """No other module of the project writes a delimiter or the worked-solution tag itself."""
    root = Path(cells.__file__).resolve().parents[1]
    spelled = []
    for package in ("attnlab", "autograder", "coursenb", "publish", "solutions"):
        for path in (root / package).rglob("*.py"):
            if path == Path(cells.__file__).resolve():
                continue
            text = path.read_text()
            spelled += [f"{path.relative_to(root)}: {m!r}" for m in (*cells.MARKERS, cells.SOLUTIONS_ONLY, cells.ANSWER_OUTPUT)
                        if f'"{m}' in text or f"'{m}" in text or f"### {m}" in text]
    assert not spelled, spelled


def test_student_view_drops_solutions_only_cells_and_answer_outputs() -> None:
    nb = _notebook()
    demo = nbformat.v4.new_code_cell("plot(answer())", id="demo", metadata={"tags": [cells.ANSWER_OUTPUT]})
    demo.outputs = [nbformat.v4.new_output("stream", name="stdout", text="the reference's answer: 1\n")]
    kept = nbformat.v4.new_code_cell("print(2)", id="kept")
    kept.outputs = [nbformat.v4.new_output("stream", name="stdout", text="2\n")]
    worked = nbformat.v4.new_markdown_cell("The answer is 1.", id="worked", metadata={"tags": [cells.SOLUTIONS_ONLY]})
    nb.cells += [demo, kept, worked]
    view = {c.id: c for c in cells.student_view(nb).cells}
    assert "worked" not in view and view["demo"].outputs == [] and view["kept"].outputs == kept.outputs
    assert "demo" in {c.id for c in cells.release(nb).cells} and "worked" not in {c.id for c in cells.release(nb).cells}
