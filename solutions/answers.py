"""Reference symbolic answers, by check name: the expression, the variables the answer may
use, and the relations between the sizes that the question states (the checker uses them).

Relations are strings such as "K <= J" or "J = H*I" (a product of powers on each side; a
size the answer may not use, like I, may appear). `attnlab.symbolic.check_answer` takes
them as `relations=`; see its module docstring for what they change.
"""
from __future__ import annotations

from typing import NamedTuple


class Reference(NamedTuple):
    """One symbolic question: its reference answer, the allowed variables, and the stated relations."""

    answer: str
    variables: tuple[str, ...]
    relations: tuple[str, ...] = ()


# Chapters 1 and 2 (the notation table, stated in each question): J = H*I heads times value size,
# and a head's query/key and value sizes are at most the width, K <= J, I <= J.
HEADS_KEYS = ("J = H*I", "I <= J", "K <= J")

ANSWERS: dict[str, Reference] = {
    "ch1.PARALLEL_TIME_SERIAL": Reference("L*(J + K + T)", ("L", "T", "H", "J", "K"), HEADS_KEYS),
    "ch1.PARALLEL_TIME_LOG": Reference("L*(log(J) + log(K) + log(T))", ("L", "T", "H", "J", "K"), HEADS_KEYS),
    "ch1.SOFTMAX_TIME": Reference("log(K) + log(T)", ("T", "K")),
    "ch1.SOFTMAX_TIME_PRACTICE": Reference("K + log(T)", ("T", "K")),
    "ch1.LAYER_TIME": Reference("log(T) + log(J)", ("T", "J", "K"), HEADS_KEYS),
    "ch1.LAYER_TIME_PRACTICE": Reference("J + log(T)", ("T", "J", "K"), HEADS_KEYS),
    "ch2.SPATIAL_TIME_LAYER": Reference("log(X) + log(Y) + log(J) + log(K)", ("X", "Y", "H", "J", "K"), HEADS_KEYS),
    "ch2.SPATIAL_TIME": Reference("L*(log(X) + log(Y) + log(J) + log(K))", ("L", "X", "Y", "H", "J", "K"), HEADS_KEYS),
    "ch3.EQUAL_WHEN": Reference("K = J/2", ("K", "J")),
    "ch6.CNN_TIME": Reference("L", ("L", "T")),
    "ch6.RNN_TIME": Reference("T + L", ("L", "T")),
}
