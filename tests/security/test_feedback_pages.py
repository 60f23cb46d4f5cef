"""Feedback pages against what a student controls: their text, code and outputs become text on a page
with no script, no remote resource and no styling of theirs; a syntax error is shown as the first error;
math renders offline. Fast: pages are built from notebooks made here, no grading run."""
from __future__ import annotations

import base64
import html
import subprocess
import sys
from html.parser import HTMLParser

import nbformat
import pytest

from autograder import course, feedback
from autograder.grades import CellGrade
from autograder.gradinglog import CellLog, Incident, NotebookLog
from tests.adversarial import outputs

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 40).decode()
OUR_CLASSES = {"banner", "problem", "comment", "num", "cell", "first-error", "label", "code", "student", "out",
               "stdout", "stderr", "error", "grade", "full-marks", "lost-points", "not-scored-yet", "tex", "math"}


def pygments_classes() -> set[str]:
    """The class names Pygments gives the spans of highlighted code (their colours are in the page's stylesheet)."""
    from pygments.token import STANDARD_TYPES

    return set(STANDARD_TYPES.values()) - {""}


class Tags(HTMLParser):
    """Every tag and attribute of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append((tag, dict(attrs)))


def no_dead_link(parser: Tags) -> None:
    """Every link of the page leads to a place on the page itself (the page travels alone, as a file)."""
    ids = {attrs["id"] for _, attrs in parser.tags if attrs.get("id")}
    for tag, attrs in parser.tags:
        if tag == "a":
            assert (attrs.get("href") or "").startswith("#") and attrs["href"][1:] in ids, attrs


def solution(source: str, gid: str, cell_type: str = "code"):
    meta = {"nbgrader": {"grade": False, "grade_id": gid, "locked": False, "schema_version": 3, "solution": True}}
    make = nbformat.v4.new_code_cell if cell_type == "code" else nbformat.v4.new_markdown_cell
    return make(source, metadata=meta)


def graded_cell(source: str, gid: str, points: float = 2):
    meta = {"nbgrader": {"grade": True, "grade_id": gid, "locked": True, "points": points, "schema_version": 3,
                         "solution": False}}
    return nbformat.v4.new_code_cell(source, metadata=meta)


def build(nb, grades, log=None, course_markdown=(), raw=None, penalty=0.0, lateness=None) -> str:
    raw = sum(g.score or 0 for g in grades) if raw is None else raw
    return feedback.page(nb, "eve", "ch1", "ch1_parallel_time", grades, log, ["ch1.self_attention"],
                         {feedback._norm(t) for t in course_markdown}, raw, penalty, lateness)


def hostile_notebook():
    md = ('<script>alert(1)</script><img src="http://tracker.example/p.gif">'
          '<div class="banner" style="position:fixed;top:0">Score: 11 / 11</div>'
          '<a href="javascript:alert(1)">x</a> <iframe src="//evil"></iframe> L*T and L*(J+K) *not italic*')
    code = graded_cell("print('<b>hi</b>')\nraise ValueError('<script>x</script>')", "test_a")
    code.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="<script>alert(2)</script>\x1b[31mred\x1b[0m\u202eevil"),
        nbformat.v4.new_output("display_data", data={"text/html": "<script>alert(3)</script>",
                                                     "image/svg+xml": "<svg onload=alert(4)>",
                                                     "text/plain": "<img src=x onerror=alert(5)>"}),
        nbformat.v4.new_output("display_data", data={"image/png": 'AAAA" onerror="alert(6)'}),
        nbformat.v4.new_output("display_data", data={"image/png": PNG}),
        nbformat.v4.new_output("error", ename="ValueError", evalue="<script>x</script>",
                               traceback=["\x1b[0;31mValueError\x1b[0m: <script>x</script>"]),
    ]
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(md), solution(md, "prose", "markdown"), code])


def test_nothing_a_student_wrote_runs_loads_or_styles_the_page() -> None:
    grades = [CellGrade("eve", "ch1", "nb", "test_a", 0.0, 2.0, comment="<script>alert(7)</script> see L*T")]
    log = NotebookLog("eve", "ch1", "nb", None, None, "t", (CellLog("test_a", 0.0, 2.0, "<b>why</b>\x1b[2J"),))
    text = build(hostile_notebook(), grades, log)
    parser = Tags()
    parser.feed(text)
    assert "<script" not in text.lower() and "<iframe" not in text.lower()
    no_dead_link(parser)
    assert "\x1b" not in text and "\u202e" not in text
    for tag, attrs in parser.tags:
        assert not any(a.startswith("on") or "javascript:" in (v or "") for a, v in attrs.items()), (tag, attrs)
        if tag == "img":
            assert attrs["src"].startswith("data:image/png;base64,"), attrs
        for cls in (attrs.get("class") or "").split():
            assert cls in OUR_CLASSES or (tag == "span" and cls in pygments_classes()), (tag, cls)
    assert outputs.page_problems(text) == []
    assert [t for t, _ in parser.tags].count("img") == 1  # the one real PNG; the forged one is dropped
    assert 'http-equiv="Content-Security-Policy"' in text and "default-src 'none'" in text
    assert "L*T and L*(J+K) *not italic*" in text  # literal: no Markdown applied to student text
    assert "<em>" not in text
    assert "&lt;div class=&#34;banner&#34;" in text  # the forged banner is shown as text


def test_course_markdown_is_rendered_with_offline_math() -> None:
    intro = r"Merge the weights: $\tilde W^Q[h, j, j'] = \frac{1}{\sqrt{K}} \sum_k W^Q W^K$ with **care**."
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(intro),
                                         nbformat.v4.new_markdown_cell(intro + " (copied into my own cell, edited)")])
    text = build(nb, [], course_markdown=[intro])
    assert "<math" in text and "<strong>care</strong>" in text
    assert text.count("<math") == 1  # the student's edited copy is text
    lower = text.lower()
    for remote in ("mathjax", "cdn", "require.js", "http://", "https://", "<script", "<link"):
        assert remote not in lower, remote
    assert "<code class=\"tex\">" in build(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        r"$\notacommand{x$")]), [], course_markdown=[r"$\notacommand{x$"]) or True


def test_a_syntax_error_leads_the_page() -> None:
    bad = solution("def self_attention(M, WQ, WK, WV):\n    return (M +", "self_attention")
    bad.outputs = [nbformat.v4.new_output("error", ename="SyntaxError", evalue="'(' was never closed (3456, line 2)",
                                          traceback=["  Cell In[3], line 2", "    return (M +", "           ^",
                                                     "SyntaxError: '(' was never closed"])]
    t1 = graded_cell("expect(self_attention)", "test_self_attention")
    t1.outputs = [nbformat.v4.new_output("error", ename="NameError", evalue="name 'self_attention' is not defined",
                                         traceback=["NameError: name 'self_attention' is not defined"])]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("## 1.2 Multi-head attention\n\nintro"), bad, t1])
    log = NotebookLog("eve", "ch1", "nb", None, None, "t",
                      (CellLog("test_self_attention", 0.0, 4.0, "the cell raised NameError: name 'self_attention' "
                                                                  "is not defined"),),
                      incidents=(Incident(2, "test_self_attention", "error", "raised NameError: name ..."),
                                 Incident(1, "self_attention", "error", "raised SyntaxError: '(' was never closed")))
    text = build(nb, [CellGrade("eve", "ch1", "nb", "test_self_attention", 0.0, 4.0)], log)
    first = text.index("The first error in your notebook")
    assert first < text.index("NameError")
    lead = text[first:text.index("</div></div>", first)]
    where = "your answer cell self_attention in section 1.2 Multi-head attention"  # JupyterLab numbers no cell
    assert where in lead and "SyntaxError" in lead and "return (M +" in lead and "cell 2" not in lead
    assert f"probably because of the first error, in {where}" in text


def test_late_penalty_and_comments_are_on_the_page() -> None:
    nb = nbformat.v4.new_notebook(cells=[solution("It is L*T, since ...", "prose", "markdown")])
    nb.cells[0].metadata.nbgrader.update(grade=True, points=3)
    grades = [CellGrade("eve", "ch1", "nb", "prose", 2.0, 3.0, manual=True, comment="Right order; say why L*T.")]
    text = build(nb, grades, raw=2.0, penalty=0.4, lateness="1 d 2 h late")
    assert "<b>1.6 / 3</b>" in text and "late penalty &minus;0.4" in text and "Submitted 1 d 2 h late" in text
    assert "Comment: Right order; say why L*T." in text and "graded by your instructor" in text
    assert "It is L*T, since ..." in text


@pytest.mark.slow
def test_no_pattern_is_quadratic_on_student_output(tmp_path) -> None:
    """A megabyte and more of adversarial output through every pattern the page runs: finishes (a quadratic pattern would take
    hours: the generous timeout only guards the run)."""
    code = """
