"""The engine's defences, piece by piece, without grading a notebook (fast): frames, schemas, caps, digests,
seeds, the seccomp program, cgroups on a stand-in hierarchy, the filesystem allowlist."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.engine import cgroups, protocol, sandbox, scoring
from autograder.engine.judging import digest
from autograder.engine.limits import Limits
from autograder.engine.prepare import notebook_seed

ROOT = Path(__file__).resolve().parents[2]


def _frame(head: bytes, blobs: bytes = b"") -> bytes:
    body = len(head).to_bytes(4, "little") + head + blobs
    return len(body).to_bytes(8, "little") + body


# ---- frames and schemas ------------------------------------------------------------------------

@pytest.mark.parametrize("head, why", [
    (b'{"k": "done", "cell": 1' + b"0" * 400 + b', "error": false, "blobs": [0]}', "integer too large"),
    (b'{"k": "done", "cell": 1, "seconds": 1e400, "blobs": []}', "non-finite"),
    (b'{"k": "done", "cell": NaN, "blobs": []}', "not a number"),
    (b'{"k": "done", "blobs": [5]}', "do not add up"),
    (b'[1, 2]', "not an object"),
    (b'{"k": "x", "blobs": [-1]}', "blob lengths"),
    (b'{' * 100_000, "malformed"),
])
def test_malformed_frames_are_refused(head: bytes, why: str) -> None:
    with pytest.raises(protocol.ProtocolError, match=why):
        protocol.unpack(_frame(head)[8:])


def test_a_reader_refuses_a_frame_over_its_size_before_reading_it() -> None:
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.write(w, (1 << 40).to_bytes(8, "little") + b"x" * 100)
    reader = protocol.FrameReader(r, max_frame=1 << 20)
    reader.fill()
    assert reader.error and "more than" in reader.error and len(reader.buffer) < 200
    os.close(r)
    os.close(w)


def test_frames_carry_the_sender_pid_from_the_kernel() -> None:
    import socket

    a, b = socket.socketpair()
    a.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    a.setblocking(False)
    protocol.send(b.fileno(), {"k": "ready"})
    pid = os.fork()
    if pid == 0:
        protocol.send(b.fileno(), {"k": "report", "name": "x"})
        os._exit(0)
    os.waitpid(pid, 0)
    reader = protocol.FrameReader(a.fileno(), 1 << 20, credentials=True)
    reader.fill()
    got = [(m.kind, m.pid) for m in reader.messages()]
    assert got == [("ready", os.getpid()), ("report", pid)]


@pytest.mark.parametrize("header, ok", [
    ({"k": "done", "cell": 3, "error": False}, True),
    ({"k": "done", "cell": 3, "error": 0}, False),  # not a bool
    ({"k": "done", "cell": True, "error": False}, False),  # a bool is not a cell
    ({"k": "done", "cell": 3, "error": False, "seconds": 1.0}, False),  # the worker keeps time, not the child
    ({"k": "done", "cell": 2, "error": False}, False),  # not the cell that runs
])
def test_done_frames_follow_their_schema(header: dict, ok: bool) -> None:
    msg = protocol.Message(header, [b"[]"])
    if ok:
        assert protocol.done_of(msg, 3) == (False, b"[]")
    else:
        with pytest.raises(protocol.ProtocolError):
            protocol.done_of(msg, 3)


def test_reports_are_bounded() -> None:
    assert protocol.report_of(protocol.Message({"k": "report", "name": "ch1.x"}, [b"a"] * 3), 3)[0] == "ch1.x"
    for msg in (protocol.Message({"k": "report", "name": "ch1.x"}, [b"a"] * 4),
                protocol.Message({"k": "report", "name": "x" * 1000}, []),
                protocol.Message({"k": "report", "name": ["x"]}, [])):
        with pytest.raises(protocol.ProtocolError):
            protocol.report_of(msg, 3)


# ---- verdicts and trials ------------------------------------------------------------------------

def test_the_verdict_key_is_unambiguous() -> None:
    assert digest([b"a\0", b"b"]) != digest([b"a", b"\0b"])
    assert digest([b"ab"]) != digest([b"a", b"b"])
    assert digest([]) != digest([b""])
    assert digest([b"x", b"y"]) == digest([b"x", b"y"])


def test_each_notebook_has_its_own_seed() -> None:
    seeds = {notebook_seed(1234, f"s{k}/ch1/ch1_parallel_time") for k in range(200)}
    assert len(seeds) == 200 and all(0 <= s < 1 << 62 for s in seeds)
    assert notebook_seed(1234, "a/ch1/nb") == notebook_seed(1234, "a/ch1/nb") != notebook_seed(1235, "a/ch1/nb")


# ---- outputs and nbgrader's rule ------------------------------------------------------------------

def test_outputs_are_capped_in_pieces_and_bytes() -> None:
    pieces = json.dumps([{"output_type": "stream", "name": "stdout", "text": "x"}] * 10_000).encode()
    out = scoring.outputs_from(pieces, 1 << 20, 50)
    assert len(out) == 51 and "truncated by the grader" in out[-1].text
    big = json.dumps([{"output_type": "stream", "name": "stdout", "text": "y" * 5000}] * 10).encode()
    out = scoring.outputs_from(big, 12_000, 500)
    assert sum(len(o.text) for o in out[:-1]) <= 12_000 and "truncated" in out[-1].text
    err = json.dumps([{"output_type": "stream", "name": "stdout", "text": "z"}] * 10
                     + [{"output_type": "error", "ename": "E", "evalue": "v", "traceback": ["t"] * 50}]).encode()
    assert any(o.output_type == "error" for o in scoring.outputs_from(err, 1 << 20, 5))  # an error is never dropped


@pytest.mark.parametrize("data", [{"text/plain": "1e9"}, {"image/png": "iVBORw0KGgo="}, {"text/plain": "inf"}])
def test_nbgraders_partial_credit_rule_never_raises(data: dict) -> None:
    cell = nbformat.v4.new_code_cell("x")
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": "t", "locked": True, "points": 2, "schema_version": 3,
                                 "solution": False}
    cell.outputs = [nbformat.v4.new_output("execute_result", data=data, execution_count=1)]
    score, reason = scoring.stock_grade(cell, None)
    assert score == 0.0 and ("could not be read as a grade" in reason or "not a finite" in reason)


@pytest.mark.parametrize("kind", ["markdown", "code"])
def test_an_untouched_manual_answer_scores_0_no_response(kind: str) -> None:
    from nbgrader.utils import compute_checksum

    new = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
    cell = new("YOUR ANSWER HERE")
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": "prose", "locked": False, "points": 2,
                                 "schema_version": 3, "solution": True}
    release = compute_checksum(cell)
    never = lambda name, blobs: (False, "")  # noqa: E731 - a manual answer has no hidden checks
    untouched = scoring.score_cell(cell, {"status": "ok"}, [], never, None, release)
    assert (untouched.score, untouched.reason) == (0.0, "no response")
    cell.metadata.nbgrader["checksum"] = "forged"  # the submission's own checksum is not trusted
    assert scoring.score_cell(cell, {"status": "ok"}, [], never, None, release).score == 0.0
    cell.source = "Sums wait for all their inputs."
    cell.metadata.nbgrader["checksum"] = compute_checksum(cell)  # nor can it make an answer look untouched
    answered = scoring.score_cell(cell, {"status": "ok"}, [], never, None, release)
    assert (answered.score, answered.reason) == (None, "needs manual grading")


# ---- seccomp: tests/security/test_seccomp.py loads the filter and tries what it refuses ---------------------------


# ---- cgroups, on a stand-in cgroup v2 tree ------------------------------------------------------------

def _fake_cgroup(tmp_path: Path, controllers: str) -> Path:
    base = tmp_path / "grading"
    base.mkdir()
    (base / "cgroup.controllers").write_text(controllers)
    (base / "cgroup.subtree_control").write_text("")
    return base


def test_cgroup_setup_says_why_not(tmp_path: Path) -> None:
    base = _fake_cgroup(tmp_path, "hugetlb")
    parent = cgroups.setup(str(base), mount=str(tmp_path))
    assert parent.path is None and "memory, pids, cpu" in parent.why


def test_cgroup_per_notebook_limits(tmp_path: Path, monkeypatch) -> None:
    base = _fake_cgroup(tmp_path, "cpu memory pids")
    real_mkdir = os.mkdir

    def mkdir(path, *args):  # a cgroup directory comes with its files
        real_mkdir(path, *args)
        for name in ("cgroup.subtree_control", "cgroup.procs", "memory.events"):
            Path(path, name).write_text("")

    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(Path, "mkdir", lambda self, *a, **k: mkdir(str(self)))
    parent = cgroups.setup(str(base), mount=str(tmp_path))
    assert parent.path and Path(parent.path).parent == base and "memory" in (base / "cgroup.subtree_control").read_text()
    group = cgroups.Group.create(parent.path, "nb1", memory_bytes=5 << 20, pids=70)
    group.add(4242)
    # what the notebook's limits become (a unit or a limit dropped on the way fails here)
    read = {name: Path(group.path, name).read_text() for name in ("memory.max", "pids.max", "cgroup.procs")}
    assert read == {"memory.max": str(5 << 20), "pids.max": "70", "cgroup.procs": "4242"}
    other = cgroups.Group.create(parent.path, "nb2", memory_bytes=7 << 20, pids=3)
    assert (Path(other.path, "memory.max").read_text(), Path(other.path, "pids.max").read_text()) == (str(7 << 20), "3")
    Path(group.path, "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    assert group.events()["oom_kill"] == 1


def test_cgroup_mount_is_found(tmp_path: Path) -> None:
    info = tmp_path / "mountinfo"
    info.write_text("30 25 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
                    "31 25 0:27 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw\n")
    assert cgroups.v2_mount(str(info)) == "/sys/fs/cgroup/unified"


# ---- the filesystem allowlist ----------------------------------------------------------------------

def test_the_allowlist_holds_the_interpreter_and_nothing_of_the_checkout() -> None:
    layout = sandbox.layout()
    bound = [dst for _, dst in layout.binds]
    assert os.path.realpath(sys.prefix) in bound
    for secret in ("solutions", "autograder", "chapters", "tests", "coursenb", "publish", ".git"):
        path = str(ROOT / secret)
        assert not any(b == path or b.startswith(path + "/") for b in bound), secret
    assert str(ROOT) not in bound and "/root" not in bound and "/home" not in bound and "/tmp" not in bound
    for parent in layout.parents():
        assert parent not in bound and any(b.startswith(parent + "/") for b in bound)


def test_a_gpus_driver_outside_usr_is_bound_and_on_the_loaders_path(tmp_path: Path, monkeypatch) -> None:
    """On GPU machines the driver often lives in /usr/local/nvidia/lib64, which the allowlist hides: without
    the bind and LD_LIBRARY_PATH every CUDA trial raised "Found no NVIDIA driver" in the sandbox (seen on an
    H200), and every function check scored 0 there while the CPU gave full marks."""
    driver = tmp_path / "nvidia" / "lib64"
    driver.mkdir(parents=True)
    (driver / "libcuda.so.1").write_bytes(b"")
    monkeypatch.setattr(sandbox, "cuda_possible", lambda: True)
    monkeypatch.setenv("LD_LIBRARY_PATH", f"{tmp_path / 'empty'}:{driver}")
    layout = sandbox.layout()
    assert str(driver) in [dst for _, dst in layout.binds]
    env = sandbox.Plan(mode="root", uid=1_500_000_000, layout=layout).zygote_env()
    assert env["LD_LIBRARY_PATH"].split(os.pathsep)[0] == str(driver)
    monkeypatch.setattr(sandbox, "cuda_possible", lambda: False)
    assert sandbox.cuda_library_dirs() == [] and "LD_LIBRARY_PATH" not in sandbox.Plan(mode="root", uid=1).zygote_env()


@pytest.mark.sandbox
def test_a_plan_holds_a_minimal_environment() -> None:
    plan = sandbox.Plan(mode="root", uid=1_500_000_000, layout=sandbox.layout(), threads=2)
    cmd = plan.zygote_command(3, 4, 5, 6)
    assert "--clearenv" in cmd and "--unshare-net" in cmd and "--seccomp" in cmd
    names = {cmd[i + 1] for i, arg in enumerate(cmd) if arg == "--setenv"}
    assert names == set(plan.zygote_env()) and "GRADER_DB_URL" not in names
    go = plan.go(Limits(), nproc_base=1, threads=2, max_job_frame=1 << 20)
    assert set(go["env"]) == {"PATH", "HOME", "TMPDIR", "LANG", "USER", "MPLBACKEND", "MPLCONFIGDIR",
                              "NBGRADER_EXECUTION", "ATTNLAB_GRADING", "PYTHONHASHSEED", "OMP_NUM_THREADS",
                              "MKL_NUM_THREADS"}


def test_every_uid_inside_has_an_account() -> None:
    """In root mode the zygote is uid 0 and its notebooks the student's uid: both resolve (getpass, pwd)."""
    for plan in (sandbox.Plan(mode="root", uid=1_500_000_000), sandbox.Plan(mode="userns", uid=0)):
        passwd, group = (text.decode() for text in plan.accounts())
        uids = {int(line.split(":")[2]) for line in passwd.splitlines()}
        gids = {int(line.split(":")[2]) for line in group.splitlines()}
        assert {0, 0 if plan.mode == "userns" else plan.uid} <= uids and uids == gids


