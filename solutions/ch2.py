"""Chapter 2: the spatial transformer (reference)."""
from __future__ import annotations

import math

import torch


def spatial_self_attention(h: torch.Tensor, WQ: torch.Tensor, WK: torch.Tensor, WV: torch.Tensor) -> torch.Tensor:
    """h[X,Y,J], WQ/WK[H,K,J], WV[H,I,J] -> [X,Y,H*I]; softmax jointly over (x', y')."""
    X, Y, _ = h.shape
    Hh, K, _ = WQ.shape
    Query = torch.einsum("hkj,xyj->hxyk", WQ, h)
    Key = torch.einsum("hkj,xyj->hxyk", WK, h)
    Value = torch.einsum("hij,xyj->hxyi", WV, h)
    s = torch.einsum("hxyk,habk->hxyab", Query, Key) / math.sqrt(K)
    alpha = torch.softmax(s.reshape(Hh, X, Y, X * Y), dim=-1).reshape(Hh, X, Y, X, Y)
    Out = torch.einsum("hxyab,habi->hxyi", alpha, Value)
    return Out.permute(1, 2, 0, 3).reshape(X, Y, -1)
