"""The submission service: a Starlette (ASGI) application, served by uvicorn (`autograder serve`).

Pages (forms, a session cookie, a CSRF token per session; readable without JavaScript):
    GET  /                  sign in, or the student's chapters: due date, attempts left, upload form, attempts
    POST /login  /logout    a token signs in (the cookie is HttpOnly, SameSite=Strict, Secure over https)
    POST /upload            chapter + notebook -> 303 to the result page
    GET  /result/{id}       one attempt of the signed-in student (another student's: 404), refreshing while graded
    GET  /status            the instructor's page: queue, grader, recent errors (an instructor token)
The kit's API (a bearer token, JSON; no cookie, so no CSRF):
    POST /api/submit/{chN}  the notebook as the body -> 202 {id, result, text}
    GET  /api/result/{id}   the same result as the page: {state, text, shown}
    GET  /api/status        the instructor's status as JSON

An upload is answered "received" only once it is durable (store.Store.accept). Tokens and cookies are never
logged (uvicorn's access log is off; this module logs attempt ids, students and chapters only).
"""
from __future__ import annotations

import asyncio
import hmac
import json
import logging
import secrets
import threading
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from autograder import config
from autograder.collect import Caps, MiB, capped, checked, course_notebooks
from autograder.errors import AutograderError
from autograder.service import settings as settings_mod
from autograder.service import views
from autograder.service.grader import Grader
from autograder.service.settings import Settings
from autograder.service.store import Store, digest, now

log = logging.getLogger("autograder.service")
COOKIE = "attnlab_session"
PRE_COOKIE = "attnlab_signin"  # the sign-in form's CSRF token (double submit), before there is a session
FORM_OVERHEAD = 64 * 1024  # multipart headers and the form's other fields, on top of a notebook's cap
IN_FLIGHT_RETRY_S = 15
LONG_POLL_S = 30.0  # the longest a result request waits for its grading (GET /api/result/{id}?wait=S)
RESULT_POLL_S = 1.0  # a waiting result request reads the state at least this often (the grader also wakes it)


class Results:
    """Wakes the requests waiting for a result (GET /api/result/{id}?wait=S) as soon as the grader records one.

    A waiter takes `current()` before it reads the attempt's state, then waits on it: a result recorded after
    that read sets the event it holds. The grader's thread calls `recorded`; the event loop sets the event."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.event: asyncio.Event | None = None

    def bind(self) -> None:
        """Called in the event loop, before any request."""
        self.loop, self.event = asyncio.get_running_loop(), asyncio.Event()

    def current(self) -> asyncio.Event | None:
        return self.event

    def recorded(self) -> None:
        """A result was recorded (any thread)."""
        if self.loop is not None:
            try:
                self.loop.call_soon_threadsafe(self._wake)
            except RuntimeError:  # the loop has closed: nobody waits
                pass

    def _wake(self) -> None:
        event, self.event = self.event, asyncio.Event()
        if event is not None:
            event.set()

    @staticmethod
    async def wait(event: asyncio.Event | None, seconds: float) -> None:
        """Until `event` is set or `seconds` passed."""
        if event is None:
            await asyncio.sleep(seconds)
            return
        try:
            await asyncio.wait_for(event.wait(), seconds)
        except TimeoutError:
            pass


@dataclass
class Service:
    """Everything a request handler needs: the course, its settings, the store and the grader."""

    course_dir: Path
    settings: Settings
    store: Store
    grader: Grader
    caps: object  # collect.Caps: the same caps as `autograder collect`

    def __post_init__(self) -> None:
        self.admit_lock = threading.Lock()  # limits are checked and the attempt accepted as one step
        self.results = Results()
        self.grader.listeners.append(self.results.recorded)

    @property
    def cfg(self) -> config.CourseConfig:
        return config.load(self.course_dir)

    def notebooks(self) -> dict[str, str]:
        """chapter -> its one notebook's name (the chapter names the file)."""
        return {a: nbs[0] for a, nbs in course_notebooks(self.course_dir).items() if len(nbs) == 1}


