"""Per-student feedback: one HTML page per graded notebook, without the hidden tests.

The page is the student's autograded notebook (outputs included) with a score table on
top and, under each graded cell, its score and the grader's one-line reason. Hidden
tests never reach the page: their source regions are cut from every cell, and the names
of the hidden checks are scrubbed from every output and reason (the student sees what
went wrong, not how it was checked).
"""
from __future__ import annotations

import html
import re
from pathlib import Path

import nbformat

from autograder.grades import Class
from autograder.gradinglog import NotebookLog
from coursenb.cells import drop_hidden_lines, strip_hidden_tests

CHECK_SUFFIX = re.compile(r"\s*\[check [\w.]+(?:, seed \d+)?\]")


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
                out.text = scrub(out.text, names)
            if "evalue" in out:
                out.evalue = scrub(out.evalue, names)
            if "traceback" in out:
                out.traceback = [scrub(line, names) for line in out.traceback]
            for mime, value in list(out.get("data", {}).items()):
                if isinstance(value, str) and mime.startswith("text/"):
                    out.data[mime] = scrub(value, names)
    return nb


def annotate(nb: nbformat.NotebookNode, student: str, scores: dict[str, tuple[float | None, float]],
             log: NotebookLog | None, names: list[str]) -> nbformat.NotebookNode:
    """`nb` with a score table on top and each graded cell's score and reason under it."""
    reasons = {c.grade_id: scrub(c.reason, names) for c in (log.cells if log else ())}
    total = sum(s or 0.0 for s, _ in scores.values())
    max_total = sum(m for _, m in scores.values())
    rows = [f"| `{gid}` | {_fmt(s)} / {_fmt(m)} | {_esc(reasons.get(gid, ''))} |" for gid, (s, m) in scores.items()]
    header = [f"# Feedback for {_esc(student)}: {_fmt(total)} / {_fmt(max_total)}", ""]
    if log and log.error:
        header += [f"**The notebook could not be graded normally:** {_esc(scrub(log.error, names))}", ""]
    header += ["| graded cell | score | why |", "|---|---|---|", *rows]
    cells = [nbformat.v4.new_markdown_cell("\n".join(header))]
    for cell in nb.cells:
        cells.append(cell)
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.metadata.get("nbgrader", {}).get("grade") and gid in scores:
            s, m = scores[gid]
            mark = "full marks" if s is not None and s >= m else "lost points" if s is not None else "not scored"
            reason = reasons.get(gid, "")
            cells.append(nbformat.v4.new_markdown_cell(
                f"**{gid}: {_fmt(s)} / {_fmt(m)}** ({mark}){': ' + _esc(reason) if reason else ''}"))
    nb = nbformat.from_dict(nb)
    nb.cells = cells
    return nb


def _fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:g}"


def _esc(text: str) -> str:
    """Escape text for a markdown table cell (no HTML, no pipes, one line)."""
    return html.escape(" ".join(text.split())).replace("|", "\\|")


SAFE_TAGS = ["a", "abbr", "b", "blockquote", "br", "code", "del", "div", "em", "h1", "h2", "h3", "h4", "h5",
             "h6", "hr", "i", "img", "li", "ol", "p", "pre", "span", "strong", "sub", "sup", "table", "tbody",
             "td", "th", "thead", "tr", "ul"]
SAFE_ATTRIBUTES = {"*": ["class", "id", "style"], "a": ["href", "title"], "img": ["src", "alt", "width", "height"],
                   "td": ["align", "style"], "th": ["align", "style"]}


def clean_html(element: str | bytes) -> str:
    """Student-controlled HTML (markdown, rich outputs) without scripts, handlers or frames."""
    import bleach
    from bleach.css_sanitizer import CSSSanitizer

    text = element.decode() if isinstance(element, bytes) else str(element)
    return bleach.clean(text, tags=SAFE_TAGS, attributes=SAFE_ATTRIBUTES, protocols=["http", "https", "data"],
                        css_sanitizer=CSSSanitizer(), strip=True)


def render(nb: nbformat.NotebookNode) -> str:
    """The notebook as a standalone HTML page; markdown and HTML outputs sanitized."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab", sanitize_html=True)
    exporter.register_filter("clean_html", clean_html)
    body, _ = exporter.from_notebook_node(nb)
    return body


def generate(course_dir: Path, cls: Class, logs: list[NotebookLog], student: str | None = None,
             assignment: str | None = None) -> list[Path]:
    """Write course_dir/feedback/<student>/<assignment>/<notebook>.html for every graded notebook."""
    course_dir = Path(course_dir)
    names = hidden_check_names()
    by_key = {(lg.student, lg.assignment, lg.notebook): lg for lg in logs}
    scores: dict[tuple[str, str, str], dict[str, tuple[float | None, float]]] = {}
    for c in cls.cells:
        scores.setdefault((c.student, c.assignment, c.notebook), {})[c.grade_id] = (c.score, c.max_score)
    written = []
    for (s, a, nb_name), cell_scores in sorted(scores.items()):
        if (student and s != student) or (assignment and a != assignment):
            continue
        order = list(cls.cell_max.get((a, nb_name), {}))
        cell_scores = {gid: cell_scores[gid] for gid in sorted(cell_scores, key=lambda g: order.index(g) if g in order else len(order))}
        source = _notebook_for(course_dir, s, a, nb_name)
        nb = annotate(scrub_notebook(source, names), s, cell_scores, by_key.get((s, a, nb_name)), names)
        dest = course_dir / "feedback" / s / a / f"{nb_name}.html"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(render(nb), encoding="utf-8")
        written.append(dest)
    return written


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
