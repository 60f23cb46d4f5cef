"""Chapter 1: wrong implementations, each losing exactly its cells (edits of the chapter's solution cells)."""
from solutions.mistakes import Assign, Patch

WRONG = [
    Patch("self_attention", ".reshape(T, H * I)", ".reshape(T, M.shape[1])  # assumes H*I == J",
          ("test_self_attention",), "output reshaped to [T, J] instead of [T, H*I]"),
    Patch("self_attention", " / math.sqrt(K)", "", ("test_self_attention",),
          "scores not scaled by 1/sqrt(K) (transformer over it is judged on its own)"),
    Patch("self_attention", "V.permute(1, 0, 2).reshape(T, H * I)", "V.reshape(T, H * I)  # [H, T, I] not permuted to [T, H, I]",
          ("test_self_attention",), "heads reshaped without permuting (transformer over it keeps its points)"),
    Patch("transformer", "M = self_attention(M, WQ, WK, WV)\n    return M",
          "out = self_attention(M, WQ, WK, WV)  # every layer reads the input\n    return out",
          ("test_transformer",), "every layer applied to the input instead of the previous output"),
    Assign("parallel_time_serial", "PARALLEL_TIME_SERIAL", "L*T", ("test_parallel_time_serial",),
           "forgot the projections and the scores"),
    Assign("parallel_time_log", "PARALLEL_TIME_LOG", "log(L*J*K*T)", ("test_parallel_time_log",),
           "layers summed in log time"),
    Assign("softmax_time", "SOFTMAX_TIME", "log(T)", ("test_softmax_time",), "forgot the scores' inner product"),
    Assign("softmax_time", "SOFTMAX_TIME_PRACTICE", "K*log(T)", ("test_softmax_time_practice",),
           "multiplied instead of added"),
    Assign("layer_time", "LAYER_TIME", "log(T)", ("test_layer_time",), "forgot the projections' and scores' sums"),
    Assign("layer_time", "LAYER_TIME_PRACTICE", "J*log(T)", ("test_layer_time_practice",),
           "multiplied instead of added"),
    Assign("work_memory", "LAYER_WORK", "T^2*J + T*J^2", ("test_layer_work",),
           "took the queries' width H*K for J (as if K = I)"),
    Assign("work_memory", "LAYER_WORK", "H*T^2*K + T^2*J", ("test_layer_work",),
           "counted the scores and the weighted average, not the projections"),
    Assign("work_memory", "SCORES_MEMORY", "T^2", ("test_scores_memory",), "one head's scores"),
    Assign("work_memory", "SCORES_MEMORY", "H*T^2*K", ("test_scores_memory",),
           "the products of the scores' inner products, not the scores"),
    Patch("self_attention", "torch.softmax(s, dim=-1)", "torch.softmax(s, dim=1)  # over the queries",
          ("test_self_attention",), "softmax over the query position t instead of the key position t'; "
                                    "a correct transformer over it keeps its points (upstream judging)"),
    Patch("self_attention", " / math.sqrt(K)", " * torch.tensor(K ** -0.5)  # float32 by default: 7 digits",
          ("test_self_attention",), "the scale made a float32 tensor: float64 inputs lose precision (the visible "
                                    "tests pass at their tolerance, the hidden check does not; transformer keeps its points)"),
]
