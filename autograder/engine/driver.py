"""One notebook driven through sandboxed children, in the worker (trusted: it never runs notebook code).

The worker owns everything that decides: it forks a child from the zygote (`Child.start`),
sends it the job, then sends one `run` per cell and starts that cell's clock itself. The
child can only answer: `report` (a hidden check's outcomes, attributed to the cell the
worker is running) and `done` (the cell's outputs). A frame of any other kind, at any
other time, or over its size is the end of the child, charged to the running cell. Time
limits count the runner's time not spent waiting for a CPU (its scheduler statistics, read
here), so a loaded machine never uses them up, or, when larger, the CPU time of all the
notebook's processes together divided by its threads (a notebook that forks busy processes
uses its time up at the rate it takes CPUs); a wall-clock cap of `wall_factor` times each
limit still applies. When a child dies at cell k, a fresh one replays the cells before k
(their outputs and reports discarded), cell k is marked with the reason, and grading goes on.
"""
from __future__ import annotations

import os
import queue
import select
import signal
import socket
import struct
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

from autograder.engine import cgroups, protocol
from autograder.engine.limits import Limits
from autograder.engine.sandbox import Plan
from autograder.errors import AutograderError

STARTUP_SECONDS = 300.0  # a child's setup, before any notebook code: generous, machines get loaded
SETUP_KINDS = ("hello", "ns", "ready")


class InfraError(AutograderError):
    """The sandbox did not come up: the grader's problem, never charged to the student."""


class Dead(AutograderError):
    """The child is gone or must go (the reason is for the student's log)."""


def runqueue_wait(pid: int) -> float | None:
    """Seconds thread `pid` has spent runnable but waiting for a CPU (None if the kernel does not say)."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


def oom_kills() -> int:
    """The machine's count of out-of-memory kills since boot."""
    try:
        with open("/proc/vmstat") as f:
            for line in f:
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu(root: int) -> float | None:
    """CPU seconds (user + system) of process `root` and every process under it, ended ones included: a live process's
    own time, and its reaped children's through its cutime and cstime (None if /proc does not say for `root`).
    Read top-down, a process reaped during the walk is missed until the next reading, never counted twice."""
    ticks, todo, first = 0, [root], True
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rpartition(b")")[2].split()
            ticks += sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                    todo.extend(int(x) for x in f.read().split())
        except (OSError, ValueError):
            if first:
                return None
        first = False
    return ticks / TICK


class Clock:
    """Time a notebook had (or could have had) a CPU: its runner's wall time minus its runqueue wait, or, when larger,
    the CPU time its processes took together (`cpu`, read from a cell's `TREE_AFTER_S`-th second on) over its
    `threads`."""

    TREE_AFTER_S = 0.25  # a cell that ends sooner reads no process tree

    def __init__(self, pid: int | None, cpu: Callable[[], float | None] | None = None, threads: int = 1) -> None:
        self.pid, self.cpu, self.threads = pid, cpu, max(1, threads)
        self.wall0 = time.monotonic()
        self.wait0 = runqueue_wait(pid) if pid else None
        self.base: tuple[float, float] | None = None  # (effective seconds, CPU seconds) when the tree was first read

    def wall(self) -> float:
        return time.monotonic() - self.wall0

    def effective(self) -> float:
        wall = self.wall()
        own = wall
        if self.wait0 is not None and self.pid is not None:
            now = runqueue_wait(self.pid)
            own = wall if now is None else max(0.0, wall - max(0.0, now - self.wait0))
        if self.cpu is None or wall < self.TREE_AFTER_S:
            return own
        used = self.cpu()
        if used is None:
            return own
        if self.base is None:
            self.base = (own, used)
        return max(own, self.base[0] + (used - self.base[1]) / self.threads)


