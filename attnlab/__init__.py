"""attnlab: the student's kit for the attention problem-set book.

Ships to students and contains no solution: the parallel-time profiler, the symbolic
answer checker, the index-equation answer language (`attnlab.equations`: read, check the
form of, and evaluate a derivation's equations), per-position path lengths
(`attnlab.paths`), which attention kernel ran and the largest tensor a computation
allocates (`attnlab.kernels`), whether an answer's curve follows measured points (`attnlab.fits`),
synthetic data sets, plotting helpers, visible-test helpers,
and the student-side half of the hidden tests (`attnlab.grading`).
"""
from __future__ import annotations

__all__ = ["equations", "grading", "testing"]
