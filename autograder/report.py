"""The class report: a summary table per chapter and plots in course/report/."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from autograder.results import Class, NotebookLog, summary_stats


def chapter_summary(cls: Class) -> list[list[object]]:
    """Rows: assignment, max, students, mean, median, full marks, zero (graded submissions only)."""
    rows = []
    for assignment in dict.fromkeys(a for a, _, _ in cls.notebooks):
        max_score = sum(m for a, _, m in cls.notebooks if a == assignment)
        per_student: dict[str, float] = {}
        for t in cls.totals():
            if t.assignment == assignment and t.status != "missing":
                per_student[t.student] = per_student.get(t.student, 0.0) + t.score
        s = summary_stats(list(per_student.values()), max_score)
        rows.append([assignment, max_score, s["students"], s["mean"], s["median"], s["full"], s["zero"]])
    return rows


SUMMARY_HEADERS = ["chapter", "max", "students", "mean", "median", "full marks", "zero"]


def failed_checks(logs: list[NotebookLog]) -> Counter:
    """How many submissions failed each hidden check."""
    counts: Counter = Counter()
    for log in logs:
        for cell in log.cells.values():
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

    assignments = list(dict.fromkeys(a for a, _, _ in cls.notebooks))
    data, labels = [], []
    for a in assignments:
        max_score = sum(m for aa, _, m in cls.notebooks if aa == a)
        per: dict[str, float] = {}
        for t in cls.totals():
            if t.assignment == a and t.status != "missing":
                per[t.student] = per.get(t.student, 0.0) + t.score
        if per and max_score:
            data.append([100 * v / max_score for v in per.values()])
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
