"""Audits of the built editions: nothing of the solutions in the student edition, nothing from the network."""
from __future__ import annotations

import contextlib
import html
import re
from collections.abc import Iterable
from pathlib import Path

import nbformat

from coursenb import cells
from publish.contents import is_notebook, published_toc, read_notebook, source_of, toc_documents
from publish.layout import Edition

# Markers that must never reach the student edition.
FORBIDDEN = (*cells.MARKERS, cells.HIDDEN_CHECK + "(")
# Third-party bundle copied verbatim by sphinx-mathjax-offline: it holds optional CDN
# fallbacks (speech-rule maps) that the book never loads; the browser test checks that.
MATHJAX_DIR = "_static/mathjax"
CDN = re.compile(r"cdn\.jsdelivr|unpkg\.com|cdnjs|googleapis|gstatic|googletagmanager|google-analytics"
                 r"|plausible\.io|mybinder|thebe@", re.I)
REMOTE_LOAD = re.compile(
    r"""<(?:script|img|iframe|source|audio|video|embed)\b[^>]*?\ssrc\s*=\s*["']?\s*(?:https?:)?//"""
    r"""|<link\b[^>]*?\shref\s*=\s*["']?\s*(?:https?:)?//"""
    r"""|url\(\s*["']?\s*(?:https?:)?//|@import\s+["']\s*(?:https?:)?//""", re.I)


def secrets(source: nbformat.NotebookNode, public: str | None = None, min_chars: int = 12) -> list[str]:
    """Text of `source` that the student edition must not contain, whitespace-normalised.

    Lines of its solution regions and hidden-test regions and phrases of its worked
    solutions, less what the student edition shows anyway (`public`, see `public_text`;
    default: this notebook's public part), e.g. `return out` or an import.
    """
    public = public_text([source]) if public is None else public
    found: list[str] = []
    for cell in source.cells:
        if cells.is_solutions_only(cell):
            found += _phrases(cell.source)
        elif cell.cell_type == "code" and cells.nbgrader_meta(cell):
            found += [line.strip() for line in cells.solution_lines(cell.source) + cells.hidden_tests(cell.source)]
    out = []
    for text in map(_normalise, found):
        if len(text) >= min_chars and text not in public and text not in out:
            out.append(text)
    return out


def public_text(notebooks: Iterable[nbformat.NotebookNode], pages: Iterable[Path] = ()) -> str:
    """What the student edition may show, whitespace-normalised: every cell except worked
    solutions, with solution and hidden-test regions cut out, every output, and `pages`.

    Derived from the regions (`coursenb.cells`), independently of the release transform.
    """
    parts = [page.read_text() for page in pages]
    for nb in notebooks:
        for cell in nb.cells:
            if not cells.is_solutions_only(cell):
                kept = nbformat.from_dict(cell)
                kept.source = cells.strip_solutions(cells.strip_hidden_tests(cell.source))
                parts.append(_notebook_text(nbformat.v4.new_notebook(cells=[kept])))
    return _normalise("\n".join(parts))


def _phrases(markdown: str, min_words: int = 6) -> list[str]:
    """Runs of plain prose in a markdown cell (no math, markup or quotes), as rendered HTML shows them."""
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`|\[[^\]]*\]\([^)]*\)", "|", markdown, flags=re.S)
    runs = re.split(r"[^A-Za-z0-9 ,;:()\n-]+|\n\s*\n|--", text)
    return [_normalise(r) for r in runs if len(r.split()) >= min_words]


def _normalise(text: str) -> str:
    return " ".join(text.split())


def _notebook_text(nb: nbformat.NotebookNode) -> str:
    """Every cell source and text output of `nb`."""
    parts = []
    for cell in nb.cells:
        parts.append(cell.source)
        for output in cell.get("outputs", []):
            parts.append("".join(output.get("text", "")))
            for mime, value in output.get("data", {}).items():
                if mime.startswith("text/"):
                    parts.append("".join(value))
    return "\n".join(parts)


def edition_text(folder: Path) -> str:
    """Everything under `folder` as searchable text: HTML without tags, other files as is, whitespace-normalised.

    MathJax's third-party bundle is left out (it cannot hold the book's text).
    """
    parts = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if not path.is_file() or MATHJAX_DIR in rel or path.suffix.lower() in {
                ".png", ".jpg", ".jpeg", ".gif", ".webp", ".woff", ".woff2", ".ttf", ".eot", ".ico"}:
            continue
        raw = path.read_bytes().decode("utf-8", errors="ignore")
        parts.append(raw)
        if path.suffix == ".html":
            parts.append(html.unescape(re.sub(r"<[^>]+>", "", raw)))
        elif path.suffix == ".ipynb":
            with contextlib.suppress(ValueError):
                parts.append(_notebook_text(nbformat.reads(raw, as_version=4)))
    return _normalise("\n".join(parts))


def audit_student(edition: Edition, executed: dict[Path, Path], toc: dict | None = None) -> list[str]:
    """What of the solutions (markers, solution lines, hidden tests, worked solutions) the student edition shows."""
    text = edition_text(edition.out) + " " + edition_text(edition.stage)
    problems = [f"marker {m!r} found" for m in FORBIDDEN if m in text]
    sources = {src: read_notebook(src) for src in executed}
    pages = [p for d in toc_documents(published_toc(toc, edition.name))
             if (p := source_of(d)) is not None and not is_notebook(p)]
    public = public_text([nbformat.read(e, as_version=4) for e in executed.values()], pages)
    for src, source in sources.items():
        problems += [f"{src.name}: {s[:100]!r}" for s in secrets(source, public) if s in text]
    return problems


def audit_offline(html_dir: Path) -> list[str]:
    """Pages and assets that would load something from another host, or name a CDN."""
    problems = []
    for path in sorted(html_dir.rglob("*")):
        rel = path.relative_to(html_dir).as_posix()
        if not path.is_file() or rel.startswith(MATHJAX_DIR) or path.suffix not in {".html", ".js", ".css"}:
            continue
        text = path.read_text(errors="ignore")
        for pattern in (REMOTE_LOAD, CDN):
            for match in pattern.finditer(text):
                problems.append(f"{rel}: {text[max(0, match.start() - 60):match.end() + 60]!r}")
    return problems
