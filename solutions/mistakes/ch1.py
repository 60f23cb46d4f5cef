"""Chapter 1: wrong implementations, each losing exactly its cells."""
from solutions.mistakes import Wrong

WRONG = [
    Wrong("self_attention", '''
        def self_attention(M, WQ, WK, WV):
            K = WQ.shape[1]
            Query = torch.einsum("hkj,tj->htk", WQ, M)
            Key = torch.einsum("hkj,tj->htk", WK, M)
            Value = torch.einsum("hij,tj->hti", WV, M)
            alpha = torch.softmax(torch.einsum("htk,hsk->hts", Query, Key) / math.sqrt(K), dim=-1)
            V = torch.einsum("hts,hsi->hti", alpha, Value)
            return V.permute(1, 0, 2).reshape(M.shape[0], M.shape[1])  # assumes H*I == J
        ''', ("test_self_attention",), "output reshaped to [T, J] instead of [T, H*I]"),
    Wrong("self_attention", '''
        def self_attention(M, WQ, WK, WV):
            Query = torch.einsum("hkj,tj->htk", WQ, M)
            Key = torch.einsum("hkj,tj->htk", WK, M)
            Value = torch.einsum("hij,tj->hti", WV, M)
            alpha = torch.softmax(torch.einsum("htk,hsk->hts", Query, Key), dim=-1)  # no 1/sqrt(K)
            V = torch.einsum("hts,hsi->hti", alpha, Value)
            return V.permute(1, 0, 2).reshape(M.shape[0], -1)
        ''', ("test_self_attention",), "scores not scaled by 1/sqrt(K) (transformer over it is judged on its own)"),
    Wrong("self_attention", '''
        def self_attention(M, WQ, WK, WV):
            K = WQ.shape[1]
            Query = torch.einsum("hkj,tj->htk", WQ, M)
            Key = torch.einsum("hkj,tj->htk", WK, M)
            Value = torch.einsum("hij,tj->hti", WV, M)
            alpha = torch.softmax(torch.einsum("htk,hsk->hts", Query, Key) / math.sqrt(K), dim=-1)
            V = torch.einsum("hts,hsi->hti", alpha, Value)
            return V.reshape(M.shape[0], -1)  # [H, T, I] reshaped without permuting to [T, H, I]
        ''', ("test_self_attention",), "heads reshaped without permuting (transformer over it keeps its points)"),
    Wrong("transformer", '''
        def transformer(M, layers):
            out = M
            for WQ, WK, WV in layers:
                out = self_attention(M, WQ, WK, WV)  # every layer reads the input
            return out
        ''', ("test_transformer",), "every layer applied to the input instead of the previous output"),
    Wrong("parallel_time_serial", 'PARALLEL_TIME_SERIAL = "L*T"', ("test_parallel_time_serial",),
          "forgot the projections and the scores"),
    Wrong("parallel_time_log", 'PARALLEL_TIME_LOG = "log(L*J*K*T)"', ("test_parallel_time_log",),
          "layers summed in log time"),
    Wrong("softmax_time", 'SOFTMAX_TIME = "log(T)"\nSOFTMAX_TIME_PRACTICE = "K + log(T)"', ("test_softmax_time",),
          "forgot the scores' inner product"),
    Wrong("softmax_time", 'SOFTMAX_TIME = "log(T) + log(K)"\nSOFTMAX_TIME_PRACTICE = "K*log(T)"',
          ("test_softmax_time_practice",), "multiplied instead of added"),
    Wrong("layer_time", 'LAYER_TIME = "log(T)"\nLAYER_TIME_PRACTICE = "J + log(T)"', ("test_layer_time",),
          "forgot the projections' and scores' sums"),
    Wrong("layer_time", 'LAYER_TIME = "log(T) + log(J)"\nLAYER_TIME_PRACTICE = "J*log(T)"',
          ("test_layer_time_practice",), "multiplied instead of added"),
    Wrong("self_attention", '''
        def self_attention(M, WQ, WK, WV):
            K = WQ.shape[1]
            Query = torch.einsum("hkj,tj->htk", WQ, M)
            Key = torch.einsum("hkj,tj->htk", WK, M)
            Value = torch.einsum("hij,tj->hti", WV, M)
            alpha = torch.softmax(torch.einsum("htk,hsk->hts", Query, Key) / math.sqrt(K), dim=1)  # over queries
            V = torch.einsum("hts,hsi->hti", alpha, Value)
            return V.permute(1, 0, 2).reshape(M.shape[0], -1)
        ''', ("test_self_attention",), "softmax over the query position t instead of the key position t'; "
                                       "a correct transformer over it keeps its points (upstream judging)"),
    Wrong("self_attention", '''
        def self_attention(M, WQ, WK, WV):
            scale = torch.tensor(WQ.shape[1] ** -0.5)  # float32 by default: 1/sqrt(K) rounded to 7 digits
            Query = torch.einsum("hkj,tj->htk", WQ, M)
            Key = torch.einsum("hkj,tj->htk", WK, M)
            Value = torch.einsum("hij,tj->hti", WV, M)
            alpha = torch.softmax(torch.einsum("htk,hsk->hts", Query, Key) * scale, dim=-1)
            V = torch.einsum("hts,hsi->hti", alpha, Value)
            return V.permute(1, 0, 2).reshape(M.shape[0], -1)
        ''', ("test_self_attention",), "the scale made a float32 tensor: float64 inputs lose precision (the visible "
                                       "tests pass at their tolerance, the hidden check does not; transformer keeps its points)"),
]
