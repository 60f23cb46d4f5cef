"""The class report: what the class got, and where it lost points, counted so that it tells the truth.

* per chapter: students, mean, median, full marks, zero, late (final scores);
* per graded cell: how many graded submissions lost points on it, and how: a hidden check
  failed, the cell's own (visible) test or code failed first, the cell was stopped or not
  run, the notebook could not be run at all; with the most common failure messages grouped
  (numbers and quoted names folded, so "shape (4, 6)" and "shape (5, 6)" are one message);
* per hidden check: every submission whose cell failed fails the check too, whether the
  check ran and failed or the cell failed before it could run (a wrong answer usually
  fails a visible test first, so counting only the checks that ran would hide most of it);
* per behaviour check and submission, its figure: the statistic, its bound and the margin, on
  a pass as on a fail (`autograder.gradinglog.figure`, read back from the grading log's reasons);
* plots with integer count axes: a score distribution per graded cell, each chapter's
  totals as a dot plot whose dots at equal scores stand side by side, and the failed checks.

Every table is also written beside the plots: `report/index.html` (the tables and the plots,
one page with no script) and one CSV per table (`summary.csv`, `cells.csv`, `checks.csv`,
`figures.csv`). Columns are named for what they count; a chapter nobody submitted says
"no submissions" where a mean would be undefined.
"""
from __future__ import annotations

import base64
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from autograder import export
from autograder.grades import Class, summary_stats
from autograder.gradinglog import NotebookLog, figures
from autograder.pages import render
from coursenb.cells import grade_id, hidden_check_names, is_test

SUMMARY_HEADERS = ["chapter", "points", "submissions", "mean final score", "median final score",
                   "with full marks", "with 0", "charged as late"]
CELL_HEADERS = ["chapter", "graded cell", "points", "graded submissions", "submissions that lost points",
                "to a hidden check", "to a visible test or error", "stopped or not run"]
CHECK_HEADERS = ["hidden check", "graded cell", "graded submissions", "failed in all", "the check failed",
                 "the cell failed before it"]
FIGURE_HEADERS = ["chapter", "graded cell", "student", "verdict", "statistic", "value", "bound", "margin"]
NO_SUBMISSIONS = "no submissions"


def chapter_summary(cls: Class) -> list[list[object]]:
    """Rows of SUMMARY_HEADERS (final scores of the submissions; late: charged by the policy)."""
    rows = []
    max_by = cls.assignment_max()
    totals = cls.assignment_totals()
    for assignment, scores in _submitted_totals(cls).items():
        s = summary_stats(scores, max_by[assignment])
        late = sum(1 for (_, a), t in totals.items() if a == assignment and t.lateness and t.lateness.days > 0)
        mean, median = (s["mean"], s["median"]) if scores else (NO_SUBMISSIONS, NO_SUBMISSIONS)
        rows.append([assignment, max_by[assignment], s["students"], mean, median, s["full"], s["zero"], late])
    return rows


def cell_rows(cells: list[CellFailures]) -> list[list[object]]:
    """Rows of CELL_HEADERS: the graded cells some submission was graded on."""
    return [[c.assignment, c.grade_id, c.points, c.graded, c.failed, c.how.get("hidden check", 0),
             c.how.get("visible test or error", 0), c.how.get("stopped or not run", 0) + c.how.get("notebook not run", 0)]
            for c in cells if c.graded]


def check_rows(checks: list[CheckFailures]) -> list[list[object]]:
    """Rows of CHECK_HEADERS, the checks failed most often first."""
    return [[c.name, c.grade_id, c.graded, c.failed, c.failed_check, c.failed_before] for c in checks if c.graded]


def figure_rows(logs: list[NotebookLog]) -> list[list[object]]:
    """Rows of FIGURE_HEADERS: every figure a graded cell's reason carries (a behaviour check's statistic, bound
    and margin), passed or failed, per submission."""
    rows = []
    for log in sorted(logs, key=lambda lg: (lg.assignment, lg.student)):
        for cell in log.cells:
            for name, value, bound, margin in figures(cell.reason):
                rows.append([log.assignment, cell.grade_id, log.student, "passed" if cell.passed else "failed",
                             name, f"{value:.3g}", f"{bound:g}", f"{margin:.3g}"])
    return rows


def _submitted_totals(cls: Class) -> dict[str, list[float]]:
    """assignment -> the final totals of the students who submitted it."""
    out: dict[str, list[float]] = {a: [] for a in cls.assignments()}
    for t in cls.assignment_totals().values():
        if t.status != "missing":
            out[t.assignment].append(t.score)
    return out


# ----------------------------------------------------------------------------- failures


@dataclass
class CellFailures:
    """How the graded submissions did on one graded cell."""

    assignment: str
    notebook: str
    grade_id: str
    points: float
    graded: int = 0
    failed: int = 0
    how: Counter = field(default_factory=Counter)  # hidden check, visible test or error, stopped, not run
    messages: Counter = field(default_factory=Counter)  # grouped failure messages


