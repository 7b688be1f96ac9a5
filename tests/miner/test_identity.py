"""A repository's identity does not depend on the folder it was cloned into."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from miner import NotARepository, repository_identity
from tests.gitrepo import GitRepo


def _clone(source: Path, target: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(source), str(target)], check=True, capture_output=True)
    return target


def test_a_local_repository_is_its_root_commit_in_every_clone(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "calc")
    root = repo.commit("start", "2024-05-01T10:00:00+00:00", {"calc.py": "x = 1\n"})
    repo.commit("more", "2024-05-02T10:00:00+00:00", {"calc.py": "x = 2\n"})
    elsewhere = _clone(repo.path, tmp_path / "elsewhere" / "other-name")  # origin: a local path
    assert repository_identity(repo.path) == repository_identity(elsewhere) == f"root:{root}"


def test_a_clone_with_a_remote_is_its_canonical_remote(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "calc")
    repo.commit("start", "2024-05-01T10:00:00+00:00", {"calc.py": "x = 1\n"})
    repo.git("remote", "add", "origin", "git@github.com:Example/Calc.git")
    assert repository_identity(repo.path) == "github.com/example/calc"
    bare = GitRepo(tmp_path / "bare")
    bare.commit("start", "2024-05-01T10:00:00+00:00", {"calc.py": "x = 1\n"})
    # A clone URL given without an origin (a mirror made by hand) still names the repository.
    assert repository_identity(bare.path, "https://gitlab.com/example/calc.git") == "gitlab.com/example/calc"


def test_several_root_commits_give_the_oldest(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "calc")
    newer = repo.commit("start", "2024-05-01T10:00:00+00:00", {"calc.py": "x = 1\n"})
    repo.git("checkout", "-q", "--orphan", "history")
    repo.git("rm", "-r", "-q", "-f", ".")
    older = repo.commit("old project", "2020-01-01T10:00:00+00:00", {"old.py": "y = 1\n"})
    repo.checkout("main")
    repo.git("merge", "-q", "--allow-unrelated-histories", "-m", "join", "history")
    assert newer != older
    assert repository_identity(repo.path) == f"root:{older}"


def test_a_folder_without_history_has_no_identity(tmp_path: Path) -> None:
    with pytest.raises(NotARepository, match="cannot find its root commit"):
        repository_identity(tmp_path / "gone")
    GitRepo(tmp_path / "empty")
    with pytest.raises(NotARepository, match="cannot find its root commit"):
        repository_identity(tmp_path / "empty")
