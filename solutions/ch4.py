"""Chapter 4: blank language modeling (reference)."""
from __future__ import annotations

import torch


def blank_logits(h_fwd_prev: torch.Tensor, h_bwd_next: torch.Tensor, E: torch.Tensor,
                 W_fwd: torch.Tensor, W_bwd: torch.Tensor) -> torch.Tensor:
    """h_fwd_prev/h_bwd_next[T,J], E[V,I], W_fwd/W_bwd[I,J] -> logits[T,V] = E W_fwd h_fwd[t-1] + E W_bwd h_bwd[t+1]."""
    return (torch.einsum("vi,ij,tj->tv", E, W_fwd, h_fwd_prev)
            + torch.einsum("vi,ij,tj->tv", E, W_bwd, h_bwd_next))
