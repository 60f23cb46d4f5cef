"""Reading sources within bounds: the files of a folder or a zip, one at a time.

A zip is read as a stream: a member's inflated bytes are counted as they come (its header
can lie), a member larger than `Caps.member_bytes` is refused after reading at most that, and
every inflated byte, refused or not, is counted against the zip's own total and against the
whole collect's (`Budget`). Only members that can be a submission (a notebook or a zip) are
inflated at all; each is yielded, used and dropped before the next is read, so a collect holds
at most one member in memory (and, for a student's zip, the zip it comes from).
"""
from __future__ import annotations

import datetime as dt
import io
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from autograder.errors import AutograderError
from autograder.notebook_guard import MAX_BYTES

MiB = 1 << 20
WANTED = (".ipynb", ".zip")  # what can be a submission: nothing else is inflated


class CollectError(AutograderError):
    """A source that cannot be read at all, or a collect pattern that cannot be used."""


@dataclass(frozen=True)
class Caps:
    """How much collect reads: a file, a zip, a student's zip, a whole collect; and a placed notebook's parts."""

    member_bytes: int = MAX_BYTES  # one file (the guard's bound on a notebook file)
    total_bytes: int = 2048 * MiB  # inflated from one source zip (an LMS download)
    upload_bytes: int = 128 * MiB  # inflated from one student's zip (its notebooks: nothing else is inflated)
    collect_bytes: int = 4096 * MiB  # inflated in one collect, every zip together (nested ones too)
    members: int = 100_000  # files in one zip
    notebook_bytes: int = 16 * MiB  # a placed notebook, once oversized outputs are dropped
    cell_bytes: int = 256 * 1024  # a cell's source (the book's longest is a few KiB)
    output_bytes: int = 1 * MiB  # a cell's outputs (grading runs the notebook again)


class Budget:
    """What is left of a collect's `Caps.collect_bytes`: every zip of the collect draws on it."""

    def __init__(self, caps: Caps) -> None:
        self.caps, self.left = caps, caps.collect_bytes


@dataclass(frozen=True)
class Entry:
    """One file of a source: where it came from, its bytes and its time (aware, UTC)."""

    origin: str  # "<source>:<path inside it>" for messages
    path: PurePosixPath  # path inside the source, as the source names it (a backslash is a character)
    data: bytes  # empty for a file that cannot be a submission (not read) or could not be read
    timestamp: dt.datetime | None  # None: nothing says when it was uploaded
    problem: str | None = None  # set: the file could not be read (data is empty)
    timed_by: str = "zip"  # what gave the time: "zip", "timestamp.txt", "file time", "name", "" (untimed)
    held: Path | None = None  # where its bytes wait on disk once out of memory (collect's spool)


def wanted(path: PurePosixPath) -> bool:
    """Whether a file can be a submission (a notebook, or a zip of notebooks) and so is read."""
    return path.suffix.lower() in WANTED


def read_source(src: Path, tz: dt.tzinfo = dt.UTC, caps: Caps = Caps(), file_times: bool = False,
                budget: Budget | None = None, owned=lambda rel: False) -> Iterator[Entry]:
    """Every file of a folder or a zip. A zip given as the source, or lying in a folder where no layout
    names an owner (`owned`), is the LMS's and is read; any other zip is a student's upload and comes as
    one entry (opened later, under its owner). A folder's file is timed by nbgrader's timestamp.txt beside
    it, else (with `file_times`) by its modification time, else not at all."""
    src, budget = Path(src), budget or Budget(caps)
    if src.is_dir():
        for path in sorted(p for p in src.rglob("*") if p.is_file() and not p.is_symlink()):
            rel = PurePosixPath(path.relative_to(src).as_posix())
            origin = f"{src.name}/{rel}"
            if path.suffix.lower() == ".zip" and not owned(rel):
                yield from read_zip(path, origin, tz, caps, budget)
                continue
            size = path.stat().st_size
            when, timed_by = _file_time(path, tz, file_times)
            if size > caps.member_bytes:
                yield Entry(origin, rel, b"", when, f"larger than {caps.member_bytes // MiB} MiB: not read", timed_by)
                continue
            yield Entry(origin, rel, path.read_bytes() if wanted(rel) else b"", when, None, timed_by)
    elif src.is_file() and zipfile.is_zipfile(src):
        yield from read_zip(src, src.name, tz, caps, budget)
    elif src.exists():
        raise CollectError(f"{src} is neither a folder nor a zip file")
    else:
        raise CollectError(f"{src} does not exist")


