"""Chapter 1 attacks on the grader. Each is one student's submission; see tests/adversarial/__init__.py."""
from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat

from tests.adversarial import Attack, cell, fill
from tests.adversarial.scan import SCANNER

SA, TR = "test_self_attention", "test_transformer"
ALL = "all"
# The graded test cells in the chapter's order (the chapter is their one home: a new cell or a new order
# moves the expectations with it).
ORDER = tuple(re.findall(r'"grade": true, "grade_id": "(test_\w+)"',
                         (Path(__file__).resolve().parents[2] / "chapters" / "ch1_parallel_time.py").read_text()))
AFTER_SA = ORDER[ORDER.index(SA) + 1:]
assert TR in AFTER_SA and "test_softmax_time" in AFTER_SA, ORDER


def _edit_test(nb, ctx):
    """A wrong self_attention, and its test cell emptied so nothing can fail."""
    cell(nb, "self_attention").source = fill("{wrong:self_attention}", "", ctx)
    cell(nb, SA).source = "pass  # nothing to see here"
    return nb


def _delete_test(nb, ctx):
    cell(nb, "transformer").source = fill("{wrong:transformer}", "", ctx)
    nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") != TR]
    return nb


def _retag_test(nb, ctx):
    """The test cell of an answer turned into an unlocked solution cell without hidden tests."""
    cell(nb, "softmax_time").source = 'SOFTMAX_TIME = "T"\nSOFTMAX_TIME_PRACTICE = "K + log(T)"'
    c = cell(nb, "test_softmax_time")
    c.metadata.nbgrader.update(grade=False, solution=True, locked=False)
    c.metadata.nbgrader.pop("points", None)
    c.source = "# graded by me"
    return nb


def _two_faced(nb, ctx):
    """self_attention right when called on its own, zeros when transformer calls it during the hidden trials
    (when the recorder has replaced it): a composition log that the function's own check contradicts."""
    sa = cell(nb, "self_attention")
    sa.source = fill("{ref}", sa.source, ctx) + """
_honest_self_attention = self_attention
_recorded = [False]
def self_attention(M, WQ, WK, WV):
    out = _honest_self_attention(M, WQ, WK, WV)
    return out * 0 if _recorded[0] else out
_two_faced = self_attention
"""
    tr = cell(nb, "transformer")
    tr.source = fill("{ref}", tr.source, ctx) + """
_honest_transformer = transformer
def transformer(M, layers):
    _recorded[0] = globals()["self_attention"] is not _two_faced  # the grader's recorder wraps it
    try:
        return _honest_transformer(M, layers)
    finally:
        _recorded[0] = False
"""
    return nb


def _duplicate_test(nb, ctx):
    """A wrong self_attention, and its test cell twice (the same grade_id): still its points once, lost."""
    cell(nb, "self_attention").source = fill("{wrong:self_attention}", "", ctx)
    test = cell(nb, SA)
    nb.cells.insert(nb.cells.index(test) + 1, nbformat.from_dict(json.loads(json.dumps(test))))
    return nb


def _reorder(nb, ctx):
    """The transformer's test cell moved to the top of the notebook."""
    test = cell(nb, TR)
    nb.cells.remove(test)
    nb.cells.insert(0, test)
    return nb


def _many_cells(nb, ctx):
    nb.cells.extend(nbformat.v4.new_raw_cell("") for _ in range(20_000))
    return nb


def _points(nb, ctx):
    cell(nb, SA).metadata.nbgrader["points"] = 400
    return nb


def _rename_test(nb, ctx):
    cell(nb, "transformer").source = fill("{wrong:transformer}", "", ctx)
    c = cell(nb, TR)
    c.metadata.nbgrader["grade_id"] = "test_bogus"
    c.source = "pass"
    return nb


def _retype_test(nb, ctx):
    """The test cell turned into markdown (it would not run at all)."""
    cell(nb, "transformer").source = fill("{wrong:transformer}", "", ctx)
    c = cell(nb, TR)
    nb.cells[nb.cells.index(c)] = nbformat.v4.new_markdown_cell(c.source, metadata=c.metadata)
    return nb


def _delete_solution(nb, ctx):
    nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") != "transformer"]
    return nb


def _strip_solution_metadata(nb, ctx):
    del cell(nb, "self_attention").metadata["nbgrader"]
    return nb


