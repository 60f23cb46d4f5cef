"""Releases: each release of a notebook is stamped, kept, recognised in a submission, and graded by.

`autograder release` stamps every student notebook it makes (`attnlab.release`: a version and
the checksum of its locked and test cells, as nbgrader checksums them) and keeps that release's
source and student notebook in `COURSE/releases/<assignment>/<version>/`. A release whose
checksum is already kept keeps its version (releasing the same text again changes nothing).

A submission is recognised by its cells, not by the stamp it claims: the release whose checksum
its locked and test cells give. Collect says when that is not the current release (`identify`),
and the grader grades it by its own release's source (its own test and setup cells) where that
release is kept and grades the same cells for the same points (`grading_source`); otherwise by
today's, saying why.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from attnlab import release as stamps
from autograder.gradinglog import atomic_write
from coursenb import cells

DIR = "releases"
INFO = "release.json"


@dataclass(frozen=True)
class Kept:
    """One kept release of one notebook."""

    assignment: str
    notebook: str
    version: str
    checksum: str
    released_at: str
    folder: Path

    @property
    def source(self) -> Path:
        return self.folder / "source" / f"{self.notebook}.ipynb"

    @property
    def student(self) -> Path:
        return self.folder / "release" / f"{self.notebook}.ipynb"


@dataclass(frozen=True)
class Identified:
    """Which release a submitted notebook is: `version` None when its cells match no kept release."""

    version: str | None
    current: str | None
    claimed: str | None  # the version its stamp claims

    @property
    def is_current(self) -> bool:
        return self.version is not None and self.version == self.current

    def note(self) -> str | None:
        """What collect says about it (None for a notebook of the current release, or a course keeping none)."""
        if self.current is None or self.is_current:
            return None
        if self.version is not None:
            return (f"from release {self.version}, not the current {self.current}: graded by its own release's "
                    "test and setup cells")
        if self.claimed is not None:
            return (f"says it is release {self.claimed}, but its locked or test cells match no kept release (edited?): "
                    f"graded by the current release {self.current}, its locked and test cells restored")
        return (f"matches no kept release (from a release before releases were kept, or its locked or test cells "
                f"were edited): graded by the current release {self.current}, its locked and test cells restored")


def kept(course_dir: Path, assignment: str, notebook: str) -> list[Kept]:
    """The kept releases of one notebook, oldest first."""
    out = []
    for info in sorted((Path(course_dir) / DIR / assignment).glob(f"*/{INFO}")):
        try:
            data = json.loads(info.read_text())
        except (OSError, ValueError):
            continue
        if data.get("notebook") == notebook:
            out.append(Kept(assignment, notebook, str(data["version"]), str(data["checksum"]),
                            str(data.get("released_at", "")), info.parent))
    return sorted(out, key=lambda k: (k.released_at, k.version))


def keep(course_dir: Path, assignment: str, source: Path, student: Path) -> Kept:
    """Stamp the student notebook `student` (written back) and keep it with its `source` under releases/; returns the
    release (an existing one, when its checksum is already kept)."""
    import nbformat

    nb = nbformat.read(str(student), as_version=4)
    checksum = stamps.checksum(nb)
    notebook = student.stem
    same = [k for k in kept(course_dir, assignment, notebook) if k.checksum == checksum]
    now = dt.datetime.now(dt.UTC)
    version = same[0].version if same else f"{now:%Y-%m-%d}-{checksum[:8]}"
    nb.metadata[stamps.KEY] = {"version": version, "checksum": checksum}
    nbformat.write(nb, str(student))
    folder = Path(course_dir) / DIR / assignment / version
    if not same:
        for sub, path in (("source", source), ("release", student)):
            (folder / sub).mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, folder / sub / path.name)
        (folder / INFO).write_text(json.dumps({"version": version, "checksum": checksum, "notebook": notebook,
                                               "released_at": now.strftime("%Y-%m-%dT%H:%M:%SZ")}, indent=1) + "\n")
    return Kept(assignment, notebook, version, checksum, same[0].released_at if same else
                now.strftime("%Y-%m-%dT%H:%M:%SZ"), folder)


def current(course_dir: Path, assignment: str, notebook: str) -> str | None:
    """The version of the course's current release of a notebook (its release/ notebook's stamp), or None."""
    path = Path(course_dir) / "release" / assignment / f"{notebook}.ipynb"
    try:
        found = stamps.stamp(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return None
    return found["version"] if found else None


def identify(course_dir: Path, assignment: str, notebook: str, nb: dict) -> Identified:
    """Which kept release the submitted notebook `nb` (parsed JSON) is, by the checksum of its locked and test cells."""
    checksum = stamps.checksum(nb)
    version = next((k.version for k in kept(course_dir, assignment, notebook) if k.checksum == checksum), None)
    claimed = stamps.stamp(nb)
    return Identified(version, current(course_dir, assignment, notebook), claimed["version"] if claimed else None)


def grading_source(course_dir: Path, assignment: str, notebook: str, nb: dict) -> tuple[Path | None, str | None]:
    """(the kept source to grade the submitted `nb` by, what the grading log says) when it is of an older kept release
    that grades the same cells for the same points; (None, why not) for an older release graded by today's; (None,
    None) for the current release or one that matches none."""
    found = identify(course_dir, assignment, notebook, nb)
    if found.version is None or found.is_current or found.current is None:
        return None, None
    import nbformat

    release = next(k for k in kept(course_dir, assignment, notebook) if k.version == found.version)
    today = Path(course_dir) / "source" / assignment / f"{notebook}.ipynb"

    def graded(path: Path) -> tuple[dict[str, float], set[str]]:
        """(points by graded cell, the hidden checks its tests call)."""
        nb_cells = nbformat.read(str(path), as_version=4).cells
        return ({cells.grade_id(c): cells.points(c) for c in nb_cells if cells.grade_id(c) and cells.is_graded(c)},
                {n for c in nb_cells if cells.is_test(c) for n in cells.hidden_check_names(c.source)})

    if not release.source.is_file():
        return None, f"from release {found.version}, whose source is not kept: graded by the current {found.current}"
    (then, then_checks), (now, now_checks) = graded(release.source), graded(today)
    if then != now:
        return None, (f"from release {found.version}, which grades other cells or points than the current "
                      f"{found.current}: graded by the current release")
    if not then_checks <= now_checks:  # the grader judges the checks today's release calls
        return None, (f"from release {found.version}, whose tests call hidden checks the current {found.current} no "
                      f"longer has ({', '.join(sorted(then_checks - now_checks))}): graded by the current release")
    return release.source, f"graded by its own release {found.version} (the current is {found.current})"


GRADED_BY = "releases.json"  # in COURSE/record/: the submissions of another release, as collect recognised them


@dataclass(frozen=True)
class GradedBy:
    """A submission of another release: its file's checksum when recognised, the source to grade it by, and why."""

    sha256: str
    source: Path | None
    note: str


