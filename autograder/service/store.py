"""The service's durable state: uploads on disk and one SQLite database in WAL mode.

    COURSE/service/service.db                      tokens (hashed), sessions, attempts (the queue)
    COURSE/service/uploads/<student>/<chN>/<id>.ipynb   every accepted upload, as received
    COURSE/submitted/<student>/<chN>/<notebook>.ipynb   the attempt being graded (nbgrader's layout)

An upload is acknowledged only after its bytes are on disk (`durable_write`: temp file, fsync,
rename, fsync of the folder) and its queue row is committed (`synchronous=FULL`). An attempt moves
queued -> grading -> done | failed; a restart puts every `grading` row back in the queue
(`resume`), so every acknowledged upload gets exactly one result.
"""
from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import os
import secrets
import sqlite3
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from autograder import config
from autograder.record import attempts as record

SCHEMA = """
CREATE TABLE IF NOT EXISTS tokens (
    digest TEXT PRIMARY KEY,            -- sha256 of the token; the token itself is never stored
    who TEXT NOT NULL,                  -- a student id, or '' for an instructor token
    role TEXT NOT NULL CHECK (role IN ('student', 'instructor')),
    issued_at TEXT NOT NULL,
    revoked_at TEXT
);
CREATE INDEX IF NOT EXISTS tokens_who ON tokens (who);
CREATE TABLE IF NOT EXISTS sessions (
    digest TEXT PRIMARY KEY,            -- sha256 of the session cookie
    who TEXT NOT NULL,
    role TEXT NOT NULL,
    csrf TEXT NOT NULL,                 -- the form token of this session
    token_digest TEXT NOT NULL,         -- the sign-in token: revoking it ends the session
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS attempts (
    id TEXT PRIMARY KEY,                -- random: a result's address tells nothing
    student TEXT NOT NULL,
    assignment TEXT NOT NULL,
    notebook TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    size INTEGER NOT NULL,
    received_at TEXT NOT NULL,          -- UTC, ISO 8601: the submission's time (timestamp.txt)
    state TEXT NOT NULL CHECK (state IN ('queued', 'grading', 'done', 'failed')),
    tries INTEGER NOT NULL DEFAULT 0,   -- gradings started (a grader that stops the server counts)
    graded_at TEXT,
    result TEXT,                        -- the grading log of this attempt (JSON), once done
    error TEXT,                         -- why it could not be graded (for the student: no internals)
    seq INTEGER NOT NULL                -- arrival order
);
CREATE INDEX IF NOT EXISTS attempts_student ON attempts (student, assignment, received_at);
CREATE INDEX IF NOT EXISTS attempts_state ON attempts (state, seq);
"""


def now() -> dt.datetime:
    """The current time, aware, UTC."""
    return dt.datetime.now(dt.UTC)


def iso(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).isoformat(timespec="microseconds")


def digest(secret: str) -> str:
    """sha256 hex of a token or cookie: what the database keeps instead of it."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def has_gradebook(course_dir: Path) -> bool:
    """Whether the course's gradebook exists (opening a SQLite one that does not creates it, seconds of migrations)."""
    url = config.load(course_dir).db_url
    path = url.removeprefix("sqlite:///")
    return path == url or Path(path).is_file()


def durable_write(path: Path, data: bytes, resync: bool = True) -> None:
    """Write `data` to `path` so that it survives a crash the moment this returns (`durable_writes`)."""
    durable_writes([(path, data)], resync)


def durable_writes(files: list[tuple[Path, bytes]], resync: bool = True) -> None:
    """Write each (path, data) so that every one survives a crash the moment this returns: a temporary file in the
    same folder, fsync, rename over the path; then one fsync of each folder (the renames themselves).

    A plain file already holding its data is not written again (a round places each attempt again); with `resync`
    it is synced again, with its folder (another command may have written it without syncing). A round's place
    passes resync=False: the attempt's copy was synced before the upload was acknowledged."""
    folders: dict[Path, None] = {}
    for path, data in files:
        if _holds(path, data, resync):
            if resync:
                folders[path.parent] = None
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        folders[path.parent] = None
    for folder in folders:
        fsync_dir(folder)


