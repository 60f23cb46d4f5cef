"""The notebook's runner: runs the cells the worker sends, one at a time, in IPython.

Everything here is on the student's side of the trust boundary, so nothing here decides
anything: the worker sends `run` (a cell's source) and starts that cell's clock, the runner
answers `done` with the cell's outputs, and sends the hidden checks' outcomes (`report`,
plain data) while the cell runs. The worker owns the time limits (it signals and kills this
process from outside), the cell boundaries and the record; the grader owns the verdicts.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from IPython.core.displayhook import DisplayHook
from IPython.core.displaypub import DisplayPublisher
from IPython.core.interactiveshell import InteractiveShell

from attnlab import grading, wire

from . import child, frames

PIECE_BYTES = 64  # what one output piece costs against the byte caps, besides its text

_send = frames.send  # bound now: the notebook may rebind module attributes later


class CellTimeout(BaseException):
    """The cell ran past its time limit (raised in the cell when the worker says so, like nbgrader's interrupt)."""


class Sink:
    """The current cell's outputs in nbformat shape, capped in bytes and in pieces (truncated with a note).

    Only for economy: the worker and the grader enforce the same caps on what arrives.
    """

    def __init__(self, caps: dict, mime: Sequence[str]) -> None:
        self.cell_bytes, self.bytes_left = int(caps["cell_output_bytes"]), int(caps["total_output_bytes"])
        self.cell_items, self.items_left = int(caps["cell_output_items"]), int(caps["total_output_items"])
        self.mime = tuple(mime)
        self.outputs: list[dict] = []
        self.used = 0
        self.truncated = False

    def begin(self) -> None:
        self.outputs, self.used, self.truncated = [], 0, False

    def _room(self) -> int:
        return min(self.cell_bytes - self.used, self.bytes_left)

    def _piece_room(self) -> bool:
        return len(self.outputs) < self.cell_items and self.items_left > 0

    def _take(self, n: int, new_piece: bool) -> None:
        self.used += n
        self.bytes_left -= n
        self.items_left -= 1 if new_piece else 0

    def _truncate(self) -> None:
        if not self.truncated:
            self.truncated = True
            self.outputs.append({"output_type": "stream", "name": "stdout",
                                 "text": "\n... output truncated: the cell's output reached its limit ...\n"})

    def stream(self, name: str, text: str) -> None:
        if not text or self.truncated:
            return
        last = self.outputs[-1] if self.outputs else None
        merge = last is not None and last["output_type"] == "stream" and last["name"] == name
        if not merge and not self._piece_room():
            self._truncate()
            return
        overhead = 0 if merge else PIECE_BYTES
        part = text[:max(self._room() - overhead, 0)]
        if part:
            self._take(len(part) + overhead, not merge)
            if merge:
                last["text"] += part
            else:
                self.outputs.append({"output_type": "stream", "name": name, "text": part})
        if len(part) < len(text):
            self._truncate()

    def rich(self, kind: str, data: dict, metadata: dict | None, count: int | None = None) -> None:
        if self.truncated:
            return
        data = {k: v if isinstance(v, str) else json.dumps(v) for k, v in (data or {}).items() if k in self.mime}
        if not data:
            return
        cost = sum(len(v) for v in data.values()) + PIECE_BYTES
        if not self._piece_room() or cost > self._room():
            self._truncate()
            return
        self._take(cost, True)
        out: dict[str, Any] = {"output_type": kind, "data": data, "metadata": _plain_metadata(metadata, data)}
        if kind == "execute_result":
            out["execution_count"] = count
        self.outputs.append(out)

    def error(self, ename: str, evalue: str, traceback: list[str]) -> None:
        """An error is always kept (it decides the cell's grade), shortened when the caps are reached."""
        tb = [str(line)[:4000] for line in traceback[:100]]
        cost = sum(map(len, tb)) + PIECE_BYTES
        if not self._piece_room() or cost > self._room():
            if any(o["output_type"] == "error" for o in self.outputs):
                return
            tb = []
            cost = PIECE_BYTES
        self._take(cost, True)
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
    """The notebook shell, made once in the zygote (every child inherits a clean copy).

    Figures are built but neither laid out nor drawn: no figure format is registered, so a
    figure's output is its one-line text form (`<Figure size 640x480 with 1 Axes>`), and
    `tight_layout` does nothing (it lays text out, which is most of what a figure costs
    before drawing). Nothing grades a picture; drawing and laying out figures was half of
    what Chapters 0, 2 and 3 cost a grader.
    """
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    config.InteractiveShell.colors = "nocolor"
    config.InlineBackend.figure_formats = set()  # survives a notebook's own `%matplotlib inline`
    shell = GraderShell.instance(config=config, display_pub_class=SinkPublisher, displayhook_class=SinkDisplayHook)
    shell.enable_matplotlib("inline")
    from matplotlib.figure import Figure

    Figure.tight_layout = _no_layout
    return shell


def _no_layout(self, *args: object, **kwargs: object) -> None:
    """Figure.tight_layout while grading: nothing is drawn, so nothing needs laying out."""
    return None


class PipeChannel:
    """The hidden checks' channel to the grader: trials from the job, outcomes back as plain data."""

    def __init__(self, fd: int, trials: dict[str, bytes], max_outcomes: int) -> None:
        self.fd, self._trials, self.max_outcomes = fd, trials, max_outcomes

    def trials(self, name: str) -> list[tuple]:
        blob = self._trials.get(name)
        return list(wire.decode(blob)) if blob is not None else []

    def submit(self, name: str, outcomes: list[grading.Outcome]) -> None:
        blobs = [_encode_outcome(o) for o in outcomes[:self.max_outcomes]]
        _send(self.fd, {"k": "report", "name": str(name)[:200]}, blobs)


def _encode_outcome(outcome: object) -> bytes:
    try:
        value, error = outcome.value, outcome.error  # type: ignore[attr-defined]
        return wire.encode({"value": value, "error": None if error is None else str(error)[:500]})
    except Exception as exc:  # noqa: BLE001 - anything unsendable is the student's error
        return wire.encode({"value": None, "error": f"the result cannot be sent to the grader: {str(exc)[:300]}"})


_in_cell = False


def _on_alarm(signum: int, frame: object) -> None:
    if _in_cell:
        raise CellTimeout("the cell ran past its time limit")


def main(sock: int, plan: dict, shell: GraderShell) -> None:
    """Settle into the sandbox, take the job, run cells on command (never returns)."""
    global _in_cell
    _close_fds(sock)
    child.settle(plan)
    os.set_blocking(sock, False)  # frames.FrameReader reads until it would block
    workdir = plan["workdir"] or tempfile.mkdtemp(prefix="ag-sandbox-")
    os.makedirs(workdir, mode=0o700, exist_ok=True)
    if not plan["workdir"]:  # no sandbox: a fresh folder is home
        os.environ.update(HOME=workdir, MPLCONFIGDIR=os.path.join(workdir, ".config"))
    os.chdir(workdir)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(max(1, int(plan["threads"])))
    _send(sock, {"k": "ready"})
    reader = frames.FrameReader(sock, int(plan["max_job_frame"]))
    job = _next(reader)
    if job.kind != "job":
        os._exit(74)
    _write_files(workdir, [(str(rel), job.blobs[i]) for rel, i in job.header.get("files", [])])
    trials = {str(name): job.blobs[i] for name, i in job.header.get("trials", {}).items()}
    sink = Sink(plan["outputs"], job.header.get("mime", ()))
    del job
    SinkPublisher.sink = sink
    sys.stdout, sys.stderr = Stream(sink, "stdout"), Stream(sink, "stderr")
    grading.install_channel(PipeChannel(sock, trials, int(plan["max_outcomes"])))
    signal.signal(signal.SIGALRM, _on_alarm)
    exit_now, getpid, kill, me = os._exit, os.getpid, os.kill, os.getpid()  # bound before notebook code
    own_namespace = plan["mode"] != "none"
    while True:
        msg = _next(reader)
        if msg.kind != "run" or len(msg.blobs) != 1:
            exit_now(0)
        sink.begin()
        shell._error_shown = False
        _in_cell = True
        failed = _run_cell(shell, msg.blobs[0].decode(errors="replace"), sink)
        _in_cell = False
        if getpid() != me:
            exit_now(0)  # a process the cell forked must not speak for the notebook
        if own_namespace:
            _no_strays(kill, me)
        _send(sock, {"k": "done", "cell": msg.header.get("cell"), "error": failed},
              [json.dumps(sink.outputs).encode()])


def _no_strays(kill, me: int, patience: float = 10.0) -> None:
    """No process outlives its cell: kill every other process of the namespace (kill(-1) spares only init
    and us), reap our own, and wait until they are gone (a loaded machine takes a while to schedule the dead)."""
    deadline = time.monotonic() + patience
    while True:
        try:
            kill(-1, signal.SIGKILL)
        except OSError:
            pass
        child.reap()
        left = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me)]
        if not left or time.monotonic() >= deadline:
            return
        time.sleep(0.005)


