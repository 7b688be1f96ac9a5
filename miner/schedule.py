"""The schedule: recurring pipeline cycles kept as APScheduler 3 jobs in the store's own database.

A :class:`~tasks.Schedule` row says what a cycle does; the job of the same name in APScheduler's
``apscheduler_jobs`` table (a :class:`SQLAlchemyJobStore` on the store's database) says when. The
job names its function by text, :data:`CYCLE_FUNCTION` (``coevo.cycle:run_cycle``), with the
database URL and the schedule's name as its arguments: this package never imports the pipeline.

Cycles never overlap. Within one daemon a job has one instance at a time (``max_instances=1``);
across processes the store decides: a cycle starts by taking the write lock on its schedule's row,
and a cycle of the same schedule still ``running`` with a live owner makes it record a ``skipped``
cycle instead. Missed runs after downtime coalesce into one.

The daemon (:func:`run_daemon`) runs each cycle in the main thread, so SIGTERM and Ctrl-C reach it
as :class:`KeyboardInterrupt` like any other command: the runs in progress are marked interrupted,
their work kept, and the daemon exits.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from apscheduler.events import EVENT_JOB_MAX_INSTANCES, JobExecutionEvent, JobSubmissionEvent
from apscheduler.executors.base import BaseExecutor
from apscheduler.job import Job
from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from pydantic import BaseModel
from sqlalchemy import create_engine
from sqlmodel import col, select

from tasks import (
    CoevoError,
    Cycle,
    CycleStatus,
    DiscoveredRepository,
    Owner,
    Schedule,
    Store,
    signals_deferred,
    utcnow,
)

from .source import is_url

CYCLE_FUNCTION = "coevo.cycle:run_cycle"
"""The job's function, by textual reference: APScheduler imports it where the job runs."""
MISFIRE_GRACE_SECONDS = 7 * 24 * 3600
"""A run missed by up to a week (the daemon was down) still happens, once (coalesced)."""
_WAKE_SECONDS = 2.0
"""How often the daemon looks for schedules added or removed by other processes."""

log = logging.getLogger("coevo.schedule")


class ScheduleError(CoevoError):
    """A schedule that cannot be added or found."""


class BadCron(ScheduleError):
    """A crontab expression APScheduler cannot read."""


class UnknownSchedule(ScheduleError):
    """No schedule of that name."""


class BadReposFile(ScheduleError):
    """A repositories file that is missing or names no repository."""


class ScheduleOptions(BaseModel):
    """How each cycle of a schedule runs (stored as the schedule's ``options`` JSON)."""

    since: datetime | None = None
    """Mine only commits on or after this time; None: the whole history."""
    curate: bool = True
    backend: str = "auto"
    reruns: int = 3
    snapshots: str | None = None
    """The folder a snapshot is written to when a cycle adds or retires tasks; None: no snapshots."""
    site: str | None = None
    """The folder the site is rendered to when tasks were added or retired; None: no site."""
    revalidate_sample: int | None = None
    """Existing tasks re-validated each cycle (a rotating sample); 0/None: none."""


@dataclass(frozen=True)
class ScheduleView:
    """A schedule as ``coevo schedule list`` shows it."""

    name: str
    trigger: str
    repositories: str
    next_run: datetime | None
    """When the job store says it runs next; None when the job is missing (or paused)."""
    last_status: str | None
    last_started: datetime | None


def trigger_for(cron: str | None, every: int | None) -> BaseTrigger:
    """The APScheduler trigger: a crontab in UTC, or every N seconds (for tests and demos)."""
    if every is not None:
        return IntervalTrigger(seconds=every, timezone=UTC)
    if not cron:
        raise BadCron("give --cron EXPR (e.g. --cron '0 3 * * 1') or --every SECONDS")
    try:
        return CronTrigger.from_crontab(cron, timezone=UTC)
    except ValueError as exc:
        raise BadCron(
            f"--cron {cron!r} is not a crontab expression ({exc}): use five fields, "
            "minute hour day month weekday, e.g. '0 3 * * 1'"
        ) from None


def describe_trigger(schedule: Schedule) -> str:
    return f"every {schedule.every} s" if schedule.every is not None else f"cron {schedule.cron} (UTC)"


def read_repos_file(path: Path) -> list[str]:
    """The locations in a repositories file: one path or clone URL a line, ``#`` starts a comment.

    Relative paths are read from the file's folder, so the daemon finds them from anywhere.
    """
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise BadReposFile(f"no repositories file at {path}: write one path or clone URL a line") from None
    except OSError as exc:
        raise BadReposFile(f"cannot read the repositories file {path}: {exc.strerror}") from None
    locations = []
    for line in text.splitlines():
        location = line.partition("#")[0].strip()
        if not location:
            continue
        if not is_url(location) and not Path(location).expanduser().is_absolute():
            location = str((path.parent / location).resolve())
        locations.append(location)
    if not locations:
        raise BadReposFile(f"{path} names no repository: write one path or clone URL a line")
    return locations


