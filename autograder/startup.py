"""How a command starts and ends quickly: the layers of `autograder`, its lazy imports, and the three tunings.

The layers, bottom to top, are `LAYERS` below: a module imports only its own layer and those below
(tests/test_layering.py checks it, and fails on any import circle between modules).

`autograder grade` starts its sandboxes (workers that fork a warmed-up zygote, and the judge) before
it reads the gradebook, and this process prepares what it writes afterwards while they start. So
what a command imports before that start delays every grading run: nbgrader (with SQLAlchemy and
nbconvert), nbformat (with jsonschema), jinja2, matplotlib and torch are imported inside the
functions that use them, as are the writers from the facade and the command line. Every import
written inside a function names a module in `LAZY_MODULES` or sits in a module of
`LAZY_IMPORTERS`, each with its reason; every other import is at module level (the test checks both).

The three tunings of a command's start and end, each measured by benchmarks/bench_regrade.py
(figures in benchmarks/startup.md, not here: they go stale):

1. `collector_off()`: `autograder grade` imports with the garbage collector off (a full collection
   walked the growing heap again and again); `collector_on()` freezes what the imports built out of
   its reach and turns it on, once the sandboxes are starting (`Course._while_sandboxes_start`).
2. `meanwhile`: `autograder.engine.grade` calls the caller's preparation once while the sandboxes
   start (the feedback templates, and `collector_on`), in time this process would spend waiting.
3. `exit_now()`: the command ends with `os._exit` after the exit handlers and a flush, without
   freeing the some 1300 modules it imported one by one.
"""
from __future__ import annotations

import atexit
import gc
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# autograder's modules and sub-packages, bottom to top: (names, what they are)
LAYERS: list[tuple[set[str], str]] = [
    ({"errors", "startup", "tables", "kit", "stock", "courselock"}, "the error family, this module, plain helpers, "
                                                                    "the course's lock"),
    ({"config", "notebook_guard"}, "the one reader of nbgrader_config.py; the one guard of a notebook's bytes"),
    ({"gradebook", "late", "gradinglog"}, "the one module that opens nbgrader's gradebook; the late policy alone; "
                                          "the grading logs"),
    ({"collect", "checks", "equation_judge", "judge", "engine", "record"}, "placing uploads; the checks; grading "
                                                                          "them; the course's record"),
    ({"grades", "limits"}, "the read model (and the late penalties, which it derives); every limit"),
    ({"pages", "export", "feedback", "report", "similarity", "manual", "handback", "record.roster"},
     "the writers (the roster reads and writes the LMS's CSV)"),
    ({"course", "example_class"}, "the `Course` facade (and the example class it grades)"),
    ({"cli", "__main__", "service"}, "the command line, the submission service"),
]
# third-party modules imported inside functions only, and why
LAZY_MODULES: dict[str, str] = {
    "nbgrader": "imports SQLAlchemy, nbconvert and traitlets' apps: after the sandboxes start",
    "traitlets": "nbgrader's configuration loader: only where nbgrader_config.py is read or an app made",
    "sqlalchemy": "nbgrader's database layer: the gradebook's bulk updates, where nbgrader is imported",
    "nbformat": "imports jsonschema: where a notebook is read or written, after the sandboxes start",
    "matplotlib": "the report's plots; in the sandbox, the zygote's warm-up",
    "torch": "the judge's and the zygote's, in their own processes",
    "sympy": "the zygote's warm-up",
    "numpy": "similarity's matrix only",
    "copydetect": "similarity only",
    "jinja2": "pages are rendered by the writers only",
    "nh3": "pages' allowlist, by the writers only",
    "uvicorn": "the submission service's server, only when it serves",
    "markdown_it": "pages' markdown, by the writers only",
    "mdit_py_plugins": "pages' markdown, by the writers only",
    "latex2mathml": "pages' math, by the writers only",
    "pygments": "pages' code, by the writers only",
    "dask": "optional: a Dask cluster runs the notebooks only when asked (--scheduler)",
    "pyseccomp": "optional: the seccomp filter is built in the worker, where libseccomp is present",
    "tqdm": "the progress bar, once there is a run to show",
    "zoneinfo": "reads the system's zone database: only for a course with due dates",
    "multiprocessing": "Course.bounded's fork only: `grade` starts its sandboxes without it",
}
# project modules whose imports of other project modules are written inside functions, and why
LAZY_IMPORTERS: dict[str, str] = {
    "autograder.cli": "each command imports the writers it prints: `grade` imports none of them",
    "autograder.course": "each step imports its modules: `grade` starts the sandboxes before the read model, "
                         "collect and the writers are imported",
    "autograder.feedback": "the checks (torch) are read for a hint only when a page names a hidden check",
    "autograder.engine": "the package the worker processes import first: the scheduler only in the instructor's",
    "autograder.engine.scheduler": "the Dask pool only when a cluster is asked for",
    "autograder.engine.distributed": "the worker pool's pieces, inside Dask's worker process",
    "autograder.engine.judging": "the judge process imports the checks and torch after it forks, not the caller",
    "autograder.engine.sandbox": "the student kit's path is found only when a plan is made",
    "autograder.engine.inside.zygote": "the kit (attnlab) is imported inside the sandbox, after the warm-up's order",
    "autograder.judge": "the symbolic and equation judges only for the questions that need them",
    "autograder.checks.base": "the kit's grading and equations, in the judge process only",
    "autograder.example_class": "the mistakes (torch, the chapters' solutions) only when a class is built",
    "autograder.limits": "collect (for its Caps) only when they are asked for: `grade` reads its limits first",
}


@contextmanager
def collector_off() -> Iterator[None]:
    """The imports of a grading run without the garbage collector (`collector_on` turns it back on sooner)."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def collector_on() -> None:
    """What the imports built frozen out of the collector's reach, and the collector on (if `collector_off` had
    turned it off)."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def exit_now(code: int) -> None:
    """End the process with `code` after the exit handlers and a flush of both streams, without tearing the
    interpreter down; with a non-daemon thread still running, the usual exit, which waits for it."""
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (`autograder gradebook | head`): nothing more to say
            pass
    os._exit(int(code or 0))
