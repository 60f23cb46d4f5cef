"""A grading run SIGKILLed part way, then run again, ends exactly like an uninterrupted run: every grade present
once, the scores a clean run gives (known per submission: the invariants), and what was already committed is not
graded again."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder import course
from autograder.engine import grade
from coursenb.chapters import select
from solutions.mistakes import apply, wrong_for
from tests import nbgrader_support as nbs

pytestmark = [pytest.mark.filterwarnings("ignore:Object of type"), pytest.mark.slow, pytest.mark.sandbox]
CHAPTER = select(["ch1"])[0]
STUDENTS = 8


def _committed(db: Path, cells: int) -> int:
    """Notebooks whose every graded cell has an auto score (read-only peek at the gradebook)."""
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as con:
            n = con.execute("SELECT COUNT(*) FROM grade WHERE auto_score IS NOT NULL").fetchone()[0]
    except sqlite3.Error:
        return 0
    return n // cells


def _scores(course_dir: Path) -> dict[tuple[str, str], float]:
    return {(s, g): v for s in _students(course_dir) for g, v in nbs.scores(course_dir, CHAPTER, s).items()}


def _students(course_dir: Path) -> list[str]:
    return sorted(p.name for p in (course_dir / "submitted").iterdir())


@pytest.fixture(scope="module")
def courses(tmp_path_factory) -> tuple[Path, dict[tuple[str, str], float]]:
    """A released course with the source, the untouched release and wrong implementations submitted, and the
    scores an uninterrupted run gives each cell: the source every point, the release none, each mistake all but
    the cells it loses (the invariants tests/equivalence/test_invariants_engine.py checks on a clean run)."""
    base = nbs.make_course(tmp_path_factory.mktemp("resume"), [CHAPTER.assignment])
    src = nbs.source_nb(CHAPTER, base)
    points = nbs.autograded_points(src)
    variants = [(src, points), (nbs.release_nb(CHAPTER, base), dict.fromkeys(points, 0.0))]
    variants += [(apply(src, w), {g: 0.0 if g in w.loses else p for g, p in points.items()})
                 for w in wrong_for(CHAPTER.assignment)]
    expected = {}
    for k in range(STUDENTS):
        nb, scores = variants[k % len(variants)]
        nbs.submit(base, CHAPTER, f"student{k}", nb)
        expected.update({(f"student{k}", g): v for g, v in scores.items()})
    return base, expected


def test_sigkill_then_resume_equals_a_clean_run(courses) -> None:
    interrupted, expected = courses
    cells = len(nbs.max_points(nbs.source_nb(CHAPTER, interrupted)))
    code = (f"from autograder.engine import grade; grade({str(interrupted)!r}, workers=2, progress=False, seed=7)")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=course.ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while _committed(interrupted / "gradebook.db", cells) < 3 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = _committed(interrupted / "gradebook.db", cells)
    assert 3 <= before < STUDENTS, f"the run was not interrupted part way ({before} of {STUDENTS} committed)"

    resumed = grade(interrupted, workers=2, progress=False)
    assert resumed.skipped >= before and resumed.graded + resumed.skipped == STUDENTS and resumed.failed == 0
    assert _scores(interrupted) == expected

    with sqlite3.connect(interrupted / "gradebook.db") as con:
        per_cell = con.execute("SELECT COUNT(*) FROM grade GROUP BY notebook_id, cell_id").fetchall()
        subs = con.execute("SELECT COUNT(*) FROM submitted_assignment GROUP BY student_id").fetchall()
    assert {n for (n,) in per_cell} == {1} and len(per_cell) == STUDENTS * cells
    assert {n for (n,) in subs} == {1} and len(subs) == STUDENTS
    again = grade(interrupted, workers=2, progress=False)  # nothing left: no worker is even started
    assert again.graded == 0 and again.skipped == STUDENTS and again.workers == 0
    print(f"\nresume: {before} of {STUDENTS} committed before SIGKILL; the rerun graded {resumed.graded}, "
          f"skipped {resumed.skipped}")
