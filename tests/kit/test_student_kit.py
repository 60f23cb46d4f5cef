"""The student's side: the release zip, the kit's packaging, and `python -m attnlab.validate`.

The slow test does what a new student does on a clean laptop, from the zip the instructor
uploads (`autograder release`): unzip, make a fresh virtual environment, install the kit with
the README's one command, and run a chapter's visible tests with `attnlab.validate`.
"""
from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import nbformat
import pytest

from attnlab import validate
from autograder import cli
from autograder import kit as release_kit
from coursenb import cells
from coursenb.chapters import ROOT, select
from publish import audit, leaks

KIT = ROOT / "attnlab"
CHAPTER = "ch3"  # the chapter the clean install runs: tensors, a symbolic equation, a plot; no training
INSTALL = "pip install ./attnlab --extra-index-url https://download.pytorch.org/whl/cpu"


def _bash_blocks(markdown: str) -> list[str]:
    return [line.strip() for block in re.findall(r"```bash\n(.*?)```", markdown, re.S) for line in block.splitlines()
            if line.strip() and not line.strip().startswith("#")]


# ---------------------------------------------------------------- fast: packaging and the zip


def test_the_kit_packages_every_subpackage() -> None:
    meta = tomllib.loads((KIT / "pyproject.toml").read_text())
    listed = set(meta["tool"]["setuptools"]["packages"])
    found = {"attnlab" + ("." + ".".join(p.parent.relative_to(KIT).parts) if p.parent != KIT else "")
             for p in KIT.rglob("__init__.py") if not {"build", "__pycache__"} & set(p.parts)}
    assert listed == found, f"attnlab/pyproject.toml lists {sorted(listed)}, the folder has {sorted(found)}"
    deps = " ".join(meta["project"]["dependencies"])
    for needed in ("torch==2.13.0", "tqdm", "jupyterlab", "ipywidgets", "nbclient", "ipykernel", "sympy", "matplotlib"):
        assert needed in deps, f"the kit does not install {needed}"


def test_the_readme_and_the_students_page_give_the_same_commands() -> None:
    readme = _bash_blocks((KIT / "README.md").read_text())
    page = _bash_blocks((ROOT / "front" / "students.md").read_text())
    assert INSTALL in readme and "python -m attnlab.validate ch1_parallel_time.ipynb" in readme
    assert readme == page, "attnlab/README.md (the zip's README) and front/students.md must give the same commands"


def _install_costs(markdown: str) -> str:
    """The paragraphs on what installing costs and where PyTorch has wheels, as one line."""
    found = re.search(r"The one `pip install` brings.*?on an Intel Mac\.", markdown, re.S)
    assert found, "no paragraph on what installing costs"
    return " ".join(found.group(0).split())


def test_the_readme_and_the_students_page_state_the_same_install_costs() -> None:
    readme = _install_costs((KIT / "README.md").read_text())
    assert readme == _install_costs((ROOT / "front" / "students.md").read_text())
    assert "torch==2.13.0" in (KIT / "pyproject.toml").read_text() and "PyTorch 2.13.0" in readme
    assert "200 MB" not in readme and "GB on disk" in readme  # measured by benchmarks/bench_install.py


@pytest.fixture
def notebook(tmp_path: Path) -> Path:
    nb = cells.release(select([CHAPTER])[0].read())
    path = tmp_path / f"{select([CHAPTER])[0].notebook}.ipynb"
    nbformat.write(nb, str(path))
    return path


def test_the_release_zip_ships_notebooks_the_kit_source_and_a_readme(notebook: Path, tmp_path: Path,
                                                                      monkeypatch) -> None:
    root = tmp_path / "repo"
    shutil.copytree(KIT, root / "attnlab", ignore=shutil.ignore_patterns("__pycache__"))
    for stray in ("build/lib/attnlab/grading.py", "attnlab.egg-info/SOURCES.txt", ".ipynb_checkpoints/x.py"):
        (root / "attnlab" / stray).parent.mkdir(parents=True, exist_ok=True)  # what pip and Jupyter leave behind
        (root / "attnlab" / stray).write_text("x = 1\n")
    monkeypatch.setattr(release_kit, "ROOT", root)
    first = release_kit.write_release_zip([notebook], tmp_path / "a.zip")
    with zipfile.ZipFile(first) as zf:
        names = set(zf.namelist())
        readme = zf.read("README.md").decode()
    assert notebook.name in names and "README.md" in names
    assert {f"attnlab/{rel}" for rel in release_kit.kit_files(KIT)} == names - {notebook.name, "README.md"}
    assert {"attnlab/pyproject.toml", "attnlab/README.md", "attnlab/validate.py"} <= names
    assert not [n for n in names if "egg-info" in n or "/build/" in n or n.endswith(".pyc")]
    assert INSTALL in readme and f"python -m attnlab.validate {notebook.name}" in readme
    assert f"jupyter lab {notebook.name}" in readme and "ch1_parallel_time" not in readme
    second = release_kit.write_release_zip([notebook], tmp_path / "b.zip")
    assert first.read_bytes() == second.read_bytes(), "the same release gives the same bytes"