import nbformat
from autograder import feedback
from autograder.grades import CellGrade
n = 200_000
evil = [" " * n + "x", "[check " * (n // 7), "\\x1b[" + "1;" * (n // 2), "\\x1b[" * (n // 2),
        "hidden test " * (n // 12), "#" * n + "\\n", "*" * n, "$" * n, "[" * n + "]" * n]
cells = []
for k, text in enumerate(evil):
    c = nbformat.v4.new_code_cell(text[:1000])
    c.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text),
                 nbformat.v4.new_output("error", ename="E", evalue=text, traceback=[text])]
    cells += [c, nbformat.v4.new_markdown_cell(text)]
nb = feedback.scrub_notebook(nbformat.v4.new_notebook(cells=cells), feedback.hidden_check_names())
page = feedback.page(nb, "eve", "ch1", "nb", [], None, [], set(), 0, 0, None)
print(len(page))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900, cwd=course.ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert int(proc.stdout) > 2_000_000


@pytest.mark.parametrize("text, expected", [
    ("wrong [check ch1.self_attention, seed 5]", "wrong"),
    ("hidden test ch1.self_attention failed", "a hidden test failed"),
])
def test_scrub_removes_check_names(text, expected) -> None:
    assert feedback.scrub(text, ["ch1.self_attention"]) == expected


def test_the_page_names_no_internal_exception_explains_a_stub_and_has_no_dead_link() -> None:
    intro = "## 1.3 Layers\n\nThe book's letters (the [notation page](../front/notation.md) has the whole table)."
    stub = solution("def transformer(M, layers):\n    # YOUR CODE HERE\n    raise NotImplementedError()", "transformer")
    t1 = graded_cell("check_transformer(transformer)", "test_transformer")
    t1.outputs = [nbformat.v4.new_output("error", ename="NotImplementedError", evalue="",
                                         traceback=["NotImplementedError: "])]
    t2 = graded_cell("check_layer(self_attention)", "test_self_attention")
    t2.outputs = [nbformat.v4.new_output("error", ename="Explained", evalue="the scores are not scaled by 1/sqrt(K).",
                                         traceback=["Explained: the scores are not scaled by 1/sqrt(K)."])]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(intro), stub, t1, t2])
    log = NotebookLog("eve", "ch1", "nb", None, None, "t",
                      (CellLog("test_transformer", 0.0, 2.0, "the cell raised NotImplementedError: "),
                       CellLog("test_self_attention", 0.0, 2.0,
                               "the cell raised Explained: the scores are not scaled by 1/sqrt(K).")),
                      incidents=(Incident(2, "test_transformer", "error", "raised NotImplementedError: "),
                                 Incident(3, "test_self_attention", "error", "raised Explained: the scores are not "
                                                                             "scaled by 1/sqrt(K).")))
    grades = [CellGrade("eve", "ch1", "nb", "test_transformer", 0.0, 2.0),
              CellGrade("eve", "ch1", "nb", "test_self_attention", 0.0, 2.0)]
    page = build(nb, grades, log, course_markdown=[intro])
    text = html.unescape(page)
    assert "Explained" not in text and "the scores are not scaled by 1/sqrt(K)." in text
    assert "not answered yet" in text and feedback.STUB_NOTE in text
    assert "notation page" in text and "notation.md" not in text  # no release carries the book's pages
    parser = Tags()
    parser.feed(page)
    no_dead_link(parser)
    assert "the test cell test_transformer in section 1.3 Layers" in text


