"""The reference answers are the chapters' solution cells: each answer has one home, the chapter.

A chapter's solution cells (nbgrader `solution: true` code cells of ``chapters/chN_*.py``, the
instructor's source text, never a student's submission) are executed at import into the module
that asks for them, after the chapter's imports that those cells use, and nothing else of the
chapter runs. ``solutions/chN.py`` is then one call::

    load("ch1", globals(), upstream={"transformer": ("self_attention",)})

`upstream` adds what only the grader needs: the reference `transformer(M, layers)` also takes
`self_attention=` as a keyword argument (default: the reference's own), so the judge can compose
the reference over the student's own earlier function (`autograder.checks.base.FunctionCheck`).
The chapter's text keeps the student's signature.

What is executed is extracted from the chapter's notebook (`coursenb`: jupytext, nbgrader's
predicates) and kept in ``solutions/__pycache__``, keyed by the chapter's text and the code that
extracts it, so a judge process starts without importing nbformat or nbgrader (1.4 CPU-s).

`execute` runs the solution cells of any chapter notebook (a patched one: `solutions.mistakes`)
into a fresh namespace, as a student's notebook would define them.
"""
from __future__ import annotations

import ast
import builtins
import functools
import hashlib
import inspect
import json
import os
import types
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coursenb import chapters
from coursenb.chapters import select

if TYPE_CHECKING:
    from nbformat import NotebookNode

CACHE = Path(__file__).resolve().parent / "__pycache__"
# The code whose behaviour the cached extraction depends on, besides the chapter's text.
EXTRACTION = (Path(__file__).resolve(), Path(chapters.__file__).resolve(), Path(chapters.__file__).resolve().with_name("cells.py"))
IMPORTS = "imports"  # the label of the chapter's imports in an extraction


class ChapterSolutionError(RuntimeError):
    """A chapter's solution cells cannot serve as the reference (a name they use is defined nowhere)."""


def source_notebook(assignment: str) -> NotebookNode:
    """The chapter's notebook as written (the instructor's source: solutions, hidden tests, worked solutions)."""
    import nbformat

    return nbformat.from_dict(_notebook(assignment))


@functools.cache
def _notebook(assignment: str) -> NotebookNode:
    return select([assignment])[0].read()


def solution_cells(nb: NotebookNode) -> list[NotebookNode]:
    """The code cells a student writes, in notebook order."""
    from coursenb import cells

    return [c for c in nb.cells if c.get("cell_type") == "code" and cells.is_solution(c)]


def _bound_names(node: ast.Import | ast.ImportFrom) -> set[str]:
    return {(a.asname or a.name).split(".")[0] for a in node.names}


