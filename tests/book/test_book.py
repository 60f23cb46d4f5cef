"""The published book: two editions from one source (the `publish` package).

Fast tests check the table of contents, the edition configurations and the student
notebook transform; the `slow` ones build both editions once per session (chapters
executed once, cached) and search every file of the student edition (HTML, search index,
downloads, notebooks, doctrees, the staged source) for solution code, hidden tests and worked
solutions, with a control: everything searched for is found in the solutions edition; they
run the answer audit on it and on a copy with planted answers, and check that every chapter
page serves its release notebook and a zip with the kit, never a source.
"""
from __future__ import annotations

import json
import re
import shutil
import zipfile
from pathlib import Path

import nbformat
import pytest
import snowballstemmer
import yaml

import publish
from autograder import course
from coursenb import cells
from coursenb.chapters import Chapter, select
from publish import audit, contents, downloads, execute, layout
from publish.editions import edition_config, stage, student_notebook, without_widgets

FRONT = ["front/students", "front/instructors", "front/notation", "front/errata"]


def _chapter_docs() -> list[str]:
    return [c.path.relative_to(layout.ROOT).with_suffix("").as_posix() for c in select()]


# ---------------------------------------------------------------- fast: sources and configuration


def test_front_matter_is_a_part_before_the_chapters() -> None:
    toc = yaml.safe_load(layout.TOC.read_text())
    captions = [part.get("caption") for part in toc["parts"]]
    assert captions[0] == "Using this book" and captions[-1] == "Chapters", captions
    docs = contents.toc_documents(contents.published_toc(edition="student"))
    assert docs[1:1 + len(FRONT)] == FRONT, docs
    for doc in FRONT:
        assert contents.source_of(doc) is not None, f"{doc}.md is missing"
    first_chapter = min(docs.index(d) for d in docs if d.startswith("chapters/"))
    assert first_chapter > max(docs.index(d) for d in FRONT)


def test_threat_model_is_in_the_solutions_edition_only() -> None:
    solutions = contents.toc_documents(contents.published_toc(edition="solutions"))
    assert solutions[solutions.index("front/instructors") + 1] == "docs/security", solutions
    assert "docs/security" not in contents.toc_documents(contents.published_toc(edition="student"))


def test_every_chapter_is_published_in_order() -> None:
    docs = [d for d in contents.toc_documents() if d.startswith("chapters/")]
    assert docs == _chapter_docs(), "every chapters/chN_*.ipynb must be in _toc.yml, in chapter order"


def test_errata_page_lists_the_known_seed_typos() -> None:
    text = (layout.ROOT / "front" / "errata.md").read_text()
    for needle in ("ranger",                      # seed 000
                   "L_\\ell[t_2, J_2]",           # seed 002 P6: the last factor at t2
                   "loses one index on its",       # seed 002 P3: the batch index b (named in the solutions only)
                   "1/\\sqrt{K}",                  # seed 002 P4: unscaled scores
                   "key matrix"):                  # seed 004: K for items and keys
        assert needle in text, needle


def test_notation_page_translates_to_every_seed() -> None:
    text = (layout.ROOT / "front" / "notation.md").read_text()
    for seed in ("000", "001", "002", "003", "004"):
        assert re.search(rf"^### Seed {seed}\b.*\n(?:(?!### ).*\n)*?\| book \| seed {seed} \|", text, re.M), seed


def test_edition_configs() -> None:
    student, solutions = edition_config("student"), edition_config("solutions")
    for cfg in (student, solutions):
        assert cfg["execute"]["execute_notebooks"] == "off"  # executed once, before staging
        assert cfg["only_build_toc_files"] is True
        extensions = cfg["sphinx"]["config"]["extensions"]
        assert "sphinx-mathjax-offline" in extensions and "sphinx_thebe" not in extensions
    conf = student["sphinx"]["config"]
    assert conf["html_copy_source"] is False and conf["html_show_sourcelink"] is False
    assert conf["html_theme_options"]["use_download_button"] is False
    assert "html_copy_source" not in solutions["sphinx"]["config"]