def test_the_kit_holds_no_solution() -> None:
    """No solution line, worked solution or solution einsum of any chapter is in the kit as shipped (the
    kit defines `hidden_check` and documents its one-line call: hidden-test lines are left out)."""
    text = audit.kit_text()
    sources = {c.assignment: c.read() for c in select()}
    for chapter, source in sources.items():
        shown = [s for s in audit.secrets(source, public="", hidden=False) if s in text]
        assert not shown, f"the kit holds {chapter}'s solution lines: {shown[:5]}"
    kit = [doc for rel in release_kit.kit_files(KIT) for doc in leaks.file_docs(KIT / rel, f"attnlab/{rel}")]
    secret_calls = {c for ch, nb in sources.items() for s in leaks.solutions_of(nb, ch) for c in s.calls
                    if c.startswith("einsum")}
    used = set().union(*(leaks.call_signatures(d.text) for d in kit if d.kind == "code"))
    assert not secret_calls & used, f"the kit computes what a solution computes: {sorted(secret_calls & used)}"


def _worth(text: str) -> tuple[float, float, float]:
    """(total, autograded, by hand) from validate's summary."""
    found = re.search(r"worth ([\d.]+) points: ([\d.]+) autograded in \d+ test cells?, ([\d.]+) graded by hand", text)
    assert found, text
    return tuple(float(x) for x in found.groups())


@pytest.mark.parametrize("chapter", [c.assignment for c in select()])
def test_validate_counts_what_each_chapter_is_worth(chapter: str) -> None:
    """Untouched and solved, every chapter's summary adds up to its points and names each question graded by
    hand with its points; the solved one counts every autograded point as passing its visible checks, and says
    that this is not a predicted grade (the hidden checks run only when graded)."""
    source = select([chapter])[0].read()
    total = sum(cells.points(c) for c in source.cells)
    manual = {cells.grade_id(c): cells.points(c) for c in source.cells if cells.is_manual(c)}
    auto = total - sum(manual.values())
    release = cells.release(source)
    for nb, ready in ((release, False), (_filled(release, source), True)):
        text, ok = validate.summary(validate.report(nb, executed=False))
        assert ok == ready and ("Ready to submit" in text) == ready, text
        assert _worth(text) == (total, auto, sum(manual.values())), text
        if ready:  # (the untouched release did not run: its test cells have no error to report)
            assert sum(float(p) for p in re.findall(r"^\s+(?:PASS|FORM)\s+\S+ \(([\d.]+) points?\)", text, re.M)) == auto
            assert f"pass ({auto:g} of {auto:g} points)" in text, text
        for name, points in manual.items():
            assert re.search(rf"Graded by hand, not checked here: .*{name} \({points:g} points?, in section", text), text
        assert "hidden checks, which run only when your notebook is graded" in text and "not a predicted grade" in text


def _executed(*outputs: list) -> nbformat.NotebookNode:
    """A notebook of one section whose test cells ran with these outputs."""
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("## 4.4 Training")] + [
        nbformat.v4.new_code_cell(f"check_{i}()", outputs=out, execution_count=i + 1,
                                  metadata=_meta(grade=True, locked=True, points=3, grade_id=f"test_{i}"))
        for i, out in enumerate(outputs)])


