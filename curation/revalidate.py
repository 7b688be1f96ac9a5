"""`coevo revalidate`: are released tasks still what they were curated as?

Tasks rot after release: a dependency leaves its registry, a plugin stops resolving, a test
starts depending on the date or on a file that is gone. Each task checked has its revisions
rebuilt in a fresh work folder, from what its curation recorded (as scoring builds them:
:func:`runners.scoring.scorer.build_task_revisions`), and its gold methods run ``reruns`` times on rev2
(and on rev1 for generation). The verdict (:func:`health_verdict`) is a pure function of the
builds and those cells; every check is stored as a :class:`~tasks.HealthCheck`. A task whose gold
no longer behaves is quarantined with the reason; a quarantined one that behaves again is
restored; a retired one is never checked. coevo's own faults (no Docker daemon) are never a
verdict: the check is stored as inconclusive, the task keeps its status and the run stops.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func
from sqlmodel import col, select

from runners import bounded, cause_line, in_context, remove_dead_leftovers, resolve_backend
from runners.environments.revisions import BuildInterrupted, BuiltRevision
from runners.sandbox.scratch import temporary_dir
from runners.scoring.scorer import FAILS_ON_OLD, ScoreOptions, build_task_revisions, environment_key, run_gold
from runners.scoring.scorer import task_histories as _task_histories
from tasks import (
    CoevoError,
    HealthCheck,
    InfrastructureError,
    Repository,
    Store,
    Task,
    TaskStatus,
    Track,
)

from .matrix import FLAKY, Cell

DEFAULT_SAMPLE = 20


@dataclass(frozen=True)
class RevalidateRequest:
    """Which tasks to check and how: ``sample`` tasks (the least recently checked first), or
    ``all``; only ``repository``'s when given."""

    sample: int | None = DEFAULT_SAMPLE
    all: bool = False
    repository: str | None = None
    reruns: int = 3
    backend: str = "auto"
    test_timeout: float = 300.0
    build_timeout: float = 1800.0
    base_images: Mapping[str, str] | None = None


@dataclass
class RevalidateProgress:
    """Callbacks a front end passes to follow re-validation (a progress bar)."""

    start: Callable[[int], None] = lambda total: None
    advance: Callable[[HealthCheck], None] = lambda check: None


@dataclass(frozen=True)
class Health:
    """The verdict of one check: ok (True/False; None: inconclusive), its reason code and evidence."""

    ok: bool | None
    reason: str = ""
    message: str = ""


@dataclass
class RevalidateReport:
    checks: list[HealthCheck] = field(default_factory=list)
    """Every check stored by this run, in the order they ran."""
    quarantined: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    """Tasks that could not be checked for a reason of their own (no history): nothing stored."""
    stopped: str = ""
    """Why the run stopped before checking every task (coevo's own fault); empty when it did not."""

    def as_json(self) -> dict[str, Any]:
        return {
            "checks": [c.model_dump(mode="json", exclude={"id", "cells"}) for c in self.checks],
            "quarantined": self.quarantined,
            "restored": self.restored,
            "errors": self.errors,
            "stopped": self.stopped,
        }


def health_verdict(
    track: Track, new: BuiltRevision, old: BuiltRevision | None, cells: Mapping[str, Mapping[str, Cell]]
) -> Health:
    """Whether a task's gold still behaves as curated, checked in this order: both revisions built
    (``env_failed``, ``build_failed``), every method's runs agree (``flaky``), every method
    passes on rev2 (``timeout``, ``gold_fails_on_new``) and, for generation, fails, errs or does
    not compile on rev1 (``gold_passes_on_old``: it no longer tells old code from new)."""
    for name, built in (("rev2", new), ("rev1", old)):
        if built is not None and built.status != "ok":
            reason = "env_failed" if built.status == "env_failed" else "build_failed"
            return Health(False, reason, in_context(f"{name} {built.sha[:10]} {built.status}", built.message))
    for method, by_cell in cells.items():
        for name, cell in by_cell.items():
            if cell.outcome == FLAKY:
                runs = ", ".join(cell.runs)
                return Health(
                    False, "flaky", in_context(f"{method} {name} runs disagree: {runs}", cell.message)
                )
    for method, by_cell in cells.items():
        nn = by_cell["NN"]
        if nn.outcome != "pass":
            reason = "timeout" if nn.outcome == "timeout" else "gold_fails_on_new"
            return Health(False, reason, in_context(f"{method} NN {nn.outcome}", nn.message))
    if track == Track.GENERATION:
        for method, by_cell in cells.items():
            no = by_cell.get("NO")
            if no is not None and no.outcome not in FAILS_ON_OLD:
                return Health(
                    False,
                    "gold_passes_on_old",
                    f"{method} NO {no.outcome}: it no longer fails on the old code",
                )
    return Health(True)