@pytest.mark.parametrize("chapter", select(), ids=lambda c: c.assignment)
def test_student_notebook_is_the_release_with_outputs_kept_unless_they_show_answers(chapter: Chapter) -> None:
    source = chapter.read()
    for k, cell in enumerate(source.cells):  # stand-in outputs, as an execution leaves them
        if cell.cell_type == "code":
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"output of cell {k}\n")]
    student = student_notebook(source)
    by_id = {c.id: c for c in student.cells}
    for cell in source.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cells.is_solutions_only(cell):
            assert cell.id not in by_id, "worked solutions are dropped"
            continue
        twin = by_id[cell.id]
        if cell.cell_type == "code":
            expected = [] if cells.shows_answers(cell) else cell.outputs
            assert twin.outputs == expected, "outputs are kept, except those that show answers"
        if meta.get("solution") and cell.cell_type == "code":
            stub = [line.strip() for line in twin.source.splitlines()]
            assert all(line in stub for line in cells.CODE_STUB.splitlines()), twin.source
            assert "BEGIN SOLUTION" not in twin.source
        elif meta.get("grade"):
            assert "hidden_check(" not in twin.source and "BEGIN HIDDEN TESTS" not in twin.source
        else:
            assert twin.source == cell.source, "other cells are unchanged"
    secrets = audit.secrets(source)
    assert secrets, "a chapter with solutions has something to hide"
    assert not [s for s in secrets if s in audit._normalise(audit._notebook_text(student))]


def test_widgets_become_the_text_of_their_final_state() -> None:
    """tqdm bars are widgets; with widget state on a page, myst-nb loads scripts from CDNs."""
    view = "application/vnd.jupyter.widget-view+json"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("for _ in tqdm(range(9)): pass")])
    nb.cells[0].outputs = [nbformat.v4.new_output("display_data", data={
        view: {"model_id": "box", "version_major": 2, "version_minor": 0}, "text/plain": "  0%|          | 0/9"})]
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {
        "box": {"model_name": "HBoxModel", "state": {"children": ["IPY_MODEL_a", "IPY_MODEL_b", "IPY_MODEL_c"]}},
        "a": {"model_name": "HTMLModel", "state": {"value": "training:\u2007100%"}},
        "b": {"model_name": "FloatProgressModel", "state": {"value": 9.0, "max": 9.0}},
        "c": {"model_name": "HTMLModel", "state": {"value": "\u20079/9\u2007[00:01&lt;00:00]"}}}}}
    out = without_widgets(nb)
    assert "widgets" not in out.metadata
    assert out.cells[0].outputs[0].data == {"text/plain": "training: 100%|██████████| 9/9 [00:01<00:00]"}
    assert "widgets" in nb.metadata, "the input is not modified"


@pytest.mark.slow
def test_student_sources_match_nbgrader_release(tmp_path: Path) -> None:
    """The student edition's cells are exactly what `nbgrader generate_assignment` gives students."""
    done = course.Course(tmp_path).release()
    released = {p.stem: nbformat.read(p, as_version=4) for p in done.notebooks}
    for chapter in done.chapters:
        ours = student_notebook(chapter.read())
        theirs = released[chapter.notebook]
        assert [c.source for c in ours.cells] == [c.source for c in theirs.cells], chapter.notebook


# ---------------------------------------------------------------- slow: the built editions


@pytest.fixture(scope="session")
def editions() -> dict[str, Path]:
    """Both editions, built once per test session (shared with tests/book/test_book_browser.py)."""
    return publish.build_once()


@pytest.fixture(scope="session")
def texts(editions) -> dict[str, str]:
    """Every file of each edition's output folder and staged source, as normalised text."""
    return {name: audit.edition_text(layout.Edition(name).out) + " " + audit.edition_text(layout.Edition(name).stage)
            for name in layout.EDITIONS}


def _published_chapters() -> list[Path]:
    """The sources (chapter texts) of the notebooks the session's build published."""
    return list(execute.executed_copies())


