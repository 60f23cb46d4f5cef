"""The command line's contract (issues 31.4, 33.6): one error family caught once, the limits in one place,
one writing command at a time, honest signals (Ctrl-C, option prefixes, usage, quiet, version).

Cheap: no notebook is graded here (the engine is replaced where a run would start it)."""
from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import autograder
from autograder import cli, config, course, limits
from autograder.errors import AutograderError


def make_course(root: Path, extra: str = "") -> Path:
    """A course directory with only its nbgrader_config.py (and `extra` lines appended)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / config.CONFIG_NAME).write_text(course.config_text() + extra)
    return root


def run(capsys, *argv: object) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# ----------------------------------------------------------------------------- one error family


def _autograder_modules() -> list[str]:
    """Every module of autograder except the code that runs inside the sandbox (autograder.errors says why)."""
    return [m.name for m in pkgutil.walk_packages(autograder.__path__, "autograder.")
            if not m.name.startswith("autograder.engine.inside") and m.name != "autograder.__main__"]


def test_every_exception_class_of_autograder_is_an_autograder_error() -> None:
    found, wrong = [], []
    for name in _autograder_modules():
        module = importlib.import_module(name)
        for cls in vars(module).values():
            if inspect.isclass(cls) and cls.__module__ == name and issubclass(cls, BaseException):
                found.append(cls.__qualname__)
                if not issubclass(cls, AutograderError):
                    wrong.append(f"{name}.{cls.__qualname__}")
    assert not wrong, wrong
    assert len(found) >= 15, found  # CourseError, ConfigError, CollectError, EngineError, ...


def test_the_command_line_catches_one_error_type() -> None:
    """`cli.main` names AutograderError and nothing else of the project in its handlers."""
    import ast

    tree = ast.parse(inspect.getsource(cli.main))
    caught = [ast.unparse(h.type) for h in ast.walk(tree) if isinstance(h, ast.ExceptHandler) and h.type is not None]
    project = [c for c in caught if c not in ("SystemExit", "KeyboardInterrupt", "BrokenPipeError")]
    assert project == ["AutograderError"], caught


def test_an_error_prints_its_message_and_remedy_on_one_line(capsys, tmp_path, monkeypatch) -> None:
    def fail(args):
        raise course.CourseError("the course is on fire", "call the fire brigade")

    monkeypatch.setattr(cli, "cmd_gradebook", fail)
    code, _, err = run(capsys, "gradebook", "--course", tmp_path)
    assert code == cli.EXIT_FAILED
    assert err == "autograder gradebook: error: the course is on fire; to fix: call the fire brigade\n"


# ----------------------------------------------------------------------------- limits


def test_limits_come_from_the_defaults_the_config_and_the_command_line(tmp_path) -> None:
    root = make_course(tmp_path / "c", "c.Limits.cell_seconds = 30\nc.Caps.members = 10\nc.StepLimits.seconds = 5\n")
    got = limits.load(root)
    assert (got.engine.cell_seconds, got.caps.members, got.steps.seconds) == (30.0, 10, 5.0)
    assert got.set_by["Limits.cell_seconds"] == limits.FROM_CONFIG
    assert got.engine.memory_mb == limits.Limits().memory_mb and "Limits.memory_mb" not in got.set_by
    over = limits.load(root, ["cell_seconds=7", "Caps.member_bytes=1000", "network=true"])
    assert (over.engine.cell_seconds, over.caps.member_bytes, over.engine.network) == (7.0, 1000, True)
    assert over.set_by["Limits.cell_seconds"] == limits.FROM_COMMAND
    assert course.Course(root).limits.seconds == 5.0  # a step's limits are the course's
    plain = limits.load(make_course(tmp_path / "p"))  # nbgrader's own cell timeout, where no limit is set
    assert plain.engine.cell_seconds == 120.0 and plain.set_by["Limits.cell_seconds"] == limits.FROM_EXECUTE


@pytest.mark.parametrize(("extra", "override", "words"), [
    ("c.Limits.cell_seconds = float('nan')\n", (), "Limits.cell_seconds"),
    ("c.Limits.cell_seconds = -1\n", (), "more than 0"),
    ("c.Caps.members = 2.5\n", (), "whole number"),
    ("c.Limits.no_such_limit = 1\n", (), "no_such_limit"),
    ("", ("memory_mb=1",), "Limits.memory_mb"),  # two sections have it: say which
    ("", ("cell_seconds",), "NAME=VALUE"),
    ("", ("cell_seconds=inf",), "Limits.cell_seconds"),
])
def test_a_bad_limit_is_a_config_error_naming_it(tmp_path, extra, override, words) -> None:
    root = make_course(tmp_path / "c", extra)
    with pytest.raises(config.ConfigError, match=words.replace(".", r"\.")):
        limits.load(root, override)


def test_grade_and_collect_pass_the_course_limits_on(tmp_path, monkeypatch) -> None:
    """Course.grade hands the engine the course's Limits, Course.collect hands collect its Caps."""
    from autograder import engine

    root = make_course(tmp_path / "c", "c.Limits.cell_seconds = 33\nc.Caps.members = 9\n")
    (root / "submitted" / "ada" / "ch1").mkdir(parents=True)
    seen = {}

    class Stop(Exception):
        pass

    def fake_grade(course_dir, **options):
        seen["grade"] = options["limits"]
        raise Stop

    monkeypatch.setattr(engine, "grade", fake_grade)
    with pytest.raises(Stop):
        course.Course(root, overrides=["notebook_seconds=44"]).grade()
    assert (seen["grade"].cell_seconds, seen["grade"].notebook_seconds) == (33.0, 44.0)

    def fake_bounded(self, step, fn, *args, **kwargs):
        seen["caps"] = kwargs["caps"]
        raise Stop

    monkeypatch.setattr(course.Course, "bounded", fake_bounded)
    with pytest.raises(Stop):
        course.Course(root).collect([tmp_path])
    assert seen["caps"].members == 9