@dataclass
class Child:
    """One forked notebook: its socket, its processes (keeper, init, runner) and its cgroup."""

    sock: socket.socket
    reader: protocol.FrameReader
    status_fd: int
    pids: dict[str, int] = field(default_factory=dict)
    pidfds: dict[str, int] = field(default_factory=dict)
    group: cgroups.Group | None = None
    report: dict[str, str] = field(default_factory=dict)
    ready_s: float = 0.0
    killed = False

    @classmethod
    def start(cls, zygote, plan: Plan, go: dict, name: str, limits: Limits, max_frame: int) -> Child:
        """Fork from the zygote and bring the sandbox up to the point where it waits for its job."""
        t0 = time.perf_counter()
        sock, status_fd = zygote.fork()
        child = cls(sock, protocol.FrameReader(sock.fileno(), max_frame, credentials=True), status_fd)
        try:
            child.pids["keeper"] = child._setup("hello")
            if plan.cgroup:
                child.group = cgroups.Group.create(
                    plan.cgroup, name, pids=int(limits.procs) + 8,
                    memory_bytes=(int(limits.memory_mb) + 2 * int(limits.disk_mb) + 512) << 20)
                child.group.add(child.pids["keeper"])
            protocol.send(sock.fileno(), go)
            child.pids["init"] = child._setup("ns")
            child.pids["runner"] = child._setup("ready")
        except (OSError, protocol.ProtocolError, InfraError) as exc:
            child.kill()
            child.close()
            raise InfraError(f"the sandbox could not start ({exc})") from None
        child.ready_s = time.perf_counter() - t0
        return child

    def _setup(self, kind: str) -> int:
        msg = protocol.recv_blocking(self.reader, timeout=STARTUP_SECONDS)
        if msg is None or msg.kind != kind or msg.pid is None or msg.pid in self.pids.values():
            raise InfraError(f"expected {kind!r}, got {msg.kind if msg else 'nothing'!r}")
        if kind == "ns":
            self.report = protocol.setup_report(msg)
        name = {"hello": "keeper", "ns": "init", "ready": "runner"}[kind]
        self.pidfds[name] = os.pidfd_open(msg.pid)
        return msg.pid

    def send(self, header: dict, blobs: list[bytes] = (), timeout: float | None = None) -> None:
        protocol.send(self.sock.fileno(), header, blobs, timeout=timeout)

    def signal(self, sig: int, names: tuple[str, ...] = ("runner",)) -> None:
        """Send `sig` to the notebook's processes `names` that are still known (the runner alone: the soft time limit);
        one already gone is no error."""
        for name in names:
            fd = self.pidfds.get(name)
            if fd is not None:
                try:
                    signal.pidfd_send_signal(fd, sig)
                except OSError:
                    pass

    def stop(self) -> None:
        """SIGSTOP the notebook's init and runner: nothing of it runs any more (its teardown, `kill` and `close`,
        may come later)."""
        self.signal(signal.SIGSTOP, ("init", "runner"))

    def kill(self) -> None:
        """SIGKILL the notebook: its init, so the kernel kills everything in its PID namespace."""
        self.killed = True
        self.signal(signal.SIGKILL, ("init", "runner", "keeper"))
        if self.group is not None:
            self.group.kill()

    def cpu_seconds(self) -> float | None:
        """CPU seconds the notebook's processes took together: its cgroup's, else the process tree under its init."""
        if self.group is not None:
            used = self.group.cpu_seconds()
            if used is not None:
                return used
        init = self.pids.get("init")
        return tree_cpu(init) if init else None

    def ended(self) -> bool:
        fd = self.pidfds.get("init")
        return fd is not None and bool(select.select([fd], [], [], 0)[0])

    def exit_status(self, wait: float = 2.0) -> int | None:
        """The runner's wait status, as init reported it (None if init did not)."""
        fd = self.pidfds.get("init")
        if fd is not None:
            select.select([fd], [], [], wait)
        if select.select([self.status_fd], [], [], 0)[0]:
            data = os.read(self.status_fd, 4)
            if len(data) == 4:
                return struct.unpack("<i", data)[0]
        return None

    def oom_killed(self) -> bool:
        return self.group is not None and self.group.events().get("oom_kill", 0) > 0

    def close(self, wait: float = 5.0) -> None:
        """After the notebook: wait for its processes to be gone, remove its cgroup, close everything."""
        keeper = self.pidfds.get("keeper")
        if keeper is not None and not select.select([keeper], [], [], wait)[0]:
            self.kill()
            select.select([keeper], [], [], wait)
        if self.group is not None:
            self.group.remove()
        for fd in self.pidfds.values():
            os.close(fd)
        self.pidfds.clear()
        self.sock.close()
        os.close(self.status_fd)