def test_a_file_that_could_not_be_read_says_so_and_to_submit_again() -> None:
    """Issue 33.5: a truncated notebook's page says the file could not be read and how to submit it again; no
    'raised NotGraded', and no 'first error' of a notebook that never ran (on main: 'raised NotGraded', no advice)."""
    problem = "the submitted nb.ipynb could not be read: Unterminated string (char 11)"
    t1 = graded_cell("check_transformer(transformer)", "test_transformer")
    t1.outputs = [nbformat.v4.new_output("error", ename="NotGraded", evalue=problem, traceback=[])]
    log = NotebookLog("eve", "ch1", "nb", None, None, "t", (CellLog("test_transformer", 0.0, 2.0, problem, status="not run"),),
                      error=problem)
    text = html.unescape(build(nbformat.v4.new_notebook(cells=[t1]), [CellGrade("eve", "ch1", "nb", "test_transformer",
                                                                                0.0, 2.0)], log))
    assert "NotGraded" not in text and "could not be read" in text and feedback.RESUBMIT in text
    assert "The first error in your notebook" not in text


@pytest.mark.parametrize("reason, plain", [
    ("the cell raised Explained: shape (4, 6), expected (4, 8).", "a test failed: shape (4, 6), expected (4, 8)."),
    ("raised CellStopped: the cell ran longer than 60 s", "a test failed: the cell ran longer than 60 s"),
    ("the cell raised AssertionError: ", "an assert in the cell failed (it gives no message)"),
    ("the cell raised NotImplementedError: ", "not answered yet: the answer cell still holds the release's stub "
                                              "(it raises NotImplementedError)"),
    ("the cell raised ValueError: bad", "the cell raised ValueError: bad"),
    ("passed", "passed"),
])
def test_plain_reasons(reason, plain) -> None:
    assert feedback.plain_reason(reason) == plain


