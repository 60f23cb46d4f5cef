"""Chapter 4's hidden checks, graded by behaviour: each defence against an attack that it stops.

Fast: no training. The heads are judged through `judge` exactly as the grader does; the trained
model's outputs are stood in for by tensors built from the exact posterior, so each attack on the
held-out check (peeking at the blank, ignoring the renaming, claiming a low loss) is one tensor.
In the engine, a head that searches its process for the parts of the trials only the judge may hold (the
renaming, the held-out words) finds none: it is an attack of tests/adversarial/ch4.py, graded beside every
chapter's invariants (tests/security/test_engine_attacks.py).
"""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import nbformat
import pytest
import torch
import torch.nn as nn

from attnlab import wire
from attnlab.data.grammar import GRAMMAR
from attnlab.grading import Outcome, run_trials
from autograder.checks import ch4 as checks
from autograder.gradinglog import figures
from autograder.judge import judge, make_trials, sent
from coursenb.chapters import select
from solutions import ch4
from solutions.mistakes import source_of
from solutions.mistakes.ch4 import WRONG
from tests.adversarial.ch4 import PRYING_HEAD


@pytest.fixture(scope="module")
def head_trials() -> list[tuple]:
    return make_trials("ch4.blank_head", 11)


@pytest.fixture(scope="module")
def lm_trials() -> list[tuple]:
    return make_trials("ch4.blank_lm", 12)


def _head(source: str) -> type[nn.Module]:
    ns = {"torch": torch, "nn": nn}
    exec(textwrap.dedent(source), ns)
    return ns["BlankHead"]


def _judge_head(trials: list[tuple], head: type[nn.Module]):
    answer = lambda *args: ch4.head_outputs(*args, BlankHead=head)  # noqa: E731 - the notebook's head_outputs
    return judge("ch4.blank_head", trials, run_trials(answer, sent("ch4.blank_head", trials)))


def test_the_seeds_head_passes(head_trials) -> None:
    verdict = _judge_head(head_trials, ch4.BlankHead)
    assert verdict.passed, verdict.message
    (name, value, bound, margin), = figures(verdict.message)  # the head's figure reaches a pass too (issue 24.6)
    assert name == "normalisation error in tolerances" and bound == 1.0 and 0 <= value < 1 and margin == pytest.approx(
        bound - value, abs=1e-3)


@pytest.mark.parametrize("wrong", [w for w in WRONG if "test_blank_head" in w.loses], ids=lambda w: w.why[:40])
def test_each_wrong_head_fails_with_a_reason(head_trials, wrong) -> None:
    verdict = _judge_head(head_trials, _head(source_of(wrong, "ch4")))
    assert not verdict.passed
    assert "head" in verdict.message or "rows" in verdict.message


def test_a_head_with_a_table_per_word_id_fails_the_renaming(head_trials) -> None:
    """Attack: scores that depend on a word's id (a bias per word), not only on its vector."""

    class ByIdBias(ch4.BlankHead):
        def forward(self, z_fwd_prev, z_bwd_next, E):
            bias = torch.arange(E.shape[0], dtype=E.dtype, device=E.device)
            return torch.log_softmax(super().forward(z_fwd_prev, z_bwd_next, E) + bias, dim=-1)

    verdict = _judge_head(head_trials, ByIdBias)
    assert not verdict.passed and "renaming the words" in verdict.message


def test_a_head_that_mixes_blanks_fails_the_reordering(head_trials) -> None:
    """Attack: a blank's prediction that reads the other blanks (a mean over the batch)."""

    class Mixing(ch4.BlankHead):
        def forward(self, z_fwd_prev, z_bwd_next, E):
            z = z_fwd_prev + torch.cumsum(z_bwd_next, dim=0)
            return super().forward(z, z_bwd_next, E)

    verdict = _judge_head(head_trials, Mixing)
    assert not verdict.passed and "reordering the blanks" in verdict.message


def test_private_parts_are_never_sent(head_trials, lm_trials) -> None:
    """The renaming, the held-out sentences and their blanks stay in the grader; what is sent is plain data."""
    for name, trials in (("ch4.blank_head", head_trials), ("ch4.blank_lm", lm_trials)):
        public = sent(name, trials)
        assert all(len(p) == len(t) - 1 for p, t in zip(public, trials))
        assert not any(isinstance(x, dict) for p in public for x in p)
        wire.decode(wire.encode(public))  # plain data only
    _, _, query_ids, _, query_t, _, _, _ = sent("ch4.blank_lm", lm_trials)[0]
    held = len(lm_trials[0][-1]["held"])
    assert (query_ids[torch.arange(held), query_t[:held]] == checks.MASK).all(), "every held-out blank is sent as <mask>"
    perm = lm_trials[0][-1]["perm"]
    assert not torch.equal(perm, torch.arange(len(perm))), "the words are renamed"


