"""The published book in two editions from one source.

    python -m autograder.book                      # both editions -> _build/{student,solutions}/html
    python -m autograder.book --edition student    # one edition
    python -m autograder.book --force              # re-execute every chapter

Every notebook in `_toc.yml` is executed once, top to bottom in a fresh kernel (nbclient),
and the executed copy is cached under `_build/.book_cache/`, keyed by the notebook's bytes
and the code it imports (`attnlab/`, `solutions/`, the hidden checks). From that one
execution:

* the **solutions edition** publishes the executed notebooks as they are;
* the **student edition** publishes a copy made the way nbgrader makes a release:
  solution regions replaced by the stub, hidden-test regions removed, worked solutions
  (cells tagged `solution-text`) dropped, every output (reference results, plots) kept.
  The content is removed from the notebook itself, not hidden with tags, and the
  "download source" buttons and `_sources/` are switched off in this edition.

Both editions replace Jupyter widgets (tqdm bars) by the text of their final state: with
widget state in a notebook, myst-nb would load require.js and the widget manager from CDNs.

Each edition is staged as its own book source, `_build/stage/<edition>/` (only the
documents in the table of contents and the assets beside them; execution off), and built
by Sphinx into `_build/<edition>/html`. Staged files are rewritten only when their bytes
change, so a rebuild with nothing changed is incremental. MathJax is served from the
build's `_static/mathjax` (sphinx-mathjax-offline) and nothing is loaded from a CDN.
"""
from __future__ import annotations

import argparse
import concurrent.futures as futures
import contextlib
import fcntl
import functools
import hashlib
import html
import json
import multiprocessing
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import nbformat
import yaml

from autograder import course

