"""Chapter 1: parallel time of the Transformer. The references are the chapter's solution cells
(chapters/ch1_parallel_time.py); `transformer` also takes the grader-only `self_attention=`."""
from solutions.chapter import load

load("ch1", globals(), upstream={"transformer": ("self_attention",)})
