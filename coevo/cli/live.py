"""Keeping the benchmark live: ``coevo run`` (the whole pipeline once), ``coevo example``, the
schedules, ``coevo daemon`` and ``coevo cycles``."""

from __future__ import annotations

import dataclasses
import json
import logging
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import click

import curation
import miner
from runners import cause_line
from tasks import (
    Cycle,
    CycleStatus,
    SnapshotInfo,
    StoreChanges,
)

from ..cycle import repository_line, run_cycle
from ..example import write_example
from ..pipeline import run_pipeline
from .curating import curate_bar, curation_json, curation_options, parse_kinds, print_curation
from .mining import mine_bar, print_runs, repository_names
from .options import (
    BACKEND,
    CURATE,
    CURATING_RISK,
    LIMIT,
    RERUNS,
    SINCE,
    SITE,
    SNAPSHOTS,
    chosen_backend,
    common,
    err,
    mining_options,
    one_line,
    opened_store,
    out,
    parse_date,
    progress_bar,
    window,
)
from .publishing import site_line


@click.command()
@mining_options
@window
@CURATE
@curation_options
@SNAPSHOTS
@SITE
@BACKEND
@common
def run(
    repos: tuple[str, ...],
    language: str,
    workers: int | None,
    since: str | None,
    until: str | None,
    curate: bool,
    reruns: int,
    test_timeout: float,
    max_span_hours: float,
    kinds: str,
    snapshots: Path,
    site: Path,
    backend: str,
    db: str | None,
    as_json: bool,
) -> None:
    """Run the whole pipeline on repositories: mine, curate what was mined, write a snapshot
    and render the site.

    The snapshot (of every task, into --snapshots) is written when the store gained or retired
    tasks since the newest snapshot there; the site (into --site) is rendered every run.

    REPO is a local path or a clone URL. Try it on a small example first:
    coevo example ./example-repo && coevo run ./example-repo

    Example: coevo run ./my-repo --since 2024-01-01
    """
    since_date, until_date = parse_date(since, "--since"), parse_date(until, "--until")
    store = opened_store(db, write=True)
    request = (
        curation.CurateRequest(
            reruns=reruns,
            backend=chosen_backend(backend, CURATING_RISK),
            test_timeout=test_timeout,
            max_span_hours=max_span_hours,
            kinds=parse_kinds(kinds),
        )
        if curate
        else None
    )
    with progress_bar(as_json) as (start, advance):
        progress, curate_progress = mine_bar(start, advance), curate_bar(start, advance)
        report = run_pipeline(
            store,
            repos,
            since=since_date,
            until=until_date,
            language=language,
            workers=workers,
            progress=progress,
            curation=request,
            curate_progress=curate_progress,
            snapshots=snapshots,
            site=site,
        )
    if as_json:
        names = repository_names(store, report.runs)
        payload = {
            "runs": [
                {"repository": names[r.repository_id], **r.model_dump(mode="json")} for r in report.runs
            ],
            "curations": [curation_json(c) for c in report.curations],
            "snapshot": str(report.snapshot.path) if report.snapshot else None,
            "added": list(report.changes.added) if report.changes else [],
            "retired": list(report.changes.retired) if report.changes else [],
            "site": str(report.site.out) if report.site else None,
            "errors": report.errors,
        }
        click.echo(json.dumps(payload, indent=2))
    else:
        print_runs(store, report.runs, False, {})
        for curated in report.curations:
            print_curation(curated, False)
        if report.changes is not None:
            out.print(_snapshot_line(report.changes, report.snapshot), highlight=False, soft_wrap=True)
        if report.site is not None:
            out.print(site_line(report.site), highlight=False, soft_wrap=True)
        for location, message in report.errors.items():
            err.print(f"error: {one_line(location)}: {one_line(cause_line(message))}", highlight=False)
    if not report.ok:
        raise SystemExit(1)


def _snapshot_line(changes: StoreChanges, snapshot: SnapshotInfo | None) -> str:
    """What the run's end did about snapshots, in one line."""
    since = f"since {changes.since.path}" if changes.since else "(the first snapshot there)"
    if snapshot is None:
        return f"snapshot: no task gained or retired {since}; none written"
    return (
        f"snapshot: wrote {snapshot.path} ({snapshot.tasks} tasks; "
        f"{len(changes.added)} added, {len(changes.retired)} retired {since})"
    )


