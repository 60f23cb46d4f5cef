"""The index-equation answer language (`attnlab.equations`) and its visible-test helper.

Reading (every spelling the docstring promises), the form check (each malformed answer gets the
sentence that names its problem), evaluation against torch written by hand, the caps that keep
a hostile string cheap, and `expect_equations`, which must never judge correctness.
"""
from __future__ import annotations

import math

import pytest
import torch

from attnlab import equations as E
from attnlab.equations import EquationError
from attnlab.testing import Explained, expect_equations
from tests.equation_questions import CAPTION, CNN_LAYER0, CNN_STRIDE2, QUESTIONS, SPATIAL, SPATIAL_EQUATIONS, WQ_TILDE


def canonical(text: str) -> list[str]:
    return [str(eq) for eq in E.parse(text)]


# --------------------------------------------------------------------------- reading

SPELLINGS = [  # (written by a student, the same in plain notation)
    (r"\sum_{j} WQ[h,k,j] \cdot M[x,y,j]", "sum_j WQ[h,k,j] * M[x,y,j]"),
    ("Σ_j WQ[h,k,j] · M[x,y,j]", "sum_j WQ[h,k,j] * M[x,y,j]"),
    ("∑_j WQ[h,k,j] × M[x,y,j]", "sum_j WQ[h,k,j] * M[x,y,j]"),
    ("sum_j WQ[h,k,j] M[x,y,j]", "sum_j WQ[h,k,j] * M[x,y,j]"),
    ("sum_{j} W^Q[h,k,j] * M[x,y,j]", "sum_j WQ[h,k,j] * M[x,y,j]"),
    ("sum_{j} W^{Q}[h,k,j] * M[x,y,j]", "sum_j WQ[h,k,j] * M[x,y,j]"),
    (r"\mathrm{softmax}_{t'} s[t,t']", "softmax_t' s[t,t']"),
    (r"\operatorname{softmax}_{t′}(s[t,t′])", "softmax_t' s[t,t']"),
    (r"\frac{1}{\sqrt{K}} s[t,t']", "1 / sqrt(K) * s[t,t']"),
    ("s[t,t'] / √K", "s[t,t'] / sqrt(K)"),
    ("K^(1/2)", "K^(1 / 2)"),
    (r"\sigma(a[t] − b[t])", "sigmoid(a[t] - b[t])"),
    ("σ(a[t])", "sigmoid(a[t])"),
    (r"\exp(a[t]) + \tanh(a[t]) + \log(a[t]) + ln(a[t])", "exp(a[t]) + tanh(a[t]) + log(a[t]) + log(a[t])"),
    (r"\left( a[t] \right) \, + \; b[t]", "a[t] + b[t]"),
    ("$a[t] + b[t]$", "a[t] + b[t]"),
    ("α[t] * β[t]", "alpha[t] * beta[t]"),
    (r"\alpha[t] * \beta[t]", "alpha[t] * beta[t]"),
    ("M0[b, 2t + Δ, j]", "M0[b,2*t + Delta,j]"),
    ("M0[b, 2*(t + 1) - 1, j]", "M0[b,2*t + 1,j]"),
    ("E[w[b,t], j]", "E[w[b,t],j]"),
    ("z[t-1, j]", "z[t - 1,j]"),
]


@pytest.mark.parametrize("written, plain", SPELLINGS)
def test_every_spelling_reads_as_the_plain_one(written: str, plain: str) -> None:
    assert canonical(f"X[t] = {written}") == canonical(f"X[t] = {plain}")


def test_tilde_and_superscript_names() -> None:
    for lhs in (r"\tilde{W}^Q", r"\tilde W^Q", "W̃Q", "W̃^Q"):
        assert E.parse(f"{lhs}[h,a,b] = WQ[h,k,a]")[0].name == "WQ_tilde"


def test_lines_semicolons_comments_and_brackets_across_lines() -> None:
    text = """
    # the query, then the key
    Query[t,k] = sum_j WQ[k,j] * M[t,j]; Key[t,k] = sum_j WK[k,j] * M[t,j]
    s[t,t2] = (sum_k Query[t,k]
               * Key[t2,k])   # a bracket continues the line
    """
    eqs = E.parse(text)
    assert [e.name for e in eqs] == ["Query", "Key", "s"]
    assert [e.line for e in eqs] == [3, 3, 4]