@pytest.mark.slow
def test_student_edition_has_no_solution_code_hidden_tests_or_worked_solutions(texts) -> None:
    assert _published_chapters()
    for marker in audit.FORBIDDEN:
        assert marker not in texts["student"], f"{marker!r} in the student edition"
    assert "hidden_check(" in texts["solutions"], "control: the solutions edition shows the hidden tests"
    pages = [p for d in contents.toc_documents(contents.published_toc(edition="student"))
             if not contents.is_notebook(p := contents.source_of(d))]
    executed = execute.executed_copies()
    public = audit.public_text([nbformat.read(e, as_version=4) for e in executed.values()], pages)
    for src in _published_chapters():
        secrets = audit.secrets(contents.read_notebook(src), public)
        assert secrets, src.name
        unseen = [s for s in secrets if s not in texts["solutions"]]
        assert not unseen, f"control: {src.name}: not in the solutions edition, so the search is blind: {unseen[:5]}"
        leaks = [s for s in secrets if s in texts["student"]]
        assert not leaks, f"{src.name}: the student edition shows {leaks[:5]}"


def _index_terms(html: Path) -> set[str]:
    """The searchable terms of an edition: those that find a page (an incremental build leaves a word that left
    every page in the index with no page)."""
    raw = (html / "searchindex.js").read_text()
    index = json.loads(raw[raw.index("(") + 1:raw.rindex(")")])
    return {term for part in ("terms", "titleterms") for term, docs in index.get(part, {}).items() if docs != []}


@pytest.mark.slow
def test_search_index_has_no_solution_only_words(editions) -> None:
    """Words that occur only in solutions, hidden tests and worked solutions are not searchable in the student edition."""
    stem = snowballstemmer.stemmer("porter").stemWord
    student_terms, solution_terms = _index_terms(editions["student"]), _index_terms(editions["solutions"])
    secret_words, kept_words = set(), set()
    for path in [contents.source_of(d) for d in contents.toc_documents(contents.published_toc(edition="student"))]:
        if not contents.is_notebook(path):
            kept_words |= set(re.findall(r"\w+", path.read_text().lower()))
            continue
        source = contents.read_notebook(path)
        executed = nbformat.read(execute.executed_copies()[path], as_version=4)
        kept_words |= set(re.findall(r"\w+", audit._notebook_text(student_notebook(executed)).lower()))
        secret_words |= set(re.findall(r"\w+", " ".join(audit.secrets(source)).lower()))
    only_secret = {stem(w) for w in secret_words - kept_words if len(w) > 3} - {stem(w) for w in kept_words}
    assert "hidden_check" in only_secret and "hidden_check" in solution_terms, "control"
    assert only_secret & solution_terms, "control: solution-only words are indexed in the solutions edition"
    leaked = sorted(only_secret & student_terms)
    assert not leaked, f"searchable in the student edition: {leaked[:20]}"


def _downloads(html: Path) -> dict[str, Path]:
    """The files the edition serves for download (Sphinx's _downloads/<hash>/<name>), by name."""
    return {p.name: p for p in (html / "_downloads").rglob("*") if p.is_file()}


@pytest.mark.slow
def test_student_edition_serves_release_notebooks_never_sources(editions) -> None:
    student, solutions = editions["student"], editions["solutions"]
    assert not (student / "_sources").exists()
    served = {p.relative_to(student).as_posix() for p in student.rglob("*") if p.suffix in (".ipynb", ".zip")}
    assert served and all(rel.startswith("_downloads/") for rel in served), served
    staged = {p.name: p.read_bytes() for p in (layout.Edition("student").stage / downloads.FOLDER).iterdir()}
    for name, path in _downloads(student).items():
        assert path.read_bytes() == staged[name], f"{name} is not the release the build made"
    for page in student.rglob("*.html"):
        html = page.read_text()
        assert not re.search(r"""href=["'][^"']*_sources/""", html), f"{page.name} links a source download"
        for link in re.findall(r"""href=["']([^"']+\.(?:ipynb|zip))["']""", html):
            assert "_downloads/" in link, f"{page.name} links {link}, not a release download"
    for chapter in select():
        release = nbformat.reads(_downloads(student)[f"{chapter.notebook}.ipynb"].read_text(), as_version=4)
        assert [c.source for c in release.cells] == [c.source for c in cells.release(chapter.read()).cells]
        text = json.dumps(release)
        assert not [m for m in audit.FORBIDDEN if m in text], chapter.notebook
    assert list((solutions / "_sources").rglob("*.ipynb")), "control: the solutions edition has its notebooks"


