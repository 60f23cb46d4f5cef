"""Tests for attnlab.symbolic: Θ-equivalence, relations, equations, messages, malformed and
pathological answers, and the kit's freedom from graded answers."""
from __future__ import annotations

import ast
import doctest
import io
import random
import re
import statistics
import time
import tokenize
from pathlib import Path

import mpmath
import pytest
import sympy

import attnlab
from attnlab import symbolic
from attnlab.symbolic import AnswerError, Result, check_answer, parse_answer
from solutions.answers import ANSWERS

CH1 = ("L", "T", "H", "J", "K")
CH2 = ("X", "Y", "H", "J", "K")
SERIAL = "L*(J + K + T)"
LOGS = "L*(log(J) + log(K) + log(T))"
PRACTICE = "K + log(T)"
SPATIAL = "log(X) + log(Y) + log(J) + log(K)"
EQUAL_WHEN = "K = J/2"

ACCEPT: list[tuple[str, str, tuple[str, ...]]] = [
    *[(SERIAL, a, CH1) for a in [
        "L*(J+K+T)", "L(J+K+T)", "O(L(J + K + T))", "L*J + L*K + 2*L*T", "L (J + K + T)",
        "2L T + L J + L K", "LJ + LK + LT", r"L \times (J + K + T)", r"L \cdot \left( J + K + T \right)",
        "L·(J+K+T)", "O(L) O(J+K+T)", "Theta(L*(J+K+T))", "Θ(L(J+K+T))", r"\mathcal{O}(L(J+K+T))",
        r"\Theta\left(L(J+K+T)\right)", "$L(J+K+T)$", "L*(J+K+T) + log(T)", "L*(J+K+T+1)", "L*(J+K+T)/2",
        "0.5*L*(J+K+T)", r"\frac{L(J+K+T)}{2}", "L*(2J + K/3 + T)", "3*L*(J+K+T) + 7",
        "L*(J+K+T) + L*log(J)", "L*(J+K+T) + J + K", "L^1*(J+K+T)", "L*(J+K+T) - L", "L*(J + K + T) + L*K - L*K",
        "L*max(J, K, T)", "L*((J+K+T)^2)^(1/2)", "L*(J + K + T + sqrt(J))",
    ]],
    *[(LOGS, a, CH1) for a in [
        "L*(log(J)+log(K)+log(T))", "L*log(J*K*T)", r"L(\log J + \log K + \log T)", "L*(ln J + ln K + ln T)",
        "L*log2(J*K*T)", "L log_2(J K T)", r"L \log_{2}(JKT)", r"L\left(\ln J+\ln K+\ln T\right)",
        "L*(log(J)+log(K)+log(T)) + L", "L*log(J^2 K T)", "L*log(J*K*T + 1)", "L log J + L log K + L log T",
        "L(log2 J + log2 K + log2 T)", "L*log10(JKT)", "L*log(J+K+T)", "L*log(J, 2) + L*log(K*T)",
        "O(L log(JKT))", "L*log(J*K*T) - L*log(2)",
    ]],
    *[(PRACTICE, a, ("T", "K")) for a in [
        "K + ln T", "K + log(T)", "K + log T^2", "2K + 3 + log2(T)", "K - 1 + log T",
    ]],
    *[(SPATIAL, a, CH2) for a in ["log(XY) + log(JK)", "log(X*Y*J*K)", r"\log X + \log Y + \log J + \log K"]],
    ("1", "5", CH1), ("5", "1", CH1), ("T + L", "max(T, L)", ("L", "T")), ("L", "2L + 1", ("L", "T")),
    ("J^2 + K^2", "(J + K)^2", CH1), ("J^2", "J^2 - J", CH1), ("J*K", "(J + 1)(K - 1)", CH1),
    ("log(T)^2", "log^2 T", ("T",)), ("log(J*K)", "log JK", CH1), ("K*log(J)", "log J K", CH1),
    ("J^(1/2)", r"\sqrt{J}", ("J",)), ("J^(1/3)", r"\sqrt[3]{J}", ("J",)),
    # issue 13: cross terms inside the Newton polytope, logs of logs, sums of logs and logs of products
    ("J^2 + J*K + K^2", "J^2 + K^2", CH1), ("J^2 + K^2", "J^2 + J*K + K^2", CH1), ("J + T", "J + T + sqrt(J*T)", CH1),
    (SERIAL, "L*(J + K + T + sqrt(J*T))", CH1), (SERIAL, "L*(J+K+T) + sqrt(T*L)", CH1),
    (SERIAL, "L*(J+K+T) + log(T)*log(L)", CH1), (SERIAL, "L*(J + K + T) + (J*K*T)^(1/3)*L", CH1),
    (SERIAL, "L*(J+K+T) + log(log(T))", CH1), (LOGS, "L*(log J + log K + log T) + log(log T)", CH1),
    (LOGS, "L*(log J + log K + log T) + log(T)*log(L)", CH1), (LOGS, "L*log(J*K*T) + L*log(log(J*K*T))", CH1),
    ("log(J*K*T)", "log J + log K + log T", CH1), ("log J + log K + log T", "log(J*K*T)", CH1),
    ("log(J) + log(K)", "log(J + K)", CH1), ("log(J)*log(T)", "log(J)*log(T) + log(J) + log(log(T))^3", CH1),
    ("T*log(T)", "T log T + T log log T", ("T",)), ("T", "T + log(T)^5 + log(log(T))", ("T",)),
    ("J^2*log(J)", "J^2 log J + J^2 + J log(J)^7", ("J",)),
    (r"\frac{T}{2}", "T/2", ("T",)), ("T^2", "T²", ("T",)), ("T*J", "T × J", CH1), ("T*J", "T ⋅ J", CH1),
    ("sqrt(T)", "√T", ("T",)), ("T", "½T", ("T",)), ("T", r"\dfrac{T}{3}", ("T",)), ("T", r"\tfrac12 T", ("T",)),
    ("T*log(T)", r"T \log_{2} T", ("T",)), ("T*log(T)", "T lg T", ("T",)), ("T*log(T)", "T log10(T)", ("T",)),
    ("T*log(T)", r"\mathcal{O}(T \ln T)", ("T",)), ("T*log(T)", r"\operatorname{log}(T) T", ("T",)),
    ("T^2", r"T^{2}", ("T",)), ("T^2", "T**2", ("T",)), ("T*J", r"T \ast J", CH1), ("T/J", r"T \div J", CH1),
    ("T", r"\Theta\bigl(T\bigr)", ("T",)), ("T + J", r"T + \mathrm{J}", CH1), ("J*T", "2.5 J T", CH1),
    ("T*J", r"T \Biggl( J \Biggr)", CH1), ("T*J", r"\left. T \right. \quad J", CH1),
    ("T*J", r"\mathrm T \, \mathit{J}", CH1),
    ("T*J", r"\displaystyle T \cdot J", CH1), ("T + J", r"T + \text{J}", CH1), ("T*J", r"\{T\} J", CH1),
]

