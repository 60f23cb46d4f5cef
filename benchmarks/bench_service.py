"""The submission service under load, on loopback: latency, a burst of uploads, and a SIGKILL with a full queue.

    .venv/bin/python benchmarks/bench_service.py [--workers 2] [--runs 20] [--students 25]

On a fresh Chapter 1 course (released into a temporary folder), with `autograder serve` in a process of its
own on 127.0.0.1 and a free port, it prints:

1. upload-to-result latency of one correct Chapter 1 notebook (p50 and p95 of --runs uploads, one at a time, each
   a new file so that each is graded), beside the notebook's own execution time (the floor: its cells' seconds in
   the grading log) and beside `autograder grade --student S --force` (a single regrade) timed in the same run;
2. 2 uploads from each of --students students at once (the example class's honest notebooks, in turn; a
   student's second upload waits for their first result, as the service asks): every upload answered, none
   lost, and the throughput beside `autograder grade --force` of the same notebooks (the batch engine);
3. the server killed with SIGKILL while its queue is full (started with --accept-only, so nothing is graded
   before the kill), then restarted: every acknowledged upload graded exactly once.

Every client loop is bounded in count and time. It is not a timed test: figures go in commit messages.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
ENV = dict(os.environ, MPLBACKEND="Agg", PYTHONHASHSEED="0")
WAIT_S = 900.0


class Server:
    def __init__(self, course: Path, workers: int, *extra: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "autograder", "serve", "--course", str(course), "--port", "0",
                                      "--workers", str(workers), *extra], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, env=ENV, cwd=ROOT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if m := re.search(r"listening on (http://127\.0\.0\.1:\d+)/", line or ""):
                self.url = m[1]
                threading.Thread(target=self.proc.stdout.read, daemon=True).start()  # drain its log
                return
            if not line:
                break
        self.proc.kill()
        raise SystemExit("the server did not start")

    def call(self, method: str, path: str, token: str, body: bytes | None = None) -> tuple[int, dict, dict]:
        req = urllib.request.Request(self.url + path, data=body, method=method, headers={"Authorization": f"Bearer {token}"})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return r.status, json.loads(r.read()), dict(r.headers)
        except urllib.error.HTTPError as e:
            body = e.read()
            try:
                return e.code, json.loads(body or b"{}"), dict(e.headers)
            except ValueError:
                return e.code, {"error": body.decode("utf-8", "replace")[:300]}, dict(e.headers)

    def result(self, token: str, upload: str, poll: float = 0.02) -> dict:
        """Wait for the result, as the kit does (the server holds each request up to 25 s until it is graded)."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            status, got, _ = self.call("GET", f"/api/result/{upload}?wait=25", token)
            if status == 200 and got["state"] in ("done", "failed"):
                return got
            time.sleep(poll)
        raise SystemExit(f"upload {upload}: no result in {WAIT_S:g} s")

    def submit(self, token: str, data: bytes, tries: int = 200) -> tuple[str, int]:
        """Upload, retrying after Retry-After on 429 (bounded); (upload id, 429s met)."""
        refused = 0
        for _ in range(tries):
            status, got, headers = self.call("POST", "/api/submit/ch1", token, data)
            if status == 202:
                return got["id"], refused
            if status != 429:
                raise SystemExit(f"upload refused: {status} {got}")
            refused += 1
            time.sleep(min(5.0, float(headers.get("Retry-After", "1"))))
        raise SystemExit("upload refused too often")

    def stop(self, sig=signal.SIGINT) -> None:
        self.proc.send_signal(sig)
        try:
            self.proc.wait(120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def unique(data: bytes, k: int) -> bytes:
    """The notebook with a markdown cell naming upload k: a new file (the grader skips one it has graded)."""
    nb = json.loads(data)
    nb["cells"].append({"cell_type": "markdown", "id": f"bench-{k}", "metadata": {}, "source": f"upload {k}"})
    return json.dumps(nb).encode()


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def cli(*args: str) -> tuple[float, str]:
    t = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "autograder", *args], capture_output=True, text=True, env=ENV, cwd=ROOT)
    if run.returncode != 0:
        raise SystemExit(f"autograder {' '.join(args)} failed:\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
    return time.perf_counter() - t, run.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--students", type=int, default=25)
    ap.add_argument("--regrades", type=int, default=3)
    args = ap.parse_args()

    from autograder import example_class
    from autograder.collect import check_notebook
    from autograder.service import tokens
    from autograder.service.store import Store
    from coursenb.chapters import select

    tmp = Path(tempfile.mkdtemp(prefix="bench-service-"))
    course = tmp / "course"
    cli("release", "--chapters", "ch1", "--course", str(course))
    (course / "service.toml").write_text("attempts = 1000\nqueue = 1000\n")
    honest = [s.data for s in example_class.build(select(["ch1"]), course / "release")
              if s.honest and s.data[:1] == b"{" and check_notebook(s.data) is None]
    correct = (course / "source" / "ch1" / "ch1_parallel_time.ipynb").read_bytes()
    students = [f"s{k:02d}" for k in range(args.students)]
    issued = {i.who: i.token for i in tokens.issue(course, ["bench", *students])}
    print(f"course {course}; {len(honest)} honest notebooks of the example class; load {os.getloadavg()[0]:.1f}")

    # 1. latency, beside the floor and a single regrade
    server = Server(course, args.workers)
    try:
        server.result(issued["bench"], server.submit(issued["bench"], unique(correct, -1))[0])  # warm the workers
        latency, floor = [], []
        for k in range(args.runs):
            t = time.perf_counter()
            upload, _ = server.submit(issued["bench"], unique(correct, k))
            got = server.result(issued["bench"], upload)
            latency.append(time.perf_counter() - t)
            assert got["state"] == "done", got
        store = Store(course)
        floor = [a.result["execution_time"] for a in store.attempts("bench")[: args.runs] if a.result]
        store.close()
        regrade = [cli("grade", "--student", "bench", "--assignment", "ch1", "--force", "--quiet",
                       "--course", str(course))[0] for _ in range(args.regrades)]
        print(f"\n1. one correct Chapter 1 notebook, upload to result ({args.runs} uploads, {args.workers} warm workers):")
        print(f"   p50 {statistics.median(latency):.2f} s, p95 {pct(latency, 0.95):.2f} s, min {min(latency):.2f} s")
        print(f"   its cells' own execution time (the floor): median {statistics.median(floor):.2f} s "
              f"-> p50 is {statistics.median(latency) / statistics.median(floor):.2f}x the floor")
        print(f"   autograder grade --student S --force (same run, {args.regrades}x): median {statistics.median(regrade):.2f} s "
              f"-> p50 is {statistics.median(latency) / statistics.median(regrade):.2f} of a single regrade")

        # 2. a burst: 2 uploads from each student at once
        answered, lost, refused = {}, [], [0]
        lock = threading.Lock()

        def student(k: int, who: str) -> None:
            for j in range(2):
                data = unique(honest[(2 * k + j) % len(honest)], 1000 + 2 * k + j)
                upload, n429 = server.submit(issued[who], data)
                got = server.result(issued[who], upload, poll=0.2)
                with lock:
                    refused[0] += n429
                    answered[upload] = got["state"]

        t = time.perf_counter()
        threads = [threading.Thread(target=student, args=(k, who)) for k, who in enumerate(students)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(WAIT_S)
        burst_s = time.perf_counter() - t
        store = Store(course)
        mine = [a for a in store.attempts(limit=100000) if a.student in students]
        store.close()
        lost = [a.id for a in mine if a.state != "done"]
        n = 2 * len(students)
        print(f"\n2. {n} uploads from {len(students)} students at once: {len(answered)} answered "
              f"({sum(s == 'done' for s in answered.values())} graded), {len(lost)} lost or not graded, "
              f"{refused[0]} answered 429 first (one grading in flight per student), in {burst_s:.1f} s: "
              f"{n / burst_s:.2f} uploads/s")
    finally:
        server.stop()
    seconds, out = cli("grade", "--force", "--quiet", "--workers", str(args.workers), "--course", str(course))
    m = re.search(r"graded (\d+) notebook\(s\).*? in ([\d.]+) s", out)
    graded, engine_s = int(m[1]), float(m[2])
    print(f"   batch engine, autograder grade --force of the same course ({graded} notebooks): {seconds:.1f} s "
          f"command ({engine_s:.1f} s engine): {graded / seconds:.2f} notebooks/s; service/batch throughput "
          f"{(n / burst_s) / (graded / seconds):.2f}")

    # 3. SIGKILL with a full queue, then restart
    server = Server(course, args.workers, "--accept-only")
    acknowledged = {}
    try:
        for k, who in enumerate(students):
            acknowledged[who] = server.submit(issued[who], unique(honest[k % len(honest)], 5000 + k))[0]
    finally:
        server.stop(signal.SIGKILL)
    t = time.perf_counter()
    server = Server(course, args.workers)
    try:
        results = {who: server.result(issued[who], upload, poll=0.2) for who, upload in acknowledged.items()}
    finally:
        server.stop()
    store = Store(course)
    rows = [store.attempt(u) for u in acknowledged.values()]
    store.close()
    once = [r for r in rows if r.state == "done" and r.tries == 1 and r.result is not None]
    print(f"\n3. SIGKILL with {len(acknowledged)} acknowledged uploads queued, restart: {len(once)} graded exactly once "
          f"(one result each, one grading started), {sum(r['state'] != 'done' for r in results.values())} not graded; "
          f"queue drained {time.perf_counter() - t:.1f} s after the restart")
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}; course left in {course}")


if __name__ == "__main__":
    main()
