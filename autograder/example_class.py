"""A made-up class of students, as a Canvas "Download Submissions" zip, for every chapter.

Built deterministically (same bytes on every run) from each chapter's source notebook
(the correct answers), its release (the empty stubs) and the wrong implementations in
`solutions/mistakes` (partly correct work). The class exercises `collect` and `grade` the way
a real one would: correct, partly correct, empty and half-finished work, a late
re-submission whose earlier file must be dropped (two days after `DEADLINE`: the late policy
applies), a syntax error, a function that crashes, a notebook that kills its own kernel, a
truncated file, a renamed notebook (placed by its content), a file that is not a notebook,
and two students whose code is one's copied by the other with the names changed (the
similarity report ranks them first). Every manually graded cell gets a prose answer
(`PROSE`); `add_prose_question` gives a course one such cell until the chapters have some.
"""
from __future__ import annotations

import ast
import csv
import datetime as dt
import io
import tempfile
import tokenize
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder import course
from autograder.export import unquote, write_csv
from coursenb import cells
from coursenb.chapters import Chapter, select

DEADLINE = dt.datetime(2025, 1, 31, 23, 0, 0)


@dataclass(frozen=True)
class Submission:
    """One file of the example class, as Canvas names it in its download zip."""

    student: str
    user_id: int
    attachment_id: int
    assignment: str
    filename: str  # the name the student uploaded
    data: bytes
    when: dt.datetime
    kind: str  # what the student did, in a few words
    honest: bool  # no attempt to break the grader (stock nbgrader and ours must agree)
    late: bool = False

    @property
    def canvas_name(self) -> str:
        """Canvas's zip entry name: name[_LATE]_userid_attachmentid_filename."""
        return "_".join([self.student] + (["LATE"] if self.late else []) +
                        [str(self.user_id), str(self.attachment_id), self.filename])


@dataclass(frozen=True)
class Profile:
    """A student of the example class and how they build a chapter's notebook."""

    student: str
    kind: str
    honest: bool
    make: Callable[[Materials], nbformat.NotebookNode | bytes | None]
    filename: Callable[[Chapter], str] = lambda ch: f"{ch.notebook}.ipynb"
    late: bool = False


