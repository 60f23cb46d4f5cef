"""`attnbook` (or `python -m publish`): build the book's editions."""
from __future__ import annotations

import argparse
import sys
import time

from publish.build import build
from publish.layout import EDITIONS, BookError


def main(argv: list[str] | None = None) -> int:
    """`attnbook`: build the editions."""
    parser = argparse.ArgumentParser(prog="attnbook", description="Build the book's student and solutions editions.")
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
