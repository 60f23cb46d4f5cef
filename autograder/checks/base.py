"""The kinds of hidden check, and helpers to draw trial inputs.

A check kind decides what the trials are and what `reference(*trial)` gives (what a right answer
sends back): `FunctionCheck` calls the student's function, `ValueCheck` compares a value exactly,
`AnswerCheck` judges a symbolic Θ-order, `EquationCheck` judges index equations numerically.

How to pose an equation answer (a derivation whose answer is a set of index equations)
-------------------------------------------------------------------------------------
1. Write the reference in the chapter's solution cell (its one home; `solutions.chN` loads it,
   `solutions.chapter`), in the answer language of `attnlab.equations`:

       SPATIAL_EQUATIONS = r'''
       Query[h,x,y,k] = sum_j WQ[h,k,j] * M[x,y,j]
       ...
       V[h,x,y,i] = sum_{x2,y2} alpha[h,x,y,x2,y2] * Value[h,x2,y2,i]
       '''

2. Declare the question and its check in `autograder/checks/chN.py`:

       SPATIAL = EquationQuestion(
           inputs={"WQ": "H,K,J", "WK": "H,K,J", "WV": "H,I,J", "M": "X,Y,J"},
           defines={"Query": "H,X,Y,K", "Key": "H,X,Y,K", "Value": "H,X,Y,I",
                    "alpha": "H,X,Y,X,Y", "V": "H,X,Y,I"},
           reference=chN.SPATIAL_EQUATIONS,
           sizes=({"H": 2, "K": 3, "I": 4, "J": 5, "X": 6, "Y": 7}, ...),
       )
       CHECKS = {"chN.SPATIAL_EQUATIONS": EquationCheck(SPATIAL)}

   A spec lists a tensor's sizes axis by axis; an integer tensor (word ids) adds the range of its
   values: `"w": "B,T in V"`. Every size of every draw must differ from the others (so that
   swapped indices show), including derived ones you give explicitly (`"T2": (T - D) // 2 + 1`).
   For an einsum-spec answer (`"hka,hkb->hab / sqrt(K)"`) name the operands of the one defined
   tensor: `operands=("WQ", "WK")`. A function the answer may call without it being defined (the
   captioner's CELL) is declared by the sizes of its vectors, `functions={"CELL": "J,K,U -> J"}`,
   and called on whole vectors, `z_next[:] = CELL(z[:], V[:], e[:])`; the judge gives it a fixed
   random nonlinear map, so the arguments (which tensors, in which order) are what is checked.
   The question checks itself when the module is imported: the reference must be well formed
   against the specs.
3. The notebook's answer cell holds the string (between the solution delimiters); its test cell
   has a visible form check and the hidden check:

       expect_equations(SPATIAL_EQUATIONS, inputs={...}, defines={...}, what="Problem 2.1")
       hidden_check("chN.SPATIAL_EQUATIONS", SPATIAL_EQUATIONS)

   with the same `inputs` and `defines` as the question (they are part of the problem, not of
   its answer).
4. Add a wrong answer to `solutions/mistakes/chN.py`, an edit of the reference's text, e.g. the softmax
   over y2 only: `Patch("spatial_equations", "softmax_{x2,y2}", "softmax_{y2}", ("test_spatial_equations",), "...")`.

The judge (`autograder.equation_judge`) evaluates the student's equations and the reference on
random tensors for every size draw, compares each defined tensor axis by axis (so index names,
the order of factors and sums, where the scale sits and softmax written out as exp/sum do not
matter), and for a wrong tensor names the index at fault without printing the reference.
Put the whole assignment inside the solution region (its opening marker, `coursenb.cells.SOLUTION_BEGIN`,
before `SPATIAL_EQUATIONS = r'''`): the release then has nbgrader's stub, and its test cell fails on the
undefined name, as for a function.

How to judge a function that calls an earlier one (one mistake costs one cell)
-----------------------------------------------------------------------------
The reference takes the earlier function as a keyword argument whose default is the reference's
own: the chapter keeps the student's signature, and `solutions/chN.py` adds the keywords when it
loads the chapter, `load("ch5", globals(), upstream={"caption_step": ("image_attention", "attend")})`.
Name them in the check's `upstream`:

    "ch5.caption_step": FunctionCheck(ch5.caption_step, trials, upstream=("image_attention", "attend"))

The notebook line stays `hidden_check("ch5.caption_step", caption_step)`. The student's calls to
those functions are recorded in the sandbox; the cell passes if its output equals the reference's,
or the reference composed over the student's own functions (their recorded results, used only when
shaped like the reference's own results on the same arguments).
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import torch

DTYPES = (torch.float32, torch.float64)


def devices() -> list[torch.device]:
    """The CPU, and CUDA when present."""
    return [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])


def randn(gen: torch.Generator, *shape: int, dtype: torch.dtype, device: torch.device,
          scale: float = 1.0) -> torch.Tensor:
    """Seeded standard normal draw (drawn on the CPU so every device sees the same numbers)."""
    return (scale * torch.randn(*shape, generator=gen, dtype=torch.float64)).to(dtype=dtype, device=device)


def qkv(gen: torch.Generator, H: int, K: int, I: int, J: int, *, dtype: torch.dtype,
        device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Seeded W^Q[H,K,J], W^K[H,K,J], W^V[H,I,J], scaled by 1/sqrt(J) so softmax is not saturated."""
    WQ, WK = (randn(gen, H, K, J, dtype=dtype, device=device, scale=J ** -0.5) for _ in range(2))
    return WQ, WK, randn(gen, H, I, J, dtype=dtype, device=device, scale=J ** -0.5)


