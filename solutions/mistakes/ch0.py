"""Chapter 0: wrong implementations, each losing exactly its cells."""
from solutions.mistakes import Wrong

WRONG = [
    Wrong("dot_product_attention", '''
        def dot_product_attention(q, keys, values):
            alpha = torch.softmax(keys @ q, dim=0)  # no 1/sqrt(K)
            return alpha @ values
        ''', ("test_dot_product_attention",), "scores not scaled by 1/sqrt(K)"),
    Wrong("dot_product_attention", '''
        def dot_product_attention(q, keys, values):
            alpha = torch.softmax(keys @ q / math.sqrt(values.shape[1]), dim=0)  # the values' dimension
            return alpha @ values
        ''', ("test_dot_product_attention",), "scaled by sqrt(I) instead of sqrt(K)"),
    Wrong("dot_product_attention", '''
        def dot_product_attention(q, keys, values):
            alpha = torch.exp(keys @ q / math.sqrt(q.shape[0]))  # weights never normalised
            return alpha @ values
        ''', ("test_dot_product_attention",), "exponentials not divided by their sum"),
    Wrong("dot_product_attention", '''
        def dot_product_attention(q, keys, values):
            alpha = torch.softmax(keys @ q / math.sqrt(q.shape[0]), dim=0)
            return values[alpha.argmax()]  # hard attention
        ''', ("test_dot_product_attention",), "the value of the best key instead of the weighted average"),
    Wrong("column_attention", '''
        def column_attention(MT, WQ, WK, WV):
            K = WQ.shape[1]
            Q = torch.einsum("hkj,jt->hkt", WQ, MT)
            Kh = torch.einsum("hkj,jt->hkt", WK, MT)
            V = torch.einsum("hij,jt->hit", WV, MT)
            A = torch.softmax(torch.einsum("hks,hkt->hst", Kh, Q) / math.sqrt(K), dim=2)  # rows normalised
            return torch.einsum("his,hst->hit", V, A).reshape(-1, MT.shape[1])
        ''', ("test_column_attention",), "softmax over the queries (rows) instead of the keys (columns)"),
    Wrong("column_attention", '''
        def column_attention(MT, WQ, WK, WV):
            K = WQ.shape[1]
            Q = torch.einsum("hkj,jt->hkt", WQ, MT)
            Kh = torch.einsum("hkj,jt->hkt", WK, MT)
            V = torch.einsum("hij,jt->hit", WV, MT)
            A = torch.softmax(torch.einsum("hks,hkt->hst", Kh, Q) / math.sqrt(K), dim=1)
            out = torch.einsum("his,hst->hit", V, A)
            return out.permute(1, 0, 2).reshape(-1, MT.shape[1])  # heads interleaved row by row
        ''', ("test_column_attention",), "heads interleaved instead of stacked block by block"),
    Wrong("column_attention", '''
        def column_attention(MT, WQ, WK, WV):
            Q = torch.einsum("hkj,jt->hkt", WQ, MT)
            Kh = torch.einsum("hkj,jt->hkt", WK, MT)
            V = torch.einsum("hij,jt->hit", WV, MT)
            A = torch.softmax(torch.einsum("hks,hkt->hst", Kh, Q), dim=1)  # seed 004 has no 1/sqrt(K)
            return torch.einsum("his,hst->hit", V, A).reshape(-1, MT.shape[1])
        ''', ("test_column_attention",), "no 1/sqrt(K), as in seed 004's formula"),
    Wrong("column_attention", '''
        def column_attention(MT, WQ, WK, WV):
            M = MT.T
            K = WQ.shape[1]
            Query = torch.einsum("hkj,tj->htk", WQ, M)
            Key = torch.einsum("hkj,tj->htk", WK, M)
            Value = torch.einsum("hij,tj->hti", WV, M)
            alpha = torch.softmax(torch.einsum("htk,hsk->hts", Query, Key) / math.sqrt(K), dim=-1)
            V = torch.einsum("hts,hsi->hti", alpha, Value)
            return V.permute(1, 0, 2).reshape(M.shape[0], -1)  # the row form, never transposed back
        ''', ("test_column_attention",), "returns the row form [T, H*I] instead of [H*I, T]"),
]