# ----------------------------------------------------------------------------- templates

def _templates():
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(Path(__file__).with_name("templates")),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    return env


TEMPLATES = None


def page(name: str, status: int = 200, headers: dict | None = None, **context) -> HTMLResponse:
    global TEMPLATES
    if TEMPLATES is None:
        TEMPLATES = _templates()
    html = TEMPLATES.get_template(name).render(**context)
    return HTMLResponse(html, status, headers=headers)


SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


# ----------------------------------------------------------------------------- who is asking

@dataclass(frozen=True)
class Who:
    name: str  # the student id ('' for an instructor)
    role: str  # student | instructor
    csrf: str = ""  # the session's form token ('' for a bearer token)


def authenticate(store: Store, token: str) -> tuple[Who, str] | None:
    """(who, token digest) for a live token, else None. The database is searched by the token's sha256 and the
    digests compared in constant time: the token itself is never stored, compared byte by byte or logged."""
    if not token or len(token) > 256:
        return None
    d = digest(token)
    row = store.live_token(d)
    if row is None or not hmac.compare_digest(row["digest"], d):
        return None
    return Who(row["who"], row["role"]), d


def signed_in(svc: Service, request: Request) -> Who | None:
    cookie = request.cookies.get(COOKIE)
    if not cookie or len(cookie) > 256:
        return None
    row = svc.store.session(cookie)
    return Who(row["who"], row["role"], row["csrf"]) if row else None


def bearer(svc: Service, request: Request) -> Who | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return None
    found = authenticate(svc.store, token.strip())
    return found[0] if found else None


def csrf_ok(expected: str, given: object) -> bool:
    return isinstance(given, str) and bool(expected) and hmac.compare_digest(expected.encode(), given.encode())


# ----------------------------------------------------------------------------- uploads