ROOT = course.ROOT
BUILD = ROOT / "_build"
CACHE = BUILD / ".book_cache"
STAGE = BUILD / "stage"
MANIFEST = CACHE / "published.json"  # source notebook -> executed copy, of the last build
CONFIG = ROOT / "_config.yml"
TOC = ROOT / "_toc.yml"
EDITIONS = ("student", "solutions")
# What executed outputs depend on besides the notebook itself.
KIT = ("attnlab", "solutions", "autograder/checks", "autograder/judge.py")
# nbgrader's release stub (course.config_text sets the same one).
CODE_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
DOC_SUFFIXES = (".ipynb", ".md", ".rst")
ASSET_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".pdf", ".csv", ".bib"}
ASSET_DIRS = ("images", "figures", "img")
# Pages only one edition publishes. The grader's threat model is instructor documentation
# (and quotes hidden-check calls, which the student edition must not contain).
EDITION_ONLY = {"docs/security": "solutions"}
SKIP_PARTS = {".git", ".venv", "_build", "__pycache__", ".ipynb_checkpoints", "node_modules"}
ANNOUNCEMENT = {
    "student": "Student edition: problems, stubs, visible tests and reference results. "
               "Solutions are not included.",
    "solutions": "Solutions edition, for instructors: solution code, hidden tests and "
                 "worked solutions. Do not publish to students.",
}
# Markers that must never reach the student edition.
FORBIDDEN = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS", "hidden_check(")
# Third-party bundle copied verbatim by sphinx-mathjax-offline: it holds optional CDN
# fallbacks (speech-rule maps) that the book never loads; the browser test checks that.
MATHJAX_DIR = "_static/mathjax"
CDN = re.compile(r"cdn\.jsdelivr|unpkg\.com|cdnjs|googleapis|gstatic|googletagmanager|google-analytics"
                 r"|plausible\.io|mybinder|thebe@", re.I)
REMOTE_LOAD = re.compile(
    r"""<(?:script|img|iframe|source|audio|video|embed)\b[^>]*?\ssrc\s*=\s*["']?\s*(?:https?:)?//"""
    r"""|<link\b[^>]*?\shref\s*=\s*["']?\s*(?:https?:)?//"""
    r"""|url\(\s*["']?\s*(?:https?:)?//|@import\s+["']\s*(?:https?:)?//""", re.I)


class BookError(RuntimeError):
    """A chapter failed to execute, or an edition failed to build or leaks."""


@dataclass(frozen=True)
class Edition:
    """One edition: its staged source and its output folder (`html/` inside)."""

    name: str

    @property
    def stage(self) -> Path:
        return STAGE / self.name

    @property
    def out(self) -> Path:
        return BUILD / self.name

    @property
    def html(self) -> Path:
        return self.out / "html"


# ---------------------------------------------------------------- table of contents


def read_toc(toc: Path = TOC) -> dict:
    """The table of contents, parsed (read once per build: chapter authors edit it meanwhile)."""
    return yaml.safe_load(toc.read_text())


def toc_documents(data: dict | None = None) -> list[str]:
    """Every document the table of contents names, root first, in reading order (no suffix)."""
    data = read_toc() if data is None else data
    docs = [data["root"]]

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "file" in node:
                docs.append(str(node["file"]))
            for key in ("parts", "chapters", "sections"):
                walk(node.get(key, []))
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(data)
    return [_stem(d) for d in docs]


def _stem(doc: str) -> str:
    """A toc entry without its suffix, if it has one."""
    return doc.removesuffix(Path(doc).suffix) if Path(doc).suffix in DOC_SUFFIXES else doc


def source_of(doc: str) -> Path | None:
    """The source file of toc document `doc`, or None when it does not exist (yet)."""
    for suffix in DOC_SUFFIXES:
        path = ROOT / f"{doc}{suffix}"
        if path.is_file():
            return path
    return None


def published_toc(data: dict | None = None, edition: str | None = None) -> dict:
    """The table of contents `edition` publishes: without entries whose source does not exist
    (reported on stderr) and without the other edition's own pages (EDITION_ONLY)."""
    data = read_toc() if data is None else data

    def keep(entry: object) -> bool:
        if not (isinstance(entry, dict) and "file" in entry):
            return True
        doc = _stem(str(entry["file"]))
        if edition is not None and EDITION_ONLY.get(doc, edition) != edition:
            return False
        if source_of(doc) is None:
            print(f"book: {doc} is in _toc.yml but has no source file: left out", file=sys.stderr)
            return False
        return True

    def prune(node: object) -> object:
        if isinstance(node, dict):  # an emptied list of sections or chapters goes too
            pruned = {k: prune(v) if k in ("parts", "chapters", "sections") else v for k, v in node.items()}
            return {k: v for k, v in pruned.items() if v != []}
        if isinstance(node, list):
            return [prune(item) for item in node if keep(item)]
        return node

    return prune(data)


def notebook_docs(data: dict | None = None) -> list[str]:
    """The toc documents that are notebooks."""
    return [d for d in toc_documents(data) if (src := source_of(d)) is not None and src.suffix == ".ipynb"]


# ---------------------------------------------------------------- execution (once per chapter)


def kit_digest() -> str:
    """sha256 over the code the chapters import (KIT) and the interpreter/torch versions."""
    h = hashlib.sha256(f"{sys.version}|{_version('torch')}|{_version('matplotlib')}".encode())
    for entry in KIT:
        base = ROOT / entry
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file()
                                                     and "__pycache__" not in p.parts)
        for path in files:
            h.update(path.relative_to(ROOT).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "-"


def cache_path(src: Path, kit: str) -> Path:
    """Where the executed copy of `src` is cached for this notebook content and kit."""
    key = hashlib.sha256(src.read_bytes() + kit.encode()).hexdigest()[:16]
    return CACHE / "executed" / f"{src.stem}.{key}.ipynb"


def kernel_env(threads: int) -> dict[str, str]:
    """The kernel's environment: inline plots, reproducible hashing, demos on, `threads` BLAS threads."""
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)  # Agg would drop every inline figure
    for var in ("ATTNLAB_GRADING", "NBGRADER_EXECUTION"):
        env.pop(var, None)  # the book runs the long demos
    env["PYTHONHASHSEED"] = "0"
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, str(threads))
    return env


def execute_notebook(src: Path, dest: Path, timeout: int, threads: int) -> float:
    """Run `src` in a fresh kernel (cwd: its folder), write the executed copy to `dest`; seconds taken."""
    from nbclient import NotebookClient

    start = time.perf_counter()
    nb = nbformat.read(src, as_version=4)
    kernel = nb.metadata.get("kernelspec", {}).get("name", "python3")
    client = NotebookClient(nb, timeout=timeout, kernel_name=kernel, allow_errors=False,
                            resources={"metadata": {"path": str(src.parent)}})
    log = CACHE / "logs" / f"{src.stem}.kernel.log"  # the kernel's own stderr (not the cells')
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as stderr:
        client.execute(env=kernel_env(threads), stderr=stderr)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".tmp")
    nbformat.write(nb, str(tmp))
    tmp.replace(dest)
    return time.perf_counter() - start


def executed_copies() -> dict[Path, Path]:
    """Source notebook -> the executed copy the last build published."""
    return {ROOT / k: ROOT / v for k, v in json.loads(MANIFEST.read_text()).items()}


