"""The symbolic questions, by check name: the variables an answer may use and the relations between
the sizes that the question states (the checker uses them). The reference answer itself is the
chapter's (its solution cell, loaded as `solutions.chN.NAME`): it is never written here.

Relations are strings such as "K <= J" or "J = H*I" (a product of powers on each side; a
size the answer may not use, like I, may appear). `attnlab.symbolic.check_answer` takes
them as `relations=`; see its module docstring for what they change.
"""
from __future__ import annotations

import functools
import importlib
from typing import NamedTuple


class Question(NamedTuple):
    """What a symbolic question states: the allowed variables, and the relations between the sizes."""

    variables: tuple[str, ...]
    relations: tuple[str, ...] = ()


class Reference(NamedTuple):
    """One symbolic question: its reference answer, the allowed variables, and the stated relations."""

    answer: str
    variables: tuple[str, ...]
    relations: tuple[str, ...] = ()


# Chapters 1 and 2 (the notation table, stated in each question): J = H*I heads times value size,
# and a head's query/key and value sizes are at most the width, K <= J, I <= J.
HEADS_KEYS = ("J = H*I", "I <= J", "K <= J")

QUESTIONS: dict[str, Question] = {
    "ch1.PARALLEL_TIME_SERIAL": Question(("L", "T", "H", "J", "K"), HEADS_KEYS),
    "ch1.PARALLEL_TIME_LOG": Question(("L", "T", "H", "J", "K"), HEADS_KEYS),
    "ch1.SOFTMAX_TIME": Question(("T", "K")),
    "ch1.SOFTMAX_TIME_PRACTICE": Question(("T", "K")),
    "ch1.LAYER_TIME": Question(("T", "J", "K"), HEADS_KEYS),
    "ch1.LAYER_TIME_PRACTICE": Question(("T", "J", "K"), HEADS_KEYS),
    "ch1.LAYER_WORK": Question(("T", "H", "J", "K"), HEADS_KEYS),
    "ch1.SCORES_MEMORY": Question(("T", "H", "J", "K"), HEADS_KEYS),
    "ch2.SPATIAL_TIME_LAYER": Question(("X", "Y", "H", "J", "K"), HEADS_KEYS),
    "ch2.SPATIAL_TIME": Question(("L", "X", "Y", "H", "J", "K"), HEADS_KEYS),
    "ch3.EQUAL_WHEN": Question(("K", "J")),
    "ch6.CNN_TIME": Question(("L", "T")),
    "ch6.RNN_TIME": Question(("L", "T")),
    "ch6.ATTENTION_TIME": Question(("L", "T")),
    "ch6.RNN_PATH": Question(("L", "T")),
    "ch6.CNN_PATH": Question(("L", "T")),
    "ch6.ATTENTION_PATH": Question(("L", "T")),
    "ch7.BLOCK_TIME": Question(("T", "J")),
    "ch7.BLOCK_WORK": Question(("T", "J")),
}


def reference(name: str) -> Reference:
    """Question `name` ("ch1.SOFTMAX_TIME") with the chapter's answer (`solutions.ch1.SOFTMAX_TIME`)."""
    chapter, variable = name.split(".")
    answer = getattr(importlib.import_module(f"solutions.{chapter}"), variable)
    return Reference(answer, *QUESTIONS[name])


@functools.cache
def _answers() -> dict[str, Reference]:
    return {name: reference(name) for name in QUESTIONS}


def __getattr__(name: str) -> dict[str, Reference]:
    """ANSWERS, every question with its chapter's answer, read on first use (each chapter's answers run the
    chapter's solution cells: the judge reads only the chapters it grades, through `reference`)."""
    if name == "ANSWERS":
        return _answers()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
