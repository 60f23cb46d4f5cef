"""Chapter 6: language CNNs (reference)."""
from __future__ import annotations

import torch

# Problem 6.1 (seed 002 P3a): layer 0 is the word vectors of the sentences (a gather through w).
EMBED_EQUATION = "M0[b,t,j] = E[w[b,t], j]"
# Problem 6.3 (seed 002 P3b): a stride-2 layer, valid positions only, batch index kept.
STRIDE2_EQUATION = "M1[b,t,j2] = sigmoid(sum_{d,j} W[d,j,j2] * M0[b, 2*t + d, j] - beta[j2])"


def embed(w: torch.Tensor, E: torch.Tensor) -> torch.Tensor:
    """w[B,T] word ids, E[|V|,J] -> M0[B,T,J] = E[w[b,t], j]."""
    return E[w]


def conv_stride2(M: torch.Tensor, W: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    """M[B,T,J], W[D,J,J'], beta[J'] -> sigma(sum_{d,j} W[d,j,j'] M[b,2t+d,j] - beta[j']), t < (T-D)//2 + 1."""
    D = W.shape[0]
    windows = M.unfold(1, D, 2)  # [B, T2, J, D]: windows[b,t,j,d] = M[b, 2t+d, j]
    return torch.sigmoid(torch.einsum("btjd,djk->btk", windows, W) - beta)
