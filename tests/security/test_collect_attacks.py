"""`autograder collect` against the attacks of tests/adversarial/collect.py: ownership and memory.

Each ownership attack puts mallory's upload, naming ada (who submitted honestly in the same
batch) and grace (who never submitted), in one source: ada's notebook must be placed exactly,
nothing created for grace, and mallory's files named as problems. The memory attack collects
nested zip bombs in a process whose address space is bounded, and measures its peak.
"""
from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest

from autograder import collect, course
from autograder.collect import layouts
from autograder.collect.sources import Entry
from coursenb.chapters import select
from tests import nbgrader_support as nbs
from tests.adversarial import collect as attacks
from tests.instructor import test_collect

CHAPTER = select(["ch1"])[0]
NB = CHAPTER.notebook

course_dir = test_collect.course_dir  # a Chapter-1 course (config, source, release), one per module
release = test_collect.release_bytes


def placed(course_dir: Path) -> dict[str, bytes]:
    root = course_dir / "submitted"
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.ipynb"))} if root.is_dir() else {}


@pytest.mark.parametrize("attack", attacks.OWNERSHIP, ids=lambda a: a.name)
def test_a_students_own_upload_never_owns_anothers_file(attack, course_dir, tmp_path) -> None:
    course_dir = nbs.course_copy(course_dir, tmp_path / "course")
    src = attack.build(tmp_path, NB, release(course_dir))
    result = collect.collect(course_dir, [src])
    ada = next(p for p, _ in result.placed if p.notebook == NB and "ada" in p.student.lower())
    assert placed(course_dir) == {f"{ada.student}/ch1/{NB}.ipynb": attacks.honest(release(course_dir))}, attack.why
    assert not any("grace" in p.student for p, _ in result.placed)
    refused = [reason for origin, reason in result.problems if "mallory" in origin.lower()]
    assert len(refused) == 2 and all("named like" in r and "mallory" in r.lower() for r in refused), result.problems
    _, unplaced = collect.Manifest.read(course_dir)
    assert sorted(u.student.lower() for u in unplaced if u.student) == ["mallory", "mallory"]


def test_a_name_with_digits_never_shifts_the_canvas_ids(course_dir, tmp_path) -> None:
    course_dir = nbs.course_copy(course_dir, tmp_path / "course")
    result = collect.collect(course_dir, [attacks.canvas_name_shift(tmp_path, NB, release(course_dir))])
    assert placed(course_dir) == {f"ada/ch1/{NB}.ipynb": attacks.honest(release(course_dir))}
    assert [r for o, r in result.problems if "1066" in o] == [next(r for _, r in result.problems if "ambiguous" in r)]


def test_a_name_that_two_lms_layouts_read_differently_is_not_placed(course_dir, tmp_path) -> None:
    course_dir = nbs.course_copy(course_dir, tmp_path / "course")
    result = collect.collect(course_dir, [attacks.lms_name_as_another(tmp_path, NB, release(course_dir))])
    assert placed(course_dir) == {f"ada/ch1/{NB}.ipynb": attacks.honest(release(course_dir))}
    refused = [r for o, r in result.problems if "mallory" in o]
    assert len(refused) == 2 and all(r.startswith("ambiguous name") for r in refused), result.problems


def test_a_blackboard_file_name_never_backdates_its_upload() -> None:
    """mallory's own file named `mallory_attempt_<earlier time>_<notebook>`: the time is Blackboard's, the first."""
    name = f"ch1_mallory_attempt_2025-01-31-00-00-00_mallory_attempt_2025-01-01-00-00-00_{NB}.ipynb"
    owner = layouts.owner_of(Entry(name, PurePosixPath(name), b"", None), layouts.Context({"ch1": [NB]}))
    assert (owner.student, owner.timestamp) == ("mallory", dt.datetime(2025, 1, 31, tzinfo=dt.UTC))


LIMIT = 1536  # MiB of address space for the collect: the attack inflates 2.3 GiB of notebooks that fit every file cap
BOUND = 400  # MiB of peak memory the collect may reach (one member at a time; the interpreter and nbformat ~100)


def test_nested_zip_bombs_cost_bounded_memory_and_honest_uploads_are_placed(course_dir, tmp_path) -> None:
    """Two students' zips of 24 notebooks, each inflating to 48 MiB (under the 64 MiB per-file cap): collect reads
    each upload to its cap, holds one file at a time, and places ada's and alan's notebooks."""
    course_dir = nbs.course_copy(course_dir, tmp_path / "course")
    src = attacks.bombs(tmp_path, NB, release(course_dir))
    code = f"""
import resource
resource.setrlimit(resource.RLIMIT_AS, ({LIMIT} << 20, {LIMIT} << 20))
from pathlib import Path
from autograder import collect
r = collect.collect(Path({str(course_dir)!r}), [Path({str(src)!r})])
print('PEAK', next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')))
for origin, reason in r.problems: print("PROBLEM", origin, reason)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=course.ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    peak_mib = int(next(line.split()[1] for line in proc.stdout.splitlines() if line.startswith("PEAK"))) >> 10
    assert peak_mib < BOUND, f"peak memory {peak_mib} MiB"
    assert "MiB inflated from this zip" in proc.stdout, proc.stdout[-2000:]
    honest = attacks.honest(release(course_dir))
    assert placed(course_dir) == {f"ada/ch1/{NB}.ipynb": honest, f"alan/ch1/{NB}.ipynb": honest.replace(b"ADA", b"ALAN")}
    assert not list(course_dir.glob(".collect-spool-*"))  # the spool is gone
