"""The judge of equation answers: right answers in any equivalent form pass, each wrong one fails with
the sentence that names its mistake, and no message prints the reference.

The questions are the seeds' derivations (tests/equation_questions.py). Through the registry, the
check behaves like any value answer: one empty trial, the reference is what a right answer sends,
`local_check` and the wire (as the engine uses them) give the same verdicts.
"""
from __future__ import annotations

import pytest
import torch

from attnlab import equations as E
from attnlab import wire
from attnlab.grading import Outcome, run_trials
from autograder import judge as J
from autograder.checks import CHECKS
from autograder.checks.base import EquationCheck, EquationQuestion
from autograder.equation_judge import Decision, judge_equations
from tests.equation_questions import CAPTION, CAPTION_STEP, CNN_LAYER0, CNN_STRIDE2, QUESTIONS, SPATIAL, WQ_TILDE

PASS = None


def edit(q: EquationQuestion, *pairs: str) -> str:
    """The question's reference with (old, new) replacements, each of which must apply."""
    text = q.reference
    for old, new in zip(pairs[::2], pairs[1::2]):
        assert old in text, old
        text = text.replace(old, new)
    return text


SPATIAL_RENAMED = r"""
Query[a,b,c,d] = sum_e WQ[a,d,e] * M[b,c,e]
Key[a,b,c,d] = sum_e M[b,c,e] WK[a,d,e]
Value[a,b,c,d] = sum_{e} WV[a,d,e] M[b,c,e]
alpha[a,b,c,p,q] = softmax_{q,p} sum_d Key[a,p,q,d] * Query[a,b,c,d] * K^(-1/2)
V[a,b,c,d] = sum_p sum_q Value[a,p,q,d] alpha[a,b,c,p,q]
"""
SPATIAL_WRITTEN_OUT = r"""
Query[h,x,y,k] = \sum_{j} W^Q[h,k,j] \cdot M[x,y,j]
Key[h,x,y,k] = \sum_{j} W^K[h,k,j] \cdot M[x,y,j]
Value[h,x,y,i] = \sum_{j} W^V[h,i,j] \cdot M[x,y,j]
s[h,x,y,x',y'] = \frac{1}{\sqrt{K}} \sum_k Query[h,x,y,k] Key[h,x',y',k]
α[h,x,y,x',y'] = \exp(s[h,x,y,x',y']) / \sum_{u,v} \exp(s[h,x,y,u,v])
V[h,x,y,i] = \sum_{x',y'} α[h,x,y,x',y'] Value[h,x',y',i]
"""