@dataclass(frozen=True)
class Materials:
    """What a chapter offers to build submissions from."""

    chapter: Chapter
    source: nbformat.NotebookNode  # instructor's notebook (solution text already stripped)
    release: nbformat.NotebookNode  # the student's stub notebook
    wrong: list  # solutions.mistakes entries, Patch, Assign or Wrong (may be empty)

    def correct(self, only: set[str] | None = None) -> nbformat.NotebookNode:
        """The release with every solution cell (or those in `only`) filled in from the source."""
        answers = {cells.grade_id(c): cells.without_solution_markers(c.source)
                   for c in self.source.cells if cells.is_solution(c)}
        nb = nbformat.from_dict(self.release)
        for cell in nb.cells:
            gid = cell.metadata.get("nbgrader", {}).get("grade_id")
            if gid in answers and (only is None or gid in only):
                cell.source = answers[gid]
        return nb

    def solution_ids(self) -> list[str]:
        """grade_ids of the solution cells, in notebook order."""
        return [c.metadata.nbgrader["grade_id"] for c in self.release.cells
                if c.metadata.get("nbgrader", {}).get("solution")]

    def with_wrong(self, *indices: int) -> nbformat.NotebookNode | None:
        """The correct notebook with the corpus's wrong implementations `indices` (distinct cells)."""
        if not self.wrong:
            return None
        from solutions.mistakes import apply

        nb, used = self.correct(), set()
        for i in indices:
            candidates = [w for w in self.wrong[i % len(self.wrong):] + self.wrong if w.cell not in used]
            if candidates:
                nb = apply(nb, candidates[0])
                used.add(candidates[0].cell)
        return nb

    def with_first_function(self, line: str) -> nbformat.NotebookNode:
        """The correct notebook whose first solution function starts with `line` (top of the cell if none)."""
        nb = self.correct()
        for cell in nb.cells:
            if cell.metadata.get("nbgrader", {}).get("solution"):
                fn = next((n for n in ast.walk(ast.parse(cell.source)) if isinstance(n, ast.FunctionDef)), None)
                if fn is not None:
                    lines = cell.source.splitlines()
                    first = fn.body[0]
                    lines.insert(first.lineno - 1, " " * first.col_offset + line)
                    cell.source = "\n".join(lines)
                    return nb
        first_cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
        first_cell.source = line + "\n" + first_cell.source
        return nb

    def with_syntax_error(self) -> nbformat.NotebookNode:
        """The correct notebook with an unclosed parenthesis at the end of the first solution cell."""
        nb = self.correct()
        cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
        cell.source += "\nscale = (1.0 +"
        return nb

    def with_own_style(self, copied: bool = False) -> nbformat.NotebookNode:
        """The correct notebook written in one student's own style: a helper of hers at the top of the first solution
        cell with a function, called at the start of every solution function. `copied`: the same code with every
        name, comment and docstring changed, as a student who copied it would disguise it."""
        nb = self.correct()
        helper_done = False
        for cell in nb.cells:
            if not cell.metadata.get("nbgrader", {}).get("solution") or cell.cell_type != "code":
                continue
            try:
                tree = ast.parse(cell.source)
            except SyntaxError:
                continue
            fns = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
            lines = cell.source.splitlines()
            for fn in reversed(fns):
                body = fn.body[1:] if len(fn.body) > 1 and _is_docstring(fn.body[0]) else fn.body
                first = body[0]
                args = [a.arg for a in fn.args.args]
                call = f"_check_inputs({', '.join(f'{a}={a}' for a in args)})"
                lines.insert(first.lineno - 1, " " * first.col_offset + call)
            if fns and not helper_done:
                lines[:0] = OWN_HELPER.splitlines() + [""]
                helper_done = True
            cell.source = "\n".join(lines)
        if copied:
            for cell in nb.cells:
                if cell.metadata.get("nbgrader", {}).get("solution") and cell.cell_type == "code":
                    cell.source = _disguise(cell.source)
        return nb

    def half_done(self) -> nbformat.NotebookNode:
        """The first half of the solution cells answered, the rest untouched."""
        ids = self.solution_ids()
        return self.correct(set(ids[: max(1, len(ids) // 2)]))


OWN_HELPER = '''def _check_inputs(**tensors_by_name):
    """My habit: look at every input before computing, and say which one is empty."""
    found_shapes = {}
    for arg_label, arg_value in tensors_by_name.items():
        arg_shape = tuple(getattr(arg_value, "shape", ()))
        found_shapes[arg_label] = arg_shape
        if 0 in arg_shape:
            raise ValueError(f"{arg_label} is empty: its shape is {arg_shape}")
    return found_shapes'''
# How a copier renames the helper's names (name tokens only: strings and attributes stay).
DISGUISE = {"_check_inputs": "validate", "tensors_by_name": "arrays", "found_shapes": "dims", "arg_label": "key",
            "arg_value": "arr", "arg_shape": "size"}


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _disguise(source: str) -> str:
    """`source` with the helper's names replaced (as tokens) and its docstring and message reworded."""
    out, last = [], None
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME and tok.string in DISGUISE and not (last and last.string == "."):
            tok = tok._replace(string=DISGUISE[tok.string])
        out.append(tok)
        last = tok
    source = tokenize.untokenize(out)
    return (source.replace("My habit: look at every input before computing, and say which one is empty.",
                           "Validate the arguments first.")
                  .replace('f"{arg_label} is empty: its shape is {arg_shape}"', 'f"{key} has a zero dimension: {size}"'))


PROFILES: list[Profile] = [
    Profile("ada", "correct", True, lambda m: m.correct()),
    Profile("grace", "correct, late; re-uploaded (earlier upload had a mistake)", True, lambda m: m.correct(), late=True),
    Profile("alan", "one mistake (from solutions/mistakes)", True, lambda m: m.with_wrong(0)),
    Profile("barbara", "two mistakes in different cells", True, lambda m: m.with_wrong(1, 2)),
    Profile("edsger", "empty: the release, untouched", True, lambda m: m.release),
    Profile("donald", "half done: first half of the cells answered", True, lambda m: m.half_done()),
    Profile("frances", "syntax error in the first answer cell", True, lambda m: m.with_syntax_error()),
    Profile("john", "first function crashes (IndexError)", True,
            lambda m: m.with_first_function("_ = [][0]  # crashes: off by one")),
    Profile("margaret", "first function kills its own process (os._exit)", False,
            lambda m: m.with_first_function("import os; os._exit(3)")),
    Profile("niklaus", "truncated file (not valid JSON)", True,
            lambda m: nbformat.writes(m.correct()).encode()[:700]),
    Profile("linus", "misnamed file", True, lambda m: m.correct(), filename=lambda ch: f"{ch.assignment}_final_version.ipynb"),
    Profile("ken", "uploaded a .py export instead of the notebook", True,
            lambda m: "\n\n".join(c.source for c in m.correct().cells if c.cell_type == "code").encode(),
            filename=lambda ch: f"{ch.notebook}.py"),
    Profile("hedy", "correct, in her own style (a helper of her own)", True, lambda m: m.with_own_style()),
    Profile("tim", "copied hedy's notebook, names and comments changed", True,
            lambda m: m.with_own_style(copied=True)),
]

# Prose answers to manually graded cells (the rest answer with the model answer; the untouched release none).
PROSE = {
    "alan": "The attention weights, because they are big.",
    "barbara": "The sums: a layer costs L*T with serial sums and L*(log T + log J) with a tree, so the *reductions*\n"
               "set the time, not the number of positions.",
    "donald": "I did not get to this one.",
}
PROSE_PROMPT = ("### In your own words\n\nIn two or three sentences: which step of this chapter's computation sets "
                "its parallel time, and why? (Graded by hand.)")
PROSE_ANSWER = ("The reductions: every sum (in a matrix product or in the softmax) has to combine many terms, which "
                "takes time growing with the number of terms (logarithmically with a tree of additions), while the "
                "elementwise steps take constant time however many positions there are.")
PROSE_ID = "prose_parallel_time"


def add_prose_question(course_dir: Path, assignment: str, points: float = 2.0) -> bool:
    """Add a manually graded prose question (markdown prompt and answer cell, nbgrader "manual") at the end of the
    course's source notebook of `assignment` and release it again; False if it already has a manual cell. For the
    example class, until the chapters have prose questions of their own."""
    path = next((Path(course_dir) / "source" / assignment).glob("*.ipynb"))
    nb = nbformat.read(path, as_version=4)
    if any(cells.is_manual(c) for c in nb.cells):
        return False
    meta = {"nbgrader": {"grade": True, "grade_id": PROSE_ID, "locked": False, "points": points, "schema_version": 3,
                         "solution": True, "task": False}}
    prompt = {"nbgrader": {"grade": False, "grade_id": f"{PROSE_ID}_prompt", "locked": True, "schema_version": 3,
                           "solution": False, "task": False}}
    nb.cells += [nbformat.v4.new_markdown_cell(PROSE_PROMPT, metadata=prompt, id=f"{PROSE_ID}_prompt"),
                 nbformat.v4.new_markdown_cell(PROSE_ANSWER, metadata=meta, id=PROSE_ID)]
    nbformat.write(nb, path)
    course.release(course_dir, [assignment])
    return True


def _answer_prose(nb: nbformat.NotebookNode, student: str) -> nbformat.NotebookNode:
    """`nb` with the student's prose answer in every manually graded cell they answered."""
    if student in PROSE:
        for cell in nb.cells:
            if cells.is_manual(cell) and cell.cell_type == "markdown":
                cell.source = PROSE[student]
    return nb


def materials(chapters: list[Chapter], release_dir: Path | None = None) -> list[Materials]:
    """Source, release and wrong implementations of each chapter (a temporary release if none is given)."""
    if release_dir is None:
        with tempfile.TemporaryDirectory() as tmp:
            course.init_course(Path(tmp), [c.assignment for c in chapters])
            course.release(Path(tmp), [c.assignment for c in chapters])
            return materials(chapters, Path(tmp) / "release")
    out = []
    for ch in chapters:
        course_source = Path(release_dir).parent / "source" / ch.assignment / f"{ch.notebook}.ipynb"
        source = nbformat.read(course_source, as_version=4) if course_source.exists() else course.source_notebook(ch)
        release = nbformat.read(Path(release_dir) / ch.assignment / f"{ch.notebook}.ipynb", as_version=4)
        out.append(Materials(ch, source, release, _wrong(ch.assignment)))
    return out


def _wrong(assignment: str) -> list:
    from solutions.mistakes import wrong_for

    try:
        return list(wrong_for(assignment))
    except ImportError:  # no wrong implementations for this chapter: no partly-correct students
        return []


def build(chapters: list[Chapter] | None = None, release_dir: Path | None = None) -> list[Submission]:
    """Every file of the example class, in a fixed order."""
    chapters = chapters if chapters is not None else select()
    out = []
    for k, m in enumerate(materials(chapters, release_dir)):
        for s, profile in enumerate(PROFILES):
            made = profile.make(m)
            if made is None:
                continue
            if not isinstance(made, bytes):
                made = _answer_prose(made, profile.student)
            data = made if isinstance(made, bytes) else nbformat.writes(made).encode()
            when = DEADLINE + (dt.timedelta(days=2) if profile.late else -dt.timedelta(hours=len(PROFILES) - s))
            attachment = 50_000 + 1_000 * k + 10 * s
            sub = Submission(profile.student, 1_001 + s, attachment, m.chapter.assignment,
                             profile.filename(m.chapter), data, when, profile.kind, profile.honest, profile.late)
            if profile.student == "grace":  # the earlier upload: a mistake, superseded by the -1 file
                earlier = m.with_wrong(0) or m.release
                out.append(Submission(sub.student, sub.user_id, attachment - 5, sub.assignment, sub.filename,
                                      nbformat.writes(earlier).encode(), when - dt.timedelta(hours=3),
                                      "earlier upload, superseded", True, True))
                sub = Submission(sub.student, sub.user_id, attachment, sub.assignment,
                                 sub.filename.replace(".ipynb", "-1.ipynb"), data, when, sub.kind, True, True)
            out.append(sub)
    return out


def write_zip(submissions: list[Submission], path: Path) -> Path:
    """A Canvas-style submissions zip (fixed timestamps: the same bytes every time)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for sub in sorted(submissions, key=lambda s: s.canvas_name):
            info = zipfile.ZipInfo(sub.canvas_name, date_time=sub.when.timetuple()[:6])
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, sub.data)
    return path


def write_dir(submissions: list[Submission], path: Path) -> Path:
    """The same files, extracted into a folder."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    for sub in submissions:
        (path / sub.canvas_name).write_bytes(sub.data)
    return path


def roster() -> list[tuple[str, int, str]]:
    """(student, LMS user id, what they did) for the class."""
    return [(p.student, 1_001 + s, p.kind) for s, p in enumerate(PROFILES)]


def grade_prose(csv_in: Path, csv_out: Path) -> int:
    """The example class's instructor: fill the manual-grading CSV (full points for an answer that names the sums or
    reductions, half for another answer, a comment each); returns the rows scored."""
    with Path(csv_in).open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        header, rows = reader.fieldnames or [], list(reader)
    scored = 0
    for row in rows:
        if row["responded"] != "yes" or row["score"]:
            continue
        answer, points = unquote(row["answer"]).lower(), float(row["max_score"])
        good = "reduction" in answer or "sum" in answer
        row["score"] = f"{points if good else points / 2:g}"
        row["comment"] = ("Right: the reductions set the time." if good else
                          "Which operation has to wait for many inputs? Look at the sums.")
        scored += 1
    write_csv(csv_out, header, [[unquote(r.get(c) or "") for c in header] for r in rows])
    return scored
