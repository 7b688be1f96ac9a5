"""Schedules as a user meets them: added, listed and removed across processes; cycles recorded."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import miner
from tasks import Cycle, CycleStatus, DiscoveredRepository, Owner, open_store
from tests import cli
from tests.gitrepo import GitRepo

_EXE = Path(sys.executable).parent / "coevo"
_TEST = "from shapes import square\n\n\ndef test_square():\n    assert square(2) == 4\n"


def coevo(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COEVO_WORK": str(cwd / "work")}
    return cli.coevo(*args, cwd=cwd, env=env)


def _repo(path: Path) -> GitRepo:
    repo = GitRepo(path)
    repo.commit("Square", "2026-09-01T10:00:00+00:00", {"shapes.py": "def square(s):\n    return s * s\n"})
    repo.commit(
        "Test square",
        "2026-09-02T10:00:00+00:00",
        {
            "shapes.py": "def square(s):\n    return s**2\n",
            "tests/test_shapes.py": _TEST,
        },
    )
    return repo


def test_add_list_remove_persist_in_the_store_and_the_job_store(tmp_path: Path) -> None:
    (tmp_path / "repos.txt").write_text("# two\na\nb  # the second\n\n")
    added = coevo("schedule", "add", "weekly", "--cron", "0 3 * * 1", "--repos", "repos.txt", cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith("schedule weekly: cron 0 3 * * 1 (UTC), 2 repositories; next run ")
    [view] = json.loads(coevo("schedule", "list", "--json", cwd=tmp_path).stdout)
    assert view["name"] == "weekly" and view["trigger"] == "cron 0 3 * * 1 (UTC)"
    assert view["next_run"] and view["last_status"] is None
    with sqlite3.connect(tmp_path / "coevo.db") as connection:
        assert connection.execute("SELECT id FROM apscheduler_jobs").fetchall() == [("weekly",)]
        [(repos,)] = connection.execute("SELECT repos FROM schedule").fetchall()
    assert json.loads(repos) == [str(tmp_path / "a"), str(tmp_path / "b")]  # relative to the file

    removed = coevo("schedule", "remove", "weekly", cwd=tmp_path)
    assert removed.stdout == "removed schedule weekly\n"
    assert json.loads(coevo("schedule", "list", "--json", cwd=tmp_path).stdout) == []
    with sqlite3.connect(tmp_path / "coevo.db") as connection:
        assert connection.execute("SELECT id FROM apscheduler_jobs").fetchall() == []
    again = coevo("schedule", "remove", "weekly", cwd=tmp_path)
    assert again.stderr.splitlines() == [
        "error: no schedule named 'weekly' (none yet: coevo schedule add NAME ...)"
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--cron", "0 3 * *", "--repos", "repos.txt"],
            "error: --cron '0 3 * *' is not a crontab expression "
            "(Wrong number of fields; got 4, expected 5): "
            "use five fields, minute hour day month weekday, e.g. '0 3 * * 1'",
        ),
        (["--cron", "0 3 * * 1", "--repos", "missing.txt"], "error: no repositories file at missing.txt: "
         "write one path or clone URL a line"),
        (["--repos", "repos.txt"], "error: give one of --cron EXPR or --every SECONDS "
         "(see 'coevo schedule add --help')"),
    ],
)  # fmt: skip
def test_bad_schedules_end_in_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "repos.txt").write_text("a\n")
    result = coevo("schedule", "add", "x", *args, cwd=tmp_path)
    assert result.returncode != 0
    assert result.stderr.splitlines() == [message]
    assert not (tmp_path / "coevo.db").exists() or "x" not in coevo("schedule", "list", cwd=tmp_path).stdout


def test_a_cycle_records_each_repository_and_a_failing_one_does_not_stop_the_other(tmp_path: Path) -> None:
    _repo(tmp_path / "good")
    (tmp_path / "repos.txt").write_text("missing\ngood\n")
    add = ["schedule", "add", "daily", "--cron", "0 3 * * *", "--repos", "repos.txt", "--no-curate"]
    assert coevo(*add, cwd=tmp_path).returncode == 0
    result = coevo("schedule", "run", "daily", cwd=tmp_path)
    assert result.returncode == 1  # a repository had an error
    lines = result.stdout.splitlines()
    assert lines[0].startswith("cycle 1 of daily: completed, started ")
    assert lines[0].endswith(" — 1 of 2 repositories had errors")
    assert lines[1].startswith(f"  {tmp_path / 'missing'}: 0 new test commits")
    assert lines[1].endswith(f"error: {tmp_path / 'missing'}: no such file or directory")
    assert lines[2].startswith(
        f"  {tmp_path / 'good'}: 1 new test commits (0 already mined), 1 pairs, 1 candidates"
    )
    assert "snapshot:" not in result.stdout  # no task was added: nothing to release
    [cycle] = json.loads(coevo("cycles", "--json", cwd=tmp_path).stdout)
    assert cycle["status"] == "completed"
    assert cycle["repositories"][str(tmp_path / "good")]["commits"] == 1
    assert cycle["repositories"][str(tmp_path / "missing")]["error"]

    second = coevo("schedule", "run", "daily", cwd=tmp_path)
    good = json.loads(coevo("cycles", "--json", "--limit", "1", cwd=tmp_path).stdout)[0]["repositories"]
    assert good[str(tmp_path / "good")]["commits"] == 0, second.stdout  # nothing mined twice


def test_a_cycle_skips_while_another_of_its_schedule_runs_and_takes_over_from_a_dead_one(
    tmp_path: Path,
) -> None:
    _repo(tmp_path / "good")
    (tmp_path / "repos.txt").write_text("good\n")
    assert (
        coevo(
            "schedule", "add", "s", "--every", "60", "--repos", "repos.txt", "--no-curate", cwd=tmp_path
        ).returncode
        == 0
    )
    store = open_store(tmp_path / "coevo.db")
    with store.session() as session:
        session.add(Cycle(schedule="s", owner=Owner.current().token))  # this test process: alive
    skipped = coevo("schedule", "run", "s", cwd=tmp_path)
    assert skipped.returncode == 1
    assert skipped.stdout.startswith("cycle 2 of s: skipped, ")
    assert "cycle 1 of s still runs" in skipped.stdout

    here = Owner.current()
    dead = Owner(here.pid, "1", here.boot, here.namespace, here.host)  # its start time says: gone
    with store.session() as session:
        running = session.get(Cycle, 1)
        assert running is not None
        running.owner = dead.token
        session.add(running)
    ran = coevo("schedule", "run", "s", cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    statuses = {c.id: c.status for c in miner.list_cycles(store)}
    store.close()
    assert statuses == {1: CycleStatus.INTERRUPTED, 2: CycleStatus.SKIPPED, 3: CycleStatus.COMPLETED}


def test_a_discovery_schedule_mines_the_registered_repositories_of_its_language(tmp_path: Path) -> None:
    """`--discover python`: each cycle mines the clone URLs `coevo discover --add` registered (here
    file:// URLs standing for GitHub's), not the rejected ones nor another language's."""
    for name in ("kept", "rejected", "javaish"):
        _repo(tmp_path / "remotes" / name)
    store = open_store(tmp_path / "coevo.db")
    with store.session() as session:
        for name, language, registered in (("kept", "python", True), ("rejected", "python", False),
                                           ("javaish", "java", True)):  # fmt: skip
            session.add(
                DiscoveredRepository(
                    full_name=f"acme/{name}", clone_url=f"file://{tmp_path / 'remotes' / name}",
                    language=language, qualified=registered, registered=registered,
                )
            )  # fmt: skip
    store.close()
    add = ["schedule", "add", "found", "--every", "3600", "--discover", "python", "--no-curate"]
    assert coevo(*add, cwd=tmp_path).returncode == 0
    result = coevo("schedule", "run", "found", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    [cycle] = json.loads(coevo("cycles", "--json", cwd=tmp_path).stdout)
    assert list(cycle["repositories"]) == [f"file://{tmp_path / 'remotes' / 'kept'}"]
    assert cycle["repositories"][f"file://{tmp_path / 'remotes' / 'kept'}"]["commits"] == 1