def _lm(lm_trials, log_p: torch.Tensor):
    return judge("ch4.blank_lm", lm_trials, [Outcome(value=log_p)])


def test_the_exact_posterior_passes_and_sets_the_optimum(lm_trials) -> None:
    log_p = checks.lm_reference(*lm_trials[0])
    verdict = _lm(lm_trials, log_p)
    assert verdict.passed, verdict.message
    (name, value, bound, margin), = figures(verdict.message)  # the figure reaches a pass too
    assert name == "gap in nats" and bound == checks.GAP and 0 <= value < 1e-3 and margin == pytest.approx(bound - value,
                                                                                                        abs=1e-3)
    cross, optimum = checks.held_out_gap(lm_trials[0], log_p)
    assert 0 <= cross - optimum < 1e-3
    assert optimum == pytest.approx(GRAMMAR.blank_optimum(lm_trials[0][-1]["held"]), abs=0.15)  # one blank vs all


def test_a_uniform_guess_fails(lm_trials) -> None:
    queries, n_words = lm_trials[0][2].shape[0], lm_trials[0][5]
    verdict = _lm(lm_trials, torch.zeros(queries, n_words))
    assert not verdict.passed and "above the Bayes optimum" in verdict.message
    (_, value, bound, margin), = figures(verdict.message)
    assert value > bound and margin < 0


def test_the_public_grammar_without_the_renaming_fails(lm_trials) -> None:
    """Attack: skip training and return the public grammar's exact posterior, in the original word ids."""
    private = lm_trials[0][-1]
    held, t = private["held"], private["t"]
    post = GRAMMAR.blank_posteriors(held)[torch.arange(len(held)), t - 1]
    post = torch.cat([post, post[:checks.PAIRS]])
    verdict = _lm(lm_trials, torch.log(post + 1e-6))
    assert not verdict.passed and "above the Bayes optimum" in verdict.message


def test_a_model_that_reads_the_blank_fails(lm_trials) -> None:
    """Attack: predictions that change with the word in the blank (a model that reads position t)."""
    log_p = checks.lm_reference(*lm_trials[0]).clone()
    held = log_p.shape[0] - checks.PAIRS
    log_p[held:] = log_p[held:].roll(1, dims=1)
    verdict = _lm(lm_trials, log_p)
    assert not verdict.passed and "changed" in verdict.message


def test_no_output_can_claim_less_than_the_optimum(lm_trials) -> None:
    """The judge renormalises each row and scores it against the exact posterior: the excess is a KL divergence."""
    gen = torch.Generator().manual_seed(0)
    for scale in (0.0, 1.0, 30.0, 1e4):
        log_p = scale * torch.randn(lm_trials[0][2].shape[0], lm_trials[0][5], generator=gen)
        cross, optimum = checks.held_out_gap(lm_trials[0], log_p)
        assert cross >= optimum - 1e-9


@pytest.mark.parametrize("bad", [None, "text", torch.zeros(3, 3), torch.full((450, 52), float("nan"))],
                         ids=["none", "text", "shape", "nan"])
def test_bad_outputs_fail_with_a_reason(lm_trials, bad) -> None:
    verdict = _lm(lm_trials, bad)
    assert not verdict.passed and verdict.message



def test_a_prying_head_fails_where_the_private_parts_are(head_trials) -> None:
    """The positive control: in a process that holds whole trials (this one), the prying head finds them."""
    head = _head(PRYING_HEAD)
    verdict = _judge_head(head_trials, head)
    assert not verdict.passed and "NaN" in verdict.message
    assert head.searched is not None


def test_the_trained_check_trains_with_the_course_trainer() -> None:
    """The trainer, the model, head_outputs and the bound are locked cells: a submission that rewrites them (to
    return the grammar's posterior, say, to train longer, or to loosen its visible test) is graded with the
    source's, restored by grade_id."""
    from autograder.engine import notebook as nbmod
    from coursenb.cells import grade_id, is_locked

    source = select(["ch4"])[0].read()
    locked = {grade_id(c): c.source for c in source.cells if grade_id(c) and is_locked(c)}
    assert {"head_outputs", "blank_lm_model", "fit_blank_lm", "blank_lm_bound"} <= set(locked)
    assert "def fit_blank_lm(" in locked["fit_blank_lm"] and "class BlankLM(" in locked["blank_lm_model"]
    submission = nbformat.from_dict(source)
    for c in submission.cells:
        if grade_id(c) in ("head_outputs", "blank_lm_model", "fit_blank_lm", "blank_lm_bound"):
            c.source = "def fit_blank_lm(*args):\n    return EXACT_POSTERIOR\n"
    restored = nbmod.restore(submission, source)
    sources = {grade_id(c): c.source for c in restored.nb.cells if grade_id(c)}
    for gid in ("head_outputs", "blank_lm_model", "fit_blank_lm", "blank_lm_bound"):
        assert sources[gid] == locked[gid]
    assert sum("was changed in the submission and was restored" in n for n in restored.notes) == 4