def _other_chapter(nb, ctx):
    from coursenb.chapters import select

    return select(["ch0"])[0].read()


_SECRETS = '''
import glob, os, sqlite3
paths = ["{repo}/solutions/ch1.py", "{repo}/solutions", "{repo}/chapters/ch1_parallel_time.py",
         "{repo}/autograder/checks/ch1.py", "{repo}/.git/HEAD", "{course}/gradebook.db",
         "{course}/source/ch1/ch1_parallel_time.ipynb", "{course}/submitted", "{course}/nbgrader_config.py",
         "/root/.bashrc", "../../source/ch1/ch1_parallel_time.ipynb"]
leaks = []
for p in paths:
    try:
        leaks += [p] if (os.listdir(p) if os.path.isdir(p) else open(p, "rb").read(1) is not None) else []
    except OSError:
        pass
paths = ["{other}/solutions/ch1.py", "{other}/solutions", "{other}/.venv/lib/python3.11/site-packages/solutions",
         "{other}/.git/HEAD"]
for p in paths:
    if os.path.exists(p):
        leaks.append(p)
for pattern in ["/tmp/*/gradebook.db", "/tmp/**/solutions/*.py"]:
    leaks += glob.glob(pattern, recursive=True)
# Everything readable, once, without following links to folders (a glob of "/**" does, and some systems' /usr holds
# link loops: LLVM's build/Release -> .. ran for ever): folders named like the course's, a gradebook (not the
# installed packages' own test files: nbgrader ships one), solutions.
for base, dirs, files in os.walk("/"):
    if base.startswith(("/proc", "/sys")):
        dirs[:] = []
        continue
    leaks += [os.path.join(base, d) for d in dirs if d in ("solutions", "autograder", "chapters", ".git", "nbgrader_config")]
    leaks += [os.path.join(base, f) for f in files if (f == "gradebook.db" and "/site-packages/" not in base)
              or (f == "ch1.py" and base.endswith("/solutions"))]
try:
    db = sqlite3.connect("file:{course}/gradebook.db?mode=rw", uri=True)
    db.execute("UPDATE grade SET auto_score = 100")
    db.commit()
    leaks.append("gradebook written")
except sqlite3.Error:
    pass
print("LEAK" + "ED: " + ", ".join(leaks) if leaks else "no secret " + "readable")  # split: only the output says it
'''

