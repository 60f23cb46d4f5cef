r"""The lexicon of the book's answer languages: one home for their spellings, limits and phrasing.

Three readers share it: the Θ grammar of symbolic answers (`attnlab._answer_grammar`), the
index-equation language (`attnlab.equations`) and the leak audit (`publish.leaks`), which must
recognise every spelling the two judges accept. A spelling added here is accepted by both
languages and searched for by the audit.

    TIMES["latex"]    -> ("cdot", "times", "ast")     written \cdot, \times, \ast
    TIMES["symbols"]  -> ("*", "·", "⋅", "×", "∙", "∗")

Nothing here reads an answer; each reader builds its grammar or table from these names.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

# --------------------------------------------------------------------------- spellings

# An operator: its plain symbols and Unicode variants, and the LaTeX commands (without the backslash).
TIMES = {"symbols": ("*", "·", "⋅", "×", "∙", "∗"), "latex": ("cdot", "times", "ast")}
DIVIDE = {"symbols": ("/", "÷"), "latex": ("div",)}
MINUS = {"symbols": ("-", "−", "–"), "latex": ()}
POWER = ("^", "**")
SUM = {"symbols": ("Σ", "∑"), "latex": ("sum",)}
ROOT = {"symbols": ("√",), "latex": ("sqrt",)}
FRACTION = ("frac", "dfrac", "tfrac")          # \frac{a}{b}, and \frac12 (one character a part)
SUPERSCRIPTS = {"²": 2, "³": 3}                # K² is K^2
VULGAR = {"½": (1, 2), "⅓": (1, 3), "⅔": (2, 3), "¼": (1, 4), "¾": (3, 4), "⅕": (1, 5), "⅙": (1, 6), "⅛": (1, 8)}
PRIMES = {"′": "'", "″": "''"}
# Commands that wrap a name and mean the name itself (\mathrm{softmax}, \operatorname{log}).
WRAPPERS = ("mathcal", "mathrm", "mathit", "mathbf", "mathsf", "operatorname", "textrm", "textit", "text", "rm")
# Commands that only size or space what follows (\left( ... \right), \big(, \quad).
SIZING = ("left", "right", "middle", "displaystyle", "limits", "quad", "qquad", "big", "Big", "bigg", "Bigg",
          "bigl", "bigr", "Bigl", "Bigr", "biggl", "biggr", "Biggl", "Biggr")
SPACES = (r"\,", r"\;", r"\:", r"\!", "\\ ", "$")  # thin spaces and math delimiters: white space
GREEK = {
    "α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "epsilon", "ζ": "zeta", "η": "eta",
    "θ": "theta", "ι": "iota", "κ": "kappa", "λ": "lambda", "μ": "mu", "ν": "nu", "ξ": "xi", "π": "pi",
    "ρ": "rho", "τ": "tau", "υ": "upsilon", "φ": "phi", "χ": "chi", "ψ": "psi", "ω": "omega",
    "Γ": "Gamma", "Δ": "Delta", "Θ": "Theta", "Λ": "Lambda", "Ξ": "Xi", "Π": "Pi", "Φ": "Phi",
    "Ψ": "Psi", "Ω": "Omega", "ℓ": "l",
}

# Function words of each language (a LaTeX command of the same name means the same).
ORDER_FUNCTIONS = {  # symbolic answers: name written -> the function meant
    "log": "log", "ln": "log", "lg": "log2", "log2": "log2", "log10": "log10",
    "sqrt": "sqrt", "O": "O", "Theta": "O", "max": "max", "Max": "max",
}
ORDER_LATEX_FUNCTIONS = ("log", "ln", "lg", "max", "Theta")
EQUATION_FUNCTIONS = ("exp", "log", "sigmoid", "tanh", "sqrt", "relu")  # elementwise, in index equations
EQUATION_REDUCTIONS = ("sum", "softmax")


def latex(commands: Iterable[str]) -> str:
    r"""A regex matching any of `commands` written with its backslash, as a whole word (\ast, not \asterisk)."""
    return r"\\(?:" + "|".join(sorted(commands, key=len, reverse=True)) + r")(?![A-Za-z])"


def symbols(chars: Iterable[str]) -> str:
    """A regex matching any of the symbols `chars` (longest first)."""
    return "|".join(re.escape(c) for c in sorted(chars, key=len, reverse=True))


def spelled(op: dict[str, tuple[str, ...]]) -> str:
    """A regex matching every spelling of the operator `op` (its symbols and LaTeX commands)."""
    parts = [symbols(op["symbols"])] if op["symbols"] else []
    return "|".join(parts + ([latex(op["latex"])] if op["latex"] else []))


def words() -> frozenset[str]:
    """Every word a formula in either language may contain besides its names: function words and the
    LaTeX commands above (what the leak audit must not take for prose)."""
    return frozenset({*ORDER_FUNCTIONS, *ORDER_LATEX_FUNCTIONS, *EQUATION_FUNCTIONS, *EQUATION_REDUCTIONS,
                      *TIMES["latex"], *DIVIDE["latex"], *SUM["latex"], *ROOT["latex"], *FRACTION, *WRAPPERS,
                      *SIZING, "exp"})


# --------------------------------------------------------------------------- limits

MAX_DEPTH = 40  # nested brackets (and functions, powers) in an answer of either language

# symbolic answers (attnlab.symbolic)
ORDER_MAX_LENGTH = 400            # characters in an answer
ORDER_MAX_EXPONENT = 100          # |exponent| written in an answer
ORDER_MAX_DIGITS = 20             # digits of one number written in an answer
ORDER_MAX_CONSTANT_DIGITS = 1000  # digits of a constant computed from the answer

# index equations (attnlab.equations)
EQUATION_MAX_CHARS = 6000          # characters in an answer
EQUATION_MAX_LINE = 600            # characters in one equation
EQUATION_MAX_EQUATIONS = 24        # equations in an answer
EQUATION_MAX_INDICES = 12          # distinct indices in one equation
EQUATION_MAX_NODES = 300           # nodes of one equation's tree
EQUATION_MAX_ELEMENTS = 1_000_000  # elements of any tensor computed while evaluating
EQUATION_MAX_WORK = 50_000_000     # multiply-adds of one pairwise contraction while evaluating
EQUATION_MAX_BUILT = 50_000        # tree nodes built while judging one answer (helpers inlined, canonical forms)


# --------------------------------------------------------------------------- phrasing

def cap(what: str) -> str:
    """`what` with its first letter capitalised, to start a sentence."""
    return what[:1].upper() + what[1:]


def too_large_to_judge(limit: int) -> str:
    """The sentence for an answer whose judging would build more than `limit` nodes."""
    return (f"your equations are too large to judge: comparing them builds more than {limit} terms "
            "(helper tensors written out in place); write each tensor more simply")


def too_slow_to_judge(seconds: float) -> str:
    """The sentence for an answer whose judging outlasts its deadline."""
    return f"your equations took longer than {seconds:g} s to judge; write them more simply"
