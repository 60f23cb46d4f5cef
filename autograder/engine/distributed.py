"""Run the per-notebook task on a Dask distributed cluster instead of local workers.

The grader still prepares every notebook, judges it and writes the gradebook (one writer);
only the execution moves. Each Dask worker process hosts one warm engine worker (a fresh
`python -m autograder.engine.worker`, isolated exactly as locally) and feeds it the jobs
Dask sends; the task returns the worker's plain result (a header dict and byte blobs).
Give each Dask worker one thread (`--nthreads 1`) and scale with processes or machines.

    from dask.distributed import Client
    grade(course_dir, scheduler=Client("tcp://scheduler:8786"))   # or scheduler="tcp://..."
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from autograder.engine import protocol

_LOCK = threading.Lock()
_LOCAL: dict = {}


def run_job(init: dict, threads: int, header: dict, blobs: list[bytes]) -> tuple[dict, list[bytes]]:
    """Dask task: run one notebook job on this Dask worker's own warm engine worker."""
    from autograder.engine import sandbox
    from autograder.engine.pool import Pool, WorkerError

    with _LOCK:  # one engine worker per Dask worker process
        pool = _LOCAL.get("pool")
        if pool is None:
            init = dict(init, uid_base=sandbox.fresh_uid_block(1) if os.geteuid() == 0 else os.getuid())
            pool = Pool(1, init)
            pool.ready()
            _LOCAL["pool"] = pool
        worker = pool.workers[0]
        pool.send(worker, True, header, blobs)
        while True:
            for _, msg in pool.wait(5.0):
                worker.job = None
                if msg is None or msg.kind != "result":
                    pool.restart(worker)
                    raise WorkerError("the engine worker on this Dask worker died")
                return msg.header, msg.blobs


@dataclass
class Slot:
    """One task in flight on the cluster (the scheduler's view of a 'worker')."""

    slot: int
    job: object = None
    future: object = None


class DaskPool:
    """The local Pool's interface on top of a dask.distributed Client."""

    def __init__(self, scheduler, n: int, init: dict, threads: int) -> None:
        from dask.distributed import Client

        self.own = not isinstance(scheduler, Client)
        self.client = Client(scheduler) if self.own else scheduler
        # the run's cgroup lives on this machine; Dask workers may run elsewhere
        self.init = dict(init, cgroup=None, cgroup_why="none (a Dask worker's notebooks)")
        self.threads = threads
        self.workers = [Slot(k) for k in range(max(1, n))]

    def ready(self) -> None:
        return None  # Dask workers warm their engine worker on their first task

    def idle(self) -> list[Slot]:
        return [w for w in self.workers if w.job is None]

    def busy(self) -> bool:
        return any(w.job is not None for w in self.workers)

    def send(self, w: Slot, job: object, header: dict, blobs: list[bytes]) -> None:
        w.job = job
        w.future = self.client.submit(run_job, self.init, self.threads, header, blobs, pure=False)

    def wait(self, timeout: float) -> list[tuple[Slot, protocol.Message | None]]:
        from dask.distributed import wait

        busy = [w for w in self.workers if w.job is not None]
        if not busy:
            return []
        try:
            wait([w.future for w in busy], timeout=timeout, return_when="FIRST_COMPLETED")
        except TimeoutError:
            return []
        out = []
        for w in busy:
            if w.future.done():
                try:
                    header, blobs = w.future.result()
                    out.append((w, protocol.Message(header, list(blobs))))
                except Exception:  # noqa: BLE001 - a lost worker or task: the scheduler retries once
                    out.append((w, None))
                w.future = None
        return out

    def restart(self, w: Slot) -> Slot:
        return w

    def close(self) -> None:
        if self.own:
            self.client.close()
