"""Chapter 5: image captioning with attention (reference)."""
from __future__ import annotations

import torch

# Problem 5.1 (seed 002 P2): one decoding step over image features M[x,y,k], in the book's indexing:
# the glimpse is taken with z_prev = z[t-1], CELL folds it and e = E[w_{t-1}] into z = z[t], which
# predicts w_t. CELL takes vectors of sizes J (state), K (glimpse), U (word vector) and returns J.
CAPTION_EQUATIONS = r"""
alpha[x,y] = softmax_{x,y} sum_{j,k} z_prev[j] * W_att[j,k] * M[x,y,k]
V[k] = sum_{x,y} alpha[x,y] * M[x,y,k]
z[:] = CELL(z_prev[:], V[:], e[:])
P[w] = softmax_w sum_{u,j} E[w,u] * W_auto[u,j] * z[j]
"""


def image_attention(z_prev: torch.Tensor, W_att: torch.Tensor, M: torch.Tensor) -> torch.Tensor:
    """z_prev[J], W_att[J,K], M[X,Y,K] -> alpha[X,Y] = softmax_{x,y} z_prev W_att M[x,y]."""
    s = torch.einsum("j,jk,xyk->xy", z_prev, W_att, M)
    return torch.softmax(s.reshape(-1), dim=0).reshape(s.shape)


def attend(alpha: torch.Tensor, M: torch.Tensor) -> torch.Tensor:
    """alpha[X,Y], M[X,Y,K] -> V[K] = sum_{x,y} alpha[x,y] M[x,y,K]."""
    return torch.einsum("xy,xyk->k", alpha, M)
