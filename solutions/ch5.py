"""Chapter 5: image captioning with attention. The references are the chapter's solution cells
(chapters/ch5_captioning.py)."""
from solutions.chapter import load

load("ch5", globals())