REJECT: list[tuple[str, str, tuple[str, ...]]] = [
    *[(SERIAL, a, CH1) for a in [
        "L*T", "J+K+T", "L*(J+K+T)**2", "L*(J+K)", "L*(J+K+T)*log(T)", "L^2*(J+K+T)", "H*L*(J+K+T)",
        "L + J + K + T", "L*J*K*T", "L*max(J, K)", "L*sqrt(J+K+T)", "1", "L*(log(J)+log(K)+log(T))",
        "L*(J+K+T) + H",
    ]],
    *[(LOGS, a, CH1) for a in [
        "log(L*J*K*T)", "L*log(J*K)", "L*(J+K+T)", "log(J)+log(K)+log(T)", "L*log(JKT)^2", "L*log(T)",
        "L*log(J)*log(K)*log(T)", "L^2 log(JKT)",
    ]],
    *[(PRACTICE, a, ("T", "K")) for a in ["K", "log(T)", "K*log(T)", "T", "K^2 + log(T)"]],
    (SPATIAL, "log(X) + log(Y)", CH2), (SPATIAL, "X*Y", CH2), ("L", "1", ("L",)), ("1", "L", ("L",)),
    ("K*log(J)", "log JK", CH1), ("log(J*K)", "log J K", CH1),
    # moved from MALFORMED: log log J is a valid order now (of lower order than log J), and a wrong one here
    (SERIAL, "log(log(J))", CH1), (LOGS, "log(log(J))", CH1), ("log(J)", "log(log(J))", CH1),
    # no relations: H, K and J are independent sizes
    (SERIAL, "L*(J+T)", CH1), (SERIAL, "L*(J+K+T+H)", CH1), (LOGS, "L*log(H*J*K*T)", CH1), (LOGS, "L*log(J*T)", CH1),
    (SERIAL, "L*(J + K + T) + log(H)*L*J", CH1), ("J^2 + K^2", "J^2 + J*K", CH1), ("J^2 + J*K + K^2", "J*K", CH1),
    ("J + T", "sqrt(J*T)", CH1), ("T*log(T)", "T*log(log(T))", ("T",)), ("T", "T*log(log(T))", ("T",)),
    ("log(T)", "log(log(T))^3", ("T",)), ("log(log(T))", "log(T)", ("T",)), ("T", "T^(101/100)", ("T",)),
    ("T", "T/log(T)", ("T",)), ("T^2", "T^2/log(log(T))", ("T",)),
]

EQUATION_ACCEPT = ["J = 2K", "2*K = J", "K=J/2", "2K - J = 0", "K = J/2 + L - L", "J/K = 2", r"K = \frac{J}{2}",
                   "K^2 = J^2/4", "0 = J - 2K", "K == J/2",
                   r"\frac{K}{J} = \frac12", "K = ½J", r"\frac{K}{J} = \frac{1}{2}", "K = 0.5 J", "K = ½·J",
                   "log(K) = log(J/2)", "log(2K) = log J", "sqrt(K) = sqrt(J/2)", "K^(1/3) = (J/2)^(1/3)",
                   "K*sqrt(2) = J/sqrt(2)", "K(2K - J) = 0", "(2K - J)^2 = 0", "2 = J/K", r"K \cdot 2 = J",
                   "J - K = K", "(J + K)/(2J - K) = 1"]
EQUATION_REJECT = ["K = J", "K = 2J", "K + 1 = J/2", "K = J^2/2", "K = L", "J = K/2",
                   "K = J/3", "K^2 = J/2", "(2K - J)(K - J) = 0", "K = J/sqrt(2)", "K = 2", "K^2 + J^2 = 1",
                   "log(K) = log(J)", "K - 1 = J/2", "2K - L = J", "K - J/2 = L - 1"]

MALFORMED: list[tuple[object, str]] = [
    (None, "string"), (3, "string"), (2.5, "string"), ([], "string"), ("", "empty"), ("   ", "empty"),
    ("L*(", "never closed"), ("L)", "without a matching"), ("(L]", "closes"), ("import os", "'import'"),
    ("__import__('os').system('x')", "'_'"), ("N*T", "'N'"), ("L.__class__", "'.'"), ("exp(T)", "'exp'"),
    ("L*", "missing"), ("*L", "expected a term"), ("L + + ", "missing"), ("()", "empty brackets"),
    ("J/0", "zero"), ("log(0)", "undefined"), ("J - K", "subtracts"), ("-L", "not positive"), ("0", "zero"),
    ("L - L", "zero"), ("2^T", "constant exponents"), ("T^J", "constant exponents"), ("1/(J+K)", "divides by"),
    ("log(2 + log(J)/J)", "does not grow"), ("J <= K", "compares"), ("log_2", "apply it to"),
    (r"\frac{J}", "\\frac"), ("L * * T", "expected a term"), ("L ^ ", "missing"), ("J ≥ K", "compares"),
    ("log(J, K, T)", "3 arguments"), ("sqrt(J, K)", "2 arguments"), ("log(-J)", "undefined"),
    ("log(J, 1)", "undefined"),
    ("J^(2^J)", "constant exponents"), ("J^(sqrt(-1))", "not a real number"), ("J @ K", "'@'"), ("J # K", "'#'"),
    ("L log", "apply it to"), ("√", "apply it to"), ("J_K", "'_'"), ("J/(K - K)", "zero"),
    ("1/(J + K + T)", "divides by"),
    (r"\sqrt[0]{J}", "index zero"), ("J^-1000", "larger"), ("(99999^99)^99 * J", "constant"), ("K/J - 1", "subtracts"),
    ("log(J/K)", "shrink"), ("10^10^10", "larger"), ("L, T", "','"),
    ("K = J = L", "more than one"), ("sin(T)", "'sin'"), ("'L'", "\"'\""), ("L; T", "';'"),
    ("x" * 500, "characters long"), ("(" * 60 + "L" + ")" * 60, "deep"), ("t*L", "case-sensitive"),
    (r"\exp(L)", "\\exp"), ("log_T", "apply it to"),
]


@pytest.mark.parametrize(("reference", "answer", "variables"), ACCEPT)
def test_accepts_same_order(reference: str, answer: str, variables: tuple[str, ...]) -> None:
    """An answer of the same Θ-order is accepted with a 'Correct' message."""
    result = check_answer(answer, reference, variables)
    assert result == Result(True, result.message), result.message
    assert result.message.startswith("Correct")


@pytest.mark.parametrize(("reference", "answer", "variables"), REJECT)
def test_rejects_other_order(reference: str, answer: str, variables: tuple[str, ...]) -> None:
    """An answer of another order is rejected with one sentence that does not give the reference away."""
    result = check_answer(answer, reference, variables)
    assert not result.ok, result.message
    assert_one_sentence(result.message)
    assert_no_leak(result.message, reference)


@pytest.mark.parametrize("answer", EQUATION_ACCEPT)
def test_equation_accepts_equivalent(answer: str) -> None:
    """Any equation equivalent to K = J/2 is accepted."""
    result = check_answer(answer, EQUAL_WHEN, ("K", "J", "L"))
    assert result.ok, result.message


@pytest.mark.parametrize("answer", EQUATION_REJECT)
def test_equation_rejects_other(answer: str) -> None:
    """An inequivalent equation is rejected without showing the expected one."""
    result = check_answer(answer, EQUAL_WHEN, ("K", "J", "L"))
    assert not result.ok
    assert "not equivalent" in result.message
    assert_no_leak(result.message, EQUAL_WHEN)


@pytest.mark.parametrize(("answer", "needle"), [
    ("J/2", "should be an equation"), ("J = J", "every value"), ("1 = 2", "never holds"), ("K = N", "'N'"),
])
def test_equation_explains_non_equations(answer: str, needle: str) -> None:
    """A non-equation, a tautology, a contradiction or an unknown name gets a specific sentence."""
    result = check_answer(answer, EQUAL_WHEN, ("K", "J", "L"))
    assert not result.ok
    assert needle in result.message
    assert_one_sentence(result.message)


def test_expression_question_rejects_equation() -> None:
    """An equation given where an order is asked for is rejected, saying so."""
    result = check_answer("T = L*(J+K+T)", SERIAL, CH1)
    assert not result.ok and "equation" in result.message


