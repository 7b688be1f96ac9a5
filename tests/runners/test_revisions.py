"""Built revisions live in folders keyed by their repository's identity, not a store's row id."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import select

import miner
from miner import canonical_remote
from runners.revisions import prepare_revision, repository_key
from tasks import Repository, open_store
from tests.gitrepo import GitRepo

DATE = "2024-05-01T10:00:00+00:00"


def test_clone_urls_of_one_repository_name_it_alike() -> None:
    same = [
        "https://github.com/Example/Calc.git",
        "https://user:token@github.com/example/calc",
        "ssh://git@github.com:22/example/calc.git/",
        "git@github.com:example/calc.git",
        "git://github.com/example/calc",
    ]
    assert {canonical_remote(url) for url in same} == {"github.com/example/calc"}
    assert canonical_remote("https://gitlab.com/example/calc") == "gitlab.com/example/calc"
    for local in ("/srv/git/calc", "../calc", "file:///srv/git/calc", "./calc:x", ""):
        assert canonical_remote(local) is None, local


def test_a_clone_is_keyed_by_its_remote_and_a_local_repository_by_its_path(tmp_path: Path) -> None:
    first, second = GitRepo(tmp_path / "one" / "calc"), GitRepo(tmp_path / "two" / "calc")
    for repo in (first, second):
        repo.commit("start", DATE, {"calc.py": "x = 1\n"})
    assert repository_key(first.path) != repository_key(second.path)
    assert repository_key(first.path).startswith("calc-")
    for repo in (first, second):
        repo.git("remote", "add", "origin", "git@github.com:Example/Calc.git")
    # Lookups are cached per process: fresh paths (links to the same folders) see the remotes.
    (tmp_path / "a").symlink_to(first.path)
    (tmp_path / "b").symlink_to(second.path)
    assert repository_key(tmp_path / "a") == repository_key(tmp_path / "b")
    assert repository_key(tmp_path / "a").startswith("calc-")


def test_two_stores_with_different_repositories_never_share_a_built_revision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both stores call their repository row 1 (the old folder name ``repo-1``); in the same work
    root their revisions are built in folders of their own."""
    work = tmp_path / "work"
    monkeypatch.setenv("COEVO_VENVS", str(tmp_path / "venvs"))
    built = {}
    for name, answer in (("alice", "1"), ("bob", "2")):
        repo = GitRepo(tmp_path / name / "calc")  # the same folder name, another repository
        sha = repo.commit(
            "start",
            DATE,
            {
                "pyproject.toml": '[project]\nname = "calc"\nversion = "1"\nrequires-python = ">=3.11"\n',
                "calc.py": f"def answer():\n    return {answer}\n",
                "tests/test_calc.py": (
                    f"from calc import answer\n\n\ndef test_answer():\n    assert answer() == {answer}\n"
                ),
            },
        )
        db = tmp_path / name / "coevo.db"
        miner.mine(open_store(db), miner.MineRequest(location=str(repo.path), language="python"))
        with open_store(db).session() as session:
            row = session.exec(select(Repository)).one()
        assert row.id == 1
        built[name] = prepare_revision(work, Path(row.path), sha, "python", "local", timeout=600)
    alice, bob = built["alice"], built["bob"]
    assert alice.status == bob.status == "ok", (alice.message, bob.message)
    assert alice.worktree is not None and bob.worktree is not None
    assert alice.worktree.parent.parent != bob.worktree.parent.parent
    assert {p.parent.parent.name for p in (alice.worktree, bob.worktree)} == {
        p.name for p in work.iterdir() if p.is_dir()
    }
    assert "return 1" in (alice.worktree / "calc.py").read_text()
    assert "return 2" in (bob.worktree / "calc.py").read_text()
