"""The submission service without grading (`autograder serve --accept-only`, driven in process by Starlette's
TestClient): sign-in, tokens, uploads and their caps, limits, CSRF, whose results a student sees, durability of
an acknowledged upload, and what a result shows at each tier. Grading through the service, the kit and the
browser are in tests/instructor/test_service_grading.py.

Each defence here was checked to fail its test with the defence removed (the commit that added it says which)."""
from __future__ import annotations

import datetime as dt
import hashlib
import re
from pathlib import Path

import nbformat
import pytest

from autograder import cli
from autograder.collect import Caps
from autograder.course import init_course
from autograder.service import settings as settings_mod
from autograder.service import tokens, views
from autograder.service.app import COOKIE, create_app
from autograder.service.store import Store

KiB = 1024


@pytest.fixture
def course(tmp_path: Path) -> Path:
    """A course with Chapter 1's source (nothing graded: the service accepts, the tests judge what it kept)."""
    init_course(tmp_path / "course", ["ch1"])
    return tmp_path / "course"


def _notebook(text: str = "x = 1") -> bytes:
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(text))
    return nbformat.writes(nb).encode()


class Client:
    """A TestClient on an accept-only service, with tokens for ada and bob."""

    def __init__(self, course: Path, settings=None, caps=None) -> None:
        from starlette.testclient import TestClient

        issued = tokens.issue(course, ["ada", "bob"])
        self.tokens = {i.who: i.token for i in issued}
        self.instructor = tokens.issue(course, instructor=True)[0].token
        app, self.svc = create_app(course, accept_only=True, settings=settings, caps=caps)
        self.http = TestClient(app, base_url="http://testserver")
        self.http.__enter__()
        self.course = course

    def close(self) -> None:
        self.http.__exit__(None, None, None)
        self.svc.store.close()

    def sign_in(self, who: str) -> str:
        """Sign in through the form; returns the session's CSRF token."""
        self.http.cookies.clear()
        page = self.http.get("/")
        pre = re.search(r'name="csrf" value="([^"]+)"', page.text)[1]
        r = self.http.post("/login", data={"csrf": pre, "token": self.tokens[who]}, follow_redirects=False)
        assert r.status_code == 303 and COOKIE in r.cookies
        return re.search(r'name="csrf" value="([^"]+)"', self.http.get("/").text)[1]

    def upload(self, csrf: str, data: bytes, chapter: str = "ch1", filename: str = "ch1_parallel_time.ipynb"):
        return self.http.post("/upload", data={"csrf": csrf, "chapter": chapter},
                              files={"notebook": (filename, data, "application/x-ipynb+json")}, follow_redirects=False)

    def api(self, who: str, data: bytes, chapter: str = "ch1"):
        return self.http.post(f"/api/submit/{chapter}", content=data,
                              headers={"Authorization": f"Bearer {self.tokens[who]}"})


@pytest.fixture
def client(course: Path):
    c = Client(course)
    yield c
    c.close()


def _graded(store: Store, attempt_id: str, log: dict) -> None:
    """Mark an attempt graded with `log` as its result (the grader's last step)."""
    with store.tx() as db:
        db.execute("UPDATE attempts SET state = 'grading' WHERE id = ?", (attempt_id,))
    store.finish(attempt_id, log, None)


LOG = {"score": 1.0, "max_score": 5.0, "error": None, "notes": [],
       "cells": [{"grade_id": "test_self_attention", "score": 0.0, "max_score": 4.0, "passed": False,
                  "reason": "hidden check <b>shape</b> failed: <script>alert(1)</script>"},
                 {"grade_id": "test_transformer", "score": 1.0, "max_score": 1.0, "passed": True, "reason": "passed"}]}


# ----------------------------------------------------------------------------- tokens and sign-in

