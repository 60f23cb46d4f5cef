"""Chapter 2: wrong implementations, each losing exactly its cells (edits of the chapter's solution cells)."""
from solutions.mistakes import Assign, Patch, Wrong

EQS, LAYER = ("test_spatial_equations",), ("test_spatial_self_attention",)

WRONG = [
    Patch("spatial_equations", "softmax_{x2,y2}", "softmax_{y2}", EQS, "equations: softmax over y' only"),
    Patch("spatial_equations", ") / sqrt(K)", ")", EQS, "equations: scores not scaled by 1/sqrt(K)"),
    Patch("spatial_equations", "V[h,x,y,i] = ", "V[h,x,y,i] = sum_{x2} alpha[h,x,y,x2,y] * Value[h,x2,y,i]", EQS,
          "equations: the weighted average runs over the query's own column only", line=True),
    Patch("spatial_equations", "Query[h,x,y,k] * Key[h,x2,y2,k]", "Query[h,x2,y2,k] * Key[h,x,y,k]", EQS,
          "equations: query and key pixels swapped in the scores"),
    Patch("spatial_self_attention", "alpha = torch.softmax(", "alpha = torch.softmax(torch.softmax(s, dim=-1), dim=-2)",
          LAYER, "softmax over y', then separately over x'", line=True),
    Patch("spatial_self_attention", "alpha = torch.softmax(", "alpha = torch.softmax(s, dim=-1)", LAYER,
          "softmax over y' only", line=True),
    Patch("spatial_self_attention", "alpha = torch.softmax(", "alpha = torch.softmax(s, dim=-2) / Y", LAYER,
          "softmax over x' in each column y', each column weighted 1/Y", line=True),
    Patch("spatial_self_attention", " / math.sqrt(K)", "", LAYER, "scores not scaled by 1/sqrt(K)"),
    Patch("spatial_self_attention", "V.permute(1, 2, 0, 3)", "V.permute(1, 2, 3, 0)", LAYER,
          "heads interleaved channel by channel"),
    Patch("spatial_self_attention", "V.permute(1, 2, 0, 3).reshape", "V.reshape", LAYER,
          "heads reshaped without permuting"),
    Wrong("spatial_self_attention", '''
        def spatial_self_attention(M, WQ, WK, WV):
            X, Y, J = M.shape
            H, K, _ = WQ.shape
            flat = M.transpose(0, 1).reshape(X * Y, J)  # pixels listed column by column ...
            Query = torch.einsum("hkj,tj->htk", WQ, flat)
            Key = torch.einsum("hkj,tj->htk", WK, flat)
            Value = torch.einsum("hij,tj->hti", WV, flat)
            alpha = torch.softmax(Query @ Key.transpose(1, 2) / math.sqrt(K), dim=-1)
            V = alpha @ Value
            return V.permute(1, 0, 2).reshape(X, Y, -1)  # ... but unflattened row by row
        ''', ("test_spatial_self_attention",), "flattened in one pixel order, unflattened in the other"),
    Assign("spatial_time_layer", "SPATIAL_TIME_LAYER", "X*Y + J + K", ("test_spatial_time_layer",),
           "serial sums instead of logarithmic ones"),
    Assign("spatial_time_layer", "SPATIAL_TIME_LAYER", "log(X) + log(J) + log(K)", ("test_spatial_time_layer",),
           "forgot that the softmax sums over y' too"),
    Assign("spatial_time", "SPATIAL_TIME", "L + log(X) + log(Y) + log(J) + log(K)", ("test_spatial_time",),
           "layers added instead of multiplied"),
]
