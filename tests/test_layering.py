"""The packages form layers: the student kit at the bottom, naming nothing above it.

    attnlab (student kit)  <-  coursenb (notebook conventions)  <-  solutions (references, mistakes)
           ^                          ^                                  ^
           +------------------  autograder (grading)  -------------------+
                                      ^
                               publish (the book: serves the release, audits with the judge)

The references are the chapters' solution cells, which `solutions` reads from the course's own
chapter sources (instructor-side text, `coursenb.chapters.CHAPTERS`): the judge trusts only the
instructor's side, and a student's process can reach neither `solutions` nor `chapters/`.

Every import in every module (top level or inside a function) is read from the source, so a
lazy import of the grader from the kit fails here too; and the kit is imported, module by
module, in a process where the instructor's packages do not exist.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("attnlab", "coursenb", "publish", "autograder", "solutions")
# package -> the project packages it may import
ALLOWED = {
    "attnlab": set(),
    "coursenb": set(),
    "publish": {"coursenb", "attnlab", "autograder"},  # never `solutions` directly
    "solutions": {"coursenb"},  # the chapters' solution cells are the references
    "autograder": {"attnlab", "coursenb", "solutions"},
}


def _imports(path: Path) -> set[str]:
    """Top-level project packages that the module at `path` imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found & set(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_imports_only_the_layers_below(package: str) -> None:
    wrong = []
    for path in sorted((ROOT / package).rglob("*.py")):
        extra = _imports(path) - ALLOWED[package] - {package}
        if extra:
            wrong.append(f"{path.relative_to(ROOT)} imports {sorted(extra)}")
    assert not wrong, wrong


def test_the_allowed_imports_have_no_cycle() -> None:
    seen: dict[str, int] = {}

    def visit(p: str) -> None:
        assert seen.get(p) != 1, f"import cycle through {p}"
        if seen.get(p) == 2:
            return
        seen[p] = 1
        for q in ALLOWED[p]:
            visit(q)
        seen[p] = 2

    for p in PACKAGES:
        visit(p)


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
