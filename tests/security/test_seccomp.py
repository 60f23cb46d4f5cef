"""The sandbox's seccomp filter, by what it does: a child process loads `seccomp.program()` itself (no_new_privs,
then PR_SET_SECCOMP, as bubblewrap's --seccomp does) and tries each system call the filter refuses and a few it
must let through. Fast: no sandbox, no notebook."""
from __future__ import annotations

import ast
import errno
import platform
import subprocess
import sys

import pytest

from autograder.engine import seccomp

PROBE = r"""
import ctypes, os, sys
program = sys.stdin.buffer.read()
libc = ctypes.CDLL(None, use_errno=True)

class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

assert libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
assert libc.prctl(22, 2, ctypes.byref(Fprog(len(program) // 8, program)), 0, 0) == 0  # PR_SET_SECCOMP, FILTER

def errno_of(*call):
    return ctypes.get_errno() if libc.syscall(*call) == -1 else 0

NR = {NR}
out = {{
    "unshare(CLONE_NEWUSER)": errno_of(NR["unshare"], 0x10000000),
    "clone(CLONE_NEWUSER)": errno_of(NR["clone"], 0x10000000 | 17, 0, 0, 0, 0),
    "clone3": errno_of(NR["clone3"], 0, 0),
    "memfd_create": errno_of(NR["memfd_create"], b"hog", 0),
    "keyctl": errno_of(NR["keyctl"], 0, 0, 0, 0, 0),
    "add_key": errno_of(NR["add_key"], b"user", b"k", b"v", 1, -3),
    "request_key": errno_of(NR["request_key"], b"user", b"k", None, -3),
    "getppid": errno_of(NR["getppid"]),
}}
if {X32}:
    out["x32 getpid"] = errno_of(0x40000000 | 39)
pid = os.fork()
if pid == 0:
    os._exit(7)
out["fork"] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
print(out)
"""
NAMES = ("unshare", "clone", "clone3", "memfd_create", "keyctl", "add_key", "request_key", "getppid")


def test_the_filter_refuses_new_user_namespaces_keyrings_memfd_and_other_abis() -> None:
    import pyseccomp

    machine = platform.machine()
    numbers = {name: pyseccomp.resolve_syscall(pyseccomp.system_arch(), name) for name in NAMES}
    probe = PROBE.format(NR=numbers, X32=machine == "x86_64")
    run = subprocess.run([sys.executable, "-c", probe], input=seccomp.program(), capture_output=True, timeout=120)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    out = ast.literal_eval(run.stdout.decode())
    refused = {"unshare(CLONE_NEWUSER)": errno.EPERM, "clone(CLONE_NEWUSER)": errno.EPERM, "keyctl": errno.EPERM,
               "add_key": errno.EPERM, "request_key": errno.EPERM,
               "clone3": errno.ENOSYS, "memfd_create": errno.ENOSYS}  # ENOSYS: libc falls back, as on an old kernel
    if machine == "x86_64":
        refused["x32 getpid"] = errno.EPERM
    assert {k: out[k] for k in refused} == refused
    assert out["getppid"] == 0 and out["fork"] == 7  # what the filter does not name runs
    assert seccomp.available()


def test_without_libseccomp_the_sandbox_does_not_start_unfiltered(monkeypatch) -> None:
    """No library, no filter: program() raises with what to install (the worker reports it and grades nothing)."""
    seccomp._build.cache_clear()
    monkeypatch.setitem(sys.modules, "pyseccomp", None)  # `import pyseccomp` raises ImportError
    try:
        assert not seccomp.available()
        with pytest.raises(OSError, match="apt-get install libseccomp2"):
            seccomp.program()
    finally:
        seccomp._build.cache_clear()