@click.command("example")
@click.argument("path", type=click.Path(path_type=Path), default="example-repo", required=False)
def example_command(path: Path) -> None:
    """Write a tiny Python project with a short history, to try coevo on.

    Its commits hold a new function with its new test and a changed behaviour with its
    repaired test: `coevo run` on it gives one task of each track.

    Example: coevo example ./example-repo && coevo run ./example-repo
    """
    written = write_example(path)
    state = "wrote" if written else "already there:"
    out.print(f"{state} {path}, a Python project with 5 commits; next: coevo run {path}", highlight=False)


@click.group("schedule")
def schedule_group() -> None:
    """Keep the benchmark live: cycles that mine, curate and release on a timetable (coevo daemon runs them).

    Example: coevo schedule add weekly --cron "0 3 * * 1" --repos repos.txt
    """


@schedule_group.command("add")
@click.argument("name")
@click.option(
    "--cron", metavar="EXPR", help='When cycles run: a crontab in UTC, e.g. "0 3 * * 1" (Mondays 03:00).'
)
@click.option(
    "--every",
    type=click.IntRange(min=1),
    metavar="SECONDS",
    help="Run a cycle every SECONDS instead of --cron (for tests and demos).",
)
@click.option(
    "--repos",
    "repos_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A file of repositories: one path or clone URL a line, # starts a comment.",
)
@click.option(
    "--discover",
    "discover_language",
    type=click.Choice(["java", "python"]),
    help="Mine the repositories coevo discover --add registered for this language.",
)
@SINCE
@CURATE
@RERUNS
@SNAPSHOTS
@SITE
@click.option(
    "--revalidate",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    metavar="N",
    help="Existing tasks re-validated each cycle (a rotating sample); 0: none.",
)
@BACKEND
@common
def schedule_add(
    name: str,
    cron: str | None,
    every: int | None,
    repos_file: Path | None,
    discover_language: str | None,
    since: str | None,
    curate: bool,
    reruns: int,
    snapshots: Path,
    site: Path,
    revalidate: int,
    backend: str,
    db: str | None,
    as_json: bool,
) -> None:
    """Add (or replace) a schedule: which repositories, when, and how each cycle runs.

    Example: coevo schedule add weekly --cron "0 3 * * 1" --repos repos.txt
    """
    if (cron is None) == (every is None):
        raise click.UsageError("give one of --cron EXPR or --every SECONDS")
    if (repos_file is None) == (discover_language is None):
        raise click.UsageError("give one of --repos FILE or --discover LANGUAGE")
    miner.trigger_for(cron, every)  # a bad cron ends here, before anything is written
    repos = miner.read_repos_file(repos_file) if repos_file is not None else []
    options = miner.ScheduleOptions(
        since=parse_date(since, "--since"),
        curate=curate,
        backend=backend,
        reruns=reruns,
        snapshots=str(snapshots.resolve()),
        site=str(site.resolve()),
        revalidate_sample=revalidate or None,
    )
    store = opened_store(db, write=True)
    schedule, next_run = miner.add_schedule(
        store, name, cron=cron, every=every, repos=repos, discover_language=discover_language, options=options
    )
    if as_json:
        payload = {**schedule.model_dump(mode="json"), "next_run": next_run.isoformat() if next_run else None}
        click.echo(json.dumps(payload, indent=2))
        return
    what = (
        f"the {discover_language} repositories discovery registered"
        if discover_language
        else (f"{len(repos)} repositories")
    )
    out.print(
        f"schedule {name}: {_trigger_text(cron, every)}, {what}; next run {_when(next_run)}",
        highlight=False,
    )
    out.print(
        f"coevo daemon runs it; coevo schedule run {name} runs one cycle now", highlight=False, soft_wrap=True
    )


def _trigger_text(cron: str | None, every: int | None) -> str:
    return f"every {every} s" if every is not None else f"cron {cron} (UTC)"


def _when(moment: datetime | None) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "never (no job)"