NATURAL_FROM = "softmax_{x2,y2} (sum_k Query[h,x,y,k] * Key[h,x2,y2,k]) / sqrt(K)"
NATURAL_FORMS = [
    "softmax_{x2,y2} (1/sqrt(K)) * sum_k Query[h,x,y,k] * Key[h,x2,y2,k]",
    "softmax_{x2,y2} (1/sqrt(K)) sum_k Query[h,x,y,k] Key[h,x2,y2,k]",
    r"softmax_{x2,y2} \frac1{\sqrt{K}} \sum_k Query[h,x,y,k] \ast Key[h,x2,y2,k]",
    r"softmax_{x2,y2} \frac{1}{\sqrt K} \cdot \sum_{k} Query[h,x,y,k] Key[h,x2,y2,k]",
    r"softmax_{x2,y2} (sum_k Query[h,x,y,k] * Key[h,x2,y2,k]) \div sqrt(K)",
    "softmax_{x2,y2} (sum_k Query[h,x,y,k] * Key[h,x2,y2,k]) ÷ sqrt(K)",
    "softmax_{x2,y2} (sum_k Query[h,x,y,k] ∗ Key[h,x2,y2,k]) * K^(-½)",
    r"softmax_{x2,y2} \frac12 (sum_k Query[h,x,y,k] * Key[h,x2,y2,k]) * 2 / sqrt(K)",
    "softmax_{x2,y2} (sum_k Query[h,x,y,k] * Key[h,x2,y2,k]) / sqrt(K²) * sqrt(K)",
]
JUDGED = [  # (question, answer, None if it must pass, else the exact message)
    # the spatial equations (000 P2a, 002 P5a)
    (SPATIAL, SPATIAL.reference, PASS),
    (SPATIAL, SPATIAL_RENAMED, PASS),
    (SPATIAL, SPATIAL_WRITTEN_OUT, PASS),
    (SPATIAL, edit(SPATIAL, "(sum_k Query[h,x,y,k] * Key[h,x2,y2,k]) / sqrt(K)",
                   "sum_k Query[h,x,y,k] / sqrt(K) * Key[h,x2,y2,k]"), PASS),
    (SPATIAL, edit(SPATIAL, "(sum_k Query[h,x,y,k] * Key[h,x2,y2,k]) / sqrt(K)",
                   "(sum_k Query[h,x,y,k] * (Key[h,x2,y2,k] / sqrt(K)))"), PASS),
    (SPATIAL, edit(SPATIAL, "alpha[h,x,y,x2,y2] = softmax_{x2,y2} (sum_k Query[h,x,y,k] * Key[h,x2,y2,k]) / sqrt(K)",
                   "alpha[h,x,y,x2,y2] = softmax_{x2,y2} (sum_{k,j,j2} WQ[h,k,j] M[x,y,j] WK[h,k,j2] M[x2,y2,j2]) "
                   "/ sqrt(K)"), PASS),
    # natural forms (issue 23.5): the scale written first, as the book's display does, and the Θ checker's spellings
    *((SPATIAL, edit(SPATIAL, NATURAL_FROM, natural), PASS) for natural in NATURAL_FORMS),
    (SPATIAL, edit(SPATIAL, NATURAL_FROM, "softmax_{x2,y2} (1/sqrt(J)) * sum_k Query[h,x,y,k] * Key[h,x2,y2,k]"),
     "the scores inside your alpha's softmax differ from the expected ones by a constant factor: check the scale"),
    (SPATIAL, edit(SPATIAL, "softmax_{x2,y2}", "softmax_{x2}"), "your alpha is normalised over x2 only, not over (x2, y2)"),
    (SPATIAL, edit(SPATIAL, "softmax_{x2,y2} (sum_k Query[h,x,y,k] * Key[h,x2,y2,k])",
                   "softmax_{x,y} (sum_k Query[h,x,y,k] * Key[h,x2,y2,k])"),
     "your alpha is normalised over (x, y), not over (x2, y2)"),
    (SPATIAL, edit(SPATIAL, ") / sqrt(K)", ")"),
     "the scores inside your alpha's softmax differ from the expected ones by a constant factor: check the scale"),
    (SPATIAL, edit(SPATIAL, "/ sqrt(K)", "/ sqrt(J)"),
     "the scores inside your alpha's softmax differ from the expected ones by a constant factor: check the scale"),
    (SPATIAL, edit(SPATIAL, "sum_j WQ[h,k,j]", "sum_j WK[h,k,j]"), "your Query reads WK where the expected one reads WQ"),
    (SPATIAL, edit(SPATIAL, "Query[h,x,y,k] * Key[h,x2,y2,k]", "Query[h,x2,y2,k] * Key[h,x,y,k]"),
     "your alpha reads Query with x2 on its x axis, not x"),
    (SPATIAL, edit(SPATIAL, "alpha[h,x,y,x2,y2] * Value[h,x2,y2,i]", "alpha[h,x,y,x2,y2] * Value[h,x,y,i]"),
     "your V keeps x on the x axis of Value[h,x,y,i], where that axis is summed over"),
    (SPATIAL, edit(SPATIAL, "V[h,x,y,i] = sum_{x2,y2} alpha[h,x,y,x2,y2] * Value[h,x2,y2,i]",
                   "V[h,x2,y2,i] = sum_{x,y} alpha[h,x,y,x2,y2] * Value[h,x,y,i]"),
     "your V sums over (x, y), not (x2, y2) (the axes of alpha[h,x,y,x2,y2])"),
    (SPATIAL, edit(SPATIAL, "softmax_{x2,y2} (sum_k", "(sum_k"), "your alpha is not normalised (no softmax over (x2, y2))"),
    (SPATIAL, edit(SPATIAL, "sum_{x2,y2} alpha[h,x,y,x2,y2]", "sum_{x2,y2} exp(alpha[h,x,y,x2,y2])"),
     "your V applies exp, which it should not"),
    (SPATIAL, edit(SPATIAL, "Query[h,x,y,k] = sum_j", "Query[h,x,y,k] = -sum_j"), "your Query has the wrong sign"),
    (SPATIAL, edit(SPATIAL, "Value[h,x,y,i] = sum_j", "Value[h,x,y,i] = 2 * sum_j"),
     "your Value differs from the expected one by a constant factor: check the scale"),
    (SPATIAL, edit(SPATIAL, "sum_j WQ[h,k,j]", "sum_j WK[h,k,j]", "sum_j WV[h,i,j]", "2 * sum_j WV[h,i,j]"),
     "your Query reads WK where the expected one reads WQ (Value is wrong too)"),
    (SPATIAL, edit(SPATIAL, "sum_{x2,y2} alpha[h,x,y,x2,y2]", "sum_{x2,y2} log(alpha[h,x,y,x2,y2] - 1)"),
     "your V has NaN or infinite values (a log of a negative number, or a division by zero?)"),
    # W̃Q (002 P6a): an einsum spec with its scale, or an equation
    (WQ_TILDE, "hka,hkb->hab / sqrt(K)", PASS),
    (WQ_TILDE, " hka , hkb -> hab * 1/sqrt(K) ", PASS),
    (WQ_TILDE, "hki,hkj->hij * K^(-1/2)", PASS),
    (WQ_TILDE, "WQ_tilde[h,a,b] = 1/sqrt(K) sum_k WK[h,k,b] WQ[h,k,a]", PASS),
    (WQ_TILDE, r"\tilde{W}^Q[h,j_1,j_2] = \frac{1}{\sqrt{K}} \sum_k W^Q[h,k,j_1] W^K[h,k,j_2]", PASS),
    (WQ_TILDE, "W̃Q[h,a,b] = Σ_k WQ[h,k,a] WK[h,k,b] / √K", PASS),
    (WQ_TILDE, "hka,hkb->hab", "your WQ_tilde differs from the expected one by a constant factor: check the scale"),
    (WQ_TILDE, "hka,hkb->hab * sqrt(K)", "your WQ_tilde differs from the expected one by a constant factor: check the scale"),
    (WQ_TILDE, "hka,hkb->hba / sqrt(K)", "your WQ_tilde reads WQ with j2 on its j axis, not j"),
    (WQ_TILDE, "hak,hbk->hab / sqrt(K)",
     "line 1 (WQ_tilde): your WQ_tilde keeps index a (size K), which the question's WQ_tilde[h,j,j2] does not have"),
    (WQ_TILDE, "hka,hka->ha", "line 1 (WQ_tilde): the question's WQ_tilde[h,j,j2] has 3 indices, yours has 2 "
                              "(WQ_tilde[h,a])"),
    (WQ_TILDE, "hka,hkb->hab / sqrt(Q)", "line 1 (WQ_tilde): Q is neither a size of this question (H, J, K) nor a tensor"),
    # the captioner's attention (002 P2): alpha[x,y] and the glimpse V[k]
    (CAPTION, CAPTION.reference, PASS),
    (CAPTION, "s[x,y] = sum_{k,j} M[x,y,k] W_att[j,k] z[j]\nα[x,y] = exp(s[x,y]) / sum_{a,b} exp(s[a,b])\n"
              "V[k] = sum_x sum_y α[x,y] M[x,y,k]", PASS),
    (CAPTION, "alpha[x,y] = softmax_{y,x} sum_j z[j] sum_k W_att[j,k] M[x,y,k]\nV[k] = sum_{x,y} M[x,y,k] alpha[x,y]", PASS),
    (CAPTION, edit(CAPTION, "softmax_{x,y}", "softmax_{x}"), "your alpha is normalised over x only, not over (x, y)"),
    (CAPTION, edit(CAPTION, "softmax_{x,y}", "softmax_{y}"), "your alpha is normalised over y only, not over (x, y)"),
    (CAPTION, edit(CAPTION, "V[k] = sum_{x,y} alpha[x,y] * M[x,y,k]", "V[k] = sum_{x,y} M[x,y,k]"),
     "your V does not use alpha"),
    (CAPTION, edit(CAPTION, "alpha[x,y] = softmax_{x,y} sum_{j,k} z[j] * W_att[j,k] * M[x,y,k]",
                   "alpha[x,y] = softmax_{x,y} sum_{j,k} z[j] * W_att[j,k] * M[x,y,k] + sum_{j,k} z[j] * W_att[j,k]"),
     "your alpha gives different values, though its indices, sums and functions look like the expected ones: check "
     "signs, constant factors and the terms you add"),
    # the whole decoding step (002 P2), CELL declared by the sizes of its vectors
    (CAPTION_STEP, CAPTION_STEP.reference, PASS),
    (CAPTION_STEP, edit(CAPTION_STEP, "P[w] = softmax_w sum_{u,j} E[w,u] * W_auto[u,j] * z[j]",
                        "s[w] = sum_u E[w,u] sum_j W_auto[u,j] z[j]\nP[w] = exp(s[w]) / sum_v exp(s[v])",
                        "z_next[:] = CELL(z[:], V[:], e[:])", "z_next[:] = CELL(z[:], V[:], E_w[:])",
                        "V[k] = sum", "E_w[u] = e[u]\nV[k] = sum"), PASS),
    (CAPTION_STEP, edit(CAPTION_STEP, "CELL(z[:], V[:], e[:])", "CELL(z[:], e[:], V[:])"),
     "line 5 (z_next): argument 2 of CELL should be a vector of size K; e[:] runs over U\n"
     "line 5 (z_next): argument 3 of CELL should be a vector of size U; V[:] runs over K"),
    (CAPTION_STEP, edit(CAPTION_STEP, "CELL(z[:], V[:], e[:])", "CELL(z[:], V[:], E[0,:])"),
     "your z_next reads E where the expected one reads e"),
    (CAPTION_STEP, edit(CAPTION_STEP, "CELL(z[:], V[:], e[:])", "CELL(z[:], V[:])"),
     "line 5 (z_next): CELL takes 3 vectors, got 2"),
    (CAPTION_STEP, edit(CAPTION_STEP, "z_next[:] = CELL", "z_next[j] = CELL"),
     "line 5 (z_next): the result of a function is a vector: write its axis as `:` on the left, z_next[...,:]\n"
     "line 5 (z_next): index j of z_next does not appear on the right side"),
    (CAPTION_STEP, edit(CAPTION_STEP, "softmax_w sum_{u,j} E[w,u] * W_auto[u,j] * z[j]",
                        "softmax_w sum_{u,j} E[w,u] * W_auto[u,j] * W_att[j,k] * M[0,0,k]"),
     "line 2 (P): index k appears on the right but not on the left: sum over it (sum_k ...) or add it to P's indices"),
    (CAPTION_STEP, edit(CAPTION_STEP, "P[w] = softmax_w sum_{u,j} E[w,u] * W_auto[u,j] * z[j]",
                        "P[w] = sum_{u,j} E[w,u] * W_auto[u,j] * z[j]"), "your P is not normalised (no softmax over vocab)"),
    # language CNN layer 0 (002 P3a): a gather through the word ids
    (CNN_LAYER0, CNN_LAYER0.reference, PASS),
    (CNN_LAYER0, "M0[b,t,u] = E[w[b,t],u]", PASS),
    (CNN_LAYER0, "M0[b,t,j] = E[w[t,b], j]", "line 1 (M0): M0's indices are [b,t,j], yours defines [t,b,j]"),
    (CNN_LAYER0, "M0[b,t,j] = E[j, w[b,t]]", "line 1 (M0): E[j,w[b,t]]: w holds values below V, but that axis of E has size J"),
    (CNN_LAYER0, "M0[b,t,j] = 2 E[w[b,t], j]", "your M0 differs from the expected one by a constant factor: check the scale"),
    (CNN_LAYER0, "M0[b,t,j] = E[w[b,t+1], j]",
     "your equations cannot be evaluated: line 1 (M0): w[b,t + 1] reads position 5 of w's axis 2, which has size 5 (at t=4)"),
    # language CNN stride-2 layer (002 P3b)
    (CNN_STRIDE2, CNN_STRIDE2.reference, PASS),
    (CNN_STRIDE2, "M1[b,t,j2] = σ(Σ_{Δ,j} W[Δ,j,j2] M0[b,2t+Δ,j] − β[j2])", PASS),
    (CNN_STRIDE2, "M1[b,t,c] = sigmoid(sum_d sum_a M0[b, d + 2*t, a] W[d,a,c] + (-1) * beta[c])", PASS),
    (CNN_STRIDE2, "M1[b,t,c] = 1/(1 + exp(beta[c] - sum_{d,a} M0[b, d + 2*t, a] W[d,a,c]))", PASS),
    (CNN_STRIDE2, edit(CNN_STRIDE2, "2*t + d", "t + d"),
     "your M1 reads the t axis of M0[b,t,j] at t + d: check the stride and the offset"),
    (CNN_STRIDE2, edit(CNN_STRIDE2, "2*t + d", "2*t + d + 1"),
     "your equations cannot be evaluated: line 1 (M1): M0[b,2*t + d + 1,j] reads position 13 of M0's axis 2, which "
     "has size 13 (at t=5, d=2)"),
    (CNN_STRIDE2, edit(CNN_STRIDE2, "2*t + d", "2*t - d"),
     "your equations cannot be evaluated: line 1 (M1): M0[b,2*t - d,j] reads position -2 of M0's axis 2, which has "
     "size 13 (at t=0, d=2)"),
    (CNN_STRIDE2, edit(CNN_STRIDE2, "sigmoid(", "tanh("),
     "your M1 does not apply sigmoid"),
    (CNN_STRIDE2, edit(CNN_STRIDE2, "sigmoid(", "("), "your M1 does not apply sigmoid"),
    (CNN_STRIDE2, edit(CNN_STRIDE2, "- beta[j2]", ""), "your M1 does not use beta"),
    (CNN_STRIDE2, edit(CNN_STRIDE2, "- beta[j2]", "+ beta[j2]"),
     "your M1 gives different values, though its indices, sums and functions look like the expected ones: check "
     "signs, constant factors and the terms you add"),
    (CNN_STRIDE2, edit(CNN_STRIDE2, "W[d,j,j2]", "W[d,j2,j]"),
     "line 1 (M1): index j2 runs over J in W[d,j2,j] but over J2 in beta[j2]\n"
     "line 1 (M1): index j runs over J2 in W[d,j2,j] but over J in M0[b,2*t + d,j]"),
    (CNN_STRIDE2, edit(CNN_STRIDE2, "M1[b,t,j2]", "M1[t,j2]"),
     "line 1 (M1): index b appears on the right but not on the left: sum over it (sum_b ...) or add it to M1's "
     "indices\nline 1 (M1): the question's M1[b,t2,j2] has 3 indices, yours has 2 (M1[t,j2])"),
]


