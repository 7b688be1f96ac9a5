"""Mining is incremental, idempotent and resumable: watermarks, re-runs, interruptions and kills."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlmodel import func, select

from miner import MineRequest, Progress, mine
from tasks import Candidate, MinedCommit, MiningRun, Repository, RevisionPair, Store, open_store
from tests import cli
from tests.gitrepo import GitRepo, synthetic_history
from tests.miner.histories import python_history


def _candidate_keys(store: Store) -> list[tuple[str, str, str, str]]:
    with store.session() as s:
        rows = s.exec(select(Candidate, RevisionPair).join(RevisionPair)).all()
    return sorted((p.rev2, c.test_file, c.test_method, c.change_kind) for c, p in rows)


def _count(store: Store, table: type) -> int:
    with store.session() as s:
        return s.exec(select(func.count()).select_from(table)).one()


def test_mining_the_same_window_twice_adds_nothing(tmp_path: Path) -> None:
    repo = python_history(tmp_path / "calc")
    store = open_store(tmp_path / "coevo.db")
    first = mine(store, MineRequest(location=str(repo.path)))
    keys = _candidate_keys(store)
    second = mine(store, MineRequest(location=str(repo.path)))
    assert first.candidates == len(keys) == 10
    # The watermark covers the whole history: the second pass reads no commit at all.
    assert (second.commits_scanned, second.candidates, second.status) == (0, 0, "completed")
    assert _candidate_keys(store) == keys
    with store.session() as s:
        assert len(s.exec(select(Repository)).all()) == 1


def test_a_later_run_mines_only_new_commits(tmp_path: Path) -> None:
    repo = python_history(tmp_path / "calc")
    store = open_store(tmp_path / "coevo.db")
    mine(store, MineRequest(location=str(repo.path)))
    before = _candidate_keys(store)
    repo.commit("later", "2024-06-01T10:00:00+00:00", {
        "calc/core.py": repo.read("calc/core.py") + "\n\ndef square(a):\n    return a * a\n",
        "tests/test_arith.py": repo.read("tests/test_arith.py")
        + "\n\ndef test_square():\n    assert square(3) == 9\n",
    })  # fmt: skip
    run = mine(store, MineRequest(location=str(repo.path)))
    assert (run.commits_scanned, run.test_commits, run.pairs) == (1, 1, 1)
    added = sorted(set(_candidate_keys(store)) - set(before))
    assert added == [(repo.shas["later"], "tests/test_arith.py", "test_square", "inserted")]


def test_a_wider_window_rescans_but_duplicates_nothing(tmp_path: Path) -> None:
    repo = python_history(tmp_path / "calc")
    store = open_store(tmp_path / "coevo.db")
    late = mine(store, MineRequest(location=str(repo.path), since=datetime(2024, 5, 8, tzinfo=UTC)))
    assert late.commits_scanned < len(repo.shas) - 1
    same = mine(store, MineRequest(location=str(repo.path), since=datetime(2024, 5, 9, tzinfo=UTC)))
    assert same.commits_scanned == 0  # inside the covered window: the watermark applies
    wider = mine(store, MineRequest(location=str(repo.path)))
    assert wider.already_mined == late.test_commits
    assert wider.commits_scanned == len(repo.shas) - 1  # all but the merge
    assert _count(store, Candidate) == 10
    fresh = open_store(tmp_path / "fresh.db")
    mine(fresh, MineRequest(location=str(repo.path)))
    assert _candidate_keys(fresh) == _candidate_keys(store)


def test_until_bounds_the_window_and_leaves_no_watermark(tmp_path: Path) -> None:
    repo = python_history(tmp_path / "calc")
    store = open_store(tmp_path / "coevo.db")
    run = mine(store, MineRequest(location=str(repo.path), until=datetime(2024, 5, 3, tzinfo=UTC)))
    assert {k[0] for k in _candidate_keys(store)} == {repo.shas["inserted test"]}
    assert run.commits_scanned == 2
    with store.session() as s:
        assert s.exec(select(Repository)).one().watermark_sha is None


def test_an_interrupted_run_resumes_to_the_same_result(tmp_path: Path) -> None:
    repo = python_history(tmp_path / "calc")
    reference = open_store(tmp_path / "reference.db")
    mine(reference, MineRequest(location=str(repo.path)))

    store = open_store(tmp_path / "coevo.db")
    seen = 0

    def interrupt_after_five(n: int) -> None:
        nonlocal seen
        seen += n
        if seen == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        mine(store, MineRequest(location=str(repo.path)), Progress(advance=interrupt_after_five))
    with store.session() as s:
        (interrupted,) = s.exec(select(MiningRun)).all()
        assert interrupted.status == "interrupted"
        assert s.exec(select(Repository)).one().watermark_sha is None
        assert 0 < len(s.exec(select(MinedCommit)).all()) < 11
    resumed = mine(store, MineRequest(location=str(repo.path)))
    assert resumed.already_mined > 0
    assert _candidate_keys(store) == _candidate_keys(reference)


def _coevo(*args: str, db: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "coevo", *args, "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _processes_naming(path: Path, wait: float = 30) -> list[int]:
    """The processes whose command line names ``path``, once given ``wait`` s to go away."""
    deadline = time.monotonic() + wait
    while True:
        found = []
        for proc in Path("/proc").iterdir():
            with contextlib.suppress(OSError):
                if proc.name.isdigit() and str(path).encode() in (proc / "cmdline").read_bytes():
                    found.append(int(proc.name))
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def _wait_for_progress(db: Path, at_least: int, timeout: float = 60) -> None:
    """Polls with a read-only connection: a poller that could write (create tables, set pragmas)
    would contend for the miner's write lock."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if db.exists():
            try:
                with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)) as conn:
                    if conn.execute("SELECT count(*) FROM minedcommit").fetchone()[0] >= at_least:
                        return
            except sqlite3.Error:
                pass  # the database may be mid-creation
        time.sleep(0.1)
    raise AssertionError(f"mining did not reach {at_least} commits in {timeout}s")