def job_store(store: Store) -> SQLAlchemyJobStore:
    """APScheduler's job store in the store's database (table ``apscheduler_jobs``), waiting for
    a lock as long as the store does."""
    kwargs: dict[str, Any] = {}
    if store.url.startswith("sqlite"):
        kwargs["connect_args"] = {"timeout": store.lock_timeout}
    return SQLAlchemyJobStore(engine=create_engine(store.url, **kwargs))


@contextmanager
def _paused_scheduler(store: Store) -> Iterator[BackgroundScheduler]:
    """A scheduler that reads and writes the job store but runs nothing."""
    scheduler = BackgroundScheduler(jobstores={"default": job_store(store)}, timezone=UTC)
    scheduler.start(paused=True)
    try:
        yield scheduler
    finally:
        scheduler.shutdown(wait=False)


def add_schedule(
    store: Store,
    name: str,
    *,
    cron: str | None = None,
    every: int | None = None,
    repos: Sequence[str] = (),
    discover_language: str | None = None,
    options: ScheduleOptions | None = None,
) -> tuple[Schedule, datetime | None]:
    """Stores the schedule (replacing one of the same name) and its job; returns it and its next run."""
    trigger = trigger_for(cron, every)
    if not repos and not discover_language:
        raise BadReposFile("give the repositories: --repos FILE or --discover LANGUAGE")
    options = options or ScheduleOptions()
    with store.session() as session:
        schedule = session.exec(select(Schedule).where(Schedule.name == name)).first() or Schedule(name=name)
        schedule.cron, schedule.every = (None, every) if every is not None else (cron, None)
        schedule.repos = list(repos)
        schedule.discover_language = discover_language
        schedule.options = options.model_dump(mode="json")
        session.add(schedule)
    with _paused_scheduler(store) as scheduler:
        job = scheduler.add_job(
            CYCLE_FUNCTION,
            trigger,
            kwargs={"db": store.url, "name": name},
            id=name,
            name=f"cycle {name}",
            coalesce=True,
            max_instances=1,
            misfire_grace_time=MISFIRE_GRACE_SECONDS,
            replace_existing=True,
        )
        next_run: datetime | None = job.next_run_time
    return schedule, next_run


def remove_schedule(store: Store, name: str) -> None:
    """Removes the schedule and its job; its recorded cycles stay."""
    with store.session() as session:
        schedule = session.exec(select(Schedule).where(Schedule.name == name)).first()
        if schedule is None:
            raise _unknown(session_names(store), name)
        session.delete(schedule)
    with _paused_scheduler(store) as scheduler:
        if scheduler.get_job(name) is not None:
            scheduler.remove_job(name)


def session_names(store: Store) -> list[str]:
    with store.session() as session:
        return list(session.exec(select(Schedule.name).order_by(col(Schedule.name))).all())


def _unknown(names: list[str], name: str) -> UnknownSchedule:
    known = f"known: {', '.join(names)}" if names else "none yet: coevo schedule add NAME ..."
    return UnknownSchedule(f"no schedule named {name!r} ({known})")


def get_schedule(store: Store, name: str) -> Schedule:
    with store.session() as session:
        schedule = session.exec(select(Schedule).where(Schedule.name == name)).first()
    if schedule is None:
        raise _unknown(session_names(store), name)
    return schedule


def list_schedules(store: Store) -> list[ScheduleView]:
    """Every schedule with its next run (from the job store) and its last cycle."""
    with store.session() as session:
        schedules = session.exec(select(Schedule).order_by(col(Schedule.name))).all()
        last = {
            s.name: session.exec(
                select(Cycle).where(Cycle.schedule == s.name).order_by(col(Cycle.id).desc()).limit(1)
            ).first()
            for s in schedules
        }
    with _paused_scheduler(store) as scheduler:
        jobs = {job.id: job for job in scheduler.get_jobs()}
    views = []
    for s in schedules:
        job, cycle = jobs.get(s.name), last[s.name]
        what = f"discovered {s.discover_language}" if s.discover_language else f"{len(s.repos)} repositories"
        views.append(
            ScheduleView(
                s.name,
                describe_trigger(s),
                what,
                job.next_run_time if job else None,
                cycle.status.value if cycle else None,
                cycle.started_at if cycle else None,
            )
        )
    return views


def schedule_locations(store: Store, schedule: Schedule) -> list[str]:
    """The repositories a cycle mines: the schedule's list, or the registered discoveries' clone URLs."""
    if not schedule.discover_language:
        return list(schedule.repos)
    with store.session() as session:
        found = session.exec(
            select(DiscoveredRepository.clone_url)
            .where(col(DiscoveredRepository.registered))
            .where(DiscoveredRepository.language == schedule.discover_language)
            .order_by(col(DiscoveredRepository.full_name))
        ).all()
    return list(found)


