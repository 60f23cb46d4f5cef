"""Chapter 2: the spatial transformer (reference)."""
from __future__ import annotations

import math

import torch

# Problem 2.1 (seeds 000 P2a, 002 P5a): Chapter 1's layer with the position t replaced by the pixel (x, y).
SPATIAL_EQUATIONS = r"""
Query[h,x,y,k] = sum_j WQ[h,k,j] * M[x,y,j]
Key[h,x,y,k] = sum_j WK[h,k,j] * M[x,y,j]
Value[h,x,y,i] = sum_j WV[h,i,j] * M[x,y,j]
alpha[h,x,y,x2,y2] = softmax_{x2,y2} (sum_k Query[h,x,y,k] * Key[h,x2,y2,k]) / sqrt(K)
V[h,x,y,i] = sum_{x2,y2} alpha[h,x,y,x2,y2] * Value[h,x2,y2,i]
"""


def spatial_self_attention(M: torch.Tensor, WQ: torch.Tensor, WK: torch.Tensor, WV: torch.Tensor) -> torch.Tensor:
    """M[X,Y,J], WQ/WK[H,K,J], WV[H,I,J] -> [X,Y,H*I]; softmax jointly over the key pixel (x', y')."""
    X, Y, _ = M.shape
    H, K, _ = WQ.shape
    Query = torch.einsum("hkj,xyj->hxyk", WQ, M)
    Key = torch.einsum("hkj,xyj->hxyk", WK, M)
    Value = torch.einsum("hij,xyj->hxyi", WV, M)
    s = torch.einsum("hxyk,habk->hxyab", Query, Key) / math.sqrt(K)
    alpha = torch.softmax(s.reshape(H, X, Y, X * Y), dim=-1).reshape(H, X, Y, X, Y)
    V = torch.einsum("hxyab,habi->hxyi", alpha, Value)
    return V.permute(1, 2, 0, 3).reshape(X, Y, -1)
