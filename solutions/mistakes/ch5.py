"""Chapter 5: wrong implementations, each losing exactly its cells (edits of the chapter's solution cells)."""
from solutions.mistakes import Patch

EQS, ATT, ATTEND = ("test_caption_equations",), ("test_image_attention",), ("test_attend",)

WRONG = [
    # Problem 5.1: the equations
    Patch("caption_equations", "softmax_{x,y}", "softmax_{x}", EQS,
          "the attention normalised over x only (one distribution per column)"),
    Patch("caption_equations", "W_att[j,k]", "W_att[k,j]", EQS, "W_att read transposed (a form error the visible test names)"),
    Patch("caption_equations", "CELL(z_prev[:], V[:], e[:])", "CELL(z_prev[:], e[:], V[:])", EQS,
          "CELL's arguments in another order than the seed's"),
    Patch("caption_equations", "W_auto[u,j] * z[j]", "W_auto[u,j] * z_prev[j]", EQS,
          "the word predicted from the state before the glimpse (the seed's indexing, not the book's)"),
    # Problem 5.2: image_attention
    Patch("image_attention", "return torch.softmax(", "return torch.softmax(s, dim=0)  # over x only: each column sums to 1",
          ATT, "softmax over x only", line=True),
    Patch("image_attention", "return torch.softmax(", "return torch.softmax(s, dim=-1)  # over y only: each row sums to 1",
          ATT, "softmax over y only", line=True),
    Patch("image_attention", "dim=0).reshape(X, Y)", "dim=0)  # never reshaped back to [X, Y]", ATT,
          "missing reshape back to [X, Y]"),
    Patch("image_attention", "z_prev, W_att, M)", "z_prev, W_att, M) / math.sqrt(M.shape[-1])", ATT,
          "scores scaled by 1/sqrt(K), which the seed's equation does not have"),
    Patch("image_attention", "return torch.softmax(", "e = torch.exp(s)\n    return e / e.sum()  # overflows for large scores",
          ATT, "exp without subtracting the maximum: inf/inf for large scores", line=True),
    Patch("image_attention", "s.reshape(X * Y)", "s.T.reshape(X * Y)", ATT,
          "scores transposed before the reshape: weights land on the wrong cells"),
    # Problem 5.3: attend
    Patch("attend", "return torch.einsum(", "return (alpha[:, :, None] * M).sum(dim=(1, 2))  # sums over y and k, keeps x",
          ATTEND, "sum over the wrong axes", line=True),
    Patch("attend", "return torch.einsum(", "return alpha.T.reshape(-1) @ M.reshape(-1, M.shape[-1])  # alpha's cells reordered",
          ATTEND, "alpha transposed against M", line=True),
    Patch("attend", "return torch.einsum(", "return M.mean(dim=(0, 1))  # ignores alpha", ATTEND,
          "plain mean of the features", line=True),
    Patch("attend", "return torch.einsum(", "return alpha[:, :, None] * M  # weighted but never summed", ATTEND,
          "weighted features not summed over the cells", line=True),
    Patch("attend", "alpha, M)", "alpha / alpha.sum(), M)  # renormalised", ATTEND,
          "alpha renormalised (the glimpse must be linear in alpha)"),
]
