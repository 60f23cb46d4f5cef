"""Manual grading (export, import, the formgrader's gradebook), similar submissions, and the grading log's history.

One Chapter-1 course (module scope) released through the CLI, with the example class's prose question added
and the example class collected; grades rows are created as the engine creates them (nbgrader's
add_submission), so no notebook is executed here.
"""
from __future__ import annotations

import csv
import html
import re
import shutil
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder import cli, course, example_class, gradinglog, manual, pages, similarity
from autograder.gradinglog import CellLog, NotebookLog
from coursenb.chapters import select
from tests.adversarial import outputs

pytestmark = pytest.mark.filterwarnings("ignore:Object of type")
CHAPTER = select(["ch1"])[0]
NB = CHAPTER.notebook
# mallory's prose answer: a formula, a script, and every spreadsheet and math attack of tests/adversarial/outputs
HOSTILE = "\n\n".join(["=HYPERLINK(\"http://evil\") <script>alert(1)</script> L*T", *outputs.SPREADSHEET, *outputs.MATH])


@pytest.fixture(scope="module")
def collected(tmp_path_factory) -> Path:
    """Chapter 1 released with the prose question, the example class (and one hostile answer) collected, every
    placed notebook registered in the gradebook as the engine registers it."""
    from autograder.gradebook import open_course as gradebook

    root = tmp_path_factory.mktemp("manual")
    course_dir = root / "course"
    assert cli.main(["release", "--chapters", "ch1", "--course", str(course_dir)]) == 0
    assert cli.main(["example-class", "--chapters", "ch1", "--add-prose-question", "--zip", str(root / "class.zip"),
                     "--course", str(course_dir)]) == 0
    release = nbformat.read(course_dir / "release" / "ch1" / f"{NB}.ipynb", as_version=4)
    for cell in release.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == example_class.PROSE_ID:
            cell.source = HOSTILE
    with zipfile.ZipFile(root / "class.zip", "a") as zf:
        zf.writestr(f"mallory_666_1_{NB}.ipynb", nbformat.writes(release))
    assert cli.main(["collect", str(root / "class.zip"), "--course", str(course_dir)]) == 0
    with gradebook(course_dir) as gb:
        for folder in sorted((course_dir / "submitted").glob("*/ch1")):
            gb.add_submission("ch1", folder.parent.name)
    return course_dir