def _holds(path: Path, data: bytes, sync: bool = True) -> bool:
    """Whether `path` is a plain file holding `data` (then synced to disk, with `sync`; its folder is the caller's)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode) or os.fstat(fd).st_size != len(data):
            return False
        with os.fdopen(os.dup(fd), "rb") as f:
            if f.read(len(data) + 1) != data:
                return False
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    return True


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Attempt:
    """One accepted upload and what became of it."""

    id: str
    student: str
    assignment: str
    notebook: str
    sha256: str
    size: int
    received_at: dt.datetime
    state: str
    tries: int
    graded_at: dt.datetime | None
    result_json: str | None = field(repr=False)  # the result as stored: read (`result`) only where it is used
    error: str | None
    seq: int

    @classmethod
    def of_row(cls, row: sqlite3.Row) -> Attempt:
        return cls(row["id"], row["student"], row["assignment"], row["notebook"], row["sha256"], row["size"],
                   dt.datetime.fromisoformat(row["received_at"]), row["state"], row["tries"],
                   dt.datetime.fromisoformat(row["graded_at"]) if row["graded_at"] else None,
                   row["result"] or None, row["error"], row["seq"])

    @functools.cached_property
    def result(self) -> dict | None:
        """The attempt's grading log (a dict), once done; None before (the JSON is read on first use: a page lists
        every attempt of a chapter, and shows one result)."""
        return json.loads(self.result_json) if self.result_json else None

    @property
    def pending(self) -> bool:
        return self.state in ("queued", "grading")


class Store:
    """The database and the upload folder of one course's service; safe to share between threads."""

    def __init__(self, course_dir: Path) -> None:
        self.course_dir = Path(course_dir).resolve()
        self.root = self.course_dir / "service"
        self.root.mkdir(parents=True, exist_ok=True)
        self.path = self.root / "service.db"
        self._lock = threading.RLock()
        self.db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")  # a committed row is on disk (WAL's default NORMAL is not)
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        with self._lock:
            self.db.close()

    @contextmanager
    def tx(self, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """One transaction, committed on leaving, rolled back on an exception. Durable (synchronous=FULL: on disk
        when this returns) unless `durable` is False: then it survives the server's crash or SIGKILL, not a power
        loss (WAL with synchronous=NORMAL; the next durable commit syncs it too) - for what a restart redoes the
        same (`next_queued`'s grading mark)."""
        with self._lock:
            if not durable:
                self.db.execute("PRAGMA synchronous=NORMAL")
            try:
                self.db.execute("BEGIN IMMEDIATE")
                try:
                    yield self.db
                except BaseException:
                    self.db.execute("ROLLBACK")
                    raise
                self.db.execute("COMMIT")
            finally:
                if not durable:
                    self.db.execute("PRAGMA synchronous=FULL")

    def query(self, sql: str, args: tuple = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self.db.execute(sql, args).fetchall()

    # -- uploads and the queue

    def upload_path(self, attempt_id: str, student: str, assignment: str) -> Path:
        return self.root / "uploads" / student / assignment / f"{attempt_id}.ipynb"

    def accept(self, student: str, assignment: str, notebook: str, data: bytes, received: dt.datetime) -> Attempt:
        """Keep `data` as a new attempt, durably: its own copy, nbgrader's submitted/ copy with timestamp.txt, then the
        queue row, and the upload in the course's record of attempts. Returns it queued (`app.admit` checked the limits)."""
        attempt_id = secrets.token_urlsafe(12)
        with self._lock:  # one upload at a time: its arrival order is its order in the course's record too
            seq = self.db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM attempts").fetchone()[0]
            durable_write(self.upload_path(attempt_id, student, assignment), data)
            self.place(student, assignment, notebook, data, received)
            record.keep(self.course_dir, student, assignment, notebook, data, received, "the submission service",
                        order=seq)
            with self.tx() as db:
                db.execute("INSERT INTO attempts (id, student, assignment, notebook, sha256, size, received_at, state, "
                           "seq) VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', ?)",
                           (attempt_id, student, assignment, notebook, hashlib.sha256(data).hexdigest(), len(data),
                            iso(received), seq))
        return self.attempt(attempt_id)

    def place(self, student: str, assignment: str, notebook: str, data: bytes, received: dt.datetime,
              resync: bool = True) -> None:
        """The attempt into the course's submitted/ folder with its time (what `autograder grade` reads), durably
        (`durable_writes`; `resync`: files already in place are synced again)."""
        folder = self.course_dir / "submitted" / student / assignment
        durable_writes([(folder / f"{notebook}.ipynb", data),
                        (folder / "timestamp.txt",
                         received.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S.%f UTC").encode())], resync)

    def attempt(self, attempt_id: str) -> Attempt | None:
        rows = self.query("SELECT * FROM attempts WHERE id = ?", (attempt_id,))
        return Attempt.of_row(rows[0]) if rows else None

    def attempts(self, student: str | None = None, assignment: str | None = None, limit: int = 1000) -> list[Attempt]:
        """Attempts, newest first."""
        where, args = [], []
        for column, value in (("student", student), ("assignment", assignment)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        sql = "SELECT * FROM attempts" + (f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY seq DESC LIMIT ?"
        return [Attempt.of_row(r) for r in self.query(sql, (*args, limit))]

    def pending(self) -> list[Attempt]:
        """Queued and grading attempts, oldest first."""
        return [Attempt.of_row(r) for r in
                self.query("SELECT * FROM attempts WHERE state IN ('queued', 'grading') ORDER BY seq")]

    def resume(self) -> int:
        """After a restart: attempts left `grading` go back in the queue; returns how many."""
        with self.tx() as db:
            return db.execute("UPDATE attempts SET state = 'queued' WHERE state = 'grading'").rowcount

    def next_queued(self) -> Attempt | None:
        """The oldest queued attempt, now marked grading (its tries counted; not synced: after a power loss it is
        queued again with one try less, as if it had not been taken)."""
        with self.tx(durable=False) as db:
            row = db.execute("SELECT * FROM attempts WHERE state = 'queued' ORDER BY seq LIMIT 1").fetchone()
            if row is None:
                return None
            db.execute("UPDATE attempts SET state = 'grading', tries = tries + 1 WHERE id = ?", (row["id"],))
        return self.attempt(row["id"])

    def finish(self, attempt_id: str, result: dict | None, error: str | None) -> None:
        """The attempt's one result (done), or why it could not be graded (failed)."""
        with self.tx() as db:
            db.execute("UPDATE attempts SET state = ?, graded_at = ?, result = ?, error = ? WHERE id = ? "
                       "AND state = 'grading'",
                       ("done" if result is not None else "failed", iso(now()),
                        json.dumps(result) if result is not None else None, error, attempt_id))

    # -- tokens and sessions

    def add_token(self, who: str, role: str) -> str:
        """A new random token for `who`; only its digest is kept. Returns the token (shown once)."""
        token = "atk_" + secrets.token_urlsafe(24)  # never starts with a sign a spreadsheet reads as a formula
        with self.tx() as db:
            db.execute("INSERT INTO tokens (digest, who, role, issued_at) VALUES (?, ?, ?, ?)",
                       (digest(token), who, role, iso(now())))
        return token

    def revoke(self, who: str, role: str = "student") -> int:
        """Revoke every live token of `who` and end their sessions; returns how many tokens."""
        with self.tx() as db:
            n = db.execute("UPDATE tokens SET revoked_at = ? WHERE who = ? AND role = ? AND revoked_at IS NULL",
                           (iso(now()), who, role)).rowcount
            db.execute("DELETE FROM sessions WHERE who = ? AND role = ?", (who, role))
        return n

    def tokens(self) -> list[sqlite3.Row]:
        return self.query("SELECT who, role, issued_at, revoked_at FROM tokens ORDER BY role, who, issued_at")

    def live_token(self, token_digest: str) -> sqlite3.Row | None:
        rows = self.query("SELECT * FROM tokens WHERE digest = ? AND revoked_at IS NULL", (token_digest,))
        return rows[0] if rows else None

    def new_session(self, who: str, role: str, token_digest: str) -> tuple[str, str]:
        """A session for a signed-in user: (cookie value, form token)."""
        cookie, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        with self.tx() as db:
            db.execute("INSERT INTO sessions (digest, who, role, csrf, token_digest, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                       (digest(cookie), who, role, csrf, token_digest, iso(now())))
        return cookie, csrf

    def session(self, cookie: str) -> sqlite3.Row | None:
        rows = self.query("SELECT s.* FROM sessions s JOIN tokens t ON t.digest = s.token_digest "
                          "WHERE s.digest = ? AND t.revoked_at IS NULL", (digest(cookie),))
        return rows[0] if rows else None

    def end_session(self, cookie: str) -> None:
        with self.tx() as db:
            db.execute("DELETE FROM sessions WHERE digest = ?", (digest(cookie),))