ATTACKS = [
    # ---- time, memory, processes, output -------------------------------------------------------
    Attack("infinite_loop", "transformer", "def transformer(M, layers):\n    while True:\n        pass",
           (TR,), "time limit", "the hidden check's call never returns: the cell is interrupted at the limit"),
    Attack("loop_ignoring_interrupts", "parallel_time_serial", '''
        {ref}
        import time
        while True:
            try:
                time.sleep(0.2)
            except BaseException:
                pass
        ''', ("test_parallel_time_serial",), "ran past its time limit",
           "catches the interrupt: SIGKILL, replay of the cells before, the rest goes on"),
    Attack("memory_bomb", "transformer", '''
        hog = [torch.empty(2**26, dtype=torch.float64) for _ in range(10_000)]
        {ref}
        ''', (TR,), "allocate", "5 TiB of tensors against a 1 GiB limit: the allocation fails in the cell"),
    Attack("memory_bomb_mmap", "parallel_time_log", '''
        import mmap
        block = mmap.mmap(-1, 64 << 30)
        {ref}
        ''', ("test_parallel_time_log",), "memory", "shared anonymous memory is bounded by the address-space limit"),
    Attack("fork_bomb", "softmax_time", '''
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
        {ref}
        ''', ("test_softmax_time", "test_softmax_time_practice"), "time limit",
           "processes capped; the cell is stopped at its limit; every process it forked is killed"),
    Attack("output_flood", "transformer", '''
        {ref}
        for _ in range(1_000_000):
            print("x" * 100)
        ''', (), "output truncated", "100 MB of output: truncated with a note, nothing else changes"),
    Attack("sys_exit", "transformer", "import sys\nsys.exit(3)\n{ref}", (TR,), "SystemExit",
           "sys.exit is an exception in the cell"),
    Attack("os_exit", "parallel_time_log", "import os\nos._exit(0)\n{ref}", ("test_parallel_time_log",),
           "exited with code 0", "the process dies: only that cell is lost"),
    Attack("kill_self", "layer_time", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n{ref}",
           ("test_layer_time", "test_layer_time_practice"), "SIGKILL", "the process dies: only that cell is lost"),
    Attack("pipe_garbage", "parallel_time_serial", '''
        {ref}
        import os
        for fd in map(int, os.listdir("/proc/self/fd")):
            try:
                os.write(fd, b"\\xff" * 64)
            except OSError:
                pass
        ''', ("test_parallel_time_serial",), "malformed data", "garbage on the channel to the grader"),
    # ---- tampering with the comparison ----------------------------------------------------------
    Attack("rebind_allclose", "self_attention", '''
        {wrong:self_attention:4}
        import numpy, numpy.testing
        torch.allclose = lambda *a, **k: True
        torch.equal = lambda *a, **k: True
        numpy.allclose = lambda *a, **k: True
        numpy.testing.assert_allclose = lambda *a, **k: None
        ''', (SA, TR), "Explained", "patched comparisons only fool the student's own process: an allclose that "
           "always agrees trips the visible tests' diagnoses of known mistakes, and the hidden check is judged outside"),
    Attack("rebind_test_helpers", "self_attention", '''
        {wrong:self_attention:4}
        import attnlab.testing
        expect_close = expect_shape = expect_like = lambda *a, **k: None
        attnlab.testing.expect_close = attnlab.testing.expect_shape = lambda *a, **k: None
        ''', (SA,), "differs from the reference", "the visible tests pass, the hidden check does not"),
    Attack("rebind_builtins", "transformer", '''
        {wrong:transformer}
        import builtins, types
        _import = builtins.__import__
        def _fake_import(name, *args, **kwargs):
            if name == "attnlab.grading":
                return types.SimpleNamespace(hidden_check=lambda *a, **k: None)
            return _import(name, *args, **kwargs)
        builtins.__import__ = _fake_import
        ''', AFTER_SA, "did not report", "from here on no hidden check reports: every later test cell scores 0"),
    Attack("hidden_check_noop", "self_attention", '''
        {ref}
        import attnlab.grading
        attnlab.grading.hidden_check = lambda *a, **k: None
        ''', ALL, "did not report", "even a correct notebook scores 0 once hidden_check is replaced"),
    Attack("uninstall_channel", "self_attention", '''
        {ref}
        import attnlab.grading
        attnlab.grading.install_channel(None)
        ''', ALL, "autograder", "local mode needs autograder.judge, which cannot be imported"),
    Attack("lying_eq_answer", "parallel_time_serial", '''
        class Anything(str):
            def __eq__(self, other):
                return True
            __hash__ = str.__hash__
        PARALLEL_TIME_SERIAL = Anything("L")
        ''', ("test_parallel_time_serial",), "PARALLEL_TIME_SERIAL",
           "only the plain string crosses to the grader"),
    Attack("tensor_subclass", "self_attention", '''
        {ref}
        _self_attention = self_attention
        class Liar(torch.Tensor):
            def __eq__(self, other):
                return True
        def self_attention(M, WQ, WK, WV):
            return _self_attention(M, WQ, WK, WV).as_subclass(Liar)
        ''', (SA, TR), "tensor subclass", "a tensor subclass is not sent"),
    Attack("nbgrader_execution_sniffing", "self_attention", '''
        {wrong:self_attention:4}
        import os
        print("NBGRADER_EXECUTION =", os.environ.get("NBGRADER_EXECUTION"))
        if os.environ.get("NBGRADER_EXECUTION") == "autograde":
            torch.allclose = lambda *a, **k: True
            expect_close = expect_shape = expect_like = lambda *a, **k: None
        ''', (SA, TR), "NBGRADER_EXECUTION = autograde", "knowing it is graded changes nothing (its patched "
                                                            "allclose trips the visible transformer test, as in rebind_allclose)"),
    # ---- editing the notebook -------------------------------------------------------------------
    Attack("edit_test_cell", mutate=_edit_test, lost=(SA,), feedback="was restored",
           why="a locked cell comes back from the source notebook"),
    Attack("delete_test_cell", mutate=_delete_test, lost=(TR,), feedback="was put back",
           why="a missing test cell is put back"),
    Attack("retag_test_cell", mutate=_retag_test, lost=("test_softmax_time",), feedback="was restored",
           why="a test cell re-tagged as a solution cell is restored"),
    Attack("retype_test_cell", mutate=_retype_test, lost=(TR,), feedback="was restored",
           why="a test cell turned into markdown is restored"),
    Attack("change_points", mutate=_points, lost=(), feedback="was restored",
           why="points come from the source: 4, not 400"),
    Attack("rename_test_cell", mutate=_rename_test, lost=(TR,), feedback="test_bogus",
           why="a renamed test cell becomes an ordinary cell; the real one is put back"),
    Attack("delete_solution_cell", mutate=_delete_solution, lost=(TR,), feedback="transformer is missing",
           why="no crash: the test cell fails with a NameError"),
    Attack("strip_solution_metadata", mutate=_strip_solution_metadata, lost=(),
           feedback="self_attention is missing", why="runs as an ordinary cell, as under nbgrader"),
    # ---- reading secrets, network, imports ------------------------------------------------------
    Attack("read_secrets_write_gradebook", "transformer", "{ref}\n" + _SECRETS, (), "no secret readable",
           "solutions/, the source notebook, the course, the gradebook: none readable or writable"),
    Attack("network", "transformer", '''
        {ref}
        import socket
        opened = []
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen()
        for target in [("1.1.1.1", 53), ("127.0.0.1", 22), server.getsockname()]:
            try:
                socket.create_connection(target, timeout=2).close()
                opened.append(target)
            except OSError:
                pass
        print("no network" if not opened else "NETWORK" + " OPEN: " + str(opened))
        ''', (), "no network", "no network interface at all, not even loopback"),
    Attack("import_solutions", "self_attention", '''
        import sys
        sys.meta_path[:] = [f for f in sys.meta_path if "Blocker" not in type(f).__name__]
        try:
            from solutions.ch1 import self_attention
        except ImportError as exc:
            print("import failed:", exc)
        ''', (SA, TR), "import failed", "the reference is neither importable nor on disk"),
    # ---- outputs of the wrong kind ---------------------------------------------------------------
    Attack("wrong_dtype", "self_attention", '''
        {ref}
        _sa = self_attention
        def self_attention(M, WQ, WK, WV):
            return _sa(M, WQ, WK, WV).float()
        ''', (SA, TR), "dtype", "float32 out for float64 in"),
    Attack("nan_on_hidden_sizes", "self_attention", '''
        {ref}
        _sa = self_attention
        def self_attention(M, WQ, WK, WV):
            out = _sa(M, WQ, WK, WV)
            return out * float("nan") if M.shape[0] in (7, 16) else out
        ''', (SA,), "NaN", "right on the visible sizes, NaN on hidden ones"),
    Attack("inf_on_hidden_sizes", "transformer", '''
        {ref}
        _tr = transformer
        def transformer(M, layers):
            out = _tr(M, layers)
            return out + float("inf") if M.shape[0] == 9 else out
        ''', (TR,), "inf", "inf on a hidden size"),
    Attack("wrong_shape_on_hidden_sizes", "self_attention", '''
        {ref}
        _sa = self_attention
        def self_attention(M, WQ, WK, WV):
            out = _sa(M, WQ, WK, WV)
            return out[:, :-1] if M.shape[0] == 16 else out
        ''', (SA,), "has shape", "wrong shape on one hidden size"),
    Attack("wrong_device", "self_attention", '''
        {ref}
        _sa = self_attention
        def self_attention(M, WQ, WK, WV):
            out = _sa(M, WQ, WK, WV)
            return out.to("meta") if M.shape[0] == 16 else out
        ''', (SA,), "cannot be sent", "an output on another device"),
    # ---- files that are not this notebook --------------------------------------------------------
    Attack("not_json", mutate=lambda nb, ctx: b"print('this is not a notebook')\n", lost=ALL, feedback="not JSON"),
    Attack("empty_file", mutate=lambda nb, ctx: b"", lost=ALL, feedback="empty"),
    Attack("json_not_notebook", mutate=lambda nb, ctx: json.dumps({"hello": 1}).encode(), lost=ALL,
           feedback="not a Jupyter notebook"),
    Attack("other_chapter", mutate=_other_chapter, lost=ALL, feedback="another chapter"),
]


