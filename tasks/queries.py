"""Read-side views of the store for commands and reports."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import func
from sqlmodel import Session, col, select

from .errors import CoevoError
from .models import (
    AgentRun,
    Candidate,
    CurationRecord,
    FocalLink,
    HealthCheck,
    MethodChange,
    Repository,
    RevisionPair,
    Task,
    TaskStatus,
    TestChangeKind,
    Track,
)
from .store import Store


class UnknownRepository(CoevoError):
    """A repository name the store does not hold."""


class UnknownTask(CoevoError):
    """A task id the store does not hold (or a prefix that names none, or several)."""


class FocalView(BaseModel):
    file: str
    method: str
    kind: str
    provenance: list[str]


class CandidateView(BaseModel):
    """A candidate with its pair's revisions and dates and its static focal links."""

    id: int
    repository: str
    rev1: str
    rev2: str
    rev1_date: datetime
    rev2_date: datetime
    span_seconds: int
    test_file: str
    test_method: str
    change_kind: TestChangeKind
    focal: list[FocalView]


class CandidateListing(BaseModel):
    total: int
    by_kind: dict[str, int]
    by_repository: dict[str, int]
    candidates: list[CandidateView]


def list_candidates(
    store: Store,
    repository: str | None = None,
    kind: TestChangeKind | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int | None = None,
) -> CandidateListing:
    """Candidates matching the filters, newest rev2 first, with counts over all that match."""
    with store.session() as session:
        query = (
            select(Candidate, RevisionPair, Repository)
            .join(RevisionPair, col(Candidate.pair_id) == RevisionPair.id)
            .join(Repository, col(Candidate.repository_id) == Repository.id)
        )
        if repository is not None:
            _check_repository(session, repository)
            query = query.where(Repository.name == repository)
        if kind is not None:
            query = query.where(Candidate.change_kind == kind)
        if since is not None:
            query = query.where(col(RevisionPair.rev2_date) >= since)
        if until is not None:
            query = query.where(col(RevisionPair.rev2_date) < until)
        query = query.order_by(
            col(RevisionPair.rev2_date).desc(), col(Candidate.test_file), col(Candidate.test_method)
        )
        rows = session.exec(query).all()
        by_kind = Counter(str(candidate.change_kind) for candidate, _, _ in rows)
        by_repo = Counter(repo.name for _, _, repo in rows)
        shown = rows if limit is None else rows[:limit]
        ids = [candidate.id for candidate, _, _ in shown]
        links = session.exec(
            select(FocalLink, MethodChange)
            .join(MethodChange, col(FocalLink.method_change_id) == MethodChange.id)
            .where(col(FocalLink.candidate_id).in_(ids))
        ).all()
    focal: dict[int, dict[int, FocalView]] = {}
    for link, change in links:
        assert change.id is not None
        views = focal.setdefault(link.candidate_id, {})
        view = views.setdefault(
            change.id,
            FocalView(file=change.file, method=change.method, kind=change.kind, provenance=[]),
        )
        view.provenance.append(str(link.provenance))
    return CandidateListing(
        total=len(rows),
        by_kind=dict(sorted(by_kind.items())),
        by_repository=dict(sorted(by_repo.items())),
        candidates=[
            CandidateView(
                id=candidate.id or 0,
                repository=repo.name,
                rev1=pair.rev1,
                rev2=pair.rev2,
                rev1_date=pair.rev1_date,  # type: ignore[arg-type]
                rev2_date=pair.rev2_date,  # type: ignore[arg-type]
                span_seconds=pair.span_seconds,
                test_file=candidate.test_file,
                test_method=candidate.test_method,
                change_kind=candidate.change_kind,
                focal=sorted(focal.get(candidate.id or 0, {}).values(), key=lambda f: (f.file, f.method)),
            )
            for candidate, pair, repo in shown
        ],
    )


def _check_repository(session: Session, name: str) -> None:
    if session.exec(select(Repository).where(Repository.name == name)).first() is None:
        names = ", ".join(session.exec(select(Repository.name)).all()) or "none yet"
        raise UnknownRepository(f"no repository named {name!r} (known: {names})")


# --- tasks ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskListing:
    """The tasks that match, newest first (up to a limit), with counts over all that match."""

    total: int
    by_track: dict[str, int]
    by_language: dict[str, int]
    by_repository: dict[str, int]
    by_status: dict[str, int]
    tasks: list[Task]