@dataclass
class CheckFailures:
    """How the graded submissions did on one hidden check."""

    name: str
    grade_id: str
    graded: int = 0
    failed_check: int = 0  # the check ran and failed
    failed_before: int = 0  # the cell failed before the check could run (a visible test, an error, not run)

    @property
    def failed(self) -> int:
        return self.failed_check + self.failed_before


def cell_checks(course_dir: Path, assignment: str, notebook: str) -> dict[str, list[str]]:
    """{grade_id: hidden checks it calls} of the course's source notebook."""
    import nbformat

    path = Path(course_dir) / "source" / assignment / f"{notebook}.ipynb"
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception:  # noqa: BLE001 - no source: no check names
        return {}
    return {grade_id(c): hidden_check_names(c.source) for c in nb.cells if is_test(c) and grade_id(c)}


def failures(cls: Class, logs: list[NotebookLog], course_dir: Path) -> tuple[list[CellFailures], list[CheckFailures]]:
    """Per graded cell and per hidden check, how many graded submissions failed it, and how."""
    by_key = {(lg.student, lg.assignment, lg.notebook): lg for lg in logs}
    cells: dict[tuple[str, str, str], CellFailures] = {}
    checks: dict[tuple[str, str], CheckFailures] = {}
    names = {(a, nb): cell_checks(course_dir, a, nb) for a, nb, _ in cls.notebooks}
    for (a, nb), points in cls.cell_max.items():
        for gid, pts in points.items():
            cells[a, nb, gid] = CellFailures(a, nb, gid, pts)
            for name in names.get((a, nb), {}).get(gid, []):
                checks.setdefault((name, gid), CheckFailures(name, gid))
    for grade in cls.cells:
        if grade.score is None:
            continue
        entry = cells.setdefault((grade.assignment, grade.notebook, grade.grade_id),
                                 CellFailures(grade.assignment, grade.notebook, grade.grade_id, grade.max_score))
        entry.graded += 1
        mine = [checks[n, grade.grade_id] for n in names.get((grade.assignment, grade.notebook), {}).get(grade.grade_id, [])]
        for check in mine:
            check.graded += 1
        if grade.score >= grade.max_score:
            continue
        entry.failed += 1
        log = by_key.get((grade.student, grade.assignment, grade.notebook))
        cell_log = log.cell(grade.grade_id) if log else None
        failed_checks = set(cell_log.failed_checks) if cell_log else set()
        if grade.manual:  # the grader's score and comment, whatever the engine's log says of the cell
            how, message = "graded by hand", f"graded by hand: {grade.comment}" if grade.comment else \
                "graded by hand (no comment)"
        elif log is not None and log.error:
            how, message = "notebook not run", log.error
        elif cell_log is None:
            how, message = "no log", "no grading log for this notebook"
        elif failed_checks:
            how, message = "hidden check", cell_log.reason
        elif cell_log.status in ("killed", "skipped", "not run"):
            how, message = "stopped or not run", cell_log.reason
        else:
            how, message = "visible test or error", cell_log.reason
        entry.how[how] += 1
        entry.messages[group_message(message)] += 1
        for check in mine:
            if check.name in failed_checks:
                check.failed_check += 1
            else:
                check.failed_before += 1
    return list(cells.values()), sorted(checks.values(), key=lambda c: (-c.failed, c.name))


_QUOTED = re.compile(r"'[^'\n]{0,80}'|\"[^\"\n]{0,80}\"")
_NUMBER = re.compile(r"\b\d+(?:\.\d+)?(?:e[+-]?\d+)?\b")


def group_message(message: str) -> str:
    """A failure message with its numbers as # and short quoted text as '…': one group per kind of mistake."""
    first = next((line.strip() for line in str(message).splitlines() if line.strip()), "")[:300]
    return _NUMBER.sub("#", _QUOTED.sub("'…'", first))[:160]


def failed_checks(logs: list[NotebookLog]) -> Counter:
    """How many submissions failed each hidden check while it ran (see `failures` for the whole count)."""
    counts: Counter = Counter()
    for log in logs:
        for cell in log.cells:
            counts.update(set(cell.failed_checks))
    return counts


# ----------------------------------------------------------------------------- plots