@pytest.mark.slow
def test_every_chapter_page_links_its_notebook_and_a_zip_with_the_kit(editions) -> None:
    student = editions["student"]
    for chapter in select():
        page = student / f"{chapter.doc}.html"
        links = re.findall(r"""<a class="reference download internal"[^>]*href=["']([^"']+)["']""", page.read_text())
        names = {Path(link).name: (page.parent / link).resolve() for link in links}
        assert {f"{chapter.notebook}.ipynb", f"{chapter.notebook}.zip"} <= set(names), (page.name, links)
        with zipfile.ZipFile(names[f"{chapter.notebook}.zip"]) as zf:
            members = set(zf.namelist())
            readme = zf.read("README.md").decode()
        assert {f"{chapter.notebook}.ipynb", "README.md", "attnlab/pyproject.toml", "attnlab/validate.py"} <= members
        assert f"python -m attnlab.validate {chapter.notebook}.ipynb" in readme
    students = (student / "front" / "students.html").read_text()
    assert re.search(rf"""href=["'][^"']*_downloads/[^"']*/{downloads.ALL_CHAPTERS}["']""", students)
    with zipfile.ZipFile(_downloads(student)[downloads.ALL_CHAPTERS]) as zf:
        assert {f"{c.notebook}.ipynb" for c in select()} <= set(zf.namelist())


@pytest.mark.slow
def test_the_student_edition_gives_no_answer_away(editions) -> None:
    """The audit of the build (publish.audit.audit_student): markers, solution lines, and every graded answer
    in the pages, the downloads, the staged notebooks and the kit. The session's build ran this audit on this
    edition (leaks logged, not raised) and recorded its findings under a key of everything the audit reads
    (`audit_student_cached`; the next test shows a changed input audits again): read back, not run twice."""
    problems = audit.audit_student_cached(layout.Edition("student"), execute.executed_copies(), log=print)
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_the_build_audits_again_only_when_what_it_reads_changes(editions, monkeypatch) -> None:
    """The session's build recorded its audit under the key of what it read: read back while the key holds; a
    changed key (a chapter or the kit edited) runs the audit again (here a stand-in that counts its runs: the
    audit itself is the previous test's)."""
    student, executed, lines = layout.Edition("student"), execute.executed_copies(), []
    first = audit.audit_student_cached(student, executed, log=lines.append)
    runs: list[str] = []
    monkeypatch.setattr(audit, "audit_student", lambda edition, *a, **k: runs.append(edition.name) or ["finding"])
    again = audit.audit_student_cached(student, executed, log=lines.append)
    assert again == first and "unchanged" in lines[-1] and runs == [], lines
    key, record = audit._audit_key(student), student.out / "audit.json"
    kept = record.read_bytes()
    monkeypatch.setattr(audit, "_audit_key", lambda edition: key + "-changed")
    try:
        assert audit.audit_student_cached(student, executed, log=lines.append) == ["finding"] and runs == ["student"]
        assert audit.audit_student_cached(student, executed, log=lines.append) == ["finding"] and runs == ["student"]
    finally:
        record.write_bytes(kept)  # the build's own record, for whatever reads it next


