"""Audits of the built editions: nothing of the solutions in the student edition, nothing from the network."""
from __future__ import annotations

import contextlib
import json
import re
import zipfile
from collections.abc import Iterable
from pathlib import Path

import nbformat

from autograder.kit import kit_files
from coursenb import cells
from publish import deps
from publish.contents import is_notebook, published_toc, read_notebook, source_of, toc_documents
from publish.layout import ROOT, Edition
from publish.leaks import Doc, Findings, audit, chapter_of, file_docs
from publish.served import MATHJAX_DIR, ServedFile, walk

KIT = ROOT / "attnlab"
# Markers that must never reach the student edition.
FORBIDDEN = (*cells.MARKERS, cells.HIDDEN_CHECK + "(")
# MATHJAX_DIR (publish.served), the third-party bundle copied verbatim by sphinx-mathjax-offline, holds
# optional CDN fallbacks (speech-rule maps) that the book never loads; the browser test checks that.
CDN = re.compile(r"cdn\.jsdelivr|unpkg\.com|cdnjs|googleapis|gstatic|googletagmanager|google-analytics"
                 r"|plausible\.io|mybinder|thebe@", re.I)
REMOTE_LOAD = re.compile(
    r"""<(?:script|img|iframe|source|audio|video|embed)\b[^>]*?\ssrc\s*=\s*["']?\s*(?:https?:)?//"""
    r"""|<link\b[^>]*?\shref\s*=\s*["']?\s*(?:https?:)?//"""
    r"""|url\(\s*["']?\s*(?:https?:)?//|@import\s+["']\s*(?:https?:)?//""", re.I)


def secrets(source: nbformat.NotebookNode, public: str | None = None, min_chars: int = 12,
            hidden: bool = True) -> list[str]:
    """Text of `source` that the student edition must not contain, whitespace-normalised.

    Lines of its solution regions and (with `hidden`) hidden-test regions and phrases of its
    worked solutions, less what the student edition shows anyway (`public`, see `public_text`;
    default: this notebook's public part), e.g. `return out` or an import.
    """
    public = public_text([source]) if public is None else public
    found: list[str] = []
    for cell in source.cells:
        if cells.is_solutions_only(cell):
            found += _phrases(cell.source)
        elif cell.cell_type == "code" and cells.nbgrader_meta(cell):
            found += [line.strip() for line in cells.solution_lines(cell.source)
                      + (cells.hidden_tests(cell.source) if hidden else [])]
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
    # authoring comments, with the spaces before them, as the pages drop them (publish.pages): no page shows them
    markdown = re.sub(r"[ \t]*<!--.*?-->", "", markdown, flags=re.S)
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
    """Everything under `folder` as searchable text (`publish.served`: HTML read with a parser, notebooks,
    the members of zips, other files as is), whitespace-normalised."""
    return _normalise("\n".join(f.text for f in served_files([(folder, folder.name)])))


def served_files(folders: list[tuple[Path, str]]) -> list[ServedFile]:
    """The files under `folders`, each read once (`publish.served.walk`)."""
    return walk(folders)


def _file_text(name: str, data: bytes) -> str:
    """One kit file as searchable text: as is, plus a notebook's cells and outputs."""
    raw = data.decode("utf-8", errors="ignore")
    parts = [raw]
    if name.endswith(".ipynb"):
        with contextlib.suppress(ValueError):
            parts.append(_notebook_text(nbformat.reads(raw, as_version=4)))
    return "\n".join(parts)


def kit_text() -> str:
    """The kit's files as the release zip ships them, as searchable text."""
    return _normalise("\n".join(_file_text(rel, (KIT / rel).read_bytes()) for rel in kit_files(KIT)))


def kit_problems(folder: Path) -> list[str]:
    """Zips under `folder` whose attnlab/ is not exactly the kit's files (the kit is audited once, as `kit_text`)."""
    expected = {f"attnlab/{rel}": (KIT / rel).read_bytes() for rel in kit_files(KIT)}
    problems = []
    for path in sorted(folder.rglob("*.zip")):
        with zipfile.ZipFile(path) as zf:
            shipped = {n: zf.read(n) for n in zf.namelist() if n.startswith("attnlab/")}
        if shipped != expected:
            odd = sorted(set(shipped) ^ set(expected)) or sorted(n for n in shipped if shipped[n] != expected[n])
            problems.append(f"{path.relative_to(folder)}: its attnlab/ is not the kit ({', '.join(odd[:5])})")
    return problems