@pytest.mark.parametrize(("answer", "needle"), MALFORMED)
def test_malformed_answers(answer: object, needle: str) -> None:
    """A malformed answer raises one clear AnswerError from parse_answer and is a failed Result in check_answer."""
    with pytest.raises(AnswerError) as caught:
        parse_answer(answer, CH1)
    message = str(caught.value)
    assert needle in message, message
    assert_one_sentence(message)
    result = check_answer(answer, SERIAL, CH1)
    assert not result.ok
    assert needle in result.message, result.message
    assert_one_sentence(result.message)
    assert_no_leak(result.message, SERIAL)


def test_unknown_name_message() -> None:
    """The unknown-name message names the offending name and the allowed ones."""
    with pytest.raises(AnswerError, match=r"^Your answer uses 'N', but only L, T, H, J, K are allowed\.$"):
        parse_answer("N*T", CH1)


def test_injection_is_never_run(tmp_path: Path) -> None:
    """Python code in an answer is rejected, never evaluated."""
    target = tmp_path / "pwned"
    for answer in [f"__import__('os').system('touch {target}')", f"open('{target}', 'w')",
                   f"eval(\"open('{target}','w')\")", "L.__class__.__bases__", "lambda: 0"]:
        result = check_answer(answer, SERIAL, CH1)
        assert not result.ok
        assert_one_sentence(result.message)
    assert not target.exists()


def test_what_names_the_answer() -> None:
    """parse_answer's messages start with `what`."""
    with pytest.raises(AnswerError, match=r"^PARALLEL_TIME_SERIAL uses 'N'"):
        parse_answer("N", CH1, what="PARALLEL_TIME_SERIAL")


def test_parse_answer_returns_sympy() -> None:
    """parse_answer gives a sympy expression (positive symbols) or an unevaluated Eq."""
    expr = parse_answer("L(J+K+T)", CH1)
    assert isinstance(expr, sympy.Expr)
    assert sympy.expand(expr) == sympy.expand(sympy.sympify("L*(J+K+T)", locals=_positive(CH1)))
    eq = parse_answer("K = J/2", ("K", "J"))
    assert isinstance(eq, sympy.Eq)
    k, j = sympy.Symbol("K", positive=True), sympy.Symbol("J", positive=True)
    assert sympy.expand(eq.lhs - eq.rhs - (k - j / 2)) == 0
    assert isinstance(parse_answer("J = J", ("J",)), sympy.Eq)


def _positive(names: tuple[str, ...]) -> dict[str, sympy.Symbol]:
    """Positive symbols by name."""
    return {n: sympy.Symbol(n, positive=True) for n in names}


@pytest.mark.parametrize(("answer", "needles"), [
    ("L*T", ["Θ(L*T)", "too small", "does not grow with J or K"]),
    ("J+K+T", ["does not grow with L"]),
    ("L*(J+K+T)**2", ["too large", "L*J^2"]),
    ("L*(J+K)", ["does not grow with T"]),
    ("L*(J+K+T) + H", ["its term H grows faster"]),
    ("L*T*J", ["not the expected order", "when L, T and J grow together", "does not grow with K"]),
    ("L*T^2 + L*J + L*K", ["too large", "L*T^2", "in T"]),
    ("L*(J + K + T)*log(T)", ["too large", "in T"]),
    ("log(L)*(J + K + T)", ["too small", "grows too slowly in L"]),
])
def test_messages_are_specific(answer: str, needles: list[str]) -> None:
    """A rejection says, in the student's own terms, what is too big or which growth is missing."""
    message = check_answer(answer, SERIAL, CH1).message
    for needle in needles:
        assert needle in message, message


def test_log_message_says_too_slow_in_variable() -> None:
    """log(LJKT) against L*(log J + log K + log T) is too slow in L."""
    message = check_answer("log(L*J*K*T)", LOGS, CH1).message
    assert "grows too slowly in L" in message


def test_bad_reference_raises() -> None:
    """A malformed reference is the course's bug: ValueError, not a failed student."""
    with pytest.raises(ValueError, match="reference"):
        check_answer("L", "L*(", CH1)
    with pytest.raises(ValueError, match="reference"):
        check_answer("L", "N", CH1)


def test_string_subclass_is_read_as_plain_text() -> None:
    """A str subclass with lying methods is judged by its characters only."""
    class Liar(str):
        def __eq__(self, other: object) -> bool:
            return True

        def strip(self, chars: str | None = None) -> str:
            return "L*(J + K + T)"

        def __str__(self) -> str:
            return "L*(J + K + T)"

        __hash__ = str.__hash__

    assert not check_answer(Liar("L"), SERIAL, CH1).ok
    assert check_answer(Liar("L(J+K+T)"), SERIAL, CH1).ok


def test_corpus_wrong_answers_stay_wrong() -> None:
    """The wrong symbolic answers of the grading corpus still lose their points under the relations."""
    for name, answer in [("ch1.PARALLEL_TIME_SERIAL", "L*T"), ("ch1.PARALLEL_TIME_LOG", "log(L*J*K*T)"),
                         ("ch1.SOFTMAX_TIME", "log(T)"), ("ch1.SOFTMAX_TIME_PRACTICE", "K*log(T)"),
                         ("ch1.LAYER_TIME_PRACTICE", "J*log(T)"), ("ch3.EQUAL_WHEN", "K = J"),
                         ("ch3.EQUAL_WHEN", "K = 2*J"),
                         ("ch6.CNN_TIME", "T"), ("ch6.CNN_TIME", "L*log(T)"), ("ch6.RNN_TIME", "T*L"),
                         ("ch2.SPATIAL_TIME_LAYER", "X*Y + J + K"),
                         ("ch2.SPATIAL_TIME_LAYER", "log(X) + log(J) + log(K)"),
                         ("ch2.SPATIAL_TIME", "L + log(X) + log(Y) + log(J) + log(K)")]:
        ref = ANSWERS[name]
        assert not check_answer(answer, ref.answer, ref.variables, ref.relations).ok, (name, answer)


def test_sympy_object_answer() -> None:
    """A sympy expression is accepted as if written as its string."""
    L, J, K, T = sympy.symbols("L J K T")
    assert check_answer(L * (J + K + T), SERIAL, CH1).ok


def test_course_references_accept_themselves() -> None:
    """Every reference answer of the course parses and is accepted against itself, with and without relations."""
    for name, (reference, variables, relations) in ANSWERS.items():
        assert check_answer(reference, reference, variables, relations).ok, name
        assert check_answer(reference, reference, variables).ok, name


def test_fast() -> None:
    """A check takes well under 50 ms (median, after sympy has warmed up)."""
    answers = ["L(J+K+T)", "L*T", "L*log(JKT)", "O(L(J + K + T))^2", "J = 2K", "K = 2J"]
    refs = [SERIAL, SERIAL, LOGS, SERIAL, EQUAL_WHEN, EQUAL_WHEN]
    for a, r in zip(answers, refs):
        check_answer(a, r, CH1)
    times = []
    for _ in range(3):
        for a, r in zip(answers, refs):
            start = time.perf_counter()
            check_answer(a, r, CH1)
            times.append(time.perf_counter() - start)
    assert statistics.median(times) < 0.05, times


def assert_one_sentence(message: str) -> None:
    """The message is one line of prose: no traceback, no exception name, ends with a full stop."""
    assert message and "\n" not in message
    assert "Traceback" not in message and "Error" not in message and 'File "' not in message
    assert message[0].isupper() and message.endswith((".", "?"))


