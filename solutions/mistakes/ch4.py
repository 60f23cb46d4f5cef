"""Chapter 4: wrong implementations, each losing exactly its cells."""
from solutions.mistakes import Wrong

WRONG = [
    Wrong("blank_logits", '''
        def blank_logits(h_fwd_prev, h_bwd_next, E, W_fwd, W_bwd):
            return (torch.einsum("wi,ij,tj->tw", E, W_bwd, h_fwd_prev)  # matrices swapped
                    + torch.einsum("wi,ij,tj->tw", E, W_fwd, h_bwd_next))
        ''', ("test_blank_logits",), "each direction read out through the other direction's matrix"),
    Wrong("blank_logits", '''
        def blank_logits(h_fwd_prev, h_bwd_next, E, W_fwd, W_bwd):
            logits = torch.einsum("wi,ij,tj->tw", E, W_fwd, h_fwd_prev) + torch.einsum("wi,ij,tj->tw", E, W_bwd, h_bwd_next)
            return torch.softmax(logits, dim=-1)  # probabilities, not logits
        ''', ("test_blank_logits",), "returns probabilities instead of logits"),
    Wrong("blank_logits", '''
        def blank_logits(h_fwd_prev, h_bwd_next, E, W_fwd, W_bwd):
            h_prev = torch.cat([h_fwd_prev[:1], h_fwd_prev[:-1]])  # shifted a second time
            return torch.einsum("wi,ij,tj->tw", E, W_fwd, h_prev) + torch.einsum("wi,ij,tj->tw", E, W_bwd, h_bwd_next)
        ''', ("test_blank_logits",), "shifts the already-shifted forward states again"),
    Wrong("blank_logits", '''
        def blank_logits(h_fwd_prev, h_bwd_next, E, W_fwd, W_bwd):
            return torch.einsum("wi,ij,tj->tw", E, W_fwd + W_bwd, h_fwd_prev + h_bwd_next)  # cross terms
        ''', ("test_blank_logits",), "sums the states and the matrices first, adding cross terms"),
]
