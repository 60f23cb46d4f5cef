"""The sandboxed child: runs one notebook's code cells in IPython and reports each cell over a pipe.

Everything here runs on the student's side of the trust boundary. The child announces
each cell (`start`), sends the hidden checks' outcomes as soon as they are produced
(`report`, wire-encoded plain data), and the cell's outputs when it ends (`done`). The
worker that forked it watches the time and the pipe; the grader decides the scores.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from typing import Any

from IPython.core.displayhook import DisplayHook
from IPython.core.displaypub import DisplayPublisher
from IPython.core.interactiveshell import InteractiveShell

from attnlab import grading, wire
from autograder.engine import protocol, sandbox
from autograder.engine.limits import Limits
from coursenb.cells import SAFE_MIME

_send = protocol.send  # bound now: the student may rebind module attributes later


class CellTimeout(BaseException):
    """The cell ran past its wall-time limit (raised in the cell, like nbgrader's interrupt)."""


class Sink:
    """The current cell's outputs in nbformat shape, capped in bytes (truncated with a note)."""

    def __init__(self, cell_cap: int, total_cap: int) -> None:
        self.cell_cap, self.total_left = cell_cap, total_cap
        self.outputs: list[dict] = []
        self.used = 0
        self.truncated = False

    def begin(self) -> None:
        self.outputs, self.used, self.truncated = [], 0, False

    def _room(self, n: int) -> bool:
        cap = min(self.cell_cap, self.total_left)
        if self.used + n <= cap:
            self.used += n
            self.total_left -= n
            return True
        if not self.truncated:
            self.truncated = True
            self.outputs.append({"output_type": "stream", "name": "stdout",
                                 "text": f"\n... output truncated: more than {cap} bytes ...\n"})
        return False

    def stream(self, name: str, text: str) -> None:
        if not text or self.truncated:
            return
        room = min(self.cell_cap, self.total_left) - self.used
        if len(text) > room:
            self.stream(name, text[:max(room, 0)])
            self._room(len(text))  # adds the note
            return
        self.used += len(text)
        self.total_left -= len(text)
        last = self.outputs[-1] if self.outputs else None
        if last and last["output_type"] == "stream" and last["name"] == name:
            last["text"] += text
        else:
            self.outputs.append({"output_type": "stream", "name": name, "text": text})

    def rich(self, kind: str, data: dict, metadata: dict | None, count: int | None = None) -> None:
        data = {k: v if isinstance(v, str) else json.dumps(v) for k, v in (data or {}).items() if k in SAFE_MIME}
        if not data or self.truncated or not self._room(sum(len(v) for v in data.values())):
            return
        out: dict[str, Any] = {"output_type": kind, "data": data, "metadata": _plain_metadata(metadata, data)}
        if kind == "execute_result":
            out["execution_count"] = count
        self.outputs.append(out)

    def error(self, ename: str, evalue: str, traceback: list[str]) -> None:
        tb = [str(line)[:4000] for line in traceback[:200]]
        self.used += sum(map(len, tb))
        self.outputs.append({"output_type": "error", "ename": str(ename)[:200], "evalue": str(evalue)[:2000],
                             "traceback": tb})


def _plain_metadata(metadata: dict | None, data: dict) -> dict:
    md = {}
    for mime, value in (metadata or {}).items():
        if mime in data and isinstance(value, dict):
            md[mime] = {k: v for k, v in value.items() if k in ("width", "height") and isinstance(v, (int, float))}
    return md


class Stream:
    """sys.stdout / sys.stderr of the notebook: text goes into the sink."""

    def __init__(self, sink: Sink, name: str) -> None:
        self.sink, self.name = sink, name
        self.encoding, self.errors = "utf-8", "replace"

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            text = str(text)
        self.sink.stream(self.name, text)
        return len(text)

    def writelines(self, lines: Sequence[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return 1 if self.name == "stdout" else 2

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False


class SinkPublisher(DisplayPublisher):
    """display(...) and inline figures become display_data outputs."""

    sink: Sink | None = None

    def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs) -> None:
        if SinkPublisher.sink is not None:
            SinkPublisher.sink.rich("display_data", data, metadata)

    def clear_output(self, wait: bool = False) -> None:
        if SinkPublisher.sink is not None:
            SinkPublisher.sink.outputs.clear()


class SinkDisplayHook(DisplayHook):
    """A cell's last expression becomes an execute_result output."""

    def write_output_prompt(self) -> None:
        return None

    def write_format_data(self, format_dict, md_dict=None) -> None:
        if SinkPublisher.sink is not None:
            SinkPublisher.sink.rich("execute_result", format_dict, md_dict, self.shell.execution_count)

    def finish_displayhook(self) -> None:
        self._is_active = False


class GraderShell(InteractiveShell):
    """An IPython shell whose tracebacks become error outputs."""

    def enable_gui(self, gui=None) -> None:
        return None  # no event loop: figures go out inline

    def _showtraceback(self, etype, evalue, stb) -> None:
        if SinkPublisher.sink is not None:
            SinkPublisher.sink.error(getattr(etype, "__name__", str(etype)), str(evalue), list(stb))
            self._error_shown = True


def make_shell() -> GraderShell:
    """The notebook shell, made once in the warm worker (every child inherits a clean copy)."""
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "nocolor"
    shell = GraderShell.instance(config=config, display_pub_class=SinkPublisher, displayhook_class=SinkDisplayHook)
    shell.enable_matplotlib("inline")
    return shell


class PipeChannel:
    """The hidden checks' channel to the grader: trials from the job, outcomes back as plain data."""

    def __init__(self, fd: int, trials: dict[str, bytes]) -> None:
        self.fd, self._trials = fd, trials

    def trials(self, name: str) -> list[tuple]:
        blob = self._trials.get(name)
        return list(wire.decode(blob)) if blob is not None else []

    def submit(self, name: str, outcomes: list[grading.Outcome]) -> None:
        blobs = [_encode_outcome(o) for o in outcomes[:10_000]]
        _send(self.fd, {"k": "report", "name": str(name)[:200]}, blobs)


def _encode_outcome(outcome: object) -> bytes:
    try:
        value, error = outcome.value, outcome.error  # type: ignore[attr-defined]
        return wire.encode({"value": value, "error": None if error is None else str(error)[:500]})
    except Exception as exc:  # noqa: BLE001 - anything unsendable is the student's error
        return wire.encode({"value": None, "error": f"the result cannot be sent to the grader: {str(exc)[:300]}"})


def child_main(fd: int, job: dict, blobs: list[bytes], plan: sandbox.Plan, limits: Limits,
               cells: list[int], shell: GraderShell) -> None:
    """Isolate, then run `cells` (indices into job['cells']) and report; never returns."""
    _close_fds(fd)
    files = [(rel, blobs[i]) for rel, i in job.get("files", [])]
    report = sandbox.enter(plan, limits, files, int(job.get("threads", 1)))
    trials = {name: blobs[i] for name, i in job.get("trials", {}).items()}
    del blobs, files
    _send(fd, {"k": "ready", "sandbox": report})
    sink = Sink(limits.cell_output_bytes, limits.total_output_bytes)
    SinkPublisher.sink = sink
    sys.stdout, sys.stderr = Stream(sink, "stdout"), Stream(sink, "stderr")
    grading.install_channel(PipeChannel(fd, trials))
    signal.signal(signal.SIGALRM, _on_alarm)
    sources, me = job["cells"], os.getpid()
    kill_strays, exit_now, getpid = sandbox.kill_strays, os._exit, os.getpid  # bound before student code
    for k in cells:
        _send(fd, {"k": "start", "cell": k})
        sink.begin()
        shell._error_shown = False
        started = time.perf_counter()
        failed = _run_cell(shell, sources[k], limits.cell_seconds, sink)
        seconds = time.perf_counter() - started
        if getpid() != me:
            exit_now(0)  # a process the cell forked must not speak for the notebook
        kill_strays(plan)
        _send(fd, {"k": "done", "cell": k, "error": failed, "seconds": seconds, "count": shell.execution_count - 1},
              [json.dumps(sink.outputs).encode()])
    _send(fd, {"k": "end"})
    exit_now(0)


def _run_cell(shell: GraderShell, source: str, seconds: float, sink: Sink) -> bool:
    """Run one cell under a soft time limit; True if it raised."""
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        result = shell.run_cell(source, store_history=True)
        error = result.error_before_exec or result.error_in_exec
    except BaseException as exc:  # noqa: BLE001 - a timeout outside the cell's own code
        error = exc
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    if error is not None and not shell._error_shown:
        sink.error(type(error).__name__, str(error), [f"{type(error).__name__}: {error}"])
    return error is not None


def _on_alarm(signum: int, frame: object) -> None:
    raise CellTimeout("the cell ran past its time limit")


def _close_fds(keep: int) -> None:
    """Only the pipe to the worker stays open; stdin/stdout/stderr go to /dev/null."""
    null = os.open(os.devnull, os.O_RDWR)
    for target in (0, 1, 2):
        os.dup2(null, target)
    os.closerange(3, keep)
    os.closerange(keep + 1, 65536)
