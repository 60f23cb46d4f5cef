r"""Index equations: the book's answer language for derivations.

A derivation's answer is a string of equations in the book's index notation
(`front/notation.md`), one per line (or separated by `;`), each defining one tensor:

    NEAREST = r'''
    dist[a,b] = sum_d (P[a,d] - Q[b,d])^2
    weight[a,b] = softmax_b (-dist[a,b]) / tau
    guess[a,c] = sum_b weight[a,b] * label[b,c]
    '''

(A toy problem of no chapter: points P[a,d] guess the labels label[b,c] of points Q[b,d], weighting
the nearest most; every example below stays with it.)

The language, exactly:

* `Name[i, j, ...] = expression`: the left side names the tensor and its indices (distinct
  names, any you like: `a'`, `a2` and `b1` are all indices). Every index on the left must
  appear on the right, and every index on the right that no `sum` binds must be on the left.
  A tensor is defined once, from the question's inputs and tensors defined on earlier lines.
* `sum_d`, `sum_{b,d}` (also `\sum_{d}`, `Σ_d`) sum over the listed indices; `softmax_b`,
  `softmax_{b,c}` normalise over the listed indices (they stay indices of the result). Both apply
  to the **whole product that follows them**, up to the next `+` or `-` outside brackets:
  `sum_d u[d] * v[d] + c` is (Σ_d u v) + c, and `softmax_b (-dist[a,b]) / tau` is the softmax of
  -dist/τ, as is `softmax_b (1/tau) * (-dist[a,b])`. Use brackets to say otherwise:
  `(softmax_b s[a,b]) * r[b]`.
* `+ - * /`, `^` (or `**`) with a constant exponent, numbers, brackets `( )` or `{ }`, and
  multiplication by juxtaposition: `weight[a,b] label[b,c]`.
* sizes as numbers: `sqrt(D)`, `1/sqrt(D)`, `D^(1/2)` (the question names its sizes).
* functions `exp`, `log` (natural), `sigmoid` (also `σ`, `\sigma`), `tanh`, `sqrt`, `relu`.
* an index position holds an index (`P[a, d]`), an integer combination of indices
  (`x[2*n + 1]`, `s[n - 1, c]`), or an id read from an integer tensor (`price[item[o,q]]`).
* a function the question declares by the sizes of its vectors (say `MIX`, declared `"C,C -> C"`)
  is called on whole vectors, `:` marking each vector's axis, and its result's axis is `:` on the
  left: `mixed[a,:] = MIX(guess[a,:], prior[:])`.
* every spelling of the languages' lexicon (`attnlab._lexicon`), as the order checker reads them:
  `\mathrm{softmax}`, `\exp`, `\frac{a}{b}`, `\frac12`, `½`, `\sqrt{D}`, `\cdot`, `\ast`, `·`, `×`,
  `÷`, `\div`, `−`, `d²`, `W^P[a,d]` (= `WP`), `\tau`/`τ` (= `tau`), `\tilde{W}^P` or `W̃P`
  (= `WP_tilde`); `#` starts a comment.
* an einsum spec is shorthand where a question names its operands: `"ad,bd->ab"` (with the
  operands P, Q), with an optional scale after it: `"ad,bd->ab / sqrt(D)"` or
  `"ad,bd->ab * 1/sqrt(D)"`.

Nothing is ever evaluated as Python: a lark grammar reads the text, and `evaluate` interprets
the tree with torch on the tensors you give it, under caps on the text, the number of
equations and indices, nesting, the size of every intermediate tensor, and time.

    evaluate(NEAREST, {"P": P, "Q": Q, "label": label}, sizes={"tau": 0.5})["guess"]   # guess[a,c]

(`sizes={"D": 4}` gives a size used as a number when no index named d tells it; `functions=` gives a
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