# ---- what a process can send, and what it finds around it ----------------------------------------
_FORGE = """
import json as _json, os as _os, select as _select, stat as _stat
def _forge(header, blobs=(), raw=None):
    head = raw if raw is not None else _json.dumps({**header, "blobs": [len(b) for b in blobs]}).encode()
    body = len(head).to_bytes(4, "little") + head + b"".join(blobs)
    frame = memoryview(len(body).to_bytes(8, "little") + body)
    for fd in map(int, _os.listdir("/proc/self/fd")):
        try:
            if not _stat.S_ISSOCK(_os.fstat(fd).st_mode):
                continue
            view = frame
            while view:
                try:
                    view = view[_os.write(fd, view):]
                except BlockingIOError:
                    _select.select([], [fd], [], 5)
        except OSError:
            pass
"""

_ENVIRONMENT = SCANNER + """
found = _scan(rb"CANARY[0-9a-f]{32}", ("memory", "environment"))
print("grader secrets found: 0" if not found["memory"] + found["environment"] else "LEAK" + "ED: " + str(found))
"""

_WRITE_ANYWHERE = """
import os
wrote = []
for line in open("/proc/self/mountinfo").read().splitlines():
    mount = line.split()[4]
    try:
        subdirs = [os.path.join(mount, d) for d in sorted(os.listdir(mount))[:40]]
    except OSError:
        subdirs = []
    for d in [mount] + [d for d in subdirs if os.path.isdir(d) and not os.path.islink(d)]:
        try:
            with open(os.path.join(d, ".probe"), "w") as f:
                f.write("x")
            wrote.append(d)
        except OSError:
            pass
outside = sorted({w for w in wrote if not w.startswith(("/tmp", "/dev/shm"))})
print("wrote only to its own scratch" if not outside else "LEAK" + "ED: wrote to " + ", ".join(outside))
"""