@pytest.mark.slow
def test_staging_the_built_editions_again_changes_nothing(editions) -> None:
    """The build is a function of its sources: staged again, no edition's file differs (else every process that
    builds the book, a test worker or `scripts/main.sh` after the tests, runs Sphinx and the audit again: a random
    cell id in each withheld-output note did, 45 CPU-s each time)."""
    toc, executed = contents.read_toc(), execute.executed_copies()
    for name in layout.EDITIONS:
        assert stage(layout.Edition(name), toc, executed) == [], name


PLANTED_PAGE = r"<p>Hint: one layer after another, \(\mathcal{O}\big(L\,(T + K + J)\big)\).</p>"


@pytest.mark.slow
def test_the_audit_fails_on_planted_answers(editions, tmp_path: Path) -> None:
    """Copies of two files of the student edition (a page and a staged notebook) and a new file beside them, with
    one answer of each kind planted: each is reported, where it was planted (the whole edition's audit is the
    test above's; audited here: these files and the kit, before and after planting)."""
    student = layout.Edition("student")
    sources = {c.assignment: c.read() for c in select()}
    html, stage = tmp_path / "html", tmp_path / "stage"
    for rel, (src, dest) in {"chapters/ch2_spatial.html": (student.html, html),
                             "chapters/ch3_merged_qk.ipynb": (student.stage, stage)}.items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / rel, dest / rel)
    folders = [(html, "html"), (stage, "stage")]
    before = set(audit.audit_answers(student, sources, folders).hits)
    page = html / "chapters" / "ch2_spatial.html"  # (1) a symbolic answer of chapter 1, typeset in another chapter
    page.write_text(page.read_text().replace("<section", PLANTED_PAGE + "<section", 1))
    notebook = stage / "chapters" / "ch3_merged_qk.ipynb"  # (2) a value in an output, (3) a cell drawn from answers
    nb = nbformat.read(str(notebook), as_version=4)
    J = 64
    nb.cells.append(nbformat.v4.new_code_cell(f"J = {J}\nprint('equal at', [K for K in range(J) if 2 * K * J == J * J])",
                                              id="planted-value"))
    nb.cells[-1].outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"equal at [{J // 2}]\n")]
    nb.cells.append(nbformat.v4.new_code_cell("plt.plot(Ks, [params_merged(J) for K in Ks])", id="planted-plot"))
    nb.cells[-1].outputs = [nbformat.v4.new_output("display_data", data={"image/png": "iVBOR", "text/plain": "fig"})]
    nbformat.write(nb, str(notebook))
    (stage / "helper.py").write_text(  # (4) a solution's defining call, renamed, in a file the edition serves
        'def merge(A, B):\n    return torch.einsum("nij,nik->njk", A, B) / A.shape[1] ** 0.5\n')
    after = audit.audit_answers(student, sources, folders)
    planted = set(after.hits) - before
    print(after.figures)
    expected = {"ch2_spatial.html": "ch1.PARALLEL_TIME_SERIAL", "id planted-value": "the value of ch3.EQUAL_WHEN",
                "id planted-plot": "uses params_merged", "helper.py": "einsum('abc,abd->acd')"}
    for where, what in expected.items():
        assert [h for h in planted if where in h and what in h], f"{where}: {what} not reported; new: {planted}"


def _shown(nb: nbformat.NotebookNode) -> tuple[int, int]:
    """(code cells with outputs, images) a page made from `nb` shows."""
    outputs = sum(1 for c in nb.cells if c.cell_type == "code" and c.outputs)
    images = sum(1 for c in nb.cells if c.cell_type == "code" for o in c.outputs
                 if any(m.startswith("image/") for m in o.get("data", {})))
    images += sum(len(re.findall(r"!\[|<img\b", c.source)) for c in nb.cells if c.cell_type == "markdown")
    return outputs, images


