"""Chapter 6: wrong implementations, each losing exactly its cells (edits of the chapter's solution cells)."""
from solutions.mistakes import Assign, Patch

CONV = ("test_conv_stride2",)

WRONG = [
    # Problem 6.1, the equation of layer 0
    Assign("embed_equation", "EMBED_EQUATION", "M0[b,t,j] = sum_v E[v, j]", ("test_embed_equation",),
           "every position gets the sum of all word vectors (the word ids never read)"),
    Patch("embed_equation", "E[w[b,t], j]", "E[w[t,b], j]", ("test_embed_equation",),
          "the word ids read with batch and position swapped (a form error the visible test names)"),
    # Problem 6.2, embed
    Patch("embed", "return E[w]", "return F.one_hot(w, E.shape[0]).float() @ E  # a float32 one-hot: fails on float64",
          ("test_embed",), "one-hot product with a fixed dtype"),
    Patch("embed", "return E[w]", "return E[w.flip(1)]  # sentences read backwards", ("test_embed",), "positions reversed"),
    Patch("embed", "return E[w]", "return E[w.T].transpose(0, 1).flip(0)  # the sentences of the batch in reverse order",
          ("test_embed",), "sentences of the batch mixed up"),
    # Problem 6.3, the equation of a stride-2 layer
    Patch("stride2_equation", "2*t + d", "t + d", ("test_stride2_equation",),
          "stride 1: the window of output t starts at t, not 2t"),
    Patch("stride2_equation", "M0[b, 2*t + d, j]", "M0[2*t + d, j]", ("test_stride2_equation",),
          "the seed's typo: the batch index dropped on the right (a form error)"),
    Patch("stride2_equation", "- beta[j2]", "+ beta[j2]", ("test_stride2_equation",),
          "the threshold added instead of subtracted"),
    # Problem 6.4, conv_stride2
    Patch("conv_stride2", "M.unfold(1, D, 2)", "M.unfold(1, D, 1)", CONV, "stride 1 instead of 2"),
    Patch("conv_stride2", "windows = M.unfold(1, D, 2)",
          "T = M.shape[1]\n    padded = F.pad(M, (0, 0, 0, 2 * (T // 2) + D - 2 - T))  # zeros past the end: T//2 windows\n"
          "    windows = padded.unfold(1, D, 2)", CONV,
          "T//2 outputs (the end of the sentence padded with zeros), not valid positions only", line=True),
    Patch("conv_stride2", ") - beta)", ") + beta)  # bias added", CONV, "bias added instead of subtracted"),
    Patch("conv_stride2", "windows, W)", "windows, W.flip(0))", CONV,
          "filter offsets reversed (a convolution flipped in time)"),
    Patch("conv_stride2", "windows, W)", "windows, W.transpose(1, 2))", CONV,
          "the filter's channel slots swapped"),
    Patch("conv_stride2", "return torch.sigmoid(", "return (", CONV, "the logistic nonlinearity left out"),
    # Problem 6.5
    Assign("cnn_time", "CNN_TIME", "T", ("test_cnn_time",), "the CNN's time taken as linear in the length"),
    Assign("cnn_time", "CNN_TIME", "L*log(T)", ("test_cnn_time",), "a sum over the sentence in every layer"),
    Assign("rnn_time", "RNN_TIME", "T*L", ("test_rnn_time",), "the layers of the RNN not pipelined"),
    Assign("rnn_time", "RNN_TIME", "T", ("test_rnn_time",), "the one-layer answer: L layers add L steps"),
    # Problem 6.9, sequential steps and path length (seed 003)
    Assign("attention_time", "ATTENTION_TIME", "L", ("test_attention_time",),
           "d2l's count: a sum over the T keys taken as one step"),
    Assign("attention_time", "ATTENTION_TIME", "log(T)", ("test_attention_time",), "one layer, not L"),
    Assign("rnn_path", "RNN_PATH", "T*L", ("test_rnn_path",), "the chain walks every layer's whole sentence"),
    Assign("rnn_path", "RNN_PATH", "T", ("test_rnn_path",), "the one-layer answer: the chain climbs L layers too"),
    Assign("cnn_path", "CNN_PATH", "T", ("test_cnn_path",), "a stride-1 CNN's path (d2l's n/k), not stride 2's"),
    Assign("attention_path", "ATTENTION_PATH", "1", ("test_attention_path",),
           "d2l's one layer: every chain through L layers has L units"),
    # Problem 6.6, receptive_field (a wrong one costs nothing in Problem 6.7, graded over it)
    Patch("receptive_field", "return 1 + (D - 1)", "return D**l  # D windows of D words that do not overlap",
          ("test_receptive_field",), "windows counted as disjoint (stride D), a mistake the visible test names",
          line=True),
    Patch("receptive_field", "return 1 + (D - 1)",
          "r = 1\n    for _ in range(l):\n        r = 2 * r + D - 1  # the overlap of neighbouring windows miscounted by one\n"
          "    return r", ("test_receptive_field",), "r_{l+1} = 2 r_l + D - 1: one word too many per layer", line=True),
    Patch("receptive_field", "return 1 + (D - 1)", "return round(1 + (D - 1) * (2.0**l - 1))  # a float: inexact past 2**53",
          ("test_receptive_field",), "the closed form in floating point, wrong for deep stacks only", line=True),
    # Problem 6.7, layers_needed
    Patch("layers_needed", "layers = 0", "return math.ceil(math.log2(T))  # halve until one word is left: D ignored",
          ("test_layers_needed",), "log2 T layers whatever the filter width", line=True),
    Patch("layers_needed", "< T:", "<= T:  # one layer too many when the field fits exactly", ("test_layers_needed",),
          "off by one at the boundary r_L = T"),
]
