"""Chapter 4: blank language modeling (reference).

Problem 4.1 is a design question: any head that reads only the forward state before the blank,
the backward state after it and the word vectors, and yields a distribution over the vocabulary,
is an answer. This is the seed's own simple answer, two matrices.
"""
from __future__ import annotations

import torch
import torch.nn as nn


class BlankHead(nn.Module):
    """log P(w_t = w | rest) = log_softmax_w sum_u E[w,u] (sum_j W_fwd[u,j] z_fwd[t-1,j] + W_bwd[u,j] z_bwd[t+1,j])."""

    def __init__(self, J: int, U: int) -> None:
        super().__init__()
        self.W_fwd = nn.Parameter(torch.randn(U, J) / J**0.5)
        self.W_bwd = nn.Parameter(torch.randn(U, J) / J**0.5)

    def forward(self, z_fwd_prev: torch.Tensor, z_bwd_next: torch.Tensor, E: torch.Tensor) -> torch.Tensor:
        """z_fwd_prev[N, J], z_bwd_next[N, J], E[|V|, U] -> log P[N, |V|]."""
        scores = (torch.einsum("wu,uj,nj->nw", E, self.W_fwd, z_fwd_prev)
                  + torch.einsum("wu,uj,nj->nw", E, self.W_bwd, z_bwd_next))
        return torch.log_softmax(scores, dim=-1)


def head_outputs(J: int, U: int, seed: int, z_fwd_prev: torch.Tensor, z_bwd_next: torch.Tensor,
                 E: torch.Tensor, head: type[nn.Module] = BlankHead) -> torch.Tensor:
    """A fresh head(J, U), its parameters drawn from `seed`, on these inputs -> log P[N, |V|]."""
    torch.manual_seed(seed)
    model = head(J, U).to(dtype=E.dtype, device=E.device).eval()
    return model(z_fwd_prev, z_bwd_next, E)
