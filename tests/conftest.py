"""Fixtures shared by several test modules, built once per test run, and the order files are dealt out in.

pytest-xdist (`-n <cores, 2 to 4> --dist loadfile --no-loadscope-reorder`, scripts/test.sh) gives each worker whole
files, in the order collected here: files with `slow` tests first (those with browser tests, which read the built
book, last of them), then the chapters' notebooks (nbval), then the rest, so the long work starts early and the
short files fill the end. A session fixture that several files read (stock nbgrader's run, every chapter graded, the
example class graded) is built once per run by whichever worker asks first, under a lock (the pattern of pytest-
xdist's documentation, "Making session-scoped fixtures execute only once"); a worker that asks meanwhile waits, and
those builds use both cores while it waits. What they build is shared: read it, or copy it (`nbs.course_copy`) to
change it. The built book is shared the same way by publish.build (a lock and a cache on disk).
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

from coursenb.chapters import Chapter, select
from solutions.mistakes import apply, wrong_for
from tests import nbgrader_support as nbs
from tests.adversarial import attacks_for
from tests.adversarial import build as build_attack
from tests.adversarial import context as attack_context
from tests.adversarial import expected as expected_of

# ----------------------------------------------------------------------------- threads

def pytest_configure(config: pytest.Config) -> None:
    """Each pytest-xdist worker's torch takes its share of the cores (one each: 2 workers on 2 cores): with
    every worker's operations spread over all the cores, they waited for each other's time slices
    (tests/checks/test_references_pass_their_checks.py took 91.6 s on a loaded machine, 14.2 s on one thread)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if workers > 1:
        import torch

        torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))


# ----------------------------------------------------------------------------- order of files

def _file_rank(item: pytest.Item, slow_files: set[str], browser_files: set[str]) -> int:
    """0: a file with slow tests; 1: one with slow browser tests, which read the built book (started first, by
    tests/book/test_book.py: the other worker has other long files to run meanwhile, not a book to wait for);
    2: a chapter's notebook under nbval; 3: the rest."""
    path = item.nodeid.split("::")[0]
    if path in slow_files:
        return 1 if path in browser_files else 0
    return 2 if path.endswith(".ipynb") else 3