@pytest.mark.slow
def test_student_edition_shows_stubs_and_every_output_but_answers(editions) -> None:
    """Every output of the executed chapter is on the student page, except those of worked solutions and of
    cells that show answers (`answer-output`); the solutions page shows them all."""
    for src, executed in execute.executed_copies().items():
        page = src.relative_to(layout.ROOT).with_suffix(".html").as_posix()
        nb = without_widgets(nbformat.read(executed, as_version=4))
        for edition, shown in (("student", student_notebook(nb)), ("solutions", nb)):
            html = (editions[edition] / page).read_text()
            outputs, images = _shown(shown)
            assert len(re.findall(r'class="cell_output', html)) == outputs, (edition, page)
            assert len(re.findall(r"<img\b", html)) == images, (edition, page)
        student = (editions["student"] / page).read_text()
        n_solution_cells = sum(1 for c in nb.cells if c.cell_type == "code" and cells.is_solution(c))
        assert student.count("NotImplementedError") >= n_solution_cells, page


@pytest.mark.slow
@pytest.mark.parametrize("edition", layout.EDITIONS)
def test_every_figure_is_present(edition: str, editions) -> None:
    html = editions[edition]
    for src in _published_chapters():
        executed = nbformat.read(execute.executed_copies()[src], as_version=4)
        shown = student_notebook(executed) if edition == "student" else executed
        plots = sum(1 for c in shown.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {}))
        page = html / src.relative_to(layout.ROOT).with_suffix(".html")
        images = re.findall(r"""<img\b[^>]*\ssrc=["']([^"']+)["']""", page.read_text())
        assert len(images) >= plots, f"{page.name}: {plots} plots to show, {len(images)} images on the page"
        for image in images:
            assert (page.parent / image).resolve().is_file(), f"{page.name}: {image} is missing"


@pytest.mark.slow
@pytest.mark.parametrize("edition", layout.EDITIONS)
def test_edition_works_offline(edition: str, editions) -> None:
    html = editions[edition]
    assert not audit.audit_offline(html)
    pages = list(html.rglob("*.html"))
    with_math = [p for p in pages if 'class="math' in p.read_text()]
    assert with_math, "control: some page has math"
    for page in with_math:
        text = page.read_text()
        scripts = re.findall(r"""<script\b[^>]*\ssrc=["']([^"']*mathjax[^"']*)["']""", text)
        assert scripts, f"{page.name} has math but no MathJax"
        for script in scripts:
            assert (page.parent / script.split("?")[0]).resolve().is_file(), f"{page.name}: {script} not in the build"


def test_the_instructors_table_names_every_graded_check() -> None:
    """Every hidden check of every chapter appears in the instructors' table (seed part -> problem -> grading)."""
    text = (layout.ROOT / "front" / "instructors.md").read_text()
    table = "\n".join(line for line in text.splitlines() if re.match(r"\| (?:00\d|\(none\)) \|", line))  # (none): Ch. 8
    assert "placeholder" not in table
    for chapter in select():
        for c in chapter.read().cells:
            for name in cells.hidden_check_names(c.source) if c.cell_type == "code" else []:
                short = name.split(".", 1)[1]
                assert f"`{name}`" in table or f"`{short}`" in table, f"{name} is not in the instructors' table"


def test_cache_keys_follow_what_the_code_imports() -> None:
    """The book's execution, its audit and its release are cached under keys derived from imports (publish.deps):
    the hand lists they replace missed autograder/equation_judge.py, which the local judge imports."""
    from publish import deps

    rel = lambda paths: {p.relative_to(layout.ROOT).as_posix() for p in paths}  # noqa: E731
    kit = rel(execute.kit_files([c.path for c in select()]))
    assert {"autograder/judge.py", "autograder/equation_judge.py", "attnlab/grading.py"} <= kit  # entry point + imports
    assert {f"autograder/checks/{c.assignment}.py" for c in select()} <= kit  # the registry imports them by name
    # (solutions/mistakes is read by Chapter 8's solutions-only assertions: each wrong answer must miss the measurements)
    assert not {p for p in kit if p.startswith(("publish/", "autograder/engine/"))}
    inputs = rel(audit.audit_inputs())
    assert {"publish/leaks.py", "publish/audit.py", "autograder/equation_judge.py", "attnlab/README.md",
            "attnlab/pyproject.toml"} <= inputs and {c.path.relative_to(layout.ROOT).as_posix() for c in select()} <= inputs
    release = rel(downloads.release_files(select(["ch1"])))
    assert {"autograder/course.py", "autograder/config.py", "coursenb/cells.py", "chapters/ch1_parallel_time.py"} <= release
    assert deps.imports_of("from . import a\nfrom .b import c\ndef f():\n    import x.y\n", "p.q") == \
        {"p.q", "p.q.a", "p.q.b", "p.q.b.c", "x.y"}
    assert deps.imports_of("def f():\n    import x\n", lazy=False) == set()


