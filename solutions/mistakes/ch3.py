"""Chapter 3: wrong implementations, each losing exactly its cells."""
from solutions.mistakes import Wrong

WRONG = [
    Wrong("wq_tilde", 'WQ_TILDE = "WQ_tilde[h,j1,j2] = sum_k WK[h,k,j1] * WQ[h,k,j2] / sqrt(K)"', ("test_wq_tilde",),
          "equation: query and key sides swapped (the transpose)"),
    Wrong("wq_tilde", 'WQ_TILDE = "WQ_tilde[h,j1,j2] = sum_k WQ[h,k,j1] * WK[h,k,j2]"', ("test_wq_tilde",),
          "equation: the scale 1/sqrt(K) left out"),
    Wrong("wq_tilde", 'WQ_TILDE = "hka,hkb->hab / sqrt(J)"', ("test_wq_tilde",),
          "einsum spec scaled by 1/sqrt(J) instead of 1/sqrt(K)"),
    Wrong("wq_tilde", 'WQ_TILDE = "WQ_tilde[h,j1,j2] = sum_k WQ[h,k,j1] * WK[h,k,j1] / sqrt(K)"', ("test_wq_tilde",),
          "equation: the key side indexed by j1, as in the seed's t1 typo"),
    Wrong("merge_query_key", '''
        def merge_query_key(WQ, WK):
            return torch.einsum("hka,hkb->hab", WK, WQ) / math.sqrt(WQ.shape[1])  # W~Q transposed
        ''', ("test_merge_query_key",), "query and key sides swapped (the transpose of W~Q)"),
    Wrong("merge_query_key", '''
        def merge_query_key(WQ, WK):
            return torch.einsum("hka,hkb->hab", WQ, WK)  # 1/sqrt(K) left out
        ''', ("test_merge_query_key",), "scale not folded in"),
    Wrong("merge_query_key", '''
        def merge_query_key(WQ, WK):
            return torch.einsum("hka,hkb->hab", WQ, WK) / math.sqrt(WQ.shape[2])  # 1/sqrt(J)
        ''', ("test_merge_query_key",), "scaled by 1/sqrt(J) instead of 1/sqrt(K)"),
    Wrong("attention_weights", '''
        def attention_weights(M, WQ, WK):
            Query = torch.einsum("hkj,tj->htk", WQ, M)
            Key = torch.einsum("hkj,tj->htk", WK, M)
            s = torch.einsum("hak,hbk->hab", Query, Key) / math.sqrt(WQ.shape[1])
            return torch.softmax(s, dim=1)  # over t1
        ''', ("test_attention_weights",), "softmax over the query position t1"),
    Wrong("attention_weights", '''
        def attention_weights(M, WQ, WK):
            Query = torch.einsum("hkj,tj->htk", WQ, M)
            Key = torch.einsum("hkj,tj->htk", WK, M)
            return torch.softmax(torch.einsum("hak,hbk->hab", Query, Key), dim=-1)  # no 1/sqrt(K)
        ''', ("test_attention_weights",), "scores not scaled"),
    Wrong("attention_weights", '''
        def attention_weights(M, WQ, WK):
            Query = torch.einsum("hkj,tj->htk", WQ, M)
            Key = torch.einsum("hkj,tj->htk", WK, M)
            s = torch.einsum("hak,hbk->hba", Query, Key) / math.sqrt(WQ.shape[1])  # s[h, t2, t1]
            return torch.softmax(s, dim=-1)
        ''', ("test_attention_weights",), "keys compared with queries the wrong way round"),
    Wrong("merged_attention_weights", '''
        def merged_attention_weights(M, WQ_tilde):
            s = torch.einsum("aj,hkj,bk->hab", M, WQ_tilde, M)  # W~Q transposed
            return torch.softmax(s, dim=-1)
        ''', ("test_merged_attention_weights",), "t1 paired with the second index of W~Q"),
    Wrong("merged_attention_weights", '''
        def merged_attention_weights(M, WQ_tilde):
            s = torch.einsum("aj,hjk,bk->hab", M, WQ_tilde, M) / math.sqrt(M.shape[1])  # scaled twice
            return torch.softmax(s, dim=-1)
        ''', ("test_merged_attention_weights",), "scaled again although the scale is inside W~Q"),
    Wrong("merged_attention_weights", '''
        def merged_attention_weights(M, WQ_tilde):
            s = torch.einsum("aj,hjk,bk->hab", M, WQ_tilde, M)
            return torch.softmax(s, dim=-2)  # over t1
        ''', ("test_merged_attention_weights",), "softmax over the query position t1"),
    Wrong("params", '''
        def params_separate(K, J):
            return K * J  # only W^Q counted

        def params_merged(J):
            return J * J
        ''', ("test_params_separate",), "forgot the key matrix"),
    Wrong("params", '''
        def params_separate(K, J):
            return 2 * K * J

        def params_merged(J):
            return J * (J + 1) // 2  # as if W~Q were symmetric
        ''', ("test_params_merged",), "counted W~Q as a symmetric matrix"),
    Wrong("layer_params", '''
        def layer_params_separate(H, K, J):
            return params_separate(K, J)  # one head only

        def layer_params_merged(H, J):
            return H * params_merged(J)
        ''', ("test_layer_params",), "a layer's query-key count without its H heads"),
    Wrong("layer_params", '''
        def layer_params_separate(H, K, J):
            return 2 * H * K * J

        def layer_params_merged(H, J):
            return J * J  # as if the heads shared one W~Q
        ''', ("test_layer_params",), "one merged matrix for the whole layer"),
    Wrong("equal_when", 'EQUAL_WHEN = "K = J"', ("test_equal_when",), "compared K J with J^2, forgetting the 2"),
    Wrong("equal_when", 'EQUAL_WHEN = "K = 2*J"', ("test_equal_when",), "solved 2KJ = J^2 upside down"),
]
