r"""Index equations: the book's answer language for derivations.

A derivation's answer is a string of equations in the book's index notation
(`front/notation.md`), one per line (or separated by `;`), each defining one tensor:

    LAYER_EQUATIONS = r'''
    Query[h,t,k] = sum_j WQ[h,k,j] * M[t,j]
    Key[h,t,k]   = sum_j WK[h,k,j] * M[t,j]
    Value[h,t,i] = sum_j WV[h,i,j] * M[t,j]
    alpha[h,t,t2] = softmax_{t2} (sum_k Query[h,t,k] * Key[h,t2,k]) / sqrt(K)
    V[h,t,i] = sum_{t2} alpha[h,t,t2] * Value[h,t2,i]
    '''

(Chapter 1's layer, which the book states; no question asks for it.)

The language, exactly:

* `Name[i, j, ...] = expression`: the left side names the tensor and its indices (distinct
  names, any you like: `x'`, `x2` and `t1` are all indices). Every index on the left must
  appear on the right, and every index on the right that no `sum` binds must be on the left.
  A tensor is defined once, from the question's inputs and tensors defined on earlier lines.
* `sum_j`, `sum_{j,k}` (also `\sum_{j}`, `Σ_j`) sum over the listed indices; `softmax_{t2}`
  normalises over the listed indices (they stay indices of the result). Both apply to the
  **whole product that follows them**, up to the next `+` or `-` outside brackets:
  `sum_j a[j] * b[j] + c` is (Σ_j a b) + c, and `softmax_{t2}(s[t,t2]) / sqrt(K)` is the softmax
  of s/√K. Use brackets to say otherwise: `(softmax_{t2} s[t,t2]) * v[t2]`.
* `+ - * /`, `^` (or `**`) with a constant exponent, numbers, brackets `( )` or `{ }`, and
  multiplication by juxtaposition: `WQ[h,k,j] M[x,y,j]`.
* sizes as numbers: `sqrt(K)`, `1/sqrt(K)`, `K^(1/2)` (the question names its sizes).
* functions `exp`, `log` (natural), `sigmoid` (also `σ`, `\sigma`), `tanh`, `sqrt`, `relu`.
* an index position holds an index (`M[t, j]`), an integer combination of indices
  (`M[b, 2*t + d, j]`, `z[t-1, j]`), or a word id read from an integer tensor (`E[w[b,t], j]`).
* a function the question declares by the sizes of its vectors (the captioner's `CELL`, declared
  `"J,K,U -> J"`) is called on whole vectors, `:` marking each vector's axis, and its result's
  axis is `:` on the left: `z_next[:] = CELL(z[:], V[:], E[w[t], :])`.
* LaTeX and Unicode where cheap: `\mathrm{softmax}`, `\exp`, `\frac{a}{b}`, `\sqrt{K}`, `\cdot`,
  `·`, `×`, `−`, `W^Q[h,k,j]` (= `WQ`), `\alpha`/`α` (= `alpha`), `\tilde{W}^Q` or `W̃Q`
  (= `WQ_tilde`); `#` starts a comment.
* an einsum spec is shorthand where a question names its operands: `"hkj,tj->htk"` (with the
  operands WQ, M), with an optional scale after it: `"hkj,tj->htk / sqrt(K)"` or
  `"hkj,tj->htk * 1/sqrt(K)"`.

Nothing is ever evaluated as Python: a lark grammar reads the text, and `evaluate` interprets
the tree with torch on the tensors you give it, under caps on the text, the number of
equations and indices, nesting, the size of every intermediate tensor, and time.

    evaluate(LAYER_EQUATIONS, {"WQ": WQ, "WK": WK, "WV": WV, "M": M})["V"]   # V[h,t,i]

(`sizes={"K": 4}` gives a size used as a number when no index named k tells it; `functions=` gives a
declared function as a callable.)

`attnlab.testing.expect_equations` checks an answer's form (names, indices, sizes) for a
visible test; only the grader checks that the equations are right.
"""
from __future__ import annotations

from attnlab._lexicon import EQUATION_FUNCTIONS as FUNCTIONS
from attnlab._lexicon import EQUATION_MAX_CHARS as MAX_CHARS
from attnlab._lexicon import EQUATION_MAX_ELEMENTS as MAX_ELEMENTS
from attnlab._lexicon import EQUATION_MAX_EQUATIONS as MAX_EQUATIONS
from attnlab._lexicon import EQUATION_MAX_INDICES as MAX_INDICES
from attnlab._lexicon import EQUATION_MAX_LINE as MAX_LINE
from attnlab._lexicon import EQUATION_MAX_NODES as MAX_NODES
from attnlab._lexicon import EQUATION_MAX_WORK as MAX_WORK
from attnlab._lexicon import EQUATION_REDUCTIONS as REDUCTIONS
from attnlab._lexicon import MAX_DEPTH
from attnlab.equations._einsum import einsum_equation, is_einsum, parse_answer
from attnlab.equations._evaluate import evaluate, evaluate_typed
from attnlab.equations._form import Typed, check
from attnlab.equations._grammar import GRAMMAR, parse
from attnlab.equations._shapes import Spec, function_spec, spec
from attnlab.equations._tree import (
    MAX_BUILT,
    TIME_BUDGET,
    Affine,
    Apply,
    BinOp,
    Budget,
    Call,
    Equation,
    EquationError,
    Gather,
    Index,
    Neg,
    Node,
    Num,
    Pow,
    Reduce,
    Ref,
    Slice,
    Sym,
    TooLarge,
    Var,
    children,
    indices_of,
    show,
    walk,
)

__all__ = [
    "FUNCTIONS", "GRAMMAR", "MAX_BUILT", "MAX_CHARS", "MAX_DEPTH", "MAX_ELEMENTS", "MAX_EQUATIONS", "MAX_INDICES", "MAX_LINE",
    "MAX_NODES", "MAX_WORK", "REDUCTIONS", "TIME_BUDGET",
    "Affine", "Apply", "Budget", "BinOp", "Call", "Equation", "EquationError", "Gather", "Index", "Neg", "Node", "Num", "Pow",
    "Ref", "Reduce", "Slice", "Spec", "Sym", "TooLarge", "Typed", "Var", "check", "children", "einsum_equation", "evaluate",
    "evaluate_typed", "function_spec", "indices_of", "is_einsum", "parse", "parse_answer", "show", "spec", "walk",
]