def test_served_text_is_read_once_with_an_html_parser(tmp_path: Path) -> None:
    """publish.served: a page's shown text is its document for the answer audit; the searchable text adds what the
    page carries unseen (scripts, attributes) and a highlighted solution line reads whole; one walk serves both
    audits (the same documents as walking the served folders)."""
    from publish import served

    out, stage = tmp_path / "student", tmp_path / "stage" / "student"
    (out / "html" / "_static").mkdir(parents=True)
    stage.mkdir(parents=True)
    page = ('<html><head><style>p{color:red}</style><script>var x = "### BEGIN SOLUTION";</script></head><body>'
            '<p data-x="secret &amp; attribute">Visible &amp; plain</p><pre><span class="n">torch</span>'
            '<span class="o">.</span><span class="n">einsum</span>(<span class="s2">&quot;htk,hsk-&gt;hts&quot;</span>)'
            '</pre></body></html>')
    (out / "html" / "ch1_parallel_time.html").write_text(page)
    (out / "html" / "_static" / "theme.css").write_text("body{}")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("y = 1")])
    with zipfile.ZipFile(out / "html" / "ch1.zip", "w") as zf:
        zf.writestr("ch1_parallel_time.ipynb", nbformat.writes(nb))
        zf.writestr("attnlab/grading.py", "KIT = 1")
    nbformat.write(nb, str(stage / "ch1_parallel_time.ipynb"))
    files = served.walk([(out, "student"), (stage, "student/stage")])
    by = {f.where: f for f in files}
    html_page = by["student/html/ch1_parallel_time.html"]
    (doc,) = html_page.docs
    assert "Visible & plain" in doc.text and "BEGIN SOLUTION" not in doc.text and "color:red" not in doc.text
    assert "secret & attribute" in html_page.text and "### BEGIN SOLUTION" in html_page.text
    assert 'torch.einsum("htk,hsk->hts")' in html_page.text  # the line reads whole across Pygments' spans
    assert [d.text for d in by["student/html/ch1.zip"].docs] == ["y = 1"] and "KIT" not in by["student/html/ch1.zip"].text
    edition = layout.Edition("student")
    once, count = audit.served(edition, files=[f for f in files])
    again, _ = audit.served(edition, folders=[(out / "html", "student/html"), (stage, "student/stage")])
    assert [d.where for d in once] == [d.where for d in again] and count == 3 + len(audit.kit_files(audit.KIT))
    assert not any("_static" in d.where for d in once)


def test_a_first_build_starts_the_longest_chapter_first() -> None:
    """Before this checkout has timed its chapters, publish/first_build_seconds.json orders them (Chapter 4, the
    longest, first); this checkout's own timings take over; a chapter neither knows comes before both."""
    from publish.execute import FIRST_BUILD, _expected_seconds

    sources = [c.path for c in select()]
    order = sorted(sources, key=lambda s: _expected_seconds(s, {}), reverse=True)
    first = json.loads(FIRST_BUILD.read_text())
    assert order[0].stem == max((k for k in first if k != "_"), key=first.get) == "ch4_blank_lm"
    assert {s.stem for s in sources} <= set(first), "a chapter without a first-build time runs first, untimed"
    assert sorted(sources, key=lambda s: _expected_seconds(s, {"ch0_attention": 1e3}), reverse=True)[0].stem == "ch0_attention"
    assert _expected_seconds(Path("chapters/ch99_new.py"), {}) > 1e6
