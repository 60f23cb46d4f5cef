"""What a cached result depends on, derived from what the code imports: never a hand list.

`closure(roots)` follows every `import` and `from ... import` of the repository's own modules
(at module level and inside functions: a lazy import runs too), from the named root modules,
and returns their files with every package `__init__.py` on the way and the package data
pyproject.toml declares for the packages it reaches (the page templates). A module that imports
by name at run time (`importlib.import_module`, `pkgutil.iter_modules`: the checks' registry)
depends on every module of its package (not its subpackages); one that reads the chapters' sources
(`coursenb.chapters`) depends on them. A hand list of
folders and files (the book's `KIT`, the audit's `AUDIT_INPUTS`) went stale as soon as a
module moved or a new one was imported (`autograder/equation_judge.py` was missing from both).

`notebook_imports` gives the root modules of notebooks (the chapters' code cells), and
`entry_point_modules` the modules a group of entry points loads (the kit reaches the
instructor's judge, `attnlab.local_judge`, by entry point, never by import).
"""
from __future__ import annotations

import ast
import functools
import hashlib
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path

import nbformat

from coursenb.chapters import ROOT


@functools.cache
def packages() -> frozenset[str]:
    """The repository's top-level packages (folders with an __init__.py)."""
    return frozenset(p.parent.name for p in ROOT.glob("*/__init__.py"))


def module_file(name: str) -> Path | None:
    """The file of module `name` in the repository (a package's __init__.py), or None."""
    parts = name.split(".")
    if parts[0] not in packages():
        return None
    base = ROOT.joinpath(*parts)
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _package_of(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts if path.name == "__init__.py" else parts[:-1])


def imports_of(source: str, package: str = "", lazy: bool = True) -> set[str]:
    """Every module `source` imports (`from a import b` names both a and a.b: b may be a module); relative
    imports resolved against `package`; inside functions too unless not `lazy`. Unparsable source imports
    nothing."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    found: set[str] = set()
    for node in (ast.walk(tree) if lazy else tree.body):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1] if package else []
                base = ".".join([*anchor, *([base] if base else [])])
            if base:
                found.add(base)
                found.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return found


def closure(roots: Iterable[str], lazy: bool = True) -> list[Path]:
    """The repository's files that importing `roots` runs (and the package data of the packages it reaches),
    sorted. Without `lazy`, only imports at module level count (code whose entry points import nothing
    inside functions that matters, such as the release)."""
    seen: set[Path] = set()
    todo = [r for r in roots]
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for k in range(1, len(parts) + 1):  # importing a.b.c runs a/__init__ and a/b/__init__ first
            path = module_file(".".join(parts[:k]))
            if path is None or path in seen:
                continue
            seen.add(path)
            source = path.read_text(encoding="utf-8")
            todo.extend(imports_of(source, _package_of(path), lazy))
            if _DYNAMIC.search(source):  # the package's modules, whichever it loads
                todo.extend(_module_name(p) for p in path.parent.glob("*.py"))
    data = set(package_data(seen))
    if module_file("coursenb.chapters") in seen:
        from coursenb.chapters import select

        data |= {c.path for c in select()}
    return sorted(seen | data)


_DYNAMIC = re.compile(r"\b(?:import_module|iter_modules)\(")


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    return ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)


def package_data(modules: Iterable[Path]) -> list[Path]:
    """The files pyproject.toml's [tool.setuptools.package-data] ships with a package, for each of `modules` that
    names their folder (as `autograder.pages` names "templates")."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    declared = config.get("tool", {}).get("setuptools", {}).get("package-data", {})
    out = []
    for path in modules:
        top, source = path.relative_to(ROOT).parts[0], path.read_text(encoding="utf-8")
        for pattern in declared.get(top, []):
            folder = pattern.split("/")[0]
            if f'"{folder}"' in source or f"'{folder}'" in source:
                out += [p for p in (ROOT / top).glob(pattern) if p.is_file()]
    return out


def notebook_imports(notebooks: Iterable[nbformat.NotebookNode]) -> set[str]:
    """The modules the code cells of `notebooks` import (IPython's magics and shell lines left out)."""
    found: set[str] = set()
    for nb in notebooks:
        for cell in nb.cells:
            if cell.cell_type == "code":
                code = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
                found |= imports_of(code)
    return found


def entry_point_modules(group: str) -> set[str]:
    """The modules the entry points of `group` load, as pyproject.toml declares them (installed or not)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    declared = config.get("project", {}).get("entry-points", {}).get(group, {})
    return {value.split(":")[0].strip() for value in declared.values()}


def digest(files: Iterable[Path], salt: str = "") -> str:
    """sha256 over `salt` and each file's path (relative to the repository) and bytes."""
    h = hashlib.sha256(salt.encode())
    for path in sorted(set(files)):
        h.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()
