"""Manual grading: answers the instructor scores by hand (nbgrader "manual" cells: grade and solution).

`export` writes, for every manually graded cell of the course, an HTML page
(templates/manual.html.j2) with the question's own text (the markdown cells just before the
answer cell), the model answer (the source's solution) and the rubric (the chapter's
solutions-only rubric cell after it, where it has one), then every student's answer, their
markdown rendered safely (raw HTML shown as text, no link, math as MathML) with the text as
written beside it, on a page with no script and nothing remote; and one CSV to fill in
(`score`, `comment`; existing scores and comments come pre-filled, an unanswered cell comes
with 0 and "No response.", as nbgrader scores it). `import_scores` reads the CSV back into
nbgrader's gradebook (`Grade.manual_score`, `Comment.manual_comment`), where nbgrader's
formgrader sees and edits the same values. An import is all or nothing: every row is checked
first (known student and cell, a number between 0 and the cell's points, the answer
unchanged since the export), and one bad row applies nothing and is named with its line.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder import export as csvout
from autograder.errors import AutograderError
from autograder.gradebook import open_course
from autograder.pages import markdown, render, safe_markdown
from coursenb import cells
from coursenb.chapters import ChapterError, assignment_order, select

COLUMNS = ["assignment", "notebook", "grade_id", "student", "max_score", "score", "comment", "responded",
           "answer_sha256", "answer"]
NO_RESPONSE = "No response."


class ManualError(AutograderError):
    """A CSV that cannot be imported (a user-facing sentence, one line per problem after the first)."""


@dataclass(frozen=True)
class Question:
    """A manually graded cell of a notebook: its prompt (the course's markdown just before it) and points."""

    assignment: str
    notebook: str
    grade_id: str
    points: float
    prompt: str  # the question's own text: the markdown cells right before the answer cell
    stub: str  # what the release holds in the cell
    answer: str = ""  # the model answer: the source's solution
    rubric: str = ""  # the chapter's rubric for it (a solutions-only cell after the answer cell), if any


@dataclass(frozen=True)
class Answer:
    """One student's answer to one question, and the grade it has now."""

    question: Question
    student: str
    text: str
    responded: bool
    score: float | None
    comment: str | None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()[:16]


def questions(course_dir: Path, assignment: str | None = None) -> list[Question]:
    """Every manually graded cell of the course's source notebooks, in course order, with its question's text,
    model answer and rubric."""
    out = []
    source = Path(course_dir) / "source"
    for nb_path in sorted(source.glob("*/*.ipynb"), key=lambda p: (assignment_order(p.parent.name), p.name)):
        a = nb_path.parent.name
        if assignment and a != assignment:
            continue
        nb = nbformat.read(nb_path, as_version=4)
        release = Path(course_dir) / "release" / a / nb_path.name
        stubs = {}
        if release.exists():
            stubs = {cells.grade_id(c): c.source for c in nbformat.read(release, as_version=4).cells if cells.grade_id(c)}
        rubrics = _rubrics(a)
        prompt: list[str] = []
        for cell in nb.cells:
            if cells.is_manual(cell):
                gid = cells.grade_id(cell)
                out.append(Question(a, nb_path.stem, gid, cells.points(cell), "\n\n".join(prompt), stubs.get(gid, ""),
                                    model_answer(cell.source), rubrics.get(gid, "")))
                prompt = []
            elif cell.cell_type == "markdown" and not cells.is_graded(cell):
                prompt.append(cell.source)
            else:  # a code cell (a plot's caption above it is not the question) or another graded cell
                prompt = []
    return out


def model_answer(source: str) -> str:
    """The solution an answer cell of the source holds: its solution region, or the whole cell (nbgrader's rule
    for a markdown cell without markers)."""
    lines = cells.solution_lines(source)
    return "\n".join(lines).strip() if lines else source.strip()


def _rubrics(assignment: str) -> dict[str, str]:
    """grade_id -> the rubric the chapter gives right after that answer cell (its solutions-only cells whose first
    line names a rubric), for a course made from the book's chapters."""
    try:
        nb = select([assignment])[0].read()
    except (ChapterError, IndexError, OSError):
        return {}
    out: dict[str, str] = {}
    for k, cell in enumerate(nb.cells):
        if not cells.is_manual(cell):
            continue
        found = []
        for after in nb.cells[k + 1:]:
            if not cells.is_solutions_only(after):
                break
            if after.cell_type == "markdown" and "rubric" in after.source.split("\n", 1)[0].lower():
                found.append(after.source)
        if found:
            out[cells.grade_id(cell)] = "\n\n".join(found)
    return out


def answers(course_dir: Path, assignment: str | None = None) -> list[Answer]:
    """Every submitted student's answer to every question, with the score and comment the gradebook holds."""
    from nbgrader.api import MissingEntry

    course_dir = Path(course_dir)
    out = []
    qs = questions(course_dir, assignment)
    with open_course(course_dir) as gb:
        for q in qs:
            for path in sorted((course_dir / "submitted").glob(f"*/{q.assignment}/{q.notebook}.ipynb")):
                student = path.parent.parent.name
                text = _answer_text(path, q.grade_id)
                score = comment = None
                try:
                    grade = gb.find_grade(q.grade_id, q.notebook, q.assignment, student)
                    score = grade.manual_score
                    comment = gb.find_comment(q.grade_id, q.notebook, q.assignment, student).manual_comment
                except MissingEntry:
                    pass
                responded = text is not None and text.strip() != q.stub.strip() and bool(text.strip())
                out.append(Answer(q, student, text or "", responded, score, comment))
    return out


def _answer_text(path: Path, grade_id: str) -> str | None:
    """The source of the cell `grade_id` in a submitted notebook (None if it has none or cannot be read)."""
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception:  # noqa: BLE001 - an unreadable submission has no answer
        return None
    return next((c.source for c in nb.cells if cells.grade_id(c) == grade_id), None)


# ----------------------------------------------------------------------------- export


def export(course_dir: Path, out_dir: Path, assignment: str | None = None) -> tuple[Path, list[Path], int]:
    """Write out_dir/<assignment>_<grade_id>.html per question and out_dir/manual_grades.csv; returns
    (csv path, pages, rows)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    all_answers = answers(course_dir, assignment)
    pages = []
    for q in questions(course_dir, assignment):
        mine = [a for a in all_answers if a.question == q]
        items = [{"student": a.student, "score": a.score, "comment": a.comment, "responded": a.responded,
                  "html": safe_markdown(a.text) if a.responded else None, "text": a.text} for a in mine]
        text = render("manual.html.j2", title=f"{q.assignment} {q.grade_id}: {len(mine)} answer(s), {q.points:g} point(s)",
                      question=q, prompt=markdown(q.prompt) if q.prompt.strip() else None,
                      model=markdown(q.answer) if q.answer else None, rubric=markdown(q.rubric) if q.rubric else None,
                      items=items)
        page = out_dir / f"{q.assignment}_{q.grade_id}.html"
        page.write_text(text, encoding="utf-8")
        pages.append(page)
    rows = []
    for a in all_answers:
        score, comment = a.score, a.comment
        if score is None and not a.responded:
            score, comment = 0.0, comment or NO_RESPONSE
        rows.append([a.question.assignment, a.question.notebook, a.question.grade_id, a.student,
                     f"{a.question.points:g}", "" if score is None else f"{score:g}", comment or "",
                     "yes" if a.responded else "no", a.sha256, a.text])
    path = out_dir / "manual_grades.csv"
    csvout.write_csv(path, COLUMNS, rows)
    return path, pages, len(rows)


# ----------------------------------------------------------------------------- import


@dataclass(frozen=True)
class Row:
    """One checked line of the CSV: what to write."""

    line: int
    answer: Answer
    score: float | None
    comment: str | None


def read_rows(course_dir: Path, path: Path) -> list[Row]:
    """Every line of the CSV that sets a score or a comment, checked; ManualError listing every bad line."""
    try:
        header, table, _ = csvout.read_csv(path, expect="grade_id")
    except csvout.CsvError as exc:
        raise ManualError(str(exc)) from None
    lines = [(k, dict(zip(header, row))) for k, row in enumerate(table, start=2) if any(x.strip() for x in row)]
    missing = [c for c in ("assignment", "notebook", "grade_id", "student", "score") if c not in header]
    if missing:
        raise ManualError(f"{path} has no column {', '.join(missing)} (export one with `autograder manual export`)")
    known = {(a.question.assignment, a.question.notebook, a.question.grade_id, a.student): a
             for a in answers(course_dir)}
    rows, problems, seen = [], [], {}
    for k, raw in lines:
        value = {c: csvout.unquote((raw.get(c) or "").strip()) for c in header if c}
        key = (value["assignment"], value["notebook"], value["grade_id"], value["student"])
        where = f"line {k} ({'/'.join(key[2:])})"
        answer = known.get(key)
        if answer is None:
            problems.append(f"{where}: no manually graded cell {key[2]!r} of {key[0]}/{key[1]} submitted by "
                            f"{key[3]!r}")
            continue
        if key in seen:
            problems.append(f"{where}: the same answer as line {seen[key]}")
            continue
        seen[key] = k
        comment = value.get("comment") or None
        if not value["score"]:
            if comment:
                rows.append(Row(k, answer, None, comment))
            continue
        try:
            score = float(value["score"])
        except ValueError:
            problems.append(f"{where}: score {value['score']!r} is not a number")
            continue
        if not 0 <= score <= answer.question.points or score != score:
            problems.append(f"{where}: score {score:g} is not between 0 and {answer.question.points:g}")
            continue
        if value.get("answer_sha256") and value["answer_sha256"] != answer.sha256:
            problems.append(f"{where}: the answer changed since the export (collected again?): export again")
            continue
        rows.append(Row(k, answer, score, comment))
    if problems:
        raise ManualError(f"{len(problems)} problem(s) in {path}; nothing was imported\n" + "\n".join(problems))
    return rows


def import_scores(course_dir: Path, path: Path) -> list[Row]:
    """Check the whole CSV, then write every score and comment into the gradebook in one commit."""
    from nbgrader.api import MissingEntry

    rows = read_rows(course_dir, path)
    with open_course(course_dir) as gb:
        try:
            for row in rows:
                q = row.answer.question
                if row.score is not None:
                    grade = gb.find_grade(q.grade_id, q.notebook, q.assignment, row.answer.student)
                    grade.manual_score = row.score
                    grade.needs_manual_grade = False
                try:
                    comment = gb.find_comment(q.grade_id, q.notebook, q.assignment, row.answer.student)
                    comment.manual_comment = row.comment
                except MissingEntry:
                    pass
        except MissingEntry as exc:
            gb.db.rollback()
            raise ManualError(f"the gradebook has no grade for a row ({exc}): grade the notebook first") from None
        gb.db.commit()
    return rows
