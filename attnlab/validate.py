"""Validate a chapter notebook before you submit it: `python -m attnlab.validate ch1_parallel_time.ipynb`.

The notebook runs top to bottom in a fresh kernel (this Python, not whatever kernel Jupyter
would pick), the way the grader runs it: the long demonstrations (training runs, timing
plots) are skipped, and a cell that runs longer than the grader allows is stopped. Every
visible check runs, the slow ones too (Chapter 4's trains your model for about a minute);
`--quick` skips the slow ones, and each is then reported SKIPPED. Then each visible test is
reported (PASS, FAIL with the test's own sentence, or SKIPPED; FORM for a test whose visible part checks only
an answer's form, a symbolic order or a set of equations well-formed, which only the hidden checks grade:
validate never says PASS for what it did not judge), with every answer still
holding its stub and every other cell that raised an error, each named by its section and
its first line. Nothing is written to your notebook.

The summary counts what the notebook is worth: its points, the autograded points whose
visible checks pass, and the questions graded by hand. It is not a predicted grade: every
autograded cell also has hidden checks, which run only when the notebook is graded (on
other inputs, against the reference, in the grader's own process). A notebook that passes
here can still lose points on them; one that fails here will.

A notebook stamped by its release (`attnlab.release`) whose locked or test cells are not that
release's is named (RELEASE) and never "Ready to submit": its checks are not the ones it will be
graded with.

Exit status: 0 when every visible check ran and passed, every answer is written, no cell
raised an error and the tests are its release's ("Ready to submit"), 1 otherwise, 2 when the notebook cannot be read.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from attnlab import release

# The grader's per-cell limit (nbgrader's Execute.timeout in the course's configuration).
CELL_TIMEOUT = 120
STUB = "raise NotImplementedError"
MANUAL_STUB = "YOUR ANSWER HERE"  # nbgrader's text in a written answer not yet written
KERNEL = "attnlab-validate"
MESSAGE_LINES, MESSAGE_WIDTH = 12, 400  # an error message is shown up to this many lines of this many characters
# `--quick` sets QUICK_ENV in the kernel; a slow visible check (attnlab.grading.runs_slow_check) then
# prints one line that starts with SKIPPED_MARK instead of running, and is reported SKIPPED.
QUICK_ENV = "ATTNLAB_QUICK"
SKIPPED_MARK = "[attnlab] visible check skipped:"
# A test cell whose visible part only calls these checks the answer's form, not its correctness (attnlab.testing).
FORM_CHECKS = frozenset({"expect_answer", "expect_equations"})
FORM = "well-formed; graded by hidden checks"
STOPPED = "the run stopped before this cell: see the ERROR above"  # why a test cell after a dead kernel did not run


@dataclass(frozen=True)
class CellReport:
    """What one cell did: its kind (test, answer, manual, other), its name and place, its points, its error."""

    index: int
    kind: str
    name: str
    points: float
    error: str | None
    stub: bool = False
    where: str = ""
    skipped: str | None = None  # why a test cell's visible check did not run
    form_only: bool = False  # a test cell whose visible check reads the answer's form only (FORM_CHECKS)

    @property
    def status(self) -> str:
        """PASS, FAIL or SKIPPED for a test, FORM for a test that checks only the answer's form and found it
        well-formed; TODO for an answer still holding its stub; HAND for a written answer graded by hand
        (validate does not judge it); ERROR or OK otherwise."""
        if self.kind == "test":
            return "FAIL" if self.error else "SKIPPED" if self.skipped else "FORM" if self.form_only else "PASS"
        if self.stub:
            return "TODO"
        if self.kind == "manual":
            return "HAND"
        return "ERROR" if self.error else "OK"


def _nbgrader(cell: dict) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta if isinstance(meta, dict) else {}


def _kind(cell: dict) -> str:
    """test (a graded cell the student does not write), answer (a code cell the student writes), manual (a
    graded answer the student writes, scored by hand), or other."""
    meta = _nbgrader(cell)
    if meta.get("grade") and meta.get("solution"):
        return "manual"
    if cell.get("cell_type") != "code":
        return "other"
    if meta.get("grade"):
        return "test"
    return "answer" if meta.get("solution") else "other"


def _text(value: object) -> str:
    return "".join(value) if isinstance(value, list) else str(value or "")


def _error(cell: dict, timeout: int) -> str | None:
    """The cell's error as one line ("Explained: ... ") or None."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            if output.get("ename") == "KeyboardInterrupt":
                return f"stopped after {timeout} s: the grader stops a cell that runs longer"
            if output.get("ename") == "NotImplementedError" and not str(output.get("evalue", "")).strip():
                return "NotImplementedError: it calls something you have not written yet (a stub)"
            lines = [" ".join(ln.split()) for ln in str(output.get("evalue", "")).splitlines() if ln.strip()]
            shown = lines[:MESSAGE_LINES] + ([f"... ({len(lines) - MESSAGE_LINES} more lines)"]
                                              if len(lines) > MESSAGE_LINES else [])
            first = f"{output.get('ename', 'Error')}: {shown[0]}" if shown else str(output.get("ename", "Error"))
            return "\n".join([first[:MESSAGE_WIDTH]] + [ln[:MESSAGE_WIDTH] for ln in shown[1:]])
    return None


