"""Chapter 6: language CNNs (reference)."""
from __future__ import annotations

import torch


def embed(w: torch.Tensor, E: torch.Tensor) -> torch.Tensor:
    """w[B,T] word ids, E[V,I] -> L0[B,T,I] = E[w[b,t], i]."""
    return E[w]


def conv_stride2(L: torch.Tensor, W: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """L[B,T,I], W[D,I,I'], bias[I'] -> sigma(sum_{d,i} W[d,i,i'] L[b,2t+d,i] - bias[i']), t < (T-D)//2 + 1."""
    D = W.shape[0]
    windows = L.unfold(1, D, 2)  # [B, T_out, I, D]: windows[b,t,i,d] = L[b, 2t+d, i]
    return torch.sigmoid(torch.einsum("btid,dij->btj", windows, W) - bias)
