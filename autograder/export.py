"""Grades out of the gradebook: a plain CSV, per-cell CSV, or a CSV Canvas's gradebook imports.

Scores are final (the raw score less the late penalty, times the attempt's credit where the
service's credit decays: service.toml's [credit]); every file shows lateness, the penalty, the
credit and the raw score beside the final one.

Canvas's importer (canvas-lms lib/gradebook_importer.rb) needs a header whose first
column contains "Student" and second "ID", with the student-information columns ending
in "Section": `Student, ID, Section` or `Student, ID, SIS User ID, SIS Login ID, Section`
(an `SIS User ID` column without `SIS Login ID` is rejected as an invalid header). It
finds a student by the Canvas user id in `ID`, then by SIS ids, then by name; an
assignment column is `Title (canvas id)` or a title it matches or creates. A row whose
first cell contains "Points Possible" gives the assignments' points; a blank score
leaves Canvas's grade unchanged. A column whose "Points Possible" cell says "read only"
is dropped by the importer (`readonly_assignment?`, as for the totals Canvas's own export
marks so): the raw scores, penalties and lateness go in such columns, for the reader.

An assignment column matches an existing Canvas assignment only by its id: ids come from
`--canvas-id chN=ID` or from a gradebook CSV the instructor exported from Canvas (Grades >
Export), whose columns are `Title (id)`: a column is an assignment's when its title is the
assignment's name, starts with it (`ch1 Parallel time`), or holds its notebook's name. An
assignment left without an id is a warning (Canvas would match its title or create a new
assignment). Any file can be written to standard output (`-o -`).

Every CSV autograder writes goes through `write_csv`: every field quoted, and every place in a
field where a spreadsheet could start a cell that it takes for a formula neutralised (`neutral`):
the field's start, and each point after a comma, semicolon, tab or line break (LibreOffice and
Excel split on whichever separator the reader picked, `;` in many locales, and a quoted field is
split too when the reader's separator is not ours), then any blanks and quotes, where `=`, `+`,
`-` or `@` follows, gets a `'` before it (OWASP's advice for CSV injection, for each piece the
cell can be cut into). `unquote` undoes it exactly when a CSV comes back.
"""
from __future__ import annotations

import csv
import datetime as dt
import io
import re
import sys
from pathlib import Path

from autograder.errors import AutograderError
from autograder.grades import Class
from autograder.tables import printable

CANVAS_STUDENT_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
# Where a spreadsheet can start a cell (a field's start, or after a separator it may split on), then blanks and
# quotes it may drop, then the apostrophes a neutralised piece already has, then a character that starts a formula.
# Linear: the blanks exclude the separators (tab, CR, LF), so the text after one separator is scanned from it alone.
_BLANKS = r"(?:[^\S\t\r\n]|\")*"
_PIECE = re.compile(rf"(^|[,;\t\r\n])({_BLANKS})('*[=+\-@])")
_NEUTRALISED = re.compile(rf"(^|[,;\t\r\n])({_BLANKS})'('*[=+\-@])")
READ_ONLY = "(read only)"


def _num(x: float) -> str:
    return f"{round(x, 2):g}"


def neutral(value: object) -> str:
    """A CSV cell no spreadsheet runs as a formula, however it splits it: a `'` before every formula character that
    starts a piece (after blanks and quotes)."""
    text = "" if value is None else str(value)
    return _PIECE.sub(r"\1\2'\3", text)


def unquote(text: str) -> str:
    """The inverse of `neutral`, for a cell read back."""
    return _NEUTRALISED.sub(r"\1\2\3", text)


def write_totals(cls: Class, path: Path) -> int:
    """One row per student and notebook: final score, raw score, late penalty, lateness, status, credit (the share of
    its points the graded attempt earns: 1 but under the service's decaying credit)."""
    rows = []
    for t in cls.totals():
        info = cls.submitted.get((t.student, t.assignment))
        missing = t.status == "missing"
        late = info.lateness if info and not missing else None
        rows.append([t.student, t.assignment, t.notebook,
                     "" if missing else _num(t.score), _num(t.max_score), t.status,
                     "" if missing else _num(t.raw_score), "" if missing else _num(t.penalty),
                     _stamp(info.due if info else cls_due(cls, t.assignment)),
                     _stamp(info.timestamp) if info and not missing else "",
                     "" if late is None else ("yes" if late.late else "no"),
                     "" if late is None or not late.late or late.seconds is None or late.seconds <= 0
                     else f"{late.seconds / 86400:.2f}",
                     "" if missing else f"{t.credit:.4g}"])
    return write_csv(path, ["student_id", "assignment", "notebook", "score", "max_score", "status", "raw_score",
                         "late_penalty", "due", "submitted_at", "late", "days_late", "credit"], rows)


