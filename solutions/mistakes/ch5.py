"""Chapter 5: wrong implementations, each losing exactly its cells."""
from solutions.mistakes import Wrong

WRONG = [
    # Problem 5.1: the equations
    Wrong("caption_equations", '''
        CAPTION_EQUATIONS = r"""
        alpha[x,y] = softmax_{x} sum_{j,k} z_prev[j] * W_att[j,k] * M[x,y,k]
        V[k] = sum_{x,y} alpha[x,y] * M[x,y,k]
        z[:] = CELL(z_prev[:], V[:], e[:])
        P[w] = softmax_w sum_{u,j} E[w,u] * W_auto[u,j] * z[j]
        """
        ''', ("test_caption_equations",), "the attention normalised over x only (one distribution per column)"),
    Wrong("caption_equations", '''
        CAPTION_EQUATIONS = r"""
        alpha[x,y] = softmax_{x,y} sum_{j,k} z_prev[j] * W_att[k,j] * M[x,y,k]
        V[k] = sum_{x,y} alpha[x,y] * M[x,y,k]
        z[:] = CELL(z_prev[:], V[:], e[:])
        P[w] = softmax_w sum_{u,j} E[w,u] * W_auto[u,j] * z[j]
        """
        ''', ("test_caption_equations",), "W_att read transposed (a form error the visible test names)"),
    Wrong("caption_equations", '''
        CAPTION_EQUATIONS = r"""
        alpha[x,y] = softmax_{x,y} sum_{j,k} z_prev[j] * W_att[j,k] * M[x,y,k]
        V[k] = sum_{x,y} alpha[x,y] * M[x,y,k]
        z[:] = CELL(z_prev[:], e[:], V[:])
        P[w] = softmax_w sum_{u,j} E[w,u] * W_auto[u,j] * z[j]
        """
        ''', ("test_caption_equations",), "CELL's arguments in another order than the seed's"),
    Wrong("caption_equations", '''
        CAPTION_EQUATIONS = r"""
        alpha[x,y] = softmax_{x,y} sum_{j,k} z_prev[j] * W_att[j,k] * M[x,y,k]
        V[k] = sum_{x,y} alpha[x,y] * M[x,y,k]
        z[:] = CELL(z_prev[:], V[:], e[:])
        P[w] = softmax_w sum_{u,j} E[w,u] * W_auto[u,j] * z_prev[j]
        """
        ''', ("test_caption_equations",), "the word predicted from the state before the glimpse (the seed's indexing, not the book's)"),
    Wrong("image_attention", '''
        def image_attention(z_prev, W_att, M):
            s = torch.einsum("j,jk,xyk->xy", z_prev, W_att, M)
            return torch.softmax(s, dim=0)  # over x only: each column sums to 1
        ''', ("test_image_attention",), "softmax over x only"),
    Wrong("image_attention", '''
        def image_attention(z_prev, W_att, M):
            s = torch.einsum("j,jk,xyk->xy", z_prev, W_att, M)
            return torch.softmax(s, dim=-1)  # over y only: each row sums to 1
        ''', ("test_image_attention",), "softmax over y only"),
    Wrong("image_attention", '''
        def image_attention(z_prev, W_att, M):
            s = torch.einsum("j,jk,xyk->xy", z_prev, W_att, M)
            return torch.softmax(s.reshape(-1), dim=0)  # never reshaped back to [X, Y]
        ''', ("test_image_attention",), "missing reshape back to [X, Y]"),
    Wrong("image_attention", '''
        def image_attention(z_prev, W_att, M):
            s = torch.einsum("j,jk,xyk->xy", z_prev, W_att, M) / math.sqrt(M.shape[-1])
            return torch.softmax(s.reshape(-1), dim=0).reshape(s.shape)
        ''', ("test_image_attention",), "scores scaled by 1/sqrt(K), which the seed's equation does not have"),
    Wrong("image_attention", '''
        def image_attention(z_prev, W_att, M):
            e = torch.exp(torch.einsum("j,jk,xyk->xy", z_prev, W_att, M))
            return e / e.sum()  # overflows for large scores
        ''', ("test_image_attention",), "exp without subtracting the maximum: inf/inf for large scores"),
    Wrong("image_attention", '''
        def image_attention(z_prev, W_att, M):
            X, Y, K = M.shape
            s = torch.einsum("j,jk,xyk->xy", z_prev, W_att, M)
            return torch.softmax(s.T.reshape(-1), dim=0).reshape(X, Y)  # cells reordered
        ''', ("test_image_attention",), "scores transposed before the reshape: weights land on the wrong cells"),
    Wrong("attend", '''
        def attend(alpha, M):
            return (alpha[:, :, None] * M).sum(dim=(1, 2))  # sums over y and k, keeps x
        ''', ("test_attend",), "sum over the wrong axes"),
    Wrong("attend", '''
        def attend(alpha, M):
            X, Y, K = M.shape
            return alpha.T.reshape(-1) @ M.reshape(X * Y, K)  # alpha's cells in the wrong order
        ''', ("test_attend",), "alpha transposed against M"),
    Wrong("attend", '''
        def attend(alpha, M):
            return M.mean(dim=(0, 1))  # ignores alpha
        ''', ("test_attend",), "plain mean of the features"),
    Wrong("attend", '''
        def attend(alpha, M):
            return alpha[:, :, None] * M  # weighted but never summed
        ''', ("test_attend",), "weighted features not summed over the cells"),
    Wrong("attend", '''
        def attend(alpha, M):
            a = alpha / alpha.sum()
            return torch.einsum("xy,xyk->k", a, M)  # renormalised
        ''', ("test_attend",), "alpha renormalised (the glimpse must be linear in alpha)"),
]
