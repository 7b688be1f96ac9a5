"""A task's id, and how ids move when a repository's identity becomes known.

A task's id hashes its repository's identity (:attr:`~tasks.Repository.identity`: its canonical
remote, or its root commit), its revisions, its test file and its track, so the same task has
the same id on every run, on every machine and from every clone. Stores from before identities
named tasks after the repository's local name; :func:`adopt_identities` moves such a store's
tasks to their ids, with everything that names them, in the caller's transaction.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime

from sqlalchemy import update
from sqlmodel import Session, col, select

from .models import AgentRun, CurationRecord, GoldCheck, Repository, Task


def task_id(repository: str, rev1: str, rev2: str, test_file: str, track: str) -> str:
    """A task's id from its repository's identity, revisions, test file and track."""
    digest = hashlib.sha256("\0".join((repository, rev1, rev2, test_file, track)).encode()).hexdigest()
    return f"{track[:3]}-{digest[:16]}"


def adopt_identities(session: Session, identities: Mapping[int, str]) -> dict[str, str]:
    """Records each repository's identity (row id → identity) and moves its tasks to the ids that
    derive from it; returns old id → new id of the tasks that moved.

    Agent runs, curation records and gold checks follow their task, so scores stay linked. Two
    rows that become one task (one repository mined from two clones into one store) keep one
    task row, the one already under the new id, and the later of two runs of one agent (or two
    gold checks of one environment).
    """
    moved: dict[str, str] = {}
    for repository_id, identity in sorted(identities.items()):
        repo = session.get(Repository, repository_id)
        if repo is None:
            continue
        repo.identity = identity
        session.add(repo)
        tasks = session.exec(select(Task).where(Task.repository_id == repository_id)).all()
        for task in tasks:
            new = task_id(identity, task.rev1, task.rev2, task.test_file, str(task.track))
            if new != task.id:
                _move(session, task, new)
                moved[task.id] = new
    session.flush()
    return moved


def _move(session: Session, task: Task, new: str) -> None:
    """``task`` renamed ``new``: a row under the new id first, then what names the old one, then
    the old row, so no foreign key ever points nowhere."""
    old = task.id
    if session.get(Task, new) is None:
        session.add(Task(**{**task.model_dump(), "id": new}))
        session.flush()
    runs = session.exec(select(AgentRun).where(AgentRun.task_id == old)).all()
    for run in runs:
        twin = session.exec(
            select(AgentRun).where(AgentRun.task_id == new, AgentRun.agent == run.agent)
        ).first()
        _move_row(session, run, twin, new, run.finished_at, twin.finished_at if twin else None)
    checks = session.exec(select(GoldCheck).where(GoldCheck.task_id == old)).all()
    for check in checks:
        same = session.exec(
            select(GoldCheck).where(GoldCheck.task_id == new, GoldCheck.environment == check.environment)
        ).first()
        _move_row(session, check, same, new, check.checked_at, same.checked_at if same else None)
    session.exec(update(CurationRecord).where(col(CurationRecord.task_id) == old).values(task_id=new))
    session.flush()
    session.delete(task)
    session.flush()


def _move_row(
    session: Session,
    row: AgentRun | GoldCheck,
    twin: AgentRun | GoldCheck | None,
    new: str,
    stamp: datetime | None,
    twin_stamp: datetime | None,
) -> None:
    """``row`` moved to task ``new``; where ``new`` already has its ``twin`` (one agent's run, one
    environment's gold check), the later of the two is kept."""
    if twin is not None and _later(twin_stamp, stamp):
        session.delete(row)
        return
    if twin is not None:
        session.delete(twin)
        session.flush()
    row.task_id = new
    session.add(row)


def _later(kept: datetime | None, other: datetime | None) -> bool:
    """Whether the row stamped ``kept`` is at least as recent as the one stamped ``other``."""
    if kept is None or other is None:
        return other is None
    return kept >= other
