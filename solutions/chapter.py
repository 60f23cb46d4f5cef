"""The reference answers are the chapters' solution cells: each answer has one home, the chapter.

A chapter's solution cells (nbgrader `solution: true` code cells of ``chapters/chN_*.py``, the
instructor's source text, never a student's submission) are executed at import into the module
that asks for them, with the chapter's imports that those cells use and nothing else of the
chapter. ``solutions/chN.py`` is then one call::

    load("ch1", globals(), upstream={"transformer": ("self_attention",)})

`upstream` adds what only the grader needs: the reference `transformer(M, layers)` also takes
`self_attention=` as a keyword argument (default: the reference's own), so the judge can compose
the reference over the student's own earlier function (`autograder.checks.base.FunctionCheck`).
The chapter's text keeps the student's signature.

`execute` runs the solution cells of any chapter notebook (a patched one: `solutions.mistakes`)
into a fresh namespace, as a student's notebook would define them.
"""
from __future__ import annotations

import ast
import builtins
import functools
import inspect
import types
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from nbformat import NotebookNode

from coursenb import cells
from coursenb.chapters import select


class ChapterSolutionError(RuntimeError):
    """A chapter's solution cells cannot serve as the reference (a name they use is defined nowhere)."""


@functools.cache
def _chapter(assignment: str) -> tuple[Path, NotebookNode]:
    chapter = select([assignment])[0]
    return chapter.path, chapter.read()


def source_notebook(assignment: str) -> NotebookNode:
    """The chapter's notebook as written (the instructor's source: solutions, hidden tests, worked solutions)."""
    import nbformat

    return nbformat.from_dict(_chapter(assignment)[1])


def solution_cells(nb: NotebookNode) -> list[NotebookNode]:
    """The code cells a student writes, in notebook order."""
    return [c for c in nb.cells if c.get("cell_type") == "code" and cells.is_solution(c)]


def _used_names(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _bound_names(node: ast.Import | ast.ImportFrom) -> set[str]:
    return {(a.asname or a.name).split(".")[0] for a in node.names}


def _imports(nb: NotebookNode, needed: set[str]) -> list[ast.stmt]:
    """The chapter's top-level import statements that bind a name in `needed`."""
    found: list[ast.stmt] = []
    for cell in nb.cells:
        if cell.get("cell_type") != "code" or cells.is_solution(cell):
            continue
        try:
            body = ast.parse(cells.strip_hidden_tests(cell.source)).body
        except SyntaxError:
            continue  # a cell with IPython syntax imports nothing the solutions use
        found += [s for s in body if isinstance(s, (ast.Import, ast.ImportFrom)) and _bound_names(s) & needed]
    return found


def execute(nb: NotebookNode, namespace: dict[str, Any] | None = None, *, where: str = "<chapter>") -> dict[str, Any]:
    """Run `nb`'s solution cells (after the chapter's imports they use) in `namespace` (a fresh one by
    default); returns it. A name the cells use that nothing defines is an error naming it."""
    namespace = {"__name__": "__chapter__"} if namespace is None else namespace
    trees = [(cells.grade_id(c) or "?", ast.parse(c.source, f"{where}:{cells.grade_id(c)}")) for c in solution_cells(nb)]
    defined = {n.id for _, t in trees for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    defined |= {n.name for _, t in trees for n in ast.walk(t)
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    defined |= set().union(*(_bound_names(n) for _, t in trees for n in ast.walk(t)
                             if isinstance(n, (ast.Import, ast.ImportFrom))))
    used = set().union(*(_used_names(t) for _, t in trees)) - defined - set(dir(builtins)) - set(namespace)
    imports = _imports(nb, used)
    missing = used - set().union(*(_bound_names(s) for s in imports)) - _local_names(trees)
    if missing:
        raise ChapterSolutionError(f"{where}: the solution cells use {', '.join(sorted(missing))}, which neither they "
                                   "nor the chapter's imports define")
    exec(compile(ast.Module(body=imports, type_ignores=[]), f"{where}:imports", "exec"), namespace)  # noqa: S102
    for gid, tree in trees:
        exec(compile(tree, f"{where}:{gid}", "exec"), namespace)  # noqa: S102 - the instructor's own text
    return namespace


def _local_names(trees: Iterable[tuple[str, ast.AST]]) -> set[str]:
    """Names bound inside functions (arguments, comprehension targets): loads of them are not globals."""
    out: set[str] = set()
    for _, tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.arg):
                out.add(node.arg)
    return out


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


def load(assignment: str, namespace: dict[str, Any], *,
         upstream: Mapping[str, Iterable[str]] | None = None) -> dict[str, Any]:
    """Execute chapter `assignment`'s solution cells in `namespace` (a module's globals), each function in
    `upstream` then also taking its upstream functions as keyword arguments; returns `namespace`."""
    path, nb = _chapter(assignment)
    execute(nb, namespace, where=str(path))
    for name, names in (upstream or {}).items():
        namespace[name] = with_upstream(namespace[name], names)
    return namespace
