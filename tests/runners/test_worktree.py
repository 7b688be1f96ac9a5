"""Worktrees hold a revision's files and nothing of its history."""

from __future__ import annotations

from pathlib import Path

import pytest

from runners.environments.worktree import WorktreeFailed, export_revision
from tests.miner.histories import CALC, java_history


def test_export_a_revision_without_history(tmp_path: Path) -> None:
    repo = java_history(tmp_path / "calc")
    tree = export_revision(repo.path, repo.shas["inserted test"], tmp_path / "wt")
    assert "subtract" in (tree / CALC).read_text()
    assert "multiply" not in (tree / CALC).read_text()
    assert not (tree / ".git").exists()
    with pytest.raises(WorktreeFailed, match="cannot export nope"):
        export_revision(repo.path, "nope", tmp_path / "wt2")