def test_a_sum_covers_the_product_after_it_and_softmax_too() -> None:
    (eq,) = E.parse("a[i] = sum_j b[i,j] c[j] + d[i]")
    assert str(eq) == "a[i] = (sum_j b[i,j] * c[j]) + d[i]"
    assert isinstance(eq.rhs, E.BinOp) and eq.rhs.op == "+" and isinstance(eq.rhs.left, E.Reduce)
    (alpha,) = E.parse("alpha[t,t2] = softmax_{t2} (sum_k Q[t,k] * K2[t2,k]) / sqrt(K)")
    assert isinstance(alpha.rhs, E.Reduce) and alpha.rhs.op == "softmax"  # the scale is inside
    (times,) = E.parse("a[i] = 2 sum_j b[i,j]")  # juxtaposition with a sum
    assert isinstance(times.rhs, E.BinOp) and isinstance(times.rhs.right, E.Reduce)


UNREADABLE = [  # (answer, the message must contain)
    ("", "holds no equation"),
    ("Query[h,k] = ", "line 1, column 12: the line ends too early"),
    ("x[i] = a[i] +* b[i]", "`*` is unexpected here"),
    ("x[i] = a[i] ? b[i]", "`?` is not part of the language"),
    ("x[i] = a[i", "a bracket `[` is never closed"),
    ("x[i] = a[i]]", "`]` closes a bracket that was not opened"),
    ("x[i] = a[i] = b[i]", "more than one `=`"),
    ("x[i] + a[i]", "has no `=`"),
    ("x[i] = foo(a[i])", "foo(...) is not a known function"),
    ("x[i] = exp(a[i], b[i])", "exp takes one argument, got 2"),
    ("x[i] = a[i/2]", "position 1 holds `i / 2`"),
    ("x[i] = a[i*j]", "position 1 holds `i * j`"),
    ("x[i,i] = a[i]", "index i appears twice on the left of x"),
    ("x[i] = sum a[i]", "write sum with its indices"),
    ("x[i] = sum_{j,j} a[i,j]", "lists index j twice"),
    ("x[i] = E[w[v[i]], i]", "a word id cannot itself be read through another tensor"),
    ("V[t,i] = sum_{t2} softmax_{t2}(s[t,t2]) * v[t2,i]", "softmax_t2 applies to the whole product that follows it"),
    (42, "should be a string of equations, got int"),
]


@pytest.mark.parametrize("answer, message", UNREADABLE)
def test_unreadable_answers_say_where(answer: object, message: str) -> None:
    with pytest.raises(EquationError) as err:
        E.parse(answer)
    assert message in str(err.value)


# --------------------------------------------------------------------------- form

INPUTS = {"WQ": "H,K,J", "WK": "H,K,J", "WV": "H,I,J", "M": "X,Y,J"}
DEFINES = {"Query": "H,X,Y,K", "Key": "H,X,Y,K", "Value": "H,X,Y,I", "alpha": "H,X,Y,X,Y", "V": "H,X,Y,I"}


def replace(old: str, new: str) -> str:
    assert old in SPATIAL_EQUATIONS, old
    return SPATIAL_EQUATIONS.replace(old, new)