def test_tokens_are_stored_hashed_and_a_wrong_or_revoked_token_signs_nobody_in(client: Client) -> None:
    raw = b"".join(p.read_bytes() for p in (client.course / "service").glob("service.db*"))
    for token in [*client.tokens.values(), client.instructor]:
        assert token.encode() not in raw and hashlib.sha256(token.encode()).hexdigest().encode() in raw
    assert client.http.get("/api/me", headers={"Authorization": "Bearer atk_wrong"}).status_code == 401
    page = client.http.get("/")
    pre = re.search(r'name="csrf" value="([^"]+)"', page.text)[1]
    r = client.http.post("/login", data={"csrf": pre, "token": "atk_" + "x" * 32})
    assert "That token is not valid" in r.text and COOKIE not in client.http.cookies
    csrf = client.sign_in("ada")
    assert "signed in as" in client.http.get("/").text
    tokens.revoke(client.course, "ada")  # revoking ends the session too
    assert "Sign in" in client.http.get("/").text
    assert client.api("ada", _notebook()).status_code == 401
    assert client.upload(csrf, _notebook()).status_code == 303  # back to sign-in, nothing accepted
    assert client.svc.store.attempts() == []


def test_tokens_cli_issues_a_csv_that_no_spreadsheet_reads_as_a_formula(course: Path, tmp_path: Path) -> None:
    (course / "submitted" / "carol" / "ch1").mkdir(parents=True)
    out = tmp_path / "tokens.csv"
    assert cli.main(["tokens", "issue", "--course", str(course), "-o", str(out), "--server", "https://x"]) == 0
    rows = out.read_text().splitlines()
    assert rows[0] == '"student","token","server"' and rows[1].startswith('"carol","atk_')
    assert out.stat().st_mode & 0o077 == 0  # secrets: its owner's only
    assert cli.main(["tokens", "issue", "--course", str(course), "-o", str(out)]) == 0  # carol has one: none new
    assert cli.main(["tokens", "revoke", "carol", "--course", str(course)]) == 0
    assert cli.main(["tokens", "list", "--course", str(course)]) == 0


# ----------------------------------------------------------------------------- uploads

def test_an_upload_is_durable_in_nbgrader_s_layout_before_it_is_acknowledged(client: Client) -> None:
    csrf = client.sign_in("ada")
    data = _notebook()
    r = client.upload(csrf, data)
    assert r.status_code == 303 and r.headers["location"].startswith("/result/")
    (a,) = client.svc.store.attempts()
    assert (a.student, a.assignment, a.state, a.sha256) == ("ada", "ch1", "queued", hashlib.sha256(data).hexdigest())
    folder = client.course / "submitted" / "ada" / "ch1"
    assert (folder / "ch1_parallel_time.ipynb").read_bytes() == data
    assert (folder / "timestamp.txt").read_text().endswith(" UTC")
    assert client.svc.store.upload_path(a.id, "ada", "ch1").read_bytes() == data
    page = client.http.get(r.headers["location"])
    assert 'http-equiv="refresh"' in page.text and "queued" in page.text  # readable without JavaScript
    # a restart (a new store on the same files) finds it queued: an acknowledged upload is never lost
    other = Store(client.course)
    assert [x.id for x in other.pending()] == [a.id]
    other.close()


def test_an_upload_is_committed_synced_and_a_grading_mark_is_not(client: Client) -> None:
    """The acknowledged upload's row and its result are committed with synchronous=FULL; the grading mark (what a
    restart redoes the same) is not synced, and the connection is back to FULL after it."""
    store = client.svc.store
    said: list[str] = []
    store.db.set_trace_callback(said.append)
    try:
        aid = client.api("ada", _notebook()).json()["id"]
        accepted = said[: said.index("COMMIT", next(i for i, s in enumerate(said) if s.startswith("INSERT INTO attempts")))]
        assert not any("synchronous" in s for s in accepted)
        said.clear()
        assert store.next_queued().id == aid
        marked = said[: said.index("COMMIT") + 2]
        assert marked[0] == "PRAGMA synchronous=NORMAL" and marked[-1] == "PRAGMA synchronous=FULL"
        said.clear()
        store.finish(aid, LOG, None)
        assert "COMMIT" in said and not any("synchronous" in s for s in said)
    finally:
        store.db.set_trace_callback(None)
    assert store.db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


def test_a_crafted_file_name_or_chapter_never_names_a_path(client: Client) -> None:
    csrf = client.sign_in("ada")
    r = client.upload(csrf, _notebook(), filename="../../../nbgrader_config.py")
    assert r.status_code == 303
    assert (client.course / "submitted" / "ada" / "ch1" / "ch1_parallel_time.ipynb").is_file()
    assert "get_config" in (client.course / "nbgrader_config.py").read_text()
    for chapter in ("../ch1", "ch1/../../x", "ch9", "source"):
        r = client.api("bob", _notebook(), chapter=chapter)
        assert r.status_code == 404, chapter
    assert sorted(p.name for p in (client.course / "submitted").iterdir()) == ["ada"]


