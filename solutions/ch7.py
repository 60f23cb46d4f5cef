"""Chapter 7: the whole Transformer block. The references are the chapter's solution cells
(chapters/ch7_transformer_block.py); `block` also takes the grader-only upstream functions as keywords."""
from solutions.chapter import load

load("ch7", globals(), upstream={"block": ("layer_norm", "stacked_projection", "attention", "output_projection",
                                           "feed_forward")})
