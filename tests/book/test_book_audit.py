"""The answer audit (`publish.leaks`): every graded answer is found wherever the student edition
could show it, in every form the judge accepts, and the release notebooks and the kit are clean.

Each kind of search is shown to find a planted answer (symbolic answers in code, LaTeX and
outputs; an equation rearranged; a solution's einsum renamed; a value in an output; a cell
that draws from an answer), and to leave alone what is not an answer (a size on its own).
The built student edition is audited in tests/book/test_book.py.
"""
from __future__ import annotations

import re

import nbformat
import pytest

from autograder.checks import CHECKS
from coursenb import cells
from coursenb.chapters import select
from publish import leaks
from publish.audit import KIT
from publish.leaks import Doc, Figures

SYMBOLIC = {name: c for name, c in CHECKS.items() if c.variables}  # questions in named sizes


def _judged(*docs: Doc) -> list[str]:
    found: dict[str, list[str]] = {}
    for doc in docs:
        for candidate in leaks.doc_candidates(doc):
            found.setdefault(candidate, []).append(doc.where)
    return leaks.judge_candidates(found, CHECKS, Figures())


def _latex(expr: str) -> str:
    """An answer as a book would typeset it: \\log, implicit products."""
    return expr.replace("log(", r"\log(").replace("*", " ")


def test_candidates_come_from_math_strings_comments_and_prose() -> None:
    prose = r"Each layer costs $O(L\,(J + K + T))$ and \(K = J/2\); the time grows like L (J + K + T) per layer."
    found = leaks.candidates(prose)
    assert {r"O(L\,(J + K + T))", "K = J/2", "L (J + K + T)"} <= found, found
    code = 'x = "T + log(K)"  # about J log T here\nprint(f"depth {d}")'
    found = leaks.doc_candidates(Doc("cell", code, "code"))
    assert "T + log(K)" in found and "J log T" in found, found
    assert all(len(c) <= leaks.MAX_CANDIDATE for c in leaks.candidates("L + " * 200)), "candidates are bounded"


@pytest.mark.parametrize("name", sorted(SYMBOLIC))
def test_every_symbolic_answer_is_found_in_every_form_the_judge_accepts(name: str) -> None:
    reference = SYMBOLIC[name].reference
    if "=" in reference:  # an equation, rearranged: K = J/2 -> 2*K = J
        lhs, rhs = (side.strip() for side in reference.split("="))
        forms = [f"{rhs} = {lhs}", f"2*({lhs}) = 2*({rhs})"]
    elif len(set(re.findall(r"[A-Z]", reference))) == 1:  # one size: an answer only when written as an order
        forms = [f"O({reference})", f"Θ({reference})", rf"\mathcal{{O}}\left({_latex(reference)}\right)"]
    else:
        forms = [reference, f"O({reference})", _latex(reference), rf"\mathcal{{O}}\left({_latex(reference)}\right)"]
    planted = [Doc("kit.py", f'EXAMPLE = "{forms[0]}"\n', "code"),
               Doc("page.html", f"the answer is ${forms[-1]}$ in the end", "prose"),
               Doc("cell 3 output", f"result: {forms[1]}\n", "output")]
    for doc in planted:
        hits = [h for h in _judged(doc) if f"correct answer to {name} " in h]
        assert hits, f"{name}: {doc.text!r} not found"
        assert all(h.startswith(doc.where) for h in hits)
    # a list of the sizes, as the problems name them ("in L, T and J"): not a product (for a product answer, "L T J"
    # written as juxtaposition is the answer itself)
    control = Doc("page.html", "nothing to see: " + ", ".join(re.findall(r"[A-Z]", reference)), "prose")
    assert not _judged(control), "a list of sizes is not an answer"


def test_a_size_alone_is_not_an_order_but_its_order_is() -> None:
    assert "ch6.CNN_TIME" in SYMBOLIC and SYMBOLIC["ch6.CNN_TIME"].reference == "L"
    quiet = Doc("page", "layer $L[2]$ has $2L$ rows, $L - 1$ of them after `L[b, 2t + d, i]`", "prose")
    assert not _judged(quiet)
    assert any("ch6.CNN_TIME" in h for h in _judged(Doc("page", "the seed's answer, $O(L)$, is right", "prose")))
    assert any("ch6.CNN_TIME" in h for h in _judged(Doc("page", r"depth $\Theta(L)$", "prose")))