def _timings() -> dict[str, float]:
    path = CACHE / "timings.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _expected_seconds(src: Path, timings: dict[str, float]) -> float:
    """Last measured run time; never-run notebooks first, later chapters (training) before earlier."""
    if src.stem in timings:
        return timings[src.stem]
    number = re.match(r"ch(\d+)", src.stem)
    return 1e6 + (int(number.group(1)) if number else 0)


def execute_all(sources: list[Path], jobs: int, timeout: int, force: bool = False,
                log=print) -> dict[Path, Path]:
    """The executed copy of every source notebook, running only what the cache lacks; jobs in parallel."""
    kit = kit_digest()
    executed = {src: cache_path(src, kit) for src in sources}
    todo = [src for src in sources if force or not executed[src].is_file()]
    for src in sources:
        if src not in todo:
            log(f"book: {src.relative_to(ROOT)}: executed copy cached")
    if not todo:
        return executed
    timings = _timings()
    todo.sort(key=lambda s: _expected_seconds(s, timings), reverse=True)  # longest first
    jobs = max(1, min(jobs, len(todo)))
    threads = max(1, (os.cpu_count() or 1) // jobs)
    failures = []
    with futures.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        running = {pool.submit(execute_notebook, src, executed[src], timeout, threads): src for src in todo}
        for done in futures.as_completed(running):
            src = running[done]
            try:
                seconds = done.result()
            except Exception as exc:  # noqa: BLE001 - reported below, with the others
                failures.append(f"{src.relative_to(ROOT)}: {_last_lines(str(exc))}")
                log(f"book: {src.relative_to(ROOT)}: FAILED")
                continue
            timings[src.stem] = round(seconds, 1)
            log(f"book: {src.relative_to(ROOT)}: executed in {seconds:.0f} s")
    (CACHE / "timings.json").write_text(json.dumps(timings, indent=1, sort_keys=True))
    _prune_cache(executed.values())
    if failures:
        raise BookError("chapters failed to execute:\n" + "\n".join(failures))
    return executed


def _last_lines(text: str, n: int = 25) -> str:
    return "\n".join(text.strip().splitlines()[-n:])


def _prune_cache(keep: Iterable[Path]) -> None:
    """Drop cached executions of the same notebooks made for older contents."""
    keep = set(keep)
    stems = {p.name.split(".")[0] for p in keep}
    for path in (CACHE / "executed").glob("*.ipynb"):
        if path.name.split(".")[0] in stems and path not in keep:
            path.unlink(missing_ok=True)


# ---------------------------------------------------------------- the student edition's notebooks


def student_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The student's view of an (executed) chapter: nbgrader's release transform, outputs kept."""
    from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions

    nb = course.strip_solution_text(nb)
    nb, _ = ClearSolutions(code_stub={"python": CODE_STUB}).preprocess(nb, {})
    nb, _ = ClearHiddenTests().preprocess(nb, {})
    return nb


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


def edition_notebook(nb: nbformat.NotebookNode, edition: str) -> nbformat.NotebookNode:
    """The notebook as `edition` publishes it (both: no widgets, so no CDN scripts)."""
    nb = without_widgets(nb)
    return student_notebook(nb) if edition == "student" else nb


def secrets(source: nbformat.NotebookNode, public: str | None = None, min_chars: int = 12) -> list[str]:
    """Text of `source` that the student edition must not contain, whitespace-normalised.

    Lines of its solution regions and hidden-test regions and phrases of its worked
    solutions, less what the student edition shows anyway (`public`, see `public_text`;
    default: this notebook's public part), e.g. `return out` or an import.
    """
    public = public_text([source]) if public is None else public
    found: list[str] = []
    for cell in source.cells:
        if course.SOLUTION_TEXT_TAG in cell.metadata.get("tags", []):
            found += _phrases(cell.source)
        elif cell.cell_type == "code" and "nbgrader" in cell.metadata:
            for region in _regions(cell.source):
                found += [line.strip() for line in region.splitlines()]
    out = []
    for text in map(_normalise, found):
        if len(text) >= min_chars and text not in public and text not in out:
            out.append(text)
    return out


def public_text(notebooks: Iterable[nbformat.NotebookNode], pages: Iterable[Path] = ()) -> str:
    """What the student edition may show, whitespace-normalised: every cell except worked
    solutions, with solution and hidden-test regions cut out, every output, and `pages`.

    Derived with a regular expression, independently of `student_notebook`.
    """
    parts = [page.read_text() for page in pages]
    for nb in notebooks:
        for cell in nb.cells:
            if course.SOLUTION_TEXT_TAG not in cell.metadata.get("tags", []):
                kept = nbformat.from_dict(cell)
                kept.source = _REGIONS.sub("", cell.source)
                parts.append(_notebook_text(nbformat.v4.new_notebook(cells=[kept])))
    return _normalise("\n".join(parts))


_REGIONS = re.compile(r"BEGIN SOLUTION[^\n]*\n(.*?)\n[^\n]*END SOLUTION"
                      r"|BEGIN HIDDEN TESTS[^\n]*\n(.*?)\n[^\n]*END HIDDEN TESTS", re.S)


def _regions(source: str) -> list[str]:
    """The solution and hidden-test regions of a cell's source (markers excluded)."""
    return ["".join(groups) for groups in _REGIONS.findall(source)]


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


# ---------------------------------------------------------------- staging and building


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
    for doc in docs:
        src = source_of(doc)
        if src is None:
            continue
        rel = src.relative_to(ROOT).as_posix()
        if src.suffix == ".ipynb":
            nb = nbformat.read(executed[src], as_version=4)
            files[rel] = nbformat.writes(edition_notebook(nb, edition.name)).encode()
        else:
            files[rel] = src.read_bytes()
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


def sphinx_build(edition: Edition, strict: bool) -> subprocess.Popen:
    """Start Sphinx on the staged edition in its own process (log: <out>/sphinx.log)."""
    edition.out.mkdir(parents=True, exist_ok=True)
    log = (edition.out / "sphinx.log").open("w")
    cmd = [sys.executable, "-m", "autograder.book", "_sphinx", edition.name] + (["--strict"] if strict else [])
    env = {**os.environ, "PYTHONHASHSEED": "0", "NO_COLOR": "1"}
    return subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)


def _sphinx_main(name: str, strict: bool) -> int:
    """Sphinx (through jupyter-book's configuration layer) on one staged edition."""
    from jupyter_book.sphinx import build_sphinx

    edition = Edition(name)
    result = build_sphinx(
        edition.stage, edition.html, noconfig=True, path_config=str(edition.stage / "_config.yml"),
        confoverrides={"external_toc_path": (edition.stage / "_toc.yml").as_posix(),
                       "latex_individualpages": False},
        builder="html", warningiserror=strict, keep_going=strict)
    return result if isinstance(result, int) else 1


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """One book build at a time on this checkout (pytest-xdist workers, main job, benchmark)."""
    BUILD.mkdir(exist_ok=True)
    with (BUILD / ".book.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build(editions: Iterable[str] = EDITIONS, jobs: int | None = None, force: bool = False,
          strict: bool = True, log=print, timings: dict[str, float] | None = None) -> dict[str, Path]:
    """Execute (cached), stage, build and audit `editions`; returns each edition's html folder.

    `timings`, when given, receives the seconds spent executing, in Sphinx and auditing.
    """
    chosen = [Edition(name) for name in editions]
    unknown = {e.name for e in chosen} - set(EDITIONS)
    if unknown:
        raise BookError(f"no edition {', '.join(sorted(unknown))}; editions are {', '.join(EDITIONS)}")
    jobs = jobs or max(1, min(2, os.cpu_count() or 1))
    timeout = int((yaml.safe_load(CONFIG.read_text()).get("execute") or {}).get("timeout", 600))
    timings = {} if timings is None else timings
    with _locked():
        toc = read_toc()
        _warn_unpublished_chapters(toc, log)
        clock = time.perf_counter()
        sources = [source_of(d) for d in notebook_docs(toc)]
        executed = execute_all(sources, jobs, timeout, force=force, log=log)
        MANIFEST.write_text(json.dumps({str(k.relative_to(ROOT)): str(v.relative_to(ROOT))
                                        for k, v in executed.items()}, indent=1))
        timings["execute"], clock = time.perf_counter() - clock, time.perf_counter()
        for edition in chosen:
            changed = stage(edition, toc, executed)
            log(f"book: staged the {edition.name} edition ({len(changed)} files changed)")
        timings["stage"], clock = time.perf_counter() - clock, time.perf_counter()
        running: list[tuple[Edition, subprocess.Popen]] = []
        for edition in chosen:  # up to `jobs` editions at once
            if _up_to_date(edition, strict):
                log(f"book: the {edition.name} edition is up to date")
                continue
            if len(running) >= jobs:
                _finish(*running.pop(0), strict)
            running.append((edition, sphinx_build(edition, strict)))
        for edition, proc in running:
            _finish(edition, proc, strict)
        timings["sphinx"], clock = time.perf_counter() - clock, time.perf_counter()
        if "student" in {e.name for e in chosen}:
            leaks = audit_student(Edition("student"), executed, toc)
            if leaks:
                raise BookError("the student edition shows solutions:\n" + "\n".join(leaks[:20]))
        for edition in chosen:
            remote = audit_offline(edition.html)
            if remote:
                raise BookError(f"the {edition.name} edition loads from the network:\n" + "\n".join(remote[:20]))
        timings["audit"] = time.perf_counter() - clock
        log("book: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
        for edition in chosen:
            log(f"book: the {edition.name} edition is in {edition.html.relative_to(ROOT)}/ (open index.html)")
    return {e.name: e.html for e in chosen}


SPHINX_STACK = ("sphinx", "jupyter-book", "myst-nb", "myst-parser", "sphinx-book-theme",
                "pydata-sphinx-theme", "sphinx-mathjax-offline", "sphinx-external-toc")


def _stamp(edition: Edition, strict: bool) -> str:
    """sha256 of everything a Sphinx build of `edition` depends on: the staged files and the Sphinx stack."""
    h = hashlib.sha256(f"{strict}|{'|'.join(_version(d) for d in SPHINX_STACK)}".encode())
    for path in sorted(edition.stage.rglob("*")):
        if path.is_file():
            h.update(path.relative_to(edition.stage).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def _up_to_date(edition: Edition, strict: bool) -> bool:
    """The edition's HTML was built, successfully, from exactly the staged files there are now."""
    stamp = edition.out / "built-from.sha256"
    return (edition.html / "index.html").is_file() and stamp.is_file() and \
        stamp.read_text().strip() == _stamp(edition, strict)


def _finish(edition: Edition, proc: subprocess.Popen, strict: bool) -> None:
    (edition.out / "built-from.sha256").unlink(missing_ok=True)
    code = proc.wait()
    log = (edition.out / "sphinx.log").read_text(errors="replace")
    warnings = [line for line in log.splitlines() if "WARNING" in line or "ERROR" in line]
    if warnings:
        print("\n".join(warnings[:40]), file=sys.stderr)
    if code != 0 or not (edition.html / "index.html").is_file():
        raise BookError(f"sphinx failed on the {edition.name} edition (exit {code}); "
                        f"see {edition.out / 'sphinx.log'}:\n{_last_lines(log)}")
    _complete_redirect(edition)
    (edition.out / "built-from.sha256").write_text(_stamp(edition, strict) + "\n")


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


def _warn_unpublished_chapters(toc: dict, log) -> None:
    listed = set(toc_documents(toc))
    for chapter in course.chapters():
        doc = chapter.path.relative_to(ROOT).with_suffix("").as_posix()
        if doc not in listed:
            log(f"book: {doc} is a chapter but not in _toc.yml: not published")


@functools.cache
def _build_once(editions: tuple[str, ...]) -> dict[str, Path] | BookError:
    try:
        return build(editions)
    except BookError as exc:
        return exc


def build_once(editions: tuple[str, ...] = EDITIONS) -> dict[str, Path]:
    """`build(editions)` at most once per process, failure included (the tests' session fixture)."""
    result = _build_once(tuple(editions))
    if isinstance(result, BookError):
        raise result
    return result


# ---------------------------------------------------------------- audits (also run by the tests)


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
    sources = {src: nbformat.read(src, as_version=4) for src in executed}
    pages = [p for d in toc_documents(published_toc(toc, edition.name))
             if (p := source_of(d)) is not None and p.suffix != ".ipynb"]
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


# ---------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    """`python -m autograder.book`: build the editions."""
    parser = argparse.ArgumentParser(prog="python -m autograder.book", description=__doc__.split("\n\n")[0])
    parser.add_argument("--edition", choices=[*EDITIONS, "both"], default="both")
    parser.add_argument("--jobs", type=int, default=None, help="notebooks executed at once (default: 2, or 1 on one core)")
    parser.add_argument("--force", action="store_true", help="re-execute every notebook, ignoring the cache")
    parser.add_argument("--no-strict", dest="strict", action="store_false", help="Sphinx warnings are not errors")
    args = parser.parse_args(argv)
    editions = EDITIONS if args.edition == "both" else (args.edition,)
    start = time.perf_counter()
    try:
        build(editions, jobs=args.jobs, force=args.force, strict=args.strict)
    except BookError as exc:
        print(f"book: {exc}", file=sys.stderr)
        return 1
    print(f"book: built {', '.join(editions)} in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "_sphinx":  # internal: one Sphinx build, see sphinx_build
        sys.exit(_sphinx_main(sys.argv[2], "--strict" in sys.argv[3:]))
    sys.exit(main())
