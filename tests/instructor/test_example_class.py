"""The example class end to end through the CLI and the grading engine (Chapter 1): a late student with the
policy applied, a renamed notebook placed by content, a prose answer graded through manual export and import,
the copied pair ranked first by the similarity report, feedback that leads with a syntax error, a regrade that
keeps the earlier log, and a gradebook that says what could not be placed."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from autograder import cli, gradinglog
from coursenb import cells
from coursenb.chapters import select
from tests import nbgrader_support as nbs
from tests.conftest import ExampleClass

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:Object of type"), pytest.mark.sandbox]
NB = "ch1_parallel_time"
# What Chapter 1's cells are worth today (a chapter may gain a question) and the prose question the example adds.
POINTS = {cells.grade_id(c): cells.points(c) for c in select(["ch1"])[0].read().cells if cells.is_graded(c)}
AUTO = sum(POINTS.values())
PROSE = 2.0
FULL = AUTO + PROSE


def num(x: float) -> str:
    """A score as the gradebook prints it."""
    return f"{round(x, 2):g}"


def run(capsys, *argv) -> str:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 0, err[-3000:]
    return out


@pytest.fixture(scope="module")
def graded(example_class: ExampleClass, tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """Chapter 1 released with a due date, a late policy and the prose question; the example class collected and
    graded (tests/conftest.py: graded once per run), copied here, since these tests grade and write in it.
    niklaus's truncated notebook is graded on its own (test_engine_records_a_bad_file_beside_a_manual_cell)."""
    return nbs.course_copy(example_class.course, tmp_path_factory.mktemp("example") / "course"), {}


def test_the_gradebook_shows_late_work_manual_grades_and_files_not_placed(capsys, graded) -> None:
    course_dir, _ = graded
    out = run(capsys, "gradebook", "--course", course_dir)
    rows = {line.split()[0]: line.split()[1:] for line in out.split("\n\n")[0].splitlines()[3:] if line.strip()}
    assert rows["ada"][:2] == [num(FULL), num(FULL)]  # every autograded cell + the prose answer
    assert rows["alan"][0] == num(FULL - POINTS["test_self_attention"] - PROSE / 2)  # one mistake, a half-credit answer
    assert rows["grace"][0] == num(0.8 * FULL) + "L"  # full marks, two started days late: 20% of them
    assert rows["linus"][0] == num(FULL)  # renamed, placed by content, graded in full
    assert rows["ken"][0] == "-" and "not a notebook" in " ".join(rows["ken"])
    assert re.search(rf"grace\s+ch1\s+2 d late\s+{num(FULL)}\s+-{num(0.2 * FULL)}\s+{num(0.8 * FULL)}", out)


def test_the_copied_pair_is_ranked_first(capsys, graded) -> None:
    course_dir, _ = graded
    out = run(capsys, "similarity", "--course", course_dir)
    first = next(line for line in out.splitlines() if line.startswith("ch1") and line.split()[1] == "1")
    assert sorted(first.split()[2:4]) == ["hedy", "tim"]
    grades = run(capsys, "gradebook", "--course", course_dir)
    assert re.search(rf"hedy\s+{num(FULL)}\s", grades) and re.search(rf"tim\s+{num(FULL)}\s", grades)  # copying is not a wrong answer


def test_feedback_leads_with_the_syntax_error_and_shows_comments(graded) -> None:
    course_dir, _ = graded
    frances = (course_dir / "feedback" / "frances" / "ch1" / f"{NB}.html").read_text()
    lead = frances[frances.index("The first error in your notebook"):]
    assert "SyntaxError" in lead[:400] and frances.index("SyntaxError") < frances.index("NameError")
    alan = (course_dir / "feedback" / "alan" / "ch1" / f"{NB}.html").read_text()
    assert "Which operation has to wait for many inputs?" in alan and "<script" not in alan
    barbara = (course_dir / "feedback" / "barbara" / "ch1" / f"{NB}.html").read_text()
    assert "costs L*T with serial sums" in barbara  # literal, no Markdown italics
    grace = (course_dir / "feedback" / "grace" / "ch1" / f"{NB}.html").read_text()
    assert f"late penalty &minus;{num(0.2 * FULL)}" in grace