def cls_due(cls: Class, assignment: str):
    """The course's due date of `assignment` as the gradebook has it (from any submission), else None."""
    return next((info.due - (info.extension or dt.timedelta(0)) for (_, a), info in cls.submitted.items()
                 if a == assignment and info.due is not None), None)


def write_cells(cls: Class, path: Path) -> int:
    """One row per student, notebook and graded cell (the instructor's comment on a manually graded one)."""
    rows = [[c.student, c.assignment, c.notebook, c.grade_id, "" if c.score is None else _num(c.score),
             _num(c.max_score), "manual" if c.manual else "auto" if c.score is not None else "", c.comment or ""]
            for c in cls.cells]
    return write_csv(path, ["student_id", "assignment", "notebook", "grade_id", "score", "max_score", "graded_by",
                         "comment"], rows)


def write_canvas(cls: Class, path: Path, canvas_ids: dict[str, str] | None = None, missing: str = "blank",
                 people: dict[str, list[str]] | None = None) -> int:
    """Canvas gradebook import: one row per student, a column per assignment (final score; a missing submission blank,
    which leaves Canvas's grade as it is, or 0 with `missing='zero'`), and read-only columns with the raw score, late
    penalty and lateness of every assignment with late work, and the credit of every assignment with an attempt
    below full credit. `people` (Canvas user id -> its Student, ID, SIS User ID,
    SIS Login ID and Section, from Canvas's own gradebook CSV) names each student as Canvas does; with 'zero', a
    person it lists who submitted nothing at all gets a row of zeros."""
    canvas_ids, people = canvas_ids or {}, people or {}
    assignments, max_by_assignment, totals = cls.assignments(), cls.assignment_max(), cls.assignment_totals()
    with_late = [a for a in assignments if any(t.lateness and t.lateness.late for (_, b), t in totals.items() if b == a)]
    header = CANVAS_STUDENT_COLUMNS + [f"{a} ({canvas_ids[a]})" if a in canvas_ids else a for a in assignments]
    with_credit = [a for a in assignments if any(t.credit < 1 for (_, b), t in totals.items() if b == a)]
    header += [f"{a} {what}" for a in with_late for what in ("raw score", "late penalty", "lateness")]
    header += [f"{a} credit" for a in with_credit]
    points = ["    Points Possible", "", "", "", ""] + [_num(max_by_assignment[a]) for a in assignments]
    rows = [points + [READ_ONLY] * (3 * len(with_late) + len(with_credit))]
    none = "0" if missing == "zero" else ""
    seen = set()
    for student in sorted(cls.students):
        info = cls.students[student]
        lms_id = info.get("lms_user_id") or ""
        name = ", ".join(x for x in (info.get("last_name"), info.get("first_name")) if x) or student
        who = people.get(lms_id) or [name, lms_id, "", "", ""]
        seen.add(lms_id)
        scores = [none if totals[student, a].status == "missing" else _num(totals[student, a].score) for a in assignments]
        extra = []
        for a in with_late:
            t = totals[student, a]
            gone = t.status == "missing"
            extra += ["" if gone else _num(t.raw_score), "" if gone else _num(t.penalty),
                      t.lateness.describe() if t.lateness and not gone else ""]
        extra += ["" if totals[student, a].status == "missing" else f"{totals[student, a].credit:.4g}" for a in with_credit]
        rows.append(who + scores + extra)
    if missing == "zero":  # Canvas's students who never submitted anything: not in the course's gradebook at all
        rows += [people[i] + ["0"] * len(assignments) + [""] * (3 * len(with_late) + len(with_credit))
                 for i in sorted(people) if i not in seen]
    return write_csv(path, header, rows) - 1


def canvas_people(path: Path) -> dict[str, list[str]]:
    """Canvas user id -> [Student, ID, SIS User ID, SIS Login ID, Section] of each student row of a gradebook CSV
    exported from Canvas (ExportError for a file that is not one)."""
    try:
        header, rows, _ = read_csv(path, expect="Student")
    except CsvError as exc:
        raise ExportError(f"the Canvas gradebook: {exc}") from None
    at = {h.strip(): k for k, h in enumerate(header)}
    if "Student" not in at or "ID" not in at:
        raise ExportError(f"{path} is not a gradebook exported from Canvas (no Student and ID columns)")
    out = {}
    for row in rows:
        cells = {col: unquote(row[k].strip()) if k < len(row) else "" for col, k in at.items()}
        user = cells.get("ID", "")
        if user.isdigit() and "Points Possible" not in cells.get("Student", ""):
            out[user] = [cells.get(col, "") for col in CANVAS_STUDENT_COLUMNS]
    return out


