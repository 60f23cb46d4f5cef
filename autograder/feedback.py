"""Per-student feedback: one self-contained HTML page per graded notebook, without the hidden tests.

The page (templates/feedback.html.j2) leads with the score (raw, late penalty, final), the
first real error of the notebook (a syntax error shows as a syntax error, not as the
NameErrors it causes further down), named by its section and cell as a reader finds it in
JupyterLab (which numbers no cells), what an untouched stub means when one is left, and a
table of the graded cells with scores, reasons and the instructor's comments; then the
notebook, each graded cell followed by its score and reason. Reasons are said in words
(`plain_reason`): no internal exception name (the kit's `Explained`, the grader's
`CellStopped`) reaches the page, only their message.

Hidden tests never reach the page: their source regions are cut from every cell, and the
names of the hidden checks are scrubbed from every output and reason (the student sees what
went wrong, not how it was checked).

Everything a student controls is shown as text, never interpreted (`autograder.pages`):
their markdown and prose answers literally (Markdown would swallow the asterisks of `L*T`),
their code highlighted by Pygments, their outputs as escaped text or as PNG/JPEG data URIs
whose base64 is checked. Only the course's own markdown (a cell whose text is one of the
source notebook's markdown cells) is rendered as Markdown, with raw HTML off, math as
MathML, and links only to other sites (a link to a book page has no target beside the page:
its text stands alone). The page has no script and loads nothing; student text keeps no
control characters (bidirectional overrides included), and every pattern run over it is linear.
"""
from __future__ import annotations

import base64
import re
from pathlib import Path

import nbformat

from autograder.collect import read_bounded
from autograder.grades import CellGrade, Class
from autograder.gradinglog import NotebookLog
from autograder.pages import ANSI, highlight, markdown, render, without_comments
from autograder.pages import warm as warm_pages
from coursenb import cells as nbcells
from coursenb.cells import drop_hidden_lines, strip_hidden_tests

# A " [check name, seed N]" suffix (no leading \s*: that would make the pattern quadratic on a run of spaces).
CHECK_SUFFIX = re.compile(r" ?\[check [\w.]+(?:, seed \d+)?\]")
BASE64 = re.compile(r"[A-Za-z0-9+/=\s]+")
MAX_IMAGE = 8 << 20  # characters of base64 per image


def hidden_check_names(course_dir: Path | None = None, logs: list[NotebookLog] = ()) -> list[str]:
    """The names of the hidden checks a page may show, longest first (for scrubbing): with `course_dir`, those
    the course's notebooks call in their hidden tests (as the engine reads them) and those `logs` name, found
    without importing the checks (torch: most of a single regrade's feedback time); else every registered one."""
    if course_dir is None:
        from autograder.checks import CHECKS

        return sorted(CHECKS, key=len, reverse=True)
    names = {n for lg in logs for c in lg.cells for n in c.failed_checks}
    for path in sorted(Path(course_dir).glob("source/*/*.ipynb")):
        try:
            nb = nbformat.read(path, as_version=4)
        except Exception:  # noqa: BLE001 - the course's own file: unreadable, it names nothing
            continue
        names |= {n for c in nb.cells if nbcells.is_test(c) for n in nbcells.hidden_check_names(c.source)}
    return sorted(names, key=len, reverse=True)


def scrub(text: str, names: list[str]) -> str:
    """`text` without hidden-test regions, `[check ...]` suffixes or hidden check names."""
    text = drop_hidden_lines(strip_hidden_tests(text))
    text = CHECK_SUFFIX.sub("", text)
    for name in names:
        if name in text:
            text = re.sub(rf"\b(?:the )?hidden (test|check) {re.escape(name)}\b", r"a hidden \1", text)
            text = text.replace(name, "a hidden check")
    return text


