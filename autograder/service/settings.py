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

    [credit]                # decaying credit (off unless decay is set), as PrairieLearn's points per retry:
    free = 2                #   the first `free` attempts (default 1) earn their full points,
    decay = 0.1             #   each later one its points times (1 - decay)^(n - free), n its number,
    minimum = 0.5           #   never less than `minimum` of them

Decaying credit never changes the record: each attempt keeps the points it was graded with, and its
multiplier (`Credit.multiplier`, the one home of the formula) is derived from its number, counted over
every graded upload of the student's chapter to the service (not the window; an upload the grader could
not grade has no number). What counts (`final`) is chosen as before, "best" by credited points; the
result page, `autograder gradebook` and `autograder export` show the credited points beside the raw ones.
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
CREDIT_KEYS = ("free", "decay", "minimum")


class SettingsError(AutograderError, ValueError):
    """service.toml cannot be used: one sentence naming the key."""


@dataclass(frozen=True)
class Show:
    """The tier a result page shows before the due date, after it, and once the grades are published."""

    before_due: str = "cells"
    after_due: str = "points"
    after_published: str = "points"


@dataclass(frozen=True)
class Credit:
    """Decaying credit: attempts 1..free earn their full points, attempt n > free earns (1 - decay)^(n - free) of
    them, never less than `minimum` (decay 0: every attempt full credit)."""

    free: int = 1
    decay: float = 0.0
    minimum: float = 0.0

    @property
    def decays(self) -> bool:
        return self.decay > 0

    def multiplier(self, n: int) -> float:
        """The share of its points attempt number `n` (1 = the first) earns: the one home of the credit formula."""
        return max(self.minimum, (1.0 - self.decay) ** max(0, n - self.free))

    def describe(self) -> str:
        """The rule as the student page states it."""
        if not self.decays:
            return "every attempt earns its full points"
        floor = f", never less than {percent(self.minimum)}" if self.minimum > 0 else ""
        if not self.free:
            return f"each attempt earns {percent(self.decay)} less than the one before (the first {percent(1 - self.decay)}){floor}"
        return (f"the first {self.free} attempt(s) earn their full points, each later one {percent(self.decay)} less than "
                f"the one before{floor}")


def percent(share: float) -> str:
    """0.81 -> '81%'."""
    return f"{share * 100:.4g}%"


@dataclass(frozen=True)
class Settings:
    attempts: int = 5
    window_hours: float = 24.0
    queue: int = 64
    final: str = "rule"
    published: frozenset[str] = frozenset()
    show: Show = Show()
    chapters: dict[str, Show] = field(default_factory=dict)
    credit: Credit = Credit()

    def show_for(self, assignment: str) -> Show:
        return self.chapters.get(assignment, self.show)

    def describe(self) -> str:
        """The limits as the student page states them."""
        counts = ("the course's rule says which attempt counts" if self.final == "rule" else
                  "the attempt with the most credited points counts" if self.credit.decays else "the best attempt counts")
        credit = f"; {self.credit.describe()}" if self.credit.decays else ""
        return (f"{self.attempts} graded attempt(s) per chapter in any {self.window_hours:g} h; one grading at a time; "
                f"{counts}{credit}")


def _int(data: dict, key: str, default: int, low: int, high: int, where: str = "") -> int:
    value = data.get(key, default)
    if type(value) is not int or not low <= value <= high:
        raise SettingsError(f"{FILE}: {where}{key} must be a whole number from {low} to {high}, got {value!r}")
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


def _credit(data: object) -> Credit:
    if not isinstance(data, dict):
        raise SettingsError(f"{FILE}: [credit] must be a table")
    unknown = set(data) - set(CREDIT_KEYS)
    if unknown:
        raise SettingsError(f"{FILE}: [credit] has unknown key(s) {', '.join(sorted(unknown))}")
    free = _int(data, "free", Credit.free, 0, 1000, "[credit] ")
    decay, minimum = data.get("decay", 0.0), data.get("minimum", 0.0)
    if not (_share(decay) and decay < 1):
        raise SettingsError(f"{FILE}: [credit] decay must be a number from 0 up to (not including) 1, got {decay!r}")
    if not _share(minimum):
        raise SettingsError(f"{FILE}: [credit] minimum must be a number from 0 to 1, got {minimum!r}")
    return Credit(free, float(decay), float(minimum))


def _share(value: object) -> bool:
    """A finite number from 0 to 1 (a TOML true is not a number)."""
    return type(value) in (int, float) and math.isfinite(value) and 0 <= value <= 1


def load(course_dir: Path) -> Settings:
    """The course's settings (the defaults where there is no file); SettingsError on a bad value."""
    path = Path(course_dir) / FILE
    if not path.is_file():
        return Settings()
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{FILE} is not valid TOML ({exc})") from None
    unknown = set(data) - {"attempts", "window_hours", "queue", "final", "published", "show", "credit"}
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
                    frozenset(published), show, chapters, _credit(data.get("credit", {})))