@schedule_group.command("list")
@common
def schedule_list(db: str | None, as_json: bool) -> None:
    """List the schedules: trigger, repositories, next run and the last cycle's status.

    Example: coevo schedule list
    """
    views = miner.list_schedules(opened_store(db, write=False))
    if as_json:
        rows = [
            {
                **dataclasses.asdict(v),
                "next_run": v.next_run.isoformat() if v.next_run else None,
                "last_started": v.last_started.isoformat() if v.last_started else None,
            }
            for v in views
        ]
        click.echo(json.dumps(rows, indent=2))
        return
    if not views:
        out.print("no schedules yet: coevo schedule add NAME --cron EXPR --repos FILE", highlight=False)
    for v in views:
        last = f"last cycle {v.last_status} {_when(v.last_started)}" if v.last_status else "no cycle yet"
        out.print(
            f"{v.name}: {v.trigger}, {v.repositories}; next run {_when(v.next_run)}; {last}", highlight=False
        )


@schedule_group.command("remove")
@click.argument("name")
@common
def schedule_remove(name: str, db: str | None, as_json: bool) -> None:
    """Remove a schedule and its job; the cycles it ran stay recorded.

    Example: coevo schedule remove weekly
    """
    miner.remove_schedule(opened_store(db, write=True), name)
    if as_json:
        click.echo(json.dumps({"removed": name}))
    else:
        out.print(f"removed schedule {name}", highlight=False)


@schedule_group.command("run")
@click.argument("name")
@common
def schedule_run(name: str, db: str | None, as_json: bool) -> None:
    """Run one cycle of a schedule now, in the foreground, and print its report.

    Example: coevo schedule run weekly
    """
    store = opened_store(db, write=True)
    miner.get_schedule(store, name)  # an unknown name ends here
    with _cycle_log(as_json):
        cycle = run_cycle(store.url, name)
    _print_cycles([cycle], as_json)
    if cycle.status is not CycleStatus.COMPLETED or any(r.get("error") for r in cycle.repositories.values()):
        raise SystemExit(1)


@click.command("daemon")
@common
def daemon_command(db: str | None, as_json: bool) -> None:
    """Run the schedules in the foreground, logging one line per step; SIGTERM or Ctrl-C stops it.

    A cycle in progress when it stops is recorded as interrupted and its work kept; missed runs
    happen once when it starts again.

    Example: coevo daemon --db coevo.db
    """
    store = opened_store(db, write=True)
    with _cycle_log(False):
        miner.run_daemon(store)


@contextmanager
def _cycle_log(quiet: bool) -> Iterator[None]:
    """The schedule's log lines on stderr, timestamped (off for JSON)."""
    logger = logging.getLogger("coevo.schedule")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%Y-%m-%dT%H:%M:%S"))
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING if quiet else logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)


@click.command("cycles")
@click.option("--schedule", "schedule_name", metavar="NAME", help="Only this schedule's cycles.")
@LIMIT
@common
def cycles_command(schedule_name: str | None, limit: int | None, db: str | None, as_json: bool) -> None:
    """List the recorded cycles, newest first, with each repository's counts, duration and error.

    Example: coevo cycles --schedule weekly
    """
    store = opened_store(db, write=False)
    if schedule_name is not None:
        miner.get_schedule(store, schedule_name)
    cycles = miner.list_cycles(store, schedule_name, limit)
    if not cycles and not as_json:
        out.print("no cycles yet: coevo schedule run NAME runs one", highlight=False)
    _print_cycles(cycles, as_json)


def _print_cycles(cycles: Sequence[Cycle], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps([c.model_dump(mode="json") for c in cycles], indent=2))
        return
    for c in cycles:
        took = (c.finished_at - c.started_at).total_seconds() if c.finished_at and c.started_at else None
        out.print(
            f"cycle {c.id} of {c.schedule}: {c.status.value}, started {_when(c.started_at)}"
            + (f", {took:.1f} s" if took is not None else "")
            + (f" — {c.message}" if c.message else ""),
            highlight=False,
            soft_wrap=True,
        )
        for location, result in c.repositories.items():
            out.print(f"  {one_line(repository_line(location, result))}", highlight=False, soft_wrap=True)
        if c.snapshot:
            out.print(f"  snapshot: {c.snapshot}", highlight=False, soft_wrap=True)
        if c.site:
            out.print(f"  site: {c.site}", highlight=False, soft_wrap=True)
