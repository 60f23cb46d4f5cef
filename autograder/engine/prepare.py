"""Preparing a job, in the grader: read and restore the submission, draw its own trials, pack it for a worker.

Each notebook gets trial inputs of its own, drawn from a seed derived from the run's secret and
the submission's key (student, assignment, notebook): one student's outputs are never the
answers to another student's trials, and a notebook graded again in the same run (a retry)
sees the same inputs. A bad file becomes a job with a `problem` (zero, with the reason),
never an exception.
"""
from __future__ import annotations

import hashlib
import hmac
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from autograder.engine import notebook as nbmod
from autograder.engine import store
from autograder.engine.limits import Limits
from autograder.errors import AutograderError
from coursenb import cells

if TYPE_CHECKING:  # imported where the first source is read: after the sandboxes start (autograder.startup)
    import nbformat


class EngineError(AutograderError):
    """The course cannot be graded as it is (a user-facing sentence)."""


@dataclass
class Source:
    """A source notebook, its checksum, its graded cells and the checks they call."""

    nb: nbformat.NotebookNode
    sha256: str | None
    points: dict[str, float]
    checks: list[str]
    release: dict[str, str] = field(default_factory=dict)  # {grade_id: checksum} of the released answers
    assignment: str = ""
    notebook: str = ""


@dataclass
class Job:
    """One submission on its way through the engine."""

    sub: store.Submission
    seed: int = 0
    restored: nbmod.Restored | None = None
    code: list[int] = field(default_factory=list)
    problem: str | None = None  # set: not run, every graded cell scores 0 for this reason
    trials: dict[str, bytes] = field(default_factory=dict)
    header: dict = field(default_factory=dict)
    blobs: list[bytes] = field(default_factory=list)
    started: float = 0.0
    prepare_s: float = 0.0
    attempts: int = 0


def notebook_seed(run_seed: int, key: str) -> int:
    """The seed of one notebook's trials: a keyed hash of its submission key (62 bits)."""
    digest = hmac.new(run_seed.to_bytes(16, "little", signed=True), key.encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "little") >> 2


class Preparer:
    """Sources (read once) and jobs (one per submission)."""

    def __init__(self, limits: Limits, run_seed: int, judge, threads: int) -> None:
        self.limits, self.run_seed, self.judge, self.threads = limits, run_seed, judge, threads
        self.sources: dict[Path, Source] = {}
        self.ids = 0
        self.asked: dict[tuple[str, int], tuple[list[str], object]] = {}  # (key, seed) -> (checks, trials asked)

    def source(self, sub: store.Submission) -> Source:
        key = sub.source_path  # a notebook of an older kept release is graded by that release's source
        if key not in self.sources:
            import nbformat

            nb = nbformat.read(sub.source_path, as_version=4)
            points = {cells.grade_id(c): cells.points(c) for c in nb.cells if cells.grade_id(c) and cells.is_graded(c)}
            checks = list(dict.fromkeys(n for c in nb.cells if cells.is_test(c) for n in cells.hidden_check_names(c.source)))
            unknown = self.judge.known(checks)
            if unknown:
                raise EngineError(f"{sub.source_path.name} calls no hidden check named {unknown[0]!r}")
            self.sources[key] = Source(nb, store.sha256_file(sub.source_path), points, checks,
                                       assignment=sub.assignment, notebook=sub.notebook)
        return self.sources[key]

    def ask(self, sub: store.Submission) -> None:
        """Ask the judge now for the trials of `sub` (this run's seed is drawn; its source read before): `prepare`
        takes them, drawn meanwhile."""
        src = self.sources.get(sub.source_path)
        if src is not None:
            seed = notebook_seed(self.run_seed, sub.key)
            self.asked[(sub.key, seed)] = (src.checks, self.judge.ask_trials(seed, src.checks))

    def prepare(self, sub: store.Submission) -> Job:
        """Read and restore the submission and pack it for a worker."""
        job = Job(sub, seed=notebook_seed(self.run_seed, sub.key), started=time.perf_counter())
        src = self.source(sub)
        if not sub.path.exists():
            job.problem = f"no {sub.notebook}.ipynb was submitted"
            return job
        checks, drawn = self.asked.pop((sub.key, job.seed), (None, None))
        if checks != src.checks:  # drawn in the judge process while this one reads the file
            drawn = self.judge.ask_trials(job.seed, src.checks)
        try:
            job.restored = nbmod.restore(nbmod.read_submission(sub.path), src.nb, owned=True)
        except nbmod.UnreadableNotebook as exc:
            job.problem = f"the submitted {sub.notebook}.ipynb could not be read: {exc}"
        finally:
            job.trials = drawn()
        if job.problem is not None:
            return job
        if sub.release_note:
            job.restored.notes.insert(0, sub.release_note)
        if job.restored.foreign:
            job.problem = (f"the submitted {sub.notebook}.ipynb contains none of this notebook's graded or "
                           "solution cells (another chapter's notebook?)")
            return job
        job.code = job.restored.code_cells()
        blobs = [job.restored.nb.cells[i].source.encode() for i in job.code]
        header_cells = list(range(len(blobs)))
        trials = {}
        for name in src.checks:
            trials[name] = len(blobs)
            blobs.append(job.trials[name])
        files = []
        for rel, data in self._files(sub):
            files.append([rel, len(blobs)])
            blobs.append(data)
        self.ids += 1
        job.header = {"k": "job", "id": self.ids, "cells": header_cells, "trials": trials, "files": files,
                      "mime": list(cells.SAFE_MIME), "limits": self.limits.to_dict(), "threads": self.threads}
        job.blobs = blobs
        job.prepare_s = time.perf_counter() - job.started
        return job

    def _files(self, sub: store.Submission) -> list[tuple[str, bytes]]:
        """The submission's other files, then the source's (which win), within the size cap."""
        found: dict[str, Path] = {}
        for base in (sub.path.parent, sub.source_path.parent):
            for p in sorted(base.rglob("*")) if base.is_dir() else []:
                if p.is_file() and not p.is_symlink() and p.suffix != ".ipynb" and p.name != "timestamp.txt" \
                        and ".ipynb_checkpoints" not in p.parts:
                    found[p.relative_to(base).as_posix()] = p
        out, left = [], self.limits.files_bytes
        for rel, p in found.items():
            size = p.stat().st_size
            if size <= left:
                out.append((rel, p.read_bytes()))
                left -= size
        return out
