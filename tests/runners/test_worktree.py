"""Worktrees hold a revision's files and nothing of its history."""

from __future__ import annotations

from pathlib import Path

import pytest

from runners.environments.worktree import GitTree, WorktreeFailed, export_revision
from tests.gitrepo import GitRepo
from tests.miner.histories import CALC, java_history


def test_export_a_revision_without_history(tmp_path: Path) -> None:
    repo = java_history(tmp_path / "calc")
    tree = export_revision(repo.path, repo.shas["inserted test"], tmp_path / "wt")
    assert "subtract" in (tree / CALC).read_text()
    assert "multiply" not in (tree / CALC).read_text()
    assert not (tree / ".git").exists()
    with pytest.raises(WorktreeFailed, match="cannot export nope"):
        export_revision(repo.path, "nope", tmp_path / "wt2")


def test_a_commit_read_by_its_id_answers_as_git_does_by_name(tmp_path: Path) -> None:
    """By full id a commit's listing answers which paths exist and what a folder holds (one git
    process for many questions); by name git is asked each time. Both must say the same."""
    repo = GitRepo(tmp_path / "repo")
    first = repo.commit("first", "2024-05-01T10:00:00+00:00", {"a/x.txt": "x", "top.txt": "t"})
    repo.commit("second", "2024-05-02T10:00:00+00:00", {"a/b/y.bin": b"\xff\xfe", "top.txt": None})
    (repo.path / "link").symlink_to("a/x.txt")
    repo.git("add", "link")
    repo.git("commit", "-q", "-m", "link", date="2024-05-03T10:00:00+00:00")
    head = repo.git("rev-parse", "HEAD")
    paths = ["a/x.txt", "top.txt", "link", "a/b/y.bin", "a", "a/", "a/b", "nope", "a/nope", "./a/x.txt"]
    for by_id, by_name in ((head, "HEAD"), (first, "HEAD~2")):
        ours, gits = GitTree(repo.path, by_id), GitTree(repo.path, by_name)
        for path in paths:
            assert ours.exists(path) == gits.exists(path), (by_name, path)
            if path.rstrip("/") != "a" and path != "a/b":  # git show prints a folder's listing
                assert ours.read(path) == gits.read(path), (by_name, path)
        for folder in ("a", "a/", "a/b", "zz"):
            assert ours.list_dir(folder) == gits.list_dir(folder), (by_name, folder)
    tree = GitTree(repo.path, head)
    assert (tree.read("link"), tree.read("a/b/y.bin"), tree.read("top.txt")) == (
        b"a/x.txt",
        b"\xff\xfe",
        None,
    )
    assert tree.list_dir("a") == ["b", "x.txt"]
    assert GitTree(repo.path, first).read("top.txt") == b"t"
    missing = GitTree(repo.path, "0" * 40)  # no such commit: nothing exists, nothing is kept
    assert (missing.read("a/x.txt"), missing.exists("a"), missing.list_dir("a")) == (None, False, [])
