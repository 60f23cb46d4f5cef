"""Judging, with a time budget: the trusted comparison runs in a judge process the grader can stop.

`autograder.judge` decides a hidden check from the student's outcomes and the reference
(`solutions/`). Here it runs in a separate trusted process (`python -m autograder.engine.judging`,
started fresh: it holds the checks and nothing of the students), which also draws each
notebook's trial inputs from that notebook's own seed. The grader asks it for the verdicts of
one notebook at a time and gives it `Limits.judge_seconds` of CPU time (and `wall_factor` times
that in wall-clock time): past that, the process is killed and replaced, and the checks not yet
decided fail with a sentence saying so. A symbolic answer that takes hours costs its author,
never the next student, and never the run.

Verdicts are cached only where they cannot depend on the notebook: a check without trial inputs
(a symbolic answer), keyed by the check's name and an unambiguous digest of the outcomes.
"""
from __future__ import annotations

import gc
import hashlib
import os
import select
import socket
import subprocess
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from autograder.engine import membound, protocol

if TYPE_CHECKING:  # torch is the judge process's, never the grader's: imported there
    from attnlab.grading import Outcome

STARTUP_SECONDS = 900.0
TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Verdict:
    passed: bool
    message: str
    final: bool = True  # False: not a property of the outcomes (a budget ran out): never cached


def digest(blobs: list[bytes]) -> str:
    """sha256 of a length-prefixed encoding: two different lists of blobs never share it."""
    h = hashlib.sha256(len(blobs).to_bytes(8, "little"))
    for b in blobs:
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def _cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, IndexError, ValueError):
        return 0.0