def test_a_visible_check_that_did_not_run_is_skipped_never_passed() -> None:
    skip = nbformat.v4.new_output("stream", name="stdout", text=f"{validate.SKIPPED_MARK} it trains, 20 s\n")
    error = nbformat.v4.new_output("error", ename="Explained", traceback=[],
                                   evalue="0.765 nats above the optimum:\n  Does your head use both states?")
    found = validate.report(_executed([skip], [skip, error], []))
    assert [r.status for r in found] == ["SKIPPED", "FAIL", "PASS"]
    text, ok = validate.summary(found, "python -m attnlab.validate ch4_blank_lm.ipynb")
    assert not ok and "Ready to submit" not in text and "PASS    test_0" not in text, text
    assert re.search(r"FAIL    test_1 .*:\n {10}Explained: 0.765 nats above the optimum:\n {10}Does your head use both "
                     r"states\?\n", text), "a message keeps its lines, each indented under its cell: " + text
    assert re.search(r'SKIPPED test_0 \(3 points\), in section "4.4 Training", the cell that begins "check_0\(\)":\n'
                     r"\s+not run \(it trains, 20 s\); python -m attnlab.validate ch4_blank_lm.ipynb runs it", text), text
    text, ok = validate.summary(validate.report(_executed([skip])), "python -m attnlab.validate ch4_blank_lm.ipynb")
    assert not ok and text.endswith("Not ready: 1 visible check did not run; "
                                    "python -m attnlab.validate ch4_blank_lm.ipynb runs every one."), text


def test_a_visible_check_after_a_dead_kernel_is_skipped_never_passed() -> None:
    nb = _executed([], [])
    nb.cells[2].execution_count = None  # the kernel died in test_0: test_1 never ran
    died = "the kernel died while running section \"4.4 Training\", the cell that begins \"check_0()\""
    text, ok = validate.summary(validate.report(nb), "python -m attnlab.validate ch4_blank_lm.ipynb", died)
    assert not ok and text.startswith(f"  ERROR   {died}\n"), text
    assert re.search(r"SKIPPED test_1 \(3 points\), in .*:\n {10}not run \(the run stopped before this cell: see the "
                     r"ERROR above\)\n", text), text
    assert text.endswith("Not ready: fix the cells above, then run this again."), text


@pytest.mark.parametrize("env, runs, says", [
    ({}, True, False),                                       # Jupyter, nbval
    ({"NBGRADER_EXECUTION": "validate"}, True, False),       # python -m attnlab.validate (and nbgrader validate)
    ({"NBGRADER_EXECUTION": "validate", validate.QUICK_ENV: "1"}, False, True),  # ... --quick
    ({"NBGRADER_EXECUTION": "autograde"}, False, False),     # the grader runs the hidden twin instead
    ({"ATTNLAB_GRADING": "1", validate.QUICK_ENV: "1"}, False, False),
])
def test_a_slow_visible_check_runs_except_when_graded_or_quick(env: dict, runs: bool, says: bool, monkeypatch,
                                                               capsys) -> None:
    from attnlab import grading

    for name in ("NBGRADER_EXECUTION", "ATTNLAB_GRADING", validate.QUICK_ENV):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert grading.runs_slow_check("it trains") is runs
    assert capsys.readouterr().out == (f"{validate.SKIPPED_MARK} it trains\n" if says else "")


def _bare_asserts(nb: nbformat.NotebookNode) -> list[str]:
    """The asserts without a message in `nb`'s code cells."""
    found = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            tree = ast.parse(cell.source)
            found += [ast.get_source_segment(cell.source, node) for node in ast.walk(tree)
                      if isinstance(node, ast.Assert) and node.msg is None]
    return found


def test_every_assert_a_student_sees_says_what_went_wrong() -> None:
    """A bare `assert` fails with an empty AssertionError: in every cell of every release (what the student
    runs), an assert carries a sentence."""
    bare = {c.assignment: _bare_asserts(cells.release(c.read())) for c in select()}
    assert not {k: v for k, v in bare.items() if v}, f"asserts without a message: {bare}"
    planted = cells.release(select(["ch0"])[0].read())
    planted.cells.append(nbformat.v4.new_code_cell("x = 2\nassert 1 + 1 == x"))
    assert _bare_asserts(planted) == ["assert 1 + 1 == x"]


def test_no_visible_test_message_ends_twice() -> None:
    """A visible test ends each `mistakes` entry with its own full stop (`f"...: {mistake}."`): an entry that
    ends in punctuation reads "?." to the student."""
    ended = [(c.assignment, key) for c in select() for cell in c.read().cells if cell.cell_type == "code"
             for node in ast.walk(ast.parse(cell.source))
             if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "mistakes" for t in node.targets)
             and isinstance(node.value, ast.Dict)
             for key in (k.value for k in node.value.keys if isinstance(k, ast.Constant)) if key.rstrip()[-1:] in ".?!"]
    assert not ended, ended