def scrub_notebook(nb: nbformat.NotebookNode, names: list[str]) -> nbformat.NotebookNode:
    """A copy of `nb` whose sources and outputs carry nothing of the hidden tests."""
    nb = nbformat.from_dict(nb)
    for cell in nb.cells:
        cell.source = scrub(cell.source, names)
        for out in cell.get("outputs", []):
            if "text" in out:
                out.text = scrub(_text(out.text), names)
            if "evalue" in out:
                out.evalue = scrub(str(out.evalue), names)
            if "traceback" in out:
                out.traceback = [scrub(str(line), names) for line in out.traceback]
            for mime, value in list(out.get("data", {}).items()):
                if isinstance(value, str) and mime.startswith("text/"):
                    out.data[mime] = scrub(value, names)
    return nb


def _text(value: object) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


# ----------------------------------------------------------------------------- what the page says

INTERNAL = ("Explained", "CellStopped", "NotGraded")  # the kit's and the grader's exception types: the message is the news
STUB_NOTE = ("An answer cell that still holds the release's stub (`raise NotImplementedError()`) has not been "
             "answered: every test that uses it scores 0 until you write your answer in its place.")
RESUBMIT = ("Nothing in it was graded. Open the file you submitted in Jupyter: if it does not open, or does not show "
            "your work, open your own copy, save it (File > Save Notebook), and submit that file again.")
_RAISED = re.compile(r"^(the cell )?raised (\w+): ?")
_UNDEFINED = re.compile(r"name '(\w+)' is not defined")


def plain_reason(reason: str) -> str:
    """A grading reason as a student reads it: no internal exception names; an untouched stub and a failed
    assert said in words."""
    m = _RAISED.match(reason)
    if not m:
        return reason
    kind, rest = m[2], reason[m.end():].strip()
    if kind == "NotGraded":  # the grader's note in each test cell of a notebook it could not run
        return f"not graded: {rest}" if rest else "not graded"
    if kind in INTERNAL:
        return f"a test failed: {rest}" if rest else "a test failed"
    if kind == "NotImplementedError":
        return "not answered yet: the answer cell still holds the release's stub (it raises NotImplementedError)"
    if kind == "AssertionError":
        return f"an assert in the cell failed: {rest}" if rest else "an assert in the cell failed (it gives no message)"
    return f"the cell raised {kind}: {rest}" if m[1] else f"raised {kind}: {rest}"


def _unreadable(error: str) -> bool:
    """The grader could not read the submitted file, or found none of the notebook's cells in it (its words)."""
    return error.startswith("the submitted ") and ("could not be read" in error or "contains none of this" in error)


def first_error(nb: nbformat.NotebookNode, log: NotebookLog | None) -> tuple[int, str] | None:
    """(cell index, what happened) for the notebook's first real error: the earliest code cell that raised,
    was stopped or did not run (the grader's incidents, else the first error output)."""
    if log is not None and log.incidents:
        first = min(log.incidents, key=lambda i: i.cell)
        return first.cell, first.reason
    for k, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                return k, f"raised {out.get('ename')}: {out.get('evalue')}"
    return None


_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def section_of(nb: nbformat.NotebookNode, index: int) -> str | None:
    """The title of the section cell `index` is in: the last markdown heading above it."""
    for cell in reversed(nb.cells[:max(0, min(index, len(nb.cells)))]):
        if cell.get("cell_type") == "markdown":
            titles = _HEADING.findall(_text(cell.get("source", "")))
            if titles:
                return titles[-1].strip()
    return None


def cell_label(nb: nbformat.NotebookNode, index: int) -> str:
    """Where a cell is, as a reader finds it in JupyterLab (which numbers no cells): 'your answer cell
    self_attention in section 1.2 Multi-head attention', 'the code cell `plot(...)` in section 1.5 ...'."""
    if not 0 <= index < len(nb.cells):
        return "a cell that is no longer in the notebook"
    cell = nb.cells[index]
    gid = nbcells.grade_id(cell)
    if gid:
        what = f"your answer cell {gid}" if nbcells.is_solution(cell) else \
            f"the test cell {gid}" if nbcells.is_test(cell) else f"the cell {gid}"
    else:
        first = next((ln.strip() for ln in _text(cell.get("source", "")).splitlines() if ln.strip()), "")
        what = f"the {cell.get('cell_type', 'code')} cell starting `{first[:60]}`" if first else "an empty cell"
    section = section_of(nb, index)
    return what + (f" in section {section}" if section else "")