_RESOURCES = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmget.restype = ctypes.c_int
made = 0
for _ in range(64):
    if libc.shmget(0, ctypes.c_size_t(32 << 20), 0o1600) < 0:  # IPC_PRIVATE, IPC_CREAT | 0600
        break
    made += 32
print(f"shm refused after {made} MiB")
try:
    os.memfd_create("hog")
    print("memfd " + "allowed")
except OSError as exc:
    print("memfd refused:", exc.strerror)
chunk, wrote = b"x" * (1 << 20), 0
try:
    with open("/tmp/fill", "wb") as f:
        while wrote < (1 << 30):
            f.write(chunk)
            f.flush()
            wrote += 1
except OSError as exc:
    print(f"tmp full after {wrote} MiB:", exc.strerror)
os.remove("/tmp/fill")
n = 0
try:
    while n < 100_000:
        open(f"/tmp/f{n}", "w").close()
        n += 1
except OSError as exc:
    print(f"tmp full after {n} files:", exc.strerror)
"""


def _setsid_daemons(nb, ctx):
    """Daemons that leave the session (double fork, setsid) in one cell; a later cell counts what is left."""
    cell(nb, "transformer").source = fill("{ref}", cell(nb, "transformer").source, ctx) + """
import os, time
for _ in range(5):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            while True:
                time.sleep(0.1)
        os._exit(0)
time.sleep(0.5)
"""
    c = cell(nb, "parallel_time_serial")
    c.source = c.source + """
import os
left = [p for p in os.listdir("/proc") if p.isdigit() and p not in ("1", str(os.getpid()))]
print("processes left:", len(left))
"""
    return nb


_CPU_HOG = """
import os, time
hogs = []
for _ in range(40):
    pid = os.fork()
    if pid == 0:
        os.setsid()
        while True:
            pass
    hogs.append(pid)