def assert_no_leak(message: str, reference: str) -> None:
    """The message does not show the reference answer, as written or normalised (outside the student's own order)."""
    message = re.sub(r"Θ\(.*?\), which", "Θ(...), which", message)
    canonical = {  # the reference's order as the checker renders it
        SERIAL: ["L*T + L*J + L*K", "L*J + L*K + L*T", "L*T + L*J"],
        LOGS: ["L*log(T) + L*log(J) + L*log(K)", "L*log(J) + L*log(K) + L*log(T)", "L*log(T) + L*log(J)"],
        PRACTICE: ["K + log(T)"],
        SPATIAL: ["log(X) + log(Y) + log(J) + log(K)"],
        EQUAL_WHEN: ["J = 2*K", "J = 2K", "2*K = J"],
        ANSWERS["ch1.LAYER_WORK"].answer: ["T^2*H*K + T*H*J*K + T^2*J + T*J^2"],
    }.get(reference, [])
    for form in [reference, reference.replace(" ", ""), *canonical]:
        if len(form) > 1:  # a one-letter reference is named in every message about its variable
            assert form not in message, (form, message)


# --------------------------------------------------------------------------- the course's questions, with relations

COURSE_ACCEPT: dict[str, list[str]] = {
    "ch1.PARALLEL_TIME_SERIAL": [
        "L*(J+K+T+H)", "L*(J+T)", "L*(J + K + T + sqrt(J*T))", "L*(J+K+T) + sqrt(T*L)", "L*(J+K+T) + log(log T)",
        "L*(J+K+T) + log(T)*log(L)", "L*(J+K+T) + H", "L*J + L*T + L*H", "L*(J + K + T + sqrt(K*T))", "O(L(J+T))",
        "L (J + T + K + H + 1)", "L*(J + T) + L*sqrt(H*K)", "L*max(J, T)", "L*(J+K+T) - L*K", "L*(J + K + T)*(1 + 1/T)",
        "L*(J+K+T) + L*log(H)", "L*(J + T) + K", r"L \cdot (J + T + H)", "L*(J + K + T) + log(L)*log(T)*log(J)",
        "L*(J + K + T) + L*H*K/J", "L*(J + T) + L*K^2/J", "L*(J + T + H^2/J)", "L J + L T + J + T", "LT + LJ + LK + LH",
        "L*(J + T) + L*K*log(J)/log(K)", "L*(J + T) + L*sqrt(H*K)*log(J)/log(K)",
        "L*(J + T + K*log(log(J))/log(log(K)))",
    ],
    "ch1.PARALLEL_TIME_LOG": [
        "L*log(H*J*K*T)", "L*(log J + log K + log T) + log(H)", "L*(log J + log K + log T) + log(log T)", "L*log(JKT)",
        "L*(log J + log T)", "L*(log J + log K + log T) + log T * log L", "L*log(J*T)", "L*log(J + T)",
        "L*log(J^2*T^3)",
        "L*(log(J) + log(T)) + L*log(H)", "L*ln(JT) + log(L)", "L*log_2(J K T H)", r"L\log(JT)", "L*log(J*T) + sqrt(L)",
        "L*log(J*T) + L*log(log(J))", "L*log(J*T) + log(L)*log(T)", "L*log(J + K + T + H)", "L*(log(J*T) + log(K*H))",
    ],
    "ch1.SOFTMAX_TIME": ["log(K T)", "log(K+T)", "ln K + ln T", "log(KT) + log(log(T))", "log(K) + log(T) + 1",
                         "max(log K, log T)", "log(K^2 T)", r"\log K + \log T"],
    "ch1.SOFTMAX_TIME_PRACTICE": ["K + log(K*T)", "K + log(T K)", "K + log T + log log K", "K + ln(T) + sqrt(K)",
                                  "max(K, log T)"],
    "ch1.LAYER_TIME": ["log T + log J", "log(T J)", "log(T) + log(J) + log(K)", "log(T*J*K)", "ln(T) + lg(J) + 3"],
    "ch1.LAYER_TIME_PRACTICE": ["J + log T", "J + log(T) + log(J)", "J + log(TJ)", "J + log(T) + sqrt(J log T)",
                                "J + K + log(T)"],
    "ch1.LAYER_WORK": ["T*(T + J)*(H*K + J)", "H*K*T^2 + J*T^2 + H*J*K*T + J^2*T", "(T^2 + T*J)*(H*K + J)",
                       "O(T (T+J)(HK+J))", "4*T*J*H*K + 2*T*J^2 + 2*H*T^2*K + 2*T^2*J + 4*H*T^2",
                       "T^2*(H*K + J) + T*J*(H*K + J)", "T*(T + J)*(H*K + J) + H*T^2", "T (T + J) (HK + J + H)",
                       "(T^2 + T*J)*(H*K + J) + T*J*K"],
    "ch1.SCORES_MEMORY": ["H*T^2", "H T^2", "O(H*T^2)", "2*H*T^2 + 1", "H*T*T", "H*(T^2 + T)", r"H \cdot T^2",
                          "H*T**2", "T^2*H + H*T + H"],
    "ch2.SPATIAL_TIME_LAYER": ["log(XY) + log(JK)", "log(X*Y*J*K*H)", "log(XYJK) + log(H)",
                               "log(X Y J K) + log(log(X))",
                               "log(X+Y) + log(J*K)",
                               # K <= J: log K is dominated by log J (seed 002 P5b's own answer)
                               "log(XY) + log(J)", "log(X Y J)", "log(X) + log(Y) + log(J)"],
    "ch2.SPATIAL_TIME": ["L*log(XYJK)", "L*log(X*Y*J*K*H)", "L*(log X + log Y + log J + log K) + log L",
                         "L log(XYJK) + L", "L*log(XYJ)", "L*(log X + log Y + log J)"],
    "ch6.CNN_TIME": ["L", "2L + 1", "L + log L", "L + sqrt(L)"],
    "ch6.RNN_TIME": ["T + L", "max(T, L)", "T + L + log(T)", "T + L + sqrt(T L)"],
    "ch6.ATTENTION_TIME": ["L log T", "O(L*log2(T))", "L*ln(T) + L", "2 L log(T) + 3 L"],
    "ch6.RNN_PATH": ["L + T", "T + L - 1", "O(T + L)", "max(T, L)"],
    "ch6.CNN_PATH": ["log2(T)", "ln T + 1", "O(log(T))", "log(2T)"],
    "ch6.ATTENTION_PATH": ["L", "O(L)", "2L + 1", "L + 1"],
    "ch7.BLOCK_TIME": ["log(T J)", "log T + log J", "O(log(T) + 2 log(J))", "ln(T*J^2) + 4",
                       "log(T) + log(J) + log(log(J))", "log2(T) + log2(4J)"],
    "ch7.BLOCK_WORK": ["T^2 J + T J^2", "T*J*(T + J)", "4 T^2 J + 24 T J^2", "O(TJ(T+J))",
                       "T^2*J + T*J^2 + T*J + T^2", "T J (T + J) + T log(T)"],
    "ch8.NOCACHE_WORK": ["L*(T^3*J + T^2*J^2)", "L T^2 J (T + J)", "4 L T^3 J + 24 L T^2 J^2", "O(L T^2 J (T+J))",
                         "L*(T^3 J + T^2 J^2 + T J)"],
    "ch8.NOCACHE_TIME": ["L*T*(log(T) + log(J))", "L T log(T J)", "O(L T log(TJ))", "L*T*log(T) + L*T*log(J) + L*T"],
    "ch8.CACHE_WORK": ["L*(T^2*J + T*J^2)", "L T J (T + J)", "2 L T^2 J + 24 L T J^2", "O(LTJ(T+J))"],
    "ch8.CACHE_TIME": ["L*T*(log(T) + log(J))", "L T log(T J)", "L*T*(log2(T) + log2(J)) + T"],
    "ch8.CACHE_MEMORY": ["L*T*J", "2 L T J", "O(LTJ)", "2*L*T*J + L*J"],
    "ch8.GROUPED_MEMORY": ["L*T*Hkv*K", "2 L T Hkv K", "O(L T Hkv K)", "L*T*K*Hkv + L*K"],
    "ch8.TILED_MEMORY": ["H*T*(Ttile + K)", "H T Ttile + H T K", "O(HT(Ttile+K))", "2*H*T*Ttile + H*T*K + H*T"],
}

