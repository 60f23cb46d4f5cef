"""How often Chapter 4's trained check (`ch4.blank_lm`) fails a reasonable head, and that it fails wrong ones.

Each draw is what the grader does for one notebook: the secret draw of `autograder.checks.ch4.blank_lm_trials`
(training sentences, held-out blanks, renaming) from seed `d`, the chapter's own trainer (`fit_blank_lm`, read
from the locked cells of chapters/ch4_blank_lm.py, run on the CPU) with the head, then the judge's
`verify_lm`. Prints, per head, the gap's quantiles (nats above the Bayes optimum) and how many draws fail
the check; "retry" counts the pairs of draws (d, d+1) that both fail, which is how often a check that draws
again once after a failure would fail; ">0.10" counts the draws above the earlier bound of 0.10 nats.

    python benchmarks/ch4_false_fail.py --draws 300 --processes 16
    python benchmarks/ch4_false_fail.py --draws 3 --heads reference,mlp --processes 1

Heads: `reference` (solutions.ch4.BlankHead, the seed's two matrices), `linear_bias` (one linear map of the
two states into word-vector space, with a bias: scores E h + a bias through the vectors), `mlp` (a two-layer
MLP of the two states into word-vector space), and `wrong` (every head of solutions/mistakes/ch4.py that must
lose test_blank_lm). Needs torch and this repository only (no nbgrader, no notebook).
"""
from __future__ import annotations

import argparse
import ast
import math
import re
import statistics
import sys
import textwrap
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# autograder.checks' own __init__ gathers every chapter's checks (and their equation and symbolic judges, which
# need lark and sympy), and solutions.ch4 reads the chapter with nbgrader's tools: Chapter 4's check module alone
# is needed here, with the chapter's head and trainer read from its text (`reference_module`, `run_cells`).
_checks = types.ModuleType("autograder.checks")
_checks.__path__ = [str(ROOT / "autograder" / "checks")]
sys.modules.setdefault("autograder.checks", _checks)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

CHAPTER = ROOT / "chapters" / "ch4_blank_lm.py"
TRAINER_CELLS = ("blank_lm_model", "fit_blank_lm")  # the locked cells the grader runs


class LinearBiasHead(nn.Module):
    """scores[n, w] = E[w] . (A [z_fwd; z_bwd] + c) + E[w] . b: one linear map with a bias."""

    def __init__(self, J: int, U: int) -> None:
        super().__init__()
        self.A = nn.Linear(2 * J, U)
        self.b = nn.Parameter(torch.zeros(U))

    def forward(self, z_fwd_prev: torch.Tensor, z_bwd_next: torch.Tensor, E: torch.Tensor) -> torch.Tensor:
        h = self.A(torch.cat([z_fwd_prev, z_bwd_next], dim=-1))
        return torch.log_softmax(h @ E.T + E @ self.b, dim=-1)


