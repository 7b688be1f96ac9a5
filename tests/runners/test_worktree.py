"""Worktrees hold a revision's files and nothing of its history."""

from __future__ import annotations

import os
import shutil
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
    (repo.path / os.fsdecode(b"a/b/caf\xe9.txt")).write_text("latin-1 name")
    repo.git("add", "link", "a/b")
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
        assert ours.files() == gits.files(), by_name
    tree = GitTree(repo.path, head)
    read = (tree.read("link"), tree.read("a/b/y.bin"), tree.read("top.txt"))
    assert read == (b"a/x.txt", b"\xff\xfe", None)
    assert tree.list_dir("a") == ["b", "x.txt"]
    assert tree.files() == ["a/b/caf\ufffd.txt", "a/b/y.bin", "a/x.txt", "link"]
    assert GitTree(repo.path, first).read("top.txt") == b"t"
    missing = GitTree(repo.path, "0" * 40)  # no such commit: nothing exists, nothing is kept
    assert (missing.read("a/x.txt"), missing.exists("a"), missing.list_dir("a")) == (None, False, [])


def test_a_commit_read_by_its_id_asks_git_once_for_many_questions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What an environment's detection asks (does this file exist, what is in that folder) costs
    one git process a commit, not one a question; only a file's bytes cost one more each."""
    repo = GitRepo(tmp_path / "repo")
    sha = repo.commit(
        "one", "2024-05-01T10:00:00+00:00", {"pom.xml": "<project/>", "src/A.java": "class A {}"}
    )
    calls = tmp_path / "git-calls"
    wrapper = tmp_path / "bin" / "git"
    wrapper.parent.mkdir()
    real = shutil.which("git")
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}:{os.environ['PATH']}")
    questions = ["pom.xml", "mvnw", "build.gradle", "setup.py", "pyproject.toml", "src", "src/A.java"]

    def asked(revision: str) -> int:
        calls.unlink(missing_ok=True)
        tree = GitTree(repo.path, revision)
        answers = [tree.exists(path) for path in questions] + [tree.list_dir("src"), tree.list_dir(".github")]
        assert answers == [True, False, False, False, False, True, True, ["A.java"], []]
        assert tree.read("pom.xml") == b"<project/>"
        return len(calls.read_text().splitlines())

    assert asked(sha) == 2  # the listing, then the one file read
    assert asked("HEAD") == len(questions) + 3  # a process a question