def _stamp(when) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ") if when is not None else ""


class ExportError(AutograderError):
    """An export that cannot be made as asked (a user-facing sentence)."""


def canvas_ids_from_gradebook(path: Path, notebooks: dict[str, list[str]]) -> tuple[dict[str, str], list[str]]:
    """({assignment: Canvas assignment id}, a note per assignment not found) from a gradebook CSV exported from
    Canvas; ExportError for a file that is not one or a column that two assignments (or one, twice) claim."""
    try:
        header = read_csv(path, expect="Student")[0]
    except CsvError as exc:
        raise ExportError(f"the Canvas gradebook: {exc}") from None
    if len(header) < 2 or "Student" not in header[0] or "ID" not in header[1]:
        raise ExportError(f"{path} is not a gradebook exported from Canvas (its header starts "
                          f"{', '.join(header[:2]) or 'with nothing'}; Canvas's starts Student, ID)")
    columns = [(m["title"].strip(), m["id"]) for h in header if (m := re.fullmatch(r"(?P<title>.*)\((?P<id>\d+)\)\s*", h))]
    ids, notes = {}, []
    for assignment, names in notebooks.items():
        def mine(title: str, a=assignment, names=names) -> bool:
            t = title.lower()
            chapter = re.fullmatch(r"ch(\d+)", a.lower())  # Canvas's own title of it: "Chapter 1: Parallel time"
            return t == a.lower() or bool(re.match(rf"{re.escape(a.lower())}\b", t)) or any(n.lower() in t for n in names) \
                or bool(chapter and re.match(rf"chapter\s*0*{chapter[1]}\b", t))
        found = sorted({cid for title, cid in columns if mine(title)})
        if len(found) > 1:
            raise ExportError(f"several columns of {path} could be {assignment} (ids {', '.join(found)}): "
                              f"give --canvas-id {assignment}=ID")
        if found:
            ids[assignment] = found[0]
        else:
            notes.append(f"{assignment}: no column of {path} is titled {assignment} or {', '.join(names)}")
    taken = [cid for cid in ids.values()]
    if len(set(taken)) < len(taken):
        raise ExportError(f"one column of {path} matches several assignments: give --canvas-id CHAPTER=ID for each")
    return ids, notes


ENCODINGS = ("utf-8-sig", "cp1252")  # what we write (a BOM if a tool added one), then what Excel saves as "CSV" on Windows


def read_csv(path: Path | str, expect: str) -> tuple[list[str], list[list[str]], str]:
    """(header, rows, encoding) of a CSV a person may have saved from a spreadsheet: UTF-8 (with or without a BOM),
    else Windows-1252 (Excel's "CSV" on Windows); separated by `,`, else by whichever of `;` and tab gives a header
    that has the column `expect` (Excel in a `;` locale). CsvError with what to do for anything else."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise CsvError(f"cannot read {path} ({exc.strerror or type(exc).__name__})") from None
    for encoding in ENCODINGS:
        try:
            text = data.decode(encoding)
            break
        except UnicodeDecodeError:
            continue
    else:
        raise CsvError(f"cannot read {path}: it is neither UTF-8 nor Windows-1252 text; save it again from the "
                       "spreadsheet as CSV UTF-8 (comma delimited)")
    if "\x00" in text:
        raise CsvError(f"cannot read {path}: it holds NUL characters (saved as UTF-16 or a binary sheet?); save it "
                       "again from the spreadsheet as CSV UTF-8 (comma delimited)")
    first = text.split("\n", 1)[0]
    delimiter = next((d for d in (",", ";", "\t") if expect in next(csv.reader([first], delimiter=d), [])), ",")
    try:
        table = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))
    except csv.Error as exc:
        raise CsvError(f"cannot read {path} as CSV ({exc})") from None
    return (table[0] if table else []), table[1:], encoding


class CsvError(AutograderError, ValueError):
    """A CSV that cannot be read (a user-facing sentence)."""


def write_csv(path: Path | str, header: list[str], rows: list[list]) -> int:
    """The one CSV writer of autograder: every field quoted and `neutral`, UTF-8, to `path` ('-': standard output,
    where a terminal gets every control character escaped as `tables.printable` shows it); returns the rows written
    (header not counted)."""
    def write(f, shown=lambda text: text) -> None:
        writer = csv.writer(f, quoting=csv.QUOTE_ALL)
        writer.writerow([shown(neutral(h)) for h in header])
        writer.writerows([[shown(neutral(x)) for x in row] for row in rows])

    if str(path) == "-":
        write(sys.stdout, (lambda text: printable(text, newlines=True)) if sys.stdout.isatty() else (lambda text: text))
        sys.stdout.flush()
        return len(rows)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        write(f)
    return len(rows)
