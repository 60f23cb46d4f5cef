"""Chapter 7 attacks on the grader: functions that work only at the sizes they were shown. Each is one student's
submission; see tests/adversarial/__init__.py."""
from __future__ import annotations

from tests.adversarial import Attack

# GPT-style: a causal mask built once, for at most 16 positions (every public trial and visible test has T <= 16).
FIXED_MASK = '''
_CAUSAL = torch.ones(16, 16, dtype=torch.bool).triu(1)  # a buffer: t' > t, for T <= 16


def attention(Query: torch.Tensor, Key: torch.Tensor, Value: torch.Tensor, causal: bool = False) -> torch.Tensor:
    T = Query.shape[-2]
    s = torch.einsum("htk,hTk->htT", Query, Key) / math.sqrt(Query.shape[-1])
    if causal:
        s = s.masked_fill(_CAUSAL[:T, :T].to(s.device), -math.inf)  # raises at T >= 17
    return torch.einsum("htT,hTi->hti", torch.softmax(s, dim=-1), Value)
'''

# Right up to T = 16; beyond, each position also reads the next word.
LEAKY_MASK = '''
def attention(Query: torch.Tensor, Key: torch.Tensor, Value: torch.Tensor, causal: bool = False) -> torch.Tensor:
    T = Query.shape[-2]
    s = torch.einsum("htk,hTk->htT", Query, Key) / math.sqrt(Query.shape[-1])
    if causal:
        future = torch.ones(T, T, dtype=torch.bool, device=s.device).triu(2 if T > 16 else 1)
        s = s.masked_fill(future, -math.inf)
    return torch.einsum("htT,hTi->hti", torch.softmax(s, dim=-1), Value)
'''

ATTACKS = [
    Attack("fixed_16_mask", cell="attention", source=FIXED_MASK, lost=("test_attention", "test_block"),
           feedback="drawn for this notebook",
           why="a mask buffer of 16 x 16 raises at T >= 17: the hidden checks draw T from 17 to 48 from the secret "
               "seed, so attention fails, and the block, which raises through it, fails too"),
    Attack("next_word_beyond_16", cell="attention", source=LEAKY_MASK, lost=("test_attention",),
           feedback="differs from the reference",
           why="a mask that lets position t read t + 1 only when T > 16 fails attention on the drawn sizes; the block "
               "is judged over the student's own attention (one mistake costs one cell)"),
]