MALFORMED = [  # (answer, the exact problem reported)
    (replace("Key[h,x,y,k]   =", "Key[h,k,x,y]   ="), "line 3 (Key): Key's indices are [h,x,y,k], yours defines [h,k,x,y]"),
    (replace("WV[h,i,j] * M[x,y,j]", "WV[h,i,j] * M[j,y,x]"),
     "line 4 (Value): index j runs over J in WV[h,i,j] but over X in M[j,y,x]"),
    (replace("Query[h,x,y,k] = sum_j WQ[h,k,j] * M[x,y,j]", "Query[h,x,y,k] = WQ[h,k,j] * M[x,y,j]"),
     "line 2 (Query): index j appears on the right but not on the left: sum over it (sum_j ...) or add it "
     "to Query's indices"),
    (replace("V[h,x,y,i] = sum_{x2,y2}", "V[h,x,y,i] = sum_{x2}"),
     "line 6 (V): index y2 appears on the right but not on the left: sum over it (sum_y2 ...) or add it to V's indices"),
    (replace("V[h,x,y,i] = sum_{x2,y2} alpha[h,x,y,x2,y2] * Value[h,x2,y2,i]",
             "V[h,x,y,k] = sum_{x2,y2} alpha[h,x,y,x2,y2] * Query[h,x2,y2,k]"),
     "line 6 (V): your V keeps index k (size K), which the question's V[h,x,y,i] does not have"),
    (replace("Value[h,x,y,i] = sum_j WV[h,i,j] * M[x,y,j]", "Value[h,x,y,i] = sum_j WQ[h,i,j] * M[x,y,j]"),
     "line 4 (Value): your Value keeps index i (size K), which the question's Value[h,x,y,i] does not have"),
    (replace("alpha[h,x,y,x2,y2]", "alpha[h,x,y,x2]"),
     "line 5 (alpha): the question's alpha[h,x,y,x2,y2] has 5 indices, yours has 4 (alpha[h,x,y,x2])"),
    (replace("Key[h,x,y,k]   = sum_j WK[h,k,j] * M[x,y,j]\n", ""), "the answer does not define Key"),
    (replace("Query[h,x,y,k] = sum_j WQ[h,k,j] * M[x,y,j]", "M[x,y,j] = M[x,y,j]"),
     "line 2 (M): M is an input of the question; give the tensor you define another name"),
    (SPATIAL_EQUATIONS + "Query[h,x,y,k] = sum_j WQ[h,k,j] * M[x,y,j]\n", "Query is defined twice (lines 2 and 7)"),
    (replace("sum_j WQ[h,k,j] * M[x,y,j]", "sum_j WQ[h,k,j] * N[x,y,j]"),
     "line 2 (Query): N[x,y,j]: N is not an input of the question nor defined above"),
    (replace("sum_j WQ[h,k,j] * M[x,y,j]", "sum_j WQ[h,k,j] * M[x,y]"), "M[x,y] has 2 indices, but M has 3"),
    ("\n".join(SPATIAL_EQUATIONS.strip().splitlines()[::-1]),
     "line 1 (V): alpha[h,x,y,x2,y2] uses alpha before it is defined: define alpha on an earlier line"),
    (replace("/ sqrt(K)", "/ sqrt(D)"), "D is neither a size of this question (H, I, J, K, X, Y) nor a tensor"),
    (replace("/ sqrt(K)", "/ sqrt(WQ)"), "WQ is a tensor with 3 indices; write WQ[...] with them"),
    (replace("sum_j WQ[h,k,j] * M[x,y,j]", "sum_{j,x} WQ[h,k,j] * M[x,y,j]"),
     "index x is summed on the right and is also an index of Query; rename one"),
    (replace("sum_j WQ[h,k,j] * M[x,y,j]", "sum_j sum_j WQ[h,k,j] * M[x,y,j]"), "index j is summed twice"),
    (replace("sum_j WQ[h,k,j] * M[x,y,j]", "sum_j WQ[h,k,j] * M[x,y,j] + sum_x M[x,y,j]"),
     "index x is summed on the right and is also an index of Query"),
    (replace("Query[h,x,y,k] = sum_j WQ[h,k,j] * M[x,y,j]", "Query[h,x,y,k] = sum_j WQ[h,k,j] + M[x,y,j]"),
     "index j appears on the right but not on the left: it is summed elsewhere on the line, but a sum covers "
     "only the product right after it; use brackets, sum_j (...)"),
    (replace("Query[h,x,y,k] = sum_j WQ[h,k,j] * M[x,y,j]", "Query[h,x,y,k] = sum_j WQ[h,k,x] * M[x,y,k]"),
     "sum_j covers `WQ[h,k,x] * M[x,y,k]`, in which j does not appear"),
    (replace("Query[h,x,y,k] = sum_j WQ[h,k,j] * M[x,y,j]", "Query[h,x,y,k] = sum_j WQ[h,k,j] * M[x,y,j] ^ M[x,y,j]"),
     "an exponent must be a constant"),
    (replace("Query[h,x,y,k] = sum_j WQ[h,k,j] * M[x,y,j]", "Query[h,x,y,k] = sum_j WQ[h,k,j] * M[x,y,j] * Query[h,x,y,k]"),
     "Query is used in its own definition"),
]


