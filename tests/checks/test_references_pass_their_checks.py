"""Each chapter judged on its own solutions, in this process, without executing a notebook.

The references are the chapters' solution cells (`solutions.chapter`). Here those cells run in
a fresh namespace, as a student's notebook would define them, and every hidden check the
chapter's test cells call is judged (`autograder.judge`) on what they define: all pass. Each
mistake of `solutions/mistakes` is applied to the chapter the same way: the hidden checks of
exactly the test cells it loses fail (a mistake caught by the visible test only is named as
such). A mistake whose anchor left the chapter fails loudly.
"""
from __future__ import annotations

import ast
import functools
import inspect

import nbformat
import pytest

from autograder.judge import judge, make_trials, run_trials, sent
from coursenb import cells
from coursenb.chapters import select
from solutions.chapter import _extraction, execute, extract, given_cells, solution_cells, source_notebook
from solutions.mistakes import Assign, Patch, StaleMistake, Wrong, apply, wrong_for

CHAPTERS = [c.assignment for c in select()]
SEED = 20240611
# Checks that train a model (seconds each): judged in the slow lane only.
TRAINING = {"ch4.blank_lm"}


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Judge on one thread, as the engine's judge does (autograder.engine.judging): the trials' tensors are tiny, and
    two intra-op threads per test worker on a busy 2-core machine made each of their operations wait for the other's
    time slice (one Chapter 7 mistake judged in 1.76 s on two threads, 0.24 s on one, at load 9)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def hidden_checks(nb: nbformat.NotebookNode) -> list[tuple[str, str, str]]:
    """(test cell, check name, the answer's expression) for every hidden_check call of `nb`'s test cells."""
    found = []
    for cell in nb.cells:
        if not cells.is_test(cell):
            continue
        for node in ast.walk(ast.parse("\n".join(cells.hidden_tests(cell.source)))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == cells.HIDDEN_CHECK:
                found.append((cells.grade_id(cell), node.args[0].value, ast.unparse(node.args[1])))
    return found


def _helpers(nb: nbformat.NotebookNode, wanted: set[str]) -> list[ast.stmt]:
    """The chapter's top-level imports, definitions and assignments that `wanted` needs (transitively), in order:
    a hidden check may call a chapter helper (`head_outputs`) built on the student's answer."""
    statements = [s for c in nb.cells if c.get("cell_type") == "code" and not cells.is_solution(c)
                  and not cells.is_test(c) and not cells.is_solutions_only(c)
                  for s in ast.parse(cells.strip_hidden_tests(c.source)).body]

    def binds(s: ast.stmt) -> set[str]:
        if isinstance(s, (ast.FunctionDef, ast.ClassDef)):
            return {s.name}
        if isinstance(s, (ast.Import, ast.ImportFrom)):
            return {(a.asname or a.name).split(".")[0] for a in s.names}
        if isinstance(s, ast.Assign):
            return {t.id for t in s.targets if isinstance(t, ast.Name)}
        return set()

    chosen: set[int] = set()
    todo = set(wanted)
    while todo:
        name = todo.pop()
        defining = [k for k, s in enumerate(statements) if name in binds(s)]
        if defining and defining[-1] not in chosen:
            chosen.add(defining[-1])
            todo |= {n.id for n in ast.walk(statements[defining[-1]]) if isinstance(n, ast.Name)}
    return [statements[k] for k in sorted(chosen)]


def _reaches(value: object, namespace: dict, seen: set[str]) -> set[str]:
    """The global names `value` (a function, a class, a value) uses, transitively through `namespace`."""
    codes = [value.__code__] if inspect.isfunction(value) else \
        [f.__code__ for f in vars(value).values() if inspect.isfunction(f)] if inspect.isclass(value) else []
    while codes:
        code = codes.pop()
        codes += [c for c in code.co_consts if inspect.iscode(c)]
        for name in code.co_names:
            if name in namespace and name not in seen:
                seen.add(name)
                _reaches(namespace[name], namespace, seen)
    return seen


def judged(nb: nbformat.NotebookNode, skip: set[str] = frozenset(),
           only_using: set[str] | None = None) -> dict[str, list[str]]:
    """{test cell: [the failures of its hidden checks]} for `nb`'s solution cells run here; with `only_using`,
    only the checks whose answer uses one of those names (the others are the reference's, judged already)."""
    namespace = execute(nb)
    checks = [c for c in hidden_checks(nb) if c[1] not in skip]
    wanted = {n.id for *_, e in checks for n in ast.walk(ast.parse(e)) if isinstance(n, ast.Name)} - set(namespace)
    exec(compile(ast.Module(body=_helpers(nb, wanted), type_ignores=[]), "<chapter helpers>", "exec"), namespace)
    failures: dict[str, list[str]] = {gid: [] for gid, *_ in checks}
    for gid, name, expression in checks:
        answer = eval(expression, namespace)  # noqa: S307 - the chapter's own text
        if only_using is not None:
            used = {n.id for n in ast.walk(ast.parse(expression)) if isinstance(n, ast.Name)}
            if not (_reaches(answer, namespace, set(used)) & only_using):
                continue
        trials = make_trials(name, SEED) if callable(answer) else []
        verdict = judge(name, trials, run_trials(answer, sent(name, trials)))
        if not verdict.passed:
            failures[gid].append(f"{name}: {verdict.message}")
    return failures


@functools.cache
def _source(assignment: str) -> nbformat.NotebookNode:
    return source_notebook(assignment)


@pytest.mark.parametrize("assignment", CHAPTERS)
def test_each_chapter_passes_its_hidden_checks_with_its_own_solutions(assignment: str) -> None:
    failures = judged(_source(assignment), skip=TRAINING)
    assert failures and not any(failures.values()), failures


def _mistakes() -> list:
    return [pytest.param(a, k, id=f"{a}-{k}-{w.cell}") for a in CHAPTERS for k, w in enumerate(wrong_for(a))]


@pytest.mark.parametrize(("assignment", "k"), _mistakes())
def test_each_mistake_fails_exactly_the_hidden_checks_of_the_cells_it_loses(assignment: str, k: int) -> None:
    wrong = wrong_for(assignment)[k]
    nb = _source(assignment)
    trained = {gid for gid, check, _ in hidden_checks(nb) if check in TRAINING}
    if set(wrong.loses) <= trained:
        pytest.skip("judged by training a model only: the slow lane's invariants test grades it")
    wrong_nb = apply(nb, wrong)
    changed = set().union(*(_defines(c) for n in (nb, wrong_nb) for c in n.cells if cells.grade_id(c) == wrong.cell))
    failures = judged(wrong_nb, skip=TRAINING, only_using=changed)
    failed = {gid for gid, f in failures.items() if f}
    assert failed == set(wrong.loses) - trained, f"{wrong.why}: {failures}"


def _defines(cell: nbformat.NotebookNode) -> set[str]:
    """The names a solution cell defines at its top level."""
    out = set()
    for node in ast.parse(cell.source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, ast.Assign):
            out |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return out


def test_a_patch_whose_anchor_left_the_chapter_fails_loudly() -> None:
    nb = _source("ch1")
    gone = Patch("self_attention", "/ math.sqrt(Kx)", "", ("test_self_attention",), "the scale left out")
    with pytest.raises(StaleMistake, match=r"'the scale left out'.*'/ math.sqrt\(Kx\)' is not in .*'self_attention'"):
        apply(nb, gone)
    twice = Patch("self_attention", "torch.einsum", "torch.mul", ("test_self_attention",), "no einsum")
    with pytest.raises(StaleMistake, match=r"'no einsum'.*is \d+ times in"):
        apply(nb, twice)
    with pytest.raises(StaleMistake, match=r"assigns SOFTMAX_TIMES 0 times"):
        apply(nb, Assign("softmax_time", "SOFTMAX_TIMES", "T", ("test_softmax_time",), "a name the cell lacks"))


def test_every_mistake_applies_to_the_chapter_and_changes_its_cell() -> None:
    for assignment in CHAPTERS:
        nb = _source(assignment)
        reference = {cells.grade_id(c): cells.without_solution_markers(c.source) for c in solution_cells(nb)}
        for wrong in wrong_for(assignment):
            assert isinstance(wrong, (Patch, Assign, Wrong))
            changed = apply(nb, wrong)
            after = {cells.grade_id(c): cells.without_solution_markers(c.source) for c in solution_cells(changed)}
            assert {g for g in reference if after[g] != reference[g]} == {wrong.cell}, wrong.why


def test_the_cached_extraction_is_the_chapters_own() -> None:
    """What solutions/ executes (kept in solutions/__pycache__, keyed by the chapter's text) is what the chapter's
    notebook gives now."""
    for assignment in CHAPTERS:
        path, code = _extraction(assignment)
        assert code == extract(_source(assignment), str(path), ("__name__",))
        given = set(given_cells(_source(assignment)))  # the locked cells the solutions call (Chapter 8's block)
        assert [label for label, _ in code[1:]] == [cells.grade_id(c) for c in _source(assignment).cells
                                                    if c.get("cell_type") == "code" and (cells.is_solution(c) or
                                                                                         cells.grade_id(c) in given)]


def _visible_calls(assignment: str, function: str) -> dict[str, ast.Call]:
    """{answer variable: the call `function(VARIABLE, ...)`} in the chapter's test cells (their visible part)."""
    found = {}
    for cell in _source(assignment).cells:
        if cells.is_test(cell):
            for node in ast.walk(ast.parse(cells.strip_hidden_tests(cell.source))):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == function \
                        and node.args and isinstance(node.args[0], ast.Name):
                    found[node.args[0].id] = node
    return found


def test_the_visible_form_checks_state_the_questions_the_judge_asks() -> None:
    """A question's statement lives in the chapter's visible form check (the student's side cannot import the
    instructor's) and in the judge's question: the two must agree (variables of a symbolic answer; tensors given,
    defined, and the operands of an equation answer)."""
    from autograder.checks import CHECKS
    from solutions import answers

    for name in answers.QUESTIONS:  # the variables have one home, the form check: read from there
        assignment, variable = name.split(".")
        call = _visible_calls(assignment, "expect_answer")[variable]
        assert tuple(ast.literal_eval(call.args[1])) == answers.question(name).variables == CHECKS[name].variables, name
    equations = {n: c.question for n, c in CHECKS.items() if c.index_equations is not None}
    assert equations
    for name, question in equations.items():
        assignment, variable = name.split(".")
        given = {k.arg: ast.literal_eval(k.value) for k in _visible_calls(assignment, "expect_equations")[variable].keywords}
        assert given["inputs"] == dict(question.inputs) and given["defines"] == dict(question.defines), name
        assert tuple(given.get("operands") or ()) == tuple(question.operands or ()), name
        assert set(given.get("functions") or ()) == set(question.functions), name


def test_the_feed_forward_test_names_the_slip_it_sees() -> None:
    """Issue 33.5: Chapter 7's visible test of feed_forward says what each wrong layer did on its hand-checked example
    (on main every slip was hinted 'beta1 is added before the ReLU': a sigmoid for the ReLU too); the book's mistakes
    and two more (a sigmoid for the ReLU, no nonlinearity) each get the sentence that names them."""
    import torch

    import attnlab.testing

    nb = _source("ch7")
    test = next(c for c in nb.cells if cells.grade_id(c) == "test_feed_forward")
    visible = cells.strip_hidden_tests(test.source)
    reference = next(cells.without_solution_markers(c.source) for c in solution_cells(nb)
                     if cells.grade_id(c) == "feed_forward")
    said = {"a ReLU after the second layer too": "the output went through a ReLU too",
            "beta1 added after the ReLU": "beta1 was added after the ReLU"}
    sources = {w.why: apply(nb, w) for w in wrong_for("ch7") if w.cell == "feed_forward"}
    sources = {why: next(c.source for c in changed.cells if cells.grade_id(c) == "feed_forward")
               for why, changed in sources.items()}
    assert set(sources) == set(said)  # a new mistake of this cell gets its sentence here
    sources["a sigmoid for the ReLU"] = reference.replace("torch.relu(", "torch.sigmoid(")
    said["a sigmoid for the ReLU"] = "max(0, x) coordinate by coordinate (no other nonlinearity)"
    sources["no nonlinearity"] = reference.replace("torch.relu(M @ W1.T + beta1)", "(M @ W1.T + beta1)")
    said["no nonlinearity"] = "nothing is between the two layers"
    for why, source in [("the reference", reference), *sources.items()]:
        space = {"torch": torch, "math": __import__("math"), **vars(attnlab.testing)}
        exec(cells.without_solution_markers(source), space)  # noqa: S102 - the chapter's own cells
        try:
            exec(visible, space)  # noqa: S102
        except attnlab.testing.Explained as exc:
            assert why != "the reference", exc
            assert said[why] in str(exc) and (why == "beta1 added after the ReLU" or "beta1 was" not in str(exc)), \
                (why, str(exc))
        else:
            assert why == "the reference", f"{why}: the visible test passed"
