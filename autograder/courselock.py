"""One writing command at a time on a course: an advisory lock (`fcntl.flock`) on COURSE/.autograder.lock.

Every command that writes the course (release, deadlines that change something, collect, grade,
feedback, manual, report, similarity) holds it while it runs; a second one is refused at once with
who holds it (pid, command, since when), read from the file. The kernel drops the lock when the
holding process ends however it ends (Ctrl-C, a kill, `os._exit`), so a stale file never blocks: the
next command takes the lock and writes its own line. Reading commands (gradebook, export, limits)
take no lock. Within one process the lock is reentrant (a step that calls another).
"""
from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from autograder.errors import AutograderError

NAME = ".autograder.lock"
_held: dict[str, tuple[int, int]] = {}  # resolved lock path -> (fd, depth), this process's


class CourseBusy(AutograderError):
    """Another command holds the course's lock."""

    remedy = "wait for it to finish, or stop it (Ctrl-C) and run this command again"


def holder(course_dir: Path) -> dict:
    """What the lock file says about its holder: {'pid', 'command', 'since'} (empty if it says nothing)."""
    try:
        text = (Path(course_dir) / NAME).read_text()[:4096]
        info = json.loads(text)
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


@contextmanager
def hold(course_dir: Path, command: str) -> Iterator[None]:
    """Hold the course's lock while the block runs; CourseBusy at once if another process holds it."""
    path = str((Path(course_dir) / NAME).resolve())
    if path in _held:
        fd, depth = _held[path]
        _held[path] = (fd, depth + 1)
        try:
            yield
        finally:
            _held[path] = (fd, _held[path][1] - 1)
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        who = holder(course_dir)
        since = str(who.get("since", "?"))[:40]
        raise CourseBusy(f"the course {course_dir} is busy: `autograder {str(who.get('command', '?'))[:40]}` "
                         f"(pid {str(who.get('pid', '?'))[:12]}) has held it since {since}") from None
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "command": command,
                                  "since": dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")}).encode(), 0)
        _held[path] = (fd, 1)
        yield
    finally:
        _held.pop(path, None)
        try:
            os.ftruncate(fd, 0)
        finally:
            os.close(fd)  # closing the descriptor releases the lock
