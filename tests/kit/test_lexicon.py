"""One lexicon (`attnlab._lexicon`) for the answer languages: every spelling it lists reads the same in the
Θ grammar of symbolic answers and in the index-equation language, and the leak audit takes none of its
words for prose, so an answer written with any of them is still found."""
from __future__ import annotations

import pytest
import torch

from attnlab import _lexicon as lex
from attnlab import equations as E
from attnlab.symbolic import check_answer
from autograder.checks import CHECKS
from publish import leaks
from publish.leaks import Doc, Figures

X = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)


def _spellings(op: dict[str, tuple[str, ...]]) -> list[str]:
    return [*op["symbols"], *(f"\\{command} " for command in op["latex"])]


def _both(order: str, equation: str, expected: torch.Tensor) -> None:
    """`order` is Θ(L(J+K+T)) in the Θ grammar; `equation` evaluates to `expected` in the equation language."""
    result = check_answer(order, "L*(J + K + T)", ["L", "J", "K", "T"])
    assert result.ok, (order, result.message)
    torch.testing.assert_close(E.evaluate(equation, {"x": X})["y"], expected, msg=equation)


@pytest.mark.parametrize("times", _spellings(lex.TIMES))
def test_every_product_sign_reads_in_both_languages(times: str) -> None:
    _both(f"L {times} (J + K + T)", f"y[i] = x[i] {times} 3", 3 * X)


@pytest.mark.parametrize("divide", _spellings(lex.DIVIDE))
def test_every_division_sign_reads_in_both_languages(divide: str) -> None:
    _both(f"L (J + K + T) {divide} 2", f"y[i] = x[i] {divide} 2", X / 2)


@pytest.mark.parametrize("minus", lex.MINUS["symbols"])
def test_every_minus_sign_reads_in_both_languages(minus: str) -> None:
    _both(f"L (J + K + T) {minus} L", f"y[i] = x[i] {minus} 1", X - 1)


@pytest.mark.parametrize("fraction", [*(rf"\{f}{{1}}{{2}}" for f in lex.FRACTION), r"\frac12"])
def test_every_fraction_reads_in_both_languages(fraction: str) -> None:
    _both(f"{fraction} L (J + K + T)", f"y[i] = {fraction} x[i]", X / 2)


@pytest.mark.parametrize("vulgar", sorted(lex.VULGAR))
def test_every_vulgar_fraction_reads_in_both_languages(vulgar: str) -> None:
    a, b = lex.VULGAR[vulgar]
    _both(f"{vulgar} L (J + K + T)", f"y[i] = {vulgar} * x[i]", X * a / b)


@pytest.mark.parametrize("superscript", sorted(lex.SUPERSCRIPTS))
def test_every_superscript_reads_in_both_languages(superscript: str) -> None:
    power = lex.SUPERSCRIPTS[superscript]
    _both(f"L (J + K + T) (L{superscript})^(1/{power}) / L", f"y[i] = x[i]{superscript}", X ** power)


@pytest.mark.parametrize("command", lex.SIZING)
def test_every_sizing_command_is_ignored_in_both_languages(command: str) -> None:
    _both(rf"L \{command}( J + K + T \{command})", rf"y[i] = \{command}( x[i] \{command}) * 2", 2 * X)


@pytest.mark.parametrize("space", lex.SPACES)
def test_every_space_is_a_space_in_both_languages(space: str) -> None:
    _both(f"L{space}(J + K + T)", f"y[i] = 2{space}* x[i]", 2 * X)


def test_the_audit_takes_no_word_of_the_languages_for_prose() -> None:
    assert lex.words() <= leaks.FUNCTIONS
    for spelling in _spellings(lex.TIMES) + _spellings(lex.DIVIDE):
        op = "*" if spelling.strip() in lex.TIMES["symbols"] or spelling.strip()[1:] in lex.TIMES["latex"] else "/"
        answer = "L (J + K + T)" if op == "*" else "L (J + K + T) / 1"
        written = answer.replace("L (", f"L {spelling} (") if op == "*" else answer.replace("/", spelling)
        doc = Doc("attnlab/example.py", f"# the layer costs {written} in all\n", "code")
        found = {c: [doc.where] for c in leaks.doc_candidates(doc)}
        hits = leaks.judge_candidates(found, {"ch1.PARALLEL_TIME_SERIAL": CHECKS["ch1.PARALLEL_TIME_SERIAL"]},
                                      Figures())
        assert hits, (written, sorted(found))
