"""A warm worker: imports the student-side stack once, then forks one sandboxed child per notebook.

Started by the grader as `python -m autograder.engine.worker FD` (a fresh interpreter, so
nothing of the grader's memory — solutions, checks, seed — is ever in it). It imports
torch, numpy, IPython, matplotlib and attnlab, never `solutions` or the hidden checks, and
talks to the grader over the socket FD with `protocol` frames.

Per notebook it forks a child (runner.child_main), watches the child's announcements
against the cell and notebook time limits, and SIGKILLs it on overrun. When the child
dies at cell i, a fresh child replays the cells before i (their outputs are discarded),
cell i is marked failed with the reason, and grading goes on from cell i+1.
"""
from __future__ import annotations

import dataclasses
import os
import select
import signal
import sys
import time

WARM_MODULES = ("numpy", "torch", "torch.nn", "torch.nn.functional", "matplotlib", "matplotlib.pyplot",
                "matplotlib_inline.backend_inline", "IPython", "IPython.display", "sympy", "attnlab")
FORBIDDEN = ("solutions", "autograder.judge", "autograder.checks", "autograder.course")


def warm_up() -> dict:
    """Import the notebooks' stack (and every attnlab module); returns timings and failures."""
    import importlib
    import pkgutil

    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    started, failed = time.perf_counter(), {}
    for name in WARM_MODULES:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - a missing optional module only slows notebooks
            failed[name] = f"{type(exc).__name__}: {exc}"[:200]
    attnlab = sys.modules.get("attnlab")
    if attnlab is not None:
        for info in pkgutil.walk_packages(attnlab.__path__, "attnlab."):
            try:
                importlib.import_module(info.name)
            except Exception as exc:  # noqa: BLE001
                failed[info.name] = f"{type(exc).__name__}: {exc}"[:200]
    return {"import_seconds": time.perf_counter() - started, "import_failures": failed}


def main(fd: int) -> None:
    """Serve jobs from the grader until it closes the socket."""
    from autograder.engine import protocol, runner, sandbox
    from autograder.engine.limits import Limits

    sandbox.prepare_worker()
    info = warm_up()
    shell = runner.make_shell()
    leaked = sorted(m for m in sys.modules if m.split(".")[0] == "solutions" or m.startswith(FORBIDDEN[1:]))
    os.set_blocking(fd, False)
    reader = protocol.FrameReader(fd, 1 << 31)
    protocol.send(fd, {"k": "hello", "pid": os.getpid(), "leaked": leaked, **info})
    if leaked:
        sys.exit(3)
    init = protocol.recv_blocking(reader)
    if init is None or init.kind != "init":
        return
    plan = sandbox.Plan(slot=int(init.header["slot"]), uid_base=int(init.header["uid_base"]),
                        hide=tuple(init.header["hide"]),
                        keep=tuple(init.header["keep"]), hide_files=tuple(init.header["hide_files"]),
                        venv_bin=os.path.dirname(sys.executable), network=bool(init.header.get("network")))
    plan = dataclasses.replace(plan, worker_report=tuple(sandbox.isolate_worker(plan).items()))
    sandbox.prepare_worker()  # again: a new user namespace may have cleared the parent-death signal
    problem = self_test(plan)
    protocol.send(fd, {"k": "isolated", "report": dict(plan.worker_report), "error": problem})
    if problem:
        return
    while True:
        msg = protocol.recv_blocking(reader)
        if msg is None or msg.kind != "job":
            return
        limits = Limits.from_dict(msg.header["limits"])
        notebook = Notebook(msg.header, msg.blobs, plan, limits, shell)
        header, blobs = notebook.run()
        protocol.send(fd, header, blobs)
        notebook.cleanup()  # off the grader's critical path


def self_test(plan) -> str | None:
    """Start one empty sandbox; None if it came up, else why not (the grader stops: no one gets zeros)."""
    from autograder.engine import sandbox
    from autograder.engine.limits import Limits

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            sandbox.enter(plan, Limits(), [], 1)
            os.write(w, b"ok")
        except BaseException as exc:  # noqa: BLE001 - reported to the grader
            os.write(w, f"{type(exc).__name__}: {exc}".encode()[:500])
        os._exit(0)
    os.close(w)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(r, "rb") as f:
        said = f.read().decode(errors="replace")
    sandbox.sweep(plan, pgid=pid)
    return None if said == "ok" else f"a sandbox cannot start here: {said or _describe_exit(status)}"