def _syntax_line(nb: nbformat.NotebookNode, index: int) -> str:
    """The offending line of a syntax error, from the cell's error output (as IPython prints it)."""
    if not 0 <= index < len(nb.cells):
        return ""
    for out in nb.cells[index].get("outputs", []):
        if out.get("output_type") == "error" and "Syntax" in str(out.get("ename")):
            lines = [ANSI.sub("", str(t)) for t in out.get("traceback", [])]
            text = "\n".join(lines).splitlines()
            shown = [ln for ln in text if ln.strip() and not ln.strip().startswith(("Cell In", "File"))][-3:]
            return "\n".join(shown)
    return ""


def _is_stub(cell) -> bool:
    return nbcells.is_solution(cell) and "raise NotImplementedError()" in _text(cell.get("source", ""))


def page(nb: nbformat.NotebookNode, student: str, assignment: str, notebook: str,
         grades: list[CellGrade], log: NotebookLog | None, names: list[str], course_markdown: set[str],
         raw: float, penalty: float, lateness: str | None, cuts: list[str] | tuple = ()) -> str:
    """The feedback page of one notebook (already scrubbed of hidden tests), from templates/feedback.html.j2;
    `cuts` say what of the notebook was not read (collect.read_bounded)."""
    by_id = {g.grade_id: g for g in grades}
    reasons = {c.grade_id: plain_reason(scrub(c.reason, names)) for c in (log.cells if log else ())}
    first = first_error(nb, log)
    first_index = first[0] if first else None
    stubs = [k for k, c in enumerate(nb.cells) if _is_stub(c)]
    lead = None
    if first is not None and not (log is not None and log.error):  # a notebook not run has no first error of its own
        index, what = first
        lead = {"label": cell_label(nb, index), "anchor": f"cell-{index + 1}", "what": plain_reason(scrub(what, names)),
                "detail": scrub(_syntax_line(nb, index), names)}

    def why(g: CellGrade) -> str:
        if g.manual:
            return "graded by your instructor"
        text = reasons.get(g.grade_id, "")
        undefined = _UNDEFINED.search(text)
        if undefined and stubs and not any(undefined[1] in _text(nb.cells[k].source) for k in range(len(nb.cells))
                                           if nbcells.is_solution(nb.cells[k]) and k not in stubs):
            text = f"{undefined[1]} is not defined: its answer cell still holds the release's stub"
        elif first_index is not None and "NameError" in text and _position(nb, g.grade_id) > first_index:
            text += f" (probably because of the first error, in {cell_label(nb, first_index)})"
        return text

    rows = [{"gid": g.grade_id, "score": g.score, "max": g.max_score, "why": why(g), "comment": g.comment,
             "anchor": f"cell-{_position(nb, g.grade_id) + 1}" if _position(nb, g.grade_id) >= 0 else None}
            for g in grades]
    row_of = {r["gid"]: r for r in rows}
    shown = []
    for k, cell in enumerate(nb.cells):
        item = _cell_view(cell, k, course_markdown, names)
        item["first_error"] = k == first_index
        gid = nbcells.grade_id(cell)
        if gid in by_id and nbcells.is_graded(cell):
            g = by_id[gid]
            item["grade"] = {"gid": gid, "score": g.score, "max": g.max_score, "why": row_of[gid]["why"],
                             "comment": g.comment,
                             "mark": "full marks" if g.score is not None and g.score >= g.max_score else
                             "not scored yet" if g.score is None else "lost points"}
        shown.append(item)
    return render("feedback.html.j2", title=f"Feedback: {student}, {notebook}", student=student, notebook=notebook,
                  final=raw - penalty, raw=raw, penalty=penalty, max_total=sum(g.max_score for g in grades),
                  pending=any(g.score is None for g in grades), lateness=lateness,
                  error=scrub(log.error, names) if log is not None and log.error else None,
                  resubmit=RESUBMIT if log is not None and log.error and _unreadable(log.error) else None,
                  lead=lead, stub_note=STUB_NOTE if stubs else None, rows=rows, cells=shown,
                  cuts=[scrub(c, names) for c in cuts])


