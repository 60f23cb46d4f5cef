"""The one guard on a notebook file's bytes, before anything else parses them.

Collect (before placing a file), the engine (before grading it), the pages that show a
submission and the submission service all read a file a student wrote through `parse`,
`read` or `read_file`: its size, how deeply its JSON nests, how many JSON objects and cells it
holds are bounded here and nowhere else, so that no later reader (nbformat, deep copies,
feedback) recurses or allocates past what a notebook of the course needs. This module
imports only the standard library (nbformat where a notebook is built), so a process that
starts sandboxes pays nothing for it.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from autograder.errors import AutograderError

if TYPE_CHECKING:
    from nbformat import NotebookNode

MAX_BYTES = 64 << 20  # a submitted file (a chapter's notebook with its outputs is a few MiB)
MAX_DEPTH = 64  # JSON nesting (a notebook nests about 6 levels; widget state in metadata a few more)
MAX_OBJECTS = 500_000  # JSON objects in the file (a chapter's notebook has a few thousand)
MAX_CELLS = 10_000  # cells (a chapter has about a hundred)
_BLANK = re.compile(rb"\s*")


class UnreadableNotebook(AutograderError, ValueError):
    """The file is not a notebook that may be read (empty, too large, not JSON, nested too deeply, not nbformat)."""


def nesting(data: object, limit: int = MAX_DEPTH) -> int:
    """How deeply lists and dicts nest in parsed JSON (counting stops past `limit`); no recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
            stack.extend((x, depth + 1) for x in (item.values() if isinstance(item, dict) else item))
    return deepest


class TooDeep(UnreadableNotebook):
    """The file's JSON nests deeper than any notebook: no tool that recurses over JSON may be given it."""


class _TooManyObjects(AutograderError, ValueError):
    pass


def _counted(limit: int):
    """A json object_pairs_hook that builds dicts and stops the parse past `limit` of them."""
    left = [limit]

    def hook(pairs: list) -> dict:
        left[0] -= 1
        if left[0] < 0:
            raise _TooManyObjects
        return dict(pairs)

    return hook


def parse(raw: bytes) -> dict:
    """The JSON of a notebook file within the bounds above, or UnreadableNotebook saying why not."""
    if len(raw) > MAX_BYTES:
        raise UnreadableNotebook(f"the file holds {len(raw) >> 20} MiB, more than {MAX_BYTES >> 20} MiB: not read")
    if _BLANK.fullmatch(raw):
        raise UnreadableNotebook("the file is empty")
    try:
        data = json.loads(raw.decode("utf-8"), object_pairs_hook=_counted(MAX_OBJECTS))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UnreadableNotebook(f"the file is not JSON ({str(exc)[:80]}), so not a notebook") from None
    except RecursionError:  # json's C parser stops at the interpreter's recursion limit
        raise TooDeep(f"the file's JSON nests more than {MAX_DEPTH} levels deep, so not a notebook") from None
    except _TooManyObjects:
        raise UnreadableNotebook(f"the file holds more than {MAX_OBJECTS} JSON objects (a notebook of a chapter has "
                                 "a few thousand): not read") from None
    if nesting(data) > MAX_DEPTH:  # every later reader (nbformat, copies, feedback) would recurse that deep
        raise TooDeep(f"the file's JSON nests more than {MAX_DEPTH} levels deep, so not a notebook")
    if not isinstance(data, dict) or not isinstance(data.get("cells", data.get("worksheets")), list):
        raise UnreadableNotebook("the file is JSON but not a Jupyter notebook (no list of cells)")
    if len(data.get("cells", ())) > MAX_CELLS:
        raise UnreadableNotebook(f"the notebook has {len(data['cells'])} cells, more than {MAX_CELLS}: not read")
    return data


def read(raw: bytes) -> NotebookNode:
    """The notebook in `raw` (nbformat 4), read within the bounds, or UnreadableNotebook saying why not."""
    return notebook(parse(raw))


def notebook(data: dict) -> NotebookNode:
    """The notebook (nbformat 4) of `parse`'s JSON, as `nbformat.reads` makes it from the file's text (its version's
    reader, converted to 4, validated: a failure logged), without encoding and parsing the JSON again; or
    UnreadableNotebook. `data` itself is not changed (the reader builds new dicts and lists)."""
    import nbformat
    from nbformat import reader

    try:
        major, minor = reader.get_version(data)
        if major not in nbformat.versions:
            raise nbformat.NBFormatError(f"Unsupported nbformat version {major}")
        try:
            nb = nbformat.versions[major].to_notebook_json(data, minor=minor)
        except AttributeError as exc:
            raise nbformat.ValidationError(f"The notebook is invalid and is missing an expected key: {exc}") from None
        nb = nbformat.convert(nb, 4)
        try:
            nbformat.validate(nb)
        except nbformat.ValidationError as exc:
            nbformat.get_logger().error("Notebook JSON is invalid: %s", exc)
    except Exception as exc:  # noqa: BLE001 - every nbformat failure means the same to a student
        raise UnreadableNotebook(f"the file is not a valid notebook ({str(exc)[:80]})") from None
    if not isinstance(nb.get("cells"), list):
        raise UnreadableNotebook("the notebook has no cells")
    return nb


def read_file(path: Path) -> NotebookNode:
    """The notebook at `path`: its size checked before a byte is read, then `read`."""
    try:
        size = Path(path).stat().st_size
        if size > MAX_BYTES:
            raise UnreadableNotebook(f"the file holds {size >> 20} MiB, more than {MAX_BYTES >> 20} MiB: not read")
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise UnreadableNotebook(f"the file cannot be read ({exc.strerror})") from None
    return read(raw)
