"""Where scoring finds a repository's history when the store has none here: a clone of its URL."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from runners.environments.histories import HistoryUnavailable, task_history
from tasks import Repository
from tests.gitrepo import GitRepo


def _published(tmp_path: Path) -> tuple[GitRepo, Path]:
    """A history and a bare copy of it standing in for its public remote."""
    work = GitRepo(tmp_path / "work")
    work.commit("one", "2026-09-01T08:00:00+00:00", {"a.py": "a = 1\n"})
    work.commit("two", "2026-09-02T08:00:00+00:00", {"a.py": "a = 2\n"})
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work.path), str(remote)], check=True)
    return work, remote


def _imported(remote: Path) -> Repository:
    """The repository as a store imported from a snapshot holds it: a URL, no local path."""
    return Repository(name="shapes", location=remote.as_uri(), path="", language="python")


def test_a_missing_history_is_cloned_once_then_read_offline(tmp_path: Path) -> None:
    work, remote = _published(tmp_path)
    clones = tmp_path / "clones"
    commits = list(work.shas.values())

    first = task_history(_imported(remote), commits, {}, clones)
    assert first.parent == clones
    assert [p for p in clones.iterdir()] == [first]

    # The remote is gone (no network): the clone made before holds the commits and is read as is.
    hidden = tmp_path / "hidden.git"
    remote.rename(hidden)
    assert task_history(_imported(remote), commits, {}, clones) == first

    # A task whose commit the clone lacks fetches again, and says so when the remote is gone.
    work.commit("three", "2026-09-03T08:00:00+00:00", {"a.py": "a = 3\n"})
    newer = [*commits, work.shas["three"]]
    with pytest.raises(HistoryUnavailable) as refused:
        task_history(_imported(remote), newer, {}, clones)
    assert "cannot clone" in str(refused.value) and "--repo-dir shapes=PATH" in str(refused.value)
    hidden.rename(remote)
    subprocess.run(
        ["git", "-C", str(work.path), "push", "-q", str(remote), "HEAD:refs/heads/later"], check=True
    )
    assert task_history(_imported(remote), newer, {}, clones) == first