@dataclass(frozen=True)
class FunctionCheck:
    """Call the student's function on seeded trials and compare with the reference.

    `upstream`: names of earlier student functions that the graded one calls (`("self_attention",)`
    for `transformer`). The reference must take each as a keyword argument
    (`transformer(M, layers, *, self_attention=self_attention)`). The student's calls to them are
    recorded in the sandbox, and the function passes if its output equals the reference's, or the
    reference composed over the student's own upstream functions (so one mistake costs one cell).
    """

    reference: Callable[..., object]
    trials: Callable[[torch.Generator], list[tuple]]
    rtol: dict[torch.dtype, float] | None = None
    atol: dict[torch.dtype, float] | None = None
    upstream: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.upstream:  # trials end with the recording request: reference(*trial) must ignore it
            for name in self.upstream:
                self.upstream_reference(name)
            object.__setattr__(self, "reference", _IgnoreRecordRequest(self.reference))

    def upstream_reference(self, name: str) -> Callable[..., object]:
        """The reference's own `name`: the default of its keyword argument `name`."""
        fn = self.reference.fn if isinstance(self.reference, _IgnoreRecordRequest) else self.reference
        param = inspect.signature(fn).parameters.get(name)
        if param is None or param.kind not in (param.KEYWORD_ONLY, param.POSITIONAL_OR_KEYWORD) or \
                not callable(param.default):
            raise ValueError(f"the reference {getattr(fn, '__name__', fn)} must take {name} as a keyword argument "
                             f"whose default is the reference {name} (upstream judging)")
        return param.default

    def tolerances(self, dtype: torch.dtype) -> tuple[float, float]:
        """(rtol, atol) for outputs of this dtype."""
        rtol = {torch.float32: 1e-4, torch.float64: 1e-9, torch.float16: 1e-2, torch.bfloat16: 2e-2}
        atol = {torch.float32: 1e-5, torch.float64: 1e-10, torch.float16: 1e-3, torch.bfloat16: 1e-2}
        rtol.update(self.rtol or {})
        atol.update(self.atol or {})
        return rtol.get(dtype, 0.0), atol.get(dtype, 0.0)


class _IgnoreRecordRequest:
    """A reference that drops a trial's trailing recording request (`{attnlab.grading.RECORD: [...]}`)."""

    def __init__(self, fn: Callable[..., object]) -> None:
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", "reference")
        self.__doc__ = fn.__doc__

    def __call__(self, *args: object, **kwargs: object) -> object:
        from attnlab.grading import split_record_request

        return self.fn(*split_record_request(args)[0], **kwargs)


@dataclass(frozen=True)
class AnswerCheck:
    """A symbolic answer: a Θ-order (or an equation) in named variables, under the question's
    relations between the sizes (such as "K <= J")."""

    reference: str
    variables: tuple[str, ...]
    relations: tuple[str, ...] = ()


