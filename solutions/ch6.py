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


# Problem 6.6: r_{l+1} = 2 r_l + D - 2 from r_0 = 1 (stride-2 windows of D words, 2 apart).
def receptive_field(l: int, D: int) -> int:
    """r_l: words that one output of layer l depends on, for stride-2 layers of width D (r_0 = 1)."""
    return 1 + (D - 1) * (2**l - 1)


# Problem 6.7: the fewest L with r_L >= T (graded over the student's own receptive_field too).
def layers_needed(T: int, D: int, *, receptive_field=receptive_field) -> int:
    """The fewest stride-2 layers of width D >= 2 after which one output sees all T words."""
    if D < 2:
        raise ValueError(f"with D = {D} a layer's output sees one word: no depth sees a longer sentence")
    layers = 0
    while receptive_field(layers, D) < T:
        layers += 1
    return layers