def _position(nb: nbformat.NotebookNode, gid: str) -> int:
    return next((k for k, c in enumerate(nb.cells) if nbcells.grade_id(c) == gid), -1)


def _cell_view(cell, index: int, course_markdown: set[str], names: list[str]) -> dict:
    """What the template shows of one cell: the course's markdown rendered, a student's text as written, code
    highlighted with its outputs."""
    source = _text(cell.get("source", ""))
    view = {"anchor": f"cell-{index + 1}", "grade": None}
    if cell.get("cell_type") == "markdown" and _norm(source) in course_markdown:
        return {**view, "kind": "course", "html": markdown(source)}
    if cell.get("cell_type") != "code":
        label = "your answer, as written" if nbcells.is_solution(cell) else "your text, as written"
        return {**view, "kind": "text", "label": label, "text": without_comments(source)}
    count = cell.get("execution_count")
    return {**view, "kind": "code", "prompt": f"[{count}]" if isinstance(count, int) else "[ ]",
            "code": highlight(source), "outputs": [o for o in map(_output_view, cell.get("outputs", [])) if o]}


def _output_view(out) -> dict | None:
    kind = out.get("output_type")
    if kind == "stream":
        return {"kind": "text", "cls": "stderr" if out.get("name") == "stderr" else "stdout",
                "text": _text(out.get("text", ""))}
    if kind == "error":
        if out.get("ename") in INTERNAL:  # the kit's and the grader's own failures: their message is the news
            return {"kind": "text", "cls": "error", "text": str(out.get("evalue") or "")}
        tb = "\n".join(str(t) for t in out.get("traceback") or []) or f"{out.get('ename')}: {out.get('evalue')}"
        return {"kind": "text", "cls": "error", "text": tb}
    if kind in ("execute_result", "display_data"):
        data = out.get("data", {})
        for mime in ("image/png", "image/jpeg"):
            value = data.get(mime)
            if isinstance(value, list):
                value = "".join(value)
            if isinstance(value, str) and len(value) <= MAX_IMAGE and BASE64.fullmatch(value) and _is_image(value, mime):
                return {"kind": "image", "src": f"data:{mime};base64,{''.join(value.split())}"}
        if "text/plain" in data:
            return {"kind": "text", "cls": "", "text": _text(data["text/plain"])}
    return None


def _is_image(b64: str, mime: str) -> bool:
    """The base64 decodes and starts like a PNG or JPEG file."""
    try:
        head = base64.b64decode("".join(b64.split())[:64] + "==")[:8]
    except ValueError:
        return False
    return head.startswith(b"\x89PNG\r\n\x1a\n") if mime == "image/png" else head.startswith(b"\xff\xd8\xff")