@dataclass(frozen=True)
class ValueCheck:
    """A plain value (an integer, say) compared exactly, or a function of small ints."""

    reference: Callable[..., object]
    trials: Callable[[torch.Generator], list[tuple]]


@dataclass(frozen=True)
class EquationQuestion:
    """An index-equation answer: the tensors given, the tensors to define (in order), the reference."""

    inputs: Mapping[str, str]
    defines: Mapping[str, str]
    reference: str
    sizes: tuple[Mapping[str, int], ...]
    operands: tuple[str, ...] | None = None
    functions: Mapping[str, str] = field(default_factory=dict)
    rtol: float = 1e-6
    atol: float = 1e-9
    typed: tuple = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        from attnlab.equations import check, function_spec, parse_answer

        if self.operands is not None and len(self.defines) != 1:
            raise ValueError("an einsum-spec question defines exactly one tensor")
        names = self.size_names
        if not self.sizes:
            raise ValueError("a question needs at least one draw of sizes")
        for draw in self.sizes:
            if set(draw) != names:
                raise ValueError(f"a draw of sizes must give exactly {sorted(names)}, got {sorted(draw)}")
            values = list(draw.values())
            if len(set(values)) != len(values):
                raise ValueError(f"the sizes of a draw must all differ (so that swapped indices show): {dict(draw)}")
        for text in self.functions.values():
            function_spec(text)
        eqs = parse_answer(self.reference, self.operands, next(iter(self.defines)))
        object.__setattr__(self, "typed", tuple(check(eqs, self.inputs, self.defines, sizes=names,
                                                      functions=self.functions)))

    @property
    def size_names(self) -> frozenset[str]:
        """Every size the specs name (axes, and the ranges of integer tensors)."""
        from attnlab.equations import function_spec, spec

        out: set[str] = set()
        for text in [*self.inputs.values(), *self.defines.values()]:
            s = spec(text)
            out |= {a for a in s.axes if isinstance(a, str)}
            if isinstance(s.values, str):
                out.add(s.values)
        for text in self.functions.values():
            args, result = function_spec(text)
            out |= {a for a in (*args, result) if isinstance(a, str)}
        return frozenset(out)


@dataclass(frozen=True)
class EquationCheck:
    """Index equations, judged numerically against the question's reference (`autograder.equation_judge`)."""

    question: EquationQuestion

    def reference(self) -> str:
        """What a right answer sends: the reference equations (the check's one trial takes no argument)."""
        return self.question.reference



class Passed(str):
    """What a behaviour check's `verify` returns for a pass with a figure: the sentence that carries it."""


@dataclass(frozen=True)
class BehaviourCheck:
    """A check decided by one function of all the outcomes, not by comparing each with one output: a
    design question with many right answers, graded by what the answer does, or a value whose feedback
    must say what is wrong without showing the reference.

    `trials(gen)` draws the trials; the last `private` items of each trial stay in the grader (a
    held-out set's answers, a secret relabelling) and the student's function is called on the
    others. `verify(trials, values)` sees the whole trials and every output (plain data as it
    arrived: read tensors with `received`), and returns None if they pass or one sentence saying
    why not; a pass with a figure to show (a statistic, its bound and the margin:
    `autograder.gradinglog.figure`) returns it as `Passed(sentence)`, and the feedback and the
    report show it as they show a failure's. `reference(*trial)` is an acceptable answer's output
    for one trial: the grader checks at start-up that it passes.
    """

    reference: Callable[..., object]
    trials: Callable[[torch.Generator], list[tuple]]
    verify: Callable[[Sequence[tuple], Sequence[object]], str | Passed | None]
    private: int = 0

    def public(self, trial: tuple) -> tuple:
        """What the student's function is called on."""
        return trial[:len(trial) - self.private]


def received(value: object) -> tuple[torch.Tensor, str] | None:
    """(the tensor on the CPU, the device type it was made on) for a plain tensor from the student's
    side, None for anything else."""
    from attnlab.wire import Received

    if isinstance(value, Received):
        return value.tensor, value.device_type
    if type(value) is torch.Tensor:
        return value.detach().cpu(), value.device.type
    return None



Check = FunctionCheck | AnswerCheck | ValueCheck | EquationCheck | BehaviourCheck