print(f"{len(hogs)} busy processes")
time.sleep(60)
"""

_OWN_CHANNEL = """
import sys
import attnlab.grading as _grading
_channel = _grading._channel
_submit = _channel.submit
_runner = sys.modules["inside.runner"]
"""

ATTACKS += [
    # ---- earlier notebooks and the grader's environment (see also tests/engine/test_isolation.py) ----
    Attack("grader_environment", "transformer", "{ref}\n" + _ENVIRONMENT, (), "grader secrets found: 0",
           "the grader's environment (a database URL, an LMS token) is nowhere in the child's memory or env block"),
    # ---- the filesystem is an allowlist -------------------------------------------------------------
    Attack("write_anywhere", "transformer", "{ref}\n" + _WRITE_ANYWHERE, (), "wrote only to its own scratch",
           "everything outside the private /tmp and /dev/shm is read-only or absent"),
    # ---- resources that rlimits do not count --------------------------------------------------------
    Attack("shm_memfd_tmpfs", "transformer", "{ref}\n" + _RESOURCES, (), "shm refused after 64 MiB",
           "System V shared memory capped in the notebook's own IPC namespace, memfd refused, tmpfs capped"),
    Attack("setsid_daemons", mutate=_setsid_daemons, lost=(), feedback="processes left: 0",
           why="processes that leave the session still die: with their cell, and with the notebook's PID namespace"),
    Attack("cpu_hog", "transformer", _CPU_HOG + "{ref}", (TR,), "ran past its time limit",
           "dozens of busy processes, each its own session, while the runner sleeps: their CPU time is the cell's, "
           "which is stopped at its limit (long before the wall-clock cap); the honest notebooks graded beside it "
           "keep their exact grades"),
    # ---- the grader trusts nothing a child sends ----------------------------------------------------
    Attack("forged_ready", "parallel_time_serial", "{ref}\n" + _FORGE + """
_forge({"k": "ready", "sandbox": {"network": "host network", "files": "everything"}})
""", ("test_parallel_time_serial",), "unexpected 'ready'",
           "a late 'ready' is no part of a cell: the process is stopped and the isolation report stays the worker's"),
    Attack("forged_start", "transformer", "def transformer(M, layers):\n    pass\n" + _FORGE + """
import time
while True:
    _forge({"k": "start", "cell": 3})
    time.sleep(0.5)
""", (TR,), "unexpected 'start'", "cell boundaries are the worker's: a forged start neither resets nor extends a clock"),
    Attack("huge_numbers", "parallel_time_log", "{ref}\n" + _FORGE + """
_forge(None, raw=b'{"k": "done", "cell": 1' + b"0" * 400 + b', "error": NaN, "blobs": [0]}')
""", ("test_parallel_time_log",), "malformed data", "numbers out of range or not finite are malformed frames"),
    Attack("report_flood", "self_attention", "{ref}\n" + _FORGE + _OWN_CHANNEL + """
def _flood(name, outcomes):
    for _ in range(12):
        _forge({"k": "report", "name": name}, [b"x" * (20 << 20)])
    _submit(name, outcomes)
_channel.submit = _flood
""", ALL, "MiB of hidden-check results",
           "the notebook's hidden-check results are bounded in total: past the budget, no later cell is heard"),
    Attack("output_pieces", "transformer", "{ref}\nfrom IPython.display import display\nfor i in range(20_000):\n"
           "    display(i)", (), "output truncated", "a hundred thousand display() calls: capped in pieces"),
    Attack("forged_outputs", "transformer", "{ref}\n" + _OWN_CHANNEL + """
def _outputs(name, outcomes):
    _runner.SinkPublisher.sink.outputs.extend({"output_type": "stream", "name": "stdout", "text": "x"}
                                              for _ in range(100_000))
    _submit(name, outcomes)
_channel.submit = _outputs
""", (), "truncated by the grader", "outputs written past the child's own caps: the grader caps them again"),
    Attack("partial_credit_overflow", "self_attention", "{ref}\n" + _OWN_CHANNEL + """
def _overflow(name, outcomes):
    if name == "ch1.self_attention":
        _runner.SinkPublisher.sink.outputs.append(
            {"output_type": "execute_result", "data": {"text/plain": "1e9"}, "metadata": {}, "execution_count": 1})
    _submit(name, outcomes)
_channel.submit = _overflow
""", (SA,), "could not be read as a grade", "nbgrader raises on partial credit above the points: here 0, with why"),
    Attack("execute_result_no_text", "transformer", "{ref}\n" + _OWN_CHANNEL + """
def _no_text(name, outcomes):
    if name == "ch1.transformer":
        _runner.SinkPublisher.sink.outputs.append(
            {"output_type": "execute_result", "data": {"image/png": "iVBORw0KGgo="}, "metadata": {},
             "execution_count": 1})
    _submit(name, outcomes)
