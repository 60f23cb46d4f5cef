"""What the instructor chooses for the service: COURSE/service.toml (every key optional).

    attempts = 5            # gradings per student and chapter in each window
    window_hours = 24
    queue = 64              # uploads waiting at most; more are answered 429 with Retry-After
    final = "rule"          # what counts: the course's rule or the instructor's pin (`autograder attempts`), or "best"
    published = ["ch1"]     # chapters whose grades the instructor has published

    [show]                  # what a result page shows: "nothing", "cells" (pass/fail and the judge's sentence),
    before_due = "cells"    #   or "points" (cells with their points and the total)
    after_due = "points"
    after_published = "points"

    [show.ch4]              # one chapter's own choice
    before_due = "nothing"
"""
from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from autograder.errors import AutograderError

FILE = "service.toml"
TIERS = ("nothing", "cells", "points")
FINALS = ("rule", "best")


class SettingsError(AutograderError, ValueError):
    """service.toml cannot be used: one sentence naming the key."""


@dataclass(frozen=True)
class Show:
    """The tier a result page shows before the due date, after it, and once the grades are published."""

    before_due: str = "cells"
    after_due: str = "points"
    after_published: str = "points"


@dataclass(frozen=True)
class Settings:
    attempts: int = 5
    window_hours: float = 24.0
    queue: int = 64
    final: str = "rule"
    published: frozenset[str] = frozenset()
    show: Show = Show()
    chapters: dict[str, Show] = field(default_factory=dict)

    def show_for(self, assignment: str) -> Show:
        return self.chapters.get(assignment, self.show)

    def describe(self) -> str:
        """The limits as the student page states them."""
        counts = "the course's rule says which attempt counts" if self.final == "rule" else "the best attempt counts"
        return f"{self.attempts} graded attempt(s) per chapter in any {self.window_hours:g} h; one grading at a time; {counts}"


def _int(data: dict, key: str, default: int, low: int, high: int) -> int:
    value = data.get(key, default)
    if type(value) is not int or not low <= value <= high:
        raise SettingsError(f"{FILE}: {key} must be a whole number from {low} to {high}, got {value!r}")
    return value


def _show(data: object, base: Show, where: str) -> Show:
    if not isinstance(data, dict):
        raise SettingsError(f"{FILE}: [{where}] must be a table")
    values = {}
    for key in ("before_due", "after_due", "after_published"):
        value = data.get(key, getattr(base, key))
        if value not in TIERS:
            raise SettingsError(f"{FILE}: [{where}] {key} must be one of {', '.join(TIERS)}, got {value!r}")
        values[key] = value
    unknown = set(data) - set(values)
    if unknown and where == "show":
        unknown -= {k for k, v in data.items() if isinstance(v, dict)}
    if unknown:
        raise SettingsError(f"{FILE}: [{where}] has unknown key(s) {', '.join(sorted(unknown))}")
    return Show(**values)


def load(course_dir: Path) -> Settings:
    """The course's settings (the defaults where there is no file); SettingsError on a bad value."""
    path = Path(course_dir) / FILE
    if not path.is_file():
        return Settings()
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{FILE} is not valid TOML ({exc})") from None
    unknown = set(data) - {"attempts", "window_hours", "queue", "final", "published", "show"}
    if unknown:
        raise SettingsError(f"{FILE}: unknown key(s) {', '.join(sorted(unknown))}")
    hours = data.get("window_hours", 24.0)
    if type(hours) not in (int, float) or not (math.isfinite(hours) and 0 < hours <= 24 * 366):
        raise SettingsError(f"{FILE}: window_hours must be a number of hours above 0, got {hours!r}")
    final = data.get("final", "rule")
    if final not in FINALS:
        raise SettingsError(f"{FILE}: final must be one of {', '.join(FINALS)}, got {final!r}")
    published = data.get("published", [])
    if not (isinstance(published, list) and all(isinstance(p, str) for p in published)):
        raise SettingsError(f"{FILE}: published must be a list of chapter names, e.g. [\"ch1\"]")
    show_data = data.get("show", {})
    show = _show(show_data, Show(), "show")
    chapters = {name: _show(value, show, f"show.{name}") for name, value in show_data.items() if isinstance(value, dict)}
    return Settings(_int(data, "attempts", 5, 1, 1000), float(hours), _int(data, "queue", 64, 1, 100_000), final,
                    frozenset(published), show, chapters)
