"""The two editions' sources: each notebook as the edition publishes it, staged as its own book."""
from __future__ import annotations

import html
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import nbformat
import yaml

from coursenb import cells, chapters
from publish import downloads, pages
from publish.contents import is_notebook, published_name, published_toc, source_of, toc_documents
from publish.layout import ANNOUNCEMENT, CONFIG, ROOT, Edition

ASSET_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".pdf", ".csv", ".bib", ".css"}
ASSET_DIRS = ("images", "figures", "img", "_static")  # _static/*.css: the book's styles (no .js: see FIELD_NOTES)
SKIP_PARTS = {".git", ".venv", "_build", "__pycache__", ".ipynb_checkpoints", "node_modules"}


def student_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The student's view of an (executed) chapter: nbgrader's release transform; outputs kept except
    where they show answers (`coursenb.cells.student_view`)."""
    return cells.student_view(nb)


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def without_widgets(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """`nb` without Jupyter widgets: each widget view becomes the text of its final state.

    With widget state in the notebook, myst-nb loads require.js and the widget manager
    from CDNs on the page. A finished tqdm bar reads as its text: "training: 100%|█████|
    1500/1500 [01:18<00:00, 26.4it/s]" (its own text fallback shows the bar at 0%).
    """
    nb = nbformat.from_dict(nb)
    state = nb.metadata.pop("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for output in cell.outputs:
            view = output.get("data", {}).pop(WIDGET_VIEW, None)
            text = _widget_text(view.get("model_id", ""), state) if view else None
            if text:
                output.data["text/plain"] = text
        cell.outputs = [o for o in cell.outputs if o.output_type not in ("display_data", "execute_result")
                        or o.get("data")]
    return nb


def _widget_text(model_id: str, state: dict) -> str | None:
    """The text a widget shows in its saved state (boxes, labels, HTML, progress bars), or None."""
    model = state.get(model_id.removeprefix("IPY_MODEL_"))
    if model is None:
        return None
    name, values = model.get("model_name", ""), model.get("state", {})
    if name.endswith("BoxModel"):
        parts = [_widget_text(child, state) for child in values.get("children", [])]
        return "".join(p for p in parts if p) or None
    if "Progress" in name and values.get("max"):
        filled = round(10 * values.get("value", 0) / values["max"])
        return "|" + "█" * filled + " " * (10 - filled) + "|"
    if isinstance(values.get("value"), str):
        return html.unescape(re.sub(r"<[^>]+>", "", values["value"])).replace("\u2007", " ")
    return None


def edition_notebook(nb: nbformat.NotebookNode, edition: str, download: str | None = None) -> nbformat.NotebookNode:
    """The notebook as `edition` publishes it (both: no widgets, so no CDN scripts; the reader's labels and
    notes, `publish.pages`). In the student
    edition a chapter (`download`: its notebook name) gets the links to its release files after its title."""
    nb = without_widgets(nb)
    if edition != "student":
        return pages.page_notebook(nb, student=False)
    withheld = {c.id: c.outputs for c in nb.cells if c.get("cell_type") == "code" and cells.shows_answers(c)
                and c.outputs and c.get("id")}
    nb = pages.page_notebook(student_notebook(nb), student=True, withheld=withheld)
    if download is not None:
        nb.cells.insert(min(1, len(nb.cells)), downloads.link_cell(download))
    return nb


def edition_config(edition: str) -> dict:
    """The edition's _config.yml: the book's own, execution off, and the edition's switches."""
    cfg = yaml.safe_load(CONFIG.read_text())
    cfg["execute"] = {**cfg.get("execute", {}), "execute_notebooks": "off"}
    cfg["only_build_toc_files"] = True
    cfg.setdefault("html", {})["announcement"] = ANNOUNCEMENT[edition]
    sphinx = cfg.setdefault("sphinx", {})
    sphinx["recursive_update"] = True  # html_theme_options below add to jupyter-book's
    conf = sphinx.setdefault("config", {}) or {}
    sphinx["config"] = conf
    if edition == "student":
        # the instructors page lists its sub-pages, the solutions edition's threat model
        conf["suppress_warnings"] = ["myst.domains", "etoc.tableofcontents"]
        conf["html_copy_source"] = False  # no _sources/ (notebooks, markdown)
        conf["html_show_sourcelink"] = False
        conf.setdefault("html_theme_options", {})["use_download_button"] = False
    return cfg


def assets(docs: Iterable[str]) -> Iterator[Path]:
    """Files a page may reference: images and data beside the documents and in images/ or figures/."""
    folders = {(ROOT / d).parent for d in docs} | {ROOT / name for name in ASSET_DIRS}
    seen = set()
    for folder in sorted(folders):
        if not folder.is_dir():
            continue
        candidates = folder.glob("*") if folder == ROOT else folder.rglob("*")
        for path in candidates:
            if (path.is_file() and path.suffix.lower() in ASSET_SUFFIXES and path not in seen
                    and not SKIP_PARTS & set(path.relative_to(ROOT).parts)):
                seen.add(path)
                yield path


def stage(edition: Edition, toc: dict, executed: dict[Path, Path]) -> list[str]:
    """Write the edition's book source; returns the files that changed (unchanged ones keep their mtime)."""
    published = published_toc(toc, edition.name)
    docs = toc_documents(published)
    files: dict[str, bytes] = {
        "_config.yml": yaml.safe_dump(edition_config(edition.name), sort_keys=False).encode(),
        "_toc.yml": yaml.safe_dump(published, sort_keys=False).encode(),
    }
    sources = {doc: src for doc in docs if (src := source_of(doc)) is not None}
    published_chapters = [c for c in chapters.select() if sources.get(c.doc) == c.path]
    for src in sources.values():
        rel = published_name(src)
        if is_notebook(src):
            nb = nbformat.read(executed[src], as_version=4)
            chapter = src.stem if chapters.is_chapter_source(src) else None
            files[rel] = nbformat.writes(edition_notebook(nb, edition.name, chapter)).encode()
        else:
            files[rel] = src.read_bytes()
    files.update(downloads.files(published_chapters))
    for path in assets(docs):
        files.setdefault(path.relative_to(ROOT).as_posix(), path.read_bytes())
    return _sync(edition.stage, files)


def _sync(folder: Path, files: dict[str, bytes]) -> list[str]:
    """Make `folder` hold exactly `files` (except Sphinx's own outputs); rewrite only what differs."""
    changed = []
    for rel, data in files.items():
        path = folder / rel
        if not path.is_file() or path.read_bytes() != data:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            changed.append(rel)
    if folder.is_dir():
        for path in folder.rglob("*"):
            if path.is_file() and path.relative_to(folder).as_posix() not in files:
                path.unlink()
                changed.append(path.relative_to(folder).as_posix())
    return changed