def revalidate(
    store: Store, request: RevalidateRequest, progress: RevalidateProgress | None = None
) -> RevalidateReport:
    """Checks the request's tasks (:func:`select_tasks`) and stores each check; quarantines and
    restores tasks by what it found. Stops at coevo's own fault, having stored it as inconclusive."""
    progress = progress or RevalidateProgress()
    backend = resolve_backend(request.backend)
    request = dataclasses.replace(request, backend=backend)
    remove_dead_leftovers(docker=backend == "docker")
    tasks = select_tasks(store, request)
    with store.session() as session:
        repos = {r.id: r for r in session.exec(select(Repository)).all()}
    options = ScoreOptions(
        backend=backend,
        test_timeout=request.test_timeout,
        build_timeout=request.build_timeout,
        base_images=request.base_images,
    )
    report = RevalidateReport()
    progress.start(len(tasks))
    try:
        histories = _task_histories(repos.values(), tasks, options)
    except CoevoError as exc:
        report.stopped = str(exc)
        return report
    for task in tasks:
        try:
            health, cells, environment = check_task(
                task, repos[task.repository_id], options, histories[task.repository_id], request.reruns
            )
        except (InfrastructureError, BuildInterrupted) as exc:
            health, cells, environment = Health(None, "infrastructure", bounded(str(exc))), {}, ""
            report.stopped = str(exc)
        except CoevoError as exc:
            report.errors[task.id] = str(exc)
            continue
        check = _store_check(store, task.id, health, cells, environment, backend)
        report.checks.append(check)
        if check.status != task.status:
            (report.quarantined if check.status == TaskStatus.QUARANTINED else report.restored).append(
                task.id
            )
        progress.advance(check)
        if report.stopped:
            break
    return report


def select_tasks(store: Store, request: RevalidateRequest) -> list[Task]:
    """The tasks a run checks: active and quarantined ones (so these can be restored), of the
    request's repository, those never checked first, then the least recently checked, then by
    id — so successive samples cover every task before checking any again."""
    with store.session() as session:
        query = select(Task).where(col(Task.status).in_([TaskStatus.ACTIVE, TaskStatus.QUARANTINED]))
        if request.repository is not None:
            if session.exec(select(Repository).where(Repository.name == request.repository)).first() is None:
                raise CoevoError(f"no repository named {request.repository!r} in the database")
            query = query.where(Task.repository == request.repository)
        tasks = list(session.exec(query).all())
        last = dict(
            session.exec(
                select(HealthCheck.task_id, func.max(HealthCheck.checked_at)).group_by(
                    col(HealthCheck.task_id)
                )
            ).all()
        )
    tasks.sort(key=lambda t: (last.get(t.id) is not None, str(last.get(t.id) or ""), t.id))
    if request.all or request.sample is None:
        return tasks
    return tasks[: request.sample]


def check_task(
    task: Task, repo: Repository, options: ScoreOptions, repo_path: Path, reruns: int
) -> tuple[Health, dict[str, dict[str, Cell]], str]:
    """One task's verdict, its gold's cells and the judging environment's key: its revisions
    built afresh (a work folder of their own, gone afterwards), its gold run ``reruns`` times."""
    with temporary_dir("coevo-revalidate-") as scratch:
        root = Path(scratch)
        new, old = build_task_revisions(task, repo, options, root / "work", repo_path)
        cells: dict[str, dict[str, Cell]] = {}
        if new.status != "ok" or (old is not None and old.status != "ok"):
            return health_verdict(task.track, new, old, cells), cells, ""
        for method in task.test_methods:
            cells[method] = {"NN": Cell()} | ({"NO": Cell()} if old is not None else {})
        ids = dict(zip(task.test_methods, task.test_ids, strict=True))
        for attempt in range(max(1, reruns)):
            run = run_gold(task, new, old, repo_path, root / f"run-{attempt}", options.test_timeout)
            for method, test in ids.items():
                cells[method]["NN"].add(run.on_new[test])
                if run.on_old is not None:
                    cells[method]["NO"].add(run.on_old[test])
            if any(cell.timed_out for by_cell in cells.values() for cell in by_cell.values()):
                break  # the verdict is decided: another run would cost the whole timeout again
        return health_verdict(task.track, new, old, cells), cells, environment_key(new, old)


def _store_check(
    store: Store,
    task_id: str,
    health: Health,
    cells: Mapping[str, Mapping[str, Cell]],
    environment: str,
    backend: str,
) -> HealthCheck:
    """Stores the check and the task's new status in one transaction."""
    with store.session() as session:
        task = session.get(Task, task_id)
        assert task is not None
        if health.ok is False and task.status == TaskStatus.ACTIVE:
            task.status = TaskStatus.QUARANTINED
        elif health.ok is True and task.status == TaskStatus.QUARANTINED:
            task.status = TaskStatus.ACTIVE
        if health.ok is not None and task.status != TaskStatus.RETIRED:
            first = cause_line(health.message)
            task.quarantine_reason = (
                None if health.ok else (f"{health.reason}: {first}" if first else health.reason)[:500]
            )
        session.add(task)
        check = HealthCheck(
            task_id=task_id,
            ok=health.ok,
            reason=health.reason,
            message=bounded(health.message),
            cells={
                method: {name: cell.as_json() for name, cell in by.items()} for method, by in cells.items()
            },
            backend=backend,
            environment=environment,
            status=task.status,
        )
        session.add(check)
        session.flush()
        session.refresh(check)
        session.expunge(check)
    return check
