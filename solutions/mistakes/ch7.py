"""Chapter 7: wrong implementations, each losing exactly its cells (edits of the chapter's solution cells)."""
from solutions.mistakes import Assign, Patch

WRONG = [
    Patch("stacked_projection", "Query.reshape(T, H, K).transpose(0, 1)", "Query.reshape(H, T, K)",
          ("test_stacked_projection",), "the query block reshaped straight to [H, T, K], mixing positions and heads"),
    Patch("stacked_projection", "Query, Key, Value = P.split", "Key, Query, Value = P.split",
          ("test_stacked_projection",), "the query and key blocks of W swapped"),
    Patch("attention", ".triu(1)", ".tril(-1)  # t' < t", ("test_attention",),
          "the mask hides the past instead of the future (a correct block over it keeps its points)"),
    Patch("attention", "s = s.masked_fill(future, -math.inf)\n    alpha = torch.softmax(s, dim=-1)",
          "pass\n    alpha = torch.softmax(s, dim=-1)\n    if causal:  # the future's weights zeroed after the softmax\n"
          "        alpha = alpha.masked_fill(future, 0.0)", ("test_attention",),
          "the weights masked after the softmax, not the scores before it: the rest no longer sum to 1"),
    Patch("attention", " / math.sqrt(K)", "", ("test_attention",), "scores not scaled by 1/sqrt(K)"),
    Patch("output_projection", "V.transpose(0, 1).reshape(T, H * I)", "V.reshape(T, H * I)  # [H, T, I] not permuted",
          ("test_output_projection",), "heads concatenated without moving t to the front"),
    Patch("output_projection", "concatenated @ WO.T", "concatenated @ WO.T.flip(0)  # heads in reverse order",
          ("test_output_projection",), "WO's columns read with the heads in reverse order"),
    Patch("layer_norm", "var = ((M - mean) ** 2).mean(dim=-1, keepdim=True)",
          "var = M.var(dim=-1, keepdim=True)  # torch.var divides by J - 1", ("test_layer_norm",),
          "unbiased variance (divided by J - 1)"),
    Patch("layer_norm", "    mean = M.mean(dim=-1, keepdim=True)\n    var = ((M - mean) ** 2).mean(dim=-1, keepdim=True)",
          "    mean = M.mean(dim=0, keepdim=True)  # over the positions\n"
          "    var = ((M - mean) ** 2).mean(dim=0, keepdim=True)", ("test_layer_norm",),
          "normalised over the positions t instead of the coordinates j"),
    Patch("layer_norm", "torch.sqrt(var + eps)", "(torch.sqrt(var) + eps)", ("test_layer_norm",),
          "eps added outside the square root (the Annotated Transformer's; the visible check with eps = 0.1 sees it)"),
    Patch("feed_forward", "return hidden @ W2.T + beta2", "return torch.relu(hidden @ W2.T + beta2)  # ReLU on the output too",
          ("test_feed_forward",), "a ReLU after the second layer too"),
    Patch("feed_forward", "torch.relu(M @ W1.T + beta1)", "torch.relu(M @ W1.T) + beta1", ("test_feed_forward",),
          "beta1 added after the ReLU"),
    Patch("block", "Query, Key, Value = stacked_projection(layer_norm(M, p[\"gain1\"], p[\"shift1\"]), p[\"W\"], H, K)\n"
          "    Mid = M + output_projection(attention(Query, Key, Value, causal), p[\"WO\"])\n"
          "    return Mid + feed_forward(layer_norm(Mid, p[\"gain2\"], p[\"shift2\"]), p[\"W1\"], p[\"beta1\"],\n"
          "                              p[\"W2\"], p[\"beta2\"])",
          "Query, Key, Value = stacked_projection(M, p[\"W\"], H, K)  # post-LN: the sums normalised\n"
          "    Mid = layer_norm(M + output_projection(attention(Query, Key, Value, causal), p[\"WO\"]), p[\"gain1\"], p[\"shift1\"])\n"
          "    return layer_norm(Mid + feed_forward(Mid, p[\"W1\"], p[\"beta1\"], p[\"W2\"], p[\"beta2\"]), p[\"gain2\"], p[\"shift2\"])",
          ("test_block",), "post-LN: each sum normalised instead of each part's input"),
    Patch("block", "return Mid + feed_forward(", "return feed_forward(", ("test_block",),
          "the feed-forward part's residual connection left out"),
    Patch("block", "feed_forward(layer_norm(Mid,", "feed_forward(layer_norm(M,", ("test_block",),
          "the feed-forward part reads the block's input instead of Mid"),
    Assign("block_time", "BLOCK_TIME", "log(T)", ("test_block_time",), "only attention's sums over t' counted"),
    Assign("block_time", "BLOCK_TIME", "T + log(J)", ("test_block_time",),
           "the softmax's sum counted serially"),
    Assign("block_time", "BLOCK_WORK", "T^2*J", ("test_block_work",), "only attention's work counted"),
    Assign("block_time", "BLOCK_WORK", "T*J^2", ("test_block_work",), "attention's T^2 pairs forgotten"),
]