class JudgeClient:
    """The grader's handle on the judge process: trials per seed, verdicts per notebook, with a budget."""

    def __init__(self, wall_factor: float = 10.0, memory_bytes: int | None = None) -> None:
        self.wall_factor = wall_factor
        self.memory_bytes = memory_bytes  # the judge process's memory bound (None: none)
        self.cgroup: str | None = None  # the run's cgroup, where the bound is a cgroup of the judge's own
        self.bound: membound.MemoryBound | None = None
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self.reader: protocol.FrameReader | None = None
        self.cache: OrderedDict[tuple[str, str, str], Verdict] = OrderedDict()
        self.unread: list[_Later] = []  # answers asked for and not read yet, oldest first
        self.restarts = 0
        self.seconds = 0.0

    # ---- the process ----------------------------------------------------------------------
    def start(self) -> None:
        """Start the judge process (returns at once; the first request waits for it)."""
        if self.proc is not None:
            return
        ours, theirs = socket.socketpair()
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "HOME", "TMPDIR", "PYTHONPATH")}
        env.update({"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONHASHSEED": "0"})
        if self.memory_bytes:
            self.bound = membound.memory_bound(self.memory_bytes, "judge", parent=self.cgroup, find=False)
        words = self.bound.argv() if self.bound is not None else []
        # a process group of its own: the terminal's Ctrl-C reaches the grader alone, which stops the judge (no
        # KeyboardInterrupt traceback from a helper process)
        self.proc = subprocess.Popen([sys.executable, "-m", "autograder.engine.judging", str(theirs.fileno()), *words],
                                     pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, env=env, close_fds=True,
                                     process_group=0)
        theirs.close()
        ours.setblocking(False)
        self.sock, self.reader = ours, protocol.FrameReader(ours.fileno(), 1 << 31)

    def close(self) -> None:
        """Stop the judge process (it holds nothing worth saving)."""
        if self.proc is None:
            return
        self.sock.close()
        self.proc.kill()
        self.proc.wait()
        self.proc = self.sock = self.reader = None
        self._release()

    def _release(self) -> None:
        if self.bound is not None:
            self.bound.release()
            self.bound = None

    def _kill(self) -> None:
        """Stop the judge process and start a fresh one, ready before the next notebook's budget starts."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.sock.close()
            self.proc = self.sock = self.reader = None
            self.restarts += 1
        self._release()
        self.known([])

    def _ask(self, header: dict, blobs: list[bytes] = ()) -> None:
        while self.unread:  # the answers come in the order asked: those not read yet are read (and kept) first
            self.unread[0]()
        self.start()
        protocol.send(self.sock.fileno(), header, blobs)

    def _answer(self, timeout: float | None = STARTUP_SECONDS) -> protocol.Message:
        msg = protocol.recv_blocking(self.reader, timeout=timeout)
        if msg is None or msg.kind == "error":
            why = msg.header.get("error") if msg is not None else "no answer"
            self.proc.kill()
            self.proc.wait()
            self.proc = self.sock = self.reader = None
            raise RuntimeError(f"the judge process failed: {why}")
        return msg

    # ---- requests -----------------------------------------------------------------------------
    def known(self, names: list[str]) -> list[str]:
        """The names that are not hidden checks."""
        self._ask({"k": "known", "names": names})
        return list(self._answer().header["unknown"])

    def trials(self, seed: int, names: list[str]) -> dict[str, bytes]:
        """Each check's trial inputs drawn from `seed`, wire-encoded (the bytes the notebook receives)."""
        return self.ask_trials(seed, names)()

    def ask_trials(self, seed: int, names: list[str]) -> Callable[[], dict[str, bytes]]:
        """`trials`, asked now and read when the returned function is called (the judge process draws them while
        the caller does something else); a request asked before it is called reads it first."""
        self._ask({"k": "trials", "seed": seed, "names": names})
        later = _Later(self, lambda: dict(zip(names, self._answer().blobs)))
        self.unread.append(later)
        return later

    def selfcheck(self, seed: int, names: list[str]) -> list[str]:
        """Problems found judging the reference against itself (none expected)."""
        self._ask({"k": "selfcheck", "seed": seed, "names": names})
        return list(self._answer().header["problems"])

    def verdicts(self, seed: int, trials: dict[str, bytes], reports: list[tuple[str, list[bytes]]],
                 budget: float) -> list[Verdict]:
        """The verdict of each (check, outcome blobs) of one notebook, within `budget` CPU seconds."""
        return self.ask_verdicts(seed, trials, reports, budget)()

    def ask_verdicts(self, seed: int, trials: dict[str, bytes], reports: list[tuple[str, list[bytes]]],
                     budget: float) -> Callable[[], list[Verdict]]:
        """`verdicts`, asked now and read when the returned function is called (the judge process judges while the
        caller does something else; its budget counts from now); it must be called before the next request."""
        t0 = time.perf_counter()
        out: list[Verdict | None] = [None] * len(reports)
        keys = []
        for i, (name, blobs) in enumerate(reports):
            key = (name, digest([trials.get(name, b"")]), digest(blobs))
            keys.append(key)
            if key in self.cache:
                self.cache.move_to_end(key)
                out[i] = self.cache[key]
        todo = [i for i, v in enumerate(out) if v is None]
        since = (0.0, 0.0)
        if todo:
            blobs: list[bytes] = []
            checks = []
            for i in todo:
                name, outcomes = reports[i]
                checks.append([name, len(outcomes)])
                blobs.extend(outcomes)
            self.start()
            since = (_cpu_seconds(self.proc.pid), time.monotonic())  # the budget starts before the judge reads
            self._ask({"k": "judge", "seed": seed, "checks": checks}, blobs)

        def collect() -> list[Verdict]:
            if todo:
                self._collect(todo, out, budget, since)
            for i, key in zip(range(len(reports)), keys):
                v = out[i]
                if v.final and key not in self.cache:
                    self.cache[key] = v
                    if len(self.cache) > 20_000:
                        self.cache.popitem(last=False)
            self.seconds += time.perf_counter() - t0
            return out  # type: ignore[return-value]
        return collect

    def _collect(self, todo: list[int], out: list, budget: float, since: tuple[float, float]) -> None:
        """Read verdicts as they come; past the budget (CPU and wall seconds counted from `since`), stop the judge and
        fail the rest."""
        pid = self.proc.pid
        cpu0, wall0 = since
        got = 0
        while got < len(todo):
            used = _cpu_seconds(pid) - cpu0
            wall = time.monotonic() - wall0
            if used > budget or wall > budget * self.wall_factor:
                self._kill()
                for i in todo:
                    if out[i] is None:
                        out[i] = Verdict(False, f"judging this notebook took longer than its budget of {budget:g} s "
                                                "and was stopped", final=False)
                return
            readable, _, _ = select.select([self.sock.fileno()], [], [], 0.25)
            if readable:
                self.reader.fill()
            for msg in self.reader.messages():
                if msg.kind != "verdict":
                    self._kill()
                    raise RuntimeError(f"the judge process said {msg.kind!r}: {msg.header.get('error')}")
                out[todo[int(msg.header["i"])]] = Verdict(bool(msg.header["passed"]), str(msg.header["message"]))
                got += 1
            if self.reader.eof or self.reader.error:
                why = "its judge process stopped"
                if self.bound is not None and self.bound.oom_killed():
                    why = f"judging it needed more than {self.bound.limit_bytes >> 20} MiB"
                self._kill()
                for i in todo:
                    if out[i] is None:
                        out[i] = Verdict(False, f"the grader could not judge this result ({why})", final=False)
                return


