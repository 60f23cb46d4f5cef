"""Chapter 0: attention as dot product and softmax (reference)."""
from __future__ import annotations

import math

import torch


def dot_product_attention(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """q[K], keys[N,K], values[N,I] -> V[I]; weights softmax_n(q.keys[n] / sqrt(K))."""
    s = torch.einsum("k,nk->n", q, keys) / math.sqrt(q.shape[-1])
    alpha = torch.softmax(s, dim=0)
    return torch.einsum("n,ni->i", alpha, values)


def column_attention(MT: torch.Tensor, WQ: torch.Tensor, WK: torch.Tensor, WV: torch.Tensor) -> torch.Tensor:
    """Seed 004's column form: MT[J,T] (items as columns), WQ/WK[H,K,J], WV[H,I,J] -> [H*I, T], head 0's rows first."""
    K = WQ.shape[1]
    QueryT = torch.einsum("hkj,jt->hkt", WQ, MT)
    KeyT = torch.einsum("hkj,jt->hkt", WK, MT)
    ValueT = torch.einsum("hij,jt->hit", WV, MT)
    A = torch.softmax(torch.einsum("hku,hkt->hut", KeyT, QueryT) / math.sqrt(K), dim=1)  # each column over the keys u
    return torch.einsum("hiu,hut->hit", ValueT, A).reshape(-1, MT.shape[1])
