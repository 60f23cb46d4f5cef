"""Chapter 3: merging query and key into W~Q. The references are the chapter's solution cells
(chapters/ch3_merged_qk.py); a layer's counts also take the grader-only per-head counts as keywords."""
from solutions.chapter import load

load("ch3", globals(), upstream={"layer_params_separate": ("params_separate",),
                                 "layer_params_merged": ("params_merged",)})