def test_call_signatures_ignore_names_and_whitespace() -> None:
    a = leaks.call_signatures('W = torch.einsum("hka,hkb->hab", WQ, WK) / math.sqrt(K)')
    b = leaks.call_signatures("out = th.einsum( 'xij , xik->xjk',A,B)")
    assert a == b == {"einsum('abc,abd->acd')"}
    assert leaks.call_signatures("y = x.unfold(1, D, 2)") == {"unfold(1,_,2)"}
    assert leaks.call_signatures("y = torch.softmax(s, dim=-1)") == {"softmax(_,dim=-1)"}
    assert leaks.call_signatures("y = f(a, b)") == set(), "a call without a constant says nothing"


def _sources() -> dict[str, nbformat.NotebookNode]:
    return {c.assignment: c.read() for c in select()}


def _release_docs(sources: dict[str, nbformat.NotebookNode]) -> list[Doc]:
    docs = []
    for chapter in select():
        docs += leaks.notebook_docs(cells.release(sources[chapter.assignment]), f"release/{chapter.notebook}.ipynb")
    return docs


def test_a_solution_call_renamed_is_found_in_the_kit_and_in_outputs() -> None:
    sources = _sources()
    conv = next(s for s in leaks.solutions_of(sources["ch6"], "ch6") if s.cell == "conv_stride2")
    spec = next(c for c in conv.calls if c.startswith("einsum"))
    planted_kit = Doc("attnlab/helpers.py", 'def conv(x, w):\n    return torch.einsum("pqrs, srz -> pqz", x, w)\n', "code")
    planted_out = Doc("release/ch6_language_cnn.ipynb cell 40 output", "Traceback: einsum('nmkw,wkv->nmv', L, W)",
                      "output", "ch6")
    hits = leaks.audit([planted_kit, planted_out], sources).hits
    for doc in (planted_kit, planted_out):
        assert any(h.startswith(doc.where) and spec in h and "conv_stride2" in h for h in hits), (doc.where, hits)


def test_a_page_showing_every_call_of_a_solution_shows_the_solution() -> None:
    sources = _sources()
    solution = next(s for s in leaks.solutions_of(sources["ch3"], "ch3") if s.cell == "attention_weights")
    demo = "\n".join(['Q = torch.einsum("hkj,tj->htk", WQ, M)', 'K_ = torch.einsum("hkj,tj->htk", WK, M)',
                      'a = torch.softmax(torch.einsum("hak,hbk->hab", Q, K_) / 2, dim=-1)'])
    assert leaks.call_signatures(demo) >= solution.calls
    hits = leaks.audit([Doc("ch3_merged_qk.ipynb cell 20", demo, "code", "ch3")], sources).hits
    assert any("every defining call of the solution of 'attention_weights'" in h for h in hits), hits


def test_an_answer_value_in_an_output_is_found() -> None:
    sources = _sources()
    values = leaks.answer_values("ch3", CHECKS, leaks.public_code(sources["ch3"]))
    assert values, "the chapter's value answers evaluate at the sizes it uses"
    name, found = next((n, v) for n, v in sorted(values.items()))
    value = sorted(found, key=float)[-1]
    planted = Doc("ch3_merged_qk.ipynb cell 30 output", f"the counts agree at {value}\n", "output", "ch3")
    hits = leaks.audit([planted], {"ch3": sources["ch3"]}).hits
    assert any(h.startswith(planted.where) and f"shows {value}" in h for h in hits), hits
    other = Doc(planted.where, f"the counts agree at {int(float(value)) + 1}\n", "output", "ch3")
    assert not [h for h in leaks.audit([other], {"ch3": sources["ch3"]}).hits if h.startswith(other.where)]
    short = min(found, key=float)  # two digits: it reads as a clock's seconds
    assert len(short) == 2 and leaks.audit([Doc(planted.where, f"{short}\n", "output", "ch3")], {"ch3": sources["ch3"]}).hits
    clock = Doc(planted.where, f"training [00:{short}<00:{short}, 53.2it/s]\n", "output", "ch3")
    assert not [h for h in leaks.audit([clock], {"ch3": sources["ch3"]}).hits if h.startswith(clock.where)], \
        "a progress bar's clock reading is a time, not a value"


