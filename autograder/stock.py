"""Stock nbgrader's autograde refuses in the course: `autograder grade` grades it.

The course is an nbgrader course, so `nbgrader autograde` in its directory, or formgrader's
Autograde button, would run every student's code with stock nbgrader: in a kernel with the
instructor's permissions, the hidden checks judged in that same process by the local judge (a
student's notebook can rebind whatever decides). The course's nbgrader_config.py puts
`RefuseStockAutograde` first among Autograde's sanitize preprocessors: before any student cell
runs, it stops the notebook with a sentence naming `autograder grade`.

The project's own uses of stock nbgrader (the equivalence and invariant tests, the benchmarks'
baseline) opt in explicitly: `gradebook.api(course_dir, stock_autograde=True)`, which sets
`c.RefuseStockAutograde.allow = True`.
"""
from __future__ import annotations

from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool

from autograder.errors import AutograderError

REFUSAL = ("this course is graded by `autograder grade` (each notebook sandboxed, judged outside the student's "
           "process); stock `nbgrader autograde` and formgrader's Autograde button would run students' code "
           "unsandboxed with the in-process local judge, so they refuse. Run `autograder grade --course DIR` "
           "(set c.RefuseStockAutograde.allow = True only to run stock nbgrader on trusted notebooks)")


class StockAutogradeRefused(AutograderError):
    """Stock nbgrader autograde was asked to grade this course."""


class RefuseStockAutograde(NbGraderPreprocessor):
    """Stops stock nbgrader's autograde before any cell runs, unless `allow`."""

    allow = Bool(False, help="let stock nbgrader autograde this course (trusted notebooks only)").tag(config=True)

    def preprocess(self, nb, resources):  # noqa: ANN001, ANN201 - nbconvert's signature
        """Refuse (the notebook unchanged when allowed)."""
        if not self.allow:
            self.log.error(REFUSAL)
            raise StockAutogradeRefused(REFUSAL)
        return nb, resources
