"""Per-student feedback: one self-contained HTML page per graded notebook, without the hidden tests.

The page leads with the score (raw, late penalty, final), the first real error of the
notebook (a syntax error shows as a syntax error, not as the NameErrors it causes further
down), and a table of the graded cells with scores, reasons and the instructor's comments;
then the notebook, each graded cell followed by its score and reason.

Hidden tests never reach the page: their source regions are cut from every cell, and the
names of the hidden checks are scrubbed from every output and reason (the student sees what
went wrong, not how it was checked).

Everything a student controls is shown as text, never interpreted: their markdown and
prose answers literally (Markdown would swallow the asterisks of `L*T`), their code
highlighted by Pygments, their outputs as escaped text or as PNG/JPEG data URIs whose
base64 is checked. Only the course's own markdown (a cell whose text is one of the source
notebook's markdown cells) is rendered as Markdown, with raw HTML off and math converted
to MathML here (latex2mathml): the page has no script at all, loads nothing (a
Content-Security-Policy forbids scripts and every resource but inline styles and data:
images), and renders math offline in any current browser. Student text keeps no control
characters (bidirectional overrides included), and every pattern run over it is linear.
"""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path

import nbformat

from autograder.grades import CellGrade, Class
from autograder.gradinglog import NotebookLog
from autograder.tables import printable
from coursenb import cells as nbcells
from coursenb.cells import drop_hidden_lines, strip_hidden_tests

# A " [check name, seed N]" suffix (no leading \s*: that would make the pattern quadratic on a run of spaces).
CHECK_SUFFIX = re.compile(r" ?\[check [\w.]+(?:, seed \d+)?\]")
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
BASE64 = re.compile(r"[A-Za-z0-9+/=\s]+")
MAX_IMAGE = 8 << 20  # characters of base64 per image
CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; "
       "frame-ancestors 'none'")


def hidden_check_names() -> list[str]:
    """The names of every hidden check (longest first, for scrubbing)."""
    from autograder.checks import CHECKS

    return sorted(CHECKS, key=len, reverse=True)


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


# ----------------------------------------------------------------------------- text and markdown


def esc(text: object) -> str:
    """Student-controlled text as HTML text: ANSI codes dropped, control characters shown escaped."""
    return html.escape(printable(ANSI.sub("", str(text)), newlines=True), quote=True)