def test_the_limits_command_shows_each_limit_and_where_it_was_set(capsys, tmp_path) -> None:
    root = make_course(tmp_path / "c", "c.Caps.members = 10\n")
    code, out, _ = run(capsys, "limits", "--course", root, "--limit", "cell_seconds=9")
    assert code == 0
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[2:] if line.strip()}
    assert rows["Caps.members"] == ["10", "100000", config.CONFIG_NAME]
    assert rows["Limits.cell_seconds"] == ["9", "60", "command", "line"]
    assert rows["StepLimits.memory_mb"] == ["2048", "2048", "default"]
    assert set(rows) >= {f"Limits.{n}" for n in limits.Limits().to_dict()}
    code, _, err = run(capsys, "limits", "--course", root, "--limit", "cell_seconds=-3")
    assert code == cli.EXIT_FAILED and err.count("\n") == 1 and "more than 0" in err


def test_the_runtime_dependencies_leave_the_test_tools_to_an_extra() -> None:
    import tomllib

    meta = tomllib.loads((Path(autograder.__file__).parents[1] / "pyproject.toml").read_text())["project"]
    runtime = " ".join(meta["dependencies"])
    tools = ("pytest", "pytest-xdist", "nbval", "selenium", "ruff")
    assert not [t for t in tools if t in runtime.split() or f'"{t}' in runtime or t in meta["dependencies"]], runtime
    assert set(tools) <= set(meta["optional-dependencies"]["test"])
    for needed in ("nbgrader", "nbformat", "jinja2", "copydetect", "pyseccomp", "jupyter-book<2"):
        assert needed in meta["dependencies"], f"the instructor's tools need {needed}"


# ----------------------------------------------------------------------------- one command at a time (33.6)

HOLD_A_GRADE = r"""
import sys, time
import autograder.engine as engine
def grading(*args, **kwargs):  # the run's work, held open until the test ends it
    print("grading", flush=True)
    time.sleep(300)
engine.grade = grading
from autograder import cli
sys.exit(cli.main(["grade", "--course", sys.argv[1], "-q"]))
"""


def _line(proc, seconds: float = 300.0) -> str:
    """The next line the process prints (a bounded wait)."""
    import select

    ready, _, _ = select.select([proc.stdout], [], [], seconds)
    return proc.stdout.readline() if ready else ""


def test_a_second_grade_is_refused_while_one_runs(capsys, tmp_path, monkeypatch) -> None:
    import subprocess
    import sys

    from autograder import courselock, engine

    root = make_course(tmp_path / "c")
    (root / "submitted" / "ada" / "ch1").mkdir(parents=True)
    monkeypatch.setattr(engine, "grade", lambda *a, **k: pytest.fail("the second grade ran"))
    first = subprocess.Popen([sys.executable, "-c", HOLD_A_GRADE, str(root)], stdout=subprocess.PIPE, text=True)
    try:
        assert _line(first) == "grading\n"
        code, _, err = run(capsys, "grade", "--course", root)
        assert code == cli.EXIT_FAILED and err.count("\n") == 1, err
        assert f"`autograder grade` (pid {first.pid}) has held it since" in err and "busy" in err, err
        code, _, err = run(capsys, "collect", "--course", root, tmp_path)  # every writing command waits its turn
        assert code == cli.EXIT_FAILED and "busy" in err, err
        code, out, err = run(capsys, "limits", "--course", root)  # reading takes no lock
        assert code == 0, err
    finally:
        first.kill()
        first.wait(60)
    with courselock.hold(root, "grade"):  # the kernel let go of the lock with the process
        assert courselock.holder(root)["pid"] == __import__("os").getpid()


def test_the_lock_is_reentrant_within_a_process_and_dropped_after(tmp_path) -> None:
    from autograder import courselock

    with courselock.hold(tmp_path, "grade"), courselock.hold(tmp_path, "feedback"):
        assert courselock.holder(tmp_path)["command"] == "grade"
    assert courselock.holder(tmp_path) == {}


# ----------------------------------------------------------------------------- honest signals (33.6)

