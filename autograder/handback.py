"""Handing feedback back through the LMS, in its own bulk format.

    autograder feedback --lms canvas --assignment ch1 -o ch1_feedback.zip

The pages are `COURSE/feedback/<student>/<assignment>/<notebook>.html` (nbgrader's feedback
directory). Each LMS takes them back keyed by its own ids, which collect kept for every
notebook it placed (the file's name in the LMS's download, `collected.json`):

* Canvas: "Re-upload submissions" on the assignment takes a zip whose files are named as its
  download names them, `<sortablename>_<user id>_<attachment id>_<file>`, and attaches each file
  as a comment to that user's submission: the page goes back as
  `<sortablename>_<user id>_<attachment id>_<notebook>_feedback.html`;
* Moodle: "Upload multiple feedback files in a zip" takes the download's folders,
  `<Full Name>_<participant id>_assignsubmission_file_/`, keyed by the participant id: the page
  goes back in its student's folder.

A student whose notebook did not come from that LMS's download (a folder, another LMS) is
listed, never guessed. One assignment per zip, as both LMSs take it.
"""
from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from autograder import collect
from autograder.collect import Manifest
from autograder.errors import AutograderError

LMS = ("canvas", "moodle")
SAFE_NAME = re.compile(r"[^\w .,'()@+-]")


class HandbackError(AutograderError):
    """Feedback that cannot be handed back as asked (a user-facing sentence)."""


@dataclass
class HandedBack:
    """What `write_zip` put in the zip, and the pages it could not key for the LMS (student, notebook, why)."""

    path: Path
    entries: list[tuple[str, str, str]] = field(default_factory=list)  # (student, notebook, name in the zip)
    left_out: list[tuple[str, str, str]] = field(default_factory=list)


def download_names() -> tuple[re.Pattern, re.Pattern]:
    """(Canvas's, Moodle's) pattern of the names their downloads give submissions: collect's, which reads them."""
    layouts = getattr(collect, "layouts", None)  # collect as a package of layouts
    if layouts is not None:
        return layouts.Canvas.NAME, layouts.Moodle.NAME
    return collect.CANVAS_NAME, collect.MOODLE_NAME


def lms_name(origin: str, lms: str, notebook: str) -> str | None:
    """The name the LMS takes a feedback page back under, from the name its download gave the submission (`origin`,
    collect's '<source>:<path>'); None when the file did not come from that LMS's download."""
    canvas, moodle = download_names()
    inside = origin.partition(":")[2] or origin
    for part in re.split(r"[/:]", inside):
        if lms == "canvas" and (m := canvas.fullmatch(part)) and m["user_id"].isdigit():
            name = SAFE_NAME.sub("", m["name"] or "") or "student"
            return f"{name}_{m['user_id']}_{m['attachment_id']}_{notebook}_feedback.html"
        if lms == "moodle" and (m := moodle.fullmatch(part)):  # Moodle splits the path at "_": none in the name
            name = SAFE_NAME.sub("", m["name"]).replace("_", " ").strip() or "Student"
            return f"{name}_{m['participant']}_assignsubmission_file_/{notebook}_feedback.html"
    return None


def write_zip(course_dir: Path, lms: str, assignment: str, out: Path) -> HandedBack:
    """The feedback pages of `assignment` in the LMS's bulk-upload zip at `out` (HandbackError if there is none)."""
    if lms not in LMS:
        raise HandbackError(f"unknown LMS {lms!r} (one of {', '.join(LMS)})")
    records, _ = Manifest.read(course_dir)
    pages = sorted((Path(course_dir) / "feedback").glob(f"*/{assignment}/*.html"))
    if not pages:
        raise HandbackError(f"no feedback pages for {assignment}: run `autograder feedback --assignment {assignment}`")
    done = HandedBack(Path(out))
    files: dict[str, bytes] = {}
    for page in pages:
        student, notebook = page.parent.parent.name, page.stem
        record = records.get(f"{student}/{assignment}/{notebook}")
        name = lms_name(record.origin, lms, notebook) if record else None
        if name is None:
            why = "not collected" if record is None else f"collected from {record.origin.partition(':')[0]}, not a " \
                                                          f"{lms.capitalize()} download"
            done.left_out.append((student, notebook, why))
            continue
        files[name] = page.read_bytes()
        done.entries.append((student, notebook, name))
    if not files:
        raise HandbackError(f"none of the {len(pages)} feedback page(s) of {assignment} came from a "
                            f"{lms.capitalize()} download: the LMS could not match them to its students")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(files):
            zf.writestr(name, files[name])
    tmp.replace(out)
    return done
