"""Chapter 2: wrong implementations, each losing exactly its cells."""
from solutions.mistakes import Wrong


def _spatial(alpha_line: str, scale: str = " / math.sqrt(K)",
             out_line: str = "V.permute(1, 2, 0, 3).reshape(X, Y, -1)") -> str:
    """The reference layer with one line changed."""
    return f'''
def spatial_self_attention(M, WQ, WK, WV):
    X, Y, _ = M.shape
    H, K, _ = WQ.shape
    Query = torch.einsum("hkj,xyj->hxyk", WQ, M)
    Key = torch.einsum("hkj,xyj->hxyk", WK, M)
    Value = torch.einsum("hij,xyj->hxyi", WV, M)
    s = torch.einsum("hxyk,habk->hxyab", Query, Key){scale}
    {alpha_line}
    V = torch.einsum("hxyab,habi->hxyi", alpha, Value)
    return {out_line}
'''


def _equations(alpha: str, v: str = "V[h,x,y,i] = sum_{x2,y2} alpha[h,x,y,x2,y2] * Value[h,x2,y2,i]") -> str:
    """The reference equations with the last two lines as given."""
    return f'''SPATIAL_EQUATIONS = r"""
Query[h,x,y,k] = sum_j WQ[h,k,j] * M[x,y,j]
Key[h,x,y,k] = sum_j WK[h,k,j] * M[x,y,j]
Value[h,x,y,i] = sum_j WV[h,i,j] * M[x,y,j]
{alpha}
{v}
"""'''


JOINT = "alpha = torch.softmax(s.reshape(H, X, Y, X * Y), dim=-1).reshape(H, X, Y, X, Y)"
ALPHA = "alpha[h,x,y,x2,y2] = softmax_{x2,y2} (sum_k Query[h,x,y,k] * Key[h,x2,y2,k]) / sqrt(K)"

WRONG = [
    Wrong("spatial_equations", _equations(
        "alpha[h,x,y,x2,y2] = softmax_{y2} (sum_k Query[h,x,y,k] * Key[h,x2,y2,k]) / sqrt(K)"),
        ("test_spatial_equations",), "equations: softmax over y' only"),
    Wrong("spatial_equations", _equations(
        "alpha[h,x,y,x2,y2] = softmax_{x2,y2} sum_k Query[h,x,y,k] * Key[h,x2,y2,k]"),
        ("test_spatial_equations",), "equations: scores not scaled by 1/sqrt(K)"),
    Wrong("spatial_equations", _equations(ALPHA, "V[h,x,y,i] = sum_{x2} alpha[h,x,y,x2,y] * Value[h,x2,y,i]"),
          ("test_spatial_equations",), "equations: the weighted average runs over the query's own column only"),
    Wrong("spatial_equations", _equations(
        "alpha[h,x,y,x2,y2] = softmax_{x2,y2} (sum_k Query[h,x2,y2,k] * Key[h,x,y,k]) / sqrt(K)"),
        ("test_spatial_equations",), "equations: query and key pixels swapped in the scores"),
    Wrong("spatial_self_attention", _spatial("alpha = torch.softmax(torch.softmax(s, dim=-1), dim=-2)"),
          ("test_spatial_self_attention",), "softmax over y', then separately over x'"),
    Wrong("spatial_self_attention", _spatial("alpha = torch.softmax(s, dim=-1)"),
          ("test_spatial_self_attention",), "softmax over y' only"),
    Wrong("spatial_self_attention", _spatial("alpha = torch.softmax(s, dim=-2) / Y"),
          ("test_spatial_self_attention",), "softmax over x' in each column y', each column weighted 1/Y"),
    Wrong("spatial_self_attention", _spatial(JOINT, scale=""),
          ("test_spatial_self_attention",), "scores not scaled by 1/sqrt(K)"),
    Wrong("spatial_self_attention", _spatial(JOINT, out_line="V.permute(1, 2, 3, 0).reshape(X, Y, -1)"),
          ("test_spatial_self_attention",), "heads interleaved channel by channel"),
    Wrong("spatial_self_attention", _spatial(JOINT, out_line="V.reshape(X, Y, -1)"),
          ("test_spatial_self_attention",), "heads reshaped without permuting"),
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
    Wrong("spatial_time_layer", 'SPATIAL_TIME_LAYER = "X*Y + J + K"', ("test_spatial_time_layer",),
          "serial sums instead of logarithmic ones"),
    Wrong("spatial_time_layer", 'SPATIAL_TIME_LAYER = "log(X) + log(J) + log(K)"', ("test_spatial_time_layer",),
          "forgot that the softmax sums over y' too"),
    Wrong("spatial_time", 'SPATIAL_TIME = "L + log(X) + log(Y) + log(J) + log(K)"', ("test_spatial_time",),
          "layers added instead of multiplied"),
]
