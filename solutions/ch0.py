"""Chapter 0: attention as dot product and softmax. The references are the chapter's solution cells
(chapters/ch0_attention.py)."""
from solutions.chapter import load

load("ch0", globals())
