"""Owners of runs, containers and folders: told apart from later processes with the same pid."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

from sqlmodel import select

from tasks import (
    CurationRun,
    Liveness,
    MiningRun,
    Owner,
    Repository,
    RunStatus,
    mark_abandoned_runs,
    open_store,
)


def _dead_owner() -> Owner:
    """The owner a real process had, once it has ended."""
    child = subprocess.run(
        [sys.executable, "-c", "from tasks import Owner; print(Owner.current().token)"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    owner = Owner.parse(child.stdout.strip())
    assert owner is not None
    return owner


def test_a_live_process_is_alive_and_an_ended_one_dead() -> None:
    here = Owner.current()
    assert here.liveness() is Liveness.ALIVE
    assert Owner.parse(here.token) == here
    assert Owner.parse(here.name) == dataclasses.replace(here, host="")
    assert _dead_owner().liveness() is Liveness.DEAD


def test_a_later_process_with_the_same_pid_is_not_the_owner() -> None:
    here = Owner.current()
    reused = dataclasses.replace(here, start=str(int(here.start) - 1))  # same pid, started earlier
    assert reused.liveness() is Liveness.DEAD
    assert dataclasses.replace(here, boot="0" * 8).liveness() is Liveness.DEAD  # before a reboot


def test_owners_that_cannot_be_judged_here_are_unknown() -> None:
    dead = _dead_owner()
    assert dataclasses.replace(dead, host="another-host").liveness() is Liveness.UNKNOWN
    assert dataclasses.replace(dead, namespace="1").liveness() is Liveness.UNKNOWN  # a container's
    for text in ("", "junk", "1-2-3@host", "x-1-2-3@host"):
        assert Owner.parse(text) is None


def test_runs_of_dead_owners_are_marked_interrupted_and_no_others(tmp_path: Path) -> None:
    store = open_store(tmp_path / "coevo.db")
    dead, here = _dead_owner(), Owner.current()
    owners = {
        "dead": dead.token,
        "live": here.token,
        "elsewhere": dataclasses.replace(dead, host="another-host").token,
        "unrecorded": "",
    }
    with store.session() as session:
        repo = Repository(name="r", location="r", path="/r", language="python")
        session.add(repo)
        session.flush()
        for name, owner in owners.items():
            session.add(CurationRun(owner=owner, message=name))
            session.add(MiningRun(repository_id=repo.id, owner=owner, message=name))
        session.add(CurationRun(owner=dead.token, status=RunStatus.COMPLETED, message="finished"))
    assert mark_abandoned_runs(store) == 2
    assert mark_abandoned_runs(store) == 0
    with store.session() as session:
        for table in (CurationRun, MiningRun):
            rows = session.exec(select(table)).all()
            status = {row.message.rpartition("; ")[2]: row.status for row in rows}
            assert status == {
                "dead": RunStatus.INTERRUPTED,
                "live": RunStatus.RUNNING,
                "elsewhere": RunStatus.RUNNING,
                "unrecorded": RunStatus.RUNNING,
                **({"finished": RunStatus.COMPLETED} if table is CurationRun else {}),
            }
            interrupted = next(row for row in rows if row.status == RunStatus.INTERRUPTED)
            assert f"pid {dead.pid}" in interrupted.message
