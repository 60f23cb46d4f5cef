"""The course's notebook conventions: one home for every rule about cells.

Who reads what in a chapter notebook is decided here and nowhere else: the kinds of
cell (through nbgrader's own predicates), the solution and hidden-test delimiters and
how a region is cut out, the worked-solution tag, the output types a feedback page may
show, and which hidden checks a test cell calls. The release (nbgrader), the grading
engine, the feedback pages and the book all call these functions, and a test checks
that each of them strips exactly what nbgrader's release strips.

The delimiters are nbgrader's own defaults, read from its preprocessors: a line that
*contains* ``BEGIN HIDDEN TESTS`` opens a region (``### BEGIN HIDDEN TESTS``,
``## BEGIN HIDDEN TESTS`` and ``# BEGIN HIDDEN TESTS, do not edit`` alike), a line that
contains ``END HIDDEN TESTS`` closes it, and both lines go with the region.
"""
from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nbformat import NotebookNode

# A cell tagged SOLUTIONS_ONLY is in the solutions edition only: worked solutions, rubrics, and demos
# built on the reference solutions. Neither the release nor the student edition has it.
SOLUTIONS_ONLY = "solutions-only"
# A cell tagged ANSWER_OUTPUT shows what a student's answers produce (a plot of their running time
# over the measured one, a model trained with their function): the student edition keeps its code and
# drops its outputs, which the reference run made from the solutions. Students run it themselves.
ANSWER_OUTPUT = "answer-output"
# What a released solution cell holds (also set as nbgrader's ClearSolutions.code_stub).
CODE_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
# Output types a page built from a student's notebook may show: no HTML, SVG or JavaScript.
SAFE_MIME = ("text/plain", "image/png", "image/jpeg")
# The call a hidden test makes, by name: hidden_check("ch1.self_attention", self_attention).
HIDDEN_CHECK = "hidden_check"
# nbgrader's schema 3 rule for a grade_id.
GRADE_ID = re.compile(r"[a-zA-Z0-9_\-]*")  # used with fullmatch: a trailing newline is no id


@functools.cache
def _delimiters() -> tuple[str, str, str, str]:
    """nbgrader's (BEGIN SOLUTION, END SOLUTION, BEGIN HIDDEN TESTS, END HIDDEN TESTS).

    Read on first use, not at import: importing nbgrader (its package imports its Jupyter server
    extensions) is most of what importing the instructor's CLI costs, and `autograder grade` starts
    the sandboxes before it needs a delimiter."""
    from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions

    default = lambda cls, name: cls.class_traits()[name].default_value  # noqa: E731
    return (default(ClearSolutions, "begin_solution_delimeter"), default(ClearSolutions, "end_solution_delimeter"),
            default(ClearHiddenTests, "begin_test_delimeter"), default(ClearHiddenTests, "end_test_delimeter"))


# The module's delimiter names, read through `_delimiters` (module __getattr__): SOLUTION_BEGIN, SOLUTION_END,
# HIDDEN_BEGIN, HIDDEN_END, and MARKERS, every delimiter (none may reach the student edition or a feedback page).
_DELIMITER_NAMES = ("SOLUTION_BEGIN", "SOLUTION_END", "HIDDEN_BEGIN", "HIDDEN_END")


def __getattr__(name: str) -> str | tuple[str, ...]:
    if name in _DELIMITER_NAMES:
        return _delimiters()[_DELIMITER_NAMES.index(name)]
    if name == "MARKERS":
        return _delimiters()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _solution() -> tuple[str, str]:
    return _delimiters()[:2]


def _hidden() -> tuple[str, str]:
    return _delimiters()[2:]


# ---------------------------------------------------------------- kinds of cell


def nbgrader_meta(cell: NotebookNode) -> dict[str, Any]:
    """The cell's nbgrader metadata ({} when it has none or it is malformed)."""
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta if isinstance(meta, dict) else {}


def grade_id(cell: NotebookNode) -> str | None:
    """The cell's nbgrader grade_id, if it has well-formed nbgrader metadata."""
    gid = nbgrader_meta(cell).get("grade_id")
    return gid if isinstance(gid, str) else None


def points(cell: NotebookNode) -> float:
    """The points a graded cell is worth (0 for any other cell)."""
    value = nbgrader_meta(cell).get("points", 0)
    return float(value) if is_graded(cell) and isinstance(value, (int, float)) else 0.0


def is_graded(cell: NotebookNode) -> bool:
    """A cell that carries points: an autograded test or a manually graded answer (nbgrader.utils.is_grade)."""
    from nbgrader.utils import is_grade

    return bool(nbgrader_meta(cell)) and bool(is_grade(cell))


def is_solution(cell: NotebookNode) -> bool:
    """A cell the student writes (nbgrader.utils.is_solution)."""
    from nbgrader.utils import is_solution as nbgrader_is_solution

    return bool(nbgrader_meta(cell)) and bool(nbgrader_is_solution(cell))


def is_locked(cell: NotebookNode) -> bool:
    """A cell the student may not change: it comes back from the source when graded (nbgrader.utils.is_locked)."""
    from nbgrader.utils import is_locked as nbgrader_is_locked

    return bool(nbgrader_meta(cell)) and bool(nbgrader_is_locked(cell))


def is_test(cell: NotebookNode) -> bool:
    """An autograded test cell: a graded code cell that is not a solution."""
    return cell.get("cell_type") == "code" and is_graded(cell) and not is_solution(cell)