class MLPHead(nn.Module):
    """scores[n, w] = E[w] . W2 tanh(W1 [z_fwd; z_bwd] + b1) + b2: a two-layer MLP into word-vector space."""

    def __init__(self, J: int, U: int, hidden: int = 128) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2 * J, hidden), nn.Tanh(), nn.Linear(hidden, U))

    def forward(self, z_fwd_prev: torch.Tensor, z_bwd_next: torch.Tensor, E: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(self.net(torch.cat([z_fwd_prev, z_bwd_next], dim=-1)) @ E.T, dim=-1)


def cell_source(grade_id: str) -> str:
    """The source of the chapter's cell `grade_id` (read from its text: no notebook tools needed)."""
    cells = [c.split("\n", 1) for c in re.split(r"^# %%", CHAPTER.read_text(), flags=re.M)]
    found = [body for head, *body in cells if f'"grade_id": "{grade_id}"' in head]
    if len(found) != 1 or not found[0]:
        raise SystemExit(f"{CHAPTER}: no single cell with grade_id {grade_id!r}")
    return found[0][0]


def run_cells(grade_ids: tuple[str, ...], **names: object) -> dict:
    """The namespace after running the chapter's cells `grade_ids` (its solution markers are comments)."""
    from attnlab.data import grammar
    from attnlab.data.grammar import BOS, EOS, GRAMMAR, MASK, PAD

    ns = {"torch": torch, "nn": nn, "F": torch.nn.functional, "math": math, "grammar": grammar, "GRAMMAR": GRAMMAR,
          "BOS": BOS, "EOS": EOS, "MASK": MASK, "PAD": PAD, "device": torch.device("cpu"), **names}
    for gid in grade_ids:
        exec(compile(cell_source(gid), f"{CHAPTER.name}:{gid}", "exec"), ns)
    return ns


def wrong_heads() -> dict[str, type[nn.Module]]:
    """Every head of solutions/mistakes/ch4.py that must lose test_blank_lm, read from its text (a whole class,
    or the reference cell patched as `Patch.wrong_source` does), so that no notebook tool is needed."""
    reference = cell_source("blank_head")
    out = {}
    for node in ast.walk(ast.parse((ROOT / "solutions" / "mistakes" / "ch4.py").read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("Wrong", "Patch")):
            continue
        args = [ast.literal_eval(a) for a in node.args]
        keywords = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
        if node.func.id == "Wrong":
            cell, source, loses, why = args
        else:
            cell, old, new, loses, why = args
            if reference.count(old) != 1:
                raise SystemExit(f"mistake {why!r}: its anchor is not once in the reference cell")
            if keywords.get("line"):
                lines = reference.split("\n")
                k = next(k for k, text in enumerate(lines) if old in text)
                lines[k] = lines[k][:len(lines[k]) - len(lines[k].lstrip())] + new
                source = "\n".join(lines)
            else:
                source = reference.replace(old, new)
        if cell == "blank_head" and "test_blank_lm" in loses:
            ns = {"torch": torch, "nn": nn, "math": math}
            exec(textwrap.dedent(source), ns)
            out[f"wrong{len(out)}: {why[:40]}"] = ns["BlankHead"]
    return out


def reference_module() -> types.ModuleType:
    """`solutions.ch4` as the judge's check imports it: the chapter's own BlankHead and head_outputs."""
    module = types.ModuleType("solutions.ch4")
    module.__dict__.update(run_cells(("blank_head", "head_outputs")))
    return module


def heads(names: list[str]) -> dict[str, type[nn.Module]]:
    """Head classes by name (`wrong` expands to every mistake that must lose test_blank_lm)."""
    out: dict[str, type[nn.Module]] = {}
    for name in names:
        if name == "reference":
            out[name] = sys.modules["solutions.ch4"].BlankHead
        elif name == "linear_bias":
            out[name] = LinearBiasHead
        elif name == "mlp":
            out[name] = MLPHead
        elif name == "wrong":
            out.update(wrong_heads())
        else:
            raise SystemExit(f"unknown head {name!r} (reference, linear_bias, mlp, wrong)")
    return out


def trainer(head: type[nn.Module]):
    """The chapter's `fit_blank_lm`, its locked cells run in a namespace whose BlankHead is `head`."""
    return run_cells(TRAINER_CELLS, BlankHead=head)["fit_blank_lm"]


def one_draw(job: tuple[str, int]) -> tuple[str, int, float, bool, float]:
    """(head, draw, gap, passed, seconds) for one secret draw, graded as the grader does."""
    from autograder.checks import ch4 as checks

    name, draw = job
    torch.set_num_threads(1)
    trial = checks.blank_lm_trials(torch.Generator().manual_seed(draw))[0]
    fit = trainer(HEADS[name])
    start = time.perf_counter()
    try:
        out = fit(*trial[:-1])
    except Exception:  # noqa: BLE001 - the grader fails the cell (e.g. a head with nothing to train)
        return name, draw, math.inf, False, time.perf_counter() - start
    seconds = time.perf_counter() - start
    problem = checks.verify_lm([trial], [out])
    if torch.isfinite(out).all():
        cross, optimum = checks.held_out_gap(trial, out)
        gap = cross - optimum
    else:
        gap = math.inf
    return name, draw, gap, not isinstance(problem, str), seconds  # a pass is a Passed (with its figure)


HEADS: dict[str, type[nn.Module]] = {}


def _quantile(ordered: list[float], p: float) -> float:
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=300, help="secret draws per head (seeds first-draw, ...)")
    ap.add_argument("--first-draw", type=int, default=0)
    ap.add_argument("--heads", default="reference,linear_bias,mlp,wrong")
    ap.add_argument("--processes", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=None,
                    help="stop after this much wall time and report the draws finished (draw-major order: every head alike)")
    args = ap.parse_args()
    import solutions

    solutions.ch4 = sys.modules["solutions.ch4"] = reference_module()  # the chapter's, without notebook tools
    HEADS.update(heads(args.heads.split(",")))
    from autograder.checks import ch4 as checks

    jobs = [(name, d) for d in range(args.first_draw, args.first_draw + args.draws) for name in HEADS]
    print(f"{len(jobs)} trainings ({args.draws} draws x {len(HEADS)} heads), {args.processes} processes, "
          f"torch {torch.__version__}, bound {checks.GAP} nats, {checks.STEPS} steps", flush=True)
    start = time.perf_counter()
    if args.processes > 1:
        import multiprocessing

        results = []
        with multiprocessing.get_context("fork").Pool(args.processes) as pool:
            for result in pool.imap_unordered(one_draw, jobs):
                results.append(result)
                if args.seconds is not None and time.perf_counter() - start > args.seconds:
                    pool.terminate()
                    break
    else:
        results = [one_draw(job) for job in jobs]
    print(f"wall {time.perf_counter() - start:.0f} s, "
          f"training {statistics.median(r[4] for r in results):.1f} s per draw (median, one thread)\n")
    print(f"{'head':<48} {'draws':>5} {'min':>6} {'q01':>6} {'median':>6} {'q99':>6} {'max':>6} {'fail':>5} {'retry':>5} "
          f"{'>0.10':>5}")
    for name in HEADS:
        mine = sorted((r for r in results if r[0] == name), key=lambda r: r[1])
        gaps = sorted(r[2] for r in mine)
        failed = {r[1] for r in mine if not r[3]}
        retry = sum(1 for d in failed if d + 1 in failed)
        q01, q50, q99 = (_quantile(gaps, p) for p in (0.01, 0.5, 0.99))
        print(f"{name:<48} {len(gaps):>5} {gaps[0]:>6.3f} {q01:>6.3f} {q50:>6.3f} {q99:>6.3f} "
              f"{gaps[-1]:>6.3f} {len(failed):>5} {retry:>5} {sum(g > 0.10 for g in gaps):>5}")


if __name__ == "__main__":
    main()
