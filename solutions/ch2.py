"""Chapter 2: the spatial transformer. The references are the chapter's solution cells
(chapters/ch2_spatial.py)."""
from solutions.chapter import load

load("ch2", globals())