def list_cycles(store: Store, schedule: str | None = None, limit: int | None = None) -> list[Cycle]:
    """Recorded cycles, newest first."""
    with store.session() as session:
        query = select(Cycle).order_by(col(Cycle.id).desc())
        if schedule is not None:
            query = query.where(Cycle.schedule == schedule)
        if limit is not None:
            query = query.limit(limit)
        return list(session.exec(query).all())


# --- one cycle's record ------------------------------------------------------------------------------


def begin_cycle(store: Store, name: str) -> Cycle:
    """Records the start of a cycle of ``name``: a ``running`` cycle, or a ``skipped`` one when
    another cycle of it still runs in a live process. A ``running`` cycle whose owner is dead is
    marked ``interrupted`` first. The schedule's row is written first, so two processes starting
    cycles at once take turns (SQLite's write lock) and see each other's rows."""
    with signals_deferred(), store.session() as session:
        schedule = session.exec(select(Schedule).where(Schedule.name == name)).first()
        if schedule is None:
            raise _unknown(list(session.exec(select(Schedule.name)).all()), name)
        schedule.claimed_at = utcnow()
        session.add(schedule)
        session.flush()  # takes the write lock before anything is read
        running = session.exec(
            select(Cycle).where(Cycle.schedule == name).where(Cycle.status == CycleStatus.RUNNING)
        ).all()
        busy: Cycle | None = None
        for other in running:
            owner = Owner.parse(other.owner)
            if owner is not None and owner.is_dead():
                other.status = CycleStatus.INTERRUPTED
                other.finished_at = other.finished_at or utcnow()
                other.message = f"its process (pid {owner.pid}) ended without finishing it (killed?)"
                session.add(other)
            else:
                busy = other
        cycle = Cycle(schedule=name, owner=Owner.current().token)
        if busy is not None:
            cycle.status = CycleStatus.SKIPPED
            cycle.finished_at = cycle.started_at
            cycle.message = (
                f"cycle {busy.id} of {name} still runs (started {busy.started_at:%Y-%m-%d %H:%M:%S})"
            )
        session.add(cycle)
    return cycle


def save_cycle(store: Store, cycle: Cycle) -> Cycle:
    """Writes the cycle's current state whole (a stop signal waits for it)."""
    with signals_deferred(), store.session() as session:
        merged = session.merge(cycle)
    return merged


# --- the daemon --------------------------------------------------------------------------------------


class _MainThreadExecutor(BaseExecutor):
    """Hands due jobs to the main thread, which runs them one at a time: there SIGTERM and
    Ctrl-C interrupt a cycle as they interrupt any command (APScheduler's own ``run_job``
    would swallow the interruption)."""

    def __init__(self, due: queue.Queue[tuple[Job, list[datetime]]]) -> None:
        super().__init__()
        self._due = due

    def _do_submit_job(self, job: Job, run_times: list[datetime]) -> None:
        self._due.put((job, run_times))

    def run(self, job: Job, run_times: list[datetime]) -> None:
        """Runs ``job`` once for its (coalesced) run times, here; an interruption propagates."""
        events: list[JobExecutionEvent] = []
        try:
            job.func(*job.args, **job.kwargs)
        except Exception as exc:
            log.error("%s: failed: %s", job.id, exc)
        finally:
            self._run_job_success(job.id, events)  # frees the instance slot


def run_daemon(
    store: Store, stop: threading.Event | None = None, on_ready: Callable[[], None] | None = None
) -> int:
    """Runs every stored schedule's cycles in the foreground until SIGTERM/SIGINT (or ``stop``);
    returns how many cycles it started. Schedules added or removed meanwhile are picked up."""
    due: queue.Queue[tuple[Job, list[datetime]]] = queue.Queue()
    executor = _MainThreadExecutor(due)
    scheduler = BackgroundScheduler(
        jobstores={"default": job_store(store)}, executors={"default": executor}, timezone=UTC
    )
    skipping: set[str] = set()

    def skipped(event: JobSubmissionEvent) -> None:
        if event.job_id not in skipping:
            skipping.add(event.job_id)
            log.info("%s: skip: its previous cycle still runs", event.job_id)

    scheduler.add_listener(skipped, EVENT_JOB_MAX_INSTANCES)
    started = 0
    scheduler.start()
    names = [job.id for job in scheduler.get_jobs()]
    log.info("daemon: started with %d schedules (%s)", len(names), ", ".join(names) or "none yet")
    if on_ready is not None:
        on_ready()
    try:
        while stop is None or not stop.is_set():
            try:
                job, run_times = due.get(timeout=_WAKE_SECONDS)
            except queue.Empty:
                scheduler.wakeup()
                continue
            started += 1
            executor.run(job, run_times)
            skipping.discard(job.id)
    except KeyboardInterrupt:
        log.info("daemon: stopping (signal); the cycle in progress is recorded as interrupted")
    finally:
        scheduler.shutdown(wait=False)
    log.info("daemon: stopped")
    return started