def plot_all(cls: Class, logs: list[NotebookLog], out_dir: Path, course_dir: Path | None = None) -> list[Path]:
    """Write the report's PNGs; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [plot_cells(cls, a, nb, out_dir) for a, nb, _ in cls.notebooks if _has_grades(cls, a, nb)]
    written.append(plot_totals(cls, out_dir))
    _, checks = failures(cls, logs, course_dir if course_dir is not None else out_dir.parent)
    if any(c.failed for c in checks):
        written.append(plot_failed_checks(checks, out_dir))
    return written


def _has_grades(cls: Class, assignment: str, notebook: str) -> bool:
    return any(c.assignment == assignment and c.notebook == notebook and c.score is not None for c in cls.cells)


def plot_cells(cls: Class, assignment: str, notebook: str, out_dir: Path) -> Path:
    """Score distribution of every graded cell of one notebook (one panel per cell, counts on an integer axis)."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    cell_max = cls.cell_max[(assignment, notebook)]
    ids = list(cell_max)
    cols = min(3, len(ids))
    rows = -(-len(ids) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3 * rows), squeeze=False)
    for ax, gid in zip(axes.flat, ids):
        scores = [c.score for c in cls.cells if (c.assignment, c.notebook, c.grade_id) == (assignment, notebook, gid)
                  and c.score is not None]
        counts = Counter(scores)
        levels = sorted(set(counts) | {0.0, cell_max[gid]})
        bars = ax.bar([f"{x:g}" for x in levels], [counts.get(x, 0) for x in levels], color="tab:blue")
        ax.bar_label(bars, labels=[str(counts.get(x, 0)) if counts.get(x, 0) else "" for x in levels], fontsize=8)
        ax.set_title(f"{gid} (max {cell_max[gid]:g})", fontsize=10)
        ax.set_xlabel("score")
        ax.set_ylabel("students")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(0, max(counts.values(), default=0) + 1)
    for ax in list(axes.flat)[len(ids):]:
        ax.axis("off")
    fig.suptitle(f"{notebook}: score distribution per graded cell")
    fig.tight_layout()
    path = out_dir / f"{assignment}_cells.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def dot_offsets(values: list[float], width: float = 0.6) -> list[float]:
    """Horizontal offsets that set dots at equal values side by side, centred (a dot plot, never overplotted)."""
    seen: Counter = Counter()
    counts = Counter(values)
    out = []
    for v in values:
        n, k = counts[v], seen[v]
        seen[v] += 1
        step = min(0.12, width / max(n - 1, 1))
        out.append((k - (n - 1) / 2) * step)
    return out


def plot_totals(cls: Class, out_dir: Path) -> Path:
    """Each chapter's final totals as a dot plot, in percent of its maximum: one dot per student, dots at equal
    scores side by side, the median as a bar."""
    import matplotlib.pyplot as plt

    max_by = cls.assignment_max()
    chapters = [(a, scores) for a, scores in _submitted_totals(cls).items() if scores and max_by[a]]
    fig, ax = plt.subplots(figsize=(max(4, 1.4 * len(chapters) + 2), 4))
    for k, (a, scores) in enumerate(chapters, start=1):
        pct = [100 * v / max_by[a] for v in sorted(scores)]
        ax.scatter([k + d for d in dot_offsets(pct)], pct, s=22, color="tab:orange", edgecolor="black", linewidth=0.4,
                   zorder=3)
        ax.hlines(statistics.median(pct), k - 0.35, k + 0.35, color="tab:blue", linewidth=2, zorder=2)
    ax.set_xticks(range(1, len(chapters) + 1), [f"{a}\n(n={len(s)})" for a, s in chapters])
    ax.set_xlim(0.4, len(chapters) + 0.6)
    ax.set_ylim(-5, 105)
    ax.set_xlabel("chapter")
    ax.set_ylabel("final score (% of maximum)")
    ax.set_title("Final totals: one dot per student, bar at the median", fontsize=9)
    fig.tight_layout()
    path = out_dir / "totals.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_failed_checks(checks: list[CheckFailures], out_dir: Path, top: int = 15) -> Path:
    """Submissions failing each hidden check: the check ran and failed, or the cell failed before it ran."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    items = [c for c in checks if c.failed][:top][::-1]
    fig, ax = plt.subplots(figsize=(8, 0.4 * len(items) + 1.8))
    names = [c.name for c in items]
    ax.barh(names, [c.failed_check for c in items], color="tab:red", label="the hidden check failed")
    ax.barh(names, [c.failed_before for c in items], left=[c.failed_check for c in items], color="tab:gray",
            label="the cell failed before the check ran")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("submissions")
    ax.set_ylabel("hidden check")
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(f"Hidden checks failed most often (top {len(items)})")
    fig.tight_layout()
    path = out_dir / "hidden_checks_failed.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


# ----------------------------------------------------------------------------- the files beside the plots


def write_tables(out_dir: Path, tables: dict[str, tuple[list[str], list[list[object]]]], plots: list[Path]) -> list[Path]:
    """`tables` (name -> headers, rows) as name.csv each, and index.html with every table and plot; their paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, (headers, rows) in tables.items():
        path = out_dir / f"{name}.csv"
        export.write_csv(path, headers, [[_cell(x) for x in row] for row in rows])
        written.append(path)
    images = [{"name": p.name, "src": "data:image/png;base64," + base64.b64encode(p.read_bytes()).decode()}
              for p in plots if p.suffix == ".png" and p.is_file()]
    page = out_dir / "index.html"
    page.write_text(render("report.html.j2", title="Class report", images=images,
                           tables=[{"name": name, "title": TITLES.get(name, name), "headers": h,
                                    "rows": [[_cell(x) for x in row] for row in rows]}
                                   for name, (h, rows) in tables.items()]), encoding="utf-8")
    return [page, *written]


TITLES = {"summary": "Class summary (final scores of the submissions)",
          "cells": "Where points were lost, per graded cell (submissions)",
          "checks": "Hidden checks failed most often (submissions)",
          "figures": "Behaviour checks: the statistic, its bound and the margin, per submission (pass and fail)"}


def _cell(x: object) -> str:
    return f"{x:.4g}" if isinstance(x, float) else str(x)
