"""Chapter 3: merging query and key into W~Q (reference)."""
from __future__ import annotations

import math
from collections.abc import Callable

import torch

# Problem 3.1 (seed 002 P6a): the merged matrix, head index first, the scale 1/sqrt(K) folded in.
WQ_TILDE = "WQ_tilde[h,j1,j2] = sum_k WQ[h,k,j1] * WK[h,k,j2] / sqrt(K)"


def merge_query_key(WQ: torch.Tensor, WK: torch.Tensor) -> torch.Tensor:
    """WQ/WK[H,K,J] -> W~Q[H,J,J] = (1/sqrt K) sum_k WQ[h,k,j1] WK[h,k,j2]."""
    return torch.einsum("hka,hkb->hab", WQ, WK) / math.sqrt(WQ.shape[1])


def attention_weights(M: torch.Tensor, WQ: torch.Tensor, WK: torch.Tensor) -> torch.Tensor:
    """M[T,J], WQ/WK[H,K,J] -> alpha[H,T1,T2], softmax over t2 of Query.Key / sqrt(K)."""
    Query = torch.einsum("hkj,tj->htk", WQ, M)
    Key = torch.einsum("hkj,tj->htk", WK, M)
    s = torch.einsum("hak,hbk->hab", Query, Key) / math.sqrt(WQ.shape[1])
    return torch.softmax(s, dim=-1)


def merged_attention_weights(M: torch.Tensor, WQ_tilde: torch.Tensor) -> torch.Tensor:
    """M[T,J], W~Q[H,J,J] -> alpha[H,T1,T2] = softmax_t2 M[t1] W~Q[h] M[t2]."""
    s = torch.einsum("ai,hij,bj->hab", M, WQ_tilde, M)
    return torch.softmax(s, dim=-1)


def params_separate(K: int, J: int) -> int:
    """Query and key parameters of one head: 2 K J."""
    return 2 * K * J


def params_merged(J: int) -> int:
    """Merged W~Q parameters of one head: J^2."""
    return J * J


def layer_params_separate(H: int, K: int, J: int, *,
                          params_separate: Callable[[int, int], int] = params_separate) -> int:
    """Query and key parameters of a layer of H heads: H times a head's (the grader may pass the student's)."""
    return H * params_separate(K, J)


def layer_params_merged(H: int, J: int, *, params_merged: Callable[[int], int] = params_merged) -> int:
    """Merged W~Q parameters of a layer of H heads: H times a head's (the grader may pass the student's)."""
    return H * params_merged(J)
