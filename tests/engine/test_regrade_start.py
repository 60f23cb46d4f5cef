"""A single regrade's start (issue 25.10): what each process does before the notebook runs.

`benchmarks/bench_regrade.py` measures the command; these tests hold the choices it measured: the zygote of a
one-notebook run warms only what every notebook uses, the book's own dispatch modes never import torch._dynamo,
matplotlib's font list comes with the venv, the command starts its sandboxes before it imports nbformat, and
`autograder` ends without tearing its interpreter down but after every exit handler.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from autograder.engine.inside import zygote

ROOT = Path(__file__).resolve().parents[2]
INSIDE = ROOT / "autograder" / "engine"

WARM = """
import sys
sys.path.insert(0, {inside!r})
from inside import zygote
zygote.warm_up()
one = zygote.exercise(many=False)
print("ONE", sorted(one["exercise_seconds"]), one["exercise_failures"], "torch._dynamo" in sys.modules)
many = zygote.exercise(many=True)
print("MANY", sorted(many["exercise_seconds"]), many["exercise_failures"], "torch._dynamo" in sys.modules)
"""


def test_a_one_notebook_warm_up_leaves_torch_dynamo_to_the_notebook() -> None:
    """exercise(many=False) runs the profiler, the kernel watch and attention without importing torch._dynamo
    (the book's dispatch modes opt out of its wrapper: 0.5-0.7 s of a single regrade's start); many=True adds it
    and the figure, for the zygote that forks many notebooks."""
    out = subprocess.run([sys.executable, "-c", WARM.format(inside=str(INSIDE))], capture_output=True, text=True,
                         cwd="/", timeout=600)
    lines = {line.split(" ", 1)[0]: line for line in out.stdout.splitlines()}
    assert lines.get("ONE") == "ONE ['kernels', 'sympy'] {} False", out.stdout + out.stderr[-2000:]
    assert lines.get("MANY") == "MANY ['dynamo', 'figure', 'kernels', 'sympy'] {} True", out.stdout + out.stderr[-2000:]


def test_the_font_list_is_copied_into_an_empty_cache(tmp_path, monkeypatch) -> None:
    """The sandbox's matplotlib cache starts empty: the venv's font list goes in; no list, nothing copied."""
    built, cache = tmp_path / "venv-share", tmp_path / "home" / "matplotlib"
    built.mkdir()
    monkeypatch.setenv("MPLCONFIGDIR", str(cache))
    monkeypatch.setattr(zygote, "FONT_LISTS", str(built))
    assert zygote.font_list() is False and not cache.exists()
    (built / "fontlist-v1.json").write_text('{"_version": 1}')
    (built / "notes.txt").write_text("not a font list")
    assert zygote.font_list() is True
    assert sorted(p.name for p in cache.iterdir()) == ["fontlist-v1.json"]
    assert (cache / "fontlist-v1.json").read_text() == '{"_version": 1}'


def test_the_venv_holds_matplotlibs_font_list() -> None:
    """scripts/venv.sh builds it once; the zygote finds it where it looks (sys.prefix: the venv)."""
    found = sorted(Path(zygote.FONT_LISTS).glob("fontlist-*.json"))
    assert found, f"no font list in {zygote.FONT_LISTS}: `source scripts/venv.sh` builds it"
    assert found[0].stat().st_size > 1000


def test_a_command_starts_its_sandboxes_before_it_imports_nbformat() -> None:
    """The CLI and the engine's scheduler import neither nbformat (and jsonschema, 0.1-0.2 s) nor nbgrader: a
    grading run spawns its workers first and imports them while the sandboxes start."""
    code = ("import sys, autograder.cli, autograder.engine.scheduler, autograder.engine.assess; "
            "print('HEAVY', sorted({m.split('.')[0] for m in sys.modules} & {'nbformat', 'nbgrader', 'jsonschema'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert "HEAVY []" in out.stdout, out.stdout + out.stderr[-2000:]


RUN = """
import atexit, sys, threading, time
from autograder import cli
atexit.register(lambda: print("exit handler ran", flush=False))
if {thread!r}:
    threading.Thread(target=lambda: (time.sleep(0.5), print("thread finished"))).start()
sys.argv = ["autograder", "gradebook", "--course", {course!r}]
cli.run()
"""


@pytest.mark.parametrize("thread", [False, True])
def test_the_command_ends_after_its_exit_handlers_with_mains_status(tmp_path, thread) -> None:
    """`autograder` (cli.run) leaves with main()'s status, after every exit handler and with its output flushed;
    a non-daemon thread still running is waited for, as a normal exit does."""
    code = RUN.format(thread=thread, course=str(tmp_path / "no-course"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "no course at" in out.stderr and "exit handler ran" in out.stdout
    assert ("thread finished" in out.stdout) == thread


def test_meanwhile_runs_once_and_never_fails_the_run(tmp_path) -> None:
    """The caller's preparation runs once while the workers start; an error in it is left to the step it
    prepares (the run goes on)."""
    from autograder.engine.scheduler import Engine

    calls = []

    def prepare() -> None:
        calls.append(1)
        raise RuntimeError("a template does not compile")

    engine = Engine.__new__(Engine)
    engine.meanwhile = prepare
    engine._while_workers_start()
    engine._while_workers_start()
    assert calls == [1]


def test_the_command_turns_the_collector_back_on_while_the_sandboxes_start(tmp_path, monkeypatch) -> None:
    """`autograder grade` imports with the collector off; the preparation the engine calls turns it back on,
    even when warming the feedback pages fails, and warms them only where a page exists to be written again."""
    import gc

    from autograder import feedback
    from autograder.course import Course

    warmed = []

    def warm() -> None:
        warmed.append(1)
        raise RuntimeError("a template does not compile")

    monkeypatch.setattr(feedback, "warm", warm)
    course = Course(tmp_path)
    page = tmp_path / "feedback" / "ada" / "ch1" / "ch1_parallel_time.html"
    page.parent.mkdir(parents=True)
    page.write_text("<html></html>")
    assert gc.isenabled()
    try:
        gc.disable()
        with pytest.raises(RuntimeError):
            course._while_sandboxes_start("ada", None)()
        assert gc.isenabled() and warmed == [1]
        course._while_sandboxes_start("grace", "ch1")()  # no page of hers: nothing to warm
        assert gc.isenabled() and warmed == [1]
    finally:
        gc.enable()
        gc.unfreeze()