def _markdown():
    """Markdown for the course's own cells: CommonMark + tables + $math$, raw HTML off, math as MathML,
    images only from data: URIs."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    md = MarkdownIt("commonmark", {"html": False}).use(dollarmath_plugin).enable("table")

    def math(display: str):
        def rule(renderer, tokens, idx, options, env) -> str:
            return mathml(tokens[idx].content, display)
        return rule

    def image(renderer, tokens, idx, options, env) -> str:
        src = tokens[idx].attrGet("src") or ""
        alt = html.escape(tokens[idx].content or "image")
        return f'<img src="{html.escape(src)}" alt="{alt}">' if src.startswith("data:image/") else f"[{alt}]"

    md.add_render_rule("math_inline", math("inline"))
    md.add_render_rule("math_block", math("block"))
    md.add_render_rule("image", image)
    return md


def mathml(tex: str, display: str = "inline") -> str:
    """TeX as MathML (no script, no font download); the TeX itself, escaped, if it cannot be converted."""
    from latex2mathml.converter import convert

    try:
        return convert(tex, display=display).replace(' xmlns="http://www.w3.org/1998/Math/MathML"', "", 1)
    except Exception:  # noqa: BLE001 - latex2mathml raises many kinds on TeX it does not know
        return f'<code class="tex">{html.escape(tex)}</code>'


def _highlight(code: str) -> str:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    return highlight(printable(code, newlines=True), PythonLexer(), HtmlFormatter(nowrap=True, noclasses=True,
                                                                                  style="default"))


# ----------------------------------------------------------------------------- the page


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


def _cell_label(nb: nbformat.NotebookNode, index: int) -> str:
    """'cell 7 (your answer cell self_attention)' for a notebook cell index."""
    if not 0 <= index < len(nb.cells):
        return f"cell {index + 1}"
    cell = nb.cells[index]
    gid = nbcells.grade_id(cell)
    kind = "your answer cell" if nbcells.is_solution(cell) else "test cell" if nbcells.is_test(cell) else "cell"
    return f"cell {index + 1}" + (f" ({kind} {gid})" if gid else "")


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


def page(nb: nbformat.NotebookNode, student: str, assignment: str, notebook: str,
         grades: list[CellGrade], log: NotebookLog | None, names: list[str], course_markdown: set[str],
         raw: float, penalty: float, lateness: str | None) -> str:
    """The feedback page of one notebook (already scrubbed of hidden tests)."""
    md = _markdown()
    by_id = {g.grade_id: g for g in grades}
    reasons = {c.grade_id: scrub(c.reason, names) for c in (log.cells if log else ())}
    max_total = sum(g.max_score for g in grades)
    first = first_error(nb, log)
    first_index = first[0] if first else None
    parts = [f"<h1>Feedback for {esc(student)}: {esc(notebook)}</h1>"]
    score_line = f"<b>{_fmt(raw - penalty)} / {_fmt(max_total)}</b>"
    if penalty:
        score_line += f" &nbsp;(cells {_fmt(raw)}, late penalty &minus;{_fmt(penalty)})"
    if any(g.score is None for g in grades):
        score_line += " &nbsp;<i>some answers are still to be graded by your instructor</i>"
    parts.append(f'<div class="banner"><div>Score: {score_line}</div>'
                 + (f"<div>Submitted {esc(lateness)}</div>" if lateness else "") + "</div>")
    if log is not None and log.error:
        parts.append(f'<div class="problem"><b>The notebook could not be graded normally:</b> '
                     f"{esc(scrub(log.error, names))}</div>")
    if first is not None:
        index, what = first
        detail = _syntax_line(nb, index)
        parts.append('<div class="problem"><b>The first error in your notebook</b> is in '
                     f"{esc(_cell_label(nb, index))}: {esc(scrub(what, names))}"
                     + (f"<pre>{esc(scrub(detail, names))}</pre>" if detail else "")
                     + "<div>Errors further down may be caused by this one: fix it first.</div></div>")
    rows = []
    for g in grades:
        why = reasons.get(g.grade_id, "") if not g.manual else "graded by your instructor"
        if first_index is not None and "NameError" in why and _position(nb, g.grade_id) > first_index:
            why += f" (probably because of the first error, in cell {first_index + 1})"
        comment = f"<div class='comment'>{esc(g.comment)}</div>" if g.comment else ""
        rows.append(f"<tr><td><code>{esc(g.grade_id)}</code></td><td class='num'>{_fmt(g.score)} / {_fmt(g.max_score)}"
                    f"</td><td>{esc(why)}{comment}</td></tr>")
    parts.append("<table><thead><tr><th>graded cell</th><th>score</th><th>why</th></tr></thead><tbody>"
                 + "".join(rows) + "</tbody></table><hr>")
    for k, cell in enumerate(nb.cells):
        parts.append(_cell_html(cell, k, md, course_markdown, k == first_index))
        gid = nbcells.grade_id(cell)
        if gid in by_id and nbcells.is_graded(cell):
            g = by_id[gid]
            mark = "full marks" if g.score is not None and g.score >= g.max_score else \
                "not scored yet" if g.score is None else "lost points"
            why = "graded by your instructor" if g.manual else reasons.get(gid, "")
            comment = f"<div class='comment'>Comment: {esc(g.comment)}</div>" if g.comment else ""
            parts.append(f'<div class="grade {mark.replace(" ", "-")}"><b>{esc(gid)}: {_fmt(g.score)} / '
                         f"{_fmt(g.max_score)}</b> ({mark}){': ' + esc(why) if why else ''}{comment}</div>")
    title = f"Feedback: {student}, {notebook}"
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f'<meta name="referrer" content="no-referrer"><title>{esc(title)}</title><style>{STYLE}</style></head>'
            f"<body><main>{''.join(parts)}</main></body></html>\n")


def _position(nb: nbformat.NotebookNode, gid: str) -> int:
    return next((k for k, c in enumerate(nb.cells) if nbcells.grade_id(c) == gid), -1)


def _cell_html(cell, index: int, md, course_markdown: set[str], is_first_error: bool) -> str:
    source = _text(cell.get("source", ""))
    anchor = f' id="cell-{index + 1}"' + (' class="cell first-error"' if is_first_error else ' class="cell"')
    if cell.get("cell_type") == "markdown" and _norm(source) in course_markdown:
        return f"<section{anchor}>{md.render(source)}</section>"
    if cell.get("cell_type") != "code":
        label = "your answer, as written" if nbcells.is_solution(cell) else "your text, as written"
        return f'<section{anchor}><div class="label">{label}</div><pre class="student">{esc(source)}</pre></section>'
    outputs = "".join(_output_html(o) for o in cell.get("outputs", []))
    count = cell.get("execution_count")
    prompt = f"[{count}]" if isinstance(count, int) else "[ ]"
    return (f'<section{anchor}><div class="label">{prompt} cell {index + 1}</div>'
            f'<pre class="code">{_highlight(source)}</pre>{outputs}</section>')


def _output_html(out) -> str:
    kind = out.get("output_type")
    if kind == "stream":
        cls = "stderr" if out.get("name") == "stderr" else "stdout"
        return f'<pre class="out {cls}">{esc(_text(out.get("text", "")))}</pre>'
    if kind == "error":
        tb = "\n".join(str(t) for t in out.get("traceback") or []) or f"{out.get('ename')}: {out.get('evalue')}"
        return f'<pre class="out error">{esc(tb)}</pre>'
    if kind in ("execute_result", "display_data"):
        data = out.get("data", {})
        for mime in ("image/png", "image/jpeg"):
            value = data.get(mime)
            if isinstance(value, list):
                value = "".join(value)
            if isinstance(value, str) and len(value) <= MAX_IMAGE and BASE64.fullmatch(value) and _is_image(value, mime):
                return f'<img class="out" alt="a plot" src="data:{mime};base64,{"".join(value.split())}">'
        if "text/plain" in data:
            return f'<pre class="out">{esc(_text(data["text/plain"]))}</pre>'
    return ""


def _is_image(b64: str, mime: str) -> bool:
    """The base64 decodes and starts like a PNG or JPEG file."""
    try:
        head = base64.b64decode("".join(b64.split())[:64] + "==")[:8]
    except ValueError:
        return False
    return head.startswith(b"\x89PNG\r\n\x1a\n") if mime == "image/png" else head.startswith(b"\xff\xd8\xff")


def _norm(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def _fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:g}"


STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:#fafafa;color:#222}
main{max-width:60rem;margin:0 auto;padding:1rem 2rem;background:#fff}
h1{font-size:1.5rem}.banner{background:#eef4ff;border-left:6px solid #2a5bd7;padding:.6rem 1rem;margin:1rem 0}
.problem{background:#fff4e5;border-left:6px solid #d97706;padding:.6rem 1rem;margin:1rem 0}
table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;padding:.3rem .6rem;vertical-align:top}
td.num{text-align:right;white-space:nowrap}.comment{color:#135;margin-top:.3rem;white-space:pre-wrap}
section.cell{margin:1rem 0}.label{font-size:.8rem;color:#666}
pre{white-space:pre-wrap;word-wrap:break-word;margin:.2rem 0;padding:.5rem;font-size:.85rem;line-height:1.45}
pre.code{background:#f6f8fa;border:1px solid #e1e4e8}pre.student{background:#fffdf0;border:1px dashed #bba}
pre.out{background:#fff;border-left:3px solid #ddd}pre.stderr{background:#fff5f5}
pre.error{background:#fff0f0;border-left:3px solid #c00}.first-error{outline:3px solid #d97706}
.grade{margin:.3rem 0 1.2rem;padding:.4rem .8rem;border-radius:4px}.full-marks{background:#e8f7ec}
.lost-points{background:#fdecea}.not-scored-yet{background:#f0f0f0}img.out{max-width:100%}
"""


