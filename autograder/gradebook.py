"""nbgrader's gradebook and API on a course directory: the one module that opens them.

The bottom layer of `autograder` (see `autograder.startup` for the layers and for why nbgrader
itself is imported inside these functions): the engine, the grades read model, the late policy's
writer and the writers below the `Course` façade all open the gradebook through `open_course`
or `open_db`, and the release step reaches nbgrader's apps through `api`.
"""
from __future__ import annotations

import functools
import os
import re
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from autograder import config
from autograder.errors import AutograderError


class GradebookError(AutograderError):
    """A course whose gradebook cannot be opened (no course, a configuration that does not hold)."""


def nbgrader_ready() -> None:
    """Before nbgrader opens or makes a gradebook: our interpreter's bin/ first on PATH (nbgrader runs `alembic`, its
    gradebook migrations, by name) and nbgrader's lookup of the newest migration, which it makes for every new
    gradebook, answered by `alembic_head`."""
    bin_dir = str(Path(sys.executable).parent)
    if os.environ.get("PATH", "").split(os.pathsep)[0] != bin_dir:
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    from nbgrader import api as nbgrader_api

    if nbgrader_api.get_alembic_version is not alembic_head:
        _NBGRADER_LOOKUP[:] = [nbgrader_api.get_alembic_version]
        nbgrader_api.get_alembic_version = alembic_head


_NBGRADER_LOOKUP: list = []  # nbgrader's own `get_alembic_version`, once `nbgrader_ready` has replaced it
_REVISION = re.compile(r"""^(down_revision|revision)\b[^=\n]*=(.*)$""", re.M)


def alembic_head() -> str:
    """The newest revision of nbgrader's gradebook migrations, which a new gradebook is stamped with (nbgrader's
    `get_alembic_version`). nbgrader asks `alembic heads` in a subprocess that imports every migration: 2.6-3 s for
    each gradebook it makes (each release, each new course). This is the same answer read from the migrations'
    files as text, once per process; nbgrader's own lookup where the files do not name exactly one head."""
    from nbgrader.dbutil import ALEMBIC_DIR

    head = head_of_migrations(Path(ALEMBIC_DIR) / "versions")
    if head is not None:
        return head
    from nbgrader import api as nbgrader_api

    return (_NBGRADER_LOOKUP or [nbgrader_api.get_alembic_version])[0]()


@functools.cache
def head_of_migrations(versions: Path) -> str | None:
    """The one revision of the alembic migration scripts in `versions` that no script names as its down_revision
    (None unless exactly one)."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for script in versions.glob("*.py"):
        for name, value in _REVISION.findall(script.read_text()):
            (revisions if name == "revision" else parents).update(re.findall(r"""['"](\w+)['"]""", value))
    heads = revisions - parents
    return next(iter(heads)) if len(heads) == 1 else None


_KEPT: dict[tuple[str, str], object] = {}  # (db_url, course_id) -> a SQLAlchemy engine kept open (`kept`)
_KEEPING = [0]  # how many `kept` scopes are open in this process
_WAL = [False]  # `kept(wal=True)`: a SQLite gradebook kept open is switched to WAL


@contextmanager
def kept(wal: bool = False) -> Iterator[None]:
    """While open, `open_db` keeps each gradebook's SQLAlchemy engine (its connections and compiled statements)
    for the next open, instead of building nbgrader's Gradebook (tables inspected and created, course checked)
    and disposing of it each time: for a long-lived process that opens the same gradebook again and again (the
    submission service). Every open still gets a session of its own, which reads what the database holds now.

    `wal`: a SQLite gradebook's journal becomes WAL (kept in the file: every later reader, nbgrader's included,
    reads it as before, on a local file system only, as the service's own database); synchronous stays FULL, so a
    commit is on disk when it returns, as with SQLite's default rollback journal, at one sync instead of several."""
    _KEEPING[0] += 1
    _WAL[0] = _WAL[0] or wal
    try:
        yield
    finally:
        _KEEPING[0] -= 1
        if not _KEEPING[0]:
            _WAL[0] = False
            engines = list(_KEPT.values())
            _KEPT.clear()
            for engine in engines:
                engine.dispose()


@contextmanager
def open_db(db_url: str, course_id: str) -> Iterator:  # -> nbgrader.api.Gradebook
    """nbgrader's Gradebook at `db_url`, closed on exit (its engine kept for the next open inside `kept`)."""
    from nbgrader.api import Gradebook

    nbgrader_ready()
    engine = _KEPT.get((db_url, course_id)) if _KEEPING[0] else None
    if engine is None:
        gb = Gradebook(db_url, course_id=course_id)
        if _KEEPING[0]:
            _KEPT[(db_url, course_id)] = gb.engine
            if _WAL[0] and gb.engine.dialect.name == "sqlite":
                _wal(gb.engine)
    else:
        gb = _reopened(Gradebook, engine, course_id)
    try:
        yield gb
    finally:
        if _KEEPING[0] and _KEPT.get((db_url, course_id)) is gb.engine:
            gb.db.remove()  # the session ends; the engine stays for the next open
        else:
            gb.close()


def _wal(engine) -> None:
    """The SQLite database of `engine` in WAL mode (kept in its file). synchronous stays SQLite's default, FULL (a
    commit syncs the WAL before it returns: tests/instructor/test_service_kept_state.py checks it)."""
    raw = engine.raw_connection()  # the DBAPI's (sqlite3) connection, from the engine's pool
    try:
        raw.cursor().execute("PRAGMA journal_mode=WAL")
    except sqlite3.OperationalError:  # another process holds the database now: its journal stays as it is
        pass
    finally:
        raw.close()


def _reopened(cls, engine, course_id: str):  # -> nbgrader.api.Gradebook
    """A Gradebook on a kept engine: a fresh session, as nbgrader's constructor makes one, and no schema work."""
    from nbgrader import api as nbgrader_api  # its session factories, as its constructor uses them

    gb = cls.__new__(cls)
    gb.engine = engine
    gb.db = nbgrader_api.scoped_session(nbgrader_api.sessionmaker(autoflush=True, bind=engine, future=True))
    gb.course_id, gb.authenticator = course_id, None
    return gb


@contextmanager
def open_course(course_dir: Path) -> Iterator:  # -> nbgrader.api.Gradebook
    """The Gradebook of the course at `course_dir`, closed on exit (GradebookError if there is no course)."""
    try:
        cfg = config.load(course_dir)
    except config.ConfigError as exc:
        raise GradebookError(str(exc)) from None
    with open_db(cfg.db_url, cfg.course_id) as gb:
        yield gb


def api(course_dir: Path, stock_autograde: bool = False):  # -> nbgrader.apps.NbGraderAPI
    """An NbGraderAPI on the course directory's own configuration; `stock_autograde` lets its `autograde` run
    (stock nbgrader, the in-process local judge: the project's equivalence tests and benchmarks, trusted
    notebooks only), which the course's configuration otherwise refuses (autograder/stock.py)."""
    from nbgrader.apps import NbGraderAPI
    from traitlets.config import Config

    nbgrader_ready()
    merged = Config()
    merged.merge(config.traitlets(course_dir))
    if stock_autograde:
        merged.RefuseStockAutograde.allow = True
    return NbGraderAPI(config=merged)
