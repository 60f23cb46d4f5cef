"""The course's configuration: nbgrader_config.py, read here and only here.

Every component (release, grading engine, gradebook readers) takes what it needs from one
`CourseConfig`; `traitlets()` gives nbgrader's own API the same file's full configuration.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CONFIG_NAME = "nbgrader_config.py"


class ConfigError(RuntimeError):
    """No course at that directory (a user-facing sentence)."""


@dataclass(frozen=True)
class CourseConfig:
    """What the course's components need from nbgrader_config.py."""

    root: Path
    db_url: str
    course_id: str
    ignore_pattern: str | None  # stderr lines nbgrader's IgnorePattern drops before scoring
    cell_timeout: float | None


def traitlets(course_dir: Path):  # -> traitlets.config.Config
    """The whole configuration of the course directory, as nbgrader reads it."""
    from traitlets.config.loader import PyFileConfigLoader

    course_dir = Path(course_dir).resolve()
    if not (course_dir / CONFIG_NAME).is_file():
        raise ConfigError(f"no course at {course_dir} (no {CONFIG_NAME}): run `autograder release` first")
    return PyFileConfigLoader(CONFIG_NAME, path=str(course_dir)).load_config()


def load(course_dir: Path) -> CourseConfig:
    """The course's configuration (ConfigError if there is no course there)."""
    course_dir = Path(course_dir).resolve()
    c = traitlets(course_dir)
    cd = c.get("CourseDirectory", {})
    db_url = cd.get("db_url") or f"sqlite:///{course_dir / 'gradebook.db'}"
    ip = c.get("IgnorePattern", {})
    ignore = ip.get("pattern") if ip.get("enabled") and ip.get("pattern") else None
    timeout = c.get("Execute", {}).get("timeout") or c.get("ExecutePreprocessor", {}).get("timeout")
    return CourseConfig(course_dir, str(db_url), str(cd.get("course_id") or "default_course"),
                        ignore, float(timeout) if isinstance(timeout, (int, float)) else None)
