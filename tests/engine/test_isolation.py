"""Two notebooks graded one after the other by ONE worker: the second observes nothing of the first.

The first plants a random mark everywhere it can (its memory, a private output, its
environment, files in every writable place, a detached process, System V shared memory, an
abstract Unix socket, the keyring) and then scans for it (the positive control: the scanner
finds what is there). The second, forked from the same zygote right after, scans for the
first's mark, for the grader's secrets (a database URL and a token in the grader's
environment) and for another checkout's solutions/ under /tmp, and finds nothing. A read-only
folder under /tmp (`Limits.allow_paths`, as a checkout under /tmp is) is readable and not
writable. Run in the root mode and in the user-namespace mode (the non-root grader's).
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
from pathlib import Path

import nbformat
import pytest

from autograder import course
from autograder.engine import Limits, grade
from coursenb.chapters import select
from tests import nbgrader_support as nbs
from tests.adversarial.scan import PLACES, SCANNER

pytestmark = [pytest.mark.filterwarnings("ignore:Object of type"), pytest.mark.slow, pytest.mark.sandbox]
CHAPTER = select(["ch1"])[0]

FIRST = SCANNER + r'''
import ctypes, json, os, secrets, socket, subprocess, sys
MARK = "NB1" + secrets.token_hex(16)
keep = [MARK + str(i) for i in range(100)]
os.environ["NB1_SECRET"] = MARK
print("a private output:", MARK)
wrote = []
for path in ["/tmp/nb1.txt", "nb1.txt", "/dev/shm/nb1", os.path.expanduser("~/nb1.txt"), "/var/tmp/nb1.txt", "/run/nb1",
             "/dev/nb1", "/nb1"]:
    try:
        with open(path, "w") as f:
            f.write(MARK)
        wrote.append(path)
    except OSError:
        pass
daemon = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", MARK], start_new_session=True)
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
segment = libc.shmget(0x4E4231, 4096, 0o1666)
if segment >= 0:
    ctypes.memmove(libc.shmat(segment, None, 0), MARK.encode(), len(MARK))
listener = socket.socket(socket.AF_UNIX)
listener.bind("\0" + MARK)
listener.listen()
key = libc.syscall(248, b"user", b"nb1", MARK.encode(), len(MARK), -3)  # add_key to the session keyring
print("SCAN1", json.dumps({"wrote": wrote, "key": key, "found": _scan(rb"NB1[0-9a-f]{32}"),
                           "canary": _scan(rb"CANARY[0-9a-f]{32}", ("memory", "environment")),
                           "env_block": _scan(rb"OMP_NUM_THREADS=[0-9]", ("environment",))}))
'''

SECOND = SCANNER + r'''
import glob, json, os
other = [p for p in ["{other}/solutions/ch1.py", "{other}/solutions", "{other}/.venv"] if os.path.exists(p)]
other += glob.glob("/tmp/**/solutions", recursive=True)
for base, dirs, files in os.walk("/"):  # every folder but the kernel's and the system's
    if base in ("/proc", "/sys", "/usr"):
        dirs[:] = []
    other += [os.path.join(base, d) for d in dirs if d in ("solutions", ".git", "chapters")]
data = open("{data}/hello.txt").read()
try:
    open("{data}/hello.txt", "a").write("changed")
    wrote_data = True
except OSError:
    wrote_data = False
print("SCAN2", json.dumps({"found": _scan(rb"NB1[0-9a-f]{32}"),
                           "canary": _scan(rb"CANARY[0-9a-f]{32}", ("memory", "environment")),
                           "env_block": _scan(rb"OMP_NUM_THREADS=[0-9]", ("environment",)),
                           "other": other, "data": data, "wrote_data": wrote_data,
                           "environ": sorted(os.environ)}))
'''


def _with_cell(nb: nbformat.NotebookNode, source: str) -> nbformat.NotebookNode:
    nb = nbformat.from_dict(nb)
    nb.cells.append(nbformat.v4.new_code_cell(source))
    return nb


def _scan_output(course_dir: Path, student: str, tag: str) -> dict:
    nb = nbformat.read(course_dir / "autograded" / student / "ch1" / f"{CHAPTER.notebook}.ipynb", as_version=4)
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    found = re.search(rf"^{tag} (.*)$", text, re.M)
    assert found, f"{student}: no {tag} line in\n{text[-3000:]}"
    return json.loads(found.group(1))


@pytest.fixture(scope="module", params=["auto", "userns"])
def graded(request, tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp(f"isolation-{request.param}")
    course_dir = nbs.make_course(tmp / "course", [CHAPTER.assignment])
    other = tmp / "other_checkout"
    shutil.copytree(course.ROOT / "solutions", other / "solutions")
    (other / ".venv").mkdir()
    data = tmp / "data"
    data.mkdir()
    (data / "hello.txt").write_text("read-only data")
    src = nbs.source_nb(CHAPTER, course_dir)
    nbs.submit(course_dir, CHAPTER, "a_first", _with_cell(src, FIRST))
    nbs.submit(course_dir, CHAPTER, "b_second",
               _with_cell(src, SECOND.replace("{other}", str(other)).replace("{data}", str(data))))
    canary = f"CANARY{secrets.token_hex(16)}"
    os.environ["GRADER_DB_URL"] = f"postgresql://grader:{canary}@db.example/course"
    try:
        limits = Limits(cell_seconds=120, notebook_seconds=600, sandbox=request.param, allow_paths=(str(data),))
        summary = grade(course_dir, workers=1, progress=False, limits=limits)
    finally:
        del os.environ["GRADER_DB_URL"]
    return {"dir": course_dir, "summary": summary, "points": nbs.max_points(src), "data": data,
            "first": _scan_output(course_dir, "a_first", "SCAN1"),
            "second": _scan_output(course_dir, "b_second", "SCAN2")}


def test_one_worker_graded_both_in_turn(graded) -> None:
    summary = graded["summary"]
    assert summary.workers == 1 and summary.graded == 2 and summary.failed == 0
    for student in ("a_first", "b_second"):
        assert nbs.scores(graded["dir"], CHAPTER, student) == graded["points"], student


def test_the_first_finds_its_own_marks(graded) -> None:
    """The positive control: what the first notebook planted, its scanner sees."""
    first = graded["first"]
    found = first["found"]
    assert found["memory"] > 0 and found["processes"] > 0 and found["sysv"] > 0 and found["sockets"] > 0
    assert found["files"] >= 3, first  # /tmp, the working directory (in /tmp) and /dev/shm
    assert set(first["wrote"]) <= {"/tmp/nb1.txt", "nb1.txt", "/dev/shm/nb1", "/tmp/submission/nb1.txt"}, first
    assert first["key"] == -1 and found["keyring"] == 0  # the keyrings are refused outright
    assert first["env_block"]["environment"] > 0  # the environment block is readable, and read


def test_the_second_observes_nothing_of_the_first(graded) -> None:
    second = graded["second"]
    assert second["found"] == dict.fromkeys(PLACES, 0), second


def test_no_grader_environment_reaches_a_notebook(graded) -> None:
    for which in ("first", "second"):
        assert graded[which]["canary"] == {"memory": 0, "environment": 0}, which
    assert "GRADER_DB_URL" not in graded["second"]["environ"]


def test_another_checkout_does_not_exist_in_the_sandbox(graded) -> None:
    assert graded["second"]["other"] == []


def test_an_allowed_folder_under_tmp_is_read_only(graded) -> None:
    second = graded["second"]
    assert second["data"] == "read-only data" and not second["wrote_data"]
    assert (graded["data"] / "hello.txt").read_text() == "read-only data"
