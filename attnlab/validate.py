"""Validate a chapter notebook before you submit it: `python -m attnlab.validate ch1_parallel_time.ipynb`.

The notebook runs top to bottom in a fresh kernel (this Python, not whatever kernel Jupyter
would pick), the way the grader runs it: the long demonstrations (training runs, timing
plots) are skipped, and a cell that runs longer than the grader allows is stopped. Then
each visible test is reported (PASS or FAIL with the test's own sentence), with every answer
cell that still holds its stub and every other cell that raised an error. Nothing is written
to your notebook.

Only the visible tests run here: the hidden tests are not in your notebook, they run when
it is graded (on other inputs, against the reference, in the grader's own process). A
notebook that passes here can still lose points on them; one that fails here will.

Exit status: 0 when every visible test passes and no cell raised an error, 1 otherwise,
2 when the notebook cannot be read.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# The grader's per-cell limit (nbgrader's Execute.timeout in the course's configuration).
CELL_TIMEOUT = 120
STUB = "raise NotImplementedError"
KERNEL = "attnlab-validate"


@dataclass(frozen=True)
class CellReport:
    """What one cell did: its kind (test, answer, other), its name, its points, and its error if any."""

    index: int
    kind: str
    name: str
    points: float
    error: str | None
    stub: bool = False

    @property
    def status(self) -> str:
        """PASS or FAIL for a test; TODO for an answer still holding its stub; ERROR or OK otherwise."""
        if self.kind == "test":
            return "FAIL" if self.error else "PASS"
        if self.stub:
            return "TODO"
        return "ERROR" if self.error else "OK"


def _nbgrader(cell: dict) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta if isinstance(meta, dict) else {}


def _kind(cell: dict) -> str:
    """test (a graded cell the student does not write), answer (a cell the student writes), or other."""
    meta = _nbgrader(cell)
    if cell.get("cell_type") != "code":
        return "other"
    if meta.get("grade") and not meta.get("solution"):
        return "test"
    return "answer" if meta.get("solution") else "other"


def _error(cell: dict, timeout: int) -> str | None:
    """The cell's error as one line ("Explained: ... ") or None."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            if output.get("ename") == "KeyboardInterrupt":
                return f"stopped after {timeout} s: the grader stops a cell that runs longer"
            if output.get("ename") == "NotImplementedError" and not str(output.get("evalue", "")).strip():
                return "NotImplementedError: it calls something you have not written yet (a stub)"
            value = " ".join(str(output.get("evalue", "")).split())
            return f"{output.get('ename', 'Error')}: {value}"[:400].rstrip(": ")
    return None


def report(nb: dict, timeout: int = CELL_TIMEOUT) -> list[CellReport]:
    """Every test cell, every answer cell and every other cell that raised, of an executed notebook."""
    found = []
    for index, cell in enumerate(nb.get("cells", [])):
        kind = _kind(cell)
        meta = _nbgrader(cell)
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        error = _error(cell, timeout)
        if kind == "other" and error is None:
            continue
        name = meta.get("grade_id") or f"cell {index + 1}"
        points = float(meta.get("points", 0) or 0) if kind == "test" else 0.0
        found.append(CellReport(index, kind, name, points, error, stub=kind == "answer" and STUB in source))
    return found


@contextlib.contextmanager
def _this_python_kernel() -> Iterator[str]:
    """A kernelspec, in a temporary Jupyter path, that runs this very interpreter."""
    with tempfile.TemporaryDirectory(prefix="attnlab-kernel-") as root:
        spec = Path(root) / "kernels" / KERNEL
        spec.mkdir(parents=True)
        (spec / "kernel.json").write_text(json.dumps({
            "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": f"Python ({sys.executable})", "language": "python"}))
        old = os.environ.get("JUPYTER_PATH")
        os.environ["JUPYTER_PATH"] = os.pathsep.join([root] + ([old] if old else []))
        try:
            yield KERNEL
        finally:
            if old is None:
                os.environ.pop("JUPYTER_PATH", None)
            else:
                os.environ["JUPYTER_PATH"] = old