# ----------------------------------------------------------------------------- writing pages


def generate(course_dir: Path, cls: Class, logs: list[NotebookLog], student: str | None = None,
             assignment: str | None = None) -> list[Path]:
    """Write course_dir/feedback/<student>/<assignment>/<notebook>.html for every graded notebook."""
    course_dir = Path(course_dir)
    names = hidden_check_names()
    by_key = {(lg.student, lg.assignment, lg.notebook): lg for lg in logs}
    grades: dict[tuple[str, str, str], list[CellGrade]] = {}
    for c in cls.cells:
        grades.setdefault((c.student, c.assignment, c.notebook), []).append(c)
    totals = {(t.student, t.assignment, t.notebook): t for t in cls.totals()}
    markdown_of: dict[tuple[str, str], set[str]] = {}
    written = []
    for (s, a, nb_name), cell_grades in sorted(grades.items()):
        if (student and s != student) or (assignment and a != assignment):
            continue
        if (a, nb_name) not in markdown_of:
            markdown_of[a, nb_name] = _course_markdown(course_dir, a, nb_name)
        total = totals.get((s, a, nb_name))
        info = cls.submitted.get((s, a))
        lateness = info.lateness.describe() if info and info.lateness.late else None
        nb = scrub_notebook(_notebook_for(course_dir, s, a, nb_name), names)
        text = page(nb, s, a, nb_name, cell_grades, by_key.get((s, a, nb_name)), names, markdown_of[a, nb_name],
                    total.raw_score if total else 0.0, total.penalty if total else 0.0, lateness)
        dest = course_dir / "feedback" / s / a / f"{nb_name}.html"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
        written.append(dest)
    return written


def _course_markdown(course_dir: Path, assignment: str, notebook: str) -> set[str]:
    """The texts of the course's own markdown cells (source and release), which a page may render."""
    out = set()
    for folder in ("source", "release"):
        path = course_dir / folder / assignment / f"{notebook}.ipynb"
        try:
            nb = nbformat.read(path, as_version=4)
        except Exception:  # noqa: BLE001 - missing or unreadable: nothing rendered as markdown from it
            continue
        out |= {_norm(c.source) for c in nb.cells if c.cell_type == "markdown" and not nbcells.is_solution(c)}
    return out


def _notebook_for(course_dir: Path, student: str, assignment: str, notebook: str) -> nbformat.NotebookNode:
    """The autograded notebook, else the submitted one (outputs cleared), else an empty one."""
    for folder, clear in (("autograded", False), ("submitted", True)):
        path = course_dir / folder / student / assignment / f"{notebook}.ipynb"
        if path.exists():
            try:
                nb = nbformat.read(path, as_version=4)
            except Exception:  # noqa: BLE001 - an unreadable file falls through to the next
                continue
            if clear:
                for cell in nb.cells:
                    if cell.cell_type == "code":
                        cell.outputs, cell.execution_count = [], None
            return nb
    return nbformat.v4.new_notebook()