def _skipped(cell: dict) -> str | None:
    """Why the cell's visible check did not run, if it printed so (attnlab.grading.runs_slow_check)."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream" and output.get("name") == "stdout":
            for line in _text(output.get("text")).splitlines():
                if line.startswith(SKIPPED_MARK):
                    return line.removeprefix(SKIPPED_MARK).strip() or "skipped"
    return None


def form_only(source: str) -> bool:
    """Whether a test cell (as released: its hidden tests are not there) only calls checks of an answer's form."""
    import ast

    try:
        body = ast.parse(source).body
    except SyntaxError:
        return False
    return bool(body) and all(isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)
                              and isinstance(s.value.func, ast.Name) and s.value.func.id in FORM_CHECKS
                              for s in body)


def _heading(cell: dict) -> str | None:
    """The last heading of a markdown cell ("3.3 Counting parameters"), if it has one."""
    if cell.get("cell_type") != "markdown":
        return None
    found = re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", _text(cell.get("source")), re.M)
    return re.sub(r"[*_`$]", "", found[-1]).strip() if found else None


def _first_line(source: str, width: int = 60) -> str:
    """The cell's first non-blank line, shortened to `width` characters."""
    line = next((ln.strip() for ln in source.splitlines() if ln.strip()), "")
    return line if len(line) <= width else line[:width - 3].rstrip() + "..."


def places(nb: dict) -> list[str]:
    """Where each cell is, in words a student finds in JupyterLab (which shows no cell numbers): its
    section and its first line."""
    found, section = [], "the top of the notebook"
    for cell in nb.get("cells", []):
        section = _heading(cell) or section
        found.append(f'section "{section}", the cell that begins "{_first_line(_text(cell.get("source")))}"')
    return found


def report(nb: dict, timeout: int = CELL_TIMEOUT, executed: bool = True) -> list[CellReport]:
    """Every test cell, answer cell and hand-graded answer, and every other cell that raised, of an executed
    notebook, each with its place (section and first line). `executed`: the notebook was run here, so a test
    cell without an execution count never ran (the kernel died before it) and is reported SKIPPED."""
    found = []
    for index, (cell, where) in enumerate(zip(nb.get("cells", []), places(nb))):
        kind = _kind(cell)
        meta = _nbgrader(cell)
        source = _text(cell.get("source"))
        error = _error(cell, timeout)
        if kind == "other" and error is None:
            continue
        name = meta.get("grade_id") or "a cell"
        points = float(meta.get("points", 0) or 0) if kind in ("test", "manual") else 0.0
        stub = (kind == "answer" and STUB in source) or (kind == "manual" and source.strip() == MANUAL_STUB)
        skipped = None
        if kind == "test":
            skipped = STOPPED if executed and cell.get("execution_count") is None and not error else _skipped(cell)
        found.append(CellReport(index, kind, name, points, error, stub=stub, where=where, skipped=skipped,
                                form_only=kind == "test" and form_only(source)))
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


def execute(path: Path, timeout: int = CELL_TIMEOUT, demos: bool = False,
            quick: bool = False) -> tuple[dict, str | None]:
    """Run the notebook at `path` top to bottom in a fresh kernel (cwd: its folder): the executed
    copy, and why the run stopped early (the kernel died), if it did.

    Errors do not stop the run (every test is reported). Without `demos` the long demonstrations
    are skipped, as when graded (attnlab.grading.is_grading() is true in the kernel); with `quick`
    the slow visible checks are skipped too, and say so (attnlab.grading.runs_slow_check).
    """
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    nb = nbformat.read(str(path), as_version=4)
    env = dict(os.environ)
    env.pop("NBGRADER_EXECUTION", None)
    if not demos:
        env["NBGRADER_EXECUTION"] = "validate"
    env.pop(QUICK_ENV, None)
    if quick:
        env[QUICK_ENV] = "1"
    env.setdefault("MPLBACKEND", "Agg")  # plots are drawn but not shown
    with _this_python_kernel() as kernel:
        client = NotebookClient(nb, timeout=timeout, kernel_name=kernel, allow_errors=True,
                                interrupt_on_timeout=True, startup_timeout=600,
                                resources={"metadata": {"path": str(path.parent)}})
        try:
            client.execute(env=env, stderr=subprocess.DEVNULL)  # the kernel's own log, not the cells' stderr
        except DeadKernelError:
            running = [i for i, c in enumerate(nb.cells) if c.get("cell_type") == "code" and c.get("execution_count")]
            where = f" while running {places(nb)[running[-1]]}" if running else ""
            return nb, f"the kernel died{where} (an exit, a crash or too much memory): later cells did not run"
    return nb, None


def _points(x: float) -> str:
    return f"{x:g} point{'' if x == 1 else 's'}"