def extract(nb: NotebookNode, where: str = "<chapter>", known: Iterable[str] = (),
            helpers: Iterable[str] = ()) -> list[tuple[str, str]]:
    """[("imports", the chapter's imports that the solution cells use), (grade_id, cell source), ...] in the order
    they run: the solution cells, the locked cells they call (`given_cells`) and the locked cells named in `helpers`
    (grade_ids). A name the cells use that neither they, the imports, `known` nor the builtins define is an error."""
    from coursenb import cells

    helpers = set(helpers) | set(given_cells(nb))
    chosen = [c for c in nb.cells if c.get("cell_type") == "code" and (cells.is_solution(c) or cells.grade_id(c) in helpers)]
    if missing := helpers - {cells.grade_id(c) for c in chosen}:
        raise ChapterSolutionError(f"{where}: no code cell {', '.join(sorted(missing))}")
    sources = [(cells.grade_id(c) or "?", c.source) for c in chosen]
    trees = [ast.parse(src, f"{where}:{gid}") for gid, src in sources]
    nodes = [n for t in trees for n in ast.walk(t)]
    defined = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    defined |= {n.name for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    defined |= {n.arg for n in nodes if isinstance(n, ast.arg)}
    defined |= set().union(*(_bound_names(n) for n in nodes if isinstance(n, (ast.Import, ast.ImportFrom))))
    used = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    needed = used - defined - set(dir(builtins)) - set(known)
    imports: list[ast.stmt] = []
    for cell in nb.cells:
        if cell.get("cell_type") != "code" or cells.is_solution(cell) or cells.grade_id(cell) in helpers:
            continue
        try:
            body = ast.parse(cells.strip_hidden_tests(cell.source)).body
        except SyntaxError:
            continue  # a cell with IPython syntax imports nothing the solutions use
        imports += [s for s in body if isinstance(s, (ast.Import, ast.ImportFrom)) and _bound_names(s) & needed]
    missing = needed - set().union(*(_bound_names(s) for s in imports))
    if missing:
        raise ChapterSolutionError(f"{where}: the solution cells use {', '.join(sorted(missing))}, which neither they "
                                   "nor the chapter's imports define")
    return [(IMPORTS, "\n".join(ast.unparse(s) for s in imports)), *sources]


def run(code: list[tuple[str, str]], namespace: dict[str, Any], where: str = "<chapter>") -> dict[str, Any]:
    """Execute an extraction's parts in `namespace`, each compiled under the name `where:label`."""
    for label, source in code:
        exec(compile(source, f"{where}:{label}", "exec"), namespace)  # noqa: S102 - the instructor's own text
    return namespace


def execute(nb: NotebookNode, namespace: dict[str, Any] | None = None, *, where: str = "<chapter>") -> dict[str, Any]:
    """Run `nb`'s solution cells (after the chapter's imports they use, and the locked cells they call) in
    `namespace` (a fresh one by default)."""
    namespace = {"__name__": "__chapter__"} if namespace is None else namespace
    return run(extract(nb, where, namespace), namespace, where)


def given_cells(nb: NotebookNode) -> list[str]:
    """The grade_ids of the locked, ungraded code cells that define a name the solution cells use (Chapter 8's
    `given_block`: the code the student is given and calls)."""
    from coursenb import cells

    used = {n.id for c in solution_cells(nb) for n in ast.walk(ast.parse(c.source))
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    given = []
    for c in nb.cells:
        if c.get("cell_type") == "code" and cells.is_locked(c) and not cells.is_graded(c) and cells.grade_id(c):
            defined = {n.name for n in ast.parse(c.source).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
            if defined & used:
                given.append(cells.grade_id(c))
    return given


@functools.cache
def _extraction(assignment: str, helpers: tuple[str, ...] = ()) -> tuple[Path, list[tuple[str, str]]]:
    """(the chapter's path, its extraction), from the cache when the chapter and the extracting code are unchanged."""
    chapter = select([assignment])[0]
    h = hashlib.sha256(json.dumps(helpers).encode() + chapter.path.read_bytes())
    for path in EXTRACTION:
        h.update(path.read_bytes())
    cached = CACHE / f"{assignment}-{h.hexdigest()[:24]}.json"
    try:
        return chapter.path, [tuple(part) for part in json.loads(cached.read_text(encoding="utf-8"))]
    except (OSError, ValueError):
        pass
    code = extract(chapter.read(), str(chapter.path), ("__name__",), helpers)
    try:  # whole or not at all (parallel processes); a read-only checkout just re-extracts next time
        CACHE.mkdir(exist_ok=True)
        for old in CACHE.glob(f"{assignment}-*.json"):
            old.unlink(missing_ok=True)
        tmp = cached.with_name(f".{cached.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(code), encoding="utf-8")
        tmp.replace(cached)
    except OSError:
        pass
    return chapter.path, code


def with_upstream(fn: Callable[..., Any], names: Iterable[str]) -> Callable[..., Any]:
    """`fn` taking each of `names` (functions it calls as globals) as a keyword argument too, whose default is
    its own: `transformer(M, layers, *, self_attention=self_attention)` from the chapter's `transformer(M, layers)`."""
    names = tuple(names)
    own = fn.__globals__
    signature = inspect.signature(fn)
    extra = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=own[n]) for n in names]
    signature = signature.replace(parameters=[*signature.parameters.values(), *extra])

    @functools.wraps(fn)
    def composed(*args: Any, **kwargs: Any) -> Any:
        given = {n: kwargs.pop(n) for n in names if n in kwargs}
        if not given:
            return fn(*args, **kwargs)
        rebound = types.FunctionType(fn.__code__, {**own, **given}, fn.__name__, fn.__defaults__, fn.__closure__)
        rebound.__kwdefaults__ = fn.__kwdefaults__
        return rebound(*args, **kwargs)

    composed.__signature__ = signature  # type: ignore[attr-defined]
    return composed


def load(assignment: str, namespace: dict[str, Any], *, helpers: Iterable[str] = (),
         upstream: Mapping[str, Iterable[str]] | None = None) -> dict[str, Any]:
    """Execute chapter `assignment`'s solution cells (and its locked cells `helpers`, by grade_id: the grader's
    harness as the student has it) in `namespace` (a module's globals), each function in `upstream` then also
    taking its upstream functions as keyword arguments; returns `namespace`."""
    path, code = _extraction(assignment, tuple(helpers))
    run(code, namespace, str(path))
    for name, names in (upstream or {}).items():
        namespace[name] = with_upstream(namespace[name], names)
    return namespace
