"""Chapter 4: blank language modeling. The reference `BlankHead` is the chapter's solution cell
(chapters/ch4_blank_lm.py), the seed's own simple answer, two matrices; `head_outputs` is the
chapter's locked helper that the grader calls the same way, taking the grader-only `BlankHead=`
(another head). Problem 4.1 is a design question: any head that reads only the forward state
before the blank, the backward state after it and the word vectors, and yields a distribution
over the vocabulary, is an answer. The trained check's bound, `GAP_BOUND`, is the chapter's locked cell
`blank_lm_bound` too: the chapter's visible test, its plot and the hidden check read that one number.
"""
from solutions.chapter import load

load("ch4", globals(), helpers=("head_outputs", "blank_lm_bound"), upstream={"head_outputs": ("BlankHead",)})
