"""The run's queue (`scheduler.CostlyFirst`): a notebook of each kind first, then the costliest kind,
with costs learned during the run; what the run's judge builds. Fast: simulated workers, no notebook is executed."""
from __future__ import annotations

import heapq
from pathlib import Path

from autograder.engine.scheduler import CostlyFirst
from autograder.engine.store import Submission


def _subs(spec: dict[str, int]) -> list[Submission]:
    """`n` students' submissions of each assignment, student-major (the order the engine is given)."""
    n = max(spec.values())
    return [Submission(f"s{k}", a, f"{a}_nb", Path("/course")) for k in range(n) for a, m in spec.items() if k < m]


def test_each_kind_once_then_the_costliest() -> None:
    queue = CostlyFirst(_subs({"ch0": 3, "ch1": 3, "ch2": 3}))
    first = [queue.popleft() for _ in range(3)]
    assert [s.assignment for s in first] == ["ch0", "ch1", "ch2"]
    queue.measured(first[0], 0.2)
    queue.measured(first[1], 6.0)
    # ch2's first is still running: unknown counts as costly, ahead of the measured ones
    assert queue.popleft().assignment == "ch2"
    queue.measured(first[2], 1.0)
    assert [queue.popleft().assignment for _ in range(4)] == ["ch1", "ch1", "ch2", "ch0"]
    assert len(queue) == 1 and queue.popleft().student == "s2" and len(queue) == 0


def _makespan(queue, cost: dict[str, float], workers: int) -> float:
    """Simulated list scheduling: each idle worker takes the queue's next; measured when done."""
    clock, running = 0.0, []
    for w in range(workers):
        if queue:
            sub = queue.popleft()
            heapq.heappush(running, (cost[sub.assignment], w, sub))
    while running:
        clock, w, sub = heapq.heappop(running)
        if hasattr(queue, "measured"):
            queue.measured(sub, cost[sub.assignment])
        if queue:
            nxt = queue.popleft()
            heapq.heappush(running, (clock + cost[nxt.assignment], w, nxt))
    return clock


def test_long_notebooks_go_early_so_no_worker_idles_at_the_end() -> None:
    """The example class's shape: one assignment costs ten times the others; in the order given
    (student-major) the last long notebook runs alone at the end."""
    import collections

    cost = {"ch0": 1.0, "ch1": 0.3, "ch2": 0.6, "ch3": 0.4, "ch4": 6.5, "ch5": 0.3, "ch6": 0.7}
    subs = _subs({a: 13 for a in cost})
    floor = sum(cost[s.assignment] for s in subs) / 2
    given = _makespan(collections.deque(subs), cost, 2)
    costly_first = _makespan(CostlyFirst(subs), cost, 2)
    assert costly_first < given
    assert costly_first - floor < 0.5 < given - floor, (floor, given, costly_first)


def test_a_failed_warm_up_is_said_never_silent() -> None:
    """A zygote whose warm-up import failed part-way breaks its notebooks (torch 2.11 on a GPU host: every later
    `import torch._dynamo` raised), so the failure reaches the grading log's sandbox entry and the instructor."""
    from autograder.engine.scheduler import warm_up_failures

    assert warm_up_failures({"import_failures": {}, "exercise_failures": {}}) is None
    assert warm_up_failures({}) is None
    said = warm_up_failures({"import_failures": {"attnlab.profiler": "AssertionError: already registered"},
                             "exercise_failures": {"dispatch_mode": "RuntimeError: no"}})
    assert said is not None and "attnlab.profiler: AssertionError" in said and "dispatch_mode: RuntimeError" in said


def test_a_judge_builds_only_the_chapters_it_grades() -> None:
    """A regrade of one Chapter 1 notebook builds Chapter 1's checks and reference only (each chapter's reference
    runs that chapter's solution cells, Chapters 4 and 5 build their data's grammars): the registry builds a
    chapter when one of its names is first read, and still holds every name in one order."""
    from autograder.checks import CHAPTERS, CHECKS, Registry

    registry = Registry()
    assert "ch1.self_attention" in registry and "ch1.SOFTMAX_TIME" in registry and "ch9.anything" not in registry
    assert registry.loaded == {"ch1"}
    assert registry["ch1.self_attention"] is CHECKS["ch1.self_attention"]
    assert list(registry) == list(CHECKS) and registry.loaded == set(CHAPTERS)


def test_an_answer_of_the_judge_asked_early_is_read_before_the_next_request_and_kept() -> None:
    """Trials asked ahead (`Engine.expect`: before the run is ready) and not read yet when another request goes to
    the judge process are read first and kept: the next request reads its own answer, never theirs."""
    import socket
    import threading

    from autograder.engine import protocol
    from autograder.engine.judging import JudgeClient

    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    theirs.setblocking(False)  # as the judge process's (frames are read until a read would block)

    def judge() -> None:  # answers each request in order, as the judge process does
        reader = protocol.FrameReader(theirs.fileno(), 1 << 20)
        while (msg := protocol.recv_blocking(reader, timeout=30)) is not None:
            if msg.kind == "trials":
                protocol.send(theirs.fileno(), {"k": "trials"}, [f"{msg.header['seed']}:{n}".encode()
                                                                 for n in msg.header["names"]])
            else:
                protocol.send(theirs.fileno(), {"k": "known", "unknown": msg.header["names"]})

    answering = threading.Thread(target=judge, daemon=True)
    answering.start()
    client = JudgeClient()
    client.proc, client.sock, client.reader = object(), ours, protocol.FrameReader(ours.fileno(), 1 << 20)
    try:
        early = client.ask_trials(7, ["ch1.a", "ch1.b"])
        assert client.known(["nope"]) == ["nope"]
        assert client.trials(8, ["ch1.c"]) == {"ch1.c": b"8:ch1.c"}
        assert early() == {"ch1.a": b"7:ch1.a", "ch1.b": b"7:ch1.b"} and early() == early() and not client.unread
    finally:
        ours.close()  # the judge sees the end
        answering.join(30)
        theirs.close()