def test_chapter_3_names_the_crossing_only_once_equal_when_is_answered(capsys) -> None:
    """Problem 3.7 asks where the counts are equal: the plot of the counts marks and prints the crossing only
    once EQUAL_WHEN has an answer (with the release's stub it is not defined)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    source = select(["ch3"])[0].read()
    namespace: dict = {"plt": plt}
    for cell in source.cells:
        if cells.grade_id(cell) in ("params", "layer_params"):
            exec(cells.without_solution_markers(cell.source), namespace)
    plot = next(c.source for c in source.cells if "crossing = " in c.source and cells.shows_answers(c))
    separate, merged = namespace["layer_params_separate"], namespace["layer_params_merged"]
    crossing = [K for K in range(1, 65) if separate(4, K, 64) == merged(4, 64)]  # the cell's J = 64, H = 4
    assert len(crossing) == 1
    for answer in (None, "K = J/2"):
        run = dict(namespace, **({"EQUAL_WHEN": answer} if answer else {}))
        exec(plot, run)
        out = capsys.readouterr().out
        labels = [t.get_text() for t in plt.gca().get_legend().get_texts()]
        plt.close("all")
        named = str(crossing[0]) in out or any(str(crossing[0]) in label for label in labels)
        assert named == bool(answer), (answer, out, labels)


# ---------------------------------------------------------------- slow: validate, and a clean install


def _run(cmd: list[str], cwd: Path, timeout: int = 1800, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def _meta(**kw) -> dict:
    return {"nbgrader": {"schema_version": 3, "grade": False, "locked": False, "solution": False, **kw}}


@pytest.mark.slow
def test_validate_reports_tests_stubs_and_failing_cells(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Chapter 9\n\n## 9.1 Adding one"),
        nbformat.v4.new_code_cell("def f(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()",
                                  metadata=_meta(solution=True, grade_id="f")),
        nbformat.v4.new_code_cell("assert f(1) == 2, 'f(1) should be 2'", metadata=_meta(grade=True, locked=True,
                                                                                         points=2, grade_id="test_f")),
        nbformat.v4.new_code_cell("import os\nassert os.environ['NBGRADER_EXECUTION'] == 'validate', 'as graded'",
                                  metadata=_meta(grade=True, locked=True, points=1, grade_id="test_as_graded")),
        nbformat.v4.new_code_cell("from attnlab.grading import runs_slow_check\nif runs_slow_check('it trains'):\n"
                                  "    raise AssertionError('trained badly')",
                                  metadata=_meta(grade=True, locked=True, points=4, grade_id="test_slow")),
        nbformat.v4.new_markdown_cell("### 9.2 Dividing"),
        nbformat.v4.new_code_cell("ratio = 1 / 0"),
        nbformat.v4.new_markdown_cell("YOUR ANSWER HERE", metadata=_meta(grade=True, solution=True, points=3,
                                                                          grade_id="essay")),
    ])
    path = tmp_path / "ch9_demo.ipynb"
    nbformat.write(nb, str(path))
    before = path.read_bytes()
    result = _run([sys.executable, "-m", "attnlab.validate", "--quick", str(path)], tmp_path, timeout=900)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert re.search(r'TODO\s+f, in section "9.1 Adding one", the cell that begins "def f\(x\):"', out), out
    assert re.search(r"FAIL\s+test_f \(2 points\), in .*\n\s+NotImplementedError", out), out
    assert re.search(r"PASS\s+test_as_graded \(1 point\)", out), "long demos are skipped, as when graded: " + out
    assert re.search(r"SKIPPED test_slow \(4 points\), in .*\n\s+not run \(it trains\); "
                     r"python -m attnlab.validate ch9_demo.ipynb runs it", out), out
    assert re.search(r'ERROR\s+a cell, in section "9.2 Dividing", the cell that begins "ratio = 1 / 0":\n'
                     r"\s+ZeroDivisionError", out), out
    assert re.search(r"TODO\s+essay \(3 points\)", out), out
    assert "worth 10 points: 7 autograded in 3 test cells, 3 graded by hand" in out, out
    assert "1 of 3 test cells pass (1 of 7 points); 1 did not run (4 points)" in out and "Not ready" in out, out
    assert path.read_bytes() == before, "validate never writes to the student's notebook"
    slow = _run([sys.executable, "-m", "attnlab.validate", str(path)], tmp_path, timeout=900).stdout
    assert re.search(r"FAIL\s+test_slow \(4 points\), in .*\n\s+AssertionError: trained badly", slow), \
        "by default validate runs the slow checks: " + slow
    assert _run([sys.executable, "-m", "attnlab.validate", str(tmp_path / "nope.ipynb")], tmp_path).returncode == 2


def _filled(release: nbformat.NotebookNode, source: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The release notebook with every stub replaced by the source's answer (a student who solved it all)."""
    answers = {cells.grade_id(c): cells.without_solution_markers(c.source) for c in source.cells if cells.is_solution(c)}
    nb = nbformat.from_dict(release)
    for cell in nb.cells:
        if cells.is_solution(cell):
            cell.source = answers[cells.grade_id(cell)]
    return nb


