"""The packages form layers: the student kit at the bottom, naming nothing above it.

    attnlab (student kit)  <-  coursenb (notebook conventions)  <-  solutions (references, mistakes)
           ^                          ^                                  ^
           +------------------  autograder (grading)  -------------------+
                                      ^
                               publish (the book: serves the release, audits with the judge)

Inside `autograder`, the modules form layers too (`autograder.startup` draws them): no module
imports one that imports it back, however long the way round.

The references are the chapters' solution cells, which `solutions` reads from the course's own
chapter sources (instructor-side text, `coursenb.chapters.CHAPTERS`): the judge trusts only the
instructor's side, and a student's process can reach neither `solutions` nor `chapters/`.

Every import in every module (top level or inside a function) is read from the source, so a
lazy import of the grader from the kit fails here too; and the kit is imported, module by
module, in a process where the instructor's packages do not exist.
"""
from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import startup

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("attnlab", "coursenb", "publish", "autograder", "solutions")
# package -> the project packages its modules import (test_the_allowed_table_is_the_codes_imports reads the code)
ALLOWED = {
    "attnlab": set(),
    "coursenb": set(),
    "publish": {"coursenb", "attnlab", "autograder"},  # never `solutions` directly
    "solutions": {"coursenb"},  # the chapters' solution cells are the references
    "autograder": {"attnlab", "coursenb", "solutions"},
}
LAYERS = [names for names, _ in startup.LAYERS]  # autograder's modules, bottom to top