COURSE_REJECT: dict[str, list[str]] = {
    "ch1.PARALLEL_TIME_SERIAL": [
        "L*T", "J+K+T", "L*(J+K+T)**2", "L*(J+K)", "L*(J+K+T)*log(T)", "L^2*(J+K+T)", "H*L*(J+K+T)", "L + J + K + T",
        "L*J*K*T", "L*max(J, K)", "L*sqrt(J+K+T)", "1", "L*(log(J)+log(K)+log(T))", "L*T*J", "L*T^2", "L*(J+K+T^2)",
        "L*(J^2+K+T)", "L*(K+T)", "L*(H+T)", "L*(H+K+T)", "L*(J+K)*T", "T*(J+K+T)", "L*log(T) + L*J",
        "L*(J + K + log T)",
        "L*(log J + K + T)", "L*H*(J+T)", "L*J*H", "(L+T)*(J+K)", "L*sqrt(J*T)", "L*(J*K)^(1/2) + L*T", "L*T*log(J)",
        "L*(J+T)/H", "L*(J+K+T) + L*T*log(T)", "L*T + J", "L*(J+T) + K*T", "L*J + T", "L*(J + K + T) + T^2",
        "L*(J+K+T) + J*K", "L*log(L)*(J+K+T)", "L^(1/2)*(J+K+T)", "log(L)", "L*(J+K+T)*log(log(T))", "L*(J + T)^2",
        "L*J^2 + L*T", "L*(J + K + T) + L^2", "L*(J + K + T) + J*T", "(L + 1)*(J + T) * K", "L*(J + K + T) / log(L)",
        "L*(J/H + K + T)", "L + T", "L + J", "J + T", "L*J", "L*K", "L*H", "L*(K + H)", "L*(J + K)", "L*(T + H)",
        "L*(J + T) + J^2", "L*(J + T)*H", "L*(J + T)/log(J)", "L*(J + T)*log(J)", "L*(sqrt(J) + T)", "L*(J + sqrt(T))",
        "L*(J + T*log(T))", "L*(J*log(J) + T)", "L^2*J + L*T", "L*T + L^2*J", "L*(J + T) + L*K*log(K)",
        "L*(J + T) + L*H*log(H)", "L*(J + K + T)*H/J", "L*(J+K+T)/T", "(L*(J+K+T))^2",
        "L*(J^(1/2) + K + T)", "L*(J + K^2 + T)", "L*log(J) + L*T", "L*(J + K + T + T^2)", "L*(J + K + T) + L*J*log(J)",
        "L*(J + K) + T", "L*(J + K + T) + L*T^(3/2)", "L*(J + T*K)",
    ],
    "ch1.PARALLEL_TIME_LOG": [
        "log(L*J*K*T)", "L*log(J*K)", "L*(J+K+T)", "log(J)+log(K)+log(T)", "L*log(JKT)^2", "L*log(T)",
        "L*log(J)*log(K)*log(T)", "L^2 log(JKT)", "L*log(J)", "L*log(K)+L*log(T)", "log L", "L*log(L*J*K*T)",
        "L*(log J + log K + T)", "L*log(T)^2 + L*log(J)", "L*log(J)*log(T)", "L*sqrt(log(JKT))", "L*log(log(JKT))",
        "L*(log J + log K + log T) + T", "L*(log J + log T)*log(H)", "log(J K T)", "L + log(JKT)", "L*log(H*K*T)",
        "L*log(H*T)", "L*(log K + log T)", "L*log(T + K)", "L*T", "L*(log(J) + log(T)) + log(H)*log(T)",
        "L*(log J + log K + log T) + log L * log T * log J", "L*log(J*K*T)/log(log(T))", "L*log(J*K*T)*log(log(T))",
        "sqrt(L)*log(JKT)", "L*(J + log T)", "L*(log J + T)", "L*log(J)^2 + L*log(T)", "L*log(J*T)*H", "L*log(J*T)/H",
        "L*log(J*T) + H", "L*log(J*T) + J", "L*log(J*T) + T", "L*log(J*T) + L*sqrt(log(J))*log(H)^2",
        "L*log(log(J)) + L*log(T)",
        "L*log(J*K*T) + L*log(L)", "L*(log J + log K + log T)^2", "L*log(J + K + T)^2", "L*(log J)^2",
        "log(J)*log(K)*log(T)",
        "L*(log(J) + log(K) + log(T))*log(log(L))", "L*(log J + log K + log T) + sqrt(L)*log(T)^2", "L*log(T) + log(J)",
        "L*log(J) + log(T)", "L*log(J*K*T) + sqrt(J)",
    ],
    "ch1.SOFTMAX_TIME": ["log(T)", "log(K)", "K + log T", "log(K) * log(T)", "T + K", "log(T)^2 + log K",
                         "log(log(T)) + log(K)", "1", "sqrt(log(K*T))", "log(K*T)^2", "K*T", "log(T) + K",
                         "log(log(K*T))",
                         "log(K) + T", "K*log(T)", "log(T)/log(K)",
                         "log(K)*log(T) + log(K)", "log(K + T)^2", "sqrt(K) + log(T)", "log(T) + log(K)^2", "K^(1/10)",
                         "log(T)^(1/2) + log(K)"],
    "ch1.SOFTMAX_TIME_PRACTICE": ["K", "log(T)", "K*log(T)", "T", "K^2 + log(T)", "K + T", "log K + log T",
                                  "K + log(T)^2",
                                  "K + sqrt(T)", "sqrt(K) + log T", "K + log(log T)", "K log K + log T", "K + T log T",
                                  "K/log(K) + log(T)",
                                  "K^(1/2)*log(T) + K", "K*T", "K + T^(1/2)", "K^2", "log(K) + log(T)", "K + log(K)"],
    "ch1.LAYER_TIME": ["log T", "log J", "J + log T", "T + J", "log(T)*log(J)", "log(T)^2 + log(J)",
                       "K + log(T) + log(J)", "log(log(T)) + log(J)", "J*log(T)", "log(T) + log(K)"],
    "ch1.LAYER_TIME_PRACTICE": ["J", "log T", "J + T", "J log T", "J + log J", "J^2 + log T", "log J + log T",
                                "J + log(T)^2", "J*T", "sqrt(J) + log(T)",
                                "J + sqrt(T)", "J*log(J) + log(T)", "log(J) + log(T)", "J + log(log(T))", "T"],
    "ch1.LAYER_WORK": ["T^2*J + T*J^2", "H*T^2*K + T^2*J", "T^2*H*K + T*J*H*K", "T*J*H*K + T*J^2", "H*T^2",
                       "T^2*H*K", "T^2*J*H*K", "T*(T + J)*J*H*K", "T^2 + T*J", "T*(T + J)*(H*J)", "T*(T + J)*(K + J)",
                       "T^2*H*K + T*J*H*K + T*J^2", "T^2*H*K + T^2*J + T*J*H*K", "log(T) + log(J)", "L*T^2*J",
                       "T*(T + J)*(H*K + J)*log(T)", "T^3*J", "H*T^2*K*J", "T^2*J^2 + T*H*K"],
    "ch1.SCORES_MEMORY": ["T^2", "H*T", "J*T^2", "H*T^2*K", "T*J", "H*T^2 + T*J", "H^2*T^2", "T^2 + H", "H*T^3",
                          "H*T^2*log(T)", "L*H*T^2", "H*T^2 + H*T*K", "K*T^2", "T^2/H", "sqrt(H)*T^2", "H*K*T"],
    "ch2.SPATIAL_TIME_LAYER": ["log(X) + log(Y)", "X*Y", "log(XY) + J + K",
                               "log(X) + log(J) + log(K)", "X + Y + J + K", "log(X*Y*H)", "log(XY) + log(H K)",
                               "log(X Y J K)^2", "log(XY)*log(JK)", "log(XYK)", "log(X*Y) + log(J)*log(K)",
                               "log(X)*log(Y) + log(J*K)", "X*Y + log(J*K)",
                               "log(X*Y*K)", "log(X)*log(Y)*log(J)*log(K)",
                               "sqrt(X*Y) + log(J*K)",
                               "log(X*Y*J*K) + log(X)^2"],
    "ch2.SPATIAL_TIME": ["log(XYJK)", "L*log(X*Y)", "L + log(XYJK)", "L*(X+Y+J+K)", "L*log(XY)*log(JK)",
                         "L^2 log(XYJK)", "L*log(XYK)", "L*log(X Y H K)", "L*log(XYJK)^2", "L*X*Y",
                         "L*log(XYJK)*log(L)",
                         "log(L) * log(XYJK)",
                         "L*log(XYJK) + X", "L*log(X) + L*log(Y) + log(J*K)",
                         "L*log(XYJK) + L*log(L)", "L*log(XYJK)*log(log(X))"],
    "ch6.CNN_TIME": ["T", "log T", "L*T", "L + T", "L log T", "L^2", "1", "L + log T", "sqrt(L)", "L*log(L)",
                     "L/log(L)", "log(L)", "L + log(log(T))", "L^(1/2)*T^(1/2)", "T/L"],
    "ch6.RNN_TIME": ["T", "L", "T*L", "T + log L", "log T + L", "T^2 + L", "T + L^2", "T*log(T) + L", "T + L*log(L)",
                     "sqrt(T) + L", "T + sqrt(L)", "max(T, log(L))",
                     "T + L + T*L", "T*log(L) + L", "L*log(T) + T", "T + L + sqrt(T*L)*log(T)"],
    "ch6.ATTENTION_TIME": ["L*T", "log(T)", "L", "L + log(T)", "L*T*log(T)", "L^2 log(T)", "L*log(log(T))"],
    "ch6.RNN_PATH": ["T", "L", "T*L", "log(T) + L", "T^2 + L", "1"],
    "ch6.CNN_PATH": ["T", "L", "1", "sqrt(T)", "T*L", "log(log(T))", "T^2", "L^2 + 1"],
    "ch6.ATTENTION_PATH": ["1", "T", "L*log(T)", "L*T", "L^2", "log(L)"],
    "ch7.BLOCK_TIME": ["log(T)", "log(J)", "T + log(J)", "log(T) + J", "log(T)*log(J)", "T J", "1",
                       "log(T J)^2", "T", "sqrt(J) + log(T)"],
    "ch7.BLOCK_WORK": ["T^2*J", "T*J^2", "T^2 J^2", "T^2 + J^2", "T J", "T J (T + J) log(T)", "T^2 J + J^2",
                       "T^3 J", "T (T + J)", "T J^3"],
    "ch8.NOCACHE_WORK": ["L*(T^2*J + T*J^2)", "L*T^3*J", "L T^2 J^2", "T^3 J + T^2 J^2", "L T^4 J", "L*T*J^2",
                         "L^2 (T^3 J + T^2 J^2)"],
    "ch8.NOCACHE_TIME": ["L*(log(T) + log(J))", "L*T^2", "T*(log(T) + log(J))", "L*T*log(T)", "L*T*log(J)", "L*T*J",
                         "L*log(T)"],
    "ch8.CACHE_WORK": ["L*(T^3*J + T^2*J^2)", "L*T*J^2", "L*T^2*J", "L*T*J", "T^2 J + T J^2", "L T J (T + J) log(T)"],
    "ch8.CACHE_TIME": ["L*(log(T) + log(J))", "L*T", "T*(log(T) + log(J))", "L*T^2", "L*log(T)*T*J"],
    "ch8.CACHE_MEMORY": ["L*T^2*J", "T*J", "L T^2 J^2", "L*J", "L*T", "L*T*log(T)"],
    "ch8.GROUPED_MEMORY": ["L*T*H*K", "L*T*K", "T*Hkv*K", "L*Hkv*K", "L*T^2*Hkv*K", "L T H Hkv K"],
    "ch8.TILED_MEMORY": ["H*T^2", "H*T*Ttile", "H*T*K", "T*(Ttile + K)", "H*T^2*K", "H*Ttile*K"],
}


