"""The class report: a summary table per chapter and plots in course/report/."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from autograder.grades import Class, summary_stats
from autograder.gradinglog import NotebookLog


def chapter_summary(cls: Class) -> list[list[object]]:
    """Rows: assignment, max, students, mean, median, full marks, zero (graded submissions only)."""
    rows = []
    max_by = cls.assignment_max()
    for assignment, scores in _submitted_totals(cls).items():
        s = summary_stats(scores, max_by[assignment])
        rows.append([assignment, max_by[assignment], s["students"], s["mean"], s["median"], s["full"], s["zero"]])
    return rows


def _submitted_totals(cls: Class) -> dict[str, list[float]]:
    """assignment -> the totals of the students who submitted it."""
    out: dict[str, list[float]] = {a: [] for a in cls.assignments()}
    for t in cls.assignment_totals().values():
        if t.status != "missing":
            out[t.assignment].append(t.score)
    return out


SUMMARY_HEADERS = ["chapter", "max", "students", "mean", "median", "full marks", "zero"]


def failed_checks(logs: list[NotebookLog]) -> Counter:
    """How many submissions failed each hidden check."""
    counts: Counter = Counter()
    for log in logs:
        for cell in log.cells:
            counts.update(set(cell.failed_checks))
    return counts


def plot_all(cls: Class, logs: list[NotebookLog], out_dir: Path) -> list[Path]:
    """Write the report's PNGs; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [plot_cells(cls, a, nb, out_dir) for a, nb, _ in cls.notebooks if _has_grades(cls, a, nb)]
    written.append(plot_totals(cls, out_dir))
    counts = failed_checks(logs)
    if counts:
        written.append(plot_failed_checks(counts, out_dir))
    return written


def _has_grades(cls: Class, assignment: str, notebook: str) -> bool:
    return any(c.assignment == assignment and c.notebook == notebook and c.score is not None for c in cls.cells)


def plot_cells(cls: Class, assignment: str, notebook: str, out_dir: Path) -> Path:
    """Score distribution of every graded cell of one notebook (one panel per cell)."""
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
        ax.bar([f"{x:g}" for x in levels], [counts.get(x, 0) for x in levels], color="tab:blue")
        ax.set_title(f"{gid} (max {cell_max[gid]:g})", fontsize=10)
        ax.set_xlabel("score")
        ax.set_ylabel("students")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    for ax in list(axes.flat)[len(ids):]:
        ax.axis("off")
    fig.suptitle(f"{notebook}: score distribution per graded cell")
    fig.tight_layout()
    path = out_dir / f"{assignment}_cells.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_totals(cls: Class, out_dir: Path) -> Path:
    """Distribution of each chapter's total, in percent of its maximum."""
    import matplotlib.pyplot as plt

    data, labels = [], []
    max_by = cls.assignment_max()
    for a, scores in _submitted_totals(cls).items():
        if scores and max_by[a]:
            data.append([100 * v / max_by[a] for v in scores])
            labels.append(a)
    fig, ax = plt.subplots(figsize=(max(4, 1.2 * len(labels) + 2), 4))
    if data:
        ax.boxplot(data, tick_labels=labels)
        for k, values in enumerate(data, start=1):
            ax.scatter([k] * len(values), values, alpha=0.5, color="tab:orange", s=12)
    ax.set_ylim(-5, 105)
    ax.set_xlabel("chapter")
    ax.set_ylabel("total score (% of maximum)")
    ax.set_title("Totals per chapter")
    fig.tight_layout()
    path = out_dir / "totals.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_failed_checks(counts: Counter, out_dir: Path, top: int = 15) -> Path:
    """The hidden checks failed most often (number of submissions failing each)."""
    import matplotlib.pyplot as plt

    items = counts.most_common(top)[::-1]
    fig, ax = plt.subplots(figsize=(7, 0.4 * len(items) + 1.5))
    ax.barh([name for name, _ in items], [n for _, n in items], color="tab:red")
    ax.set_xlabel("submissions failing the check")
    ax.set_ylabel("hidden check")
    ax.set_title(f"Hidden checks failed most often (top {len(items)})")
    fig.tight_layout()
    path = out_dir / "hidden_checks_failed.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
