"""Chapter 2: wrong implementations, each losing exactly its cells."""
from solutions.mistakes import Wrong


def _spatial(alpha_line: str, scale: str = " / math.sqrt(K)", out_line: str = "Out.permute(1, 2, 0, 3).reshape(X, Y, -1)") -> str:
    """The reference layer with one line changed."""
    return f'''
def spatial_self_attention(h, WQ, WK, WV):
    X, Y, _ = h.shape
    H, K, _ = WQ.shape
    Query = torch.einsum("hkj,xyj->hxyk", WQ, h)
    Key = torch.einsum("hkj,xyj->hxyk", WK, h)
    Value = torch.einsum("hij,xyj->hxyi", WV, h)
    s = torch.einsum("hxyk,habk->hxyab", Query, Key){scale}
    {alpha_line}
    Out = torch.einsum("hxyab,habi->hxyi", alpha, Value)
    return {out_line}
'''


JOINT = "alpha = torch.softmax(s.reshape(H, X, Y, X * Y), dim=-1).reshape(H, X, Y, X, Y)"

WRONG = [
    Wrong("spatial_self_attention", _spatial("alpha = torch.softmax(torch.softmax(s, dim=-1), dim=-2)"),
          ("test_spatial_self_attention",), "softmax over y', then separately over x'"),
    Wrong("spatial_self_attention", _spatial("alpha = torch.softmax(s, dim=-1)"),
          ("test_spatial_self_attention",), "softmax over y' only"),
    Wrong("spatial_self_attention", _spatial(JOINT, scale=""),
          ("test_spatial_self_attention",), "scores not scaled by 1/sqrt(K)"),
    Wrong("spatial_self_attention", _spatial(JOINT, out_line="Out.permute(1, 2, 3, 0).reshape(X, Y, -1)"),
          ("test_spatial_self_attention",), "heads interleaved channel by channel"),
    Wrong("spatial_self_attention", '''
        def spatial_self_attention(h, WQ, WK, WV):
            X, Y, J = h.shape
            H, K, _ = WQ.shape
            flat = h.transpose(0, 1).reshape(X * Y, J)  # pixels listed column by column ...
            Query = torch.einsum("hkj,tj->htk", WQ, flat)
            Key = torch.einsum("hkj,tj->htk", WK, flat)
            Value = torch.einsum("hij,tj->hti", WV, flat)
            alpha = torch.softmax(Query @ Key.transpose(1, 2) / math.sqrt(K), dim=-1)
            Out = alpha @ Value
            return Out.permute(1, 0, 2).reshape(X, Y, -1)  # ... but unflattened row by row
        ''', ("test_spatial_self_attention",), "flattened in one pixel order, unflattened in the other"),
    Wrong("spatial_time_layer", 'SPATIAL_TIME_LAYER = "X*Y + J + K"', ("test_spatial_time_layer",),
          "serial sums instead of logarithmic ones"),
    Wrong("spatial_time_layer", 'SPATIAL_TIME_LAYER = "log(X) + log(J) + log(K)"', ("test_spatial_time_layer",),
          "forgot that the softmax sums over y' too"),
    Wrong("spatial_time", 'SPATIAL_TIME = "L + log(X) + log(Y) + log(J) + log(K)"', ("test_spatial_time",),
          "layers added instead of multiplied"),
]
