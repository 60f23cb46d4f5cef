"""The published book in two editions from one source (the `attnbook` command).

    attnbook                      # both editions -> _build/{student,solutions}/html
    attnbook --edition student    # one edition
    attnbook --force              # re-execute every chapter

Every notebook in `_toc.yml` (a chapter's text source is made into one, `coursenb.chapters`)
is executed once, top to bottom in a fresh kernel (nbclient), and the executed copy is
cached under `_build/.book_cache/`, keyed by the source's bytes and the code it imports
(`attnlab/`, `solutions/`, the hidden checks). From that one execution:

* the **solutions edition** publishes the executed notebooks as they are;
* the **student edition** publishes a copy made the way nbgrader makes a release:
  solution regions replaced by the stub, hidden-test regions removed, worked solutions
  and demos built on the solutions (cells tagged `solutions-only`) dropped, the outputs of cells
  that show a student's answers (tagged `answer-output`) dropped, every other output kept.
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

# Modules: `layout` (paths, editions), `contents` (what is published), `execute` (run once, cached),
# `editions` (each edition's notebooks and staged sources), `sphinx` (one Sphinx build per
# edition, in its own process), `audit` (leaks and network loads), `build` (all of it), `cli`.
from publish.build import build, build_once
from publish.layout import EDITIONS, BookError, Edition

__all__ = ["EDITIONS", "BookError", "Edition", "build", "build_once"]
