"""`coevo daemon` as a real process: a per-second schedule over a "remote" that gains commits."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import miner
from tasks import Cycle, CycleStatus, MinedCommit, Task, open_store
from tests import cli
from tests.gitrepo import GitRepo

_SHAPES = '"""Areas."""\n\n\ndef square(side):\n    return side * side\n'
_TESTS = "from shapes import square\n\n\ndef test_square():\n    assert square(3) == 9\n"
_SHAPES_2 = _SHAPES + "\n\ndef triangle(base, height):\n    return base * height / 2\n"
_TESTS_2 = (
    _TESTS.replace("import square", "import square, triangle")
    + "\n\ndef test_triangle():\n    assert triangle(4, 3) == 6\n"
)

_EXE = Path(sys.executable).parent / "coevo"


def _cycles(db: Path) -> list[Cycle]:
    store = open_store(db, create=False)
    try:
        return miner.list_cycles(store)
    finally:
        store.close()


def _wait_for(what: str, check: Callable[[], bool], log: Path, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    pytest.fail(f"timed out waiting for {what}; daemon log:\n{log.read_text()}")


def _daemon(db: Path, log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("ab") as sink:
        return subprocess.Popen([str(_EXE), "daemon", "--db", str(db)], stderr=sink, stdout=sink, env=env)


def _stop(process: subprocess.Popen[bytes]) -> int:
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    code = process.wait(timeout=15)
    assert time.monotonic() - started < 10
    return code


def test_daemon_mines_new_commits_each_cycle_stops_on_sigterm_and_resumes_from_the_job_store(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "COEVO_WORK": str(tmp_path / "work")}
    remote = GitRepo(tmp_path / "remote")
    remote.commit(
        "Shapes: square",
        "2026-09-01T10:00:00+00:00",
        {"shapes.py": _SHAPES, "tests/test_shapes.py": _TESTS, "requirements.txt": "# pytest only\n"},
    )
    (tmp_path / "repos.txt").write_text(f"# the fixture remote\nfile://{remote.path}\n")
    db, log = tmp_path / "coevo.db", tmp_path / "daemon.log"
    add = cli.coevo(
        "schedule", "add", "live", "--every", "1", "--repos", str(tmp_path / "repos.txt"),
        "--backend", "local", "--reruns", "1", "--snapshots", str(tmp_path / "snapshots"),
        "--site", str(tmp_path / "site"), "--db", str(db), env=env,
    )  # fmt: skip
    assert add.returncode == 0, add.stderr

    daemon = _daemon(db, log, env)
    try:
        _wait_for("a first cycle", lambda: any(c.status is CycleStatus.COMPLETED for c in _cycles(db)), log)
        remote.commit(
            "Add triangle areas",
            "2026-09-15T10:00:00+00:00",
            {"shapes.py": _SHAPES_2, "tests/test_shapes.py": _TESTS_2},
        )

        def added_a_task() -> bool:
            return any(
                c.status is CycleStatus.COMPLETED and any(r["tasks_added"] for r in c.repositories.values())
                for c in _cycles(db)
            )

        _wait_for("a cycle that adds the new commit's task", added_a_task, log)
        assert _stop(daemon) == 0
    finally:
        if daemon.poll() is None:
            daemon.kill()

    cycles = _cycles(db)
    assert not [c for c in cycles if c.status is CycleStatus.RUNNING]
    store = open_store(db, create=False)
    with store.session() as session:
        tasks = session.exec(Task.__table__.select()).all()  # type: ignore[attr-defined]
        mined = session.exec(MinedCommit.__table__.select()).all()  # type: ignore[attr-defined]
    store.close()
    assert len(tasks) == 1
    assert len(mined) == 2  # the two commits that changed tests, each mined once
    completed = [c for c in cycles if c.status is CycleStatus.COMPLETED]
    assert sum(r["commits"] for c in completed for r in c.repositories.values()) == 2
    [snapshot] = (tmp_path / "snapshots").iterdir()
    assert snapshot.is_dir() and any(snapshot.iterdir())
    assert (tmp_path / "site" / "index.html").exists()
    with sqlite3.connect(db) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        [(job,)] = connection.execute("SELECT id FROM apscheduler_jobs").fetchall()
    assert job == "live"
    text = log.read_text()
    assert "daemon: stopping (signal)" in text and "daemon: stopped" in text

    last = max(c.id or 0 for c in cycles)
    again = _daemon(db, log, env)
    try:
        _wait_for(
            "a cycle after the restart",
            lambda: any((c.id or 0) > last and c.status is CycleStatus.COMPLETED for c in _cycles(db)),
            log,
            timeout=60,
        )
        assert _stop(again) == 0
    finally:
        if again.poll() is None:
            again.kill()
    assert not [c for c in _cycles(db) if c.status is CycleStatus.RUNNING]
    assert log.read_text().count("daemon: started with 1 schedules (live)") == 2
