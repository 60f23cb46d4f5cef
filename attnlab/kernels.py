"""Which attention kernel a computation ran, the largest tensor it allocated, and how long it takes.

PyTorch's ``F.scaled_dot_product_attention`` picks one of several kernels at run time: a
*fused* one (flash attention, memory-efficient attention or cuDNN on a GPU, a flash kernel on
the CPU), which streams over the keys and never stores the scores, or the *math* kernel, which
does what a hand-written einsum layer does. A fused kernel takes only 4-D inputs ``[B, H, T, d]``
whose last dimension is contiguous; on other inputs the math kernel runs. Which one ran is not
returned, so it is read from the aten operations the call runs::

    >>> import torch, torch.nn.functional as F
    >>> q = torch.randn(1, 2, 8, 4)                      # [B, H, T, d]
    >>> attention_backend(F.scaled_dot_product_attention, q, q, q)   # on a CPU
    'flash (CPU)'
    >>> attention_backend(F.scaled_dot_product_attention, q[0], q[0], q[0])   # 3-D: no fused kernel
    'math (unfused)'
    >>> largest_tensor(lambda a, b: a @ b, torch.empty(3, 5, device="meta"), torch.empty(5, 7, device="meta"))
    21
    >>> s = torch.empty(4, 8, 8, device="meta")                       # scores of 4 heads, 8 positions
    >>> softmax_entries(lambda s: [torch.softmax(s[h], -1) for h in range(4)], s)   # one head at a time
    256

Both run ``fn`` once under a ``TorchDispatchMode`` (``OpWatch``), which sees every aten
operation, on any device and on *meta* tensors (shapes without data: the largest tensor of a
computation far too big to run is measured without allocating it). A view (``view``,
``transpose``, ``expand``, ...) shares its input's memory and is not counted as allocated.

``softmax_entries`` counts the entries a computation's softmaxes normalise, all calls together: the
scores of every head, whether a layer computes them at once or one head at a time (its largest tensor
is then one head's scores).

``run_times`` is the book's one way of timing a computation (Chapters 1, 6 and 7 plot what it gives).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

__all__ = ["FUSED_KERNELS", "MATH", "SOFTMAX_OPS", "OpWatch", "attention_backend", "largest_tensor", "run_times",
           "softmax_entries"]

# The aten operation each fused kernel of scaled_dot_product_attention runs, by the kernel's name.
FUSED_KERNELS = {
    "_scaled_dot_product_flash_attention": "flash",
    "_flash_attention_forward": "flash",
    "_scaled_dot_product_flash_attention_for_cpu": "flash (CPU)",
    "_scaled_dot_product_efficient_attention": "memory-efficient",
    "_efficient_attention_forward": "memory-efficient",
    "_scaled_dot_product_cudnn_attention": "cuDNN",
}
MATH = "math (unfused)"  # no fused kernel ran: the scores were computed and stored
# The aten operations that normalise scores: a softmax, or the exponential of one written by hand.
SOFTMAX_OPS = frozenset({"_softmax", "_safe_softmax", "_log_softmax", "exp"})


class OpWatch(TorchDispatchMode):
    """Records, while active, the aten operations run (by name) and the largest tensor they allocate."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """Leave __torch_dispatch__ unwrapped, as `attnlab.profiler.DepthMode` does: torch's wrapper imports
        torch._dynamo (1-2 s) on first use, and nothing here is compiled."""
        return False

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[str] = []
        self.largest_numel = 0   # numbers in the largest tensor an operation allocated
        self.largest_bytes = 0   # bytes of the largest tensor an operation allocated
        self.softmax_numel = 0   # entries the softmaxes (SOFTMAX_OPS) produced, all calls together

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.ops.append(func.overloadpacket.__name__)
        if func.overloadpacket.__name__ in SOFTMAX_OPS:
            self.softmax_numel += sum(t.numel() for t in tree_leaves(out) if isinstance(t, torch.Tensor))
        if not func.is_view:  # a view shares its input's memory
            for t in tree_leaves(out):
                if isinstance(t, torch.Tensor):
                    self.largest_numel = max(self.largest_numel, t.numel())
                    self.largest_bytes = max(self.largest_bytes, t.numel() * t.element_size())
        return out

    @property
    def backend(self) -> str:
        """The attention kernel that ran: the first fused one by name (FUSED_KERNELS), else MATH."""
        return next((FUSED_KERNELS[op] for op in self.ops if op in FUSED_KERNELS), MATH)


def attention_backend(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    """The attention kernel that fn(*args, **kwargs) runs (called once): 'flash', 'flash (CPU)',
    'memory-efficient', 'cuDNN' or 'math (unfused)'; a function with no fused kernel in it gives MATH."""
    with OpWatch() as watch:
        fn(*args, **kwargs)
    return watch.backend


def largest_tensor(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    """The number of entries of the largest tensor that fn(*args, **kwargs) allocates (called once;
    views excluded, the inputs not counted). On meta tensors nothing is allocated for real."""
    with OpWatch() as watch:
        fn(*args, **kwargs)
    return watch.largest_numel


def softmax_entries(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    """The entries that the softmaxes of fn(*args, **kwargs) normalise, all calls together (called once): a
    layer's scores, all heads, however it loops over them. A fused attention kernel shows none."""
    with OpWatch() as watch:
        fn(*args, **kwargs)
    return watch.softmax_numel


def run_times(fn: Callable[..., Any], *args: Any, repeats: int = 9, warmup: int = 2) -> list[float]:
    """Seconds of each of `repeats` runs of fn(*args), after `warmup` runs that are not timed. Kernels run
    asynchronously on a GPU: once CUDA is in use, each run starts and ends with `torch.cuda.synchronize()`."""
    for _ in range(warmup):
        fn(*args)
    times = []
    for _ in range(repeats):
        cuda = torch.cuda.is_initialized()
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn(*args)
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return times