def test_an_oversize_or_unreadable_upload_is_refused_and_costs_no_attempt(course: Path) -> None:
    c = Client(course, caps=Caps(member_bytes=64 * KiB, notebook_bytes=16 * KiB, output_bytes=8 * KiB))
    try:
        csrf = c.sign_in("ada")
        big = _notebook("x = '" + "a" * (70 * KiB) + "'")
        r = c.upload(csrf, big)
        assert r.status_code == 413 and "larger than" in r.text
        assert c.api("ada", big).status_code == 413
        nb = nbformat.v4.new_notebook()  # within the upload cap, over the notebook cap once read
        nb.cells = [nbformat.v4.new_code_cell("y = 2") for _ in range(400)]
        r = c.api("ada", nbformat.writes(nb).encode())
        assert r.status_code == 413 and "clear the outputs" in r.json()["error"]
        r = c.api("ada", b'{"cells": [' * 200)
        assert r.status_code == 400 and "no attempt was used" in r.json()["error"]
        assert c.svc.store.attempts() == [] and not (course / "submitted").exists()
    finally:
        c.close()


def test_forms_need_the_session_s_csrf_token(client: Client) -> None:
    client.sign_in("ada")
    for csrf in ("", "forged", None):
        data = {"chapter": "ch1"} | ({"csrf": csrf} if csrf is not None else {})
        r = client.http.post("/upload", data=data, files={"notebook": ("n.ipynb", _notebook(), "application/json")})
        assert r.status_code == 403 and "CSRF" in r.text
    # the sign-in form too (a site that signs a victim in as its own student): no matching cookie, no session
    client.http.cookies.clear()
    r = client.http.post("/login", data={"csrf": "forged", "token": client.tokens["bob"]}, follow_redirects=False)
    assert r.status_code == 403 and COOKIE not in r.cookies
    assert client.svc.store.attempts() == []
    cookie = client.http.get("/").headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie


def test_a_student_sees_only_their_own_results(client: Client) -> None:
    r = client.api("ada", _notebook())
    assert r.status_code == 202
    ada_id = r.json()["id"]
    client.sign_in("bob")
    assert client.http.get(f"/result/{ada_id}").status_code == 404
    bob = {"Authorization": f"Bearer {client.tokens['bob']}"}
    assert client.http.get(f"/api/result/{ada_id}", headers=bob).status_code == 404
    assert client.http.get("/status").status_code == 404 and client.http.get("/api/status", headers=bob).status_code == 404
    ada = {"Authorization": f"Bearer {client.tokens['ada']}"}
    assert client.http.get(f"/api/result/{ada_id}", headers=ada).json()["state"] == "queued"
    for wait in ("0.2", "nan", "-1", "x"):  # a long poll that times out (or no wait at all) answers the state
        assert client.http.get(f"/api/result/{ada_id}?wait={wait}", headers=ada).json()["state"] == "queued"
    inst = {"Authorization": f"Bearer {client.instructor}"}
    assert client.http.get("/api/status", headers=inst).json()["queued"] == 1
    page = client.http.get("/status", headers=inst).text  # the instructor's page: the queue, the grader, errors
    assert "Service status" in page and ada_id in page and "1 queued" in page


def test_a_waiting_result_request_is_woken_by_the_grader_s_result(client: Client) -> None:
    """GET /api/result/{id}?wait=S answers as soon as the grader records a result (not at its next poll)."""
    import asyncio
    import threading

    from autograder.service.app import Results

    assert client.svc.results.recorded in client.svc.grader.listeners  # each recorded result wakes the waiters

    async def wait() -> bool:
        results = Results()
        results.bind()
        recorded = results.current()  # taken before the state is read, as api_result does
        threading.Timer(0.05, results.recorded).start()  # the grader's thread records a result
        await results.wait(recorded, 20.0)
        return recorded.is_set()

    assert asyncio.run(wait())


# ----------------------------------------------------------------------------- limits

