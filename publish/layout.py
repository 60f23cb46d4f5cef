"""Where the book's sources and builds live, and what an edition is."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from coursenb.chapters import ROOT

BUILD = ROOT / "_build"
CACHE = BUILD / ".book_cache"
STAGE = BUILD / "stage"
MANIFEST = CACHE / "published.json"  # source document -> executed notebook, of the last build
CONFIG = ROOT / "_config.yml"
TOC = ROOT / "_toc.yml"
EDITIONS = ("student", "solutions")
# Pages only one edition publishes. The grader's threat model is instructor documentation
# (and quotes hidden-check calls, which the student edition must not contain).
EDITION_ONLY = {"docs/security": "solutions"}
ANNOUNCEMENT = {
    "student": "Student edition: problems, stubs, visible tests and reference results. "
               "Solutions are not included.",
    "solutions": "Solutions edition, for instructors: solution code, hidden tests and "
                 "worked solutions. Do not publish to students.",
}


class BookError(RuntimeError):
    """A chapter failed to execute, or an edition failed to build or leaks."""


@dataclass(frozen=True)
class Edition:
    """One edition: its staged source and its output folder (`html/` inside)."""

    name: str

    @property
    def stage(self) -> Path:
        return STAGE / self.name

    @property
    def out(self) -> Path:
        return BUILD / self.name

    @property
    def html(self) -> Path:
        return self.out / "html"
