"""The grader's side of the warm workers: start them fresh, hand out jobs, notice deaths."""
from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

from autograder.engine import protocol


class WorkerError(RuntimeError):
    """A worker could not start or died."""


@dataclass
class Worker:
    """One warm worker process and its socket."""

    slot: int
    proc: subprocess.Popen
    sock: socket.socket
    reader: protocol.FrameReader
    log: str
    hello: dict = field(default_factory=dict)
    isolation: dict = field(default_factory=dict)
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


class Pool:
    """N workers started from a fresh interpreter (never forked from the grader: no secrets inherited)."""

    def __init__(self, n: int, init: dict, threads: int, startup_timeout: float = 600.0) -> None:
        self.init, self.threads, self.timeout = init, threads, startup_timeout
        self.logdir = tempfile.mkdtemp(prefix="ag-workers-")
        self.workers = [self._spawn(slot) for slot in range(n)]

    def ready(self) -> None:
        """Wait until every worker has warmed up (they start in parallel)."""
        for w in self.workers:
            self._handshake(w)

    def _spawn(self, slot: int) -> Worker:
        ours, theirs = socket.socketpair()
        env = {**os.environ, "OMP_NUM_THREADS": str(self.threads), "MKL_NUM_THREADS": str(self.threads),
               "PYTORCH_NVML_BASED_CUDA_CHECK": "1", "PYTHONHASHSEED": "0",
               "MPLBACKEND": "module://matplotlib_inline.backend_inline",
               "IPYTHONDIR": tempfile.mkdtemp(prefix="ag-ipython-"),
               "MPLCONFIGDIR": tempfile.mkdtemp(prefix="ag-mpl-")}
        log = os.path.join(self.logdir, f"worker{slot}.log")
        with open(log, "ab") as err:
            proc = subprocess.Popen([sys.executable, "-m", "autograder.engine.worker", str(theirs.fileno())],
                                    pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                                    stdout=err, stderr=err, env=env, close_fds=True)
        theirs.close()
        ours.setblocking(False)
        return Worker(slot, proc, ours, protocol.FrameReader(ours.fileno(), 1 << 31), log)

    def _handshake(self, w: Worker) -> None:
        msg = protocol.recv_blocking(w.reader, timeout=self.timeout)
        if msg is None or msg.kind != "hello":
            raise WorkerError(f"worker {w.slot} did not start:\n{w.log_tail()}")
        if msg.header.get("leaked"):
            raise WorkerError(f"worker {w.slot} has instructor modules loaded: {msg.header['leaked']}")
        w.hello = msg.header
        protocol.send(w.fd, {"k": "init", "slot": w.slot, **self.init})
        msg = protocol.recv_blocking(w.reader, timeout=self.timeout)
        if msg is None or msg.kind != "isolated":
            raise WorkerError(f"worker {w.slot} failed to isolate itself:\n{w.log_tail()}")
        if msg.header.get("error"):
            raise WorkerError(f"worker {w.slot}: {msg.header['error']}")
        w.isolation = msg.header.get("report") or {}

    def restart(self, w: Worker) -> Worker:
        """Replace a dead worker by a fresh one in the same slot."""
        self._stop(w)
        fresh = self._spawn(w.slot)
        self._handshake(fresh)
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
            w.proc.wait(timeout=5)
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
            w.proc.kill()
        for w in self.workers:
            w.proc.wait()