@pytest.mark.parametrize("answer, problem", MALFORMED)
def test_the_form_check_names_the_problem(answer: str, problem: str) -> None:
    with pytest.raises(EquationError) as err:
        E.check(E.parse(answer), INPUTS, DEFINES)
    assert problem in str(err.value)


def test_a_gather_needs_integers_of_the_right_range() -> None:
    inputs = {"w": "B,T in V", "E": "V,J", "F": "B,T"}
    with pytest.raises(EquationError, match="w holds values below V, but that axis of E has size J"):
        E.check(E.parse("M0[b,t,j] = E[j, w[b,t]]"), inputs, {"M0": "B,T,J"})
    with pytest.raises(EquationError, match="reads an index from F, which does not hold integers"):
        E.check(E.parse("M0[b,t,j] = E[F[b,t], j]"), inputs, {"M0": "B,T,J"})
    E.check(E.parse("M0[b,t,j] = E[w[b,t], j]"), inputs, {"M0": "B,T,J"})


def test_every_question_reference_passes_its_own_form_check() -> None:
    for q in QUESTIONS.values():
        E.check(E.parse_answer(q.reference, q.operands, next(iter(q.defines))), q.inputs, q.defines,
                functions=q.functions)


# --------------------------------------------------------------------------- evaluation

def randn(*shape: int, gen: torch.Generator) -> torch.Tensor:
    return torch.randn(*shape, generator=gen, dtype=torch.float64)


def test_evaluate_spatial_equals_torch_by_hand() -> None:
    g = torch.Generator().manual_seed(0)
    H, K, I, J, X, Y = 2, 3, 4, 5, 3, 4
    WQ, WK, WV, M = randn(H, K, J, gen=g), randn(H, K, J, gen=g), randn(H, I, J, gen=g), randn(X, Y, J, gen=g)
    out = E.evaluate(SPATIAL_EQUATIONS, {"WQ": WQ, "WK": WK, "WV": WV, "M": M})
    Query = torch.einsum("hkj,xyj->hxyk", WQ, M)
    Key = torch.einsum("hkj,xyj->hxyk", WK, M)
    Value = torch.einsum("hij,xyj->hxyi", WV, M)
    s = torch.einsum("hxyk,hpqk->hxypq", Query, Key) / math.sqrt(K)
    alpha = torch.softmax(s.reshape(H, X, Y, X * Y), dim=-1).reshape(H, X, Y, X, Y)
    V = torch.einsum("hxypq,hpqi->hxyi", alpha, Value)
    assert list(out) == ["Query", "Key", "Value", "alpha", "V"]
    for name, want in [("Query", Query), ("Key", Key), ("Value", Value), ("alpha", alpha), ("V", V)]:
        torch.testing.assert_close(out[name], want)


def test_evaluate_stride2_gather_and_einsum_shorthand() -> None:
    g = torch.Generator().manual_seed(1)
    B, T, D, J, J2 = 2, 9, 3, 4, 5
    W, M0, beta = randn(D, J, J2, gen=g), randn(B, T, J, gen=g), randn(J2, gen=g)
    M1 = E.evaluate(CNN_STRIDE2.reference, {"W": W, "M0": M0, "beta": beta})["M1"]
    T2 = (T - D) // 2 + 1  # the valid range of t is read off the tensors
    want = torch.stack([torch.einsum("dji,bdj->bi", W, M0[:, 2 * t:2 * t + D]) for t in range(T2)], dim=1)
    torch.testing.assert_close(M1, torch.sigmoid(want - beta))
    w, Em = torch.randint(0, 7, (2, 5), generator=g), randn(7, 3, gen=g)
    torch.testing.assert_close(E.evaluate(CNN_LAYER0.reference, {"w": w, "E": Em})["M0"], Em[w])
    WQ, WK = randn(2, 3, 5, gen=g), randn(2, 3, 5, gen=g)
    text = E.einsum_equation("hka,hkb->hab / sqrt(K)", ("WQ", "WK"), "WQ_tilde")
    assert text == "WQ_tilde[h,a,b] = (sum_{k} WQ[h,k,a] * WK[h,k,b]) / (sqrt(K))"
    got = E.evaluate(text, {"WQ": WQ, "WK": WK})["WQ_tilde"]  # K read off the index k
    torch.testing.assert_close(got, torch.einsum("hka,hkb->hab", WQ, WK) / math.sqrt(3))


