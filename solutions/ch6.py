"""Chapter 6: language CNNs. The references are the chapter's solution cells
(chapters/ch6_language_cnn.py); `layers_needed` also takes the grader-only `receptive_field=`."""
from solutions.chapter import load

load("ch6", globals(), upstream={"layers_needed": ("receptive_field",)})
