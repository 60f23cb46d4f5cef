"""Execution: every notebook of the book runs once, in a fresh kernel, cached by content."""
from __future__ import annotations

import concurrent.futures as futures
import functools
import hashlib
import json
import multiprocessing
import os
import re
import sys
import time
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import nbformat

from attnlab.validate import QUICK_ENV
from publish import deps
from publish.contents import read_notebook
from publish.layout import CACHE, MANIFEST, ROOT, BookError

# The kit reaches the instructor's judge by this entry point group (a hidden check run in the book), not by import.
LOCAL_JUDGE = "attnlab.local_judge"
# Run in every kernel before the first cell (IPython's startup folder): each figure's output records its smallest
# text and a description (publish/kernel_startup.py).
KERNEL_STARTUP = Path(__file__).with_name("kernel_startup.py")


def kit_files(sources: list[Path]) -> list[Path]:
    """The repository's code that executing `sources` runs: what their code cells import, and the local judge
    their hidden checks load, with everything those import (`publish.deps`)."""
    roots = deps.notebook_imports(read_notebook(src) for src in sources) | deps.entry_point_modules(LOCAL_JUDGE)
    return deps.closure(roots)


def kit_digest(sources: list[Path]) -> str:
    """sha256 over the code executing `sources` runs (`kit_files`, the kernels' startup file) and the
    interpreter/torch versions."""
    return deps.digest([*kit_files(sources), KERNEL_STARTUP],
                       f"{sys.version}|{version_of('torch')}|{version_of('matplotlib')}")


def version_of(dist: str) -> str:
    """The installed version of distribution `dist` ("-" if it is not installed)."""
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
    for var in ("ATTNLAB_GRADING", "NBGRADER_EXECUTION", QUICK_ENV):
        env.pop(var, None)  # the book runs the long demos and the slow visible checks
    env["PYTHONHASHSEED"] = "0"
    env["IPYTHONDIR"] = str(_ipython_dir())
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, str(threads))
    return env


def _ipython_dir() -> Path:
    """An IPython folder of the book's own whose startup runs KERNEL_STARTUP (rewritten when it differs)."""
    folder = CACHE / "ipython"
    startup = folder / "profile_default" / "startup" / "00-book-figures.py"
    text = KERNEL_STARTUP.read_text()
    if not startup.is_file() or startup.read_text() != text:
        startup.parent.mkdir(parents=True, exist_ok=True)
        startup.write_text(text)
    return folder


def execute_notebook(src: Path, dest: Path, timeout: int, threads: int) -> float:
    """Run `src` in a fresh kernel (cwd: its folder), write the executed copy to `dest`; seconds taken."""
    from nbclient import NotebookClient

    start = time.perf_counter()
    nb = read_notebook(src)
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
    """Source document -> the executed notebook the last build published."""
    return {ROOT / k: ROOT / v for k, v in json.loads(MANIFEST.read_text()).items()}


def _timings() -> dict[str, float]:
    path = CACHE / "timings.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


FIRST_BUILD = Path(__file__).with_name("first_build_seconds.json")  # a first build's order, before any timing here


@functools.cache
def _first_build_seconds() -> dict[str, object]:
    """FIRST_BUILD, read once per process (the sort asks once per chapter)."""
    return json.loads(FIRST_BUILD.read_text())


def _expected_seconds(src: Path, timings: dict[str, float]) -> float:
    """Last measured run time (here, else FIRST_BUILD's); a notebook neither knows comes first, later chapters before
    earlier. Longest first: a first build that started Chapter 4 (the longest) fifth ended with one core idle."""
    known = {**_first_build_seconds(), **timings}
    if isinstance(known.get(src.stem), (int, float)):
        return known[src.stem]
    number = re.match(r"ch(\d+)", src.stem)
    return 1e6 + (int(number.group(1)) if number else 0)


def execute_all(sources: list[Path], jobs: int, timeout: int, force: bool = False,
                log=print) -> dict[Path, Path]:
    """The executed copy of every source notebook, running only what the cache lacks; jobs in parallel."""
    kit = kit_digest(sources)
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
                failures.append(f"{src.relative_to(ROOT)}: {last_lines(str(exc))}")
                log(f"book: {src.relative_to(ROOT)}: FAILED")
                continue
            timings[src.stem] = round(seconds, 1)
            log(f"book: {src.relative_to(ROOT)}: executed in {seconds:.0f} s")
    (CACHE / "timings.json").write_text(json.dumps(timings, indent=1, sort_keys=True))
    _prune_cache(executed.values())
    if failures:
        raise BookError("chapters failed to execute:\n" + "\n".join(failures))
    return executed


def last_lines(text: str, n: int = 25) -> str:
    """The last `n` lines of `text` (for error messages)."""
    return "\n".join(text.strip().splitlines()[-n:])


def _prune_cache(keep: Iterable[Path]) -> None:
    """Drop cached executions of the same notebooks made for older contents."""
    keep = set(keep)
    stems = {p.name.split(".")[0] for p in keep}
    for path in (CACHE / "executed").glob("*.ipynb"):
        if path.name.split(".")[0] in stems and path not in keep:
            path.unlink(missing_ok=True)
