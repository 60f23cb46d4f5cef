"""Chapter 8: generating text. The references are the chapter's solution cells (chapters/ch8_generation.py), run
after the chapter's locked cell `given_block` (Chapter 7's block by PyTorch's functions) that `block_step` calls; the
locked generators are loaded too (tests/test_measured_fits measures them)."""
from solutions.chapter import load

load("ch8", globals(), helpers=("generate_without_cache", "generate_with_cache"))
