"""The symbolic questions, by check name: the relations between the sizes that each question states
(the checker uses them). The variables an answer may use are stated once, in the chapter's visible
form check (`expect_answer(SOFTMAX_TIME, ["T", "K"], ...)`: the student's side cannot import this
package), and read from there. The reference answer itself is the chapter's (its solution cell,
loaded as `solutions.chN.NAME`): it is never written here.

Relations are strings such as "K <= J" or "J = H*I" (a product of powers on each side; a
size the answer may not use, like I, may appear). `attnlab.symbolic.check_answer` takes
them as `relations=`; see its module docstring for what they change.
"""
from __future__ import annotations

import ast
import functools
import importlib
from typing import NamedTuple

FORM_CHECK = "expect_answer"  # the kit's visible form check, which states a question's variables


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

# Each question by check name, with the relations it states.
QUESTIONS: dict[str, tuple[str, ...]] = {
    "ch1.PARALLEL_TIME_SERIAL": HEADS_KEYS,
    "ch1.PARALLEL_TIME_LOG": HEADS_KEYS,
    "ch1.SOFTMAX_TIME": (),
    "ch1.SOFTMAX_TIME_PRACTICE": (),
    "ch1.LAYER_TIME": HEADS_KEYS,
    "ch1.LAYER_TIME_PRACTICE": HEADS_KEYS,
    "ch1.LAYER_WORK": HEADS_KEYS,
    "ch1.SCORES_MEMORY": HEADS_KEYS,
    "ch2.SPATIAL_TIME_LAYER": HEADS_KEYS,
    "ch2.SPATIAL_TIME": HEADS_KEYS,
    "ch3.EQUAL_WHEN": (),
    "ch6.CNN_TIME": (),
    "ch6.RNN_TIME": (),
    "ch6.ATTENTION_TIME": (),
    "ch6.RNN_PATH": (),
    "ch6.CNN_PATH": (),
    "ch6.ATTENTION_PATH": (),
    "ch7.BLOCK_TIME": (),
    "ch7.BLOCK_WORK": (),
    "ch8.NOCACHE_WORK": (),
    "ch8.NOCACHE_TIME": (),
    "ch8.CACHE_WORK": (),
    "ch8.CACHE_TIME": (),
    "ch8.CACHE_MEMORY": (),
    "ch8.GROUPED_MEMORY": ("Hkv <= H",),
    "ch8.TILED_MEMORY": (),
}


def question(name: str) -> Question:
    """Question `name` as stated: the variables of its chapter's form check, and its relations."""
    chapter, variable = name.split(".")
    return Question(stated_variables(chapter)[variable], QUESTIONS[name])


@functools.cache
def stated_variables(chapter: str) -> dict[str, tuple[str, ...]]:
    """{answer name: its variables} as the chapter's visible form checks state them,
    `expect_answer(NAME, ["T", "K"], "NAME")` (read from the chapter's source, never run)."""
    from coursenb.chapters import select

    tree = ast.parse(select([chapter])[0].path.read_text(encoding="utf-8"))
    return {node.args[0].id: tuple(ast.literal_eval(node.args[1])) for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == FORM_CHECK
            and len(node.args) >= 2 and isinstance(node.args[0], ast.Name)}


def reference(name: str) -> Reference:
    """Question `name` ("ch1.SOFTMAX_TIME") with the chapter's answer (`solutions.ch1.SOFTMAX_TIME`)."""
    chapter, variable = name.split(".")
    answer = getattr(importlib.import_module(f"solutions.{chapter}"), variable)
    return Reference(answer, *question(name))


@functools.cache
def _answers() -> dict[str, Reference]:
    return {name: reference(name) for name in QUESTIONS}


def __getattr__(name: str) -> dict[str, Reference]:
    """ANSWERS, every question with its chapter's answer, read on first use (each chapter's answers run the
    chapter's solution cells: the judge reads only the chapters it grades, through `reference`)."""
    if name == "ANSWERS":
        return _answers()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
