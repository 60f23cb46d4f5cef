"""Compare two per-cell grade exports (`autograder export --format csv --cells`), e.g. a CUDA run against a CPU run.

Usage: python benchmarks/compare_cells.py A.csv B.csv
Prints how many (student, assignment, notebook, cell) rows agree on their score, lists every one that does not,
and exits 1 when any differs or a row is in one file only.
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

KEY = ("student_id", "assignment", "notebook", "grade_id")


def read(path: Path) -> tuple[dict[tuple[str, ...], str], str]:
    """The file's scores keyed by KEY, and the name of the score column."""
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return {}, ""
    score = "score"
    return {tuple(r[k] for k in KEY): r[score] for r in rows}, score


def main(argv: list[str]) -> int:
    a, score = read(Path(argv[0]))
    b, _ = read(Path(argv[1]))
    same = [k for k in a if k in b and a[k] == b[k]]
    differ = [k for k in a if k in b and a[k] != b[k]]
    only = sorted(set(a) ^ set(b))
    print(f"{len(same)} of {len(set(a) | set(b))} cells agree on {score!r}")
    for k in differ:
        print("differs:", " / ".join(k), a[k], "vs", b[k])
    for k in only:
        print("in one file only:", " / ".join(k))
    return 1 if differ or only else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