class Spare:
    """A child made for the next notebook while the current one runs (it holds nothing of any job, and waits
    for one): its fork and namespaces are off the next notebook's critical path."""

    def __init__(self) -> None:
        self.chores = Chores("spare")
        self.built: threading.Event | None = None  # set once the spare asked for last is made (or failed)
        self.child: Child | None = None
        self.go: dict | None = None

    def make(self, zygote, plan: Plan, go: dict, name: str, limits: Limits, max_frame: int) -> None:
        self.take(None)

        def build() -> None:
            try:
                self.child = Child.start(zygote, plan, go, name, limits, max_frame)
            except InfraError:
                self.child = None

        self.go, self.child = go, None
        self.built = self.chores.put(build)

    def take(self, go: dict | None) -> Child | None:
        """The spare if it was made for `go`, else None (and it goes)."""
        if self.built is None:
            return None
        self.built.wait()
        self.built, child, self.child = None, self.child, None
        if child is not None and go is not None and go == self.go:
            return child
        if child is not None:
            child.kill()
            child.close()
        return None

    def close(self) -> None:
        """The spare goes, and its thread."""
        self.take(None)
        self.chores.close()


class Chores:
    """A thread of the worker's that runs what it is handed, in order: handing a chore over costs the caller no
    thread start (no wait for the new thread to be scheduled, nor for the GIL it takes)."""

    def __init__(self, name: str) -> None:
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while (chore := self.queue.get()) is not None:
            chore()

    def put(self, chore: Callable[[], None]) -> threading.Event:
        """Run `chore` after those handed over before; the event is set once it ran (or raised: the worker's log
        has the traceback, and the next chore runs)."""
        done = threading.Event()

        def run() -> None:
            try:
                chore()
            except Exception:  # noqa: BLE001 - one failed chore (a teardown) must not stop the next ones
                traceback.print_exc()
            finally:
                done.set()

        self.queue.put(run)
        return done

    def close(self) -> None:
        """Once every chore handed over so far has run, the thread ends."""
        self.queue.put(None)
        self.thread.join()


