"""The course's configuration: nbgrader_config.py, read here and only here.

Every component (release, grading engine, gradebook readers, late policy) takes what it
needs from one `CourseConfig`; `traitlets()` gives nbgrader's own API the same file's full
configuration.

Besides nbgrader's own sections the file holds the course's policy block, which
`autograder release` keeps when it writes the file again and `autograder deadlines` edits:

    c.Deadlines.timezone = "Europe/Zurich"       # due dates and LMS zip times without an offset
    c.Deadlines.due = {"ch1": "2025-01-31 23:00", "ch2": "2025-02-07 23:00"}
    c.LatePolicy.kind = "per_day"                # "none": late work is marked, never penalised
    c.LatePolicy.per_day = 0.1                   # fraction of a notebook's points per started day late
    c.LatePolicy.cap = 0.5                       # the most lateness costs, as a fraction of the points
    c.LatePolicy.grace_minutes = 15              # this late still counts as on time

(nbgrader ignores sections of classes it does not have.)

The file records no path: the course is wherever it lies. Every reader resolves the course
directory from `--course` each time (`CourseConfig.root`, nbgrader's `CourseDirectory.root`)
and the gradebook is the course's own `gradebook.db`, so a copied course never writes into
the original and a moved one keeps working. A file that does record a location (courses
made before this rule, or an instructor's edit) must agree with where the course is: a
`CourseDirectory.root` elsewhere, or a SQLite `db_url` outside the course, is a ConfigError
naming both places, raised before any command writes anything. A relative SQLite path is
the course's (`sqlite:///gradebook.db`); a database server's URL is the instructor's own
choice and is used as it is (copies of such a course share it).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from autograder.errors import AutograderError
from coursenb.chapters import assignment_order

CONFIG_NAME = "nbgrader_config.py"
POLICY_MARKER = "# ---- course policy: due dates and late work (autograder release keeps this block) ----"
LATE_KINDS = ("none", "per_day")
LIMIT_SECTIONS = ("Limits", "Caps", "StepLimits")  # read here, checked by autograder.limits


class ConfigError(AutograderError):
    """No course at that directory, or a setting that cannot be used (a user-facing sentence)."""


@dataclass(frozen=True)
class LatePolicy:
    """How late work is charged: nothing, or a fraction of the points per started day, capped; a grace period."""

    kind: str = "none"
    per_day: float = 0.0
    cap: float = 1.0
    grace: dt.timedelta = dt.timedelta(0)

    def describe(self) -> str:
        """The policy in one sentence."""
        grace = f"; {_minutes(self.grace)} grace" if self.grace else ""
        if self.kind == "none":
            return f"late work is marked, not penalised{grace}"
        return (f"{self.per_day:.0%} of the points per started day late, at most {self.cap:.0%}{grace}")


@dataclass(frozen=True)
class CourseConfig:
    """What the course's components need from nbgrader_config.py."""

    root: Path
    db_url: str
    course_id: str
    ignore_pattern: str | None  # stderr lines nbgrader's IgnorePattern drops before scoring
    cell_timeout: float | None
    timezone: dt.tzinfo = dt.UTC
    due: dict[str, dt.datetime] = field(default_factory=dict)  # assignment -> due date (aware, UTC)
    late: LatePolicy = LatePolicy()
    collect_pattern: str | None = None  # nbgrader's c.FileNameCollectorPlugin.named_regexp: a layout of one's own
    limit_settings: dict[str, dict] = field(default_factory=dict)  # c.Limits, c.Caps, c.StepLimits as written


def traitlets(course_dir: Path):  # -> traitlets.config.Config
    """The whole configuration of the course directory, as nbgrader reads it, with the course's root and
    gradebook resolved from `course_dir` (ConfigError if the file records another place)."""
    from traitlets.config.loader import PyFileConfigLoader

    course_dir = Path(course_dir).resolve()
    if not (course_dir / CONFIG_NAME).is_file():
        raise ConfigError(f"no course at {course_dir} (no {CONFIG_NAME}): run `autograder release` first")
    try:
        c = PyFileConfigLoader(CONFIG_NAME, path=str(course_dir)).load_config()
    except Exception as exc:  # noqa: BLE001 - the file is Python: any error in it is the instructor's to fix
        raise ConfigError(f"{course_dir / CONFIG_NAME} cannot be read ({type(exc).__name__}: "
                          f"{str(exc).splitlines()[0][:200] if str(exc) else ''})") from None
    c.CourseDirectory.db_url = gradebook_url(course_dir, c.get("CourseDirectory", {}))
    c.CourseDirectory.root = str(course_dir)
    return c


