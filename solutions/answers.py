"""Reference symbolic answers, by check name, with the variables each may use."""
from __future__ import annotations

# name -> (reference expression, variables the answer may use)
ANSWERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "ch1.PARALLEL_TIME_SERIAL": ("L*(J + K + T)", ("L", "T", "H", "J", "K")),
    "ch1.PARALLEL_TIME_LOG": ("L*(log(J) + log(K) + log(T))", ("L", "T", "H", "J", "K")),
    "ch1.SOFTMAX_TIME": ("log(K) + log(T)", ("T", "K")),
    "ch1.SOFTMAX_TIME_PRACTICE": ("K + log(T)", ("T", "K")),
    "ch1.LAYER_TIME": ("log(T) + log(J)", ("T", "J", "K")),
    "ch1.LAYER_TIME_PRACTICE": ("J + log(T)", ("T", "J", "K")),
    "ch2.SPATIAL_TIME_LAYER": ("log(X) + log(Y) + log(J) + log(K)", ("X", "Y", "H", "J", "K")),
    "ch2.SPATIAL_TIME": ("L*(log(X) + log(Y) + log(J) + log(K))", ("L", "X", "Y", "H", "J", "K")),
    "ch3.EQUAL_WHEN": ("K = J/2", ("K", "J")),
    "ch6.CNN_TIME": ("L", ("L", "T")),
    "ch6.RNN_TIME": ("T + L", ("L", "T")),
}