def test_a_function_returning_a_number_is_a_value_answer() -> None:
    """A count graded as a function (upstream on another count) gives its answer away in outputs as a ValueCheck
    does; a function of tensors does not."""
    names = leaks._answer_names(CHECKS)
    assert {"receptive_field", "layers_needed"} <= names["ch6"] and "conv_stride2" not in names["ch6"]
    assert {"params_separate", "layer_params_separate", "layer_params_merged"} <= names["ch3"]
    assert "merge_query_key" not in names["ch3"]
    # evaluated at the sizes the code sets: r_7 = 1 + 2 (2^7 - 1) = 255 for D = 3; 5000 words need 12 layers
    values = leaks.answer_values("ch6", CHECKS, ["T, D = 5000, 3", "l = 7"])
    assert values == {"ch6.receptive_field": {"255"}, "ch6.layers_needed": {"12"}}, values


def test_a_cell_drawing_from_a_value_answer_must_drop_its_outputs() -> None:
    """The safety net under the `answer-output` tag: a plot made from an answer is an image no text search reads."""
    source = next(c for c in select() if c.assignment == "ch3").read()
    for k, cell in enumerate(source.cells):  # stand-in outputs, as an execution leaves them
        if cell.cell_type == "code":
            cell.outputs = [nbformat.v4.new_output("display_data", data={"image/png": "iVBOR", "text/plain": f"fig {k}"})]
            cell.metadata["tags"] = [t for t in cells.tags(cell) if t != cells.ANSWER_OUTPUT]
    names = leaks._answer_names(CHECKS)
    hits = leaks.answer_outputs(list(leaks.notebook_docs(cells.student_view(source), "ch3_merged_qk.ipynb")),
                                names, Figures())
    assert hits and all("tag the cell 'answer-output'" in h for h in hits), hits
    flagged = {int(re.search(r"cell (\d+)", h).group(1)) for h in hits}
    student = cells.student_view(source)
    for k in flagged:  # tag them, as the chapter would: the student edition drops their outputs
        twin = next(c for c in source.cells if c.id == student.cells[k - 1].id)
        twin.metadata["tags"] = cells.tags(twin) + [cells.ANSWER_OUTPUT]
    assert not leaks.answer_outputs(list(leaks.notebook_docs(cells.student_view(source), "ch3_merged_qk.ipynb")),
                                    names, Figures())


@pytest.mark.slow
def test_the_release_notebooks_and_the_kit_give_no_answer_away() -> None:
    """What a student downloads: every chapter's release notebook and the kit's source (no book build needed:
    `pytest tests/book/test_book_audit.py -k release` is the quickest leak check after editing a chapter)."""
    from autograder.kit import kit_files

    sources = _sources()
    kit = [doc for rel in kit_files(KIT) for doc in leaks.file_docs(KIT / rel, f"attnlab/{rel}")]
    findings = leaks.audit(_release_docs(sources) + kit, sources, files=len(sources) + len(kit))
    print(findings.figures)
    assert findings.figures.judged and findings.figures.solution_calls and findings.figures.values
    assert not findings.hits, "\n".join(findings.hits)


def test_index_equation_questions_are_judged_on_equations_sets_and_einsum_specs() -> None:
    """A question kind without variables (the index-equation answers) is judged on every index equation, every
    set of them and every einsum spec; here with a stand-in judge that accepts the merged W~Q."""

    class EquationQuestion:  # a check kind that names no variables
        reference = "WQt[h,a,b] = sum_k WQ[h,k,a] * WK[h,k,b] / sqrt(K)"

    accepted = {"hka,hkb->hab", "Wt[h,i,j] = sum_k WQ[h,k,i] * WK[h,k,j] / sqrt(K)",
                "A[h,k,t] = sum_j WQ[h,k,j] * M[t,j]\nWt[h,i,j] = sum_k WQ[h,k,i] * WK[h,k,j] / sqrt(K)"}

    def decide(name: str, candidate: str) -> tuple[bool, str]:
        assert name == "ch3.WQ_TILDE"
        return candidate in accepted, "accepted" if candidate in accepted else "no"

    docs = [Doc("kit.py", 'def merge(A, B):\n    return torch.einsum("hka,hkb->hab", A, B)\n', "code"),
            Doc("page", "Write\n\n    A[h,k,t] = sum_j WQ[h,k,j] * M[t,j]\n"
                        "    Wt[h,i,j] = sum_k WQ[h,k,i] * WK[h,k,j] / sqrt(K)\n\nand so on.", "prose")]
    equations: dict[str, list[str]] = {}
    for doc in docs:
        for candidate in leaks.doc_equation_candidates(doc):
            equations.setdefault(candidate, []).append(doc.where)
    figures = Figures()
    hits = leaks.judge_candidates({}, {"ch3.WQ_TILDE": EquationQuestion()}, figures, equations, decide=decide)
    assert len(hits) == 3 and figures.judged == len(equations) >= 3, (hits, sorted(equations))
    assert any(h.startswith("kit.py") and "'hka,hkb->hab'" in h for h in hits)
    assert sum(h.startswith("page") for h in hits) == 2, "the equation alone and the set of two"


