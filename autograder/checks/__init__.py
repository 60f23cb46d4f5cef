"""Hidden-test checks by name: trial inputs, the reference from `solutions/`, tolerances.

Each chapter module defines `CHECKS: dict[str, Check]`; symbolic answers come from
`solutions.answers`. The registry is read only in the trusted grader process. The protocol every
check follows, its kinds (and how to pose an equation answer) are in `autograder.checks.base`.
A new chapter's checks are one module here, `chN.py`: being here registers it.

`CHECKS` builds a chapter's checks when one of its names is first read: a judge grading one
chapter imports that chapter's reference and checks only (each chapter's reference runs the
chapter's solution cells, and Chapters 4 and 5 build their data sets' grammars).
"""
from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator, MutableMapping

from autograder.checks.base import AnswerCheck, ChapterId, Check, EquationCheck, EquationQuestion, FunctionCheck
from solutions import answers

# The chapters with checks: a module here (chN.py) or a symbolic question of solutions.answers.
CHAPTERS: tuple[ChapterId, ...] = tuple(sorted(
    {ChapterId(info.name) for info in pkgutil.iter_modules(__path__) if info.name.startswith("ch")}
    | {ChapterId.of(name) for name in answers.QUESTIONS}))


def _chapter(name: str) -> ChapterId | None:
    """The chapter of check `name`, None for a name that has none."""
    try:
        return ChapterId.of(name)
    except ValueError:
        return None


def chapter_checks(chapter: str) -> dict[str, Check]:
    """Chapter `chapter`'s checks by name: its symbolic questions, then its module's checks."""
    checks: dict[str, Check] = {}
    for name in answers.QUESTIONS:
        if ChapterId.of(name) == chapter:
            ref = answers.reference(name)
            checks[name] = AnswerCheck(reference=ref.answer, variables=ref.variables, relations=ref.relations)
    if any(info.name == chapter for info in pkgutil.iter_modules(__path__)):
        checks.update(importlib.import_module(f"{__name__}.{chapter}").CHECKS)
    return checks


class Registry(MutableMapping[str, Check]):
    """Every check by name ("ch1.self_attention"), a chapter's built on first use of one of its names."""

    def __init__(self) -> None:
        self._checks: dict[str, Check] = {}
        self.loaded: set[str] = set()  # the chapters built so far

    def _load(self, chapter: str | None) -> None:
        if chapter in CHAPTERS and chapter not in self.loaded:
            self._checks = chapter_checks(chapter) | self._checks  # a name set by hand stays as set
            self.loaded.add(chapter)

    def __getitem__(self, name: str) -> Check:
        self._load(_chapter(name))
        return self._checks[name]

    def __setitem__(self, name: str, check: Check) -> None:
        self._load(_chapter(name))
        self._checks[name] = check

    def __delitem__(self, name: str) -> None:
        self._load(_chapter(name))
        del self._checks[name]

    def __iter__(self) -> Iterator[str]:
        """Every name, in one order whatever was read first: the symbolic questions, then the chapters' checks."""
        for chapter in CHAPTERS:
            self._load(chapter)
        rank = {chapter: i for i, chapter in enumerate(CHAPTERS)}
        first = [name for name in answers.QUESTIONS if name in self._checks]
        rest = sorted((n for n in self._checks if n not in answers.QUESTIONS),
                      key=lambda n: rank.get(_chapter(n), len(rank)))
        return iter(first + rest)

    def __len__(self) -> int:
        return sum(1 for _ in self)


CHECKS: Registry = Registry()

__all__ = ["CHAPTERS", "CHECKS", "AnswerCheck", "ChapterId", "Check", "EquationCheck", "EquationQuestion",
           "FunctionCheck", "Registry"]
