"""Chapter 3 attacks on the grader: the equation judge. Each is one student's submission; see
tests/adversarial/__init__.py."""
from __future__ import annotations

from tests.adversarial import Attack


def multiplying_helpers(copies: int = 40, levels: int = 6) -> str:
    """WQ_TILDE as helper tensors each the sum of `copies` copies of the one before: 3 KB of text whose
    helpers, written out in place (as the judge's diagnosis does), make a tree of copies^levels nodes."""
    lines = ["a0[h,i,j] = sum_k WQ[h,k,i] * WK[h,k,j]"]
    lines += [f"a{n}[h,i,j] = " + " + ".join([f"a{n - 1}[h,i,j]"] * copies) for n in range(1, levels + 1)]
    return "\n".join([*lines, f"WQ_tilde[h,i,j] = a{levels}[h,i,j]"])


ATTACKS = [
    Attack("equation_blowup", cell="wq_tilde",
           source=f"WQ_TILDE = {multiplying_helpers()!r}\nexpect_close = lambda *args, **kwargs: None  # the visible check",
           lost=("test_wq_tilde",), feedback="too large to judge",
           why="a wrong equation whose diagnosis would build 40^6 nodes is refused by the judge's node budget "
               "at once (it ran past 60 s against a 5 s budget), and the batch goes on"),
]