def test_an_einsum_answer_with_its_scale_is_judged_by_the_real_question() -> None:
    """Chapter 3's W~Q as an einsum spec with its scale inside the quotes, judged by the grader's own check."""
    from autograder.checks import CHECKS

    doc = Doc("attnlab/helpers.py", 'EXAMPLE = "hka,hkb->hab / sqrt(K)"\n', "code")
    equations = {candidate: [doc.where] for candidate in leaks.doc_equation_candidates(doc)}
    assert "hka,hkb->hab / sqrt(K)" in equations, sorted(equations)
    figures = Figures()
    hits = leaks.judge_candidates({}, {"ch3.WQ_TILDE": CHECKS["ch3.WQ_TILDE"]}, figures, equations)
    assert any("'hka,hkb->hab / sqrt(K)' is a correct answer to ch3.WQ_TILDE" in h for h in hits), hits
    wrong = Doc("attnlab/helpers.py", 'EXAMPLE = "hka,hkb->hba / sqrt(K)"\n', "code")
    equations = {candidate: [wrong.where] for candidate in leaks.doc_equation_candidates(wrong)}
    assert not leaks.judge_candidates({}, {"ch3.WQ_TILDE": CHECKS["ch3.WQ_TILDE"]}, Figures(), equations)


# ---------------------------------------------------------------- fragments of equation answers in the kit (24.3)

PLANTED_FRAGMENTS = {  # where a kit might show it -> (the text, what of which answer it is)
    "a right-hand side alone, in a docstring": ('"""Read a word\'s row: `E[w[b,t], j]`."""', "ch6.EMBED_EQUATION"),
    "one line of a multi-line answer, renamed": ('"""V[c] = sum_{a,b} alpha[a,b] * M[a,b,c]"""', "ch5.CAPTION_EQUATIONS"),
    "an index form, in a docstring": ('"""an index combination: M[b, 2*t + d, j]"""', "ch6.STRIDE2_EQUATION"),
    "an index form, in an error message": ('raise ValueError(f"{name}: write a combination such as x[b, 2*t + d, j]")',
                                         "ch6.STRIDE2_EQUATION"),
    "the call of a question's declared function": ('"""z_next[:] = CELL(z[:], V[:], E[w[t], :])"""',
                                                   "ch5.CAPTION_EQUATIONS"),
}


@pytest.fixture(scope="module")
def sources() -> dict[str, nbformat.NotebookNode]:
    return _sources()


@pytest.mark.parametrize("where", sorted(PLANTED_FRAGMENTS))
def test_a_fragment_of_an_equation_answer_in_the_kit_is_found(where: str, sources) -> None:
    text, question = PLANTED_FRAGMENTS[where]
    hits = leaks.kit_fragments([Doc("attnlab/helpers.py", f"def f(name):\n    {text}\n", "code")], sources, CHECKS)
    assert any(question in h for h in hits), (where, hits)
    elsewhere = Doc("release/ch0_attention_basics.ipynb cell 3", text, "code")  # only the kit is searched so
    assert not leaks.kit_fragments([elsewhere], sources, CHECKS)


def test_the_kit_shows_no_fragment_of_an_equation_answer(sources) -> None:
    from autograder.course import kit_files

    kit = [doc for rel in kit_files(KIT) for doc in leaks.file_docs(KIT / rel, f"attnlab/{rel}")]
    assert any("NEAREST" in doc.text for doc in kit), "the equation language's docstring uses its toy problem"
    assert not leaks.kit_fragments(kit, sources, CHECKS)


def test_a_value_answer_that_never_returns_does_not_stop_the_audit() -> None:
    def layers(T: int, D: int) -> int:  # D = 1 never widens the receptive field: the loop never ends
        n, r = 0, 1
        while r < T:
            n, r = n + 1, 1 + (D - 1) * (2 ** (n + 1) - 1)
        return n

    assert leaks._within(5.0, layers, 16, 3) == 4  # 1 + 2 * (2^4 - 1) = 31 words after 4 layers
    with pytest.raises(leaks._TooSlow):
        leaks._within(0.2, layers, 16, 1)