def summary(found: list[CellReport], command: str = "python -m attnlab.validate NOTEBOOK.ipynb",
            stopped: str | None = None, mismatch: str | None = None) -> tuple[str, bool]:
    """The report's text, and whether the notebook is ready to submit (every visible check ran and passed,
    every answer written, no error, its tests those of its release). `command` runs the skipped checks;
    `stopped`: why the run stopped early; `mismatch`: why its tests are not its release's (attnlab.release)."""
    tests = [r for r in found if r.kind == "test"]
    manual = [r for r in found if r.kind == "manual"]
    passed = [r for r in tests if r.status in ("PASS", "FORM")]
    formed = [r for r in tests if r.status == "FORM"]
    skipped = [r for r in tests if r.status == "SKIPPED"]
    lines = [f"  ERROR   {stopped}"] if stopped else []
    lines += [f"  RELEASE {mismatch}"] if mismatch else []
    for r in found:
        what = f"{r.name} ({_points(r.points)})" if r.kind in ("test", "manual") else r.name
        if r.status == "PASS":
            lines.append(f"  PASS    {what}")
        elif r.status == "FORM":
            lines.append(f"  FORM    {what}: {FORM}")
        elif r.status not in ("OK", "HAND"):  # a written answer graded by hand: in the summary below
            lines.append(f"  {r.status:7s} {what}, in {r.where}:")
            message = {"TODO": "still holds its stub: write your answer here",
                       "SKIPPED": f"not run ({r.skipped})" + ("" if r.skipped == STOPPED else f"; {command} runs it"),
                       }.get(r.status, r.error or "")
            lines += ["          " + line for line in message.splitlines()]
    auto = sum(r.points for r in tests)
    by_hand = sum(r.points for r in manual)
    cells = f"{len(tests)} test cell{'' if len(tests) == 1 else 's'}"
    lines.append(f"This notebook is worth {auto + by_hand:g} points: {auto:g} autograded in {cells}, "
                 f"{by_hand:g} graded by hand.")
    lines.append(f"  Autograded: the visible checks of {len(passed)} of {len(tests)} test cells pass "
                 f"({sum(r.points for r in passed):g} of {auto:g} points)"
                 + (f", {len(formed)} of them ({_points(sum(r.points for r in formed))}) by the answer's form only"
                    if formed else "")
                 + (f"; {len(skipped)} did not run ({sum(r.points for r in skipped):g} points)" if skipped else "")
                 + ". Every test cell also has hidden checks, which run only when your notebook is graded "
                 "(other inputs, against the reference): this is not a predicted grade.")
    if manual:
        lines.append("  Graded by hand, not checked here: "
                     + "; ".join(f"{r.name} ({_points(r.points)}, in {r.where})" for r in manual) + ".")
    if not tests:
        lines.append("This notebook has no visible tests: is it a chapter notebook of the course?")
    ok = bool(tests) and len(passed) == len(tests) and not stopped and not mismatch and \
        not any(r.status in ("ERROR", "TODO") for r in found)
    if mismatch and not ok:
        lines.append("Not ready: the visible checks above are not those of this notebook's release (see RELEASE).")
    elif ok:
        lines.append("Ready to submit: every visible check ran and passed. Keep the file name.")
    elif skipped and not stopped and not any(r.status in ("ERROR", "TODO", "FAIL") for r in found):
        lines.append(f"Not ready: {len(skipped)} visible check{'s' if len(skipped) > 1 else ''} did not run; "
                     f"{command} runs every one.")
    else:
        lines.append("Not ready: fix the cells above, then run this again.")
    return "\n".join(lines), ok


def main(argv: list[str] | None = None) -> int:
    """`python -m attnlab.validate NOTEBOOK.ipynb [...]`."""
    parser = argparse.ArgumentParser(prog="python -m attnlab.validate", description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", type=Path, metavar="NOTEBOOK.ipynb")
    parser.add_argument("--timeout", type=int, default=CELL_TIMEOUT,
                        help=f"seconds a cell may run (default {CELL_TIMEOUT}, the grader's limit)")
    parser.add_argument("--demos", action="store_true",
                        help="also run the long demonstrations that the grader skips")
    parser.add_argument("--quick", action="store_true",
                        help="skip the slow visible checks (each is reported SKIPPED, and the notebook is not "
                             "reported ready)")
    args = parser.parse_args(argv)
    status = 0
    for path in args.notebooks:
        if not path.is_file() or path.suffix != ".ipynb":
            print(f"{path}: not a notebook file (.ipynb)", file=sys.stderr)
            return 2
        print(f"Validating {path.name}: running it top to bottom in a fresh kernel"
              + ("" if args.demos else " (long demonstrations skipped, as when graded)")
              + (", slow visible checks skipped (--quick)" if args.quick else "") + " ...", flush=True)
        start = time.perf_counter()
        try:
            executed, stopped = execute(path, args.timeout, args.demos, args.quick)
        except Exception as exc:  # noqa: BLE001 - an unreadable notebook or a kernel that cannot start
            print(f"{path}: could not be run: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 2
        text, ok = summary(report(executed, args.timeout), f"python -m attnlab.validate {path.name}", stopped,
                           release.mismatch(json.loads(path.read_text(encoding="utf-8"))))
        print(text)
        print(f"({time.perf_counter() - start:.0f} s)")
        status = status or (0 if ok else 1)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
