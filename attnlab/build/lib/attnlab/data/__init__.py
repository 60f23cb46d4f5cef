"""Synthetic data sets of the book, generated deterministically from a seed (no downloads)."""
from attnlab.data import (
    grammar,  # noqa: F401  sentences of a probabilistic grammar (Chapters 4, 6)
    scenes,  # noqa: F401  rendered scenes with captions (Chapter 5)
)