@pytest.mark.slow
def test_ctrl_c_and_kill_lose_nothing(tmp_path: Path) -> None:
    """A real process interrupted with SIGINT, then killed with SIGKILL, then run to the end."""
    # Long enough that the interrupted run is still mining when a poller slowed by a loaded
    # machine (tests run in parallel) sees its 20th commit, and the killed run still mining when
    # the kill comes, however far the interrupted one got.
    commits = 600
    synthetic_history(tmp_path / "synth", commits)
    db = tmp_path / "coevo.db"

    proc = _coevo("mine", str(tmp_path / "synth"), db=db)
    _wait_for_progress(db, 20)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=300)  # a bound for a loaded machine, not a timing claim
    assert proc.returncode == 130
    assert stderr.strip().splitlines() == [
        "interrupted; what finished is saved (units in flight are redone): run the command again to resume"
    ]
    store = open_store(db)
    after_sigint = _count(store, MinedCommit)
    assert 20 <= after_sigint < commits - 60

    proc = _coevo("mine", str(tmp_path / "synth"), db=db)
    _wait_for_progress(db, after_sigint + 10)
    killed = proc.pid
    os.kill(killed, signal.SIGKILL)
    proc.communicate(timeout=60)
    after_kill = _count(store, MinedCommit)
    assert after_kill >= after_sigint + 10
    assert _processes_naming(db) == [], "the killed run's worker processes outlived it"

    proc = _coevo("mine", str(tmp_path / "synth"), db=db)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    assert _count(store, MinedCommit) == commits
    # Every test-changing commit but the root one is a pair with exactly one inserted test.
    assert _count(store, RevisionPair) == commits - 1
    assert _count(store, Candidate) == commits - 1
    assert len(set(_candidate_keys(store))) == commits - 1
    with store.session() as s:
        runs = s.exec(select(MiningRun).order_by(MiningRun.id)).all()
    # A SIGKILLed run cannot say so itself: the next run finds its process gone and marks it.
    assert [r.status for r in runs] == ["interrupted", "interrupted", "completed"]
    assert f"(pid {killed}) ended without finishing" in runs[1].message


def test_a_repository_with_a_new_commit_on_a_rewritten_branch_is_rescanned(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "r")
    repo.commit("one", "2024-01-01T00:00:00+00:00", {"m.py": "def f():\n    return 1\n"})
    repo.commit("two", "2024-01-02T00:00:00+00:00", {
        "m.py": "def f():\n    return 2\n", "test_m.py": "def test_f():\n    assert f() == 2\n",
    })  # fmt: skip
    store = open_store(tmp_path / "coevo.db")
    mine(store, MineRequest(location=str(repo.path), language="python"))
    repo.git("reset", "-q", "--hard", repo.shas["one"])
    repo.commit("two again", "2024-01-03T00:00:00+00:00", {
        "m.py": "def f():\n    return 3\n", "test_m.py": "def test_f():\n    assert f() == 3\n",
    })  # fmt: skip
    run = mine(store, MineRequest(location=str(repo.path)))
    # The old watermark is no longer an ancestor of HEAD: the whole history is read again.
    assert run.commits_scanned == 2
    assert (run.test_commits, run.already_mined, run.candidates) == (1, 0, 1)


