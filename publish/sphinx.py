"""Sphinx (through jupyter-book's configuration layer) on one staged edition, in its own process.

    python -m publish.sphinx EDITION [--strict]     # what `publish.build` starts per edition
"""
from __future__ import annotations

import hashlib
import html
import os
import re
import subprocess
import sys
from pathlib import Path

from publish.editions import edition_config
from publish.execute import last_lines, version_of
from publish.layout import ROOT, BookError, Edition

# The part of sphinx-mathjax-offline's 24 MB MathJax copy that a page can load: the entry point the pages name
# (its mathjax_path), the TeX extensions that the config and TeX's autoload fetch, the CHTML output's fonts, and
# the menu with the accessibility tools a reader can switch on there (a11y/, and the speech rules it reads, sre/).
# The other entry points, the SVG output, MathML input and the Node build are never requested.
MATHJAX_KEEP = ("tex-chtml.js", "input/tex/", "output/chtml/", "ui/", "a11y/", "sre/")
SPHINX_STACK = ("sphinx", "jupyter-book", "myst-nb", "myst-parser", "sphinx-book-theme",
                "pydata-sphinx-theme", "sphinx-mathjax-offline", "sphinx-external-toc")


def start(edition: Edition, strict: bool) -> subprocess.Popen:
    """Start Sphinx on the staged edition in its own process (log: <out>/sphinx.log)."""
    edition.out.mkdir(parents=True, exist_ok=True)
    log = (edition.out / "sphinx.log").open("w")
    cmd = [sys.executable, "-m", "publish.sphinx", edition.name] + (["--strict"] if strict else [])
    env = {**os.environ, "PYTHONHASHSEED": "0", "NO_COLOR": "1"}
    return subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)


def run(name: str, strict: bool) -> int:
    """Sphinx (through jupyter-book's configuration layer) on one staged edition."""
    from jupyter_book.sphinx import build_sphinx

    edition = Edition(name)
    result = build_sphinx(
        edition.stage, edition.html, noconfig=True, path_config=str(edition.stage / "_config.yml"),
        confoverrides={"external_toc_path": (edition.stage / "_toc.yml").as_posix(),
                       "latex_individualpages": False},
        builder="html", warningiserror=strict, keep_going=strict)
    return result if isinstance(result, int) else 1


def _stamp(edition: Edition, strict: bool) -> str:
    """sha256 of everything a Sphinx build of `edition` depends on: the staged files and the Sphinx stack."""
    h = hashlib.sha256(f"{strict}|{'|'.join(version_of(d) for d in SPHINX_STACK)}".encode())
    for path in sorted(edition.stage.rglob("*")):
        if path.is_file():
            h.update(path.relative_to(edition.stage).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def up_to_date(edition: Edition, strict: bool) -> bool:
    """The edition's HTML was built, successfully, from exactly the staged files there are now."""
    stamp = edition.out / "built-from.sha256"
    return (edition.html / "index.html").is_file() and stamp.is_file() and \
        stamp.read_text().strip() == _stamp(edition, strict)


def finish(edition: Edition, proc: subprocess.Popen, strict: bool) -> None:
    """Wait for Sphinx on `edition`; BookError with its log if it failed, else stamp the build."""
    (edition.out / "built-from.sha256").unlink(missing_ok=True)
    code = proc.wait()
    log = (edition.out / "sphinx.log").read_text(errors="replace")
    warnings = [line for line in log.splitlines() if "WARNING" in line or "ERROR" in line]
    if warnings:
        print("\n".join(warnings[:40]), file=sys.stderr)
    if code != 0 or not (edition.html / "index.html").is_file():
        raise BookError(f"sphinx failed on the {edition.name} edition (exit {code}); "
                        f"see {edition.out / 'sphinx.log'}:\n{last_lines(log)}")
    _complete_redirect(edition)
    prune(edition.html)
    (edition.out / "built-from.sha256").write_text(_stamp(edition, strict) + "\n")


def prune(html: Path) -> None:
    """Drop from a built edition what no page loads: MathJax beyond MATHJAX_KEEP, and the themes' source maps
    (with the comments that name them)."""
    mathjax = html / "_static" / "mathjax"
    if mathjax.is_dir():
        for path in sorted(mathjax.rglob("*"), reverse=True):  # files before their folders
            rel = path.relative_to(mathjax).as_posix()
            if path.is_file() and not rel.startswith(MATHJAX_KEEP):
                path.unlink()
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
    for source_map in (html / "_static").rglob("*.map"):
        source_map.unlink()
        named = source_map.with_suffix("")  # bootstrap.js.map -> bootstrap.js
        if named.is_file():
            text = named.read_text(errors="surrogateescape")
            stripped = re.sub(r"\n?/[/*][#@] sourceMappingURL=[^\s*]+(?:\s*\*/)?\s*$", "\n", text)
            if stripped != text:
                named.write_text(stripped, errors="surrogateescape")


def _complete_redirect(edition: Edition) -> None:
    """Make sphinx-external-toc's bare `index.html` redirect a page with a title and the
    favicon (without one, browsers ask the server for /favicon.ico, which is not there)."""
    index = edition.html / "index.html"
    match = re.fullmatch(r'<meta http-equiv="Refresh" content="0; url=([^"]+)" />\s*', index.read_text())
    if match is None:
        return
    cfg = edition_config(edition.name)
    title, icon = html.escape(cfg.get("title", "")), Path((cfg.get("html") or {}).get("favicon") or "").name
    head = f'<link rel="icon" href="_static/{icon}">' if icon else ""
    index.write_text(
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>{head}\n'
        f'<meta http-equiv="Refresh" content="0; url={match.group(1)}"></head>\n'
        f'<body><p><a href="{match.group(1)}">{title}</a></p></body></html>\n')


if __name__ == "__main__":
    sys.exit(run(sys.argv[1], "--strict" in sys.argv[2:]))