def _file_time(path: Path, tz: dt.tzinfo, file_times: bool = False) -> tuple[dt.datetime | None, str]:
    """(time, what gave it): nbgrader's timestamp.txt next to the file, else with `file_times` the file's
    modification time, else (None, "")."""
    stamp = path.parent / "timestamp.txt"
    if stamp.is_file() and stamp.stat().st_size < 200:
        try:
            return _parse_stamp(stamp.read_text().strip(), tz), "timestamp.txt"
        except (ValueError, OverflowError):
            pass
    if file_times:
        return dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC), "file time"
    return None, ""


def _parse_stamp(text: str, tz: dt.tzinfo) -> dt.datetime:
    """A timestamp.txt: nbgrader writes '%Y-%m-%d %H:%M:%S.%f %Z' (zone optional)."""
    parts = text.split()
    zone = parts[2] if len(parts) == 3 else None
    when = dt.datetime.fromisoformat(" ".join(parts[:2]))
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC if zone in ("UTC", "Z", "GMT") else tz)
    return when.astimezone(dt.UTC)


def read_zip(path: Path | bytes, origin: str, tz: dt.tzinfo = dt.UTC, caps: Caps = Caps(),
             budget: Budget | None = None, total: int | None = None) -> Iterator[Entry]:
    """The files of a zip archive (a path, or bytes in memory), one at a time, within `caps`: at most
    `total` inflated bytes from this zip (default `caps.total_bytes`) and what `budget` has left."""
    budget, total = budget or Budget(caps), caps.total_bytes if total is None else total
    try:
        zf = zipfile.ZipFile(io.BytesIO(path) if isinstance(path, (bytes, bytearray)) else path)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        if isinstance(path, (bytes, bytearray)):
            yield Entry(origin, PurePosixPath(origin), b"", _now(), f"not a readable zip file ({exc})")
            return
        raise CollectError(f"{path} is not a readable zip file ({exc})") from None
    with zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        if len(infos) > caps.members:
            yield Entry(origin, PurePosixPath(origin), b"", _now(),
                        f"holds {len(infos)} files, more than the {caps.members} collect reads: not read")
            return
        left = total
        for info in sorted(infos, key=lambda i: i.filename):
            rel = PurePosixPath(info.filename)
            where, when = f"{origin}:{info.filename}", _zip_time(info, tz)
            if not wanted(rel):
                yield Entry(where, rel, b"", when)
                continue
            if left <= 0 or budget.left <= 0:
                cap = total if left <= 0 else caps.collect_bytes
                yield Entry(where, rel, b"", when, f"not read: more than {cap // MiB} MiB inflated "
                                                   f"{'from this zip' if left <= 0 else 'in this collect'}")
                continue
            data, problem, read = _read_member(zf, info, min(caps.member_bytes, left, budget.left))
            left -= read
            budget.left -= read
            yield Entry(where, rel, data if problem is None else b"", when, problem)


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, cap: int) -> tuple[bytes, str | None, int]:
    """(at most `cap` bytes of a member, counted as they are inflated (headers can lie), why not, bytes inflated)."""
    data, size = bytearray(), 0
    try:
        with zf.open(info) as stream:
            while chunk := stream.read(min(1 * MiB, cap + 1 - size)):
                size += len(chunk)
                if size > cap:
                    return b"", f"larger than {cap // MiB or 1} MiB uncompressed: not read", size
                data += chunk
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError, ValueError) as exc:
        return b"", f"cannot be read from the zip ({type(exc).__name__}: {str(exc)[:80]})", size
    except Exception as exc:  # noqa: BLE001 - zlib and lzma raise their own kinds on damaged data
        return b"", f"cannot be read from the zip ({type(exc).__name__})", size
    return bytes(data), None, size


def _zip_time(info: zipfile.ZipInfo, tz: dt.tzinfo) -> dt.datetime:
    """A zip member's time (zips carry no zone: the course's time zone)."""
    try:
        return dt.datetime(*info.date_time, tzinfo=tz).astimezone(dt.UTC)
    except ValueError:
        return _now()


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)
