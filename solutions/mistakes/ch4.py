"""Chapter 4: wrong implementations, each losing exactly its cells.

Problem 4.1 is graded by behaviour in two cells: the head alone (test_blank_head) and the head
trained (test_blank_lm). A head that is a valid model but not a log-distribution, or not a
function of the word vectors, loses test_blank_head only (the training loss and the judge
renormalise); a head that is a valid distribution but reads one side only loses test_blank_lm
only (its output still changes with the states). A head that does nothing (a constant
log(1/|V|)) or ignores the states (a unigram model of the word vectors) has every property
test_blank_head tests but one, that its output changes
with its inputs, and cannot learn the blanks: it loses both cells.
"""
from solutions.mistakes import Patch, Wrong

WRONG = [
    Patch("blank_head", "return torch.log_softmax(scores, dim=-1)", "return scores  # raw scores, not ln P",
          ("test_blank_head",), "returns scores instead of log-probabilities (trains fine: the loss renormalises)"),
    Wrong("blank_head", '''
        class BlankHead(nn.Module):
            def __init__(self, J, U):
                super().__init__()
                self.out = nn.Linear(2 * J, 52)  # one output per word id of the chapter's vocabulary

            def forward(self, z_fwd_prev, z_bwd_next, E):
                return torch.log_softmax(self.out(torch.cat([z_fwd_prev, z_bwd_next], dim=-1)), dim=-1)
        ''', ("test_blank_head",), "an output layer per word id: ignores the word vectors, fixes the vocabulary size"),
    Patch("blank_head", "self.W_bwd, z_bwd_next)", "self.W_bwd, 0 * z_bwd_next)", ("test_blank_lm",),
          "reads the forward state only: a valid distribution, far from the optimum"),
    Wrong("blank_head", '''
        class BlankHead(nn.Module):
            def __init__(self, J, U):
                super().__init__()

            def forward(self, z_fwd_prev, z_bwd_next, E):
                flat = torch.zeros(z_fwd_prev.shape[0], E.shape[0], dtype=E.dtype, device=E.device)
                return torch.log_softmax(flat, dim=-1)  # log(1/|V|) for every blank and word, whatever the inputs
        ''', ("test_blank_head", "test_blank_lm"), "a constant log(1/|V|): normalised and invariant, reads nothing"),
    Wrong("blank_head", '''
        class BlankHead(nn.Module):
            def __init__(self, J, U):
                super().__init__()
                self.w = nn.Parameter(torch.randn(U) / U**0.5)

            def forward(self, z_fwd_prev, z_bwd_next, E):
                scores = (E @ self.w).expand(z_fwd_prev.shape[0], -1)  # the states are never read
                return torch.log_softmax(scores, dim=-1)
        ''', ("test_blank_head", "test_blank_lm"), "ignores both states: a unigram model of the word vectors"),
]