INTERRUPTED = r"""
import time
from autograder.engine.judging import JudgeClient
judge = JudgeClient()
judge.start()
try:  # the line inside the try: a Ctrl-C that comes as soon as the test reads it is handled too
    print("started", judge.proc.pid, flush=True)
    time.sleep(300)
except KeyboardInterrupt:  # hang up, and let the judge end on its own: whatever it prints, the test sees
    judge.sock.close()
    judge.proc.wait(240)
    print("interrupted", flush=True)
"""


def _as_a_terminal_starts_it() -> None:
    """SIGINT at its default and unblocked in the child, as a shell starts a command: both are inherited across
    exec, and a pytest worker's may not be (in two full lanes the grader slept its 300 s through the Ctrl-C)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_ctrl_c_reaches_the_grader_alone_and_leaves_no_traceback() -> None:
    """Ctrl-C is SIGINT to the terminal's process group: the judge (which imports torch at its start) is in a
    group of its own, so only the grader hears it and ends the judge; nothing prints a KeyboardInterrupt (in a
    shared group the judge printed its own traceback)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    inherited = f"this worker's SIGINT: {signal.getsignal(signal.SIGINT)}, blocked: {signal.pthread_sigmask(signal.SIG_BLOCK, [])}"
    grader = subprocess.Popen([sys.executable, "-c", INTERRUPTED], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, start_new_session=True, preexec_fn=_as_a_terminal_starts_it)
    try:
        words = _line(grader).split()
        assert words[:1] == ["started"], grader.stderr.read()
        judge = int(words[1])
        apart = os.getpgid(judge) != os.getpgid(grader.pid)
        time.sleep(1.0)  # the judge is importing its checks
        os.killpg(grader.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
        out, err = grader.communicate(timeout=90)
    finally:
        if grader.poll() is None:
            os.killpg(grader.pid, signal.SIGKILL)
            grader.wait(60)
    assert "interrupted" in out, f"{inherited}\n{err}"
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert apart


def test_ctrl_c_is_one_line(capsys, tmp_path, monkeypatch) -> None:
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_gradebook", interrupted)
    code, _, err = run(capsys, "gradebook", "--course", tmp_path)
    assert code == 130 and err.count("\n") == 1 and "interrupted" in err and "Traceback" not in err


def test_option_prefixes_are_refused(capsys, tmp_path) -> None:
    """`--f` is not `--force`: every parser refuses abbreviations."""
    code, _, err = run(capsys, "grade", "--course", tmp_path, "--f")
    assert code == cli.EXIT_USAGE and "unrecognized arguments: --f" in err, err
    code, _, err = run(capsys, "export", "--course", tmp_path, "--form", "csv", "-o", tmp_path / "x.csv")
    assert code == cli.EXIT_USAGE and "--form" in err, err
    top = cli.parser()
    assert not top.allow_abbrev and not [k for k, p in top.subcommands.items() if p.allow_abbrev]


@pytest.mark.parametrize(("argv", "usage"), [
    (["grade", "--studnet", "ada"], "usage: autograder grade "),
    (["manual", "import", "f.csv", "--forse"], "usage: autograder manual import "),
    (["collect", "src", "--paterns", "x"], "usage: autograder collect "),
])
def test_a_mistyped_option_prints_the_subcommands_usage(capsys, argv, usage) -> None:
    code, _, err = run(capsys, *argv)
    assert code == cli.EXIT_USAGE and err.startswith(usage), err


def test_grade_quiet_prints_the_summary_and_not_the_gradebook(capsys, tmp_path, monkeypatch) -> None:
    from types import SimpleNamespace

    summary = SimpleNamespace(graded=1, skipped=0, failed=0, seconds=1.0, throughput=1.0, workers=1,
                              worker_start_s=None, per_notebook_overhead_s=None)
    monkeypatch.setattr(course.Course, "grade", lambda self, *a, **k: course.Graded(summary))
    shown = []
    monkeypatch.setattr(cli, "cmd_gradebook", lambda args: shown.append(args) or 0)
    code, out, _ = run(capsys, "grade", "--course", make_course(tmp_path / "c"), "-q")
    assert code == 0 and out.startswith("graded 1 notebook(s)") and not shown, out
    code, out, _ = run(capsys, "grade", "--course", tmp_path / "c")
    assert code == 0 and len(shown) == 1


def test_version(capsys) -> None:
    from importlib import metadata

    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"autograder {metadata.version('attention-problem-book')}"


def test_the_gradebook_before_any_grading_shows_what_collect_could_not_place(capsys, tmp_path) -> None:
    root = make_course(tmp_path / "c")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "mystery.ipynb").write_text('{"cells": []}')
    code, _, _ = run(capsys, "collect", "--course", root, tmp_path / "src")
    assert code == cli.EXIT_FAILED  # it placed nothing
    code, out, err = run(capsys, "gradebook", "--course", root)
    assert code == 0, err
    assert "src/mystery.ipynb" in out and "not placed" in out and "nothing graded yet" in out