@pytest.mark.slow
def test_validate_fails_a_chapter_4_head_that_reads_one_side(tmp_path: Path) -> None:
    """The forward-only head is a valid distribution (its first test cell passes) that trains 0.77 nats above
    the optimum: validate's default trains it as the grader does and reports FAIL, never PASS. The notebook is
    the release with the reference answers and this head, cut after the training check (what it needs)."""
    from solutions.mistakes import apply, wrong_for

    chapter = select(["ch4"])[0]
    wrong = next(w for w in wrong_for("ch4") if w.loses == ("test_blank_lm",))
    nb = _filled(cells.release(chapter.read()), apply(chapter.read(), wrong))
    last = next(i for i, c in enumerate(nb.cells) if cells.grade_id(c) == "test_blank_lm")
    nb.cells = nb.cells[:last + 1]
    path = tmp_path / f"{chapter.notebook}.ipynb"
    nbformat.write(nb, str(path))
    result = _run([sys.executable, "-m", "attnlab.validate", path.name], tmp_path, timeout=1200)
    out = result.stdout
    assert result.returncode == 1 and "Ready to submit" not in out, out + result.stderr
    assert re.search(r"PASS\s+test_blank_head \(3 points\)", out), out
    assert re.search(r"FAIL\s+test_blank_lm \(3 points\), in .*\n\s+Explained: your trained model is [\d.]+ nats "
                     r"above the optimum", out), out


@pytest.mark.slow
def test_the_kit_installs_in_a_clean_venv_from_the_release_zip(tmp_path: Path) -> None:
    """A student's first hour, from the zip `autograder release` writes, in a fresh virtual environment.

    torch==2.13.0 is there first, as the README's index would give it: this machine cannot reach
    download.pytorch.org, so the venv sees this interpreter's own torch (its top-level packages and metadata,
    linked into a folder of their own that a .pth names; `_torch_only`), not a 700 MB wheel unpacked again,
    which would test pip rather than the kit. Then the kit with the README's command minus `--extra-index-url`
    (that index only serves torch): pip checks the kit's torch pin against that metadata and installs
    everything else, torch's own requirements included. Then the chapter's visible tests through `python -m
    attnlab.validate`: the untouched release reports its stubs and is not ready; with the stubs filled in every
    visible test passes. pip runs with `--no-compile`: it byte-compiles nothing ahead (jupyterlab's thousands
    of modules), and Python compiles what the steps below import as they import it; what is installed, and
    what each step runs, is the same.
    """
    course_dir = tmp_path / "course"
    assert cli.main(["release", "--chapters", CHAPTER, "--course", str(course_dir)]) == 0
    student = tmp_path / "student"
    with zipfile.ZipFile(course_dir / "release.zip") as zf:
        zf.extractall(student)
    readme = (student / "README.md").read_text()
    assert INSTALL in readme
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    base = getattr(sys, "_base_executable", sys.executable)
    assert _run([base, "-m", "venv", ".venv"], student, env=env).returncode == 0
    py, pip = student / ".venv/bin/python", [str(student / ".venv/bin/python"), "-m", "pip", "install", "-q",
                                        "--no-compile"]
    site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], student,
                     env=env).stdout.strip())
    (site / "torch_from_the_index.pth").write_text(f"{_torch_only(tmp_path / 'torch_only')}\n")
    step = pip + INSTALL.removeprefix("pip install ").split()[:1]
    done = _run(step, student, env=env)
    assert done.returncode == 0, f"{' '.join(step)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    check = _run([str(py), "-m", "pip", "check"], student, env=env)
    assert check.returncode == 0, check.stdout + check.stderr  # torch's own requirements were installed too
    version = _run([str(py), "-c", "import torch, attnlab.validate; print(torch.__version__)"], student, env=env)
    assert version.stdout.strip().startswith("2.13.0"), version.stdout + version.stderr
    alone = _run([str(py), "-c", "import autograder"], student, env=env)
    assert alone.returncode != 0, "the student's environment has no grader"

    chapter = select([CHAPTER])[0]
    release = student / f"{chapter.notebook}.ipynb"
    untouched = _run([str(py), "-m", "attnlab.validate", release.name], student, env=env)
    assert untouched.returncode == 1 and "TODO" in untouched.stdout and "Not ready" in untouched.stdout, \
        untouched.stdout + untouched.stderr
    nb = _filled(nbformat.read(str(release), as_version=4), chapter.read())
    nbformat.write(nb, str(release))
    solved = _run([str(py), "-m", "attnlab.validate", release.name], student, env=env)
    tests = [c for c in nb.cells if cells.is_test(c)]
    assert solved.returncode == 0, solved.stdout + solved.stderr
    assert len(re.findall(r"^\s+(?:PASS|FORM)\s", solved.stdout, re.M)) == len(tests) > 0, solved.stdout
    assert "Ready to submit" in solved.stdout