def list_tasks(
    store: Store,
    repository: str | None = None,
    track: Track | None = None,
    language: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    statuses: Collection[TaskStatus] = (),
    limit: int | None = None,
) -> TaskListing:
    """Tasks matching the filters, newest first (their date is rev2's: ``since`` inclusive,
    ``until`` exclusive); the counts are counted by the database, so a limit reads only its rows."""
    with store.session() as session:
        where: list[Any] = []
        if repository is not None:
            _check_repository(session, repository)
            where.append(Task.repository == repository)
        if track is not None:
            where.append(Task.track == track)
        if language is not None:
            where.append(Task.language == language)
        if since is not None:
            where.append(col(Task.rev2_date) >= since)
        if until is not None:
            where.append(col(Task.rev2_date) < until)
        if statuses:
            where.append(col(Task.status).in_(list(statuses)))
        groups = session.exec(
            select(Task.track, Task.language, Task.status, func.count())
            .where(*where)
            .group_by(Task.track, Task.language, Task.status)
        ).all()
        per_repository = session.exec(
            select(Task.repository, func.count()).where(*where).group_by(Task.repository)
        ).all()
        query = (
            select(Task)
            .where(*where)
            .order_by(col(Task.rev2_date).desc(), col(Task.repository), col(Task.test_file), col(Task.id))
        )
        tasks = list(session.exec(query if limit is None else query.limit(limit)).all())
    counts: dict[str, Counter[str]] = {key: Counter() for key in ("track", "language", "status")}
    for task_track, task_language, status, n in groups:
        counts["track"][str(task_track)] += n
        counts["language"][task_language] += n
        counts["status"][str(status)] += n
    return TaskListing(
        total=sum(counts["track"].values()),
        by_track=dict(sorted(counts["track"].items())),
        by_language=dict(sorted(counts["language"].items())),
        by_repository=dict(sorted(per_repository)),
        by_status=dict(sorted(counts["status"].items())),
        tasks=tasks,
    )


def task_row(task: Task) -> dict[str, Any]:
    """Every field of the task as JSON values, in the order the model declares them."""
    row = task.model_dump(mode="json")
    return {name: row[name] for name in Task.model_fields}


@dataclass(frozen=True)
class TaskDetails:
    """A task with what a reviewer needs beside it: where its repository is, the pair's commits,
    each method's curation record and the agents scored on it."""

    task: Task
    repository: Repository | None
    pair: RevisionPair | None
    records: dict[str, CurationRecord]
    """Test method → its curation record (label, and what decided it)."""
    runs: list[AgentRun]
    health: list[HealthCheck] = field(default_factory=list)
    """Its re-validations (``coevo revalidate``), newest first."""

    def as_json(self) -> dict[str, Any]:
        """Every field of the task, and the rest without its bulky duplicates (the pair's diff)."""
        repo, pair = self.repository, self.pair
        return {
            **task_row(self.task),
            "repository_identity": repo.identity if repo else None,
            "repository_location": repo.location if repo else None,
            "pair": pair.model_dump(mode="json", exclude={"production_diff"}) if pair else None,
            "records": {
                method: record.model_dump(mode="json", include={"label", "drop_reason", "detail"})
                for method, record in self.records.items()
            },
            "runs": [
                run.model_dump(mode="json", include={"agent", "model", "status", "finished_at"})
                for run in self.runs
            ],
            "health": [check.model_dump(mode="json", exclude={"id", "task_id"}) for check in self.health],
        }


def task_details(store: Store, identifier: str) -> TaskDetails:
    """The task with this id, or with the one id that starts with it (``gen-801b``)."""
    with store.session() as session:
        task = session.get(Task, identifier)
        if task is None:
            found = session.exec(
                select(Task).where(col(Task.id).startswith(identifier, autoescape=True)).limit(6)
            ).all()
            if not found:
                raise UnknownTask(f"no task {identifier!r} in {store.name}: coevo tasks lists them")
            if len(found) > 1:
                several = ", ".join(sorted(t.id for t in found)[:5]) + (", ..." if len(found) > 5 else "")
                raise UnknownTask(f"{identifier!r} starts several task ids ({several}): give more of it")
            task = found[0]
        records = session.exec(
            select(CurationRecord, Candidate)
            .join(Candidate, col(Candidate.id) == col(CurationRecord.candidate_id))
            .where(CurationRecord.task_id == task.id)
        ).all()
        runs = session.exec(select(AgentRun).where(AgentRun.task_id == task.id).order_by(col(AgentRun.agent)))
        return TaskDetails(
            task=task,
            repository=session.get(Repository, task.repository_id),
            pair=session.get(RevisionPair, task.pair_id),
            records={candidate.test_method: record for record, candidate in records},
            runs=list(runs.all()),
            health=list(
                session.exec(
                    select(HealthCheck)
                    .where(HealthCheck.task_id == task.id)
                    .order_by(col(HealthCheck.checked_at).desc(), col(HealthCheck.id).desc())
                ).all()
            ),
        )
