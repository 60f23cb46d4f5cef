"""attnlab.kernels: which attention kernel ran, and the largest tensor a computation allocates."""
from __future__ import annotations

import doctest
import math

import pytest
import torch
import torch.nn.functional as F

from attnlab import kernels
from attnlab.kernels import MATH, attention_backend, largest_tensor


def test_docstring_examples() -> None:
    assert doctest.testmod(kernels).failed == 0


def einsum_attention(Query: torch.Tensor, Key: torch.Tensor, Value: torch.Tensor) -> torch.Tensor:
    """Attention written out, [H, T, .] -> [H, T, I]: it stores the [H, T, T] scores."""
    s = torch.einsum("htk,hTk->htT", Query, Key) / math.sqrt(Query.shape[-1])
    return torch.einsum("htT,hTi->hti", s.softmax(-1), Value)


def test_the_cpu_fused_kernel_runs_on_4d_inputs_and_the_math_kernel_on_3d() -> None:
    """On a CPU, scaled_dot_product_attention on [1, H, T, d] runs the flash kernel; on [H, T, d] every fused
    kernel refuses; an einsum layer runs none; a forced math kernel is named as such."""
    q = torch.randn(1, 3, 16, 8)
    assert attention_backend(F.scaled_dot_product_attention, q, q, q) == "flash (CPU)"
    assert attention_backend(F.scaled_dot_product_attention, q[0], q[0], q[0]) == MATH
    assert attention_backend(einsum_attention, q[0], q[0], q[0]) == MATH
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel([SDPBackend.MATH]):
        assert attention_backend(F.scaled_dot_product_attention, q, q, q) == MATH


def test_keyword_arguments_reach_the_function() -> None:
    q = torch.randn(1, 2, 8, 4)
    assert attention_backend(F.scaled_dot_product_attention, q, q, q, is_causal=True) == "flash (CPU)"


@pytest.mark.parametrize(("H", "T", "K"), [(1, 8, 3), (4, 50, 7), (2, 3, 40)])
def test_largest_tensor_is_the_scores_or_the_queries_on_meta_tensors(H: int, T: int, K: int) -> None:
    """On meta tensors (nothing allocated), the einsum layer's largest tensor is max(H*T*T, H*T*K): the
    scores or the projected inputs it makes; views do not count, nor do the inputs themselves."""
    meta = [torch.empty(H, T, K, device="meta") for _ in range(3)]
    assert largest_tensor(einsum_attention, *meta) == max(H * T * T, H * T * K)
    assert largest_tensor(lambda x: x.transpose(0, 1)[:, :2].unsqueeze(0), meta[0]) == 0  # views only
    assert largest_tensor(lambda x: x.transpose(1, 2).reshape(-1), meta[0]) == H * T * K  # a copy is allocated


def test_the_fused_kernel_never_stores_the_scores() -> None:
    """The CPU flash kernel's largest tensor grows like T (its output, its log-sum-exp), not like T^2."""
    H, T, d = 2, 256, 8
    q = torch.randn(1, H, T, d)
    assert largest_tensor(F.scaled_dot_product_attention, q, q, q) < H * T * T // 8
    assert largest_tensor(F.scaled_dot_product_attention, q[0], q[0], q[0]) >= H * T * T


def test_run_times_times_each_run_after_the_warm_up() -> None:
    """`repeats` timings, each of one call, after `warmup` calls that are not timed; nothing else is called."""
    import time

    calls = []

    def work(x: float) -> None:
        calls.append(x)
        time.sleep(0.002)

    times = kernels.run_times(work, 1.5, repeats=4, warmup=3)
    assert len(times) == 4 and len(calls) == 7 and set(calls) == {1.5}
    assert all(0.0015 < t < 5 for t in times)
    assert len(kernels.run_times(work, 2.0)) == 9 and len(calls) == 7 + 11
