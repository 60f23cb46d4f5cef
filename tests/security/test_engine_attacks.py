"""Every attack in tests/adversarial gets exactly its expected scores, in ONE batch with honest students
whose grades must come out exact; the gradebook stays consistent and no secret leaks into feedback.

The grader runs with secrets in its environment (a database URL, an LMS token) and another
checkout of the course (with solutions/) beside this one under /tmp. Runs as root or not
(bubblewrap in a user namespace); docs/security.md says what differs.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
from pathlib import Path

import nbformat
import pytest

from autograder import course
from autograder.engine import Limits, grade
from coursenb.chapters import select
from solutions.mistakes import apply, wrong_for
from tests import nbgrader_support as nbs
from tests.adversarial import attacks_for, build, context, expected
from tests.conftest import EveryChapter, invariant_chapters

pytestmark = [pytest.mark.filterwarnings("ignore:Object of type"), pytest.mark.slow, pytest.mark.sandbox]
CHAPTER = select(["ch1"])[0]
ATTACKS = attacks_for("ch1")
# A fork bomb's or a CPU hog's cell is charged the CPU time of all its processes (over its one thread): it is stopped
# at its 8 s (+ 2 s grace) of CPU, a few seconds of wall time on 2 cores, not at the wall-clock cap. wall_factor 5
# bounds what the CPU clock cannot see, (8 + 2) x 5 = 50 s; an honest notebook of this batch takes under 1 s to run
# and judge, and no cell of one that ends by itself took over 2 s, at load ~12.
LIMITS = Limits(cell_seconds=8, grace_seconds=2, notebook_seconds=120, wall_factor=5, memory_mb=1024, procs=64,
                disk_mb=64, judge_seconds=5)


def _place(course_dir: Path, student: str, sub: nbformat.NotebookNode | bytes) -> None:
    if isinstance(sub, bytes):
        dest = course_dir / "submitted" / student / CHAPTER.assignment / f"{CHAPTER.notebook}.ipynb"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(sub)
    else:
        nbs.submit(course_dir, CHAPTER, student, sub)


@pytest.fixture(scope="module")
def batch(tmp_path_factory) -> dict:
    """The course graded once: honest students and every attack, two workers."""
    course_dir = nbs.make_course(tmp_path_factory.mktemp("adversarial"), [CHAPTER.assignment])
    src = nbs.source_nb(CHAPTER, course_dir)
    points = nbs.max_points(src)
    honest = {"honest_source": {g: p for g, p in points.items()},
              "honest_release": {g: 0.0 for g in points}}
    _place(course_dir, "honest_source", src)
    _place(course_dir, "honest_release", nbs.release_nb(CHAPTER, course_dir))
    for k, wrong in enumerate(wrong_for(CHAPTER.assignment)[:3]):
        honest[f"honest_wrong{k}"] = {g: 0.0 if g in wrong.loses else p for g, p in points.items()}
        _place(course_dir, f"honest_wrong{k}", apply(src, wrong))
    other = _other_checkout(tmp_path_factory.mktemp("other_checkout"))
    ctx = context("ch1", course_dir, other)
    for attack in ATTACKS:
        _place(course_dir, attack.name, build(attack, src, ctx))
    canaries = {"GRADER_DB_URL": f"postgresql://grader:CANARY{secrets.token_hex(16)}@db.example/course",
                "LMS_TOKEN": f"CANARY{secrets.token_hex(16)}"}
    saved = {k: os.environ.get(k) for k in canaries}
    os.environ.update(canaries)
    try:
        summary = grade(course_dir, workers=2, progress=False, limits=LIMITS, seed=1234)
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    return {"dir": course_dir, "points": points, "honest": honest, "summary": summary,
            "root": os.geteuid() == 0}


def _other_checkout(folder: Path) -> Path:
    """Another copy of the course beside this one (as a second engineer's checkout would be)."""
    shutil.copytree(course.ROOT / "solutions", folder / "solutions")
    shutil.copytree(course.ROOT / "solutions", folder / ".venv" / "lib" / "python3.11" / "site-packages" / "solutions")
    (folder / ".git").mkdir()
    (folder / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return folder


def _evidence(course_dir: Path, student: str, chapter=CHAPTER) -> str:
    """What the grader and the run said of the student's notebook: the grading log and the autograded notebook's
    outputs, never its sources (an attack's own code may spell the words its feedback is checked for)."""
    folder = course_dir / "autograded" / student / chapter.assignment
    nb = nbformat.read(folder / f"{chapter.notebook}.ipynb", as_version=4)
    outputs = [json.dumps(c.get("outputs", [])) for c in nb.cells if c.cell_type == "code"]
    return (folder / "grading_log.json").read_text() + "\n".join(outputs)


def test_honest_students_are_exact(batch) -> None:
    for student, want in batch["honest"].items():
        assert nbs.scores(batch["dir"], CHAPTER, student) == want, student


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.name)
def test_attack_gets_the_right_score(batch, attack) -> None:
    got = nbs.scores(batch["dir"], CHAPTER, attack.name)
    assert got == expected(batch["points"], attack), f"{attack.name}: {attack.why}"
    evidence = _evidence(batch["dir"], attack.name)
    assert attack.feedback.lower() in evidence.lower(), f"{attack.name}: no {attack.feedback!r} in its feedback"
    assert "LEAKED" not in evidence and "NETWORK OPEN" not in evidence


def test_gradebook_is_consistent(batch) -> None:
    from nbgrader.api import Gradebook

    students = set(batch["honest"]) | {a.name for a in ATTACKS}
    with Gradebook(f"sqlite:///{batch['dir'] / 'gradebook.db'}", course_id=course.COURSE_ID) as gb:
        assert {s.id for s in gb.students} == students
        for student in students:
            sub = gb.find_submission(CHAPTER.assignment, student)
            assert len(sub.notebooks) == 1
            grades = {g.name: g for g in sub.notebooks[0].grades}
            assert set(grades) == set(batch["points"])
            for name, g in grades.items():
                assert g.auto_score is not None and not g.needs_manual_grade, (student, name)
                assert g.max_score == batch["points"][name] and 0 <= g.auto_score <= g.max_score


def test_feedback_never_shows_hidden_tests(batch) -> None:
    for path in (batch["dir"] / "autograded").glob("*/ch1/*.ipynb"):
        assert "BEGIN HIDDEN TESTS" not in path.read_text(), path
        nbformat.validate(nbformat.read(path, as_version=4))


def test_the_batch_reports_its_isolation(batch) -> None:
    summary = batch["summary"]
    assert summary.graded == len(batch["honest"]) + len(ATTACKS) and summary.failed == 0
    iso = summary.isolation
    assert iso["network"].startswith("none") and iso["files"].startswith("allowlist") and "seccomp" in iso["syscalls"]
    assert ("unprivileged" if batch["root"] else "user namespace") in iso["user"]
    for path in (batch["dir"] / "autograded").glob("*/ch1/grading_log.json"):  # the worker's report, never a child's
        sandbox = json.loads(path.read_text())["notebooks"][CHAPTER.notebook]["sandbox"]
        assert not sandbox or sandbox["network"].startswith("none"), path
    log = json.loads((batch["dir"] / "autograded" / "honest_source" / "ch1" / "grading_log.json").read_text())
    assert log["notebooks"][CHAPTER.notebook]["score"] == sum(batch["points"].values())


# ------------------------------- the equation judge (Chapter 3), the private parts (Chapter 4), the drawn sizes (Chapter 7)

@pytest.mark.parametrize("assignment", [c.assignment for c in invariant_chapters()
                                        if c.assignment != "ch1" and attacks_for(c.assignment)])
def test_chapter_attacks_get_the_right_score_beside_exact_honest_students(every_chapter_graded: EveryChapter,
                                                                          assignment: str) -> None:
    """Chapter 3: an equation too large to judge. Chapter 4: a head swapped after its test, a trainer redefined, and
    a head that searches its process for the trials' private parts (none reaches it: full marks). Chapter 7: functions
    right only up to the public sizes (T <= 16). Graded in the batch of every chapter's invariants (tests/conftest.py),
    whose honest students (the source, the release, each mistake) come out exact (tests/equivalence/)."""
    run, chapter = every_chapter_graded, select([assignment])[0]

    def autograded(student: str) -> tuple[dict, dict]:  # (got, wanted) of the autograded cells (prose waits)
        want = run.expected[assignment][student]
        return {g: v for g, v in run.scores[assignment][student].items() if g in want}, want

    got, want = autograded("source")
    assert got == want
    for attack in attacks_for(assignment):
        got, want = autograded(attack.name)
        assert got == want, f"{attack.name}: {attack.why}"
        evidence = _evidence(run.course, attack.name, chapter)
        assert attack.feedback.lower() in evidence.lower(), f"{attack.name}: no {attack.feedback!r} in its feedback"