def test_evaluate_keeps_dtype_device_and_gradients() -> None:
    WQ = torch.randn(2, 3, 5, requires_grad=True)
    M = torch.randn(4, 5)
    out = E.evaluate("Q[h,t,k] = sum_j WQ[h,k,j] * M[t,j]", {"WQ": WQ, "M": M})["Q"]
    assert out.dtype == torch.float32 and out.shape == (2, 4, 3)
    out.sum().backward()
    torch.testing.assert_close(WQ.grad, M.sum(0).expand(2, 3, 5))


def test_evaluate_sizes_used_as_numbers() -> None:
    s = torch.randn(3, 4)
    with pytest.raises(EquationError, match="no index named k tells its value"):
        E.evaluate("a[t,u] = s[t,u] / sqrt(K)", {"s": s})
    torch.testing.assert_close(E.evaluate("a[t,u] = s[t,u] / sqrt(K)", {"s": s}, sizes={"K": 4})["a"], s / 2)
    torch.testing.assert_close(E.evaluate("a[t,u] = s[t,u] / T", {"s": s})["a"], s / 3)
    total = E.evaluate("c = sum_{t,u} s[t,u]\na[t,u] = s[t,u] / c", {"s": s})  # a tensor with no index
    torch.testing.assert_close(total["a"], s / s.sum())
    torch.testing.assert_close(E.evaluate("a = x / K", {"x": torch.tensor(2.0)}, sizes={"K": 4})["a"], torch.tensor(0.5))


EVALUATION_ERRORS = [  # (answer, tensors, message)
    ("a[t] = z[t - 1]", {"z": torch.zeros(3)}, "z[t - 1] reads position -1 of z's axis 1, which has size 3 (at t=0)"),
    ("a = z[5]", {"z": torch.zeros(3)}, "z[5] reads position 5 of z's axis 1, which has size 3"),
    ("a[i] = x[i] * y[i]", {"x": torch.zeros(3), "y": torch.zeros(4)}, "index i runs over 3 in x[i] but over 4 in y[i]"),
    ("a[t] = E[w[t]]", {"E": torch.zeros(3), "w": torch.tensor([0, 3])}, "E[w[t]] reads position 3 of E's axis 1"),
    ("a[t] = E[w[t]]", {"E": torch.zeros(3), "w": torch.tensor([0.0, 1.0])}, "reads an index from w, which does not hold integers"),
    ("a[i] = x[i]", {"x": [1, 2]}, "x should be a torch.Tensor, got list"),
]


@pytest.mark.parametrize("answer, tensors, message", EVALUATION_ERRORS)
def test_evaluation_errors_say_what(answer: str, tensors: dict, message: str) -> None:
    with pytest.raises(EquationError) as err:
        E.evaluate(answer, tensors)
    assert message in str(err.value)


# --------------------------------------------------------------------------- bounds

def test_caps_on_text_equations_indices_and_nesting() -> None:
    with pytest.raises(EquationError, match="characters long"):
        E.parse("a[i] = b[i]\n" * 1000)
    with pytest.raises(EquationError, match="equations; at most"):
        E.parse("\n".join(f"a{k}[i] = b[i]" for k in range(E.MAX_EQUATIONS + 1)))
    many = ",".join(f"i{k}" for k in range(E.MAX_INDICES + 1))
    with pytest.raises(EquationError, match="different indices"):
        E.parse(f"a[{many}] = b[{many}]")
    with pytest.raises(EquationError, match="nested more than"):
        E.parse("a[i] = " + "(" * 50 + "b[i]" + ")" * 50)
    with pytest.raises(EquationError, match="too long or too deeply nested"):
        E.parse("a = " + "+".join(["1"] * 280))