def copy(course_dir: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "course"
    shutil.copytree(course_dir, dest)
    text = (course_dir / "nbgrader_config.py").read_text().replace(str(course_dir.resolve()), str(dest.resolve()))
    (dest / "nbgrader_config.py").write_text(text)
    return dest


def rows_of(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


# ----------------------------------------------------------------------------- manual grading


def test_the_prose_question_is_a_manual_cell_of_the_release(collected) -> None:
    qs = manual.questions(collected)
    assert [(q.assignment, q.grade_id, q.points) for q in qs] == [("ch1", example_class.PROSE_ID, 2.0)]
    assert qs[0].prompt == example_class.PROSE_PROMPT and "YOUR ANSWER HERE" in qs[0].stub
    assert qs[0].answer == example_class.PROSE_ANSWER


def test_a_chapters_question_is_its_own_text_with_the_model_answer_and_rubric(tmp_path) -> None:
    """Problem 3.8: the question is the markdown right before the answer cell (not the plot caption further up),
    the model answer is the source's solution, the rubric the chapter's solutions-only rubric cell."""
    chapter = select(["ch3"])[0]
    path = tmp_path / "source" / "ch3" / f"{chapter.notebook}.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(course.source_notebook(chapter), str(path))
    (q,) = manual.questions(tmp_path)
    assert q.grade_id == "merge_tradeoffs" and q.prompt.startswith("## 3.4") and "Problem 3.8" in q.prompt
    assert "Your counts against" not in q.prompt
    assert "*Parameters.*" in q.answer and "BEGIN SOLUTION" not in q.answer
    assert q.rubric.startswith("**Rubric for Problem 3.8") and "Worked solution" not in q.rubric


def test_export_import_round_trip_reaches_nbgraders_gradebook(capsys, collected, tmp_path) -> None:
    from autograder import grades
    from autograder.gradebook import open_course as gradebook

    course_dir = copy(collected, tmp_path)
    assert cli.main(["manual", "export", "--course", str(course_dir)]) == 0
    out = capsys.readouterr().out
    assert f"{example_class.PROSE_ID}" in out and "manual import" in out
    exported = course_dir / "manual" / "manual_grades.csv"
    rows = {r["student"]: r for r in rows_of(exported)}
    assert rows["edsger"]["responded"] == "no" and (rows["edsger"]["score"], rows["edsger"]["comment"]) == \
        ("0", manual.NO_RESPONSE)
    assert rows["barbara"]["answer"].startswith("The sums: a layer costs L*T")
    assert rows["mallory"]["answer"].startswith("'=HYPERLINK")  # no formula in the instructor's spreadsheet
    assert outputs.formula_cells(exported.read_text(encoding="utf-8")) == []  # however it is split (issue 32.2)
    page = (course_dir / "manual" / f"ch1_{example_class.PROSE_ID}.html").read_text()
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt; L*T" in page
    rendered = page.split('id="mallory"')[1].split("as written")[0]  # mallory's answer rendered (issue 32.4):
    assert outputs.page_problems(page) == [] and "evil.example" not in rendered  # no style, no link
    assert "<mtext>every" in rendered  # the \\style{...}{text}'s text stays, in place
    assert "L*(log T + log J) with a tree, so the *reductions*" in page and "In your own words" in page
    assert "<em>reductions</em>" in page  # rendered, and shown as written beside it
    assert "The question" in page and html.escape(example_class.PROSE_ANSWER.split(",")[0], quote=True) in page
    filled = tmp_path / "filled.csv"
    assert example_class.grade_prose(exported, filled) > 5
    assert cli.main(["manual", "import", str(filled), "--course", str(course_dir)]) == 0
    with gradebook(course_dir) as gb:  # nbgrader's own rows, as its formgrader reads them
        barbara = gb.find_grade(example_class.PROSE_ID, NB, "ch1", "barbara")
        assert (barbara.manual_score, barbara.needs_manual_grade, barbara.score) == (2.0, False, 2.0)
        assert gb.find_comment(example_class.PROSE_ID, NB, "ch1", "alan").manual_comment.startswith("Which operation")
        assert gb.find_grade(example_class.PROSE_ID, NB, "ch1", "alan").manual_score == 1.0
        assert gb.find_grade(example_class.PROSE_ID, NB, "ch1", "edsger").manual_score == 0.0
    cls = grades.load(course_dir)
    alan = next(c for c in cls.cells if (c.student, c.grade_id) == ("alan", example_class.PROSE_ID))
    assert alan.manual and alan.score == 1.0 and alan.comment.startswith("Which operation")
    # exporting again keeps what was imported
    manual.export(course_dir, course_dir / "manual2")
    again = {r["student"]: r for r in rows_of(course_dir / "manual2" / "manual_grades.csv")}
    assert again["barbara"]["score"] == "2" and again["alan"]["comment"].startswith("Which operation")


@pytest.mark.parametrize("edit, words", [
    (lambda r: r.update(score="3"), "not between 0 and 2"),
    (lambda r: r.update(score="two"), "not a number"),
    (lambda r: r.update(student="nobody"), "submitted by 'nobody'"),
    (lambda r: r.update(grade_id="test_self_attention"), "no manually graded cell 'test_self_attention'"),
    (lambda r: r.update(answer_sha256="0" * 16), "the answer changed since the export"),
])
def test_a_bad_row_imports_nothing(capsys, collected, tmp_path, edit, words) -> None:
    from autograder.gradebook import open_course as gradebook

    course_dir = copy(collected, tmp_path)
    path, _, _ = manual.export(course_dir, tmp_path / "m")
    rows = rows_of(path)
    for r in rows:
        r["score"] = r["score"] or "1"
    edit(rows[3])
    with (tmp_path / "bad.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    assert cli.main(["manual", "import", str(tmp_path / "bad.csv"), "--course", str(course_dir)]) == 1
    err = capsys.readouterr().err
    assert "nothing was imported" in err and words in err and "line 5" in err
    with gradebook(course_dir) as gb:
        assert gb.find_grade(example_class.PROSE_ID, NB, "ch1", rows[0]["student"]).manual_score is None


def test_import_duplicates_and_missing_columns_are_refused(collected, tmp_path) -> None:
    course_dir = copy(collected, tmp_path)
    path, _, _ = manual.export(course_dir, tmp_path / "m")
    rows = rows_of(path)
    (tmp_path / "dup.csv").write_text(path.read_text() + path.read_text().split("\n", 1)[1])
    with pytest.raises(manual.ManualError, match="the same answer as line"):
        manual.import_scores(course_dir, tmp_path / "dup.csv")
    (tmp_path / "cols.csv").write_text("student,score\nada,1\n")
    with pytest.raises(manual.ManualError, match="no column assignment"):
        manual.import_scores(course_dir, tmp_path / "cols.csv")
    assert rows


def test_a_csv_saved_by_excel_imports(collected, tmp_path) -> None:
    """Issue 33.5: a TA's CSV saved by Excel in Windows-1252 with `;` separators (a French locale) imports, its
    comments as written; UTF-16 is refused with what to do, not a codec traceback (on main: UnicodeDecodeError)."""
    from autograder.gradebook import open_course as gradebook

    course_dir = copy(collected, tmp_path)
    path, _, _ = manual.export(course_dir, tmp_path / "m")
    rows = rows_of(path)
    for r in rows:
        r["score"], r["comment"] = r["score"] or "1", "Très bien – à revoir : €"
    for name, encoding in (("excel.csv", "cp1252"), ("utf16.csv", "utf-16")):
        with (tmp_path / name).open("w", newline="", encoding=encoding) as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter=";")
            writer.writeheader()
            writer.writerows(rows)
    assert len(manual.import_scores(course_dir, tmp_path / "excel.csv")) == len(rows)
    with gradebook(course_dir) as gb:
        assert gb.find_comment(example_class.PROSE_ID, NB, "ch1", "alan").manual_comment == "Très bien – à revoir : €"
    with pytest.raises(manual.ManualError, match="save it again from the spreadsheet as CSV UTF-8"):
        manual.import_scores(course_dir, tmp_path / "utf16.csv")


# ----------------------------------------------------------------------------- similarity


def test_similarity_ranks_the_copied_pair_first(capsys, collected) -> None:
    assert cli.main(["similarity", "--course", str(collected)]) == 0
    out = capsys.readouterr().out
    first = next(line for line in out.splitlines() if line.startswith("ch1") and line.split()[1] == "1")
    assert sorted(first.split()[2:4]) == ["hedy", "tim"]
    page = (collected / "similarity" / "index.html").read_text()
    assert "<mark>" in page and "<script" not in page
    first = re.search(r"<h3 id=[^>]*>1\. (\w+) and (\w+)", page)  # the page's first pair, code side by side
    assert first and sorted(first.groups()) == ["hedy", "tim"]


def test_own_code_leaves_out_the_release(collected) -> None:
    release = nbformat.read(collected / "release" / "ch1" / f"{NB}.ipynb", as_version=4)
    assert similarity.own_code(release, release) == ""  # the untouched release: nothing of the student's
    works = {w.student: w for w in similarity.collect_work(collected, "ch1")}
    assert "edsger" not in works
    assert "def self_attention" not in works["ada"].code  # the signature is the release's
    assert "_check_inputs" in works["hedy"].code and "validate" in works["tim"].code


def test_own_code_of_a_pathological_notebook_costs_about_its_size(tmp_path) -> None:
    """tests/adversarial/similarity.blank_cells: four added cells of 256 K empty lines each; own_code keeps only their
    code, within 20 s of CPU (on main, a diff of each against the whole release took minutes: one student stalled
    the class's report)."""
    import subprocess
    import sys

    script = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_CPU, (20, 20))\n"
        "from autograder import course, similarity\n"
        "from coursenb import cells\n"
        "from coursenb.chapters import select\n"
        "from tests.adversarial.similarity import blank_cells\n"
        "release = cells.release(course.source_notebook(select(['ch1'])[0]))\n"
        "print(similarity.own_code(blank_cells(release), release).count(' = '))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip() == "4", (done.returncode, done.stderr[-500:])


PASTED = '''def attend(M, WQ, WK, WV):
    queries = torch.einsum("hkj,tj->htk", WQ, M)
    keys = torch.einsum("hkj,tj->htk", WK, M)
    scores = torch.einsum("htk,hsk->hts", queries, keys) / math.sqrt(WQ.shape[1])
    weights = torch.softmax(scores, dim=-1)
    values = torch.einsum("hij,sj->hsi", WV, M)
    out = torch.einsum("hts,hsi->thi", weights, values)
    return out.reshape(M.shape[0], -1)


self_attention = attend
'''


def test_code_pasted_below_an_untouched_stub_is_compared(collected, tmp_path) -> None:
    """Issue 32.5: ivan and judy leave every stub untouched and paste the same solution into a new cell below the first
    one (it runs, and earns the marks): the report ranks them as a pair (on main both had no own code and were
    dropped); test and locked cells, which the grader restores, are not theirs."""
    course_dir = copy(collected, tmp_path)
    release = nbformat.read(course_dir / "release" / "ch1" / f"{NB}.ipynb", as_version=4)
    at = next(k for k, c in enumerate(release.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "self_attention")
    for student in ("ivan", "judy"):
        nb = nbformat.from_dict(release)
        nb.cells.insert(at + 1, nbformat.v4.new_code_cell(PASTED))
        test = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "test_self_attention")
        test.source += f"\n# {student} was here, and here, and here: an edited test cell runs as released\n"
        (course_dir / "submitted" / student / "ch1").mkdir(parents=True)
        nbformat.write(nb, course_dir / "submitted" / student / "ch1" / f"{NB}.ipynb")
    assert similarity.own_code(nb, release).count("einsum") == 5 and "was here" not in similarity.own_code(nb, release)
    pairs, _, _ = similarity.run(course_dir, "ch1")
    pair = next((p for p in pairs["ch1"] if {p.a, p.b} == {"ivan", "judy"}), None)
    assert pair is not None and pair.kind == "identical"


def test_a_copy_ring_of_any_size_is_found() -> None:
    """docs/security.md: in a class of eight, a ring of 2 to 8 students with the same code (names changed) is found,
    every pair of it, ranked before any other pair, however common the ring makes its code; so is a ring whose
    members each add a line of their own (nearly all shared)."""
    own = {s: f"def h(values):\n    out = {k}\n    for v in values[{k}:]:\n        out = out * {k + 2} - v ** {k + 3}\n"
              f"    return [out % {k + 5}, out // {k + 7}]\n" for k, s in enumerate("abcdefgh")}
    ring = ("def score(rows, width):\n    total = []\n    for r in rows:\n        acc = 0.0\n"
            "        for i, x in enumerate(r[:width]):\n            acc += (x - i) ** 2 / (1 + i)\n"
            "        total.append(acc ** 0.5)\n    return sorted(total, reverse=True)[: width // 2]\n")
    for size in range(2, 9):
        members = "abcdefgh"[:size]
        for extra in (False, True):
            works = [similarity.Work(s, "ch1", (ring.replace("acc", f"acc_{s}") + (f"print('{s}' * {ord(s)})\n"
                                                                                   if extra else ""))
                                     if s in members else own[s]) for s in "abcdefgh"]
            pairs = similarity.compare(works)
            found = [(p.a, p.b) for p in pairs[:size * (size - 1) // 2]]
            assert sorted(found) == sorted((a, b) for i, a in enumerate(members) for b in members[i + 1:]), (size, extra)
            assert all(p.kind for p in pairs[:len(found)]), (size, extra)


def test_common_code_is_not_evidence() -> None:
    shared = "def f(x):\n    total = 0\n    for item in x:\n        total = total + item * item\n    return total\n"
    own = "def g(values):\n    seen = {}\n    for k, v in enumerate(values):\n        seen[v] = seen.get(v, []) + [k]\n" \
          "    return sorted(seen.items(), key=lambda kv: -len(kv[1]))\n"
    theirs = {s: f"def h(values):\n    out = {k}\n    for v in values[{k}:]:\n        out = out * {k + 2} - v ** {k + 3}\n"
              f"    return [out % {k + 5}, out // {k + 7}]\n" for k, s in enumerate("abcdef")}
    works = [similarity.Work(s, "ch1", shared + (own if s in ("p", "q") else theirs[s])) for s in "abcdefpq"]
    pairs = similarity.compare(works)
    assert (pairs[0].a, pairs[0].b) == ("p", "q") and len(pairs) == 1  # everyone shares `f`: only p-q remain
    escaped = pages.marked("a</pre><script>x</script>", similarity._spans([[0], [5]]))
    assert "<script>" not in escaped and escaped.startswith("<mark>a&lt;/pr</mark>")


# ----------------------------------------------------------------------------- the grading log keeps every grading


def test_a_regrade_keeps_the_earlier_logs(tmp_path) -> None:
    def log(score: float, when: str) -> NotebookLog:
        return NotebookLog("ada", "ch1", NB, "sha", "src", when, (CellLog("test_a", score, 4.0, "why"),))

    gradinglog.write(tmp_path, log(1.0, "2025-02-01T10:00:00Z"))
    gradinglog.write(tmp_path, log(3.0, "2025-02-02T10:00:00Z"))
    gradinglog.write(tmp_path, log(4.0, "2025-02-03T10:00:00Z"))
    assert gradinglog.read(tmp_path, NB).score == 4.0
    assert [h.score for h in gradinglog.history(tmp_path, NB)] == [1.0, 3.0]
    assert [lg.score for lg in gradinglog.read_all(tmp_path.parent.parent)] in ([], [4.0])
    assert course.ROOT.exists()
