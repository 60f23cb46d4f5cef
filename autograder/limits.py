"""The limits of a course, in one place: each with its default, settable in nbgrader_config.py and on the
command line, and shown by `autograder limits`.

    Limits      what one student's notebook may use in its sandbox (`autograder.engine.limits.Limits`)
    Caps        how much of an upload collect reads and places (`autograder.collect.Caps`)
    StepLimits  what one step that parses student data may use (collect, feedback, similarity, manual)

In nbgrader_config.py a limit is set as nbgrader's own settings are, by section and name:

    c.Limits.cell_seconds = 30
    c.Caps.member_bytes = 128 * 1024 * 1024
    c.StepLimits.memory_mb = 4096

and on the command line as `--limit NAME=VALUE` (`--limit Limits.memory_mb=2048` where two sections
share a name). Each value wins over the one before it: the default, nbgrader's own cell timeout
(`c.Execute.timeout`, for `Limits.cell_seconds`), nbgrader_config.py, the command line. A name that is
no limit, or a value that is not a finite number of the limit's kind, is a ConfigError naming it.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

from autograder import config
from autograder.config import ConfigError
from autograder.engine.limits import Limits

if TYPE_CHECKING:
    from autograder.collect import Caps


@dataclass(frozen=True)
class StepLimits:
    """What one step that parses student data may use: memory it adds (MiB) and wall time (s)."""

    memory_mb: int = 2048
    seconds: float = 3600.0


ALL = config.LIMIT_SECTIONS  # "Limits", "Caps", "StepLimits"
DEFAULT = "default"
FROM_EXECUTE = "c.Execute.timeout"
FROM_CONFIG = config.CONFIG_NAME
FROM_COMMAND = "command line"


def sections(kinds: Iterable[str] = ALL) -> dict[str, type]:
    """Section name -> the dataclass of its limits, for `kinds` (collect is imported only for its Caps: a grading
    run reads its limits before its sandboxes start, autograder.startup)."""
    classes = {"Limits": Limits, "StepLimits": StepLimits}
    if "Caps" in kinds:
        from autograder.collect import Caps

        classes["Caps"] = Caps
    return {kind: classes[kind] for kind in ALL if kind in kinds}


@dataclass(frozen=True)
class CourseLimits:
    """The limits of one course (the sections loaded), and where each value that is not the default was set."""

    engine: Limits = Limits()
    caps: Caps | None = None  # None: not loaded (`load(kinds=...)` without "Caps")
    steps: StepLimits = StepLimits()
    set_by: dict[str, str] = field(default_factory=dict)  # "Section.name" -> FROM_EXECUTE, FROM_CONFIG, FROM_COMMAND

    def section(self, name: str):
        """The dataclass holding section `name`'s values."""
        return {"Limits": self.engine, "Caps": self.caps, "StepLimits": self.steps}[name]

    def rows(self) -> list[tuple[str, str, object, object, str]]:
        """(section, name, value, default, set by) for every limit loaded."""
        return [(section, f.name, getattr(self.section(section), f.name), f.default,
                 self.set_by.get(f"{section}.{f.name}", DEFAULT))
                for section in ALL if self.section(section) is not None for f in fields(self.section(section))]


def value(section: str, name: str, raw: object, where: str, classes: dict[str, type] | None = None) -> object:
    """`raw` (from nbgrader_config.py, or text from the command line) as limit `section.name` holds it."""
    cls = (classes or sections([section]))[section]
    default = {f.name: f.default for f in fields(cls)}[name]
    what = f"{section}.{name} ({where})"
    text = isinstance(raw, str)
    try:
        if isinstance(default, bool):
            if text and raw.strip().lower() in ("true", "yes", "1", "false", "no", "0"):
                return raw.strip().lower() in ("true", "yes", "1")
            if isinstance(raw, bool):
                return raw
            raise ValueError
        if isinstance(default, (int, float)):
            number = (int(raw.replace("_", "")) if isinstance(default, int) else float(raw)) if text else raw
            if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number):
                raise ValueError
            if isinstance(default, int) and number != int(number):
                raise ValueError
            if number < 0 or (number == 0 and default > 0 and not name.endswith(("restarts", "threads"))):
                raise ConfigError(f"{what} must be more than 0, got {raw!r}")
            return type(default)(number)
        if isinstance(default, tuple):
            items = [p.strip() for p in raw.split(",") if p.strip()] if text else list(raw)
            if not all(isinstance(p, str) for p in items):
                raise ValueError
            return tuple(items)
        if default is None or isinstance(default, str):
            if raw is None and default is None:
                return None
            if not isinstance(raw, str):
                raise ValueError
            return raw
    except (ValueError, TypeError, AttributeError):
        pass
    kind = ("true or false" if isinstance(default, bool) else "a whole number" if isinstance(default, int)
            else "a number" if isinstance(default, float) else "a list of paths" if isinstance(default, tuple)
            else "text")
    raise ConfigError(f"{what} must be {kind}, got {raw!r}")