def _course_cases(table: dict[str, list[str]]) -> list[tuple[str, str]]:
    """(check name, answer) pairs of a table."""
    return [(name, answer) for name, answers in table.items() for answer in answers]


def test_course_tables_are_large() -> None:
    """The tables cover every expression question, and more wrong answers than the issue's author tried (255)."""
    expression_checks = {name for name, ref in ANSWERS.items() if "=" not in ref.answer}
    assert set(COURSE_ACCEPT) == set(COURSE_REJECT) == expression_checks
    wrong = len(_course_cases(COURSE_REJECT)) + len(REJECT) + len(EQUATION_REJECT)
    assert wrong >= 300, wrong


@pytest.mark.parametrize(("name", "answer"), _course_cases(COURSE_ACCEPT))
def test_course_accepts(name: str, answer: str) -> None:
    """Answers of the same order under the question's relations are accepted (issue 13)."""
    ref = ANSWERS[name]
    result = check_answer(answer, ref.answer, ref.variables, ref.relations)
    assert result.ok, result.message
    assert result.message.startswith("Correct")


@pytest.mark.parametrize(("name", "answer"), _course_cases(COURSE_REJECT))
def test_course_rejects(name: str, answer: str) -> None:
    """Wrong answers stay wrong under the question's relations, with one sentence that does not leak the reference."""
    ref = ANSWERS[name]
    result = check_answer(answer, ref.answer, ref.variables, ref.relations)
    assert not result.ok, result.message
    assert_one_sentence(result.message)
    assert_no_leak(result.message, ref.answer)


@pytest.mark.parametrize(("reference", "answer", "variables"), REJECT)
def test_rejects_other_order_under_course_relations(reference: str, answer: str, variables: tuple[str, ...]) -> None:
    """The general REJECT table stays rejected with chapter 1's relations too, except answers that a relation
    makes right (a term in H, or K dropped beside J) — those are listed in COURSE_ACCEPT."""
    relations = ANSWERS["ch1.PARALLEL_TIME_SERIAL"].relations if set(variables) == set(CH1) else ()
    made_right = {"L*(J+K+T) + H", "L*(J+T)", "L*(J+K+T+H)", "L*log(H*J*K*T)", "L*log(J*T)", "J^2 + J*K"}
    result = check_answer(answer, reference, variables, relations)
    assert result.ok == (answer in made_right and reference in (SERIAL, LOGS, "J^2 + K^2")), result.message


# --------------------------------------------------------------------------- relations

def test_relations_change_the_order() -> None:
    """K <= J makes L(J + T) Θ-equal to L(J + K + T), and J = H*I makes a term in H of lower order;
    without the relations they differ."""
    assert not check_answer("L*(J + T)", SERIAL, CH1).ok
    assert check_answer("L*(J + T)", SERIAL, CH1, relations=["K <= J"]).ok
    assert check_answer("L*(J + T)", SERIAL, CH1, relations=["J >= K"]).ok
    assert check_answer("L*(J + T)", SERIAL, CH1, relations=["K ≤ J"]).ok
    assert not check_answer("L*(J + K + T + H)", SERIAL, CH1).ok
    assert check_answer("L*(J + K + T + H)", SERIAL, CH1, relations=["J = H*I"]).ok
    assert not check_answer("L*(J + K + T + H)", SERIAL, CH1, relations=["J = K*I"]).ok
    assert not check_answer("L*(J + T)", SERIAL, CH1, relations=["J <= K"]).ok
    assert check_answer("L*(K + T)", SERIAL, CH1, relations=["J <= K"]).ok


