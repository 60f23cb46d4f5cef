"""Hidden-test checks by name: trial inputs, the reference from `solutions/`, tolerances.

Each chapter module defines `CHECKS: dict[str, Check]`; symbolic answers come from
`solutions.answers`. The registry is read only in the trusted grader process. The check kinds
(and how to pose an equation answer) are in `autograder.checks.base`.
"""
from __future__ import annotations

import importlib
import pkgutil

from autograder.checks.base import AnswerCheck, Check, EquationCheck, EquationQuestion, FunctionCheck, ValueCheck
from solutions.answers import ANSWERS


def _collect() -> dict[str, Check]:
    registry: dict[str, Check] = {
        name: AnswerCheck(reference=ref.answer, variables=ref.variables, relations=ref.relations)
        for name, ref in ANSWERS.items()
    }
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("ch"):
            registry.update(importlib.import_module(f"{__name__}.{info.name}").CHECKS)
    return registry


CHECKS: dict[str, Check] = _collect()

__all__ = ["CHECKS", "AnswerCheck", "Check", "EquationCheck", "EquationQuestion", "FunctionCheck", "ValueCheck"]