class _Later:
    """An answer of the judge process read on first call (or by the next request), then kept."""

    def __init__(self, client: JudgeClient, read: Callable[[], dict[str, bytes]]) -> None:
        self.client, self.read, self.value, self.done = client, read, None, False

    def __call__(self) -> dict[str, bytes]:
        if not self.done:
            try:
                self.value = self.read()
            finally:  # read or failed (the process is gone then): never read again
                self.done = True
                self.client.unread.remove(self)
        return self.value


# ---- the judge process -----------------------------------------------------------------------------

def decode_outcome(blob: bytes) -> Outcome:
    """One outcome from the student's process (plain data only; devices recorded)."""
    from attnlab import wire
    from attnlab.grading import Outcome

    try:
        d = wire.decode(blob, record_device=True)
    except wire.WireError as exc:
        return Outcome(error=f"the result could not be read ({exc})")
    except (RecursionError, MemoryError, OverflowError, ValueError, TypeError) as exc:
        return Outcome(error=f"the result could not be read ({type(exc).__name__})")
    if not isinstance(d, dict) or set(d) != {"value", "error"} or not (d["error"] is None or isinstance(d["error"], str)):
        return Outcome(error="the result could not be read (malformed)")
    return Outcome(value=d["value"], error=d["error"])


def upstream_first(names: list[str]) -> list[int]:
    """The order to judge a notebook's checks in: the notebook's own, except that a function judged over
    upstream ones goes right after the last of them (whatever order the notebook ran them in)."""
    from autograder.checks import CHECKS
    from autograder.checks.base import ChapterId

    where = {n: i for i, n in enumerate(names)}

    def key(i: int) -> tuple[int, bool, int]:
        check = CHECKS.get(names[i])
        upstream = check.upstream if check is not None else ()
        last = max([where.get(ChapterId.of(names[i]).check(u), -1) for u in upstream], default=-1)
        return max(i, last), last > i, i

    return sorted(range(len(names)), key=key)


class Ahead:
    """The reference's outputs on the trials drawn for notebooks not judged yet, computed one trial at a time
    while the judge process has no request to answer (the notebook runs meanwhile): judging then only compares.

    Only for checks whose verdict compares with them (`Check.uses_expected`); a notebook's outputs are taken
    when it is judged, and a check whose outputs are not all computed by then (or whose reference failed
    here) is judged as before, its reference run on the trials it reaches."""

    LIMIT = 256  # (check, seed) pairs kept at most: notebooks prepared and not judged yet

    def __init__(self, checks: dict, trials_of: Callable[[str, int], list[tuple]]) -> None:
        self.checks, self.trials_of = checks, trials_of
        self.outputs: OrderedDict[tuple[str, int], list] = OrderedDict()  # complete, or the first trials' so far

    def want(self, name: str, seed: int) -> None:
        """The reference's outputs on the trials of `name` drawn from `seed` are to be computed."""
        if getattr(self.checks.get(name), "uses_expected", False) and (name, seed) not in self.outputs:
            self.outputs[(name, seed)] = []
            while len(self.outputs) > self.LIMIT:
                self.outputs.popitem(last=False)

    def step(self) -> bool:
        """Compute the reference's output on one more trial; False when none is left to compute."""
        for (name, seed), done in self.outputs.items():
            trials = self.trials_of(name, seed)
            if len(done) < len(trials):
                try:
                    done.extend(self.checks[name].expected([trials[len(done)]]))
                except Exception:  # noqa: BLE001 - judged as before: the verdict runs the reference and says why
                    del self.outputs[(name, seed)]
                return True
        return False

    def take(self, name: str, seed: int) -> list | None:
        """The reference's outputs on every trial of `name` from `seed` if all are computed, else None (they go)."""
        done = self.outputs.pop((name, seed), None)
        return done if done is not None and len(done) == len(self.trials_of(name, seed)) else None


