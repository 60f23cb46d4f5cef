"""The grader's side of the workers: start them (fresh interpreters, a minimal environment), hand out jobs,
notice deaths."""
from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

from autograder.engine import protocol
from autograder.errors import AutograderError

RESULT_MAX = 1 << 30  # a worker's result frame (it already holds every notebook cap)


class WorkerError(AutograderError):
    """A worker could not start or died."""


@dataclass
class Worker:
    """One worker process and its socket."""

    slot: int
    proc: subprocess.Popen
    sock: socket.socket
    reader: protocol.FrameReader
    log: str
    isolation: dict = field(default_factory=dict)
    zygote: dict = field(default_factory=dict)
    job: object = None  # what the scheduler gave it (None: idle)

    @property
    def fd(self) -> int:
        return self.sock.fileno()

    def log_tail(self, n: int = 1500) -> str:
        try:
            with open(self.log, "rb") as f:
                f.seek(max(0, os.path.getsize(self.log) - n))
                return f.read().decode(errors="replace")
        except OSError:
            return ""


def worker_env() -> dict[str, str]:
    """A worker's whole environment: none of the grader's variables (database URLs, tokens) reach it;
    PYTHONPATH does, when the grader found its own packages through it."""
    env = {"PATH": os.pathsep.join([os.path.dirname(sys.executable), "/usr/bin", "/bin"]), "LANG": "C.UTF-8",
           "PYTHONHASHSEED": "0", "TMPDIR": tempfile.gettempdir()}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


class Pool:
    """N workers started from a fresh interpreter (never forked from the grader: no secrets inherited)."""

    def __init__(self, n: int, init: dict, startup_timeout: float = 900.0) -> None:
        self.init, self.timeout = init, startup_timeout
        self.logdir = tempfile.mkdtemp(prefix="ag-workers-")
        self.workers = [self._spawn(slot) for slot in range(n)]

    def ready(self) -> None:
        """Wait until every worker's sandbox is up (they start in parallel)."""
        for w in self.workers:
            self._greet(w)
        for w in self.workers:
            self._isolated(w)

    def _spawn(self, slot: int) -> Worker:
        ours, theirs = socket.socketpair()
        log = os.path.join(self.logdir, f"worker{slot}.log")
        with open(log, "ab") as err:
            proc = subprocess.Popen([sys.executable, "-m", "autograder.engine.worker", str(theirs.fileno())],
                                    pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=err, stderr=err,
                                    env=worker_env(), close_fds=True, cwd="/", process_group=0)  # as the judge's
        theirs.close()
        ours.setblocking(False)
        w = Worker(slot, proc, ours, protocol.FrameReader(ours.fileno(), RESULT_MAX), log)
        # The init goes at once (the worker reads it after its hello), so the sandbox starts while the grader
        # reads the gradebook and checks the reference: sent from `ready`, it waited for all of that.
        init = dict(self.init)
        init["uid"] = init["uid_base"] + slot if init.get("root") else os.getuid()
        protocol.send(w.fd, {"k": "init", "slot": slot, **init})
        return w

    def _greet(self, w: Worker) -> None:
        msg = protocol.recv_blocking(w.reader, timeout=self.timeout)
        if msg is None or msg.kind != "hello":
            raise WorkerError(f"worker {w.slot} did not start:\n{w.log_tail()}")

    def _isolated(self, w: Worker) -> None:
        msg = protocol.recv_blocking(w.reader, timeout=self.timeout)
        if msg is None or msg.kind != "isolated":
            raise WorkerError(f"worker {w.slot} failed to start its sandbox:\n{w.log_tail()}")
        if msg.header.get("error"):
            raise WorkerError(f"worker {w.slot}: a sandbox cannot start here: {msg.header['error']}\n{w.log_tail()}")
        w.isolation = msg.header.get("report") or {}
        w.zygote = msg.header.get("zygote") or {}

    def restart(self, w: Worker) -> Worker:
        """Replace a dead worker by a fresh one in the same slot."""
        self._stop(w)
        fresh = self._spawn(w.slot)
        self._greet(fresh)
        self._isolated(fresh)
        self.workers[self.workers.index(w)] = fresh
        return fresh

    def idle(self) -> list[Worker]:
        return [w for w in self.workers if w.job is None]

    def busy(self) -> bool:
        return any(w.job is not None for w in self.workers)

    def send(self, w: Worker, job: object, header: dict, blobs: list[bytes]) -> None:
        """Give `w` a job (raises WorkerError if it is gone)."""
        w.job = job
        try:
            protocol.send(w.fd, header, blobs)
        except OSError as exc:
            raise WorkerError(f"worker {w.slot} is gone ({exc})") from None

    def wait(self, timeout: float) -> list[tuple[Worker, protocol.Message | None]]:
        """Results that arrived within `timeout` s; (worker, None) for a worker that died."""
        busy = [w for w in self.workers if w.job is not None]
        if not busy:
            return []
        readable, _, _ = select.select([w.fd for w in busy], [], [], timeout)
        out = []
        for w in busy:
            if w.fd not in readable:
                if w.proc.poll() is not None:
                    out.append((w, None))
                continue
            w.reader.fill()
            messages = w.reader.messages()
            out.extend((w, m) for m in messages)
            if w.reader.error or (w.reader.eof and not messages):
                out.append((w, None))
        return out

    def _stop(self, w: Worker) -> None:
        try:
            w.sock.close()
        except OSError:
            pass
        try:
            w.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            w.proc.kill()
            w.proc.wait()

    def close(self) -> None:
        """Stop every worker: it holds nothing worth saving (its sandboxes die with it)."""
        for w in self.workers:
            try:
                w.sock.close()
            except OSError:
                pass
        for w in self.workers:
            try:
                w.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait()