def _next(reader: frames.FrameReader) -> frames.Message:
    try:
        msg = frames.recv_blocking(reader)
    except frames.ProtocolError:
        msg = None
    if msg is None:
        os._exit(0)  # the worker hung up: nothing left to do
    return msg


def _run_cell(shell: GraderShell, source: str, sink: Sink) -> bool:
    """Run one cell; True if it raised."""
    try:
        result = shell.run_cell(source, store_history=True)
        error = result.error_before_exec or result.error_in_exec
    except BaseException as exc:  # noqa: BLE001 - a timeout outside the cell's own code
        error = exc
    if error is not None and not shell._error_shown:
        sink.error(type(error).__name__, str(error), [f"{type(error).__name__}: {error}"])
    return error is not None


def _write_files(workdir: str, files: list[tuple[str, bytes]]) -> None:
    """The submission's other files, inside the working directory only."""
    for rel, data in files:
        target = os.path.normpath(os.path.join(workdir, rel))
        if not target.startswith(workdir + os.sep):
            continue
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as f:
                f.write(data)
        except OSError:
            pass  # over the scratch's caps: the notebook simply does not find it


def _close_fds(keep: int) -> None:
    """Only the socket to the worker stays open; stdin/stdout/stderr go to /dev/null."""
    null = os.open(os.devnull, os.O_RDWR)
    for target in (0, 1, 2):
        os.dup2(null, target)
    os.closerange(3, keep)
    os.closerange(keep + 1, 65536)
