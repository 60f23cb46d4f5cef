"""The same grading tasks on a Dask distributed cluster (LocalCluster, one worker process): same scores."""
from __future__ import annotations

import pytest

from autograder.engine import grade
from coursenb.chapters import select
from solutions.mistakes import apply, wrong_for
from tests import nbgrader_support as nbs

pytestmark = [pytest.mark.filterwarnings("ignore"), pytest.mark.slow, pytest.mark.sandbox]
distributed = pytest.importorskip("dask.distributed")
CHAPTER = select(["ch1"])[0]


def test_grading_on_a_dask_cluster(tmp_path) -> None:
    course_dir = nbs.make_course(tmp_path / "course", [CHAPTER.assignment])
    src = nbs.source_nb(CHAPTER, course_dir)
    wrong = wrong_for(CHAPTER.assignment)[2]
    nbs.submit(course_dir, CHAPTER, "right", src)
    nbs.submit(course_dir, CHAPTER, "wrong", apply(src, wrong))
    points = nbs.max_points(src)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        summary = grade(course_dir, workers=1, progress=False, scheduler=client)
    assert summary.graded == 2 and summary.failed == 0
    assert nbs.scores(course_dir, CHAPTER, "right") == points
    assert nbs.scores(course_dir, CHAPTER, "wrong") == {g: 0.0 if g in wrong.loses else p for g, p in points.items()}
    assert "none" in summary.isolation.get("network", "none")
