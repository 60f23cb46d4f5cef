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
    ("log(J, K, T)", "3 arguments"), ("sqrt(J, K)", "2 arguments"), ("log(-J)", "undefined"), ("log(J, 1)", "undefined"),
    ("J^(2^J)", "constant exponents"), ("J^(sqrt(-1))", "not a real number"), ("J @ K", "'@'"), ("J # K", "'#'"),
    ("L log", "apply it to"), ("√", "apply it to"), ("J_K", "'_'"), ("J/(K - K)", "zero"), ("1/(J + K + T)", "divides by"),
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
    }.get(reference, [])
    for form in [reference, reference.replace(" ", ""), *canonical]:
        if len(form) > 1:  # a one-letter reference is named in every message about its variable
            assert form not in message, (form, message)
