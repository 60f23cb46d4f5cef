"""Chapter 6: wrong implementations, each losing exactly its cells."""
from solutions.mistakes import Wrong

WRONG = [
    # Problem 6.1, the equation of layer 0
    Wrong("embed_equation", 'EMBED_EQUATION = "M0[b,t,j] = sum_v E[v, j]"', ("test_embed_equation",),
          "every position gets the sum of all word vectors (the word ids never read)"),
    Wrong("embed_equation", 'EMBED_EQUATION = "M0[b,t,j] = E[w[t,b], j]"', ("test_embed_equation",),
          "the word ids read with batch and position swapped (a form error the visible test names)"),
    # Problem 6.2, embed
    Wrong("embed", '''
        def embed(w, E):
            return F.one_hot(w, E.shape[0]).float() @ E  # a float32 one-hot: fails on float64 word vectors
        ''', ("test_embed",), "one-hot product with a fixed dtype"),
    Wrong("embed", '''
        def embed(w, E):
            return E[w.flip(1)]  # sentences read backwards
        ''', ("test_embed",), "positions reversed"),
    Wrong("embed", '''
        def embed(w, E):
            return E[w.T].transpose(0, 1).flip(0)  # the sentences of the batch in reverse order
        ''', ("test_embed",), "sentences of the batch mixed up"),
    # Problem 6.3, the equation of a stride-2 layer
    Wrong("stride2_equation", 'STRIDE2_EQUATION = "M1[b,t,j2] = sigmoid(sum_{d,j} W[d,j,j2] * M0[b, t + d, j] - beta[j2])"',
          ("test_stride2_equation",), "stride 1: the window of output t starts at t, not 2t"),
    Wrong("stride2_equation", 'STRIDE2_EQUATION = "M1[b,t,j2] = sigmoid(sum_{d,j} W[d,j,j2] * M0[2*t + d, j] - beta[j2])"',
          ("test_stride2_equation",), "the seed's typo: the batch index dropped on the right (a form error)"),
    Wrong("stride2_equation", 'STRIDE2_EQUATION = "M1[b,t,j2] = sigmoid(sum_{d,j} W[d,j,j2] * M0[b, 2*t + d, j] + beta[j2])"',
          ("test_stride2_equation",), "the threshold added instead of subtracted"),
    # Problem 6.4, conv_stride2
    Wrong("conv_stride2", '''
        def conv_stride2(M, W, beta):
            windows = M.unfold(1, W.shape[0], 1)  # stride 1
            return torch.sigmoid(torch.einsum("btjd,djk->btk", windows, W) - beta)
        ''', ("test_conv_stride2",), "stride 1 instead of 2"),
    Wrong("conv_stride2", '''
        def conv_stride2(M, W, beta):
            D, T = W.shape[0], M.shape[1]
            padded = F.pad(M, (0, 0, 0, 2 * (T // 2) + D - 2 - T))  # zeros past the end: T//2 windows
            windows = padded.unfold(1, D, 2)
            return torch.sigmoid(torch.einsum("btjd,djk->btk", windows, W) - beta)
        ''', ("test_conv_stride2",), "T//2 outputs (the end of the sentence padded with zeros), not valid positions only"),
    Wrong("conv_stride2", '''
        def conv_stride2(M, W, beta):
            windows = M.unfold(1, W.shape[0], 2)
            return torch.sigmoid(torch.einsum("btjd,djk->btk", windows, W) + beta)  # bias added
        ''', ("test_conv_stride2",), "bias added instead of subtracted"),
    Wrong("conv_stride2", '''
        def conv_stride2(M, W, beta):
            windows = M.unfold(1, W.shape[0], 2)
            return torch.sigmoid(torch.einsum("btjd,djk->btk", windows, W.flip(0)) - beta)  # offsets reversed
        ''', ("test_conv_stride2",), "filter offsets reversed (a convolution flipped in time)"),
    Wrong("conv_stride2", '''
        def conv_stride2(M, W, beta):
            windows = M.unfold(1, W.shape[0], 2)
            return torch.sigmoid(torch.einsum("btjd,dkj->btk", windows, W) - beta)  # W read as [offset, out, in]
        ''', ("test_conv_stride2",), "the filter's channel slots swapped"),
    Wrong("conv_stride2", '''
        def conv_stride2(M, W, beta):
            windows = M.unfold(1, W.shape[0], 2)
            return torch.einsum("btjd,djk->btk", windows, W) - beta  # no sigmoid
        ''', ("test_conv_stride2",), "the logistic nonlinearity left out"),
    # Problem 6.5
    Wrong("cnn_time", 'CNN_TIME = "T"', ("test_cnn_time",), "the CNN's time taken as linear in the length"),
    Wrong("cnn_time", 'CNN_TIME = "L*log(T)"', ("test_cnn_time",), "a sum over the sentence in every layer"),
    Wrong("rnn_time", 'RNN_TIME = "T*L"', ("test_rnn_time",), "the layers of the RNN not pipelined"),
    Wrong("rnn_time", 'RNN_TIME = "T"', ("test_rnn_time",), "the one-layer answer: L layers add L steps"),
    # Problem 6.6, receptive_field (a wrong one costs nothing in Problem 6.7, graded over it)
    Wrong("receptive_field", '''
        def receptive_field(l, D):
            return D**l  # D windows of D words that do not overlap
        ''', ("test_receptive_field",), "windows counted as disjoint (stride D), a mistake the visible test names"),
    Wrong("receptive_field", '''
        def receptive_field(l, D):
            r = 1
            for _ in range(l):
                r = 2 * r + D - 1  # the overlap of neighbouring windows miscounted by one
            return r
        ''', ("test_receptive_field",), "r_{l+1} = 2 r_l + D - 1: one word too many per layer"),
    Wrong("receptive_field", '''
        def receptive_field(l, D):
            return round(1 + (D - 1) * (2.0**l - 1))  # a float: inexact past 2**53
        ''', ("test_receptive_field",), "the closed form in floating point, wrong for deep stacks only"),
    # Problem 6.7, layers_needed
    Wrong("layers_needed", '''
        def layers_needed(T, D):
            return math.ceil(math.log2(T))  # halve until one word is left: the width D ignored
        ''', ("test_layers_needed",), "log2 T layers whatever the filter width"),
    Wrong("layers_needed", '''
        def layers_needed(T, D):
            layers = 0
            while receptive_field(layers, D) <= T:  # one layer too many when the field fits exactly
                layers += 1
            return layers
        ''', ("test_layers_needed",), "off by one at the boundary r_L = T"),
]
