"""A worker: the trusted supervisor of one grading slot. It runs no notebook code.

Started by the grader as `python -m autograder.engine.worker FD` (a fresh interpreter, a
minimal environment). It starts this slot's zygote inside bubblewrap (`sandbox.Plan`), checks
that a sandbox comes up (`self_test`), then for each job from the grader drives the notebook
through children forked from the zygote (`driver.Driver`) and sends back the result: plain
data, judged by the grader. The worker imports neither torch nor the notebooks' stack, and
never `solutions` or the checks.
"""
from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from autograder.engine import protocol, seccomp
from autograder.engine.driver import Chores, Driver, Spare
from autograder.engine.limits import Limits
from autograder.engine.sandbox import Plan, SandboxError, layout

ZYGOTE_START_SECONDS = 600.0  # importing torch on a loaded machine
TEARDOWN_AFTER_S = 0.5  # a notebook's stopped processes are torn down then, or when the next job comes if sooner
PR_SET_PDEATHSIG, PR_SET_DUMPABLE = 1, 4


def _prctl(option: int, value: int) -> None:
    ctypes.CDLL(None, use_errno=True).prctl(option, ctypes.c_ulong(value), 0, 0, 0)


class Zygote:
    """This slot's zygote process (in bubblewrap) and the control socket it takes `fork` frames on."""

    def __init__(self, plan: Plan, log: int) -> None:
        self.plan = plan
        ours, theirs = socket.socketpair()
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        keep = [theirs.fileno()]
        program, passwd, group = seccomp.program(), *plan.accounts()
        seccomp_fd = _memfd("seccomp", program) if program is not None and plan.mode != "none" else None
        passwd_fd = _memfd("passwd", passwd) if plan.mode != "none" else None
        group_fd = _memfd("group", group) if plan.mode != "none" else None
        keep += [fd for fd in (seccomp_fd, passwd_fd, group_fd) if fd is not None]
        cmd = plan.zygote_command(theirs.fileno(), seccomp_fd, passwd_fd, group_fd)
        env = plan.zygote_env() if plan.mode == "none" else {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
        self.proc = subprocess.Popen(cmd, pass_fds=keep, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                                     close_fds=True, start_new_session=True)
        for fd in keep:
            os.close(fd)
        self.sock = ours
        self.reader = protocol.FrameReader(ours.fileno(), 1 << 20, credentials=True)
        self.pid: int | None = None
        self.hello: dict = {}
        self.lock = threading.Lock()  # a spare child is forked from another thread

    def wait_hello(self) -> dict:
        """The zygote's hello (its imports, its environment's names); SandboxError if it did not start."""
        self.sock.setblocking(False)
        try:
            msg = protocol.recv_blocking(self.reader, timeout=ZYGOTE_START_SECONDS)
        except protocol.ProtocolError as exc:
            raise SandboxError(f"the zygote sent garbage ({exc})") from None
        self.sock.setblocking(True)
        if msg is None or msg.kind != "hello":
            code = self.proc.poll()
            raise SandboxError("the zygote did not start" + (f" (exit code {code})" if code is not None else ""))
        if msg.header.get("leaked"):
            raise SandboxError(f"the zygote has instructor modules loaded: {msg.header['leaked']}")
        self.pid, self.hello = msg.pid, msg.header
        return msg.header

    def fork(self) -> tuple[socket.socket, int]:
        """A new notebook: (the worker's end of its socket, the read end of its status pipe)."""
        ours, theirs = socket.socketpair()
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        status_r, status_w = os.pipe()
        try:
            with self.lock:
                protocol.send_fds(self.sock, {"k": "fork"}, [theirs.fileno(), status_w])
        finally:
            theirs.close()
            os.close(status_w)
        ours.setblocking(False)
        return ours, status_r

    def tasks(self) -> int:
        """Tasks (threads) of the zygote: they count against the sandbox user's process limit."""
        try:
            return len(os.listdir(f"/proc/{self.pid}/task")) if self.pid else 1
        except OSError:
            return 1

    def close(self) -> None:
        """Stop the zygote (it holds nothing): bubblewrap's death takes it and every child along."""
        try:
            self.sock.close()
        except OSError:
            pass
        self.proc.kill()
        self.proc.wait()


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, 0)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def make_plan(init: dict) -> Plan:
    """This worker's plan from the grader's init message."""
    limits = Limits.from_dict(init.get("limits", {}))
    if limits.sandbox not in ("auto", "userns", "none"):
        raise SandboxError(f"Limits.sandbox must be auto, userns or none, not {limits.sandbox!r}")
    if limits.sandbox in ("none", "userns"):
        mode = limits.sandbox
    else:
        mode = "root" if os.geteuid() == 0 else "userns"
    return Plan(mode=mode, uid=int(init["uid"]), network=bool(limits.network),
                layout=layout(tuple(limits.allow_paths), tuple(limits.hide_paths)) if mode != "none" else layout(),
                cgroup=init.get("cgroup"), cgroup_why=str(init.get("cgroup_why", "")), threads=int(init["threads"]),
                warm_many=bool(init.get("warm_many", True)))


