"""Tokens: one random secret per student (and per instructor), kept only as its sha256.

    autograder tokens issue [--student ID ...] [-o tokens.csv]   # every student without a live token by default
    autograder tokens revoke ID                                  # and their sessions end
    autograder tokens list

A token is shown once, in the CSV written for the LMS's mail merge (student, token, server URL).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from autograder import export
from autograder.collect.layouts import is_student_id  # the one rule for a student id
from autograder.errors import AutograderError
from autograder.gradebook import open_course
from autograder.service.store import Store, has_gradebook

INSTRUCTOR = "instructor"


class TokenError(AutograderError, ValueError):
    """A token command that cannot be done: one sentence."""


@dataclass(frozen=True)
class Issued:
    who: str
    role: str
    token: str


def roster(course_dir: Path) -> list[str]:
    """The course's students: the gradebook's and those with a submitted/ folder."""
    course_dir = Path(course_dir)
    found = set()
    submitted = course_dir / "submitted"
    if submitted.is_dir():
        found |= {p.name for p in submitted.iterdir() if p.is_dir()}
    if has_gradebook(course_dir):
        with open_course(course_dir) as gb:
            found |= {s.id for s in gb.students}
    return sorted(s for s in found if is_student_id(s))


def issue(course_dir: Path, students: list[str] | None = None, instructor: bool = False,
          again: bool = False) -> list[Issued]:
    """New tokens: for `students` (default: every student of the roster without a live token), or one instructor
    token. `again` replaces a student's live token (the old one is revoked)."""
    store = Store(course_dir)
    try:
        if instructor:
            return [Issued(INSTRUCTOR, "instructor", store.add_token("", "instructor"))]
        live = {r["who"] for r in store.tokens() if r["role"] == "student" and r["revoked_at"] is None}
        chosen = students or [s for s in roster(course_dir) if s not in live]
        bad = [s for s in chosen if not is_student_id(s)]
        if bad:
            raise TokenError(f"not a student id: {bad[0]!r} (letters, digits, . @ + - _)")
        out = []
        for s in chosen:
            if s in live:
                if not again:
                    continue
                store.revoke(s)
            out.append(Issued(s, "student", store.add_token(s, "student")))
        return out
    finally:
        store.close()


def revoke(course_dir: Path, who: str) -> int:
    store = Store(course_dir)
    try:
        return store.revoke("" if who == INSTRUCTOR else who, "instructor" if who == INSTRUCTOR else "student")
    finally:
        store.close()


def listing(course_dir: Path) -> list[tuple[str, str, str, str]]:
    store = Store(course_dir)
    try:
        return [(r["who"] or INSTRUCTOR, r["role"], r["issued_at"][:19], (r["revoked_at"] or "")[:19])
                for r in store.tokens()]
    finally:
        store.close()


def write_csv(issued: list[Issued], path: Path, server: str = "") -> Path:
    """student,token,server for a mail merge (autograder's one CSV writer), readable by its owner only."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))  # its mode before any secret is in it
    os.chmod(path, 0o600)  # a file that was there keeps its mode through O_CREAT
    export.write_csv(path, ["student", "token", "server"], [[i.who, i.token, server] for i in issued])
    return path