def gradebook_url(course_dir: Path, section) -> str:
    """The course's gradebook URL from its `c.CourseDirectory` section: the course's own gradebook.db unless
    the file names another database; ConfigError for a recorded root or SQLite file outside the course."""
    config_file = course_dir / CONFIG_NAME
    fix = (f"the course was copied or moved: delete that line from {config_file} (a course needs no path: "
           "it is wherever its folder is)")
    root = section.get("root")
    if root and Path(str(root)).expanduser().resolve() != course_dir:
        raise ConfigError(f"{CONFIG_NAME} records the course at {root} (c.CourseDirectory.root) but it is at "
                          f"{course_dir}; {fix}")
    url = str(section.get("db_url") or "")
    if not url:
        return f"sqlite:///{(course_dir / 'gradebook.db').as_posix()}"
    if not url.startswith("sqlite:"):
        return url  # a database server: the instructor's choice
    file = url.partition("sqlite:///")[2].partition("?")[0]
    if not file:
        raise ConfigError(f"c.CourseDirectory.db_url = {url!r} names no file: leave it out (the course's "
                          "gradebook.db) or name a file in the course")
    path = (course_dir / file).resolve()  # a relative path is the course's; an absolute one stays as it is
    if not path.is_relative_to(course_dir):
        raise ConfigError(f"{CONFIG_NAME} records the gradebook at {path} (c.CourseDirectory.db_url), outside the "
                          f"course at {course_dir}; {fix}")
    return f"sqlite:///{path.as_posix()}"


_LOADED: dict[tuple[Path, str], CourseConfig] = {}  # (course, sha256 of its config file) -> what `load` read


def load(course_dir: Path) -> CourseConfig:
    """The course's configuration (ConfigError if there is no course there, it records another place, or a
    policy value is wrong). A file read before with the same bytes is not executed again (a long-lived process
    such as the service loads it several times a grading); one that loads other files is read every time."""
    course_dir = Path(course_dir).resolve()
    before = _config_digest(course_dir)
    if before is not None and (course_dir, before) in _LOADED:
        return _fresh(_LOADED[(course_dir, before)])
    cfg = _load(course_dir)
    if before is not None and _config_digest(course_dir) == before:
        if len(_LOADED) >= 64:
            _LOADED.clear()
        _LOADED[(course_dir, before)] = cfg
    return _fresh(cfg)


def _config_digest(course_dir: Path) -> str | None:
    """sha256 of the course's config file, or None if it cannot be read or loads other files (not cached)."""
    try:
        text = (course_dir / CONFIG_NAME).read_bytes()
    except OSError:
        return None
    return None if b"load_subconfig" in text else hashlib.sha256(text).hexdigest()


def _fresh(cfg: CourseConfig) -> CourseConfig:
    """A copy of `cfg` whose dicts are the caller's own."""
    return dataclasses.replace(cfg, due=dict(cfg.due), limit_settings={k: dict(v) for k, v in cfg.limit_settings.items()})


def _load(course_dir: Path) -> CourseConfig:
    c = traitlets(course_dir)
    cd = c.get("CourseDirectory", {})
    db_url = cd.db_url
    ip = c.get("IgnorePattern", {})
    ignore = ip.get("pattern") if ip.get("enabled") and ip.get("pattern") else None
    timeout = c.get("Execute", {}).get("timeout") or c.get("ExecutePreprocessor", {}).get("timeout")
    deadlines, late = c.get("Deadlines", {}), c.get("LatePolicy", {})
    tz = timezone(str(deadlines.get("timezone") or "UTC"))
    due_raw = deadlines.get("due") or {}
    if not isinstance(due_raw, dict):
        raise ConfigError("c.Deadlines.due must be a dict such as {'ch1': '2025-01-31 23:00'}")
    due = {str(a): parse_time(str(when), tz, f"the due date of {a}") for a, when in due_raw.items()}
    pattern = c.get("FileNameCollectorPlugin", {}).get("named_regexp") or None
    limit_settings = {section: dict(c.get(section, {})) for section in LIMIT_SECTIONS if c.get(section)}
    return CourseConfig(course_dir, str(db_url), str(cd.get("course_id") or "default_course"),
                        ignore, float(timeout) if isinstance(timeout, (int, float)) else None,
                        tz, due, late_policy(late), str(pattern) if pattern else None, limit_settings)