def serve(fd: int, bound: membound.MemoryBound | None = None) -> None:
    """Answer the grader's requests until it hangs up, under `bound` (if any) on top of what its imports and
    a CUDA context hold: what the bound limits is what student data makes it build.

    The imports run with the collector off, and what they built is frozen out of its reach (gc.freeze) before
    any request: a collection during torch's import walks its whole growing heap, again and again."""
    gc.disable()
    import torch

    from attnlab import wire
    from autograder.checks import CHECKS
    from autograder.judge import judge, make_trials, reference_outcomes, sent

    torch.set_num_threads(1)
    if torch.cuda.is_available():
        torch.zeros(1, device="cuda")  # the context, before the bound
    gc.freeze()
    gc.enable()  # on for everything built from student data
    if bound is not None:
        bound.enter(above_current=True)
    drawn: OrderedDict[tuple[str, int], list[tuple]] = OrderedDict()

    def trials_of(name: str, seed: int) -> list[tuple]:
        key = (name, seed)
        if key not in drawn:
            drawn[key] = make_trials(name, seed)
            if len(drawn) > 512:
                drawn.popitem(last=False)
        return drawn[key]

    ahead = Ahead(CHECKS, trials_of)

    def decide(name: str, seed: int, outcomes: list, passed: frozenset[str] = frozenset()) -> tuple[bool, str]:
        if name not in CHECKS:
            return False, f"unknown check {name!r}"
        try:
            v = judge(name, trials_of(name, seed), outcomes, passed, ahead.take(name, seed))
        except Exception as exc:  # noqa: BLE001 - a strange value must not stop the run
            return False, f"the grader could not compare the result ({type(exc).__name__}: {str(exc)[:200]})"
        return bool(v.passed), str(v.message)[:2000]

    os.set_blocking(fd, False)
    reader = protocol.FrameReader(fd, 1 << 31)
    while True:
        while not (reader.pending or reader.buffer or select.select([fd], [], [], 0)[0]) and ahead.step():
            pass  # no request: the reference's outputs on trials drawn for notebooks that run now
        msg = protocol.recv_blocking(reader)
        if msg is None:
            return
        h = msg.header
        try:
            if msg.kind == "known":
                protocol.send(fd, {"k": "known", "unknown": [n for n in h["names"] if n not in CHECKS]})
            elif msg.kind == "trials":
                protocol.send(fd, {"k": "trials"},  # what the notebook is called on: parts only the judge sees stay here
                              [wire.encode(sent(n, trials_of(n, int(h["seed"])))) for n in h["names"]])
                for n in h["names"]:
                    ahead.want(n, int(h["seed"]))
            elif msg.kind == "selfcheck":
                problems = []
                for name in h["names"]:
                    outcomes = [decode_outcome(wire.encode({"value": o.value, "error": None}))
                                for o in reference_outcomes(name, trials_of(name, int(h["seed"])))]
                    ok, message = decide(name, int(h["seed"]), outcomes)
                    if not ok:
                        problems.append(f"{name}: {message}")
                protocol.send(fd, {"k": "selfcheck", "problems": problems})
            elif msg.kind == "judge":
                starts = [0]
                for _, n in h["checks"]:
                    starts.append(starts[-1] + n)
                passed: set[str] = set()
                for i in upstream_first([str(name) for name, _ in h["checks"]]):
                    name = str(h["checks"][i][0])
                    outcomes = [decode_outcome(b) for b in msg.blobs[starts[i]:starts[i + 1]]]
                    ok, message = decide(name, int(h["seed"]), outcomes, frozenset(passed))
                    if ok:
                        passed.add(name)
                    protocol.send(fd, {"k": "verdict", "i": i, "passed": ok, "message": message})
            else:
                return
        except Exception as exc:  # noqa: BLE001 - told to the grader, which stops the run
            protocol.send(fd, {"k": "error", "error": f"{type(exc).__name__}: {str(exc)[:500]}"})


if __name__ == "__main__":
    serve(int(sys.argv[1]), membound.MemoryBound.from_argv(sys.argv[2:]))