def _id(case: tuple) -> str:
    q, answer, want = case
    name = next(k for k, v in QUESTIONS.items() if v is q)
    return f"{name}:{'pass' if want is None else want[:40]}"


@pytest.mark.parametrize("q, answer, want", JUDGED, ids=[_id(c) for c in JUDGED])
def test_judged(q: EquationQuestion, answer: str, want: str | None) -> None:
    decision = judge_equations(q, answer)
    if want is None:
        assert decision.passed, decision.message
    else:
        assert not decision.passed
        assert decision.message == want
        assert_no_reference_in(decision.message, q)


def assert_no_reference_in(message: str, q: EquationQuestion) -> None:
    """No right-hand side (nor a sum in it) of the reference appears in a message."""
    for eq in E.parse_answer(q.reference, q.operands, next(iter(q.defines))):
        rhs = E.show(eq.rhs)
        assert rhs not in message
        assert eq.text.split("=", 1)[1].strip() not in message


def test_every_kind_of_mistake_is_caught_by_some_example() -> None:
    """Each question has right answers in other forms and several wrong ones."""
    for q in QUESTIONS.values():
        cases = [c for c in JUDGED if c[0] is q]
        assert sum(c[2] is None for c in cases) >= 2 and sum(c[2] is not None for c in cases) >= 4