def test_limits_answer_429_with_retry_after(course: Path) -> None:
    c = Client(course, settings=settings_mod.Settings(attempts=2, queue=2))
    try:
        first = c.api("ada", _notebook()).json()["id"]
        r = c.api("ada", _notebook())  # one grading in flight per student
        assert r.status_code == 429 and int(r.headers["Retry-After"]) > 0 and "still being graded" in r.json()["error"]
        _graded(c.svc.store, first, LOG)
        second = c.api("ada", _notebook()).json()["id"]
        _graded(c.svc.store, second, LOG)
        r = c.api("ada", _notebook())  # two attempts in the window
        assert r.status_code == 429 and "no attempts left" in r.json()["error"]
        assert 23 * 3600 < int(r.headers["Retry-After"]) <= 24 * 3600 + 1
        csrf = c.sign_in("ada")
        page = c.upload(csrf, _notebook())
        assert page.status_code == 429 and "Retry-After" in page.headers and "no attempts left" in page.text
        assert "2 graded attempt(s) per chapter in any 24 h" in page.text  # the page states the limits
        tokens.issue(course, ["cy", "dee", "eve"])
        toks = {i.who: i.token for i in tokens.issue(course, ["cy", "dee", "eve"], again=True)}
        for who in ("cy", "dee"):
            assert c.http.post("/api/submit/ch1", content=_notebook(),
                               headers={"Authorization": f"Bearer {toks[who]}"}).status_code == 202
        r = c.http.post("/api/submit/ch1", content=_notebook(), headers={"Authorization": f"Bearer {toks['eve']}"})
        assert r.status_code == 429 and "queue is full" in r.json()["error"] and r.headers["Retry-After"] == "60"
    finally:
        c.close()


# ----------------------------------------------------------------------------- what a result shows

def test_a_result_shows_the_chapter_s_tier_escaped(course: Path) -> None:
    c = Client(course)
    try:
        aid = c.api("ada", _notebook()).json()["id"]
        _graded(c.svc.store, aid, LOG)
        cfg = c.svc.cfg
        a = c.svc.store.attempt(aid)
        chosen = settings_mod.Settings(show=settings_mod.Show("nothing", "cells", "points"), published=frozenset())
        before = views.shown(c.svc.store, chosen, cfg, a)
        assert before.tier == "nothing" and before.cells == () and before.score is None
        assert "each graded cell's pass or fail" in before.later
        cfg_due = type(cfg)(**{**cfg.__dict__, "due": {"ch1": a.received_at - dt.timedelta(hours=1)}})
        after = views.shown(c.svc.store, chosen, cfg_due, a)
        assert after.tier == "cells" and [x.passed for x in after.cells] == [False, True] and after.score is None
        published = views.shown(c.svc.store, settings_mod.Settings(show=chosen.show, published=frozenset({"ch1"})), cfg, a)
        assert published.tier == "points" and published.score == 1.0 and published.cells[0].max_score == 4.0
        text = views.as_text(published)
        assert "FAIL   test_self_attention 0/4" in text and "score: 1/5" in text
        c.svc.settings = settings_mod.Settings(show=settings_mod.Show("cells", "cells", "cells"))
        c.sign_in("ada")
        page = c.http.get(f"/result/{aid}").text
        assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        assert 'http-equiv="refresh"' not in page and "FAIL" in page
        csp = c.http.get(f"/result/{aid}").headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src" not in csp
    finally:
        c.close()


def test_settings_are_checked(course: Path) -> None:
    (course / "service.toml").write_text('attempts = 3\nwindow_hours = 12\npublished = ["ch1"]\n'
                                         '[show]\nbefore_due = "nothing"\n[show.ch1]\nafter_due = "cells"\n')
    s = settings_mod.load(course)
    assert (s.attempts, s.window_hours, s.show.before_due, s.show_for("ch1").after_due) == (3, 12.0, "nothing", "cells")
    for bad in ("attempts = 0", "window_hours = nan", "final = 'first'", "[show]\nbefore_due = 'all'", "speed = 1"):
        (course / "service.toml").write_text(bad + "\n")
        with pytest.raises(settings_mod.SettingsError):
            settings_mod.load(course)


# ----------------------------------------------------------------------------- exactly once