def self_test(zygote: Zygote, plan: Plan, slot: int) -> str | None:
    """Run a one-cell notebook; None if it ran, else why not (the grader stops: no one gets zeros)."""
    job = {"id": 0, "cells": [0], "trials": {}, "files": [], "mime": ["text/plain"], "threads": 1}
    driver = Driver(job, [b"1 + 1"], zygote, plan, Limits(), f"s{slot}-selftest")
    header, _ = driver.run()
    driver.cleanup()
    if header["infra"]:
        return header["infra"]
    rec = header["cells"][0]
    if rec.get("status") != "ok":
        return f"a one-line notebook did not run in the sandbox ({rec.get('reason') or rec.get('status')})"
    return None


def main(fd: int) -> None:
    """Serve jobs from the grader until it closes the socket."""
    _prctl(PR_SET_DUMPABLE, 0)
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    os.set_blocking(fd, False)
    reader = protocol.FrameReader(fd, 1 << 31)
    protocol.send(fd, {"k": "hello", "pid": os.getpid()})
    init = protocol.recv_blocking(reader)
    if init is None or init.kind != "init":
        return
    slot = int(init.header["slot"])
    started = time.perf_counter()
    zygote = None
    try:
        plan = make_plan(init.header)
        zygote = Zygote(plan, sys.stderr.fileno())
        hello = zygote.wait_hello()
        problem = self_test(zygote, plan, slot)
    except (SandboxError, OSError) as exc:
        plan, hello, problem = None, {}, str(exc)
    report = plan.report() if plan is not None else {}
    protocol.send(fd, {"k": "isolated", "report": report, "error": problem, "zygote_seconds": time.perf_counter() - started,
                       "zygote": {k: hello.get(k) for k in ("import_seconds", "import_failures", "exercise_seconds",
                                                            "exercise_failures", "environ")}})
    if problem:
        if zygote is not None:
            zygote.close()
        return
    jobs, spare, last, retired, endings = 0, Spare(), None, None, Chores("teardown")

    def teardown(driver: Driver) -> None:
        """A notebook's processes go, in a thread of their own (killed and waited for beside what runs next)."""
        endings.put(driver.cleanup)

    try:
        while True:
            msg = protocol.recv_blocking(reader, None if last is None else TEARDOWN_AFTER_S)
            if last is not None and (msg is None or msg.kind != "job"):  # no job came: the last notebook goes now,
                teardown(last)  # after the grader judged it
                last = None
                if msg is None and not reader.eof:
                    continue
            if msg is None or msg.kind != "job":
                return
            jobs += 1
            retired, last = last, None  # a job came first: the last notebook goes once the new one's first cell runs
            driver = Driver(msg.header, msg.blobs, zygote, plan, Limits.from_dict(msg.header["limits"]),
                            f"s{slot}-j{jobs}", spare, (lambda d=retired: teardown(d)) if retired is not None else None)
            header, blobs = driver.run()
            protocol.send(fd, header, blobs)
            driver.stop()  # stopped at once; torn down (the kernel freeing its memory) off the grader's critical path:
            last = driver  # not while the grader judges it
    finally:
        endings.close()
        for done in (retired, last):  # (cleanup twice is once)
            if done is not None:
                done.cleanup()
        spare.close()
        zygote.close()


if __name__ == "__main__":
    main(int(sys.argv[1]))