def _name(text: str, classes: dict[str, type]) -> tuple[str, str]:
    """'cell_seconds' or 'Limits.cell_seconds' -> ('Limits', 'cell_seconds'); ConfigError if it is no limit (of the
    sections in `classes`) or two sections share it."""
    section, dot, name = text.strip().rpartition(".")
    names = {s: {f.name for f in fields(cls)} for s, cls in classes.items()}
    which = "" if len(classes) == len(ALL) else f" that {' or '.join(classes)} has"
    if dot:
        if section not in classes or name not in names[section]:
            raise ConfigError(f"no limit {text!r}{which}: `autograder limits` lists them")
        return section, name
    owners = [s for s in classes if name in names[s]]
    if not owners:
        raise ConfigError(f"no limit {text!r}{which}: `autograder limits` lists them")
    if len(owners) > 1:
        raise ConfigError(f"{text!r} is a limit of {' and of '.join(owners)}: write {owners[0]}.{name}")
    return owners[0], name


def parse_overrides(items: Iterable[str], classes: dict[str, type] | None = None) -> dict[tuple[str, str], object]:
    """`NAME=VALUE` items of the command line -> {(section, name): value}."""
    classes = classes or sections()
    out = {}
    for item in items:
        name, sep, raw = item.partition("=")
        if not sep:
            raise ConfigError(f"--limit expects NAME=VALUE (e.g. cell_seconds=30), got {item!r}")
        section, limit = _name(name, classes)
        out[section, limit] = value(section, limit, raw.strip(), FROM_COMMAND, classes)
    return out


def load(course_dir: Path | None, overrides: Iterable[str] = (), kinds: Iterable[str] = ALL) -> CourseLimits:
    """The course's limits of `kinds` (sections): the defaults, then nbgrader's cell timeout, then
    nbgrader_config.py's sections, then the command line's `NAME=VALUE` items (a course directory of None: no
    file)."""
    classes = sections(kinds)
    chosen: dict[tuple[str, str], tuple[object, str]] = {}
    if course_dir is not None and (Path(course_dir) / config.CONFIG_NAME).is_file():
        cfg = config.load(course_dir)
        if cfg.cell_timeout and "Limits" in classes:
            chosen["Limits", "cell_seconds"] = (value("Limits", "cell_seconds", cfg.cell_timeout, FROM_EXECUTE),
                                                FROM_EXECUTE)
        for section, settings in cfg.limit_settings.items():
            if section not in classes:
                continue
            for name, raw in settings.items():
                if name not in {f.name for f in fields(classes[section])}:
                    raise ConfigError(f"c.{section}.{name} in {config.CONFIG_NAME} is no limit: `autograder limits` "
                                      "lists them")
                chosen[section, name] = (value(section, name, raw, FROM_CONFIG, classes), FROM_CONFIG)
    for key, v in parse_overrides(overrides, classes).items():
        chosen[key] = (v, FROM_COMMAND)
    made = {s: replace(cls(), **{n: v for (sec, n), (v, _) in chosen.items() if sec == s})
            for s, cls in classes.items()}
    return CourseLimits(made.get("Limits", Limits()), made.get("Caps"), made.get("StepLimits", StepLimits()),
                        {f"{s}.{n}": where for (s, n), (_, where) in chosen.items()})