BOOK_FIXTURES = ("editions",)  # fixtures that build the book: a test that asks for one is in the full lane only


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Long files first (a stable sort: the items of a file keep their order, a notebook's cells theirs); a test
    that asks for a fixture of BOOK_FIXTURES without the `slow` mark is an error (it would build the book in the
    fast lane)."""
    unmarked = [item.nodeid for item in items if set(BOOK_FIXTURES) & set(getattr(item, "fixturenames", ()))
                and not item.get_closest_marker("slow")]
    if unmarked:
        raise pytest.UsageError("tests that build the book without the slow mark: " + ", ".join(unmarked))
    slow_files = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("slow")}
    browser_files = {item.nodeid.split("::")[0] for item in items if item.get_closest_marker("browser")}
    items.sort(key=lambda item: _file_rank(item, slow_files, browser_files))


# ----------------------------------------------------------------------------- built once per run

def shared(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], dict]) -> tuple[Path, dict]:
    """`build(folder)` once per test run, in the first worker that asks (the others wait for it): the folder and
    what `build` returned (JSON). A build that failed fails every test that asks for it, with its traceback."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's folder, above each worker's own
    folder, record = base / name, base / f"{name}.json"
    with (base / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not record.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            try:
                result = {"value": build(folder)}
            except BaseException:
                result = {"error": traceback.format_exc()}
            record.write_text(json.dumps(result))
    result = json.loads(record.read_text())
    if "error" in result:
        pytest.fail(f"building {name} failed:\n{result['error']}", pytrace=False)
    return folder, result["value"]


class StockRun(NamedTuple):
    """Chapter 1 released, with the source, the untouched release and every wrong implementation submitted
    (`base`, never graded), and their scores under stock `nbgrader autograde` ({student: {grade_id: score}})."""

    chapter: Chapter
    base: Path
    points: dict[str, float]
    scores: dict[str, dict[str, float | None]]


@pytest.fixture(scope="session")
def stock_chapter1(tmp_path_factory) -> StockRun:
    """Stock nbgrader pays a kernel start and `import torch` per notebook (~4 s idle, ~20 s on a loaded CI
    machine): the invariants under stock nbgrader and the engine's equality with it share one such run."""
    chapter = select(["ch1"])[0]

    def build(folder: Path) -> dict:
        base = nbs.make_course(folder / "base", [chapter.assignment])
        src = nbs.source_nb(chapter, base)
        subs = {"source": src, "release": nbs.release_nb(chapter, base)}
        subs.update({f"wrong{k}": apply(src, w) for k, w in enumerate(wrong_for(chapter.assignment))})
        for student, nb in subs.items():
            nbs.submit(base, chapter, student, nb)
        return {"points": nbs.max_points(src), "scores": nbs.autograde_stock_many(base, chapter, list(subs))}

    folder, run = shared(tmp_path_factory, "stock_chapter1", build)
    return StockRun(chapter, folder / "base", run["points"], run["scores"])


class EveryChapter(NamedTuple):
    """Every chapter released in one course; for each, the source, the untouched release and each wrong
    implementation submitted (students `source`, `release`, `wrong<k>`), and beside them the chapter's attacks of
    tests/adversarial but Chapter 1's (which have their own batch, tests/security/test_engine_attacks.py; students
    named as the attacks), graded by the engine in one run."""

    course: Path
    expected: dict[str, dict[str, dict[str, float]]]  # {assignment: {student: {grade_id: points}}}
    scores: dict[str, dict[str, dict[str, float | None]]]  # the gradebook's, same keys
    graded: int
    failed: int
    manual: dict[str, tuple[set[str], set[str]]]  # {assignment: (its manual cells, those the source waits on)}


def invariant_chapters() -> list[Chapter]:
    """Every chapter, or those ATTNLAB_CHAPTERS names ("ch1 ch3": after a change to those chapters' mistakes)."""
    return select(os.environ.get("ATTNLAB_CHAPTERS", "").split() or None)


@pytest.fixture(scope="session")
def every_chapter_graded(tmp_path_factory) -> EveryChapter:
    """The engine's run over every chapter's invariants (tests/equivalence/test_invariants_engine.py), whose Chapter 1 part is also
    compared with stock nbgrader (tests/equivalence/test_engine_vs_stock_cells.py), and the attacks graded beside them
    (tests/security/test_engine_attacks.py)."""
    from autograder.engine import grade

    chapters = invariant_chapters()

    def build(folder: Path) -> dict:
        course_dir = nbs.make_course(folder / "course", [c.assignment for c in chapters])
        expected: dict[str, dict[str, dict[str, float]]] = {}
        for chapter in chapters:
            src = nbs.source_nb(chapter, course_dir)
            points = nbs.autograded_points(src)
            subs = {"source": (src, points), "release": (nbs.release_nb(chapter, course_dir), dict.fromkeys(points, 0.0))}
            for k, wrong in enumerate(wrong_for(chapter.assignment)):
                subs[f"wrong{k}"] = (apply(src, wrong), {g: (0.0 if g in wrong.loses else p) for g, p in points.items()})
            for attack in attacks_for(chapter.assignment) if chapter.assignment != "ch1" else []:
                subs[attack.name] = (build_attack(attack, src, attack_context(chapter.assignment, course_dir)),
                                     expected_of(points, attack))
            for student, (nb, _) in subs.items():
                nbs.submit(course_dir, chapter, student, nb)
            expected[chapter.assignment] = {student: want for student, (_, want) in subs.items()}
        summary = grade(course_dir, workers=2, progress=False)
        scores = {ch.assignment: {s: nbs.scores(course_dir, ch, s) for s in expected[ch.assignment]} for ch in chapters}
        manual = {ch.assignment: [sorted(nbs.manual_cells(nbs.source_nb(ch, course_dir))),
                                  sorted(nbs.needs_manual_grade(course_dir, ch, "source"))] for ch in chapters}
        return {"expected": expected, "scores": scores, "graded": summary.graded, "failed": summary.failed,
                "manual": manual}

    folder, run = shared(tmp_path_factory, "every_chapter_graded", build)
    return EveryChapter(folder / "course", run["expected"], run["scores"], run["graded"], run["failed"],
                        {a: (set(cells), set(waiting)) for a, (cells, waiting) in run["manual"].items()})


class ExampleClass(NamedTuple):
    """Chapter 1's example class (tests/instructor/test_example_class.py, tests/equivalence/test_example_class_vs_stock.py)."""

    collected: Path  # the course as collected, before grading (a copy)
    course: Path  # the same, graded: prose answers scored through manual export and import, feedback written


@pytest.fixture(scope="session")
def example_class(tmp_path_factory) -> ExampleClass:
    """Chapter 1 released with a due date, a late policy and the prose question; the example class collected
    (niklaus's truncated notebook left out: test_example_class grades it on its own), graded through the CLI,
    the prose answers graded by a scripted instructor through manual export and import, feedback written."""
    from autograder import cli, example_class

    def run(*argv: str | Path) -> None:
        assert cli.main([str(a) for a in argv]) == 0, f"autograder {' '.join(map(str, argv))} failed"

    def build(folder: Path) -> dict:
        course_dir, zip_path = folder / "course", folder / "class.zip"
        run("release", "--chapters", "ch1", "--course", course_dir)
        run("deadlines", "--due", "2025-01-31 23:00", "--late", "per-day", "--per-day", "10%", "--cap", "50%",
            "--grace", "15", "--course", course_dir)
        run("example-class", "--chapters", "ch1", "--add-prose-question", "--zip", zip_path, "--course", course_dir)
        run("collect", zip_path, "--course", course_dir)
        shutil.rmtree(course_dir / "submitted" / "niklaus")
        nbs.course_copy(course_dir, folder / "collected")
        run("grade", "--quiet", "--workers", "2", "--course", course_dir)
        run("manual", "export", "--course", course_dir)
        example_class.grade_prose(course_dir / "manual" / "manual_grades.csv", folder / "filled.csv")
        run("manual", "import", folder / "filled.csv", "--course", course_dir)
        run("feedback", "--course", course_dir)
        return {}

    folder, _ = shared(tmp_path_factory, "example_class", build)
    return ExampleClass(folder / "collected", folder / "course")