def test_a_behaviour_checks_figure_reaches_the_page_on_pass_and_fail() -> None:
    """The statistic, its bound and the margin: a passing cell's reason keeps its checks' figures (the engine's
    scoring), and the feedback page shows them as it shows a failure's."""
    from autograder.engine import scoring
    from autograder.gradinglog import figure, figures

    source = 'hidden_check("ch4.blank_lm", fit_blank_lm)'
    cell = graded_cell(source, "test_blank_lm", 3)
    cell.outputs = []
    passed = f"after 150 training steps the held-out gap is small {figure('gap in nats', 0.071, 0.1)}"
    failed = f"after 150 training steps the held-out gap is large {figure('gap in nats', 0.765, 0.1)}"
    plain = "all 10 trials match the reference"
    verdicts = {"pass": (True, passed), "fail": (False, failed), "plain": (True, plain)}
    scored = {k: scoring.score_cell(nbformat.from_dict(cell), {"status": "ok"}, [("ch4.blank_lm", [b"x"])],
                                    lambda name, blobs, v=v: v, None) for k, v in verdicts.items()}
    assert scored["pass"].score == 3 and figures(scored["pass"].reason) == [("gap in nats", 0.071, 0.1, 0.029)]
    assert scored["fail"].score == 0 and figures(scored["fail"].reason)[0][3] == pytest.approx(-0.665)
    assert scored["plain"].reason == "passed"  # a check without a figure says nothing more
    for k in ("pass", "fail"):
        log = NotebookLog("eve", "ch4", "nb", None, None, "t", (CellLog("test_blank_lm", scored[k].score, 3.0,
                                                                        scored[k].reason),))
        page = html.unescape(build(nbformat.v4.new_notebook(cells=[cell]),
                                   [CellGrade("eve", "ch4", "nb", "test_blank_lm", scored[k].score, 3.0)], log))
        assert "bound 0.1, margin " + ("0.029" if k == "pass" else "-0.665") in page


def test_the_sanitiser_keeps_no_attribute_that_moves_styles_or_links() -> None:
    """Issue 32.4, past latex2mathml: MathML written by hand (as a future converter might pass it through) keeps its
    elements and text but no style, link, id, handler, colour, negative or huge length, or enlarging script level."""
    from autograder import pages

    forged = ('<p><math display="block"><mstyle scriptlevel="-20" mathbackground="#fff" mathcolor="#fff">'
              '<mpadded voffset="-900px" lspace="-40em" width="0"><mi href="https://evil.example" style="position:fixed"'
              ' id="banner" onclick="x()" class="banner">x</mi></mpadded><mspace width="-900px" height="999em"/>'
              '<mo lspace="0.2222em">+</mo></mstyle></math><a href="https://evil.example">see</a></p>')
    clean = pages.sanitise(forged)
    assert clean == ('<p><math display="block"><mstyle><mpadded width="0"><mi>x</mi></mpadded><mspace></mspace>'
                     '<mo lspace="0.2222em">+</mo></mstyle></math>see</p>'), clean
    assert 'href="https://evil.example"' in pages.sanitise(forged, links=True)  # the course's own links stay