def test_caps_on_intermediate_tensors_and_time() -> None:
    x = torch.zeros(20)
    with pytest.raises(EquationError, match="would have 64000000 elements"):
        E.evaluate("a[i,j,k,l,m,n] = x[i] * x[j] * x[k] * x[l] * x[m] * x[n]", {"x": x})
    typed = E.check(E.parse("a[i] = exp(x[i])"), {"x": "20"}, require=False)
    with pytest.raises(EquationError, match="took too long"):
        E.evaluate_typed(typed, {"x": x}, {}, budget=-1.0)


def test_a_contraction_is_formed_two_factors_at_a_time_under_the_caps() -> None:
    # Left to right, a * b keeps i and every index c reads: 4^10 elements, while no tensor read or written
    # has more than 4^9 (a single einsum would form that product unchecked).
    a, b = torch.ones(4, 4, 4, 4, 4, 4), torch.ones(4, 4, 4, 4, 4, 4)
    c = torch.ones((4,) * 9)
    answer = "y[i] = sum_{j,k,l,m,n,p,q,r,s,u} a[i,j,k,l,m,n] * b[i,p,q,r,s,u] * c[j,k,l,m,n,p,q,r,s]"
    with pytest.raises(E.TooLarge, match="indices i,j,k,l,m,n,p,q,r,s would have 1048576 elements"):
        E.evaluate(answer, {"a": a, "b": b, "c": c})
    many = E.parse("y[i] = sum_{j,k} x[i,j] * x[j,k] * x[k,i]")  # each step under the caps: evaluated
    x = torch.randn(30, 30, dtype=torch.float64)
    torch.testing.assert_close(E.evaluate(many, {"x": x})["y"], torch.einsum("ij,jk,ki->i", x, x, x))


def test_a_step_over_too_many_multiply_adds_is_refused() -> None:
    x = torch.ones(400, 400)  # 400^3 = 64e6 multiply-adds in one step, its result only 160000 elements
    with pytest.raises(E.TooLarge, match=f"multiply-adds \\(at most {E.MAX_WORK}\\)"):
        E.evaluate("a[i,k] = sum_j x[i,j] * x[j,k]", {"x": x})


def test_reading_and_the_form_check_spend_from_a_budget() -> None:
    text = "\n".join(f"a{k}[i] = " + " + ".join(["b[i]"] * 20) for k in range(10))  # 10 lines of 39 nodes
    E.parse(text, E.Budget(60.0, nodes=390))
    with pytest.raises(E.TooLarge, match="too large to judge"):
        E.parse(text, E.Budget(60.0, nodes=389))
    with pytest.raises(E.TooLarge, match="took longer than 0 s"):
        E.parse(text, E.Budget(0.0))
    eqs = E.parse(text)
    E.check(eqs, {"b": "I"}, require=False, budget=E.Budget(60.0))
    with pytest.raises(E.TooLarge, match="took longer than 0 s"):
        E.check(eqs, {"b": "I"}, require=False, budget=E.Budget(0.0))


def test_a_sum_of_a_product_is_contracted_without_the_full_product() -> None:
    x = torch.randn(200, 200, dtype=torch.float64)  # 200^3 = 8e6 elements if the product were formed
    out = E.evaluate("a[i,k] = sum_j x[i,j] * x[j,k]", {"x": x})["a"]
    torch.testing.assert_close(out, x @ x)


# --------------------------------------------------------------------------- the visible-test helper

def test_expect_equations_passes_the_references_and_any_well_formed_answer() -> None:
    for q in QUESTIONS.values():
        expect_equations(q.reference, q.inputs, q.defines, operands=q.operands, functions=q.functions)
    expect_equations("hka,hkb->hab / sqrt(K)", WQ_TILDE.inputs, WQ_TILDE.defines, operands=("WQ", "WK"))
    # wrong answers of the right form pass the visible test: it checks form, never correctness
    expect_equations(replace("softmax_{x2,y2}", "softmax_{x2}"), INPUTS, DEFINES)
    expect_equations(replace(") / sqrt(K)", ")"), INPUTS, DEFINES)
    expect_equations("hka,hkb->hba", WQ_TILDE.inputs, WQ_TILDE.defines, operands=("WQ", "WK"))
    expect_equations(CNN_STRIDE2.reference.replace("2*t", "t"), CNN_STRIDE2.inputs, CNN_STRIDE2.defines)
    expect_equations(CAPTION.reference.replace("softmax_{x,y}", "softmax_{x}"), CAPTION.inputs, CAPTION.defines)


