"""Chapter 0: attention as dot product and softmax (reference)."""
from __future__ import annotations

import math

import torch


def dot_product_attention(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """q[D], keys[N,D], values[N,Dv] -> context[Dv]; weights softmax_n(q.keys[n] / sqrt(D))."""
    s = torch.einsum("d,nd->n", q, keys) / math.sqrt(q.shape[-1])
    alpha = torch.softmax(s, dim=0)
    return torch.einsum("n,nv->v", alpha, values)


def column_attention(H: torch.Tensor, WQ: torch.Tensor, WK: torch.Tensor, WV: torch.Tensor) -> torch.Tensor:
    """Seed 004's column form: H[J,T] (items as columns), W*[h,k|i,J] -> [H*I, T], heads stacked h = 0 first."""
    K = WQ.shape[1]
    Q = torch.einsum("hkj,jt->hkt", WQ, H)
    Kmat = torch.einsum("hkj,jt->hkt", WK, H)
    V = torch.einsum("hij,jt->hit", WV, H)
    A = torch.softmax(torch.einsum("hks,hkt->hst", Kmat, Q) / math.sqrt(K), dim=1)  # column-normalised over s
    out = torch.einsum("his,hst->hit", V, A)
    return out.reshape(-1, H.shape[1])
