"""Chapter 5: image captioning with attention (reference)."""
from __future__ import annotations

import torch


def image_attention(h_prev: torch.Tensor, W_key: torch.Tensor, M: torch.Tensor) -> torch.Tensor:
    """h_prev[J], W_key[J,K], M[X,Y,K] -> alpha[X,Y] = softmax_{x,y} h_prev W_key M[x,y]."""
    s = torch.einsum("j,jk,xyk->xy", h_prev, W_key, M)
    return torch.softmax(s.reshape(-1), dim=0).reshape(s.shape)


def attend(alpha: torch.Tensor, M: torch.Tensor) -> torch.Tensor:
    """alpha[X,Y], M[X,Y,K] -> V[K] = sum_{x,y} alpha[x,y] M[x,y,K]."""
    return torch.einsum("xy,xyk->k", alpha, M)