def test_relations_with_powers_and_chains() -> None:
    """A relation may bound a power (K^2 <= J), and relations chain (H <= K, K <= J gives H <= J)."""
    assert check_answer("L*(J + T)", "L*(J + K^2 + T)", CH1, relations=["K^2 <= J"]).ok
    assert not check_answer("L*(J + T)", "L*(J + K^3 + T)", CH1, relations=["K^2 <= J"]).ok
    assert check_answer("L*(J + T + H)", "L*(J + T)", CH1, relations=["H <= K", "K <= J"]).ok
    assert check_answer("log(J) + log(T)", "log(J) + log(H) + log(T)", CH1, relations=["H <= K", "K <= J"]).ok
    assert check_answer("log(log(J))", "log(log(J)) + log(log(H))", CH1, relations=["H <= J"]).ok


def test_relations_make_subtraction_safe_only_when_strict() -> None:
    """J^2 - J*K may vanish when K = J, so it is refused even with K <= J; L*J*T - K is fine with K <= J."""
    assert "subtracts" in check_answer("J^2 - J*K", "J^2", CH1, relations=["K <= J"]).message
    assert check_answer("L*J*T - K", "L*J*T", CH1, relations=["K <= J"]).ok


@pytest.mark.parametrize("relation",
                         ["K <= J + 1", "K <=", "log(K) <= J", "K <= -J", "K", "K = J = H", "K <= J*(J + 1)"])
def test_bad_relation_raises(relation: str) -> None:
    """A malformed relation is the course's bug: ValueError."""
    with pytest.raises(ValueError, match="relation"):
        check_answer("L", SERIAL, CH1, relations=[relation])


def test_course_relations_are_stated() -> None:
    """Chapters 1 and 2's running-time questions carry J = H*I, I <= J, K <= J (the notation table)."""
    for name in ("ch1.PARALLEL_TIME_SERIAL", "ch1.PARALLEL_TIME_LOG", "ch2.SPATIAL_TIME_LAYER", "ch2.SPATIAL_TIME"):
        assert set(ANSWERS[name].relations) == {"J = H*I", "I <= J", "K <= J"}


def test_grader_passes_relations() -> None:
    """The trusted grader judges a symbolic answer with the relations its check carries."""
    pytest.importorskip("torch")
    from attnlab.grading import Outcome
    from autograder.checks import CHECKS
    check = CHECKS["ch1.PARALLEL_TIME_SERIAL"]
    assert check.relations == ANSWERS["ch1.PARALLEL_TIME_SERIAL"].relations
    assert check.verdict([], [Outcome(value="L*(J + T + H)")]).passed
    assert not check.verdict([], [Outcome(value="L*(K + T)")]).passed


# --------------------------------------------------------------------------- LaTeX in a non-raw string

@pytest.mark.parametrize(("answer", "command"), [
    ("L \times (J + K + T)", "\\times"), ("\frac{L(J + K + T)}{2}", "\\frac"), ("L \bigl(J + K + T\bigr)", "\\bigl"),
    ("L \ast (J + K + T)", "\\ast"), ("L \left(J + K + T\right)", "\\right"), ("L \text{(}J + K + T)", "\\text"),  # noqa: W605 - \l is kept, \r is eaten: as a student types it
    ("\tfrac{L}{2} (J + K + T)", "\\tfrac"), ("L \vee T", "\\vee"), ("L(J + K + T) \b", "\\b"),
])
def test_latex_in_a_normal_string_says_python_ate_the_backslash(answer: str, command: str) -> None:
    """A LaTeX answer in a non-raw Python string lost its backslash; the message says so and asks for r"..."."""
    result = check_answer(answer, SERIAL, CH1)
    assert not result.ok
    assert "Python ate the backslash" in result.message and 'r"..."' in result.message, result.message
    assert f"'{command}'" in result.message, result.message
    assert "'imes'" not in result.message and "function" not in result.message
    assert_one_sentence(result.message)
    with pytest.raises(AnswerError, match="raw string"):
        parse_answer(answer, CH1)


def test_real_white_space_is_fine() -> None:
    """A tab, a newline or a carriage return between terms is white space."""
    assert check_answer("L *\t(J + K + T)", SERIAL, CH1).ok
    assert check_answer("L * (J + K\n + T)\r\n", SERIAL, CH1).ok


# --------------------------------------------------------------------------- bounded judging (issue 15)

ADVERSARIAL: list[tuple[object, str]] = [
    ("(J+K)^(10^9)", "larger"), ("(" * 1000 + "J" + ")" * 1000, "characters long"),
    ("(" * 45 + "J" + ")" * 45, "deep"), ("((J+K)^50)^50", "larger"), ("((J+K)^99)^99", "larger"),
    (" + ".join(f"J^{i}" for i in range(10_000)), "characters long"),
    ("log(" * 500 + "T" + ")" * 500, "characters long"),
    ("log(" * 41 + "T" + ")" * 41, "deep"), ("log " * 60 + "T", "deep"), ("sqrt " * 60 + "T", "deep"),
    ("9**9**9", "larger"), ("9" * 300, "digits"), ("(99999999999999999999^99)^99", "constant"),
    ("2^2^2^2^2^2", "larger"), ("J" + "^1" * 150, "deep"), ("J" + "^2" * 60, "deep"),
    ("T" * 399, "Θ"), ("*".join(["(J+K+T+L+H)"] * 33), "Θ"),
    ("*".join(f"({a}+{b}+{c})" for a, b, c in ["JKT", "LHJ", "KTL", "HJK"] * 8), "Θ"),
    ("(J+K+T+L+H)^100 - J^100", "subtracts"), ("+".join(f"J^{i}*K^{100 - i}" for i in range(0, 101, 3)), "Θ"),
    ("+".join(f"J^({i}/97)*K^({97 - i}/97)" for i in range(0, 97, 5)), "Θ"),
    ("+".join(f"J^{i}*log(K)^{9 - i}*log(log(T))^{i}" for i in range(10)), "Θ"),
    (sympy.Add(*[sympy.Symbol("J", positive=True) ** i for i in range(10_000)]), "too large"),
    ("\\frac{" * 20 + "J" + "}{2}" * 20, "Θ"), ("sqrt(" * 39 + "J" + ")" * 39, "Θ"),
    ("(J - K + T - L + H)^100", "subtracts"), ("(J+K)^100*(T+L)^100*(H+J)^100", "Θ"),
    ("log(J^100*K^100*T^100*L^100*H^100)^100", "Θ"), ("J^(1/99999999999999999999)", "Θ"),
    ("0." + "0" * 19 + "1*J", "digits"), ("0." + "0" * 18 + "1*J", "Θ"), ("J^-99 + K^-99 + T^-99 + 1", "Θ"),
    ("max(" + ",".join("JKTLH" * 30) + ")", "Θ"),
]


@pytest.mark.parametrize(("answer", "needle"), ADVERSARIAL, ids=[f"adversarial{i}" for i in range(len(ADVERSARIAL))])
def test_pathological_answers_are_judged_quickly(answer: object, needle: str) -> None:
    """A pathological answer gets a verdict in one sentence, fast, and never hangs or eats memory."""
    result = check_answer(answer, SERIAL, CH1, ANSWERS["ch1.PARALLEL_TIME_SERIAL"].relations)
    assert not result.ok
    assert needle in result.message, result.message
    assert_one_sentence(result.message)
    # no wall-clock assert on a shared machine: test_time_budget_is_enforced checks the budget itself


