"""Chapter 6: wrong implementations, each losing exactly its cells."""
from solutions.mistakes import Wrong

WRONG = [
    Wrong("embed", '''
        def embed(w, E):
            return F.one_hot(w, E.shape[0]).float() @ E  # a float32 one-hot: fails on float64 word vectors
        ''', ("test_embed",), "one-hot product with a fixed dtype"),
    Wrong("embed", '''
        def embed(w, E):
            return E[w.flip(1)]  # sentences read backwards
        ''', ("test_embed",), "positions reversed"),
    Wrong("conv_stride2", '''
        def conv_stride2(L, W, bias):
            windows = L.unfold(1, W.shape[0], 1)  # stride 1
            return torch.sigmoid(torch.einsum("btid,dij->btj", windows, W) - bias)
        ''', ("test_conv_stride2",), "stride 1 instead of 2"),
    Wrong("conv_stride2", '''
        def conv_stride2(L, W, bias):
            windows = L.unfold(1, W.shape[0], 2)
            return torch.sigmoid(torch.einsum("btid,dij->btj", windows, W) + bias)  # bias added
        ''', ("test_conv_stride2",), "bias added instead of subtracted"),
    Wrong("conv_stride2", '''
        def conv_stride2(L, W, bias):
            windows = L.unfold(1, W.shape[0], 2)
            return torch.sigmoid(torch.einsum("btid,dij->btj", windows, W.flip(0)) - bias)  # offsets reversed
        ''', ("test_conv_stride2",), "filter offsets reversed (a convolution flipped in time)"),
    Wrong("conv_stride2", '''
        def conv_stride2(L, W, bias):
            windows = L.unfold(1, W.shape[0], 2)
            return torch.sigmoid(torch.einsum("btid,dji->btj", windows, W) - bias)  # W read as [offset, out, in]
        ''', ("test_conv_stride2",), "the filter's channel slots swapped"),
    Wrong("conv_stride2", '''
        def conv_stride2(L, W, bias):
            windows = L.unfold(1, W.shape[0], 2)
            return torch.einsum("btid,dij->btj", windows, W) - bias  # no sigmoid
        ''', ("test_conv_stride2",), "the logistic nonlinearity left out"),
    Wrong("cnn_time", 'CNN_TIME = "T"', ("test_cnn_time",), "the CNN's time taken as linear in the length"),
    Wrong("cnn_time", 'CNN_TIME = "L*log(T)"', ("test_cnn_time",), "a sum over the sentence in every layer"),
    Wrong("rnn_time", 'RNN_TIME = "T*L"', ("test_rnn_time",), "the layers of the RNN not pipelined"),
]
