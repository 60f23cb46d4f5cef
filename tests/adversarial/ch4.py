"""Chapter 4 attacks on the grader: training another head than the one judged. Each is one student's submission;
see tests/adversarial/__init__.py."""
from __future__ import annotations

import nbformat

from tests.adversarial import Attack, cell

# A head with every property test_blank_head asks for that cannot learn the blanks: it reads one side only.
ONE_SIDED = '''
class BlankHead(nn.Module):
    """ln P(w_t = w | rest) from the state before the blank only."""

    def __init__(self, J: int, U: int) -> None:
        super().__init__()
        self.W_fwd = nn.Parameter(torch.randn(U, J) / J**0.5)

    def forward(self, z_fwd_prev: torch.Tensor, z_bwd_next: torch.Tensor, E: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(torch.einsum("wu,uj,fj->fw", E, self.W_fwd, z_fwd_prev), dim=-1)
'''

# A head with one output per word id: forbidden (it never reads E) and fails test_blank_head, but trains well.
FIXED_VOCABULARY = '''
class FixedVocabHead(nn.Module):
    def __init__(self, J: int, n: int) -> None:
        super().__init__()
        self.W = nn.Linear(2 * J, n)

    def forward(self, z_fwd_prev: torch.Tensor, z_bwd_next: torch.Tensor, E: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(self.W(torch.cat([z_fwd_prev, z_bwd_next], dim=-1)), dim=-1)
'''


# A right head that searches every object of its process for a trial's private part (the dict at
# its end: {"kind": "base" | "words" | "rows", ...} for the head alone, {"perm", "held", "t"} for the
# trained model) or a whole trial (one item more than the student's function is called with); if it
# finds one, it answers NaN, so the check fails. It searches once per hidden check (the first head
# made inside each call of `run_trials`, where the trials are in memory if they ever are): a search
# reads about half a million objects.
PRYING_HEAD = """
class BlankHead(nn.Module):
    def __init__(self, J, U):
        super().__init__()
        import gc, sys
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_name != "run_trials":
            frame = frame.f_back
        self.pried = 0
        if frame is not None and frame.f_locals.get("trials") is not getattr(BlankHead, "searched", None):
            BlankHead.searched = frame.f_locals.get("trials")
            private = lambda o: type(o) is dict and (o.keys() == {"perm", "held", "t"} or (
                o.keys() in ({"kind"}, {"kind", "base", "perm"}) and o["kind"] in ("base", "words", "rows")))
            self.pried = sum(1 for o in gc.get_objects()
                             if private(o) or (type(o) is tuple and len(o) in (7, 9) and private(o[-1])))
        self.W_fwd = nn.Parameter(torch.randn(U, J) / J**0.5)
        self.W_bwd = nn.Parameter(torch.randn(U, J) / J**0.5)

    def forward(self, z_fwd_prev, z_bwd_next, E):
        scores = (torch.einsum("wu,uj,fj->fw", E, self.W_fwd, z_fwd_prev)
                  + torch.einsum("wu,uj,fj->fw", E, self.W_bwd, z_bwd_next))
        return torch.log_softmax(scores, dim=-1) + (float("nan") if self.pried else 0.0)
"""



def _after(grade_id: str, source: str):
    """A submission with the one-sided head, and an ordinary cell `source` right after the locked cell `grade_id`."""

    def mutate(nb: nbformat.NotebookNode, ctx: dict) -> nbformat.NotebookNode:
        cell(nb, "blank_head").source = ONE_SIDED.strip()
        at = nb.cells.index(cell(nb, grade_id))
        nb.cells.insert(at + 1, nbformat.v4.new_code_cell(source.strip()))
        return nb

    return mutate


ATTACKS = [
    Attack("head_swapped_after_its_test", mutate=_after("test_blank_head", FIXED_VOCABULARY + '''
BlankHead = lambda J, U: FixedVocabHead(J, n_words)  # noqa: E731 - judged above: the one-sided head
'''), lost=("test_blank_lm",), feedback="above the Bayes optimum",
           why="test_blank_head pins the class it judged: the trainer trains the one-sided head, not the "
               "fixed-vocabulary head the name holds later (3/6, as the one-sided head alone; 6/6 on main)"),
    Attack("trainer_redefined", mutate=_after("fit_blank_lm", FIXED_VOCABULARY + '''
_course_trainer = fit_blank_lm


def fit_blank_lm(*args, **kwargs):
    global BlankHead
    BlankHead = lambda J, U: FixedVocabHead(J, n_words)  # noqa: E731
    return _course_trainer(*args, **kwargs)
'''), lost=("test_blank_lm",), feedback="above the Bayes optimum",
           why="the locked cells pin the trainer and the model: test_blank_lm runs the course's fit_blank_lm on the "
               "head test_blank_head judged, whatever cells rebind in between"),
    Attack("prying_head", cell="blank_head", source=PRYING_HEAD, lost=(), feedback="",
           why="what reaches the notebook's process is `sent`, the trials without their private parts, for both "
               "checks: the prying head finds nothing and earns every point (it fails where the parts are: "
               "tests/checks/test_ch4_checks.py)"),
]
