"""course/collected.json: what collect decided about every upload it saw.

For every placed notebook (`Record`): its origin, upload time, the LMS's late mark, the
uploader's identity and how it was placed. For every other upload (`Unplaced`): why it was
not placed (not a notebook, no owner, an earlier duplicate, ...), whose it was and when it came.
The LMS identities that are one person in every download (`Layout.person_id`) are kept with
the student id collect gave them, so that a user stays one student across collects.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from autograder.collect import layouts
from autograder.collect.layouts import Identity
from autograder.gradinglog import atomic_write

MANIFEST = "collected.json"


def utc_text(when: dt.datetime | None) -> str:
    """ISO 8601 in UTC to the second; "" when nothing said when."""
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if when is not None else ""


@dataclass(frozen=True)
class Record:
    """What collect knows about one placed notebook."""

    student: str
    assignment: str
    notebook: str
    origin: str
    file: str
    uploaded_at: str  # ISO 8601, UTC; "" when nothing said when
    lms_late: bool
    identity: str | None  # str(Identity): "canvas:1010"
    sha256: str
    how: str  # "name" or "content"
    note: str = ""


@dataclass(frozen=True)
class Unplaced:
    """An upload collect did not place, and why."""

    origin: str
    reason: str
    student: str | None = None
    assignment: str | None = None
    collected_at: str = ""
    uploaded_at: str = ""
    identity: str | None = None


def _from_json(cls, value: object):
    """A Record or Unplaced from collected.json (an older file's `lms_user_id` is a Canvas identity); None if
    the value is not one."""
    if not isinstance(value, dict):
        return None
    value = dict(value)
    if not value.get("identity"):
        value["identity"] = str(Identity("canvas", str(value["lms_user_id"]))) if value.get("lms_user_id") else None
    names = {f.name for f in fields(cls)}
    try:
        return cls(**{k: v for k, v in value.items() if k in names})
    except TypeError:
        return None


class Manifest:
    """course/collected.json: the record of every placed notebook and every upload not placed."""

    @staticmethod
    def path(course_dir: Path) -> Path:
        return Path(course_dir) / MANIFEST

    @classmethod
    def _data(cls, course_dir: Path) -> dict:
        try:
            data = json.loads(cls.path(course_dir).read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    @classmethod
    def read(cls, course_dir: Path) -> tuple[dict[str, Record], list[Unplaced]]:
        """(records by 'student/assignment/notebook', uploads not placed); empty if there is no manifest."""
        data = cls._data(course_dir)
        records = {k: r for k, v in (data.get("submissions") or {}).items() if (r := _from_json(Record, v))}
        unplaced = [u for v in (data.get("unplaced") or {}).values() if (u := _from_json(Unplaced, v))]
        return records, unplaced

    @classmethod
    def identities(cls, course_dir: Path) -> dict[Identity, str]:
        """{identity: student id} of every user collect has seen in this course whose identity is a person's."""
        data = cls._data(course_dir)
        records, _ = cls.read(course_dir)
        person = {layout.kind for layout in layouts.LAYOUTS if layout.person_id}
        out = {i: r.student for r in records.values() if r.identity and (i := Identity.parse(r.identity)).kind in person}
        stored = data.get("identities") or {}
        out.update({Identity.parse(str(u)): str(s) for u, s in stored.items()} if isinstance(stored, dict) else {})
        return out

    @classmethod
    def update(cls, course_dir: Path, placed: list, unplaced: list[tuple[str, object, dt.datetime | None]],
               identities: dict[Identity, str]) -> None:
        """Add this collect's decisions: placed notebooks (collect's Placed, with their bytes' sha256) replace their
        record; uploads not placed ((origin, Problem, time)) are kept by origin (collecting the same source again
        replaces them); `identities` join the kept ones."""
        records, old = cls.read(course_dir)
        now = utc_text(dt.datetime.now(dt.UTC))
        by_origin = {u.origin: u for u in old}
        for p, sha256 in placed:
            key = f"{p.student}/{p.assignment}/{p.notebook}"
            records[key] = Record(p.student, p.assignment, p.notebook, p.entry.origin, p.entry.path.name,
                                  utc_text(p.entry.timestamp), p.late, str(p.identity) if p.identity else None,
                                  sha256, p.how, p.note)
            by_origin.pop(p.entry.origin, None)
        for origin, problem, when in unplaced:
            by_origin[origin] = Unplaced(origin, problem.reason, problem.student, problem.assignment, now,
                                         utc_text(when), str(problem.identity) if problem.identity else None)
        known = cls.identities(course_dir)
        known.update(identities)
        data = {"submissions": {k: asdict(v) for k, v in sorted(records.items())},
                "unplaced": {k: asdict(v) for k, v in sorted(by_origin.items())},
                "identities": dict(sorted((str(i), s) for i, s in known.items()))}
        atomic_write(cls.path(course_dir), json.dumps(data, indent=1, ensure_ascii=True).encode())


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
