"""Chapter 4: blank language modeling. The reference `BlankHead` is the chapter's solution cell
(chapters/ch4_blank_lm.py), the seed's own simple answer, two matrices; `head_outputs` is the
chapter's locked helper that the grader calls the same way, taking the grader-only `BlankHead=`
(another head). Problem 4.1 is a design question: any head that reads only the forward state
before the blank, the backward state after it and the word vectors, and yields a distribution
over the vocabulary, is an answer.
"""
from solutions.chapter import load

load("ch4", globals(), helpers=("head_outputs",), upstream={"head_outputs": ("BlankHead",)})
