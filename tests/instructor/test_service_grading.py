"""The submission service grading for real (`autograder serve` in a process of its own, on 127.0.0.1 and a free
port): the example class's notebooks uploaded through the kit (`python -m attnlab.submit`) and through headless
Chromium get, cell by cell, the scores `autograder grade` gave them (tests/conftest.py's example_class); an
upload acknowledged by a server then killed with SIGKILL is graded exactly once after the restart.

One server lifetime serves the tests of this file (the grading workers are warm after the first upload)."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from autograder import gradinglog
from autograder.service import tokens
from autograder.service.store import Store
from tests import nbgrader_support as nbs

pytestmark = [pytest.mark.slow, pytest.mark.sandbox]
NOTEBOOK = "ch1_parallel_time"
START_S = 120  # bounds on every wait: a loaded machine is slow, never unbounded
GRADE_S = 300


class Server:
    """`autograder serve` on a copy of the example class (collected, not graded)."""

    def __init__(self, course: Path, *extra: str) -> None:
        self.course = course
        self.proc = subprocess.Popen([sys.executable, "-m", "autograder", "serve", "--course", str(course), "--port", "0",
                                      "--workers", "1", *extra], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env={**os.environ, "MPLBACKEND": "Agg"})
        deadline = time.monotonic() + START_S
        self.lines = []
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line)
            if m := re.search(r"listening on (http://127\.0\.0\.1:\d+)/", line):
                self.url = m[1]
                return
        self.kill()
        raise AssertionError("the server did not start:\n" + "".join(self.lines))

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()

    def api(self, method: str, path: str, token: str, body: bytes | None = None) -> tuple[int, dict]:
        req = urllib.request.Request(self.url + path, data=body, method=method, headers={"Authorization": f"Bearer {token}"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def wait_done(self, token: str, upload: str) -> dict:
        deadline = time.monotonic() + GRADE_S
        while time.monotonic() < deadline:
            status, got = self.api("GET", f"/api/result/{upload}", token)
            assert status == 200, got
            if got["state"] in ("done", "failed"):
                return got
            time.sleep(0.5)
        raise AssertionError(f"upload {upload} not graded in {GRADE_S} s")


@pytest.fixture(scope="module")
def served(example_class, tmp_path_factory):
    """The example class as collected, with tokens, `service.toml` (2 attempts), its server started; yields
    (server, tokens, the example class)."""
    course = tmp_path_factory.mktemp("service") / "course"
    nbs.course_copy(example_class.collected, course)
    (course / "service.toml").write_text('attempts = 2\n[show]\nbefore_due = "points"\nafter_due = "points"\n')
    issued = {i.who: i.token for i in tokens.issue(course)}
    server = Server(course)
    try:
        yield server, issued, example_class
    finally:
        server.stop()


def _expected(example_class, student: str) -> dict[str, float | None]:
    """What `autograder grade` gave the student's autograded cells."""
    log = gradinglog.read(example_class.course / "autograded" / student / "ch1", NOTEBOOK)
    return {c.grade_id: c.score for c in log.cells if c.score is not None}


def _got(result: dict) -> dict[str, float | None]:
    return {c["grade_id"]: c["score"] for c in result["shown"]["cells"] if not c["manual"]}