def test_a_grading_interrupted_by_a_stop_is_graded_again_and_recorded_once(client: Client, tmp_path: Path) -> None:
    from autograder import gradinglog
    from autograder.service.grader import MAX_TRIES, Grader

    aid = client.api("ada", _notebook()).json()["id"]
    store = client.svc.store
    assert store.next_queued().id == aid  # the grader took it ...
    assert store.resume() == 1  # ... and the server stopped: a restart queues it again
    a = store.next_queued()
    assert (a.id, a.state, a.tries) == (aid, "grading", 2)
    store.finish(aid, LOG, None)
    store.finish(aid, {"score": 99}, None)  # a second result never replaces the first
    assert store.attempt(aid).result["score"] == 1.0
    # a grading whose log was committed before the stop: the next round adopts that log (no second grading)
    bid = client.api("bob", _notebook()).json()["id"]
    b = store.next_queued()
    sha = store.attempt(bid).sha256
    log = gradinglog.NotebookLog("bob", "ch1", "ch1_parallel_time", sha, None, "2026-01-01T00:00:00Z", ())
    gradinglog.write(client.course / "autograded" / "bob" / "ch1", log)
    grader = Grader(client.course, store)
    calls = []
    import autograder.course as course_mod

    def graded(self, *args, **kwargs):  # force=False: the engine skips a notebook whose log matches its file
        calls.append(kwargs)
        return course_mod.Graded(summary=None)

    def crashed(self, *args, **kwargs):
        raise course_mod.CourseError("the grading workers cannot start: the sandbox died")

    real = course_mod.Course.grade
    course_mod.Course.grade = graded
    try:
        grader.round([b])
        assert store.attempt(bid).state == "done" and calls[0]["force"] is False
        assert gradinglog.read(client.course / "autograded" / "bob" / "ch1", "ch1_parallel_time") == log
        # an upload the grader cannot grade: queued again, then after MAX_TRIES gradings failed, its file kept
        data = _notebook("z = 3")
        cid = client.api("bob", data).json()["id"]
        course_mod.Course.grade = crashed
        for _ in range(MAX_TRIES):
            grader.round([store.next_queued()])
        c = store.attempt(cid)
        assert (c.state, c.tries) == ("failed", MAX_TRIES) and "your file is kept" in c.error
        assert store.upload_path(cid, "bob", "ch1").read_bytes() == data
        assert "the sandbox died" in grader.status.errors[0][1]
    finally:
        course_mod.Course.grade = real


def test_finalize_puts_the_attempt_that_counts_back_and_grades_it(client: Client, monkeypatch) -> None:
    import autograder.course as course_mod
    from autograder.service.grader import finalize

    store = client.svc.store
    first, second = _notebook("a = 1"), _notebook("a = 2")
    one = client.api("ada", first).json()["id"]
    _graded(store, one, {**LOG, "score": 5.0})
    two = client.api("ada", second).json()["id"]
    _graded(store, two, {**LOG, "score": 3.0})
    calls = []
    monkeypatch.setattr(course_mod.Course, "grade", lambda self, *a, **k: calls.append(a))
    submitted = client.course / "submitted" / "ada" / "ch1" / "ch1_parallel_time.ipynb"
    assert finalize(client.course) == [("ada", "ch1", two)] and submitted.read_bytes() == second  # the course's rule
    from autograder.record import attempts as record  # every upload is in the course's record, as collect's are

    assert len(record.every(client.course, "ada", "ch1", "ch1_parallel_time")) == 2
    record.pin(client.course, "ada", "ch1", "ch1_parallel_time", 1)  # the instructor pins the first
    assert finalize(client.course) == [("ada", "ch1", one)] and submitted.read_bytes() == first
    record.pin(client.course, "ada", "ch1", "ch1_parallel_time", None)
    assert finalize(client.course) == [("ada", "ch1", two)]
    (client.course / "service.toml").write_text('final = "best"\n')
    assert finalize(client.course) == [("ada", "ch1", one)] and submitted.read_bytes() == first  # the best
    stamp = (client.course / "submitted" / "ada" / "ch1" / "timestamp.txt").read_text()
    assert stamp.startswith(store.attempt(one).received_at.strftime("%Y-%m-%d %H:%M:%S"))  # with its own time
    assert calls == [(None, ["ada"])] * 4