def record_collected(course_dir: Path, placed: list[tuple[str, str, str, str]]) -> list[tuple[str, str]]:
    """Recognise the release of each placed (student, assignment, notebook, origin) and keep, for the grader, those of
    another release (COURSE/record/releases.json); returns collect's notes (origin, what was found)."""
    course_dir = Path(course_dir)
    path = course_dir / "record" / GRADED_BY
    try:
        record = json.loads(path.read_text()) if path.is_file() else {}
    except ValueError:
        record = {}
    notes = []
    for student, assignment, notebook, origin in placed:
        key = f"{student}/{assignment}/{notebook}"
        record.pop(key, None)
        file = course_dir / "submitted" / student / assignment / f"{notebook}.ipynb"
        try:
            data = file.read_bytes()
            nb = json.loads(data)
        except (OSError, ValueError, RecursionError):
            continue  # an unreadable notebook: the grader scores it 0 and says why
        if not isinstance(nb, dict):
            continue
        found = identify(course_dir, assignment, notebook, nb)
        note = found.note()
        if note is None:
            continue
        source, why = grading_source(course_dir, assignment, notebook, nb)
        notes.append((origin, note if source is not None or why is None else why))
        record[key] = {"sha256": hashlib.sha256(data).hexdigest(), "version": found.version,
                       "source": source.relative_to(course_dir).as_posix() if source else None,
                       "note": why or note}
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps(record, indent=1, sort_keys=True) + "\n").encode())
    return notes


def graded_by(course_dir: Path) -> dict[str, GradedBy]:
    """'student/assignment/notebook' -> how a submission of another release is graded (collect's record)."""
    path = Path(course_dir) / "record" / GRADED_BY
    try:
        record = json.loads(path.read_text()) if path.is_file() else {}
    except (OSError, ValueError):
        return {}
    out = {}
    for key, e in record.items() if isinstance(record, dict) else ():
        try:
            source = Path(course_dir) / e["source"] if e.get("source") else None
            if source is not None and not source.resolve().is_relative_to(Path(course_dir).resolve() / DIR):
                source = None  # only a kept release's source
            out[key] = GradedBy(str(e["sha256"]), source, str(e.get("note") or ""))
        except (KeyError, TypeError, AttributeError):
            continue
    return out
