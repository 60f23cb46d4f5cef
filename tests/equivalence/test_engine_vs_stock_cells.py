"""On honest submissions the engine's grades equal stock `nbgrader autograde`, cell by cell (Chapter 1):
the source notebook, the untouched release, and every wrong implementation of solutions/mistakes."""
from __future__ import annotations

import json
import subprocess
import sys

import nbformat
import pytest

from autograder import course, gradebook
from coursenb.chapters import select
from solutions.mistakes import wrong_for
from tests import nbgrader_support as nbs
from tests.conftest import EveryChapter, StockRun

pytestmark = [pytest.mark.filterwarnings("ignore:Object of type"), pytest.mark.slow, pytest.mark.sandbox]
CHAPTER = select(["ch1"])[0]


@pytest.fixture(scope="module")
def graded(stock_chapter1: StockRun, every_chapter_graded: EveryChapter) -> dict:
    """Stock nbgrader's run (tests/conftest.py) and the engine's run of the same Chapter 1 submissions (the
    Chapter 1 part of every chapter's invariants, tests/equivalence/test_invariants_engine.py)."""
    if CHAPTER.assignment not in every_chapter_graded.scores:
        pytest.skip("ATTNLAB_CHAPTERS leaves Chapter 1 out of the engine's run")
    engine = {s: every_chapter_graded.scores[CHAPTER.assignment][s] for s in stock_chapter1.scores}
    return {"engine": engine, "stock": stock_chapter1.scores, "dirs": {"engine": every_chapter_graded.course},
            "points": stock_chapter1.points}


def test_every_cell_equals_stock_nbgrader(graded) -> None:
    differ = {(s, g): (graded["engine"][s][g], v) for s, cells in graded["stock"].items()
              for g, v in cells.items() if graded["engine"][s].get(g) != v}
    assert not differ, f"(student, cell): (engine, stock) {differ}"
    assert graded["engine"]["source"] == graded["points"]
    assert set(graded["engine"]["release"].values()) == {0.0}


def test_feedback_generates_from_the_autograded_notebooks(graded, tmp_path) -> None:
    """nbgrader's generate_feedback accepts what the engine wrote, and shows no hidden test."""
    course_dir = nbs.course_copy(graded["dirs"]["engine"], tmp_path / "course")  # the graded run is shared
    api = gradebook.api(course_dir)
    hidden = _hidden_only()
    for student in ("source", hidden):
        result = api.generate_feedback(CHAPTER.assignment, student, force=True)
        assert result["success"], result["log"][-2000:]
        html = (course_dir / "feedback" / student / CHAPTER.assignment / f"{CHAPTER.notebook}.html").read_text()
        assert "BEGIN HIDDEN TESTS" not in html and "hidden_check(" not in html
    wrong = (course_dir / "feedback" / hidden / CHAPTER.assignment / f"{CHAPTER.notebook}.html").read_text()
    assert "HiddenTestFailed" in wrong and "ch1.self_attention" in wrong  # why the cell lost its points


def _hidden_only() -> str:
    """The student whose self_attention passes the visible tests and fails the hidden check (a float32 scale)."""
    return next(f"wrong{k}" for k, w in enumerate(wrong_for(CHAPTER.assignment)) if "float32" in w.why)


def test_grading_log_explains_each_cell(graded) -> None:
    path = graded["dirs"]["engine"] / "autograded" / "wrong1" / CHAPTER.assignment / "grading_log.json"
    log = json.loads(path.read_text())["notebooks"][CHAPTER.notebook]
    cells = {c["grade_id"]: c for c in log["cells"]}
    assert set(cells) == set(graded["points"]) and log["max_score"] == sum(graded["points"].values())
    visible = cells["test_self_attention"]  # no 1/sqrt(K): the visible hand-checked example already fails
    assert not visible["passed"] and visible["failed_checks"] == [] and "raised" in visible["reason"]
    composed = cells["test_transformer"]  # judged over the student's own self_attention: one mistake, one cell
    assert composed["passed"] and composed["failed_checks"] == []
    path = graded["dirs"]["engine"] / "autograded" / _hidden_only() / CHAPTER.assignment / "grading_log.json"
    cells = {c["grade_id"]: c for c in json.loads(path.read_text())["notebooks"][CHAPTER.notebook]["cells"]}
    hidden = cells["test_self_attention"]  # a float32 scale: the visible tests pass, the hidden check does not
    assert not hidden["passed"] and hidden["failed_checks"] == ["ch1.self_attention"] and "differs" in hidden["reason"]
    assert cells["test_parallel_time_serial"]["passed"] and cells["test_parallel_time_serial"]["reason"] == "passed"
    assert log["execution_time"] > 0 and log["grading_time"] >= log["execution_time"]


def test_autograded_notebook_has_outputs_and_no_hidden_tests(graded) -> None:
    nb = nbformat.read(graded["dirs"]["engine"] / "autograded" / "source" / CHAPTER.assignment
                       / f"{CHAPTER.notebook}.ipynb", as_version=4)
    nbformat.validate(nb)
    assert any(o.output_type == "stream" for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert not any("BEGIN HIDDEN TESTS" in c.source for c in nb.cells)


def test_solutions_never_loaded_in_a_worker() -> None:
    """The zygote's stack, imported as the sandbox imports it (its own package, nothing else of the
    repository on the path), loads nothing of the instructor's; nor does the worker."""
    inside = course.ROOT / "autograder" / "engine"
    code = (f"import sys; sys.path.insert(0, {str(inside)!r}); from inside import zygote, runner; zygote.warm_up(); "
            "print('LOADED', zygote.leaked_modules())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/", timeout=600)
    assert "LOADED []" in out.stdout, out.stdout + out.stderr[-2000:]
    code = ("import sys, autograder.engine.worker, autograder.engine.driver; "
            "print('LOADED', sorted(m for m in sys.modules if m.split('.')[0] == 'solutions' or "
            "m.startswith(('autograder.judge', 'autograder.checks', 'torch'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=course.ROOT, timeout=600)
    assert "LOADED []" in out.stdout, out.stdout + out.stderr[-2000:]


FORKED_CHILD = """
import os, sys
sys.path.insert(0, {inside!r})
from inside import zygote
zygote.warm_up()
info = zygote.exercise()
assert not info["exercise_failures"], info
import torch
torch.set_num_threads(2)
tasks = len(os.listdir("/proc/self/task"))
pid = os.fork()
if pid == 0:
    Q = torch.ones(1, 8, 1024, 64)
    torch.nn.functional.scaled_dot_product_attention(Q, Q, Q)
    (torch.ones(1000, 1000) @ torch.ones(1000, 1000)).sum()
    os._exit(0)
print("CHILD", os.waitpid(pid, 0)[1], "TASKS", tasks)
"""


def test_a_child_forked_after_the_warm_up_computes_in_parallel() -> None:
    """The zygote's warm-up (torch's dispatcher, attention, a figure) starts no thread pool, so a
    child forked after it runs multi-threaded operations instead of waiting forever."""
    inside = str(course.ROOT / "autograder" / "engine")
    out = subprocess.run([sys.executable, "-c", FORKED_CHILD.format(inside=inside)], capture_output=True,
                         text=True, cwd="/", timeout=300)
    assert "CHILD 0" in out.stdout, out.stdout + out.stderr[-2000:]