class Notebook:
    """One notebook's execution: children, replays after crashes, the per-cell records."""

    def __init__(self, job: dict, blobs: list[bytes], plan, limits, shell) -> None:
        self.job, self.blobs, self.plan, self.limits, self.shell = job, blobs, plan, limits, shell
        n = len(job["cells"])
        self.records: list[dict | None] = [None] * n
        self.reports: list[list[tuple[str, list[bytes]]]] = [[] for _ in range(n)]
        self.outputs: list[bytes] = [b"[]"] * n
        self.skip: set[int] = set()
        self.next_live = 0
        self.restarts = 0
        self.sandbox: dict = {}
        self.ready_s = 0.0
        self.pending: int | None = None
        self.infra: str | None = None
        self.deadline = time.monotonic() + limits.notebook_seconds

    def run(self) -> tuple[dict, list[bytes]]:
        """Run every cell; returns the result frame's header and blobs."""
        from autograder.engine import sandbox

        started = time.perf_counter()
        n = len(self.records)
        while self.next_live < n:
            cells = [k for k in range(self.next_live) if k not in self.skip] + list(range(self.next_live, n))
            pid, death = self._child(cells)
            if death is None:
                self.pending = pid  # reaped after the result is sent (`cleanup`)
                break
            sandbox.sweep(self.plan, pgid=pid)
            if self.infra:
                break
            self.restarts += 1
            if time.monotonic() >= self.deadline:
                self._rest("not run: the notebook reached its time limit "
                           f"of {self.limits.notebook_seconds:g} s")
                break
            if self.restarts > self.limits.max_restarts:
                self._rest(f"not run: the notebook's process crashed {self.restarts} times")
                break
        for k in range(n):
            if self.records[k] is None:
                self.records[k] = {"status": "skipped", "reason": "not run (the notebook stopped before this cell)"}
        return self._result(time.perf_counter() - started)

    def _rest(self, reason: str) -> None:
        for k in range(self.next_live, len(self.records)):
            if self.records[k] is None:
                self.records[k] = {"status": "skipped", "reason": reason}
        self.next_live = len(self.records)

    def _child(self, cells: list[int]) -> tuple[int, str | None]:
        """Fork a child for `cells`, watch it; returns (pid, None or why it died). A finished child is not reaped."""
        from autograder.engine import protocol, runner

        replay = set(range(self.next_live))
        r, w = os.pipe()
        forked = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            try:
                os.close(r)
                runner.child_main(w, self.job, self.blobs, self.plan, self.limits, cells, self.shell)
            finally:
                os._exit(71)
        os.close(w)
        os.set_blocking(r, False)
        pidfd = os.pidfd_open(pid)
        reader = protocol.FrameReader(r, max_frame=2 * self.limits.cell_output_bytes + (256 << 20))
        current: int | None = None
        cell_deadline = float("inf")
        ready = finished = False
        death: str | None = None
        exited = False
        try:
            while True:
                now = time.monotonic()
                limit = min(cell_deadline, self.deadline)
                if now >= limit:
                    death = self._overrun(cell_deadline <= self.deadline)
                    break
                rl, _, _ = select.select([r, pidfd], [], [], min(limit - now, 5.0))
                if r in rl:
                    reader.fill()
                if pidfd in rl:
                    exited = True
                    reader.fill()
                for msg in reader.messages():
                    k = msg.header.get("cell")
                    if msg.kind == "ready":
                        ready = True
                        self.ready_s += time.perf_counter() - forked
                        self.sandbox = msg.header.get("sandbox", {}) if isinstance(msg.header.get("sandbox"), dict) else {}
                    elif msg.kind == "start" and k in cells and current is None:
                        current = k
                        cell_deadline = time.monotonic() + self.limits.cell_seconds + self.limits.grace_seconds
                    elif msg.kind == "report" and current is not None:
                        if current not in replay:  # a replayed cell's checks were already counted
                            self.reports[current].append((str(msg.header.get("name", ""))[:200], msg.blobs))
                    elif msg.kind == "done" and k == current:
                        if current not in replay:
                            self._record(current, msg)
                            self.next_live = current + 1
                        current, cell_deadline = None, float("inf")
                    elif msg.kind == "end":
                        finished = True
                    else:
                        raise protocol.ProtocolError(f"unexpected message {msg.kind!r}")
                if reader.error:
                    raise protocol.ProtocolError(reader.error)
                if finished:
                    break
                if exited:
                    break
                if reader.eof:  # exiting closes the pipe a moment before the exit is reported
                    if not select.select([pidfd], [], [], 1.0)[0]:
                        death = "the notebook's process closed its channel to the grader"
                    break
        except protocol.ProtocolError as exc:
            death = f"the notebook's process sent malformed data to the grader ({exc})"
        os.close(r)
        if finished:
            os.close(pidfd)
            return pid, None
        _kill(pid)
        _, status = os.waitpid(pid, 0)
        os.close(pidfd)
        if death is None:
            death = _describe_exit(status)
        if not ready:  # no student code ran: the grader's problem, not the student's
            self.infra = f"the sandbox could not start ({death})"
            return pid, self.infra
        self._died(current, death, replay)
        return pid, death

    def cleanup(self) -> None:
        """After the result is sent: wait for the last child to exit (kill it if it lingers), then sweep."""
        from autograder.engine import sandbox

        if self.pending is None:
            return
        pid, self.pending = self.pending, None
        deadline = time.monotonic() + self.limits.grace_seconds
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            if time.monotonic() >= deadline:
                _kill(pid)
                os.waitpid(pid, 0)
                break
            time.sleep(0.002)
        if sandbox.leftovers(self.plan):
            sandbox.sweep(self.plan, pgid=pid)
        sandbox.reap()

    def _overrun(self, cell: bool) -> str:
        if cell:
            return f"the cell ran past its time limit of {self.limits.cell_seconds:g} s and was stopped"
        return f"the notebook ran past its time limit of {self.limits.notebook_seconds:g} s and was stopped"

    def _record(self, k: int, msg) -> None:
        h = msg.header
        self.records[k] = {"status": "error" if h.get("error") else "ok",
                           "seconds": float(h.get("seconds", 0.0)) if isinstance(h.get("seconds"), (int, float)) else 0.0,
                           "count": h.get("count") if isinstance(h.get("count"), int) else None}
        self.outputs[k] = msg.blobs[0] if msg.blobs else b"[]"

    def _died(self, current: int | None, why: str, replay: set[int]) -> None:
        """Charge the death to the running cell (or the next one), never to the cells already done."""
        k = current if current is not None else self.next_live
        if k >= len(self.records):
            return
        if k in replay:
            why = f"crashed again when re-run after a later cell's crash: {why}"
        self.records[k] = {"status": "killed", "reason": why}
        self.reports[k] = []
        self.outputs[k] = b"[]"
        self.skip.add(k)
        if k >= self.next_live:
            self.next_live = k + 1

    def _result(self, seconds: float) -> tuple[dict, list[bytes]]:
        blobs: list[bytes] = []
        cells = []
        for k, rec in enumerate(self.records):
            at = len(blobs)
            blobs.append(self.outputs[k])
            reports = []
            for name, outs in self.reports[k]:
                reports.append([name, list(range(len(blobs), len(blobs) + len(outs)))])
                blobs.extend(outs)
            cells.append({**rec, "outputs": at, "reports": reports})
        header = {"k": "result", "id": self.job["id"], "cells": cells, "restarts": self.restarts, "infra": self.infra,
                  "sandbox": self.sandbox, "seconds": seconds, "ready_seconds": self.ready_s}
        return header, blobs


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _describe_exit(status: int | None) -> str:
    """A sentence for how the notebook's process ended."""
    if status is None:
        return "the notebook's process disappeared"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        hint = " (out of memory, or the notebook killed itself)" if sig == signal.SIGKILL else ""
        return f"the notebook's process was killed by signal {name}{hint}"
    if os.WIFEXITED(status):
        return f"the notebook's process exited with code {os.WEXITSTATUS(status)} (sys.exit / os._exit in a cell?)"
    return "the notebook's process stopped"


if __name__ == "__main__":
    main(int(sys.argv[1]))