@pytest.mark.sandbox
def test_the_zygote_knows_its_own_user() -> None:
    """torch 2.11's `import torch._dynamo` calls getpass.getuser() in the zygote: uid 0 had no account there, the
    import failed half-way and every notebook's own import then failed (seen on an H200; not on torch 2.13)."""
    import subprocess

    code = "import getpass, os; print('user', os.getuid(), getpass.getuser())"
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "sandbox_probe.py"), "-c", code],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "\nuser " in out.stdout, out.stdout[-2000:] + out.stderr[-2000:]


# ---- time limits count the time a notebook could run ------------------------------------------------

def test_waiting_for_a_cpu_is_not_counted() -> None:
    """Two busy processes on one CPU: each waits for it about half the time; the clock does not count that."""
    import signal
    import time

    from autograder.engine.driver import Clock, runqueue_wait

    if runqueue_wait(os.getpid()) is None:
        pytest.skip("this kernel does not report run-queue waits")
    cpu, pids = min(os.sched_getaffinity(0)), []  # one CPU this process may use (a container may not allow CPU 0)
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            try:
                os.sched_setaffinity(0, {cpu})
                while True:
                    pass
            finally:
                os._exit(1)  # never back into pytest
        pids.append(pid)
    try:
        clock = Clock(pids[0])
        time.sleep(1.0)
        wall, effective = clock.wall(), clock.effective()
        assert runqueue_wait(pids[0]) > clock.wait0 and effective < wall
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def test_processes_a_notebook_forks_use_its_time() -> None:
    """A fork bomb's shape: the runner and three processes it forked spin on one CPU, so the runner waits for it three
    quarters of the time and its own clock runs at a quarter of the wall. The notebook's clock counts the CPU of its
    whole process tree (over its one thread), about four times the runner's own: the bomb meets its cell's limit at
    the rate it takes CPUs, not at the wall-clock cap."""
    import signal
    import time

    from autograder.engine.driver import Clock, runqueue_wait, tree_cpu

    if runqueue_wait(os.getpid()) is None:
        pytest.skip("this kernel does not report run-queue waits")
    cpu = min(os.sched_getaffinity(0))  # one CPU this process may use (a container may not allow CPU 0)
    runner = os.fork()
    if runner == 0:
        try:
            os.setpgid(0, 0)
            os.sched_setaffinity(0, {cpu})
            for _ in range(3):
                if os.fork() == 0:
                    break
            while True:
                pass
        finally:
            os._exit(1)  # never back into pytest
    try:
        time.sleep(0.2)  # its children forked
        own, notebook = Clock(runner), Clock(runner, lambda: tree_cpu(runner), threads=1)
        deadline = time.monotonic() + 120
        while (tree_cpu(runner) or 0) - (notebook.base[1] if notebook.base else 0) < 1.0 and time.monotonic() < deadline:
            notebook.effective()  # the first reading past TREE_AFTER_S sets its base
            time.sleep(0.1)
        assert notebook.effective() > 2 * own.effective() > 0, (notebook.effective(), own.effective())
    finally:
        os.killpg(runner, signal.SIGKILL)
        os.waitpid(runner, 0)


def test_a_notebook_stops_running_when_its_result_is_sent() -> None:
    """The worker tears a notebook's processes down after the grader has judged it (`worker.TEARDOWN_AFTER_S`), but
    stops them at once (`Driver.stop`): a thread the notebook left running gets no CPU after its result."""
    import signal
    import time

    from autograder.engine.driver import Child, Driver

    pids = []
    for _ in range(2):  # the notebook's init and runner, each busy (a thread left running)
        pid = os.fork()
        if pid == 0:
            while True:
                pass
        pids.append(pid)
    child = Child(None, None, -1, pids={"init": pids[0], "runner": pids[1]},
                  pidfds={"init": os.pidfd_open(pids[0]), "runner": os.pidfd_open(pids[1])})
    driver = Driver.__new__(Driver)
    driver.pending = child
    try:
        driver.stop()
        deadline = time.monotonic() + 10
        states = []
        while time.monotonic() < deadline:
            states = [open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] for pid in pids]
            if states == ["T", "T"]:
                break
            time.sleep(0.01)
        assert states == ["T", "T"]  # stopped: no CPU until the teardown kills them
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        for fd in child.pidfds.values():
            os.close(fd)