_channel.submit = _no_text
""", (TR,), "could not be read as a grade", "nbgrader raises KeyError without text/plain: here 0, with why"),
    Attack("judge_flood", "softmax_time", "{ref}\n" + _OWN_CHANNEL + """
from attnlab.grading import Outcome
def _many(name, outcomes):
    if name == "ch1.LAYER_TIME_PRACTICE":  # the right answer: a verdict already known (the cache) needs no budget
        return _submit(name, outcomes)
    for k in range(20, 84):  # every one valid, distinct, and slow to expand
        _submit(name, [Outcome(value=f"(T+2*K)**{k} - (2*T+K)**{k}")])
_channel.submit = _many
""", tuple(t for t in ORDER[ORDER.index("test_softmax_time"):] if t != "test_layer_time_practice"),
           "longer than its budget",
           "64 distinct symbolic answers per question from the softmax cell on: the notebook's judging budget stops "
           "them, the run goes on, and the next notebook gets a fresh budget"),
    Attack("a_cache_poison", "self_attention", "{ref}\n" + _FORGE + _OWN_CHANNEL + """
def _resplit(name, outcomes):
    if name != "ch1.self_attention":
        return _submit(name, outcomes)
    blobs = [_runner._encode_outcome(o) for o in outcomes]
    blobs[0], blobs[1] = blobs[0] + blobs[1][:1], blobs[1][1:]
    _forge({"k": "report", "name": name}, blobs)
_channel.submit = _resplit
""", (SA,), "could not be read", "right outputs split at other places: an ambiguous cache key would have failed "
        "every honest student after it; per-notebook trials and length-prefixed keys do not"),
    # ---- verdicts that cannot be bought (issue 22) ---------------------------------------------------
    Attack("minus_inf_on_hidden_sizes", "self_attention", '''
        {ref}
        _sa = self_attention
        def self_attention(M, WQ, WK, WV):
            out = _sa(M, WQ, WK, WV)
            first = torch.arange(out.numel(), device=out.device).view(out.shape) == 0
            return out.masked_fill(first, float("-inf")) if M.shape[0] == 7 else out
        ''', (SA,), "-inf where the reference is finite", "one -inf on a hidden size: only a reference's -inf is one"),
    Attack("wire_bomb", "self_attention", "{ref}\n" + _FORGE + _OWN_CHANNEL + """
import io as _io, json as _json, numpy as _np
def _bomb(name, outcomes):
    if name != "ch1.self_attention":
        return _submit(name, outcomes)
    node = {"t": 0, "dtype": "float64", "device": "cpu", "shape": [1 << 18]}  # a float16 array named float64
    head = _json.dumps({"d": {"value": {"l": [node] * 4000}, "error": {"v": None}}}).encode()
    buf = _io.BytesIO()
    buf.write(len(head).to_bytes(8, "little"))
    buf.write(head)
    _np.save(buf, _np.zeros(1 << 18, dtype=_np.float16))  # 512 KiB, 4000 references: 8 GiB widened and copied
    _forge({"k": "report", "name": name}, [buf.getvalue()] * len(outcomes))
_channel.submit = _bomb
""", (SA,), "could not be read", "a 1 MiB result that decoded to 8 GiB per outcome: decoding is linear, in the "
        "stored dtype, shared references shared, within a budget"),
    Attack("two_faced_upstream", mutate=_two_faced, lost=(TR,), feedback="passed its own check",
           why="self_attention right when called alone, zeros when called by transformer: the log recorded inside "
               "transformer disagrees with the function that passed its own check"),
    Attack("duplicate_test_cell", mutate=_duplicate_test, lost=(SA,), feedback="duplicate nbgrader id",
           why="a second copy of a test cell (its grade_id twice) is an ordinary cell: points are counted once"),
    Attack("reordered_cells", mutate=_reorder, lost=(TR,), feedback="NameError",
           why="a test cell moved before the answer it tests runs where the student put it: it gains nothing"),
    Attack("not_utf8", mutate=lambda nb, ctx: nbformat.writes(nb).encode("utf-16"), lost=ALL, feedback="not JSON"),
    Attack("many_cells", mutate=_many_cells, lost=ALL, feedback="cells, more than",
           why="tens of thousands of cells (a million would only be larger): refused before anything is built"),
]