def module_name(path: Path, root: Path) -> str:
    """`autograder/engine/__init__.py` -> 'autograder.engine'."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_nodes(tree: ast.AST):
    """Every node of `tree` except those under `if TYPE_CHECKING:` (imports for annotations only, never run)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and ast.unparse(child.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
                stack.extend(child.orelse)
                continue
            stack.append(child)


def module_graph(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """Every module of `packages` under `root` -> the project modules it imports anywhere in it (top level or
    inside a function; `from pkg import mod` names the module, `from mod import name` the module)."""
    paths = {module_name(p, root): p for pkg in packages for p in sorted((root / pkg).rglob("*.py"))}

    def known(name: str) -> str | None:
        while name and name not in paths:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for name, path in paths.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        found: set[str | None] = set()
        for node in _runtime_nodes(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {known(alias.name) for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(here[:len(here) - node.level + 1] + [node.module or ""]).strip(".") if node.level \
                    else node.module
                found |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in paths else known(base)
                          for alias in node.names}
        graph[name] = {m for m in found if m and m != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of `graph` with more than one node: each is an import circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                out.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph seen from its packages: package -> the other project packages its modules import."""
    out: dict[str, set[str]] = {}
    for module, imported in graph.items():
        pkg = module.split(".")[0]
        out.setdefault(pkg, set()).update(m.split(".")[0] for m in imported)
        out[pkg].discard(pkg)
    return out


GRAPH = module_graph(ROOT)


def test_no_import_circle_between_modules() -> None:
    assert cycles(GRAPH) == []


def test_a_planted_circle_fails() -> None:
    """The function that finds circles finds one in a made-up graph, and none where there is none."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_a_circle_planted_in_a_copy_of_the_code_fails(tmp_path: Path) -> None:
    """late.py, in a copy of the package, made to import the facade (inside a function, where a circle used to
    hide) closes late -> course -> grades -> late."""
    shutil.copytree(ROOT / "autograder", tmp_path / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    assert cycles(module_graph(tmp_path, ("autograder",))) == []
    late = tmp_path / "autograder" / "late.py"
    late.write_text(late.read_text() + "\n\ndef _planted():\n    from autograder import course\n")
    found = cycles(module_graph(tmp_path, ("autograder",)))
    assert len(found) == 1 and {"autograder.late", "autograder.course", "autograder.grades"} <= set(found[0]), found


def test_the_allowed_table_is_the_codes_imports() -> None:
    """ALLOWED is what the modules import, read from them: a new import between packages changes it here."""
    real = package_graph(GRAPH)
    assert {p: real.get(p, set()) for p in PACKAGES} == ALLOWED
    assert cycles(real) == []


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_imports_only_the_layers_below(package: str) -> None:
    wrong = sorted(f"{m} imports {sorted(i)}" for m, imported in GRAPH.items() if m.split(".")[0] == package
                   if (i := {x for x in imported if x.split(".")[0] not in ALLOWED[package] | {package}}))
    assert not wrong, wrong


def _layer(module: str) -> int:
    """The layer of `autograder.x.y`: that of 'x.y' where LAYERS names it, else that of 'x'."""
    parts = module.split(".")[1:] or ["__init__"]
    for name in (".".join(parts[:2]), parts[0]):
        found = [k for k, names in enumerate(LAYERS) if name in names]
        if found:
            return found[0]
    return -1


def test_autograder_modules_import_only_their_layer_and_below() -> None:
    """The grades read model never imports the facade, the late policy never the grades, a writer never the
    facade, and nothing the command line."""
    unplaced = sorted(m for m in GRAPH if m.startswith("autograder.") and _layer(m) < 0)
    assert not unplaced, f"put each module in a layer: {unplaced}"
    wrong = [f"{m} imports {i}" for m, imported in sorted(GRAPH.items()) if m.startswith("autograder.")
             for i in sorted(imported) if i.startswith("autograder.") and _layer(i) > _layer(m)]
    assert not wrong, wrong


def _project_aliases(tree: ast.Module) -> set[str]:
    """Names a module binds to project modules (`from autograder import export as csvout` -> 'csvout')."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.split(".")[0] in PACKAGES}
        elif isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] in PACKAGES):
            out |= {a.asname or a.name for a in node.names}
    return out


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_private_name_crosses_a_module() -> None:
    """An autograder module uses no `_name` of another project module (`from x import _y`, `x._y`)."""
    wrong = []
    for path in sorted((ROOT / "autograder").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        aliases = _project_aliases(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] in PACKAGES):
                wrong += [f"{path.relative_to(ROOT)}:{node.lineno} imports {a.name}" for a in node.names
                          if _private(a.name) or any(map(_private, (node.module or "").split(".")))]
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                    and _private(node.attr):
                wrong.append(f"{path.relative_to(ROOT)}:{node.lineno} uses {node.value.id}.{node.attr}")
    assert not wrong, wrong


def _function_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    return [node for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
            for node in ast.walk(fn) if isinstance(node, (ast.Import, ast.ImportFrom))]


def test_imports_are_at_module_level_except_the_documented_lazy_ones() -> None:
    """An import inside a function names a third-party module of `startup.LAZY_MODULES`, or sits in a module of
    `startup.LAZY_IMPORTERS` (each with its reason, in one place); every other import is at module level."""
    wrong = []
    for path in sorted((ROOT / "autograder").rglob("*.py")):
        name = module_name(path, ROOT)
        for node in _function_imports(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or "."]
            for imported in names:
                top = imported.split(".")[0]
                project = node.level > 0 if isinstance(node, ast.ImportFrom) else False
                project = project or top in PACKAGES
                if project and name in startup.LAZY_IMPORTERS or not project and top in startup.LAZY_MODULES:
                    continue
                wrong.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {imported} inside a function")
    assert not wrong, "\n".join(wrong)
    assert set(startup.LAZY_IMPORTERS) <= set(GRAPH), "a lazy importer that is not a module"


KIT_ALONE = r"""
import importlib, pkgutil, sys

class Absent:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("autograder", "solutions", "coursenb", "publish"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, Absent())
import attnlab
names = [m.name for m in pkgutil.walk_packages(attnlab.__path__, "attnlab.")]
for name in names:
    importlib.import_module(name)
from attnlab import grading
grading.local_judge = lambda: None  # a student's machine: no course judge installed
grading.hidden_check("ch1.self_attention", lambda *a: None)
print("imported", len(names), "modules")
"""


def test_the_kit_imports_with_the_instructor_packages_absent() -> None:
    out = subprocess.run([sys.executable, "-c", KIT_ALONE], capture_output=True, text=True, timeout=600, cwd="/")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "not run here" in out.stdout and "imported" in out.stdout, out.stdout


def test_the_references_are_the_instructors_chapter_sources() -> None:
    """Every reference function is compiled from a chapter source in the checkout's chapters/ (never from a
    course directory or a submission), and the grading sandbox hides both solutions/ and chapters/."""
    import importlib
    import inspect

    from autograder.engine import sandbox
    from autograder.engine.inside import zygote
    from coursenb.chapters import CHAPTERS, select

    for chapter in select():
        module = importlib.import_module(f"solutions.{chapter.assignment}")
        functions = [f for f in vars(module).values() if inspect.isfunction(f) and f.__module__ == module.__name__]
        functions += [m for c in vars(module).values() if inspect.isclass(c) and c.__module__ == module.__name__
                      for m in vars(c).values() if inspect.isfunction(m)]
        compiled = {inspect.unwrap(f).__code__.co_filename.rsplit(":", 1)[0] for f in functions}
        assert compiled == {str(chapter.path)}, (chapter.assignment, compiled)
        assert chapter.path.resolve().parent == CHAPTERS.resolve()
    for blocked in (sandbox.BLOCKED, zygote.FORBIDDEN):
        assert {"solutions", "chapters"} <= set(blocked)
