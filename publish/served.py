"""What an edition serves, read once: each file's documents (for the answer audit, `publish.leaks`) and its
searchable text (for the markers and solution-lines audit), from one pass over the files.

HTML is read with an HTML parser (`html.parser`), not patterns: the text a reader sees (script and
style contents left out, character references resolved) becomes the page's document, and the
searchable text adds what a page carries without showing it (scripts, styles, attribute values)
and the raw file, so a marker or a solution line is found wherever it is served. Notebooks, the
zips' members (the downloads; their copy of the kit is audited once, as the kit) and other text
files become documents through `publish.leaks.file_docs`; files of no text format (the search
index, scripts, styles) are searched as they are. Images, fonts and MathJax's third-party bundle
are left out.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from publish.leaks import Doc, chapter_of, file_docs

BINARY = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".woff", ".woff2", ".ttf", ".eot", ".ico", ".inv", ".pickle",
          ".doctree"}
MATHJAX_DIR = "_static/mathjax"  # third-party bundle copied verbatim by sphinx-mathjax-offline


class PageText(HTMLParser):
    """One HTML page's text: what a reader sees (`shown`) and what the page carries unseen (`hidden`)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.shown: list[str] = []
        self.hidden: list[str] = []
        self._unseen = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.hidden += [value for _, value in attrs if value]
        if tag in ("script", "style", "template"):
            self._unseen += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "template") and self._unseen:
            self._unseen -= 1

    def handle_data(self, data: str) -> None:
        (self.hidden if self._unseen else self.shown).append(data)


def page_text(raw: str) -> tuple[str, str]:
    """(what a reader sees, everything the page carries as text) of an HTML page."""
    parser = PageText()
    parser.feed(raw)
    parser.close()
    return " ".join(parser.shown), "".join(parser.shown) + "\n" + "\n".join(parser.hidden)


@dataclass
class ServedFile:
    """One served file: where it is (`label/rel`), its documents, and its searchable text."""

    rel: str
    where: str
    docs: list[Doc] = field(default_factory=list)
    text: str = ""


def read_file(path: Path, rel: str, label: str) -> ServedFile:
    """One file's documents and searchable text (`rel`: its path in the folder labelled `label`)."""
    suffix, where = path.suffix.lower(), f"{label}/{rel}"
    if suffix == ".html":
        raw = path.read_text(encoding="utf-8", errors="ignore")
        shown, carried = page_text(raw)
        return ServedFile(rel, where, [Doc(where, shown, "prose", chapter_of(path.name))], raw + "\n" + carried)
    docs = list(file_docs(path, where))
    if suffix == ".zip":  # its members' documents (the kit's copy left out)
        return ServedFile(rel, where, docs, "\n".join(d.text for d in docs))
    raw = path.read_bytes().decode("utf-8", errors="ignore")
    return ServedFile(rel, where, docs, raw + "\n" + "\n".join(d.text for d in docs))


def walk(folders: list[tuple[Path, str]]) -> list[ServedFile]:
    """Every served file under each (folder, label), read once (images, fonts, MathJax's bundle left out)."""
    out = []
    for folder, label in folders:
        for path in sorted(folder.rglob("*")):
            rel = path.relative_to(folder).as_posix()
            if path.is_file() and MATHJAX_DIR not in rel and path.suffix.lower() not in BINARY:
                out.append(read_file(path, rel, label))
    return out
