"""The notebook the engine runs: locked cells restored from the source, bad files read as reasons, hidden tests
kept out of feedback, figures not drawn. Fast: no notebook is executed here, only a few cells in the grader's shell."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder import course
from autograder.engine import notebook as nbmod
from autograder.engine.limits import Limits
from coursenb import cells
from coursenb.chapters import select

CHAPTER = select(["ch1"])[0]


@pytest.fixture(scope="module")
def source() -> nbformat.NotebookNode:
    return course.source_notebook(CHAPTER)


def _cell(nb, gid):
    return next(c for c in nb.cells if cells.grade_id(c) == gid)


def _ids(nb):
    return [cells.grade_id(c) for c in nb.cells if cells.grade_id(c)]


def test_source_restores_to_itself(source) -> None:
    r = nbmod.restore(source, source)
    assert [c.source for c in r.nb.cells] == [c.source for c in source.cells]
    assert r.notes == [] and not r.foreign and r.missing_solutions == []


def test_edited_test_cell_comes_back_with_its_hidden_tests(source) -> None:
    sub = nbformat.from_dict(source)
    _cell(sub, "test_transformer").source = "pass"
    _cell(sub, "test_transformer").metadata.nbgrader["points"] = 99
    r = nbmod.restore(sub, source)
    restored = _cell(r.nb, "test_transformer")
    assert restored.source == _cell(source, "test_transformer").source
    assert cells.HIDDEN_BEGIN in restored.source and restored.metadata.nbgrader["points"] == 2
    assert any("test_transformer" in n for n in r.notes)


def test_deleted_test_cell_is_put_back_after_its_solution(source) -> None:
    sub = nbformat.from_dict(source)
    sub.cells = [c for c in sub.cells if cells.grade_id(c) != "test_self_attention"]
    r = nbmod.restore(sub, source)
    ids = _ids(r.nb)
    assert ids.index("test_self_attention") == ids.index("self_attention") + 1
    assert ids == _ids(source)


def test_retagged_and_retyped_test_cells_are_restored(source) -> None:
    sub = nbformat.from_dict(source)
    c = _cell(sub, "test_softmax_time")
    c.metadata.nbgrader.update(grade=False, solution=True, locked=False)
    t = _cell(sub, "test_transformer")
    sub.cells[sub.cells.index(t)] = nbformat.v4.new_markdown_cell("gone", metadata=t.metadata)
    r = nbmod.restore(sub, source)
    assert cells.is_test(_cell(r.nb, "test_softmax_time")) and cells.is_test(_cell(r.nb, "test_transformer"))


def test_unknown_and_duplicate_ids_become_ordinary_cells(source) -> None:
    sub = nbformat.from_dict(source)
    _cell(sub, "transformer").metadata.nbgrader["grade_id"] = "mine"
    sub.cells.append(nbformat.from_dict(_cell(sub, "self_attention")))  # a duplicated solution cell
    r = nbmod.restore(sub, source)
    assert _ids(r.nb).count("self_attention") == 1 and "mine" not in _ids(r.nb)
    assert r.missing_solutions == ["transformer"]
    assert len({c.id for c in r.nb.cells}) == len(r.nb.cells)  # unique cell ids


def test_a_notebook_of_another_chapter_is_foreign(source) -> None:
    other = select(["ch0"])[0].read()
    assert nbmod.restore(other, source).foreign


@pytest.mark.parametrize("data, why", [(b"", "empty"), (b"not json", "not JSON"), (b"[1, 2]", "not a Jupyter notebook"),
                                       (json.dumps({"cells": "x"}).encode(), "not a Jupyter notebook"),
                                       (b"\xff\xfe", "not JSON"),
                                       (b"[" * 100_000 + b"]" * 100_000, "levels deep"),  # RecursionError in json
                                       (b'{"cells": [], "metadata": {"x": ' + b"[" * 500 + b"]" * 500 + b"}}",
                                        "levels deep"),
                                       (json.dumps({"cells": [{"cell_type": "raw", "metadata": {}, "source": ""}]
                                                    * (nbmod.MAX_CELLS + 1), "metadata": {}}).encode(), "cells"),
                                       (b'{"cells": [' + b"{}," * nbmod.MAX_OBJECTS + b'{}], "metadata": {}}',
                                        "JSON objects")])
def test_unreadable_files_say_why(tmp_path: Path, data: bytes, why: str) -> None:
    path = tmp_path / "nb.ipynb"
    path.write_bytes(data)
    with pytest.raises(nbmod.UnreadableNotebook, match=why):
        nbmod.read_submission(path)


def test_feedback_copy_has_no_hidden_tests_in_source_or_traceback(source) -> None:
    nb = nbformat.from_dict(source)
    cell = _cell(nb, "test_transformer")
    hidden = [ln for ln in cell.source.splitlines() if "hidden_check(" in ln][0]
    cell.outputs = [nbformat.v4.new_output("error", ename="NameError", evalue="x",
                                           traceback=[f"Cell In[8], line 12\n     11 ok = 1\n---> 12 {hidden}\n", "NameError: x"])]
    out = nbmod.for_feedback(nb)
    text = json.dumps(out)
    assert "hidden_check(" not in text and "BEGIN HIDDEN TESTS" not in text
    assert "ok = 1" in text  # the visible context stays


def test_hidden_names_and_strip() -> None:
    src = 'a = 1\n### BEGIN HIDDEN TESTS\nhidden_check("ch1.x", f)\nhidden_check(\'ch1.y\', 2)\n### END HIDDEN TESTS\nb = 2'
    assert cells.hidden_check_names(src) == ["ch1.x", "ch1.y"]
    assert cells.strip_hidden_tests(src) == "a = 1\nb = 2"


FIGURE_CELLS = """
import json, sys
sys.path.insert(0, {inside!r})
from inside import runner
shell = runner.make_shell()
runner.SinkPublisher.sink = sink = runner.Sink({caps!r}, ["text/plain", "image/png"])
for cell in {cells!r}:
    sink.begin()
    shell.run_cell(cell)
    print("OUTPUTS", json.dumps(sink.outputs))