def test_pathological_equations_are_judged_quickly() -> None:
    """Equations are bounded too: high degrees, many roots and many radicals are refused, fast."""
    for answer in ["K^12 + J^11*K + 7*J^5*K^6 = J^12 - 3*K^7*J^5 + 1", "sqrt(K) + sqrt(J) + K^(1/3) = J^(1/5) + 2",
                   "(K - J)^99 = 1", "K^(1/97) = J^(1/89)", "sqrt(2)*K + sqrt(3)*J + sqrt(5) = sqrt(7)*K*J",
                   "(J+K)^50*(J-K)^50 = 1"]:
        result = check_answer(answer, EQUAL_WHEN, ("K", "J"))
        assert not result.ok, answer
        assert_one_sentence(result.message)


def test_time_budget_is_enforced(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no time left, judging stops with a sentence instead of running on."""
    monkeypatch.setattr(symbolic, "TIME_BUDGET", 0.0)
    result = check_answer("L*(J + K + T) + sqrt(J*T)*L", SERIAL, CH1)
    assert not result.ok and "too complicated to judge in time" in result.message, result.message
    result = check_answer("2*K = J", EQUAL_WHEN, ("K", "J"))  # an equation answer has its deadline too
    assert not result.ok and "too complicated to judge in time" in result.message, result.message


# --------------------------------------------------------------------------- the kit holds no graded answer (issue 12)

QUOTED = re.compile(r'"([^"\n]{1,80})"|\'([^\'\n]{1,80})\'|``([^`\n]{1,80})``|`([^`\n]{1,80})`|\$([^$\n]{1,80})\$')
FORMULA = re.compile(r"[-+*/^()=]|log|sqrt|\\frac|Θ")


def _kit_files() -> list[Path]:
    """Every file of the student kit the release ships (autograder.kit.kit_files: no build outputs or caches)."""
    from autograder.kit import kit_files

    kit = Path(attnlab.__file__).parent
    return [kit / rel for rel in kit_files(kit)]


def _written_forms(reference: str) -> set[str]:
    """A reference as someone might copy it: as written, without spaces, implicit multiplication, log without
    brackets, inside O( ) or Θ( )."""
    forms = {reference, reference.replace(" ", ""), reference.replace("*", ""), reference.replace("*", " ")}
    forms |= {re.sub(r"log\((\w)\)", r"log \1", f) for f in forms} | {f.replace("log(", r"\log(") for f in forms}
    forms |= {f"{wrap}({f})" for f in forms for wrap in ("O", "Θ", "Theta", r"\mathcal{O}")}
    return {f for f in forms if len(f) > 1}


def _fragments(path: Path) -> set[str]:
    """Formula-like snippets of a kit file: short string literals, and quoted or backticked bits of docstrings,
    comments and messages."""
    text = path.read_text(encoding="utf-8", errors="replace")
    pieces = [text]
    if path.suffix == ".py":
        pieces = [n.value for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Constant) and isinstance(n.value,
                                                                           str)]
        pieces += [t.string for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.COMMENT]
    out = {p.strip() for p in pieces if len(p) <= 80 and "\n" not in p}
    out |= {next(g for g in m.groups() if g is not None).strip() for p in pieces for m in QUOTED.finditer(p)}
    return {f for f in out if f and FORMULA.search(f)}


def test_kit_files_do_not_contain_a_reference_as_written() -> None:
    """No file of attnlab/ contains a reference answer, as written or in a form one would copy."""
    for path in _kit_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for name, ref in ANSWERS.items():
            for form in _written_forms(ref.answer):
                if len(form) > 2:
                    assert form not in text, f"{path.name} contains {form!r}, the answer to {name}"


def test_kit_examples_are_not_graded_answers() -> None:
    """No formula in attnlab/ (docstrings, examples, messages, comments) is accepted for any course question."""
    fragments = set().union(*(_fragments(p) for p in _kit_files() if p.suffix in (".py", ".md", ".txt", ".lark")))
    assert len(fragments) > 50  # the scan does see the kit's formulas
    for fragment in sorted(fragments):
        for name, ref in ANSWERS.items():
            assert not check_answer(fragment, ref.answer, ref.variables, ref.relations).ok, (name, fragment)


def test_docstring_examples() -> None:
    """The examples in the module docstring run as written."""
    assert doctest.testmod(symbolic).failed == 0


def test_student_text_is_never_evaluated() -> None:
    """The parser builds sympy from the parse tree: no eval, exec, sympify or parse_expr on the student's text."""
    for module in ("_answer_grammar.py", "_growth.py", "symbolic.py"):
        source = (Path(attnlab.__file__).parent / module).read_text()
        for name in ("eval(", "exec(", "sympify(", "parse_expr(", "S("):
            assert name not in source.replace("evalf(", ""), (module, name)


def test_checker_does_not_import_solutions_or_autograder() -> None:
    """The checker's modules stay importable without the instructor's packages."""
    for path in _kit_files():
        if path.name in ("symbolic.py", "_answer_grammar.py", "_growth.py", "_simplex.py"):
            tree = ast.parse(path.read_text())
            names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
            names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
            assert not any(n.split(".")[0] in ("solutions", "autograder") for n in names), path


# --------------------------------------------------------------------------- soundness, by sampling

def _log_ratio(a: sympy.Expr, b: sympy.Expr, logs: dict[str, float]) -> float:
    """log(a / b) for positive expressions at sizes exp(logs[v]), in high precision."""
    with mpmath.workdps(80):
        def log_value(expr: sympy.Expr) -> mpmath.mpf:
            """log expr at the sizes."""
            names = sorted(expr.free_symbols, key=str)
            f = sympy.lambdify(names, expr, modules="mpmath")
            return mpmath.log(f(*(mpmath.exp(mpmath.mpf(logs[s.name])) for s in names)))

        return float(log_value(a) - log_value(b))


def _random_sizes(rng: random.Random, scale: float) -> dict[str, float]:
    """log-sizes for chapter 1 that satisfy J = H*I, I <= J, K <= J, each growing at a random rate or not at all."""
    rate = {v: rng.choice([0.0, rng.random(), 1.0]) for v in ("L", "T", "H", "I")}
    logs = {v: 3 + scale * r + rng.random() for v, r in rate.items()}
    logs["J"] = logs["H"] + logs["I"]
    logs["K"] = 3 + rng.random() * (logs["J"] - 3)
    return logs


def test_accepted_answers_have_the_same_growth_numerically() -> None:
    """Random answers near the references: whenever one is accepted, its ratio to the reference stays bounded at
    random sizes up to e^(10^30) that satisfy the relations (a soundness check by sampling, seeded)."""
    rng = random.Random(13)
    atoms = [*CH1, *(f"log({v})" for v in CH1), *(f"log(log({v}))" for v in CH1), *(f"sqrt({v})" for v in CH1)]
    accepted = 0
    for _ in range(120):
        name = rng.choice(["ch1.PARALLEL_TIME_SERIAL", "ch1.PARALLEL_TIME_LOG"])
        ref = ANSWERS[name]
        extra = " + ".join("*".join(rng.choice(atoms) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(1,
                                                                                                                    3)))
        answer = rng.choice([f"{ref.answer} + {extra}", f"({ref.answer})*(1 + 1/({extra}))", extra])
        if not check_answer(answer, ref.answer, ref.variables, ref.relations).ok:
            continue
        accepted += 1
        mine, expected = parse_answer(answer, CH1, relations=ref.relations), parse_answer(ref.answer, CH1)
        for scale in (30.0, 3000.0, 1e8, 1e30):
            for _ in range(4):
                logs = _random_sizes(rng, scale)
                assert abs(_log_ratio(mine, expected, logs)) < 30, (answer, logs)
    assert accepted >= 20
