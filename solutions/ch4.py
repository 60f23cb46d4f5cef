"""Chapter 4: blank language modeling. The reference `BlankHead` is the chapter's solution cell
(chapters/ch4_blank_lm.py): the seed's own simple answer, two matrices. Problem 4.1 is a design
question: any head that reads only the forward state before the blank, the backward state after it
and the word vectors, and yields a distribution over the vocabulary, is an answer.
"""
from __future__ import annotations

import torch
import torch.nn as nn

from solutions.chapter import load

BlankHead: type[nn.Module] = load("ch4", globals())["BlankHead"]


def head_outputs(J: int, U: int, seed: int, z_fwd_prev: torch.Tensor, z_bwd_next: torch.Tensor,
                 E: torch.Tensor, head: type[nn.Module] = BlankHead) -> torch.Tensor:
    """A fresh head(J, U), its parameters drawn from `seed`, on these inputs -> log P[N, |V|]."""
    torch.manual_seed(seed)
    model = head(J, U).to(dtype=E.dtype, device=E.device).eval()
    return model(z_fwd_prev, z_bwd_next, E)