print("MOVED", shell.user_ns.get("moved"))
"""


@pytest.mark.parametrize("first", ["", "%matplotlib inline"])
def test_figures_are_built_but_not_laid_out_or_drawn_while_grading(first: str) -> None:
    """A figure's output is its text form, even after the notebook's own `%matplotlib inline`, and
    tight_layout moves nothing; a notebook that asks for PNG (its own time) still gets one."""
    plot = "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([1, 2], [3, 4])\nplt.show()"
    layout = ("fig, ax = plt.subplots()\nax.set_ylabel('a long label ' * 3)\nbefore = ax.get_position().bounds\n"
              "plt.tight_layout()\nmoved = before != ax.get_position().bounds\nplt.close(fig)")
    cells = [first, plot, "%config InlineBackend.figure_formats = ['png']", plot, layout]
    caps = {k: v for k, v in Limits().to_dict().items() if "output" in k}
    code = FIGURE_CELLS.format(inside=str(course.ROOT / "autograder" / "engine"), caps=caps, cells=cells)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/", timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    outputs = [json.loads(line.split(" ", 1)[1]) for line in out.stdout.splitlines() if line.startswith("OUTPUTS ")]
    graded, asked = outputs[1], outputs[3]
    assert [o["data"] for o in graded] == [{"text/plain": "<Figure size 640x480 with 1 Axes>"}], graded
    assert [sorted(o["data"]) for o in asked] == [["image/png", "text/plain"]], asked
    assert "MOVED False" in out.stdout  # tight_layout left the axes where they were


def test_a_file_past_the_size_cap_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "nb.ipynb"
    with path.open("wb") as f:
        f.truncate(nbmod.MAX_BYTES + 1)  # sparse: no disk used
    with pytest.raises(nbmod.UnreadableNotebook, match="MiB"):
        nbmod.read_submission(path)


def test_the_guard_reads_as_nbformat_and_the_graded_notebook_is_written_as_nbformat_writes(source) -> None:
    """The guard builds the notebook from its own parse (no second JSON parse) and the engine writes it compact:
    both equal nbformat's reads and writes, for version 4 and for a version 3 file converted."""
    from autograder import notebook_guard
    from autograder.engine.store import ipynb_bytes

    source = nbformat.from_dict(source)
    source.cells[0].metadata["trusted"] = True  # transient: nbformat's writer drops it
    text = nbformat.writes(source)
    v3 = nbformat.writes(nbformat.convert(nbformat.reads(text, as_version=4), 3))
    assert notebook_guard.read(text.encode()) == nbformat.reads(text, as_version=4)
    no_ids = lambda nb: [{k: v for k, v in c.items() if k != "id"} for c in nb.cells]  # noqa: E731 (random on upgrade)
    assert no_ids(notebook_guard.read(v3.encode())) == no_ids(nbformat.reads(v3, as_version=4))
    assert json.loads(ipynb_bytes(source)) == json.loads(nbformat.v4.writes(source))
    assert source.cells[0].metadata["trusted"] and isinstance(source.cells[0].source, str)  # the caller's unchanged
    with pytest.raises(notebook_guard.UnreadableNotebook, match="not a valid notebook"):
        notebook_guard.read(b'{"nbformat": 9, "cells": []}')


def test_a_notebook_handed_over_restores_as_a_copy_does(source) -> None:
    """restore(owned=True) (the engine's: a notebook just read) changes the submission's cells in place and gives what
    restore gives on a copy; without it the submission is left as it was."""
    sub = nbformat.from_dict(source)
    for cell in sub.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [nbformat.v4.new_output("stream", text="x")], 3
    sub.cells[0].source = ["# a", "\n b"]
    before = json.dumps(sub, sort_keys=True)
    copied = nbmod.restore(sub, source)
    assert json.dumps(sub, sort_keys=True) == before
    owned = nbmod.restore(nbmod.notebook_guard.read(before.encode()), source, owned=True)
    assert owned.nb == copied.nb and owned.notes == copied.notes