def audit_student(edition: Edition, executed: dict[Path, Path], toc: dict | None = None,
                  log=None) -> list[str]:
    """What of the solutions the student edition (its pages, downloads, staged notebooks and the kit) shows:
    markers, solution lines, hidden tests, worked solutions, and every graded answer (`publish.leaks`)."""
    files = served_files([(edition.out, edition.name), (edition.stage, f"{edition.name}/stage")])  # read once
    text, kit = _normalise("\n".join(f.text for f in files)), kit_text()
    problems = [f"marker {m!r} found" for m in FORBIDDEN if m in text]
    problems += [f"attnlab/: marker {m!r} found" for m in cells.MARKERS if m in kit]
    problems += kit_problems(edition.out) + kit_problems(edition.stage)
    sources = {src: read_notebook(src) for src in executed}
    pages = [p for d in toc_documents(published_toc(toc, edition.name))
             if (p := source_of(d)) is not None and not is_notebook(p)]
    public = public_text([nbformat.read(e, as_version=4) for e in executed.values()], pages)
    for src, source in sources.items():
        problems += [f"{src.name}: {s[:100]!r}" for s in secrets(source, public) if s in text]
        # the kit defines and documents hidden_check(...): its solution lines and worked solutions only
        problems += [f"attnlab/ holds {src.name}: {s[:100]!r}" for s in secrets(source, public, hidden=False)
                     if s in kit]
    findings = audit_answers(edition, {chapter_of(src.name): nb for src, nb in sources.items()
                                       if chapter_of(src.name)}, files=files)
    if log is not None:
        log(f"book: answer audit of the {edition.name} edition: {findings.figures}")
    return problems + findings.hits


def audit_inputs() -> list[Path]:
    """What the audit's verdict depends on besides the built edition: the audit's code and everything it imports
    (the leak finder, the checks and the judge, the references, the notebook conventions, the chapters they
    read: `publish.deps`), and the kit's files as the release zip ships them."""
    return sorted(set(deps.closure([__name__])) | {KIT / rel for rel in kit_files(KIT)})


def _audit_key(edition: Edition) -> str | None:
    """sha256 over the edition's Sphinx stamp (its staged files) and `audit_inputs`; None if it has no stamp."""
    stamp = edition.out / "built-from.sha256"
    if not stamp.is_file():
        return None
    return deps.digest(audit_inputs(), stamp.read_text(errors="replace"))


def audit_student_cached(edition: Edition, executed: dict[Path, Path], toc: dict | None = None,
                         log=print) -> list[str]:
    """`audit_student`, or its last result when neither the built edition nor what the audit reads changed."""
    key, record = _audit_key(edition), edition.out / "audit.json"
    if key is not None and record.is_file():
        with contextlib.suppress(ValueError, KeyError):
            last = json.loads(record.read_text())
            if last["key"] == key:
                log(f"book: answer audit of the {edition.name} edition unchanged: {last['figures']}")
                return list(last["problems"])
    figures: list[str] = []
    problems = audit_student(edition, executed, toc, log=lambda line: (figures.append(line), log(line)))
    if key is not None:
        record.write_text(json.dumps({"key": key, "problems": problems,
                                      "figures": figures[-1].split(": ", 1)[-1] if figures else ""}, indent=1))
    return problems


ASSETS = ("_static/", "_sources/", "_images/")  # the theme's assets and Sphinx's copies: not pages a reader reads


def served(edition: Edition, folders: list[tuple[Path, str]] | None = None,
           files: list[ServedFile] | None = None) -> tuple[list[Doc], int]:
    """What the edition serves, as documents (pages, downloads, staged notebooks with outputs, the kit),
    and how many files they come from. `folders` replaces the edition's (html, stage) folders; `files`, the
    edition's output and stage already read (`served_files`), spares reading them again."""
    if files is None:
        folders = folders or [(edition.html, f"{edition.name}/html"), (edition.stage, f"{edition.name}/stage")]
        files = [f for f in served_files(folders) if not f.rel.startswith(ASSETS)]
    else:  # the output folder's html/ and the stage, as served
        html, stage = f"{edition.name}/html/", f"{edition.name}/stage/"
        files = [f for f in files if (f.where.startswith(html) and not f.where[len(html):].startswith(ASSETS))
                 or f.where.startswith(stage)]
    docs = [d for f in files for d in f.docs]
    kit = [doc for rel in kit_files(KIT) for doc in file_docs(KIT / rel, f"attnlab/{rel}")]
    return docs + kit, len(files) + len(kit_files(KIT))


def audit_answers(edition: Edition, sources: dict[str, nbformat.NotebookNode],
                  folders: list[tuple[Path, str]] | None = None, files: list[ServedFile] | None = None) -> Findings:
    """`publish.leaks.audit` on everything the edition serves, for the chapters' answers."""
    docs, count = served(edition, folders, files)
    return audit(docs, sources, count)

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


def main() -> int:
    """`python -m publish.audit`: audit the last build's student edition again and print the figures."""
    import sys
    import time

    from publish.execute import executed_copies

    start = time.perf_counter()
    problems = audit_student(Edition("student"), executed_copies(), log=print)
    print("\n".join(problems) or "no leak found")
    print(f"audit: {len(problems)} finding(s) in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
