"""Submissions that attack the grader, one `Attack` per student, graded in one batch with honest students.

An attack either replaces one solution cell's source (`cell`, `source`: `{ref}` stands for
the reference solution of that cell, `{wrong:<cell>}` / `{wrong:<cell>:<k>}` for the
first / k-th wrong one of that cell in solutions/mistakes, `{repo}`, `{course}` and `{other}`
for the repository, the course directory and another checkout beside it (under /tmp, holding
solutions/)) or changes the whole notebook (`mutate`: returns a notebook, or raw bytes to submit).
`lost` are the test cells that must score 0 ("all": every one); every other test cell must
get full marks. `feedback` must appear in the student's grading log or the autograded notebook's
outputs (not its sources: an attack's code may spell it). `context` gives `build` what it fills in.
"""
from __future__ import annotations

import importlib
import importlib.util
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nbformat


@dataclass(frozen=True)
class Attack:
    """One adversarial submission and what the grader must make of it."""

    name: str
    cell: str | None = None
    source: str = ""
    lost: tuple[str, ...] | str = ()
    feedback: str = ""
    why: str = ""
    mutate: Callable[[nbformat.NotebookNode, dict], nbformat.NotebookNode | bytes] | None = None


def attacks_for(assignment: str) -> list[Attack]:
    """The attacks of chapter `assignment` (e.g. 'ch1'); none for a chapter without a module here."""
    if importlib.util.find_spec(f"tests.adversarial.{assignment}") is None:
        return []
    return importlib.import_module(f"tests.adversarial.{assignment}").ATTACKS


def expected(points: dict[str, float], attack: Attack) -> dict[str, float]:
    """{grade_id: points} an attack must get, of a notebook's `points`."""
    return {g: 0.0 if attack.lost == "all" or g in attack.lost else p for g, p in points.items()}


def context(assignment: str, course_dir: Path, other: Path | str = "") -> dict:
    """What `build` fills into an attack's source: its chapter, this repository, the course, another checkout."""
    from autograder import course

    return {"assignment": assignment, "repo": course.ROOT, "course": course_dir.resolve(), "other": other}


def cell(nb: nbformat.NotebookNode, grade_id: str) -> nbformat.NotebookNode:
    """The cell of `nb` with this grade_id."""
    found = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id]
    if len(found) != 1:
        raise KeyError(grade_id)
    return found[0]


def build(attack: Attack, source: nbformat.NotebookNode, context: dict) -> nbformat.NotebookNode | bytes:
    """The submission of `attack`, made from the course's source notebook."""
    nb = nbformat.from_dict(source)
    if attack.mutate is not None:
        return attack.mutate(nb, context)
    target = cell(nb, attack.cell)
    target.source = fill(attack.source, target.source, context)
    return nb


def fill(template: str, ref: str, context: dict) -> str:
    """Expand {ref}, {wrong:<cell>}, {repo}, {course}, {other} in an attack's source."""
    from solutions.mistakes import source_of, wrong_for

    text = textwrap.dedent(template).strip("\n")
    seen: dict[str, int] = {}
    for w in wrong_for(context["assignment"]):
        k = seen[w.cell] = seen.get(w.cell, -1) + 1
        if f"{{wrong:{w.cell}" not in text:
            continue
        body = source_of(w, context["assignment"])
        text = text.replace(f"{{wrong:{w.cell}:{k}}}", body).replace(f"{{wrong:{w.cell}}}", body)
    for key in ("repo", "course", "other"):
        text = text.replace(f"{{{key}}}", str(context.get(key, "")))
    return text.replace("{ref}", ref)