def late_policy(section) -> LatePolicy:
    """The LatePolicy of a `c.LatePolicy` config section, checked."""
    kind = str(section.get("kind") or "none")
    if kind not in LATE_KINDS:
        raise ConfigError(f"c.LatePolicy.kind must be one of {', '.join(LATE_KINDS)}, not {kind!r}")
    values = {}
    for name, default in (("per_day", 0.0), ("cap", 1.0), ("grace_minutes", 0.0)):
        value = section.get(name, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 \
                or (name != "grace_minutes" and value > 1):
            limits = "a number of minutes >= 0" if name == "grace_minutes" else "a fraction between 0 and 1"
            raise ConfigError(f"c.LatePolicy.{name} must be {limits}, not {value!r}")
        values[name] = float(value)
    return LatePolicy(kind, values["per_day"], values["cap"], dt.timedelta(minutes=values["grace_minutes"]))


def timezone(name: str) -> dt.tzinfo:
    """A tz database zone by name ('UTC', 'Europe/Zurich'); ConfigError for an unknown one."""
    if name.upper() == "UTC":
        return dt.UTC
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ConfigError(f"unknown time zone {name!r} (c.Deadlines.timezone): use a name such as "
                          "'UTC' or 'Europe/Zurich'") from None


def parse_time(text: str, tz: dt.tzinfo, what: str = "a time") -> dt.datetime:
    """An ISO 8601 date and time ('2025-01-31 23:00', '2025-01-31T23:00+01:00'), in `tz` when it gives no
    offset, as an aware UTC datetime; ConfigError naming `what` if it is not one, or gives a day but no time
    (which would silently mean its first minute)."""
    if re.fullmatch(r"\s*\d{4}-\d\d-\d\d\s*", text):
        day = text.strip()
        raise ConfigError(f"{what} gives a day but no time: {day!r} would mean {day} 00:00, the day's first minute; "
                          f"write the time, e.g. '{day} 23:59' (or '{day} 00:00' if that is meant)")
    try:
        when = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"{what} is not a date and time such as '2025-01-31 23:00': {text!r}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=tz)
    return when.astimezone(dt.UTC)


@dataclass(frozen=True)
class Moved:
    """A due date kept at its moment while the course's zone changes, so its clock time changes."""

    assignment: str
    before: str  # the clock time in the old zone, e.g. '2025-01-31 23:00 UTC'
    after: str  # the same moment in the new zone, e.g. '2025-02-01 00:00 CET'


def clock_times_moved(due: dict[str, dt.datetime], old: dt.tzinfo, new: dt.tzinfo) -> list[Moved]:
    """The due dates whose clock time differs between zones `old` and `new` (the moment stays)."""
    fmt = "%Y-%m-%d %H:%M"
    return [Moved(a, when.astimezone(old).strftime(fmt + " %Z"), when.astimezone(new).strftime(fmt + " %Z"))
            for a, when in sorted(due.items(), key=lambda kv: assignment_order(kv[0]))
            if when.astimezone(old).strftime(fmt) != when.astimezone(new).strftime(fmt)]


def policy_block(timezone_name: str, due: dict[str, str], late: LatePolicy) -> str:
    """The policy block of nbgrader_config.py for these settings."""
    return "\n".join([
        POLICY_MARKER,
        f"c.Deadlines.timezone = {timezone_name!r}",
        f"c.Deadlines.due = {dict(sorted(due.items(), key=lambda kv: assignment_order(kv[0])))!r}",
        f"c.LatePolicy.kind = {late.kind!r}",
        f"c.LatePolicy.per_day = {late.per_day!r}",
        f"c.LatePolicy.cap = {late.cap!r}",
        f"c.LatePolicy.grace_minutes = {late.grace.total_seconds() / 60:g}",
        "",
    ])


def read_policy_block(course_dir: Path) -> str | None:
    """The policy block of the course's nbgrader_config.py, if it has one."""
    path = Path(course_dir) / CONFIG_NAME
    text = path.read_text() if path.is_file() else ""
    at = text.find(POLICY_MARKER)
    return text[at:] if at >= 0 else None


def write_policy_block(course_dir: Path, block: str) -> None:
    """Replace (or add) the policy block at the end of the course's nbgrader_config.py."""
    path = Path(course_dir) / CONFIG_NAME
    text = path.read_text()
    at = text.find(POLICY_MARKER)
    head = (text[:at] if at >= 0 else text).rstrip("\n") + "\n\n"
    path.write_text(head + block)


def _minutes(delta: dt.timedelta) -> str:
    minutes = delta.total_seconds() / 60
    return f"{minutes / 60:g} h" if minutes >= 120 and minutes % 60 == 0 else f"{minutes:g} min"