def test_failed_commits_are_recorded_and_retried(tmp_path: Path) -> None:
    """A bare clone whose config lacks core.bare makes GitPython fail on every pair (seen on mirrors)."""
    repo = python_history(tmp_path / "calc")
    bare = tmp_path / "calc.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo.path), str(bare)], check=True)
    subprocess.run(["git", "-C", str(bare), "config", "--unset", "core.bare"], check=True)
    store = open_store(tmp_path / "coevo.db")
    broken = mine(store, MineRequest(location=str(bare), language="python"))
    assert broken.status == "completed"
    assert broken.candidates == 0
    assert "commits failed" in broken.message
    with store.session() as s:
        failed = s.exec(select(MinedCommit).where(MinedCommit.outcome == "error")).all()
        assert len(failed) == 8  # every commit with a pair to write
        assert s.exec(select(Repository)).one().watermark_sha is None  # nothing is skipped next time

    subprocess.run(["git", "-C", str(bare), "config", "core.bare", "true"], check=True)
    fixed = mine(store, MineRequest(location=str(bare)))
    assert fixed.candidates == 10
    assert fixed.already_mined == 3  # the commits that had nothing to write stay done
    with store.session() as s:
        assert s.exec(select(MinedCommit).where(MinedCommit.outcome == "error")).all() == []
        assert s.exec(select(Repository)).one().watermark_sha is not None
    reference = open_store(tmp_path / "reference.db")
    mine(reference, MineRequest(location=str(repo.path)))
    assert _candidate_keys(store) == _candidate_keys(reference)


def test_worker_processes_give_the_same_result(tmp_path: Path) -> None:
    repo = python_history(tmp_path / "calc")
    serial = open_store(tmp_path / "serial.db")
    mine(serial, MineRequest(location=str(repo.path), workers=1))
    parallel = open_store(tmp_path / "parallel.db")
    run = mine(parallel, MineRequest(location=str(repo.path), workers=2))
    assert run.candidates == 10
    assert _candidate_keys(parallel) == _candidate_keys(serial)
    with serial.session() as a, parallel.session() as b:
        assert [(m.sha, m.outcome) for m in a.exec(select(MinedCommit).order_by(MinedCommit.sha))] == [
            (m.sha, m.outcome) for m in b.exec(select(MinedCommit).order_by(MinedCommit.sha))
        ]


def test_a_shallow_clone_warns_once_and_unshallowed_mines_what_the_cut_hid(tmp_path: Path) -> None:
    repo = python_history(tmp_path / "calc")
    clone = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "3", repo.path.as_uri(), str(clone)],
        check=True,
        capture_output=True,
    )
    db = tmp_path / "coevo.db"
    cut = cli.coevo("mine", str(clone), "--db", str(db))
    assert cut.returncode == 0, cut.stderr
    assert cut.stderr.splitlines() == [
        f"warning: {clone} is a shallow clone: its history is cut, so pairs before the cut will be "
        "missing (git fetch --unshallow, then mine again, adds them)"
    ]
    assert cut.stdout.rstrip().endswith("— shallow clone: history is cut, pairs before the cut are missing")
    store = open_store(db)
    partial = _candidate_keys(store)
    subprocess.run(["git", "-C", str(clone), "fetch", "-q", "--unshallow"], check=True, capture_output=True)
    whole = cli.coevo("mine", str(clone), "--db", str(db))
    assert whole.returncode == 0 and whole.stderr == ""
    full = open_store(tmp_path / "full.db")
    mine(full, MineRequest(location=str(repo.path)))
    assert len(partial) < len(_candidate_keys(full))
    assert _candidate_keys(store) == _candidate_keys(full)


def test_a_commit_with_a_zone_no_clock_has_is_mined_at_its_instant(tmp_path: Path) -> None:
    """requests has a commit dated ``1313584730 +51800``: git printed it ``+518:00``, which Python's
    zones refuse, and mining the whole history stopped there."""
    repo = GitRepo(tmp_path / "zones")
    repo.commit("code", "2011-08-01T10:00:00+00:00", {"calc.py": "def add(a, b):\n    return a + b\n"})
    (repo.path / "calc.py").write_text("def add(a, b):\n    return b + a\n")
    test = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
    (repo.path / "test_calc.py").write_text(test)
    repo.git("add", "calc.py", "test_calc.py")
    tree, parent = repo.git("write-tree"), repo.git("rev-parse", "HEAD")
    stamp = "Ada Lovelace <ada@example.org> 1313584730 +51800"
    raw = tmp_path / "commit.txt"
    raw.write_text(f"tree {tree}\nparent {parent}\nauthor {stamp}\ncommitter {stamp}\n\nodd zone\n")
    odd = repo.git("hash-object", "-t", "commit", "-w", "--literally", str(raw))  # git fsck would refuse it
    repo.git("update-ref", "HEAD", odd)
    assert repo.git("log", "-1", "--format=%cI") == "2011-09-08T02:38:50+518:00"

    store = open_store(tmp_path / "coevo.db")
    run = mine(store, MineRequest(location=str(repo.path)))
    assert run.status == "completed", run.message
    with store.session() as s:
        mined = s.exec(select(MinedCommit).where(MinedCommit.sha == odd)).one()
    assert mined.committer_date == datetime(2011, 8, 17, 12, 38, 50, tzinfo=UTC)
