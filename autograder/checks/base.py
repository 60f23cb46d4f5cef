"""The protocol every hidden check follows, its five kinds, and the trial grid.

A hidden check (`Check`) offers four things, and nothing outside this module asks which kind it is:

* `draw(seed)`: its trials, drawn from the notebook's secret seed (what the judge holds);
* `public(trial)`: the part of a trial the student's process is sent;
* `expected(trials)`: what a right answer sends back (the reference's outcomes);
* `verdict(trials, outcomes, passed)`: the decision, one sentence a student can act on;

and, for the leak audit (`publish.leaks`), what of its answer a page could give away
(`variables`, `whole_answer`, `value_function`, `index_equations`, `symbolic_reference`,
`shows_a_value`). A trial whose sizes were drawn from the seed is a `Secret`: a verdict on it
names the symptom only (`autograder.checks.compare`).

The kinds: `FunctionCheck` calls the student's function and compares each output with the
reference's, `ValueCheck` compares a value exactly, `AnswerCheck` judges a symbolic Θ-order,
`EquationCheck` judges index equations numerically, `BehaviourCheck` decides from all the
outputs at once (a design question with many right answers).

How to add a chapter's checks: one module `autograder/checks/chN.py` that defines
`CHECKS: dict[str, Check]` (its trials drawn with `grid` over a `Sizes`), registered by being there
(`autograder.checks.CHAPTERS` lists the modules); its symbolic questions are declared in
`solutions.answers.QUESTIONS`.

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
from typing import Any

import torch

from autograder.checks.compare import compare, describe, judge_composition, secret_error

DTYPES = (torch.float32, torch.float64)


# --------------------------------------------------------------------------- names

class ChapterId(str):
    """A chapter's id, "ch4": the part of a check name before its first dot ("ch4.blank_head")."""

    def __new__(cls, text: str) -> ChapterId:
        if not text or "." in text:
            raise ValueError(f"not a chapter id: {text!r}")
        return super().__new__(cls, text)

    @classmethod
    def of(cls, name: str) -> ChapterId:
        """The chapter of check `name` ("ch4.blank_head" -> "ch4")."""
        return cls(name.split(".", 1)[0])

    def check(self, short: str) -> str:
        """The full name of this chapter's check `short` ("blank_head" -> "ch4.blank_head")."""
        return f"{self}.{short}"


def short_name(name: str) -> str:
    """The name a check has inside its chapter ("ch4.blank_head" -> "blank_head")."""
    return name.split(".", 1)[1]


# --------------------------------------------------------------------------- the protocol

@dataclass(frozen=True)
class Verdict:
    """Pass or fail, with one sentence a student can act on."""

    passed: bool
    message: str


class Check:
    """One hidden check: its trials, their public part, the reference's outcome on each, and the judge.

    Every kind below implements this; the judge (`autograder.judge`), the judge process
    (`autograder.engine.judging`) and the leak audit (`publish.leaks`) use nothing else.
    """

    upstream: tuple[str, ...] = ()  # earlier functions of the chapter that the graded one calls
    variables: tuple[str, ...] = ()  # the names a text answer may use (a symbolic question's sizes)
    uses_expected = False  # the verdict compares with `expected(trials)` (the judge process computes it ahead)

    def draw(self, seed: int) -> list[tuple]:
        """The trials, drawn from the notebook's secret `seed` (the judge holds them whole)."""
        gen = torch.Generator().manual_seed(seed)
        return list(self.trials(gen))  # type: ignore[attr-defined]

    def public(self, trial: tuple) -> tuple:
        """What the student's function is called on for `trial`."""
        return tuple(trial)

    def expected(self, trials: Sequence[tuple]) -> list[object]:
        """What a right answer sends back on `trials` (one value per trial: the reference's outputs)."""
        return [self.reference(*trial) for trial in trials]  # type: ignore[attr-defined]

    def verdict(self, trials: Sequence[tuple], outcomes: Sequence[Any], passed: frozenset[str] = frozenset(),
                expected: Sequence[object] | None = None) -> Verdict:
        """The decision from the student's outcomes on `trials` (`passed`: the notebook's checks already passed,
        by their names inside the chapter; `expected`: `self.expected(trials)` if computed before, as the judge
        process does while the notebook runs, else the reference runs here on the trials it needs)."""
        raise NotImplementedError

    def tolerances(self, dtype: torch.dtype) -> tuple[float, float]:
        """(rtol, atol) for floating outputs of this dtype: exact unless the kind says otherwise."""
        return 0.0, 0.0

    # ---- what the leak audit may look for (publish.leaks)
    whole_answer = False  # the answer is a text judged whole (a symbolic order, index equations)

    def value_function(self) -> Callable[..., object] | None:
        """The reference, where the answer is a function returning a number (a count, a size): its values
        at the chapter's sizes must not appear in a page."""
        return None

    @property
    def index_equations(self) -> str | None:
        """The reference index equations, where the answer is such a set."""
        return None

    @property
    def symbolic_reference(self) -> str | None:
        """The reference, where the answer is an order or an equation in the sizes `variables`."""
        return None

    @property
    def shows_a_value(self) -> bool:
        """Whether the answer is a value (not a function of tensors): a cell naming it shows it in its outputs."""
        return True