def test_a_student_sees_their_own_due_date_and_points_wait_for_the_last_extension(client: Client) -> None:
    from autograder.service import views as views_mod

    assert cli.main(["deadlines", "--due", "ch1=2030-01-31 23:00", "--course", str(client.course)]) == 0
    assert cli.main(["deadlines", "--extend", "bob", "--chapter", "ch1", "--by", "2d", "--course", str(client.course)]) == 0
    views_mod._extensions.clear()
    client.sign_in("bob")
    assert "2030-02-02 23:00 UTC (your extension: 2 d 0 h)" in client.http.get("/").text
    client.sign_in("ada")
    assert "2030-01-31 23:00 UTC" in client.http.get("/").text and "your extension" not in client.http.get("/").text
    aid = client.api("ada", _notebook()).json()["id"]
    _graded(client.svc.store, aid, LOG)
    a, cfg = client.svc.store.attempt(aid), client.svc.cfg
    chosen = settings_mod.Settings(show=settings_mod.Show("cells", "points", "points"))
    after_ada = dt.datetime(2030, 2, 1, 12, tzinfo=dt.UTC)  # after ada's due date, before bob's
    assert views.shown(client.svc.store, chosen, cfg, a, after_ada).tier == "cells"
    assert views.shown(client.svc.store, chosen, cfg, a, after_ada + dt.timedelta(days=2)).tier == "points"


def test_a_round_waits_while_another_command_holds_the_course_s_lock(client: Client, monkeypatch) -> None:
    import subprocess
    import sys

    import autograder.course as course_mod
    from autograder.service import grader as grader_mod

    monkeypatch.setattr(grader_mod, "BUSY_WAIT_S", 0.0)
    calls = []
    monkeypatch.setattr(course_mod.Course, "grade", lambda self, *a, **k: calls.append(a) or course_mod.Graded(None))
    aid = client.api("ada", _notebook()).json()["id"]
    store, grader = client.svc.store, grader_mod.Grader(client.course, client.svc.store)
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom autograder import courselock\n"
                               f"with courselock.hold({str(client.course)!r}, 'grade'):\n"
                               "    print('held', flush=True); sys.stdin.read()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"  # `autograder grade` is writing the course
        grader.round([store.next_queued()])
        a = store.attempt(aid)
        assert (a.state, a.tries, calls) == ("queued", 0, []) and "waiting for the course's lock" in grader.status.errors[0][1]
    finally:
        holder.communicate("", timeout=60)
    grader.round([store.next_queued()])  # the lock is free: graded (here: the stub), one try
    assert calls == [("ch1", ["ada"])] and store.attempt(aid).tries == 1


# ----------------------------------------------------------------------------- decaying credit

CREDIT = settings_mod.Credit(free=1, decay=0.5, minimum=0.2)


def test_the_credit_formula_and_its_settings(course: Path) -> None:
    """(1 - decay)^(n - free) after the free attempts, never below the floor; every bad value named."""
    c = settings_mod.Credit(free=2, decay=0.1, minimum=0.5)
    assert [round(c.multiplier(n), 6) for n in range(1, 10)] == [1, 1, 0.9, 0.81, 0.729, 0.6561, 0.59049, 0.531441, 0.5]
    assert {settings_mod.Credit().multiplier(n) for n in range(1, 50)} == {1.0}  # off by default
    assert settings_mod.Credit(free=0, decay=0.5).multiplier(1) == 0.5
    (course / "service.toml").write_text("[credit]\nfree = 2\ndecay = 0.1\nminimum = 0.5\n")
    assert settings_mod.load(course).credit == c
    assert "each later one 10% less than the one before, never less than 50%" in settings_mod.load(course).describe()
    for bad in ("decay = nan", "decay = inf", "decay = 1", "decay = 1.5", "decay = -0.1", "decay = true", "decay = '0.1'",
                "free = -1", "free = 1.5", "minimum = 1.5", "minimum = -inf", "minimum = nan", "speed = 2"):
        (course / "service.toml").write_text(f"[credit]\n{bad}\n")
        with pytest.raises(settings_mod.SettingsError, match=r"\[credit\]"):
            settings_mod.load(course)
    (course / "service.toml").write_text("credit = 0.5\n")
    with pytest.raises(settings_mod.SettingsError, match="must be a table"):
        settings_mod.load(course)