class Refused(AutograderError):
    """An upload not accepted: the HTTP status, one sentence, and the seconds to wait (429)."""

    def __init__(self, status: int, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.retry_after = status, message, retry_after


def check_notebook_bytes(data: bytes, caps) -> bytes:
    """`data` as collect would place it (the same caps: outputs over the cap dropped, long sources cut), or Refused."""
    if len(data) > caps.member_bytes:
        raise Refused(413, f"the file is larger than {caps.member_bytes // MiB} MiB")
    if not data:
        raise Refused(400, "the file is empty")
    parsed, problem = checked(data)
    if problem:
        raise Refused(400, f"{problem}: not accepted (no attempt was used)")
    data, _ = capped(data, caps, parsed)
    if len(data) > caps.notebook_bytes:
        raise Refused(413, f"the notebook is larger than {caps.notebook_bytes // MiB} MiB even without its large "
                           "outputs: clear the outputs (Kernel > Restart and clear output) and upload again")
    return data


def admit(svc: Service, student: str, assignment: str, data: bytes):
    """Check the limits and accept the upload (durable before this returns), or Refused."""
    notebooks = svc.notebooks()
    if assignment not in notebooks:
        raise Refused(404, "no such chapter in this course")
    data = check_notebook_bytes(data, svc.caps)
    with svc.admit_lock:
        pending = svc.store.pending()
        if any(a.student == student for a in pending):
            raise Refused(429, "one of your uploads is still being graded: wait for its result, then upload again",
                          IN_FLIGHT_RETRY_S)
        if len(pending) >= svc.settings.queue:
            raise Refused(429, "the grader's queue is full: try again in a minute", 60)
        when = now()
        used = views.attempts_used(svc.store, svc.settings, student, assignment, when)
        if len(used) >= svc.settings.attempts:
            oldest = min(a.received_at for a in used)
            wait = int((oldest + views.dt.timedelta(hours=svc.settings.window_hours) - when).total_seconds()) + 1
            raise Refused(429, f"no attempts left for {assignment}: {svc.settings.describe()}; the next one opens in "
                               f"{_minutes(wait)}", max(1, wait))
        attempt = svc.store.accept(student, assignment, notebooks[assignment], data, when)
    svc.grader.wake.set()
    log.info("accepted upload %s: %s %s (%d bytes)", attempt.id, student, assignment, len(data))
    return attempt


def _minutes(seconds: int) -> str:
    return f"{seconds // 3600} h {seconds % 3600 // 60} min" if seconds >= 3600 else f"{max(1, seconds // 60)} min"


# ----------------------------------------------------------------------------- handlers

def _svc(request: Request) -> Service:
    return request.app.state.service


def _cookie_args(request: Request) -> dict:
    return dict(httponly=True, samesite="strict", secure=request.url.scheme == "https", path="/")


async def home(request: Request) -> Response:
    svc = _svc(request)
    who = signed_in(svc, request)
    if who is None:
        pre = secrets.token_urlsafe(24)
        resp = page("signin.html.j2", csrf=pre, error=request.query_params.get("error", "") == "token")
        resp.set_cookie(PRE_COOKIE, pre, max_age=3600, **_cookie_args(request))
        return resp
    if who.role == "instructor":
        return RedirectResponse("/status", 303)
    return student_home(request, svc, who)


def student_home(request: Request, svc: Service, who: Who, error: str = "", status: int = 200) -> Response:
    cfg, when = svc.cfg, now()
    chapters = []
    for assignment in svc.notebooks():
        mine = views.own_due(svc.store, cfg, who.name, assignment)
        attempts = svc.store.attempts(who.name, assignment, limit=50)
        counted = views.counting(svc.store, svc.settings, cfg, who.name, assignment)
        chapters.append({
            "name": assignment,
            "due": views.describe_due(mine, cfg.timezone),
            "left": max(0, svc.settings.attempts - len(views.attempts_used(svc.store, svc.settings, who.name,
                                                                               assignment, when))),
            "next": views.next_attempt(svc.store, svc.settings, who.name, assignment),
            "attempts": [{"id": a.id, "received": a.received_at.astimezone(cfg.timezone).strftime("%Y-%m-%d %H:%M:%S"),
                          "state": a.state, "counts": counted is not None and a.id == counted.id} for a in attempts],
        })
    return page("student.html.j2", status, student=who.name, chapters=chapters, csrf=who.csrf, error=error,
                limits=svc.settings.describe(), max_mb=svc.caps.notebook_bytes >> 20)


async def login(request: Request) -> Response:
    svc = _svc(request)
    form = await request.form(max_files=0, max_fields=4)
    if not csrf_ok(request.cookies.get(PRE_COOKIE, ""), form.get("csrf")):
        return page("message.html.j2", 403, title="Sign-in refused",
                    text="The sign-in form expired or came from another site: open the sign-in page again.")
    found = authenticate(svc.store, str(form.get("token", "")).strip())
    if found is None:
        log.info("sign-in with an unknown or revoked token")
        return RedirectResponse("/?error=token", 303)
    who, token_digest = found
    cookie, _ = svc.store.new_session(who.name, who.role, token_digest)
    resp = RedirectResponse("/", 303)
    resp.set_cookie(COOKIE, cookie, **_cookie_args(request))
    resp.delete_cookie(PRE_COOKIE, path="/")
    return resp


async def logout(request: Request) -> Response:
    svc = _svc(request)
    who = signed_in(svc, request)
    form = await request.form(max_files=0, max_fields=4)
    if who is not None and csrf_ok(who.csrf, form.get("csrf")):
        svc.store.end_session(request.cookies[COOKIE])
    resp = RedirectResponse("/", 303)
    resp.delete_cookie(COOKIE, path="/")
    return resp


async def upload(request: Request) -> Response:
    svc = _svc(request)
    who = signed_in(svc, request)
    if who is None or who.role != "student":
        return RedirectResponse("/", 303)
    try:
        form = await request.form(max_files=1, max_fields=4, max_part_size=svc.caps.notebook_bytes)
    except Exception:  # noqa: BLE001 - a malformed or oversized form: python-multipart's and Starlette's errors vary
        return student_home(request, svc, who, "the upload could not be read (too large, or not a form)", 400)
    if not csrf_ok(who.csrf, form.get("csrf")):
        return page("message.html.j2", 403, title="Upload refused",
                    text="The form expired or came from another site (CSRF token missing or wrong): open the page "
                         "again and upload from there.")
    file = form.get("notebook")
    if file is None or isinstance(file, str):
        return student_home(request, svc, who, "choose a notebook file to upload", 400)
    data = await file.read(svc.caps.member_bytes + 1)
    try:
        attempt = await run_in_threadpool(admit, svc, who.name, str(form.get("chapter", "")), data)
    except Refused as r:
        headers = {"Retry-After": str(r.retry_after)} if r.retry_after else None
        resp = student_home(request, svc, who, r.message, r.status)
        if headers:
            resp.headers.update(headers)
        return resp
    return RedirectResponse(f"/result/{attempt.id}", 303)


def _own_attempt(svc: Service, who: Who | None, attempt_id: str):
    a = svc.store.attempt(attempt_id) if len(attempt_id) <= 64 else None
    if a is None or who is None or who.role != "student" or not hmac.compare_digest(a.student, who.name):
        return None
    return a


async def result(request: Request) -> Response:
    svc = _svc(request)
    who = signed_in(svc, request)
    if who is None:
        return RedirectResponse("/", 303)
    a = _own_attempt(svc, who, request.path_params["id"])
    if a is None:
        return page("message.html.j2", 404, title="Not found", text="No such upload of yours.")
    s = views.shown(svc.store, svc.settings, svc.cfg, a)
    return page("result.html.j2", s=s, refresh=a.pending, student=who.name, csrf=who.csrf)


async def status(request: Request) -> Response:
    svc = _svc(request)
    who = bearer(svc, request) or signed_in(svc, request)
    if who is None or who.role != "instructor":
        return page("message.html.j2", 404, title="Not found", text="Sign in with an instructor token.")
    return page("status.html.j2", st=status_data(svc), csrf=who.csrf)


def status_data(svc: Service) -> dict:
    g = svc.grader.status
    pending = svc.store.pending()
    recent = svc.store.attempts(limit=20)
    return {"queued": sum(a.state == "queued" for a in pending), "grading": sum(a.state == "grading" for a in pending),
            "queue_limit": svc.settings.queue, "workers": g.workers, "rounds": g.rounds, "graded": g.graded,
            "worker_start_s": g.worker_start_s, "last_round_s": g.last_round_s,
            "scheduler": svc.grader.scheduler or "local workers", "accept_only": svc.grader.accept_only,
            "errors": list(g.errors),
            "pending": [{"id": a.id, "student": a.student, "chapter": a.assignment, "state": a.state,
                         "received": a.received_at.strftime("%H:%M:%S"), "tries": a.tries} for a in pending],
            "recent": [{"id": a.id, "student": a.student, "chapter": a.assignment, "state": a.state,
                        "score": a.result.get("score") if a.result else None} for a in recent]}


# ----------------------------------------------------------------------------- the kit's API

async def api_submit(request: Request) -> Response:
    svc = _svc(request)
    who = bearer(svc, request)
    if who is None or who.role != "student":
        return JSONResponse({"error": "unknown or revoked token"}, 401)
    cap = svc.caps.member_bytes
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > cap:
            return JSONResponse({"error": f"the file is larger than {cap >> 20} MiB"}, 413)
    try:
        a = await run_in_threadpool(admit, svc, who.name, request.path_params["chapter"], bytes(body))
    except Refused as r:
        return JSONResponse({"error": r.message}, r.status,
                            headers={"Retry-After": str(r.retry_after)} if r.retry_after else None)
    s = views.shown(svc.store, svc.settings, svc.cfg, a)
    return JSONResponse({"id": a.id, "result": f"/api/result/{a.id}", "state": s.state, "text": views.as_text(s)}, 202)


async def api_result(request: Request) -> Response:
    """The result; with ?wait=S (at most LONG_POLL_S), answered once the upload is graded or S seconds passed, so
    a client waiting for its result asks once instead of polling."""
    svc = _svc(request)
    a = _own_attempt(svc, bearer(svc, request), request.path_params["id"])
    if a is None:
        return JSONResponse({"error": "no such upload of yours"}, 404)
    try:
        wait = min(float(request.query_params.get("wait", "0")), LONG_POLL_S)
    except ValueError:
        wait = 0.0
    deadline = time.monotonic() + (wait if wait > 0 else 0.0)  # a NaN or a negative wait is no wait
    while a.pending and (left := deadline - time.monotonic()) > 0:
        recorded = svc.results.current()  # before the state is read: a result recorded after it wakes this wait
        a = await run_in_threadpool(svc.store.attempt, a.id)
        if a.pending:
            await svc.results.wait(recorded, min(left, RESULT_POLL_S))
            a = await run_in_threadpool(svc.store.attempt, a.id)
    s = views.shown(svc.store, svc.settings, svc.cfg, a)
    return JSONResponse({"id": a.id, "state": s.state, "text": views.as_text(s), "shown": s.to_dict()})


async def api_status(request: Request) -> Response:
    svc = _svc(request)
    who = bearer(svc, request)
    if who is None or who.role != "instructor":
        return JSONResponse({"error": "an instructor token is needed"}, 404)
    return JSONResponse(json.loads(json.dumps(status_data(svc), default=str)))


async def api_me(request: Request) -> Response:
    who = bearer(_svc(request), request)
    if who is None:
        return JSONResponse({"error": "unknown or revoked token"}, 401)
    return JSONResponse({"student": who.name, "role": who.role})


async def style(request: Request) -> Response:
    return Response(Path(__file__).with_name("templates").joinpath("service.css").read_bytes(),
                    media_type="text/css")


async def healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


# ----------------------------------------------------------------------------- the application

class Limits:
    """ASGI middleware: security headers on every response; a request body over `cap` bytes is refused (413) as
    soon as its Content-Length says so or its bytes pass the cap."""

    def __init__(self, app, cap: int) -> None:
        self.app, self.cap = app, cap

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.cap):
            return await _too_large(send, self.cap)
        seen = 0
        started = False

        async def limited():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.cap:
                    raise _TooLarge()
            return message

        async def headers(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                have = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = list(message.get("headers", [])) + [
                    (k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items() if k.lower().encode() not in have]
            await send(message)

        try:
            await self.app(scope, limited, headers)
        except _TooLarge:
            if not started:
                await _too_large(send, self.cap)


class _TooLarge(AutograderError):
    pass


async def _too_large(send, cap: int) -> None:
    body = f"the upload is larger than the {cap >> 20} MiB this service accepts\n".encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def create_app(course_dir: Path, workers: int = 2, scheduler: str | None = None, accept_only: bool = False,
               settings: Settings | None = None, caps=None):
    """The ASGI application for the course at `course_dir` (its grader starts with the application)."""
    course_dir = Path(course_dir).resolve()
    store = Store(course_dir)
    grader = Grader(course_dir, store, workers, scheduler, accept_only)
    svc = Service(course_dir, settings or settings_mod.load(course_dir), store, grader, caps or Caps())

    @asynccontextmanager
    async def lifespan(app):
        svc.results.bind()
        grader.start()
        try:
            yield
        finally:
            grader.stop()

    app = Starlette(routes=[
        Route("/", home), Route("/login", login, methods=["POST"]), Route("/logout", logout, methods=["POST"]),
        Route("/upload", upload, methods=["POST"]), Route("/result/{id}", result), Route("/status", status),
        Route("/api/submit/{chapter}", api_submit, methods=["POST"]), Route("/api/result/{id}", api_result),
        Route("/api/status", api_status), Route("/api/me", api_me), Route("/service.css", style), Route("/healthz", healthz),
    ], lifespan=lifespan)
    app.state.service = svc
    return Limits(app, svc.caps.member_bytes + FORM_OVERHEAD), svc