def _norm(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


# ----------------------------------------------------------------------------- writing pages


def warm() -> None:
    """What writing a page needs, built ahead (`pages.warm`)."""
    warm_pages("feedback.html.j2")


def page_path(course_dir: Path, student: str, assignment: str, notebook: str) -> Path:
    """Where the feedback page of one notebook is written."""
    return Path(course_dir) / "feedback" / student / assignment / f"{notebook}.html"


def generate(course_dir: Path, cls: Class, logs: list[NotebookLog], student: str | None = None,
             assignment: str | None = None, only: set[tuple[str, str, str]] | None = None) -> list[Path]:
    """Write course_dir/feedback/<student>/<assignment>/<notebook>.html for every graded notebook (`only`: just
    these (student, assignment, notebook))."""
    course_dir = Path(course_dir)
    names = hidden_check_names(course_dir, logs)
    by_key = {(lg.student, lg.assignment, lg.notebook): lg for lg in logs}
    grades: dict[tuple[str, str, str], list[CellGrade]] = {}
    for c in cls.cells:
        grades.setdefault((c.student, c.assignment, c.notebook), []).append(c)
    totals = {(t.student, t.assignment, t.notebook): t for t in cls.totals()}
    markdown_of: dict[tuple[str, str], set[str]] = {}
    written = []
    for (s, a, nb_name), cell_grades in sorted(grades.items()):
        if (student and s != student) or (assignment and a != assignment) or (only is not None
                                                                              and (s, a, nb_name) not in only):
            continue
        if (a, nb_name) not in markdown_of:
            markdown_of[a, nb_name] = _course_markdown(course_dir, a, nb_name)
        total = totals.get((s, a, nb_name))
        lateness = lateness_text(cls, s, a)
        nb, cuts = _notebook_for(course_dir, s, a, nb_name)
        nb = scrub_notebook(nb, names)
        text = page(nb, s, a, nb_name, cell_grades, by_key.get((s, a, nb_name)), names, markdown_of[a, nb_name],
                    total.raw_score if total else 0.0, total.penalty if total else 0.0, lateness, cuts)
        dest = page_path(course_dir, s, a, nb_name)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
        written.append(dest)
    return written


def lateness_text(cls: Class, student: str, assignment: str) -> str | None:
    """What a page says of a submission's lateness ('1 d 23 h late'), or None when it was on time."""
    info = cls.submitted.get((student, assignment))
    return info.lateness.describe() if info and info.lateness.late else None


def shown(cls: Class) -> dict[tuple[str, str, str], tuple]:
    """What each notebook's page shows from the gradebook, per (student, assignment, notebook): every graded cell's
    score and comment, the raw score, the penalty and the lateness text. A page is out of date when this changes."""
    totals = {(t.student, t.assignment, t.notebook): t for t in cls.totals()}
    cells: dict[tuple[str, str, str], list[tuple]] = {}
    for c in cls.cells:
        cells.setdefault((c.student, c.assignment, c.notebook), []).append((c.grade_id, c.score, c.max_score, c.manual,
                                                                             c.comment))
    return {key: (tuple(mine), totals[key].raw_score if key in totals else None,
                  totals[key].penalty if key in totals else None, lateness_text(cls, key[0], key[1]))
            for key, mine in cells.items()}


def _course_markdown(course_dir: Path, assignment: str, notebook: str) -> set[str]:
    """The texts of the course's own markdown cells (source and release, and every kept release's: a notebook of an
    older release shows the text it was given as the course's), which a page may render."""
    from autograder.record import releases

    out = set()
    paths = [course_dir / folder / assignment / f"{notebook}.ipynb" for folder in ("source", "release")]
    for path in paths + sorted((course_dir / releases.DIR / assignment).glob(f"*/*/{notebook}.ipynb")):
        try:
            nb = nbformat.read(path, as_version=4)
        except Exception:  # noqa: BLE001 - missing or unreadable: nothing rendered as markdown from it
            continue
        out |= {_norm(c.source) for c in nb.cells if c.cell_type == "markdown" and not nbcells.is_solution(c)}
    return out


def _notebook_for(course_dir: Path, student: str, assignment: str,
                  notebook: str) -> tuple[nbformat.NotebookNode, list[str]]:
    """The autograded notebook, else the submitted one (outputs cleared), else an empty one, each read within
    collect's caps (collect.read_bounded); and what was cut or not read."""
    said: list[str] = []
    for folder, clear in (("autograded", False), ("submitted", True)):
        path = course_dir / folder / student / assignment / f"{notebook}.ipynb"
        if path.exists():
            nb, cuts = read_bounded(path)
            if nb is None:  # too large or unreadable: falls through to the next, and the page says so
                said += cuts
                continue
            if clear:
                for cell in nb.cells:
                    if cell.cell_type == "code":
                        cell.outputs, cell.execution_count = [], None
            return nb, said + cuts
    return nbformat.v4.new_notebook(), said