def test_answers_that_are_not_equations() -> None:
    for answer, message in [(None, "got NoneType"), (b"V[k] = 1", "got bytes"), (["a"], "got list"),
                            ("", "your answer could not be read: the answer holds no equation"),
                            ("x" * 10_000, "your answer could not be read: the answer is 10000 characters long")]:
        decision = judge_equations(CAPTION, answer)
        assert not decision.passed and message in decision.message


def test_a_hostile_answer_is_cheap_to_refuse() -> None:
    big = "alpha[x,y] = softmax_{x,y} sum_{j,k,a,b,c,d} z[j] W_att[j,k] M[x,y,k] M[a,b,c] M[c,d,k] M[d,a,k]\n" \
          "V[k] = sum_{x,y} alpha[x,y] M[x,y,k]"
    decision = judge_equations(CAPTION, big)
    assert not decision.passed


# --------------------------------------------------------------------------- the question itself

def test_a_question_checks_itself() -> None:
    base = dict(inputs={"z": "J", "W_att": "J,K", "M": "X,Y,K"}, defines={"alpha": "X,Y", "V": "K"},
                reference=CAPTION.reference)
    with pytest.raises(ValueError, match="must all differ"):
        EquationQuestion(**base, sizes=({"J": 3, "K": 3, "X": 4, "Y": 5},))
    with pytest.raises(ValueError, match="must give exactly"):
        EquationQuestion(**base, sizes=({"J": 3, "K": 2, "X": 4},))
    with pytest.raises(ValueError, match="at least one draw"):
        EquationQuestion(**base, sizes=())
    with pytest.raises(E.EquationError, match="index y appears on the right but not on the left"):
        EquationQuestion(**{**base, "reference": CAPTION.reference.replace("sum_{x,y} alpha", "sum_{x} alpha")},
                         sizes=({"J": 3, "K": 2, "X": 4, "Y": 5},))
    with pytest.raises(ValueError, match="defines exactly one tensor"):
        EquationQuestion(**base, sizes=({"J": 3, "K": 2, "X": 4, "Y": 5},), operands=("z", "M"))