def execute(path: Path, timeout: int = CELL_TIMEOUT, demos: bool = False) -> tuple[dict, str | None]:
    """Run the notebook at `path` top to bottom in a fresh kernel (cwd: its folder): the executed
    copy, and why the run stopped early (the kernel died), if it did.

    Errors do not stop the run (every test is reported). Without `demos` the long demonstrations
    are skipped, as when graded (attnlab.grading.is_grading() is true in the kernel).
    """
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    nb = nbformat.read(str(path), as_version=4)
    env = dict(os.environ)
    env.pop("NBGRADER_EXECUTION", None)
    if not demos:
        env["NBGRADER_EXECUTION"] = "validate"
    env.setdefault("MPLBACKEND", "Agg")  # plots are drawn but not shown
    with _this_python_kernel() as kernel:
        client = NotebookClient(nb, timeout=timeout, kernel_name=kernel, allow_errors=True,
                                interrupt_on_timeout=True, startup_timeout=600,
                                resources={"metadata": {"path": str(path.parent)}})
        try:
            client.execute(env=env, stderr=subprocess.DEVNULL)  # the kernel's own log, not the cells' stderr
        except DeadKernelError:
            running = [i for i, c in enumerate(nb.cells) if c.get("cell_type") == "code" and c.get("execution_count")]
            where = f" while running cell {running[-1] + 1}" if running else ""
            return nb, f"the kernel died{where} (an exit, a crash or too much memory): later cells did not run"
    return nb, None


def summary(found: list[CellReport]) -> tuple[str, bool]:
    """The report's text, and whether the notebook is ready to submit."""
    tests = [r for r in found if r.kind == "test"]
    passed = [r for r in tests if r.status == "PASS"]
    lines = []
    for r in found:
        what = f"{r.name} ({r.points:g} point{'s' if r.points != 1 else ''})" if r.kind == "test" else r.name
        if r.status == "TODO":
            lines.append(f"  TODO   {what}: still raises NotImplementedError; write your answer here")
        elif r.status in ("FAIL", "ERROR"):
            lines.append(f"  {r.status:6s} {what}: {r.error}")
        elif r.kind == "test":
            lines.append(f"  PASS   {what}")
    ok = bool(tests) and len(passed) == len(tests) and not any(r.status in ("ERROR", "TODO") for r in found)
    points = sum(r.points for r in passed), sum(r.points for r in tests)
    lines.append(f"Visible tests: {len(passed)} of {len(tests)} pass ({points[0]:g} of {points[1]:g} points). "
                 "Hidden tests run when your notebook is graded.")
    if not tests:
        lines.append("This notebook has no visible tests: is it a chapter notebook of the course?")
    lines.append("Ready to submit: keep the file name." if ok else
                 "Not ready: fix the cells above, then run this again.")
    return "\n".join(lines), ok


def main(argv: list[str] | None = None) -> int:
    """`python -m attnlab.validate NOTEBOOK.ipynb [...]`."""
    parser = argparse.ArgumentParser(prog="python -m attnlab.validate", description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", type=Path, metavar="NOTEBOOK.ipynb")
    parser.add_argument("--timeout", type=int, default=CELL_TIMEOUT,
                        help=f"seconds a cell may run (default {CELL_TIMEOUT}, the grader's limit)")
    parser.add_argument("--demos", action="store_true",
                        help="also run the long demonstrations that the grader skips")
    args = parser.parse_args(argv)
    status = 0
    for path in args.notebooks:
        if not path.is_file() or path.suffix != ".ipynb":
            print(f"{path}: not a notebook file (.ipynb)", file=sys.stderr)
            return 2
        print(f"Validating {path.name}: running it top to bottom in a fresh kernel"
              + ("" if args.demos else " (long demonstrations skipped, as when graded)") + " ...", flush=True)
        start = time.perf_counter()
        try:
            executed, stopped = execute(path, args.timeout, args.demos)
        except Exception as exc:  # noqa: BLE001 - an unreadable notebook or a kernel that cannot start
            print(f"{path}: could not be run: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 2
        text, ok = summary(report(executed, args.timeout))
        if stopped:
            text, ok = f"  ERROR  {stopped}\n{text}", False
        print(text)
        print(f"({time.perf_counter() - start:.0f} s)")
        status = status or (0 if ok else 1)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