class Driver:
    """Runs one job's cells through as many children as it takes; `run()` returns the result frame."""

    def __init__(self, job: dict, blobs: list[bytes], zygote, plan: Plan, limits: Limits, name: str,
                 spare: Spare | None = None, meanwhile: Callable[[], None] | None = None) -> None:
        self.job, self.blobs, self.zygote, self.plan, self.limits, self.name = job, blobs, zygote, plan, limits, name
        self.spare = spare
        self.meanwhile = meanwhile  # the worker's chores (the last notebook's teardown), once the first cell runs
        self.spare_go: dict | None = None  # the next notebook's child is made then too, for this sandbox
        self.sources = [blobs[i] for i in job["cells"]]
        n = len(self.sources)
        self.records: list[dict | None] = [None] * n
        self.reports: list[list[tuple[str, list[bytes]]]] = [[] for _ in range(n)]
        self.outputs: list[bytes] = [b"[]"] * n
        self.skip: set[int] = set()
        self.next_live = 0
        self.restarts = 0
        self.children = 0
        self.infra: str | None = None
        self.sandbox: dict[str, str] = {}
        self.ready_s = 0.0
        self.used = 0.0  # effective seconds the notebook's cells have run
        self.received = 0  # bytes of outputs and reports kept
        self.budget = 6 * limits.total_output_bytes + limits.report_bytes + (16 << 20)
        self.wall_end = time.monotonic() + limits.notebook_seconds * max(1.0, limits.wall_factor)
        self.max_frame = max(6 * limits.cell_output_bytes, limits.report_bytes) + (1 << 20)
        self.pending: Child | None = None

    # ---- the notebook ---------------------------------------------------------------------
    def run(self) -> tuple[dict, list[bytes]]:
        started = time.perf_counter()
        n = len(self.sources)
        while self.next_live < n:
            cells = [k for k in range(self.next_live) if k not in self.skip] + list(range(self.next_live, n))
            done = self._child(cells)
            if done or self.infra:
                break
            self.restarts += 1
            if self._out_of_time():
                self._rest(f"not run: the notebook reached its time limit of {self.limits.notebook_seconds:g} s")
                break
            if self.restarts > self.limits.max_restarts:
                self._rest(f"not run: the notebook's process crashed {self.restarts} times")
                break
        for k in range(n):
            if self.records[k] is None:
                self.records[k] = {"status": "skipped", "reason": "not run (the notebook stopped before this cell)"}
        self.begun()
        return self._result(time.perf_counter() - started)

    def begun(self) -> None:
        """Once: the worker's `meanwhile`, and the spare made for the next notebook. Called as the first cell starts
        (threads started then cost the notebook nothing: this thread waits for the cell), or after a run that ran
        no cell."""
        chores, self.meanwhile = self.meanwhile, None
        if chores is not None:
            chores()
        go, self.spare_go = self.spare_go, None
        if go is not None:
            self.spare.make(self.zygote, self.plan, go, f"{self.name}-next", self.limits, self.max_frame)

    def stop(self) -> None:
        """After the result is sent: the last child's processes stop at once (`cleanup` ends them)."""
        if self.pending is not None:
            self.pending.stop()

    def cleanup(self) -> None:
        """After the result is sent: the last child's processes and cgroup go."""
        if self.pending is not None:
            self.pending.kill()
            self.pending.close()
            self.pending = None

    def _out_of_time(self) -> bool:
        return self.used >= self.limits.notebook_seconds or time.monotonic() >= self.wall_end

    def _rest(self, reason: str) -> None:
        for k in range(self.next_live, len(self.records)):
            if self.records[k] is None:
                self.records[k] = {"status": "skipped", "reason": reason}
        self.next_live = len(self.records)

    def threads(self) -> int:
        """The notebook's torch threads (the job's)."""
        return max(1, int(self.job.get("threads", 1)))

    def go(self) -> dict:
        # tasks of the sandbox's user besides the notebook's own: the zygote (user namespace), the init of this
        # notebook and the spare's init and runner
        nproc_base = self.zygote.tasks() + 4 if self.plan.mode == "userns" else 3
        return self.plan.go(self.limits, nproc_base=nproc_base, threads=self.threads(),
                            max_job_frame=self.max_frame + self.limits.files_bytes + (16 << 20))

    def _child(self, cells: list[int]) -> bool:
        """Run `cells` in a fresh child; True if they all ran (the child is kept for `cleanup`)."""
        self.children += 1
        go = self.go()
        child = self.spare.take(go) if self.spare is not None and self.children == 1 else None
        try:
            if child is None:
                child = Child.start(self.zygote, self.plan, go, f"{self.name}-c{self.children}", self.limits,
                                    self.max_frame)
                self.ready_s += child.ready_s
        except InfraError as exc:
            self.infra = str(exc)
            return False
        if self.spare is not None and self.children == 1:  # the next notebook's child, made while this one runs
            self.spare_go = go
        self.sandbox = {**self.plan.report(), **child.report}
        oom_before = oom_kills()
        replay = set(range(self.next_live))
        current: int | None = None
        try:
            self._send_job(child)
            for position, k in enumerate(cells):
                current = k
                self._cell(child, k, position + 1, k in replay)
            self.pending = child
            return True
        except Dead as dead:
            why = self._why(child, str(dead), oom_before)  # before the kill: its own exit status first
            child.kill()
            child.close()
            if why is None:  # the machine's fault (out of memory elsewhere): try again, charge no one
                self.infra = "the notebook's process was killed by the system (out of memory on the machine)"
                return False
            self._died(current, why, replay)
            return False

    def _send_job(self, child: Child) -> None:
        job, blobs = self.job, []
        trials, files = {}, []
        for name, i in job.get("trials", {}).items():
            trials[name] = len(blobs)
            blobs.append(self.blobs[i])
        for rel, i in job.get("files", []):
            files.append([rel, len(blobs)])
            blobs.append(self.blobs[i])
        try:
            child.send({"k": "job", "trials": trials, "files": files, "mime": job.get("mime", [])}, blobs,
                       timeout=STARTUP_SECONDS)
        except TimeoutError:
            raise Dead("the notebook's process stopped reading from the grader") from None
        except OSError as exc:
            raise Dead(f"the notebook's process closed its channel to the grader ({exc.strerror})") from None

    def _cell(self, child: Child, k: int, count: int, replayed: bool) -> None:
        """Run cell k to its end (raises Dead)."""
        try:
            self._run_cell(child, k, count, replayed)
        except protocol.ProtocolError as exc:
            raise Dead(f"the notebook's process sent malformed data to the grader ({exc})") from None

    def _run_cell(self, child: Child, k: int, count: int, replayed: bool) -> None:
        lim = self.limits
        try:
            child.send({"k": "run", "cell": k}, [self.sources[k]],
                       timeout=(lim.cell_seconds + lim.grace_seconds) * lim.wall_factor)
        except TimeoutError:
            raise Dead("the notebook's process stopped reading from the grader (is a previous cell still running?)") \
                from None
        except OSError as exc:
            raise Dead(f"the notebook's process closed its channel to the grader ({exc.strerror})") from None
        clock = Clock(child.pids.get("runner"), child.cpu_seconds, self.threads())
        self.begun()  # the cell runs: the worker's chores go on beside it, not before it
        soft_sent = False
        reports: list[tuple[str, list[bytes]]] = []
        while True:
            spent = clock.effective()
            cell_left = lim.cell_seconds - spent
            notebook_left = lim.notebook_seconds - (self.used + spent)
            wall = clock.wall()
            if min(cell_left, notebook_left) <= 0 and not soft_sent:
                child.signal(signal.SIGALRM)  # like nbgrader's interrupt: an exception in the cell
                soft_sent = True
            if cell_left <= -lim.grace_seconds or wall >= (lim.cell_seconds + lim.grace_seconds) * lim.wall_factor:
                self.used += spent
                raise Dead(f"the cell ran past its time limit of {lim.cell_seconds:g} s and was stopped")
            if notebook_left <= -lim.grace_seconds or time.monotonic() >= self.wall_end:
                self.used += spent
                raise Dead(f"the notebook ran past its time limit of {lim.notebook_seconds:g} s and was stopped")
            wait = max(0.005, min(cell_left if cell_left > 0 else cell_left + lim.grace_seconds,
                                  notebook_left if notebook_left > 0 else notebook_left + lim.grace_seconds, 1.0))
            fds = [child.sock.fileno(), child.pidfds["init"]]
            readable, _, _ = select.select(fds, [], [], wait)
            if child.sock.fileno() in readable:
                child.reader.fill()
            for msg in child.reader.messages():
                if msg.pid != child.pids["runner"]:
                    raise Dead("a process other than the notebook's own sent data to the grader")
                if msg.kind == "report":
                    name, outcomes = protocol.report_of(msg, lim.max_outcomes)
                    if replayed:
                        continue
                    reports.append((name, outcomes))
                    self._count(sum(map(len, outcomes)), "hidden-check results")
                    if len(reports) > lim.reports_per_cell:
                        raise Dead(f"the cell sent more than {lim.reports_per_cell} hidden-check reports")
                elif msg.kind == "done":
                    error, outputs = protocol.done_of(msg, k)
                    self.used += clock.effective()
                    if not replayed:
                        self._count(len(outputs), "output")
                        self.records[k] = {"status": "error" if error else "ok", "seconds": round(clock.wall(), 4),
                                           "count": count}
                        self.outputs[k], self.reports[k] = outputs, reports
                        self.next_live = k + 1
                    return
                else:
                    raise Dead(f"the notebook's process sent an unexpected {msg.kind[:40]!r} message "
                               "(it does not speak for the grader)")
            if child.reader.error:
                raise Dead(f"the notebook's process sent malformed data to the grader ({child.reader.error})")
            if child.reader.eof or child.pidfds["init"] in readable:
                raise Dead("")  # the reason comes from its exit status

    def _count(self, n: int, what: str) -> None:
        self.received += n
        if self.received > self.budget:
            raise Dead(f"the notebook sent more than {self.budget >> 20} MiB of {what} to the grader")

    def _why(self, child: Child, said: str, oom_before: int) -> str | None:
        """The reason a child died, for the log; None if the machine (not the notebook) killed it."""
        if child.oom_killed():
            return f"the notebook ran out of memory (limit {self.limits.memory_mb} MiB) and was stopped"
        if said:
            return said
        status = child.exit_status()
        if status is not None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL \
                and oom_kills() > oom_before:
            return None
        return describe_exit(status)

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
                  "sandbox": self.sandbox, "seconds": round(seconds, 4), "ready_seconds": round(self.ready_s, 4),
                  "cell_seconds": round(self.used, 4)}
        return header, blobs


def describe_exit(status: int | None) -> str:
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