# --------------------------------------------------------------------------- budgets (issue 22.4)

def multiplying_helpers(copies: int, levels: int) -> str:
    """A wrong answer whose helper tensors are each the sum of `copies` copies of the one before: a few KB of
    text whose helpers, written out in place, grow as copies^levels."""
    lines = ["a0[h,i,j] = sum_k WQ[h,k,i] * WK[h,k,j]"]
    lines += [f"a{n}[h,i,j] = " + " + ".join([f"a{n - 1}[h,i,j]"] * copies) for n in range(1, levels + 1)]
    return "\n".join([*lines, f"WQ_tilde[h,i,j] = a{levels}[h,i,j]"])


TOO_LARGE = (f"your equations are too large to judge: comparing them builds more than {E.MAX_BUILT} terms "
             "(helper tensors written out in place); write each tensor more simply")


def test_helpers_that_multiply_are_refused_and_the_next_answer_is_judged() -> None:
    assert len(multiplying_helpers(40, 6)) < 3100
    assert judge_equations(WQ_TILDE, multiplying_helpers(40, 3)) == Decision(False, TOO_LARGE)  # 320000 nodes
    assert judge_equations(WQ_TILDE, multiplying_helpers(40, 6)) == Decision(False, TOO_LARGE)  # 40^6 nodes written out
    small = judge_equations(WQ_TILDE, multiplying_helpers(40, 2))  # 8000 nodes: diagnosed as usual
    assert small == Decision(False, "your WQ_tilde differs from the expected one by a constant factor: check the scale")
    assert judge_equations(WQ_TILDE, WQ_TILDE.reference).passed


