"""What the submission service keeps between gradings so that a round pays less than a cold command, and what it
must never keep stale: the gradebook's engine (`gradebook.kept`), the course's configuration (`config.load`), an
attempt's copy in submitted/ already in place (`store.durable_write`).

The configuration and placement tests were checked to fail with the shortcut made naive (a config cache keyed by the
file's time, size and inode; a skip by file size alone)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from autograder import config, gradebook
from autograder.course import init_course
from autograder.service.store import durable_write


@pytest.fixture
def course(tmp_path: Path) -> Path:
    """A course's folder with Chapter 1 (its configuration file; no gradebook yet)."""
    init_course(tmp_path / "course", ["ch1"])
    return tmp_path / "course"


def test_a_config_rewritten_with_the_same_size_at_once_is_read_again(course: Path) -> None:
    path = course / config.CONFIG_NAME
    text = path.read_text()
    path.write_text(text + "\nc.Deadlines.due = {'ch1': '2025-01-31 23:00'}\n")
    assert config.load(course).due["ch1"].day == 31
    stat = path.stat()
    path.write_text(text + "\nc.Deadlines.due = {'ch1': '2025-01-30 23:00'}\n")  # same size, same inode
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and the same time: only the bytes differ
    assert config.load(course).due["ch1"].day == 30
    first = config.load(course)
    first.due.clear()  # what a caller does to its copy is its own
    assert config.load(course).due["ch1"].day == 30


def test_a_kept_gradebook_sees_what_another_writer_committed(tmp_path: Path) -> None:
    from nbgrader.api import Base, Gradebook
    from sqlalchemy import create_engine

    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    made = create_engine(url)
    Base.metadata.create_all(made)  # nbgrader's tables, without the alembic subprocess a new gradebook runs
    made.dispose()
    with gradebook.kept():
        with gradebook.open_db(url, "course101") as gb:
            engine = gb.engine
            assert [s.id for s in gb.students] == []
        with Gradebook(url, course_id="course101") as other:  # another command adds a student
            other.add_student("s01")
        with gradebook.open_db(url, "course101") as gb:
            assert gb.engine is engine  # kept: no schema work again
            assert [s.id for s in gb.students] == ["s01"]  # a session of its own reads what is there now
    assert not gradebook._KEPT  # the last scope closed disposes of what it kept


def test_the_services_gradebook_is_wal_with_every_commit_synced_and_others_read_it(tmp_path: Path) -> None:
    """kept(wal=True) (the service's grader): a SQLite gradebook's journal becomes WAL, each of its connections
    synchronous=FULL (a commit on disk when it returns); kept() alone changes nothing; another reader sees the rows."""
    import sqlite3

    from nbgrader.api import Base, Gradebook
    from sqlalchemy import create_engine

    path = tmp_path / "gradebook.db"
    url = f"sqlite:///{path}"
    made = create_engine(url)
    Base.metadata.create_all(made)
    made.dispose()
    mode = lambda: sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]  # noqa: E731
    with gradebook.kept(), gradebook.open_db(url, "course101") as gb:
        gb.add_student("s01")
    assert mode() == "delete"
    with gradebook.kept(wal=True):
        with gradebook.open_db(url, "course101") as gb:
            gb.add_student("s02")
            assert gb.db.connection().exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
        assert mode() == "wal"
        with Gradebook(url, course_id="course101") as other:  # nbgrader's own, as a batch command opens it
            assert sorted(s.id for s in other.students) == ["s01", "s02"]
    assert mode() == "wal"  # kept in the file


def test_an_attempt_placed_again_is_not_rewritten_and_a_different_one_is(tmp_path: Path) -> None:
    path = tmp_path / "submitted" / "s01" / "ch1" / "nb.ipynb"
    durable_write(path, b'{"a": 1}')
    inode = path.stat().st_ino
    durable_write(path, b'{"a": 1}')
    assert path.stat().st_ino == inode and path.read_bytes() == b'{"a": 1}'
    durable_write(path, b'{"a": 2}')  # same size, other bytes: replaced
    assert path.read_bytes() == b'{"a": 2}'
    link = tmp_path / "link.ipynb"
    link.symlink_to(path)
    durable_write(link, b'{"a": 2}')  # a link holding the same bytes is replaced by a file, never followed
    assert not link.is_symlink() and link.read_bytes() == b'{"a": 2}'


def test_what_is_synced_before_it_counts_and_what_is_not_synced_twice(tmp_path: Path, monkeypatch) -> None:
    """An attempt's two files in one folder: each file synced, the folder once; placed again by a round (the copy
    synced when it was accepted), nothing synced again, and a file that changed since is written and synced."""
    from autograder.service import store

    synced: list[str] = []
    real = os.fsync
    monkeypatch.setattr(store.os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real(fd)))
    folder = tmp_path / "submitted" / "s01" / "ch1"
    files = [(folder / "nb.ipynb", b'{"a": 1}'), (folder / "timestamp.txt", b"2026-01-01 00:00:00.000000 UTC")]
    store.durable_writes(files)
    assert len(synced) == 3 and synced[-1] == str(folder)  # two files (their temporary names), then the folder
    synced.clear()
    store.durable_writes(files, resync=False)
    assert synced == []
    store.durable_writes(files)  # accept's: what is in place is synced again (another command may have written it)
    assert synced == [str(folder / "nb.ipynb"), str(folder / "timestamp.txt"), str(folder)]
    synced.clear()
    store.durable_writes([(folder / "nb.ipynb", b'{"a": 2}'), files[1]], resync=False)
    assert len(synced) == 2 and synced[-1] == str(folder) and (folder / "nb.ipynb").read_bytes() == b'{"a": 2}'
