"""Built revisions live in folders keyed by their repository's identity, not a store's row id."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import select

import miner
from miner import canonical_remote
from runners.environments.revisions import prepare_revision, repository_key
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


def test_a_full_disk_is_the_machines_fault_never_a_build_failure() -> None:
    """What a build prints or raises about a full disk stops the unit (retried next run) instead of
    storing it as build_failed; a build that only prints the words with room to spare failed alone."""
    import errno

    from runners.environments.revisions import _low_on_space
    from tasks import DiskFull, disk_full

    assert isinstance(disk_full(OSError(errno.ENOSPC, "No space left on device", "/v/x")), DiskFull)
    assert isinstance(disk_full(OSError(errno.EDQUOT, "Disk quota exceeded")), DiskFull)
    assert disk_full(OSError(errno.EACCES, "Permission denied")) is None
    pip = (
        "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device: '/v/lib'\n"
    )
    found = disk_full("Collecting pytest\n" + pip)
    assert found is not None and "[Errno 28]" in str(found) and "\n" not in str(found)
    assert disk_full("javac: 1 error\nerror: cannot find symbol") is None
    assert _low_on_space([Path("/")], 1 << 60) == Path("/")  # more than any disk has
    assert _low_on_space([Path("/no/such/folder")], 1) is None  # its disk (/'s) has a byte


@pytest.mark.slow
def test_a_build_on_a_full_disk_records_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A venv on a full file system (a 4 MiB tmpfs): the build raises DiskFull, no build.json is
    written, and the same revision builds once there is room."""
    import os
    import subprocess

    from tasks import DiskFull

    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(small)], check=True)
    try:
        monkeypatch.setenv("COEVO_VENVS", str(small / "venvs"))
        repo = GitRepo(tmp_path / "calc")
        sha = repo.commit(
            "start",
            DATE,
            {
                "requirements.txt": "pytest\ncoverage\n",
                "calc.py": "def answer():\n    return 1\n",
                "tests/test_calc.py": "def test_answer():\n    assert True\n",
            },
        )
        work = tmp_path / "work"
        with pytest.raises(DiskFull, match="a disk is full"):
            prepare_revision(work, repo.path, sha, "python", "local", timeout=600)
        assert not list(work.rglob("build.json"))
    finally:
        subprocess.run(["umount", "-l", str(small)], check=False)
    monkeypatch.setenv("COEVO_VENVS", str(tmp_path / "venvs"))
    built = prepare_revision(work, repo.path, sha, "python", "local", timeout=600)
    assert built.status == "ok", built.message