def test_every_stage_of_judging_has_a_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    from autograder import equation_judge

    monkeypatch.setattr(equation_judge, "TIME_BUDGET", 0.0)
    verdict = judge_equations(SPATIAL, SPATIAL.reference)
    assert verdict == Decision(False, "your equations took longer than 0 s to judge; write them more simply")


def test_a_non_finite_tensor_never_compares_equal() -> None:
    from autograder.equation_judge import _compare

    expected = torch.ones(3, dtype=torch.float64)
    assert _compare(expected.clone(), expected, SPATIAL) is None
    for bad in (float("nan"), float("inf"), -float("inf")):
        mine = expected.clone()
        mine[1] = bad
        assert _compare(mine, expected, SPATIAL) == "NaN or infinite values"
    assert _compare(expected + 1e-3, expected, SPATIAL) == "different values"


# --------------------------------------------------------------------------- through the registry and the wire

@pytest.fixture
def registered(monkeypatch) -> str:
    monkeypatch.setitem(CHECKS, "test.SPATIAL_EQUATIONS", EquationCheck(SPATIAL))
    return "test.SPATIAL_EQUATIONS"


def test_an_equation_check_is_a_value_answer_with_one_empty_trial(registered: str) -> None:
    trials = J.make_trials(registered, seed=1)
    assert trials == [()]
    check = CHECKS[registered]
    assert [o.value for o in J.reference_outcomes(registered, trials)] == [SPATIAL.reference]
    assert check.reference(*trials[0]) == SPATIAL.reference  # what the engine's warm-up calls
    assert J.judge(registered, trials, run_trials(SPATIAL.reference, trials)).passed
    wrong = SPATIAL.reference.replace("softmax_{x2,y2}", "softmax_{x2}")
    verdict = J.judge(registered, trials, run_trials(wrong, trials))
    assert not verdict.passed and verdict.message == "your alpha is normalised over x2 only, not over (x2, y2)"
    assert not J.judge(registered, trials, []).passed
    assert not J.judge(registered, trials, [Outcome(error="NameError: SPATIAL_EQUATIONS")]).passed


def test_local_check_and_the_wire_agree(registered: str) -> None:
    J.local_check(registered, SPATIAL.reference)
    wrong = SPATIAL.reference.replace(") / sqrt(K)", ")")
    with pytest.raises(AssertionError, match=r"constant factor: check the scale \[check test.SPATIAL_EQUATIONS"):
        J.local_check(registered, wrong)
    for answer, ok in [(SPATIAL.reference, True), (wrong, False)]:
        blob = wire.encode({"value": answer, "error": None})  # what the sandboxed notebook sends
        d = wire.decode(blob, record_device=True)
        assert J.judge(registered, [()], [Outcome(value=d["value"], error=d["error"])]).passed is ok