def test_the_kit_submits_and_gets_the_scores_autograder_grade_gives(served, tmp_path: Path) -> None:
    server, issued, example_class = served
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env.pop("ATTNLAB_TOKEN", None)
    login = subprocess.run([sys.executable, "-m", "attnlab.submit", "login", "--server", server.url], input="",
                           env={**env, "ATTNLAB_TOKEN": issued["ada"]}, capture_output=True, text=True, timeout=60)
    assert login.returncode == 0 and "signed in as ada" in login.stdout, login.stderr
    saved = tmp_path / "config" / "attnlab" / "submit.json"
    assert saved.stat().st_mode & 0o077 == 0
    for student in ("ada", "barbara"):  # a correct notebook, and one with a wrong answer
        notebook = example_class.collected / "submitted" / student / "ch1" / f"{NOTEBOOK}.ipynb"
        run_env = env if student == "ada" else {**env, "ATTNLAB_TOKEN": issued[student]}  # the saved token, or the variable's
        done = subprocess.run([sys.executable, "-m", "attnlab.submit", str(notebook), "--wait", str(GRADE_S)],
                              env=run_env, capture_output=True, text=True, timeout=GRADE_S + 60)
        assert done.returncode == 0, done.stdout + done.stderr
        upload = re.search(r"upload (\S+) of ch1", done.stdout)[1]
        status, result = server.api("GET", f"/api/result/{upload}", issued[student])
        assert _got(result) == _expected(example_class, student)
        assert result["text"] in done.stdout and "score:" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "attnlab.submit", str(notebook), "--server", server.url],
                         env={**env, "ATTNLAB_TOKEN": "atk_wrong"}, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "unknown or revoked token" in bad.stderr


def test_an_acknowledged_upload_survives_sigkill_and_is_graded_exactly_once(example_class, tmp_path: Path) -> None:
    course = tmp_path / "course"
    nbs.course_copy(example_class.collected, course)
    issued = {i.who: i.token for i in tokens.issue(course, ["alan", "edsger"])}
    server = Server(course, "--accept-only")  # the queue fills; nothing is graded before the kill
    try:
        uploads = {}
        for student in issued:
            data = (example_class.collected / "submitted" / student / "ch1" / f"{NOTEBOOK}.ipynb").read_bytes()
            status, got = server.api("POST", "/api/submit/ch1", issued[student], data)
            assert status == 202, got
            uploads[student] = got["id"]
    finally:
        server.kill()
    server = Server(course)
    try:
        for student, upload in uploads.items():
            result = server.wait_done(issued[student], upload)
            assert result["state"] == "done" and _got(result) == _expected(example_class, student)
    finally:
        server.stop()
    store = Store(course)
    try:
        assert sorted((a.student, a.state, a.tries) for a in store.attempts()) == [("alan", "done", 1),
                                                                                   ("edsger", "done", 1)]
    finally:
        store.close()
    for student in uploads:  # graded once: no earlier grading in the log's history
        assert gradinglog.history(course / "autograded" / student / "ch1", NOTEBOOK) == []


# ----------------------------------------------------------------------------- in a browser

@pytest.fixture(scope="module")
def browser():
    from tests.book.test_book_browser import CHROMEDRIVER, CHROMIUM, _require_browser

    _require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="service-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage", f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    drv = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    drv.set_page_load_timeout(60)
    try:
        yield drv
    finally:
        drv.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.mark.browser