def _torch_only(folder: Path) -> Path:
    """`folder` holding links to this interpreter's torch: the top-level packages its RECORD installs and its
    metadata, nothing else of this environment."""
    from importlib import metadata

    torch = metadata.distribution("torch")
    tops = {Path(str(f)).parts[0] for f in torch.files or [] if not str(f).startswith("..")}
    folder.mkdir()
    for name in sorted(tops):
        (folder / name).symlink_to(Path(str(torch.locate_file(name))))
    assert {"torch", "torchgen", "functorch"} <= tops and any(t.endswith(".dist-info") for t in tops), tops
    return folder


def test_validate_names_a_notebook_whose_tests_are_not_its_releases() -> None:
    """A notebook claims its release (stamped by `autograder release` with nbgrader's checksums of its locked and test
    cells); one whose visible tests differ (an older release's, or edited) is never "Ready to submit"."""
    from nbgrader.utils import compute_checksum

    from attnlab import release

    nb = cells.release(select([CHAPTER])[0].read())
    fixed = [c for c in nb.cells if release.is_fixed(c)]
    assert fixed and all(release.cell_checksum(c) == compute_checksum(c) for c in fixed)  # nbgrader's, on a dict
    nb.metadata[release.KEY] = {"version": "2026-11-28-abcdef12", "checksum": release.checksum(nb)}
    assert release.mismatch(nb) is None
    tests = [c for c in fixed if cells.is_test(c)]
    passing = validate.report(_executed(*([] for _ in tests)), executed=True)
    assert validate.summary(passing)[1], "all visible checks pass: ready"
    tests[0].source = "# the training check is skipped in this release\n" + tests[0].source
    why = release.mismatch(nb)
    assert why and "2026-11-28-abcdef12" in why
    text, ok = validate.summary(passing, mismatch=why)
    assert not ok and "Ready to submit" not in text and "RELEASE" in text and "not those of this notebook's release" in text
    del nb.metadata[release.KEY]
    assert release.mismatch(nb) is None  # a notebook that claims nothing: nothing to compare


def test_a_check_of_an_answers_form_is_never_reported_as_a_pass() -> None:
    """Chapter 7's BLOCK_WORK = "T^2*J" (wrong order, well-formed): its visible test reads the form only, so
    validate says FORM ("well-formed; graded by hidden checks"), never PASS; a test that judges the answer
    (an expect_close) still says PASS."""
    release = cells.release(select(["ch7"])[0].read())
    test = next(c for c in release.cells if cells.grade_id(c) == "test_block_work")
    assert validate.form_only(test.source), test.source
    assert not validate.form_only("expect_answer(BLOCK_WORK, ['T', 'J'], 'BLOCK_WORK')\nexpect_close(a, b, 'x')")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("## 7.8 Time and work"),
                                         nbformat.v4.new_code_cell('BLOCK_WORK = "T^2*J"', execution_count=1,
                                                                   metadata=_meta(solution=True, grade_id="block_time")),
                                         nbformat.v4.new_code_cell(test.source, execution_count=2,
                                                                   metadata=_meta(grade=True, locked=True, points=1,
                                                                                  grade_id="test_block_work"))])
    found = validate.report(nb)
    assert [r.status for r in found if r.kind == "test"] == ["FORM"]
    text, ok = validate.summary(found)
    assert "PASS" not in text and "FORM    test_block_work (1 point): well-formed; graded by hidden checks" in text
    assert "1 of them (1 point) by the answer's form only" in text and ok, text