def test_the_report_counts_every_failure(capsys, graded) -> None:
    course_dir, _ = graded
    out = run(capsys, "report", "--course", course_dir)
    cells = out[out.index("where points were lost"):]
    # self_attention: alan (mistake), edsger (untouched), donald? (half done: answered), frances (syntax), john
    # (crash), margaret (os._exit): every one of them counted, hidden check or not (12 graded: ken placed nothing,
    # niklaus is left out)
    row = re.search(r"ch1\s+test_self_attention\s+4\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", cells)
    graded_n, lost, hidden, visible, stopped = map(int, row.groups())
    assert graded_n == 12 and lost >= 5 and hidden + visible + stopped == lost and visible >= 3
    checks = out[out.index("hidden checks failed most often"):]
    check = re.search(r"ch1.self_attention\s+test_self_attention\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", checks)
    assert tuple(map(int, check.groups())) == (12, lost, hidden, lost - hidden)  # every failure counts for the check
    # a hand-graded answer lost its points to the grader's judgement, in the grader's words (issue 33.5)
    assert "no grading log" not in out and "graded by hand: Which operation has to wait for many inputs?" in out


def test_no_page_shows_authoring_markup_or_styles_itself(graded) -> None:
    """Issue 33.5 and 32.4: the students' feedback pages and the TA's manual-grading pages carry none of the chapters'
    authoring comments (on main: `<!-- claim: ... -->`, `<!-- given -->` as text on every page), and every page's
    only style is its own stylesheet."""
    from tests.adversarial.outputs import page_problems

    course_dir, _ = graded
    pages = sorted((course_dir / "feedback").glob("*/*/*.html")) + sorted((course_dir / "manual").glob("*.html"))
    assert len(pages) >= 12
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert "<!--" not in text and "&lt;!--" not in text, page
        assert page_problems(text) == [], page


def test_a_forced_regrade_of_one_student_keeps_the_earlier_log(capsys, graded) -> None:
    course_dir, _ = graded
    before = gradinglog.read(course_dir / "autograded" / "ada" / "ch1", NB)
    out = run(capsys, "grade", "--student", "ada", "--assignment", "ch1", "--force", "--quiet", "--course", course_dir)
    auto = f"{num(AUTO)}/{num(AUTO)}"
    assert "graded 1 notebook(s)" in out and re.search(rf"ada\s+ch1_parallel_time\s+{auto} .*{auto}\s+same", out)
    history = gradinglog.history(course_dir / "autograded" / "ada" / "ch1", NB)
    assert history and history[-1].graded_at == before.graded_at
    rows = {line.split()[0]: line.split()[1:] for line in run(capsys, "gradebook", "--course", course_dir)
            .split("\n\n")[0].splitlines()[3:] if line.strip()}
    assert rows["ada"][0] == num(FULL)  # the manual score survives the regrade


def test_engine_records_a_bad_file_beside_a_manual_cell(capsys, graded, tmp_path) -> None:
    course_dir, _ = graded
    (course_dir / "submitted" / "niklaus" / "ch1").mkdir(parents=True, exist_ok=True)
    (course_dir / "submitted" / "niklaus" / "ch1" / f"{NB}.ipynb").write_text('{"cells": [')
    try:
        assert cli.main(["grade", "--student", "niklaus", "--quiet", "--course", str(course_dir)]) == 0
        capsys.readouterr()  # grade's own output: the gradebook below is read on its own
        log = gradinglog.read(course_dir / "autograded" / "niklaus" / "ch1", NB)
        assert log.score == 0 and "could not be read" in (log.error or "")
        rows = [line for line in run(capsys, "gradebook", "--course", course_dir).split("\n\n")[0].splitlines()
                if line.startswith("niklaus ")]
        assert rows and "ch1: the submitted" in rows[0] and "could not be read" in rows[0]  # not a bare 0
        run(capsys, "feedback", "--student", "niklaus", "--course", course_dir)
        page = (course_dir / "feedback" / "niklaus" / "ch1" / f"{NB}.html").read_text()
        assert "could not be read" in page and "submit that file again" in page and "NotGraded" not in page
    finally:
        shutil.rmtree(course_dir / "submitted" / "niklaus")


def test_a_notebook_with_a_manual_answer_is_not_graded_again(capsys, graded) -> None:
    course_dir, _ = graded
    out = run(capsys, "grade", "--student", "ada", "--quiet", "--course", course_dir)
    assert "graded 0 notebook(s), skipped 1 already graded" in out
    rows = {line.split()[0]: line.split()[1:] for line in run(capsys, "gradebook", "--course", course_dir)
            .split("\n\n")[0].splitlines()[3:] if line.strip()}
    assert rows["ada"][0] == num(FULL)  # the manual score is kept