class Secret(tuple):
    """A trial whose sizes were drawn from the notebook's secret seed: feedback on it names the symptom,
    never its inputs (not even their shapes) nor what the reference or the student's function made of them."""


SECRET_TRIAL = "on a trial whose sizes were drawn for this notebook (they are not shown)"


def where(trials: Sequence[tuple], i: int, names: Sequence[str] = ()) -> str:
    """Where a failure happened: a public trial by its arguments (named by `names`), a secret one by nothing."""
    if type(trials[i]) is Secret:
        return SECRET_TRIAL
    from attnlab.grading import split_record_request

    return f"on trial {i + 1} of {len(trials)} ({describe(split_record_request(tuple(trials[i]))[0], names)})"


def raised(trials: Sequence[tuple], i: int, error: str, names: Sequence[str] = ()) -> Verdict:
    """The verdict on a function that raised `error` on trial `i` (its message kept off a secret trial)."""
    shown = secret_error(error) if type(trials[i]) is Secret else error
    return Verdict(False, f"your function raised {shown} {where(trials, i, names)}")


def parameter_names(fn: Callable[..., object]) -> tuple[str, ...]:
    """The names of `fn`'s positional parameters (to label a public trial's arguments)."""
    fn = getattr(fn, "fn", fn)  # upstream checks wrap their reference
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return ()
    return tuple(p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _trial_by_trial(check: Check, trials: Sequence[tuple], outcomes: Sequence[Any],
                    problem: Callable[[tuple, object, object, bool], str | None],
                    expected: Sequence[object] | None = None) -> Verdict:
    """Fail on the first trial whose outcome raised or whose `problem(args, value, reference's output, secret)` is
    a sentence (the reference's output from `expected` where given, else computed for the trials reached)."""
    from attnlab.grading import split_record_request

    if len(outcomes) != len(trials):
        return Verdict(False, f"expected results for {len(trials)} trials, got {len(outcomes)}")
    if expected is not None and len(expected) != len(trials):
        raise ValueError(f"{len(expected)} reference outputs given for {len(trials)} trials")
    names = parameter_names(check.reference)  # type: ignore[attr-defined]
    for i, (trial, outcome) in enumerate(zip(trials, outcomes)):
        if outcome.error is not None:
            return raised(trials, i, outcome.error, names)
        args, _ = split_record_request(tuple(trial))
        want = expected[i] if expected is not None else check.reference(*args)  # type: ignore[attr-defined]
        if said := problem(args, outcome.value, want, type(trial) is Secret):
            return Verdict(False, f"{said} {where(trials, i, names)}")
    return Verdict(True, f"all {len(trials)} trials match the reference")


def _one_text(outcomes: Sequence[Any]) -> object | None:
    """The one value a text answer sends, or None when there is none."""
    if len(outcomes) != 1 or outcomes[0].error is not None:
        return None
    return outcomes[0].value


# --------------------------------------------------------------------------- drawing trials

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
class Draw:
    """Seeded draws in one cell of the trial grid: one dtype on one device."""

    gen: torch.Generator
    dtype: torch.dtype
    device: torch.device

    def randn(self, *shape: int, scale: float = 1.0) -> torch.Tensor:
        """A standard normal tensor of `shape` (times `scale`)."""
        return randn(self.gen, *shape, dtype=self.dtype, device=self.device, scale=scale)

    def qkv(self, H: int, K: int, I: int, J: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """W^Q[H,K,J], W^K[H,K,J], W^V[H,I,J], scaled by 1/sqrt(J)."""
        return qkv(self.gen, H, K, I, J, dtype=self.dtype, device=self.device)

    def ids(self, high: int, *shape: int) -> torch.Tensor:
        """Integer ids in [0, high) of `shape` (int64)."""
        return torch.randint(0, high, shape, generator=self.gen).to(self.device)

    def perm(self, n: int) -> torch.Tensor:
        """A random permutation of range(n), on the CPU."""
        return torch.randperm(n, generator=self.gen)

    def seed(self) -> int:
        """A seed for something the trial builds itself (a fresh module's parameters)."""
        return int(torch.randint(2**31 - 1, (1,), generator=self.gen))


def small_ints(gen: torch.Generator, n: int, low: int, high: int) -> list[int]:
    """`n` integers drawn uniformly from [low, high)."""
    return torch.randint(low, high, (n,), generator=gen).tolist()


def between(gen: torch.Generator, low: int, high: int) -> int:
    """One integer drawn uniformly from [low, high]."""
    return int(torch.randint(low, high + 1, (1,), generator=gen))


@dataclass(frozen=True)
class Sizes:
    """A check's sizes: the `public` ones (edge cases, written here: feedback may show them) and `count` more
    drawn by `drawn(gen)` from the notebook's secret seed, over ranges that reach beyond every public size and
    every size a visible test uses (a function that only works up to the sizes it was shown fails there)."""

    public: Sequence[tuple]
    drawn: Callable[[torch.Generator], tuple[int, ...]]
    count: int = 2

    def secret(self, gen: torch.Generator) -> list[tuple[int, ...]]:
        """This notebook's drawn sizes."""
        return [tuple(self.drawn(gen)) for _ in range(self.count)]


Built = tuple | list[tuple]  # a grid builder gives one trial or several


def grid(gen: torch.Generator, sizes: Sizes, build: Callable[..., Built]) -> list[tuple]:
    """`build(draw, *size)` for every device, dtype and size (the public sizes, then the secret ones, drawn
    first), in that order; each gives one trial or a list of them. A trial of a drawn size is `Secret`."""
    drawn = sizes.secret(gen)
    trials: list[tuple] = []
    for device in devices():
        for dtype in DTYPES:
            for size, secret in [*((s, False) for s in sizes.public), *((s, True) for s in drawn)]:
                made = build(Draw(gen, dtype, device), *size)
                made = made if isinstance(made, list) else [made]
                trials.extend(Secret(t) for t in made) if secret else trials.extend(made)
    return trials


# --------------------------------------------------------------------------- the kinds

@dataclass(frozen=True)
class FunctionCheck(Check):
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
    uses_expected = True

    def __post_init__(self) -> None:
        if self.upstream:  # trials end with the recording request: reference(*trial) must ignore it
            for name in self.upstream:
                self.upstream_reference(name)
            object.__setattr__(self, "reference", _IgnoreRecordRequest(self.reference))

    def draw(self, seed: int) -> list[tuple]:
        """The trials; with upstream functions, each ends with the recording request `{RECORD: [names]}`
        (the student's process calls the function without it: `attnlab.grading.run_trials`)."""
        from attnlab.grading import RECORD

        trials = super().draw(seed)
        return [type(args)((*args, {RECORD: list(self.upstream)})) for args in trials] if self.upstream else trials

    def verdict(self, trials: Sequence[tuple], outcomes: Sequence[Any], passed: frozenset[str] = frozenset(),
                expected: Sequence[object] | None = None) -> Verdict:
        """Each output equal to the reference's within tolerance (or to the reference composed over the
        student's own upstream functions)."""
        if not self.upstream:
            return _trial_by_trial(self, trials, outcomes,
                                   lambda args, value, want, secret: compare(value, want, self, secret=secret), expected)
        agreeing = frozenset(n for n in self.upstream if n in passed)
        return _trial_by_trial(self, trials, outcomes, lambda args, value, want, secret:
                               judge_composition(self, args, value, agreeing, secret, want), expected)

    def upstream_reference(self, name: str) -> Callable[..., object]:
        """The reference's own `name`: the default of its keyword argument `name`."""
        fn = self.reference.fn if type(self.reference) is _IgnoreRecordRequest else self.reference
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

    def value_function(self) -> Callable[..., object] | None:
        """The reference, if it is annotated to return a number (a count built on an upstream count)."""
        fn = getattr(self.reference, "fn", self.reference)  # upstream checks wrap their reference
        try:
            returns = inspect.signature(fn).return_annotation
        except (TypeError, ValueError):
            return None
        return fn if returns in ("int", "float", int, float) else None

    @property
    def shows_a_value(self) -> bool:
        return self.value_function() is not None


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
class ValueCheck(Check):
    """A plain value (an integer, say) compared exactly, or a function of small ints."""

    reference: Callable[..., object]
    trials: Callable[[torch.Generator], list[tuple]]
    uses_expected = True

    def verdict(self, trials: Sequence[tuple], outcomes: Sequence[Any], passed: frozenset[str] = frozenset(),
                expected: Sequence[object] | None = None) -> Verdict:
        """Each value equal to the reference's."""
        return _trial_by_trial(self, trials, outcomes,
                               lambda args, value, want, secret: compare(value, want, self, secret=secret), expected)

    def value_function(self) -> Callable[..., object] | None:
        return self.reference


@dataclass(frozen=True)
class AnswerCheck(Check):
    """A symbolic answer: a Θ-order (or an equation) in named variables, under the question's
    relations between the sizes (such as "K <= J")."""

    reference: str
    variables: tuple[str, ...]
    relations: tuple[str, ...] = ()
    whole_answer = True

    def draw(self, seed: int) -> list[tuple]:
        """None: the answer is a text, not a function."""
        return []

    def expected(self, trials: Sequence[tuple]) -> list[object]:
        """The reference answer, once (it has no trials)."""
        return [self.reference]

    @property
    def symbolic_reference(self) -> str | None:
        return self.reference

    def verdict(self, trials: Sequence[tuple], outcomes: Sequence[Any], passed: frozenset[str] = frozenset(),
                expected: Sequence[object] | None = None) -> Verdict:
        """The order of the answer equal to the reference's under the question's relations (`attnlab.symbolic`)."""
        from attnlab.symbolic import check_answer

        if (answer := _one_text(outcomes)) is None:
            return Verdict(False, "no answer was given")
        result = check_answer(answer, self.reference, self.variables, relations=self.relations)
        return Verdict(result.ok, result.message)


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
            out |= {a for a in s.axes if type(a) is str}
            if type(s.values) is str:
                out.add(s.values)
        for text in self.functions.values():
            args, result = function_spec(text)
            out |= {a for a in (*args, result) if type(a) is str}
        return frozenset(out)


@dataclass(frozen=True)
class EquationCheck(Check):
    """Index equations, judged numerically against the question's reference (`autograder.equation_judge`)."""

    question: EquationQuestion
    whole_answer = True

    def draw(self, seed: int) -> list[tuple]:
        """One empty trial: the answer is a value, judged here."""
        return [()]

    def reference(self) -> str:
        """What a right answer sends: the reference equations (the check's one trial takes no argument)."""
        return self.question.reference

    def verdict(self, trials: Sequence[tuple], outcomes: Sequence[Any], passed: frozenset[str] = frozenset(),
                expected: Sequence[object] | None = None) -> Verdict:
        """The equations evaluated on random tensors equal to the reference's, tensor by tensor."""
        from autograder.equation_judge import judge_equations

        if (answer := _one_text(outcomes)) is None:
            return Verdict(False, "no answer was given")
        decision = judge_equations(self.question, answer)
        return Verdict(decision.passed, decision.message)

    @property
    def index_equations(self) -> str | None:
        return self.question.reference


class Passed(str):
    """What a behaviour check's `verify` returns for a pass with a figure: the sentence that carries it."""


@dataclass(frozen=True)
class BehaviourCheck(Check):
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
        """What the student's function is called on: the trial without its private items."""
        return tuple(trial[:len(trial) - self.private])

    def verdict(self, trials: Sequence[tuple], outcomes: Sequence[Any], passed: frozenset[str] = frozenset(),
                expected: Sequence[object] | None = None) -> Verdict:
        """`verify` on every output, once none raised."""
        if len(outcomes) != len(trials):
            return Verdict(False, f"expected results for {len(trials)} trials, got {len(outcomes)}")
        for i, outcome in enumerate(outcomes):
            if outcome.error is not None:
                return raised([type(t)(self.public(t)) for t in trials], i, outcome.error)
        problem = self.verify(trials, [o.value for o in outcomes])
        if type(problem) is Passed:
            return Verdict(True, str(problem))
        return Verdict(problem is None, problem or f"all {len(trials)} trials behave as asked")


def received(value: object) -> tuple[torch.Tensor, str] | None:
    """(the tensor on the CPU, the device type it was made on) for a plain tensor from the student's
    side, None for anything else."""
    from attnlab.wire import Received

    if type(value) is Received:
        return value.tensor, value.device_type
    if type(value) is torch.Tensor:
        return value.detach().cpu(), value.device.type
    return None