@pytest.mark.parametrize("kind", ["states", "everything"])
def test_a_head_that_ignores_an_input_fails(head_trials, kind) -> None:
    """Attack: a head with every tested property but one, that it reads its inputs."""

    class Ignoring(ch4.BlankHead):
        def forward(self, z_fwd_prev, z_bwd_next, E):
            if kind == "states":
                z_fwd_prev, z_bwd_next = torch.ones_like(z_fwd_prev), torch.ones_like(z_bwd_next)
                return super().forward(z_fwd_prev, z_bwd_next, E)
            return torch.log_softmax(super().forward(z_fwd_prev, z_bwd_next, E) * 0, dim=-1)

    verdict = _judge_head(head_trials, Ignoring)
    assert not verdict.passed and "did not change" in verdict.message


def test_one_redraw_that_leaves_the_output_still_fails_no_right_head(head_trials) -> None:
    """A right head's output can stay within DEPENDS on one redraw by chance (|V| = 2, width 2: about 1 draw in
    2000, seen failing the mistake corpus' forward-only head on its head cell): reading the inputs is judged over
    every trial of a kind. Here the seed's head answers its base output on the first redraw of each kind, as such a
    draw would: it passes; answering it on every redraw of a kind fails."""
    outcomes = run_trials(lambda *a: ch4.head_outputs(*a), sent("ch4.blank_head", head_trials))
    base_of = {k: t[-1]["base"] for k, t in enumerate(head_trials) if t[-1]["kind"] in ("states", "vectors")}
    first = {kind: min(k for k in base_of if head_trials[k][-1]["kind"] == kind) for kind in ("states", "vectors")}
    still = list(outcomes)
    for k in first.values():
        still[k] = outcomes[base_of[k]]
    verdict = judge("ch4.blank_head", head_trials, still)
    assert verdict.passed, verdict.message
    for kind in ("states", "vectors"):
        frozen = [outcomes[base_of[k]] if head_trials[k][-1]["kind"] == kind else o for k, o in enumerate(outcomes)]
        verdict = judge("ch4.blank_head", head_trials, frozen)
        assert not verdict.passed and "did not change" in verdict.message and "on any trial" in verdict.message


def test_the_trained_checks_bound_has_one_home_the_chapter() -> None:
    """GAP_BOUND is the chapter's locked cell blank_lm_bound: the hidden check, the visible test, the plot and the
    problem's text read it, and no other bound is written in the chapter's code or in the check."""
    chapter = select(["ch4"])[0]
    nb = chapter.read()
    by_id = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in nb.cells}
    home = by_id["blank_lm_bound"]
    assert home.metadata["nbgrader"]["locked"] and not home.metadata["nbgrader"]["solution"], "a given, locked cell"
    given: dict = {}
    exec(home.source, given)
    assert checks.GAP == ch4.GAP_BOUND == given["GAP_BOUND"], (checks.GAP, ch4.GAP_BOUND, given["GAP_BOUND"])
    assert given["NEAR_BOUND"] < given["GAP_BOUND"], "the visible test warns below the bound"
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code" and c is not home)
    for reader in ("GAP_BOUND", "NEAR_BOUND"):
        assert reader in by_id["test_blank_lm"].source, f"the visible test reads {reader}"
    assert "OPTIMUM + GAP_BOUND" in code, "the plot draws the bound from the chapter's constant"
    bound = f"{given['GAP_BOUND']:.2f}"
    written = {f"{float(x):.2f}" for x in re.findall(r"(?<![\w.])0\.\d+", code)}
    assert bound not in written and f"{given['NEAR_BOUND']:.2f}" not in written, "a bound written twice in the code"
    check_code = "\n".join(line.split("#")[0] for line in Path(checks.__file__).read_text().splitlines())
    assert re.search(r"^GAP = ch4\.GAP_BOUND$", check_code, re.M), "the check reads the chapter's bound"
    assert bound not in {f"{float(x):.2f}" for x in re.findall(r"(?<![\w.])0\.\d+", check_code)}, \
        "the check writes its own bound"
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert f"within **{bound} nats**" in text, "Problem 4.1 states the bound the check applies"
    root = Path(__file__).resolve().parents[2]  # the README and the instructors' page repeat it: the same
    for page in (root / "README.md", *sorted((root / "front").glob("*.md"))):
        stated = set(re.findall(r"within \**(\d+\.\d+)\** nats", page.read_text()))
        assert stated <= {bound}, f"{page.name} states the trained check's bound as {stated}, the chapter's is {bound}"