# ---------------------------------------------------------------- parts of symbolic answers stated in prose (35.2)

# Sentences the student edition once held (issue 35), each stating part of a graded answer: planted back after
# the problem, each is found; the release as it is states none.
PLANTED_SENTENCES = {
    "ch1.SCORES_MEMORY": "your layer's memory grows by about four times, as its scores have $T^2$ entries per head.",
    "ch1.LAYER_WORK": "A layer's work (Problem 1.5) grows like $T^2$ once $T$ is large.",
    "ch6.RNN_TIME": "the CELL of layer $\\ell$ at position $t$ runs at step $\\ell - 1 + t$, so each CELL counts once.",
    "ch6.RNN_PATH": "the CELL of layer ℓ at position t runs at step ℓ−1+t.",
    "ch7.BLOCK_WORK": "The projections grow like $T$; only attention's $T^2$ part differs.",
}


def _planted(sources: dict[str, nbformat.NotebookNode], question: str, sentence: str) -> list[Doc]:
    """The release notebooks with `sentence` in a markdown cell right after the problem that names `question`."""
    chapter, _, name = question.partition(".")
    docs = []
    for ch in select():
        release = cells.release(sources[ch.assignment])
        if ch.assignment == chapter:
            at = next(k for k, c in enumerate(release.cells) if c.cell_type == "markdown" and name in c.source)
            release.cells.insert(at + 1, nbformat.v4.new_markdown_cell(sentence))
        docs += leaks.notebook_docs(release, f"release/{ch.notebook}.ipynb")
    return docs


@pytest.mark.parametrize("question", sorted(PLANTED_SENTENCES))
def test_a_sentence_stating_part_of_an_answer_is_found(question: str, sources) -> None:
    hits = leaks.order_statements(_planted(sources, question, PLANTED_SENTENCES[question]), CHECKS)
    assert any(f"{question} " in h or h.endswith(question) for h in hits), (question, hits)


def test_the_release_states_no_part_of_an_answer_after_its_problem(sources) -> None:
    """The worked examples before a problem may use the same orders (Chapter 1's all pairs: $T^2$ numbers)."""
    docs = _release_docs(sources)
    assert any("$T^2$ numbers" in d.text for d in docs if d.where.startswith("release/ch1")), "the worked example"
    assert not leaks.order_statements(docs, CHECKS)
    pages = [Doc(d.where, d.text, "prose", d.chapter) for d in docs]  # a built page shows the code as text
    assert not leaks.order_statements(pages, CHECKS)


def test_answer_parts_are_orders_in_one_size_and_terms_in_several() -> None:
    parts = set(map(str, leaks.answer_parts("T^2*J + T*J^2", ("T", "J")).values()))
    assert parts == {"its order in T", "its order in J", "its term J*T**2", "its term J**2*T"}, parts
    assert not leaks.answer_parts("L*log(T)", ("L", "T")), "a single term, linear in each size: only the judge's"


def test_the_kit_spells_no_marker_the_student_edition_refuses() -> None:
    """The build refuses a student edition whose kit holds a solution or hidden-test marker (attnlab.validate once
    cut hidden tests out of a cell by spelling the markers); this finds it without building."""
    from coursenb import cells as nbcells
    from publish import audit

    text = audit.kit_text()
    assert not [m for m in nbcells.MARKERS if m in text]  # (the kit defines hidden_check itself)
    assert [m for m in nbcells.MARKERS if m in text + "### BEGIN HIDDEN TESTS"], "a planted marker is found"


def test_a_positive_multiple_is_decided_by_cancel_or_simplify() -> None:
    """`cancel` decides rational ratios (a number or not); a ratio it leaves with a logarithm goes on to `simplify`."""
    import sympy

    T, J = sympy.symbols("T J", positive=True)
    assert leaks._positive_multiple(3 * T**2 * J / 2, T**2 * J)
    assert not leaks._positive_multiple(-T**2, T**2)
    assert not leaks._positive_multiple(T**3 + T, T**2)
    assert leaks._positive_multiple(sympy.log(T**2), sympy.log(T))
    assert not leaks._positive_multiple(T * sympy.log(T), T)  # log(T): not rational, and no number after simplify
    assert leaks._positive_multiple(sympy.sqrt(T) * sympy.log(T * J), sympy.sqrt(T) * (sympy.log(T) + sympy.log(J)))