@pytest.mark.parametrize("answer, problem", MALFORMED[:6])
def test_expect_equations_explains_malformed_answers(answer: str, problem: str) -> None:
    with pytest.raises(Explained) as err:
        expect_equations(answer, INPUTS, DEFINES, what="Problem 2.1")
    assert str(err.value).startswith("Problem 2.1:\n") and problem in str(err.value)


def test_expect_equations_on_stubs_and_wrong_types() -> None:
    with pytest.raises(Explained, match="the answer is empty"):
        expect_equations("  ", INPUTS, DEFINES)
    with pytest.raises(Explained, match="should be a string of equations, got NoneType"):
        expect_equations(None, INPUTS, DEFINES)
    with pytest.raises(Explained, match="has 3 operand"):
        expect_equations("hka,hkb,hkc->hab", WQ_TILDE.inputs, WQ_TILDE.defines, operands=("WQ", "WK"))
    with pytest.raises(Explained, match="index c after -> appears in no operand"):
        expect_equations("hka,hkb->hac", WQ_TILDE.inputs, WQ_TILDE.defines, operands=("WQ", "WK"))
    with pytest.raises(Explained, match="write the scale as"):
        expect_equations("hka,hkb->hab sqrt(K)", WQ_TILDE.inputs, WQ_TILDE.defines, operands=("WQ", "WK"))


def test_declared_functions_on_whole_vectors() -> None:
    z, V, e = torch.randn(3, 4), torch.randn(3, 5), torch.randn(3, 6)

    def cell(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        return torch.cat([a, b, c], dim=-1)[..., :4] * 2

    out = E.evaluate("z1[b,:] = CELL(z[b,:], V[b,:], e[b,:])", {"z": z, "V": V, "e": e}, functions={"CELL": cell})
    torch.testing.assert_close(out["z1"], 2 * z)
    out = E.evaluate("z1[:] = tanh(CELL(z[0,:], V[1,:], e[2,:]))", {"z": z, "V": V, "e": e}, functions={"CELL": cell})
    torch.testing.assert_close(out["z1"], torch.tanh(2 * z[0]))
    with pytest.raises(EquationError, match=r"pass it as a function: evaluate\(..., functions=\{'CELL': ...\}\)"):
        E.evaluate("z1[:] = CELL(z[0,:])", {"z": z})
    for text, message in [("a[i] = z[:]", "`:` (a whole vector) is only for the arguments of a function"),
                          ("a[:] = CELL(z[:], y[i])", "each argument of a function is one tensor with `:`"),
                          ("a[i] = CELL(z[i])", "called on vectors like MIX(u[:], v[:])"),
                          ("a[:,:] = CELL(z[:])", "`:` (the output of a function) appears twice")]:
        with pytest.raises(EquationError) as err:
            E.parse(text)
        assert message in str(err.value)
    specs = ({"z": "J", "V": "K", "e": "U"}, {"z1": "J"})
    E.check(E.parse("z1[:] = CELL(z[:], V[:], e[:])"), *specs, functions={"CELL": "J,K,U -> J"})
    with pytest.raises(EquationError, match=r"CELL\(\.\.\.\) is not a function of this question"):
        E.check(E.parse("z1[:] = CELL(z[:], V[:], e[:])"), *specs)
    with pytest.raises(ValueError, match="a function is declared as"):
        E.check(E.parse("z1[:] = CELL(z[:], V[:], e[:])"), *specs, functions={"CELL": "J,K,U"})


def test_visible_and_hidden_share_the_question_specs() -> None:
    """The examples a chapter lifts declare the same specs in both places: check one end to end."""
    assert SPATIAL.inputs == INPUTS and SPATIAL.defines == DEFINES