def is_manual(cell: NotebookNode) -> bool:
    """A manually graded answer: graded and a solution (the instructor scores it)."""
    return is_graded(cell) and is_solution(cell)


def tags(cell: NotebookNode) -> list[str]:
    """The cell's tags ([] when it has none or they are malformed)."""
    found = cell.get("metadata", {}).get("tags", [])
    return [t for t in found if isinstance(t, str)] if isinstance(found, list) else []


def is_solutions_only(cell: NotebookNode) -> bool:
    """A cell of the solutions edition only (worked solution, rubric, demo built on the solutions)."""
    return SOLUTIONS_ONLY in tags(cell)


def shows_answers(cell: NotebookNode) -> bool:
    """A cell whose outputs depend on graded answers: the student edition drops them."""
    return ANSWER_OUTPUT in tags(cell)


# ---------------------------------------------------------------- regions


def _split(source: str, begin: str, end: str) -> Iterator[tuple[bool, str]]:
    """(cut?, line) for each line, nbgrader's rule: a line containing `begin` opens a region, one
    containing `end` closes it; both marker lines are cut, and so is a stray `end` line."""
    inside = False
    for line in source.split("\n"):
        if begin in line:
            inside = True
            yield True, line
        elif end in line:
            inside = False
            yield True, line
        else:
            yield inside, line


def strip_hidden_tests(source: str) -> str:
    """`source` without its hidden-test regions, markers included (what nbgrader's release leaves)."""
    return "\n".join(line for inside, line in _split(source, *_hidden()) if not inside)


def has_hidden_tests(source: str) -> bool:
    """Whether `source` holds a hidden-test region."""
    begin, _ = _hidden()
    return any(begin in line for line in source.split("\n"))


def hidden_tests(source: str) -> list[str]:
    """The lines inside `source`'s hidden-test regions (markers excluded)."""
    begin, end = _hidden()
    return [line for inside, line in _split(source, begin, end) if inside and begin not in line and end not in line]


def solution_lines(source: str) -> list[str]:
    """The lines inside `source`'s solution regions (markers excluded)."""
    begin, end = _solution()
    return [line for inside, line in _split(source, begin, end) if inside and begin not in line and end not in line]


def strip_solutions(source: str) -> str:
    """`source` without its solution regions, markers included (the release puts a stub there)."""
    return "\n".join(line for inside, line in _split(source, *_solution()) if not inside)


def without_solution_markers(source: str) -> str:
    """`source` with its solution marker lines removed and the answer kept (a correct submission)."""
    begin, end = _solution()
    return "\n".join(line for line in source.split("\n") if begin not in line and end not in line)


def secret_lines(source: str) -> set[str]:
    """The stripped, non-blank lines of `source`'s hidden-test regions (markers included): what a
    traceback quoting the cell must not show."""
    kept = set(strip_hidden_tests(source).split("\n"))
    return {line.strip() for inside, line in _split(source, *_hidden()) if inside and line.strip() and line not in kept}


def drop_hidden_lines(text: str) -> str:
    """`text` (a traceback, an error message) without the lines from a BEGIN HIDDEN TESTS line to the
    matching END line or to the end of `text` (a traceback shows a few lines of context after the
    BEGIN line, without the END), and without any line that mentions the hidden_check call."""
    kept, hiding = [], False
    begin, end = _hidden()
    for line in text.splitlines(keepends=True):
        if begin in line:
            hiding = True
        elif end in line:
            hiding = False
        elif not hiding and HIDDEN_CHECK not in line:
            kept.append(line)
    return "".join(kept)


# ---------------------------------------------------------------- hidden checks

_CHECK_CALL = re.compile(rf"""\b{HIDDEN_CHECK}\(\s*["']([\w.\-]+)["']""")


def hidden_check_names(source: str) -> list[str]:
    """The hidden checks `source` calls (hidden_check("name", ...)), in order, without repeats."""
    return list(_hidden_check_names(source))


@functools.lru_cache(maxsize=4096)  # a grader reads the same source cells for every notebook it grades
def _hidden_check_names(source: str) -> tuple[str, ...]:
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a cell with IPython syntax: the call's literal form is enough
        return tuple(dict.fromkeys(_CHECK_CALL.findall(source)))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == HIDDEN_CHECK \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            names.append((node.lineno, node.col_offset, node.args[0].value))
    return tuple(dict.fromkeys(name for *_, name in sorted(names)))


# ---------------------------------------------------------------- whole notebooks


def without_solutions_only(nb: NotebookNode) -> NotebookNode:
    """A copy of `nb` without its solutions-only cells (what the course's source notebook holds)."""
    import nbformat

    nb = nbformat.from_dict(nb)
    nb.cells = [c for c in nb.cells if not is_solutions_only(c)]
    return nb


def release(nb: NotebookNode) -> NotebookNode:
    """What a student receives: nbgrader's release transform (stubs, no hidden tests, no
    solutions-only cells); outputs, if any, are kept."""
    from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions

    nb = without_solutions_only(nb)
    nb, _ = ClearSolutions(code_stub={"python": CODE_STUB}).preprocess(nb, {})
    nb, _ = ClearHiddenTests().preprocess(nb, {})
    return nb


def student_view(nb: NotebookNode) -> NotebookNode:
    """An executed chapter as the student edition shows it: the release, with the outputs of the
    cells that show answers dropped."""
    nb = release(nb)
    for cell in nb.cells:
        if cell.get("cell_type") == "code" and shows_answers(cell):
            cell.outputs = []
    return nb