def test_in_a_browser_sign_in_upload_result_wrong_token_oversize_and_the_limit(served, browser, tmp_path: Path) -> None:
    import nbformat
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    server, issued, example_class = served
    drv = browser

    def submitted(button) -> None:
        """Click a form's button and wait for the next page (the old one gone)."""
        from selenium.common.exceptions import WebDriverException

        button.click()  # chromedriver may answer "Node ... does not belong to the document" mid-navigation: asked again
        WebDriverWait(drv, GRADE_S, ignored_exceptions=(WebDriverException,)).until(
            expected_conditions.staleness_of(button))

    def sign_in(token: str) -> None:
        drv.delete_all_cookies()
        drv.get(server.url + "/")
        drv.find_element(By.ID, "token").send_keys(token)
        submitted(drv.find_element(By.ID, "signin"))

    def upload(path: Path) -> None:
        drv.get(server.url + "/")
        section = drv.find_element(By.ID, "chapter-ch1")
        section.find_element(By.NAME, "notebook").send_keys(str(path))
        submitted(section.find_element(By.CSS_SELECTOR, "button[type=submit]"))

    def result_text() -> str:
        deadline = time.monotonic() + GRADE_S
        while time.monotonic() < deadline:
            state = drv.find_element(By.ID, "state").text
            if "queued" not in state and "grading" not in state:
                return drv.find_element(By.TAG_NAME, "main").text
            time.sleep(1)  # the page refreshes itself (meta refresh), no script
        raise AssertionError("no result in time")

    sign_in("atk_not-a-token")
    assert "That token is not valid" in drv.find_element(By.ID, "error").text
    sign_in(issued["hedy"])
    assert drv.find_element(By.ID, "who").text == "hedy"
    assert "2 graded attempt(s) per chapter" in drv.find_element(By.ID, "limits").text
    notebook = example_class.collected / "submitted" / "hedy" / "ch1" / f"{NOTEBOOK}.ipynb"
    upload(notebook)
    text = result_text()
    expected = _expected(example_class, "hedy")
    rows = drv.find_elements(By.CSS_SELECTOR, "#cells tbody tr")
    shown = {r.find_elements(By.TAG_NAME, "td")[0].text: r.find_elements(By.TAG_NAME, "td")[2].text for r in rows}
    assert {g: float(shown[g].split("/")[0]) for g in expected} == expected, text
    big = nbformat.v4.new_notebook()  # within the upload cap, over the notebook cap: refused, no attempt used
    big.cells = [nbformat.v4.new_code_cell("# " + "x" * (250 * 1024)) for _ in range(70)]
    oversize = tmp_path / "big.ipynb"
    oversize.write_text(nbformat.writes(big))
    upload(oversize)
    assert "larger than 16 MiB" in drv.find_element(By.ID, "error").text
    upload(notebook)  # the second of two attempts
    result_text()
    assert drv.find_element(By.ID, "left").text == "0"
    upload(notebook)
    assert "no attempts left for ch1" in drv.find_element(By.ID, "error").text


# ----------------------------------------------------------------------------- on a Dask cluster

@pytest.mark.filterwarnings("ignore")
def test_grade_and_serve_run_on_a_dask_cluster_through_the_cli(tmp_path: Path) -> None:
    """`autograder grade --scheduler` and `autograder serve --scheduler` on a LocalCluster (one worker process):
    the same scores as the reference gives (a correct notebook full marks, a wrong one loses its cell), each graded
    in the engine's sandbox on the Dask worker (its grading log reports no network). The engine's Dask backend
    (`grade(scheduler=...)`) is tested here, through the commands that reach it: one cluster a lane."""
    distributed = pytest.importorskip("dask.distributed")
    from autograder import cli
    from coursenb.chapters import select
    from solutions.mistakes import apply, wrong_for

    chapter = select(["ch1"])[0]
    course = nbs.make_course(tmp_path / "course", [chapter.assignment])
    src = nbs.source_nb(chapter, course)
    wrong = wrong_for(chapter.assignment)[2]
    nbs.submit(course, chapter, "right", src)
    points = nbs.max_points(src)
    issued = {i.who: i.token for i in tokens.issue(course, ["wrong"])}
    import nbformat

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        assert cli.main(["grade", "--quiet", "--workers", "1", "--scheduler", cluster.scheduler_address,
                         "--course", str(course)]) == 0
        assert nbs.scores(course, chapter, "right") == points
        server = Server(course, "--scheduler", cluster.scheduler_address)
        try:
            status, got = server.api("POST", "/api/submit/ch1", issued["wrong"],
                                     nbformat.writes(apply(src, wrong)).encode())
            assert status == 202, got
            result = server.wait_done(issued["wrong"], got["id"])
        finally:
            server.stop()
    assert result["state"] == "done"
    assert nbs.scores(course, chapter, "wrong") == {g: 0.0 if g in wrong.loses else p for g, p in points.items()}
    for student in ("right", "wrong"):
        log = json.loads((course / "autograded" / student / "ch1" / "grading_log.json").read_text())
        assert all(nb["sandbox"]["network"].startswith("none") for nb in log["notebooks"].values()), log
