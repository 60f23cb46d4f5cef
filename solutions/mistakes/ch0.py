"""Chapter 0: wrong implementations, each losing exactly its cells (edits of the chapter's solution cells)."""
from solutions.mistakes import Patch

WRONG = [
    Patch("dot_product_attention", " / math.sqrt(K)", "", ("test_dot_product_attention",),
          "scores not scaled by 1/sqrt(K)"),
    Patch("dot_product_attention", "K = q.shape[-1]", "K = values.shape[-1]  # the values' dimension",
          ("test_dot_product_attention",), "scaled by sqrt(I) instead of sqrt(K)"),
    Patch("dot_product_attention", "torch.softmax(s, dim=0)", "torch.exp(s)  # weights never normalised",
          ("test_dot_product_attention",), "exponentials not divided by their sum"),
    Patch("dot_product_attention", "return torch.einsum(", "return values[alpha.argmax()]  # hard attention",
          ("test_dot_product_attention",), "the value of the best key instead of the weighted average", line=True),
    Patch("column_attention", "/ math.sqrt(K), dim=1)", "/ math.sqrt(K), dim=2)  # rows sum to 1",
          ("test_column_attention",), "softmax over the queries (rows) instead of the keys (columns)"),
    Patch("column_attention", "return out.reshape(", "return out.permute(1, 0, 2).reshape(",
          ("test_column_attention",), "heads interleaved instead of stacked block by block"),
    Patch("column_attention", " / math.sqrt(K)", "", ("test_column_attention",),
          "no 1/sqrt(K), as in seed 004's formula"),
    Patch("column_attention", "return out.reshape(-1, MT.shape[1])", "return out.reshape(-1, MT.shape[1]).T  # the row form",
          ("test_column_attention",), "returns the row form [T, H*I] instead of [H*I, T]"),
]
