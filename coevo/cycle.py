"""One cycle of a schedule: what the daemon's jobs run (``coevo.cycle:run_cycle``) and ``coevo schedule run``.

For each repository, in turn: clone it when new or fetch its mirror, mine from its watermark,
curate the new pairs (:func:`~coevo.pipeline.run_pipeline` on that one repository, so a failing
repository is recorded and the next one goes on). Then re-validate a rotating sample of existing
tasks (``--revalidate N``), and, when tasks were added or retired since the newest snapshot,
export a snapshot and render the site. Every step is logged (logger ``coevo.schedule``) and the
cycle recorded.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from sqlalchemy import func
from sqlmodel import select

from curation import CurateRequest, RevalidateRequest, revalidate
from miner import ScheduleOptions, begin_cycle, get_schedule, save_cycle, schedule_locations
from runners import cause_line
from tasks import CoevoError, Cycle, CycleStatus, Store, Task, open_store, utcnow
from web import render_site

from .pipeline import run_pipeline
from .release import snapshot_if_changed

log = logging.getLogger("coevo.schedule")


def run_cycle(db: str, name: str) -> Cycle:
    """Runs one cycle of the schedule ``name`` in the store at ``db`` (a path or URL) and returns
    its record; a ``skipped`` record when another cycle of it still runs.

    Ctrl-C or SIGTERM marks the cycle ``interrupted`` (the work done is kept) and propagates.
    """
    store = open_store(db)
    try:
        return _run(store, name)
    finally:
        store.close()


def _run(store: Store, name: str) -> Cycle:
    schedule = get_schedule(store, name)
    options = ScheduleOptions.model_validate(schedule.options)
    cycle = begin_cycle(store, name)
    if cycle.status is CycleStatus.SKIPPED:
        log.info("%s: skip: %s", name, cycle.message)
        return cycle
    locations = schedule_locations(store, schedule)
    log.info("%s: cycle %s started: %d repositories", name, cycle.id, len(locations))
    notes: list[str] = []
    try:
        for location in locations:
            cycle.repositories = {**cycle.repositories, location: _repository_step(store, location, options)}
            save_cycle(store, cycle)
            log.info("%s: %s", name, repository_line(location, cycle.repositories[location]))
        revalidated, statuses_changed = _revalidate(store, options)
        notes += revalidated
        _release(store, options, cycle, notes, statuses_changed)
    except KeyboardInterrupt:
        cycle.status, cycle.message = (
            CycleStatus.INTERRUPTED,
            "; ".join([*notes, "interrupted (work done is kept)"]),
        )
        cycle.finished_at = utcnow()
        save_cycle(store, cycle)
        log.info("%s: cycle %s interrupted", name, cycle.id)
        raise
    except Exception as exc:
        cycle.status, cycle.message = CycleStatus.FAILED, "; ".join([*notes, f"{type(exc).__name__}: {exc}"])
        cycle.finished_at = utcnow()
        save_cycle(store, cycle)
        log.info("%s: cycle %s failed: %s", name, cycle.id, cycle.message)
        raise
    failed = [loc for loc, result in cycle.repositories.items() if result.get("error")]
    if failed:
        notes.append(f"{len(failed)} of {len(locations)} repositories had errors")
    cycle.status, cycle.message, cycle.finished_at = CycleStatus.COMPLETED, "; ".join(notes), utcnow()
    save_cycle(store, cycle)
    log.info("%s: cycle %s completed%s", name, cycle.id, f": {cycle.message}" if cycle.message else "")
    return cycle


def _repository_step(store: Store, location: str, options: ScheduleOptions) -> dict[str, Any]:
    """Mines and curates one repository; its counts, duration and error (None when it went well)."""
    curation = CurateRequest(reruns=options.reruns, backend=options.backend) if options.curate else None
    before = _task_count(store)
    started = time.monotonic()
    report = run_pipeline(store, [location], since=options.since, curation=curation)
    result: dict[str, Any] = {
        "commits": 0,
        "already_mined": 0,
        "pairs": 0,
        "candidates": 0,
        "labels": {},
        "tasks_added": _task_count(store) - before,
        "seconds": round(time.monotonic() - started, 2),
        "error": None,
    }
    for run in report.runs:
        result["commits"] += run.test_commits
        result["already_mined"] += run.already_mined
        result["pairs"] += run.pairs
        result["candidates"] += run.candidates
    for curated in report.curations:
        result["labels"] = dict(curated.labels)
    if report.errors:
        result["error"] = "; ".join(cause_line(message) for message in report.errors.values())
    return result


def _task_count(store: Store) -> int:
    with store.session() as session:
        return session.exec(select(func.count()).select_from(Task)).one()


def _revalidate(store: Store, options: ScheduleOptions) -> tuple[list[str], bool]:
    """Re-validates a rotating sample of existing tasks (``revalidate_sample`` of them, the least
    recently checked first: :func:`curation.revalidate`), quarantining those whose gold no longer
    behaves as curated and restoring those that heal; skipped when the sample is 0 or None.
    Returns the cycle's notes and whether any task changed status."""
    if not options.revalidate_sample:
        return [], False
    sample, reruns = options.revalidate_sample, options.reruns
    report = revalidate(store, RevalidateRequest(sample=sample, reruns=reruns, backend=options.backend))
    note = (
        f"revalidation: {len(report.checks)} checked, {len(report.quarantined)} quarantined, "
        f"{len(report.restored)} restored"
    )
    if report.stopped:
        note += f" (stopped: {cause_line(report.stopped)})"
    log.info("%s", note)
    return [note], bool(report.quarantined or report.restored)


def _release(
    store: Store, options: ScheduleOptions, cycle: Cycle, notes: list[str], statuses_changed: bool = False
) -> None:
    """Writes a snapshot and renders the site when the store gained or retired tasks since the
    newest snapshot (the site also when it was never rendered, or when a task changed status)."""
    changed = statuses_changed or any(result.get("tasks_added") for result in cycle.repositories.values())
    if options.snapshots is not None:
        try:
            changes, snapshot = snapshot_if_changed(store, Path(options.snapshots))
        except CoevoError as exc:
            notes.append(f"snapshot: {exc}")
        else:
            changed = changes.changed
            if snapshot is not None:
                cycle.snapshot = str(snapshot.path)
                log.info(
                    "%s: snapshot: wrote %s (%d added, %d retired)",
                    cycle.schedule,
                    snapshot.path,
                    len(changes.added),
                    len(changes.retired),
                )
    if options.site is not None and (changed or not (Path(options.site) / "index.html").exists()):
        try:
            site = render_site(store, Path(options.site))
        except CoevoError as exc:
            notes.append(f"site: {exc}")
        else:
            cycle.site = str(site.out)
            log.info("%s: site: rendered %s", cycle.schedule, site.out)


def repository_line(location: str, result: dict[str, Any]) -> str:
    """One repository's result in a line, as the daemon logs it and ``coevo cycles`` prints it."""
    labels = ", ".join(f"{n} {label}" for label, n in sorted(result.get("labels", {}).items()))
    line = (
        f"{location}: {result['commits']} new test commits ({result['already_mined']} already mined), "
        f"{result['pairs']} pairs, {result['candidates']} candidates, {result['tasks_added']} tasks added"
        + (f" ({labels})" if labels else "")
        + f", {result['seconds']:g} s"
    )
    return line + (f" — error: {result['error']}" if result.get("error") else "")