def test_the_page_shows_each_attempt_s_credit_and_what_the_next_would_earn(course: Path) -> None:
    c = Client(course, settings=settings_mod.Settings(show=settings_mod.Show("points", "points", "points"), credit=CREDIT))
    try:
        c.sign_in("ada")
        assert "your next attempt (number 1) earns 100% of its points" in c.http.get("/").text  # before uploading
        one = c.api("ada", _notebook("a = 1")).json()["id"]
        _graded(c.svc.store, one, LOG)
        lost = c.api("ada", _notebook("a = 2")).json()["id"]
        c.svc.store.next_queued()
        c.svc.store.finish(lost, None, "the grader could not grade it")  # a failed grading has no number
        two = c.api("ada", _notebook("a = 3")).json()["id"]
        _graded(c.svc.store, two, {**LOG, "score": 4.0})
        assert "your next attempt (number 3) earns 25% of its points" in c.http.get("/").text
        page = c.http.get(f"/result/{two}").text
        assert "Credit: attempt 2 earns 50% of its points: 4 &times; 0.5 = <strong>2</strong>/5" in page
        assert "Score: 4/5" in page  # the raw points as graded, beside the credited ones
        assert c.svc.store.attempt(two).result["score"] == 4.0  # the record keeps them
        text = views.as_text(views.shown(c.svc.store, c.svc.settings, c.svc.cfg, c.svc.store.attempt(one)))
        assert "credit: attempt 1 earns 100% of its points: 1/5" in text and "number 3) earns 25%" in text
    finally:
        c.close()


def test_best_counts_the_most_credited_points_and_the_export_states_the_credit(client: Client, monkeypatch, capsys,
                                                                               tmp_path: Path) -> None:
    import autograder.course as course_mod
    from autograder import grades, gradinglog
    from autograder.service.grader import finalize

    store = client.svc.store
    one = client.api("ada", _notebook("a = 1")).json()["id"]
    _graded(store, one, {**LOG, "score": 3.0})
    two = client.api("ada", _notebook("a = 2")).json()["id"]
    _graded(store, two, {**LOG, "score": 5.0})  # more raw points, at half credit: 2.5
    monkeypatch.setattr(course_mod.Course, "grade", lambda self, *a, **k: None)
    (client.course / "service.toml").write_text('final = "best"\n')
    assert finalize(client.course) == [("ada", "ch1", two)]  # without credit: the most raw points
    (client.course / "service.toml").write_text('final = "best"\n[credit]\nfree = 1\ndecay = 0.5\nminimum = 0.2\n')
    assert finalize(client.course) == [("ada", "ch1", one)]  # 3 x 1 beats 5 x 0.5
    # the gradebook holds the upload its grading log names (here the second, as the service graded it last, before
    # a finalize that grades the first): export and the gradebook credit that one, and say so
    log = gradinglog.NotebookLog("ada", "ch1", "ch1_parallel_time", store.attempt(two).sha256, None,
                                 "2026-01-01T00:00:00Z", ())
    gradinglog.write(client.course / "autograded" / "ada" / "ch1", log)
    assert views.credit_in_gradebook(client.course) == {("ada", "ch1"): (2, 0.5)}
    cls = grades.Class([("ch1", "ch1_parallel_time", 5.0)], {("ch1", "ch1_parallel_time"): {"t": 5.0}},
                       {"ada": {}, "bob": {}}, [grades.CellGrade("ada", "ch1", "ch1_parallel_time", "t", 5.0, 5.0)])
    monkeypatch.setattr(course_mod.Course, "grades", lambda self: cls)
    out = tmp_path / "totals.csv"
    assert cli.main(["export", "--format", "csv", "-o", str(out), "--course", str(client.course)]) == 0
    header, *rows = [line.replace('"', "").split(",") for line in out.read_text().splitlines()]
    ada = dict(zip(header, rows[0]))
    assert (ada["student_id"], ada["raw_score"], ada["score"], ada["credit"]) == ("ada", "5", "2.5", "0.5")
    assert dict(zip(header, rows[1]))["credit"] == ""  # bob submitted nothing
    assert cli.main(["gradebook", "--course", str(client.course)]) == 0
    assert "2.5C" in capsys.readouterr().out  # the gradebook's credited total, marked
