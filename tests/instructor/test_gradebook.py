"""The gradebook layer (autograder/gradebook.py): a new gradebook is what nbgrader makes, without its subprocess."""
from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest

from autograder import gradebook


def test_a_new_gradebook_is_stamped_with_the_revision_nbgrader_finds(tmp_path: Path, monkeypatch) -> None:
    """nbgrader stamps a new gradebook with `alembic heads`, run in a subprocess; ours reads the migrations and gives
    the same revision, and making a gradebook runs no subprocess."""
    gradebook.nbgrader_ready()
    theirs = gradebook._NBGRADER_LOOKUP[0]()  # nbgrader's own lookup: `alembic heads` in a subprocess
    assert theirs and gradebook.alembic_head() == theirs

    def refused(*args, **kwargs):
        raise AssertionError(f"a subprocess while making a gradebook: {args}")

    monkeypatch.setattr(subprocess, "Popen", refused)
    with gradebook.open_db(f"sqlite:///{tmp_path / 'gradebook.db'}", "course"):
        pass
    with sqlite3.connect(tmp_path / "gradebook.db") as db:
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [(theirs,)]


@pytest.mark.parametrize("heads", [1, 2])
def test_the_head_is_the_one_revision_no_migration_follows(tmp_path: Path, heads: int) -> None:
    """Three migrations in a line have one head; a second branch from the first makes two, and then nbgrader's
    own lookup decides (None here)."""
    chain = [("a1", None), ("b2", "a1"), ("c3", "b2")] + ([("d4", "a1")] if heads == 2 else [])
    for revision, down in chain:
        (tmp_path / f"{revision}_step.py").write_text(
            f'"""A step."""\nrevision = {revision!r}\ndown_revision = {down!r}\nbranch_labels = None\n')
    assert gradebook.head_of_migrations(tmp_path) == ("c3" if heads == 1 else None)
