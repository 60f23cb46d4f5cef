"""One build of the book: execute (cached), stage, run Sphinx, audit; one build at a time per checkout."""
from __future__ import annotations

import contextlib
import fcntl
import functools
import html
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import yaml

from coursenb import chapters
from publish import sphinx
from publish.audit import audit_offline, audit_student_cached
from publish.contents import notebook_docs, read_toc, source_of, toc_documents
from publish.editions import stage
from publish.execute import execute_all
from publish.layout import ANNOUNCEMENT, BUILD, CONFIG, EDITIONS, MANIFEST, ROOT, BookError, Edition


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
          strict: bool = True, log=print, timings: dict[str, float] | None = None,
          fail_on_leaks: bool = True) -> dict[str, Path]:
    """Execute (cached), stage, build and audit `editions`; returns each edition's html folder.

    A leak in the student edition raises BookError after both editions are built; with
    `fail_on_leaks` false it is only logged (the tests audit the edition themselves, so that a
    leak fails the leak tests, not every test of the book). `timings`, when given, receives the
    seconds spent executing, in Sphinx and auditing.
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
            if sphinx.up_to_date(edition, strict):
                log(f"book: the {edition.name} edition is up to date")
                continue
            if len(running) >= jobs:
                sphinx.finish(*running.pop(0), strict)
            running.append((edition, sphinx.start(edition, strict)))
        for edition, proc in running:
            sphinx.finish(edition, proc, strict)
        timings["sphinx"], clock = time.perf_counter() - clock, time.perf_counter()
        if "student" in {e.name for e in chosen}:
            leaks = audit_student_cached(Edition("student"), executed, toc, log=log)
            if leaks:
                message = f"the student edition shows solutions ({len(leaks)} findings):\n" + "\n".join(leaks[:40])
                if fail_on_leaks:
                    raise BookError(message)
                log("book: " + message)
        for edition in chosen:
            remote = audit_offline(edition.html)
            if remote:
                raise BookError(f"the {edition.name} edition loads from the network:\n" + "\n".join(remote[:20]))
        timings["audit"] = time.perf_counter() - clock
        if all((Edition(name).html / "index.html").is_file() for name in EDITIONS):
            write_landing()
        log("book: " + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items()))
        for edition in chosen:
            log(f"book: the {edition.name} edition is in {edition.html.relative_to(ROOT)}/ (open index.html)")
    return {e.name: e.html for e in chosen}


LANDING = BUILD / "html" / "index.html"  # the page that links both editions (scripts/main.sh publishes it)
LANDING_STYLE = """body{margin:0;font:17px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;
background:#fafafa}main{max-width:40rem;margin:3rem auto;padding:0 1.25rem}h1{font-size:1.6rem;line-height:1.25}
ul{list-style:none;padding:0}li{margin:1rem 0;padding:1rem 1.25rem;background:#fff;border:1px solid #ddd;
border-radius:8px}a{color:#0a58ca;font-weight:600}p{color:#555;margin:.3rem 0 0}"""


def write_landing() -> None:
    """The landing page (`LANDING`): the book's title and a link to each edition, styled, with a viewport and
    the book's favicon beside it."""
    cfg = yaml.safe_load(CONFIG.read_text())
    title = html.escape(cfg.get("title", "The book"))
    favicon = ROOT / ((cfg.get("html") or {}).get("favicon") or "")
    LANDING.parent.mkdir(parents=True, exist_ok=True)
    icon = ""
    if favicon.is_file():
        shutil.copyfile(favicon, LANDING.parent / favicon.name)
        icon = f'<link rel="icon" href="{favicon.name}">'
    items = "".join(f'<li><a href="../{name}/html/index.html">{name.capitalize()} edition</a>'
                    f"<p>{html.escape(ANNOUNCEMENT[name])}</p></li>" for name in EDITIONS)
    LANDING.write_text(
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{title}</title>{icon}'
        f"<style>{LANDING_STYLE}</style></head>\n<body><main><h1>{title}</h1><ul>{items}</ul></main></body></html>\n")


def _warn_unpublished_chapters(toc: dict, log) -> None:
    listed = set(toc_documents(toc))
    for chapter in chapters.select():
        if chapter.doc not in listed:
            log(f"book: {chapter.doc} is a chapter but not in _toc.yml: not published")


@functools.cache
def _build_once(editions: tuple[str, ...]) -> dict[str, Path] | BookError:
    try:
        return build(editions, fail_on_leaks=False)
    except BookError as exc:
        return exc


def build_once(editions: tuple[str, ...] = EDITIONS) -> dict[str, Path]:
    """`build(editions)` at most once per process, failure included (the tests' session fixture); a leak is
    logged, not raised: tests/book/test_book.py audits the student edition itself."""
    result = _build_once(tuple(editions))
    if isinstance(result, BookError):
        raise result
    return result
