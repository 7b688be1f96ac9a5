"""The `coevo` command line: each command parses, calls one library function, prints."""

from __future__ import annotations

import dataclasses
import importlib.resources
import json
import logging
import os
import subprocess
import sys
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text
from sqlmodel import select

import curation
import miner
from runners import BACKENDS, BuildChoice, cause_line, resolve_backend, scoring
from runners.agents import check_agent, find_agent
from runners.scoring import ScoreOptions, scoring_folders
from tasks import (
    AgentRun,
    CoevoError,
    Cycle,
    CycleStatus,
    ExportOptions,
    HealthCheck,
    MiningRun,
    Repository,
    SnapshotInfo,
    Store,
    StoreChanges,
    TaskDetails,
    TaskStatus,
    Terminated,
    TestChangeKind,
    Track,
    disk_full,
    import_snapshot,
    list_candidates,
    list_snapshots,
    list_tasks,
    open_store,
    stop_on_signals,
    task_details,
    task_row,
    verify_snapshot,
)
from web import SiteReport, render_site, render_snapshot_site

from .. import __version__
from ..cycle import repository_line, run_cycle
from ..example import write_example
from ..pipeline import EnvironmentRun, build_and_test, environment_of, export, run_pipeline

# Piped output must not be cut to 80 columns: paths and method names are the payload. Nothing
# printed is Rich markup: test ids (`test_x[a]`), pip arguments (`.[test,dev]`), messages and
# names are printed as written.
out = Console(width=None if sys.stdout.isatty() else 10_000, markup=False)
err = Console(stderr=True, soft_wrap=True, markup=False)


class BadDate(CoevoError):
    """A date option that is not ISO 8601."""


def parse_date(value: str | None, option: str) -> datetime | None:
    """An ISO date or datetime; a date means midnight UTC, a time without zone means UTC."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise BadDate(f"{option} {value!r} is not a date; use YYYY-MM-DD or an ISO 8601 time") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _store(db: str | None, *, write: bool) -> Store:
    """The store, opened now so a fault ends the command before any work. A read command
    (``write=False``) never creates a store; a wait for another process's lock says so on a terminal."""
    return open_store(db, create=write, waiting=_notice).open()


def _notice(line: str) -> None:
    if err.is_terminal:
        err.print(f"{line}…", highlight=False)


def _common(command: Callable[..., None]) -> Callable[..., None]:
    """The options every command takes: the database and JSON output."""
    command = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(command)
    return click.option(
        "--db",
        metavar="PATH|URL",
        help="SQLite file or SQLAlchemy URL [env COEVO_DB; default ./coevo.db].",
    )(command)


def _window(command: Callable[..., None]) -> Callable[..., None]:
    command = click.option("--until", metavar="DATE", help="Only commits before this date (YYYY-MM-DD).")(
        command
    )
    return click.option("--since", metavar="DATE", help="Only commits on or after this date (YYYY-MM-DD).")(
        command
    )


_BACKEND = click.option(
    "--backend",
    type=click.Choice(list(BACKENDS)),
    default="auto",
    show_default=True,
    help="Where to build and run: a Docker container, the host, or Docker when a daemon answers.",
)


def _backend(requested: str, risk: str, check: Callable[[str], None] | None = None) -> str:
    """``--backend`` resolved. When ``auto`` finds no Docker daemon, one warning line on stderr
    names the ``risk`` of working on the host, once ``check`` (if any) accepts the backend."""
    backend = resolve_backend(requested)
    if check is not None:
        check(backend)
    if requested == "auto" and backend == "local":
        err.print(
            f"warning: no Docker daemon answers: {risk} (use --backend docker to isolate it)", highlight=False
        )
    return backend


_CURATING_RISK = "curating on the host runs each repository's code here"
_BUILDING_RISK = "building on the host runs the repository's code here"

_MAVEN_ARG = click.option(
    "--maven-arg",
    "maven_args",
    multiple=True,
    metavar="ARG",
    help="An extra Maven argument for this repository's builds (repeatable), e.g. -DjdkVersion=1.8.",
)


def _base_images(values: tuple[str, ...]) -> dict[str, str]:
    found: dict[str, str] = {}
    for value in values:
        key, sep, image = value.partition("=")
        if not sep or not key or not image:
            raise click.BadParameter(f"{value!r} is not KEY=IMAGE (java17=debian:bookworm-slim)")
        found[key] = image
    return found


_BASE_IMAGE = click.option(
    "--base-image",
    "base_images",
    multiple=True,
    metavar="KEY=IMAGE",
    help="The Debian-based image a base starts from (repeatable), e.g. java17=my-registry/debian:12; "
    "also $COEVO_BASE_IMAGES. Default: debian:bookworm-slim.",
)
_LANGUAGE = click.option(
    "--language",
    type=click.Choice(["auto", "java", "python"]),
    default="auto",
    show_default=True,
    help="The repository's language; auto detects it from the files.",
)


def _mining(command: Callable[..., None]) -> Callable[..., None]:
    command = click.option(
        "--workers",
        type=click.IntRange(min=1),
        help="Analysis processes [default: one per core for long histories].",
    )(command)
    command = _LANGUAGE(command)
    return click.argument("repos", nargs=-1, required=True, metavar="REPO...")(command)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="coevo")
def app() -> None:
    """Mine, curate and score a live benchmark of real test/code co-evolution."""


_CURATION_OPTIONS = (
    click.option(
        "--reruns",
        type=click.IntRange(min=1),
        default=3,
        show_default=True,
        help="Runs of every matrix cell; runs that disagree make the cell flaky.",
    ),
    click.option(
        "--timeout",
        "test_timeout",
        type=float,
        default=300,
        show_default=True,
        help="Seconds for one run of a cell's tests.",
    ),
    click.option(
        "--max-span-hours",
        type=float,
        default=curation.DEFAULT_MAX_SPAN_HOURS,
        show_default=True,
        help="Pairs whose commits span longer are dropped (pair_span_too_long).",
    ),
)


def _curation(command: Callable[..., None]) -> Callable[..., None]:
    for option in reversed(_CURATION_OPTIONS):
        command = option(command)
    return command


@app.command()
@_mining
@_window
@click.option(
    "--curate/--no-curate",
    default=True,
    show_default=True,
    help="Curate what was mined (build and run the candidates' tests).",
)
@_curation
@click.option(
    "--snapshots",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("snapshots"),
    show_default=True,
    help="Where a snapshot of every task is written when the run gained or retired tasks.",
)
@click.option(
    "--site",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("site"),
    show_default=True,
    help="Where the static site of the store is rendered at the end (coevo site).",
)
@_BACKEND
@_common
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
    store = _store(db, write=True)
    request = (
        curation.CurateRequest(
            reruns=reruns,
            backend=_backend(backend, _CURATING_RISK),
            test_timeout=test_timeout,
            max_span_hours=max_span_hours,
        )
        if curate
        else None
    )
    with _bar(as_json) as (start, advance):
        progress, curate_progress = _mine_bar(start, advance), _curate_bar(start, advance)
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
        names = _repository_names(store, report.runs)
        payload = {
            "runs": [
                {"repository": names[r.repository_id], **r.model_dump(mode="json")} for r in report.runs
            ],
            "curations": [_curation_json(c) for c in report.curations],
            "snapshot": str(report.snapshot.path) if report.snapshot else None,
            "added": list(report.changes.added) if report.changes else [],
            "retired": list(report.changes.retired) if report.changes else [],
            "site": str(report.site.out) if report.site else None,
            "errors": report.errors,
        }
        click.echo(json.dumps(payload, indent=2))
    else:
        _print_runs(store, report.runs, False, {})
        for curated in report.curations:
            _print_curation(curated, False)
        if report.changes is not None:
            out.print(_snapshot_line(report.changes, report.snapshot), highlight=False, soft_wrap=True)
        if report.site is not None:
            out.print(_site_line(report.site), highlight=False, soft_wrap=True)
        for location, message in report.errors.items():
            err.print(f"error: {_one_line(location)}: {_one_line(cause_line(message))}", highlight=False)
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


def _site_line(site: SiteReport) -> str:
    index = site.out / "index.html"
    return f"site: wrote {index} ({site.tasks} tasks, {site.repositories} repositories, {site.agents} agents)"


@app.command("site")
@click.option(
    "--snapshot",
    "snapshot",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="Render this snapshot folder (verified first) instead of the store.",
)
@click.option(
    "--out",
    "folder",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("site"),
    show_default=True,
    help="The folder to write (one coevo wrote before is emptied first).",
)
@click.option("--title", default="coevo", show_default=True, help="The site's name, atop every page.")
@_common
def site_command(snapshot: Path | None, folder: Path, title: str, db: str | None, as_json: bool) -> None:
    """Render the static site: overview, task explorer, a page per task and repository, the
    funnel, and the leaderboard with its cutoff slider and contamination curve.

    The folder is plain files with relative links: open index.html, or serve it from any host.

    Example: coevo site --out site && python3 -m http.server -d site
    """
    if snapshot is not None and db is not None:
        raise click.UsageError("give --db or --snapshot, not both")
    if snapshot is not None:
        report = render_snapshot_site(snapshot, folder, title=title)
    else:
        report = render_site(_store(db, write=False), folder, title=title)
    if as_json:
        click.echo(json.dumps({**dataclasses.asdict(report), "out": str(report.out)}, indent=2))
    else:
        out.print(_site_line(report), highlight=False, soft_wrap=True)


@app.command("example")
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


@app.command("curate")
@click.option("--repo", help="Only this repository (its name).")
@_window
@_curation
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    help="Pairs curated at once, each in its own process [default: one per two cores].",
)
@click.option(
    "--redo",
    is_flag=True,
    help="Curate again pairs already curated (each pair's old rows go when its new ones are written).",
)
@click.option(
    "--retry-env",
    is_flag=True,
    help="Curate again pairs that had no environment (env_failed: a toolchain coevo lacked, say).",
)
@_BACKEND
@_BASE_IMAGE
@_common
def curate_command(
    repo: str | None,
    since: str | None,
    until: str | None,
    reruns: int,
    test_timeout: float,
    max_span_hours: float,
    workers: int | None,
    redo: bool,
    retry_env: bool,
    backend: str,
    base_images: tuple[str, ...],
    db: str | None,
    as_json: bool,
) -> None:
    """Prove mined candidates by execution and turn the good ones into tasks.

    Builds both revisions of every mined pair once, runs each candidate's old and new test on
    the old and new code (the 4-way matrix) --reruns times, labels it (test_generation,
    test_update_positive, ... or a drop reason) and writes the tasks. Resumable: pairs already
    curated are skipped unless --redo. The window applies to the date of the pair's rev2.

    Example: coevo curate --repo gson --since 2024-01-01 --backend docker
    """
    request = curation.CurateRequest(
        repository=repo,
        since=parse_date(since, "--since"),
        until=parse_date(until, "--until"),
        reruns=reruns,
        backend=_backend(backend, _CURATING_RISK),
        workers=workers,
        redo=redo,
        retry_env=retry_env,
        test_timeout=test_timeout,
        max_span_hours=max_span_hours,
        base_images=_base_images(base_images),
    )
    store = _store(db, write=True)
    with _curation_progress(as_json) as progress:
        report = curation.curate(store, request, progress)
    _print_curation(report, as_json)
    if report.errors:
        raise SystemExit(1)


@app.command("funnel")
@click.option("--repo", help="Only this repository (its name).")
@_common
def funnel_command(repo: str | None, db: str | None, as_json: bool) -> None:
    """Count what entered and left every stage, by reason, per repository and overall, and
    what caused the drops (each reason's most common causes).

    Example: coevo funnel --json
    """
    overall, per_repo = curation.funnel(_store(db, write=False), repo)
    if as_json:
        payload = {
            "overall": overall.as_json(),
            "repositories": {k: v.as_json() for k, v in per_repo.items()},
        }
        click.echo(json.dumps(payload, indent=2))
        return
    # Discovery is counted overall only: a store that discovered shows the overall table.
    show_overall = len(per_repo) > 1 or overall.discovered > 0
    for name, counts in [*per_repo.items(), *([("overall", overall)] if show_overall else [])]:
        table = Table(title=name, title_justify="left", show_edge=False, box=None, pad_edge=False)
        table.add_column("stage")
        table.add_column("count", justify="right")
        table.add_column("breakdown", overflow="fold")
        for stage, count, detail in counts.stages():
            table.add_row(stage, str(count), detail)
        out.print(table)
        causes = counts.top_causes()
        if causes:
            why = Table(box=None, pad_edge=False, show_edge=False)
            why.add_column("dropped because")
            why.add_column("count", justify="right")
            why.add_column("cause", overflow="fold")
            for reason, count, cause in causes:
                why.add_row(reason, str(count), _visible(cause))
            out.print()
            out.print(why)
        out.print()


_INCLUDE_QUARANTINED = click.option(
    "--include-quarantined",
    is_flag=True,
    help="Keep quarantined tasks (whose gold no longer behaves as curated; see coevo revalidate).",
)


@app.command("revalidate")
@click.option(
    "--sample",
    type=click.IntRange(min=1),
    default=curation.DEFAULT_SAMPLE,
    show_default=True,
    help="Check this many tasks, those checked least recently first.",
)
@click.option("--all", "everything", is_flag=True, help="Check every active and quarantined task.")
@click.option("--repo", help="Only this repository's tasks (its name).")
@click.option(
    "--reruns",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Runs of the gold methods; runs that disagree make the task flaky.",
)
@click.option(
    "--timeout", "test_timeout", type=float, default=300, show_default=True, help="Seconds per test run."
)
@_BACKEND
@_BASE_IMAGE
@_common
def revalidate_command(
    sample: int,
    everything: bool,
    repo: str | None,
    reruns: int,
    test_timeout: float,
    backend: str,
    base_images: tuple[str, ...],
    db: str | None,
    as_json: bool,
) -> None:
    """Rebuild tasks afresh and re-run their gold: quarantine the tasks that rotted, restore the healed.

    Example: coevo revalidate --sample 20 --backend docker
    """
    request = curation.RevalidateRequest(
        sample=sample,
        all=everything,
        repository=repo,
        reruns=reruns,
        backend=_backend(backend, _CURATING_RISK),
        test_timeout=test_timeout,
        base_images=_base_images(base_images),
    )
    store = _store(db, write=True)
    with _bar(as_json) as (start, advance):
        progress = curation.RevalidateProgress(
            start=lambda total: start("revalidating", total, "tasks"), advance=lambda _check: advance(1)
        )
        report = curation.revalidate(store, request, progress)
    if as_json:
        click.echo(json.dumps(report.as_json(), indent=2))
    else:
        for check in report.checks:
            out.print(f"{check.task_id}  {_health_word(check, report)}", highlight=False)
        inconclusive = sum(check.ok is None for check in report.checks)
        ok = sum(bool(check.ok) for check in report.checks)
        out.print(
            f"revalidation: {len(report.checks)} tasks checked — {ok} ok, {len(report.quarantined)} "
            f"quarantined, {len(report.restored)} restored, {inconclusive} inconclusive",
            highlight=False,
        )
    for task, message in sorted(report.errors.items()):
        err.print(f"error: task {task}: {cause_line(message)}", highlight=False)
    if report.stopped:
        err.print(f"error: {cause_line(report.stopped)} — revalidation stopped", highlight=False)
    if report.errors or report.stopped:
        raise SystemExit(1)


def _health_word(check: HealthCheck, report: curation.RevalidateReport) -> str:
    """``ok``, ``restored``, ``quarantined: <reason>``, ``still quarantined: …`` or ``inconclusive: …``."""
    why = f"{check.reason}: {cause_line(check.message)}" if check.message else check.reason
    if check.ok is None:
        return _visible(f"inconclusive: {why}")
    if check.ok:
        return "restored" if check.task_id in report.restored else "ok"
    state = "quarantined" if check.task_id in report.quarantined else f"still {check.status}"
    return _visible(f"{state}: {why}")


@app.command("discover")
@click.option(
    "--language", type=click.Choice(["java", "python"]), required=True, help="The language to search for."
)
@click.option("--min-stars", type=click.IntRange(min=0), default=0, show_default=True, help="Fewest stars.")
@click.option("--pushed-since", metavar="DATE", help="Only repositories pushed to since this day.")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=miner.DEFAULT_LIMIT,
    show_default=True,
    help="Repositories to take from the search, most starred first.",
)
@click.option(
    "--min-commits",
    type=click.IntRange(min=0),
    default=miner.DEFAULT_MIN_COMMITS,
    show_default=True,
    help="Commits in the last 365 days a repository needs to qualify.",
)
@click.option("--add", is_flag=True, help="Register the qualified repositories for mining.")
@click.option(
    "--api-url",
    metavar="URL",
    help=f"GitHub's REST API (GitHub Enterprise: https://HOST/api/v3) "
    f"[env {miner.API_URL_ENV}; default {miner.DEFAULT_API_URL}].",
)
@_common
def discover_command(
    language: str,
    min_stars: int,
    pushed_since: str | None,
    limit: int,
    min_commits: int,
    add: bool,
    api_url: str | None,
    db: str | None,
    as_json: bool,
) -> None:
    """Search GitHub for repositories to mine and record which qualify (permissive licence, build
    file, recent commits; not a fork, not archived) and why the others do not; token from $GITHUB_TOKEN.

    Example: coevo discover --language java --min-stars 500 --pushed-since 2025-01-01 --limit 50 --add
    """
    since = parse_date(pushed_since, "--pushed-since")
    request = miner.DiscoverRequest(
        language=language,
        min_stars=min_stars,
        pushed_since=since.date() if since is not None else None,
        limit=limit,
        min_commits=min_commits,
        add=add,
    )
    store = _store(db, write=True)
    client = miner.GitHubClient(
        api_url or os.environ.get(miner.API_URL_ENV) or miner.DEFAULT_API_URL,
        token=os.environ.get(miner.TOKEN_ENV) or None,
        cache=miner.StoreCache(store),
    )
    with _discover_bar(as_json, limit) as progress:
        report = miner.discover(store, client, request, progress)
    if as_json:
        click.echo(json.dumps([row.model_dump(mode="json") for row in report.rows], indent=2))
        return
    for row in report.rows:
        verdict = "qualified" + (", registered" if row.registered else "") if row.qualified else row.reason
        why = f" ({row.detail})" if row.detail else ""
        out.print(f"{row.full_name}  {row.stars}★  {row.licence or '-'}  {verdict}{why}", highlight=False)
    rejected = ", ".join(f"{n} {reason}" for reason, n in report.rejections.most_common()) or "none"
    out.print(
        f"discovered {len(report.rows)} repositories: {len(report.qualified)} qualified, "
        f"rejected: {rejected}; {report.requests} requests, {report.not_modified} unchanged (304)",
        highlight=False,
    )


@contextmanager
def _discover_bar(quiet: bool, limit: int) -> Iterator[miner.DiscoverProgress]:
    """A rich progress bar on stderr over the repositories checked, with GitHub's remaining quota."""
    bar = Progress(
        TextColumn("discovering", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("repositories, {task.fields[requests]} requests, quota {task.fields[quota]}"),
        console=err,
        disable=quiet or not err.is_terminal,
    )
    with bar:
        task = bar.add_task("discovering", total=limit, requests=0, quota="?")

        def update(requests: int, remaining: int | None) -> None:
            quota = "?" if remaining is None else str(remaining)
            bar.update(task, advance=1, requests=requests, quota=quota)

        yield miner.DiscoverProgress(request=update)


def _curation_json(report: curation.CurateReport) -> dict[str, object]:
    return {**report.run.model_dump(mode="json"), "labels": dict(report.labels), "errors": report.errors}


def _print_curation(report: curation.CurateReport, as_json: bool) -> None:
    run = report.run
    if as_json:
        click.echo(json.dumps(_curation_json(report), indent=2))
        return
    labels = ", ".join(f"{n} {k}" for k, n in report.labels.most_common()) or "nothing new"
    out.print(
        f"curation: {run.status} — {run.pairs_done} pairs curated ({run.backend}): {labels}", highlight=False
    )
    for pair_id, message in sorted(report.errors.items()):
        err.print(f"error: pair {pair_id}: {cause_line(message)} (it will be retried)", highlight=False)


@contextmanager
def _curation_progress(quiet: bool) -> Iterator[curation.CurateProgress]:
    """A rich progress bar on stderr over the pairs being curated."""
    with _bar(quiet) as (start, advance):
        yield _curate_bar(start, advance)


def _curate_bar(
    start: Callable[[str, int, str], None], advance: Callable[[int], None]
) -> curation.CurateProgress:
    return curation.CurateProgress(start=lambda total: start("curating", total, "pairs"), advance=advance)


def _mine_bar(start: Callable[[str, int, str], None], advance: Callable[[int], None]) -> miner.Progress:
    return miner.Progress(
        start=lambda name, total: start(f"mining {name}", total, "commits"),
        advance=advance,
        warn=lambda message: err.print(f"warning: {message}", highlight=False),
    )


@app.command("score")
@click.option(
    "--agent", "agent_name", required=True, help="The agent: a name from --agents-file, gold or noop."
)
@click.option(
    "--agents-file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A TOML file declaring agents ([agents.NAME] command, model, cutoff, timeout, network, mount).",
)
@click.option(
    "--agent-cmd", help="An inline agent command template (placeholders: {workspace} {prompt} ...)."
)
@click.option("--after", metavar="DATE", help="Only tasks dated after this day (their rev2's date).")
@click.option("--model-cutoff", is_flag=True, help="Only tasks dated after the agent's own training cutoff.")
@click.option("--track", type=click.Choice(["generation", "update"]), help="Only tasks of this track.")
@click.option(
    "--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Tasks scored at once."
)
@click.option("--redo", is_flag=True, help="Score again the tasks this agent was already scored on.")
@click.option(
    "--trust-agent",
    is_flag=True,
    help="With --backend local (or auto without Docker), run a command agent and judge its tests on the "
    "host, where they could read the gold tests.",
)
@click.option(
    "--timeout", "test_timeout", type=float, default=300, show_default=True, help="Seconds per test run."
)
@click.option(
    "--reruns",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Runs of the agent's tests on the new and on the old code; runs that disagree make a method "
    "flaky, which is no success.",
)
@click.option(
    "--repo-dir",
    "repo_dirs",
    multiple=True,
    metavar="NAME=PATH",
    help="Read repository NAME's history from this clone (repeatable); without it a repository with "
    "no history here is cloned from its recorded URL into $COEVO_CLONES.",
)
@_INCLUDE_QUARANTINED
@_BACKEND
@_common
def score_command(
    agent_name: str,
    agents_file: Path | None,
    agent_cmd: str | None,
    after: str | None,
    model_cutoff: bool,
    track: str | None,
    workers: int,
    redo: bool,
    trust_agent: bool,
    test_timeout: float,
    reruns: int,
    repo_dirs: tuple[str, ...],
    include_quarantined: bool,
    backend: str,
    db: str | None,
    as_json: bool,
) -> None:
    """Run an agent on the tasks dated after a cutoff and judge what it writes.

    Each run gets a fresh workspace (the new code, the test file reset, no history, no
    network unless the agent declares it) and keeps only the test file. Finished task and
    agent pairs are kept; run again to resume.

    Example: coevo score --agent my-agent --agents-file agents.toml --model-cutoff
    """
    if after and model_cutoff:
        raise click.UsageError("give --after or --model-cutoff, not both")
    agent = find_agent(agent_name, agents_file, agent_cmd)
    cutoff = parse_date(after, "--after")
    store = _store(db, write=True)
    options = ScoreOptions(
        test_timeout=test_timeout,
        reruns=reruns,
        trust_host=trust_agent,
        repo_dirs=_repo_dirs(repo_dirs),
        include_quarantined=include_quarantined,
    )
    runs = "each repository's code" + ("" if agent.builtin else f" and agent {agent.name}")
    resolved = _backend(
        backend,
        f"scoring on the host runs {runs} here",
        lambda backend: check_agent(agent, backend, trust_agent, scoring_folders(store, options)),
    )
    options = dataclasses.replace(options, backend=resolved)
    with _bar(as_json) as (start, advance):
        started: list[bool] = []

        def progress(done: int, total: int) -> None:
            if not started:
                start(f"scoring {agent.name}", total, "tasks")
                started.append(True)
            advance(1)

        report = scoring.score(
            store,
            agent,
            cutoff,
            model_cutoff,
            track,
            options,
            workers,
            redo,
            progress,
        )
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(report), indent=2))
    else:
        out.print(
            f"{agent.name}: {report.scored} tasks scored, {report.skipped} already scored", highlight=False
        )
    for task, message in sorted(report.errors.items()):
        err.print(f"error: task {task}: {cause_line(message)}", highlight=False)
    if report.errors:
        raise SystemExit(1)


def _repo_dirs(given: Sequence[str]) -> dict[str, Path]:
    """``NAME=PATH`` options as a map; a malformed one is a usage error."""
    found: dict[str, Path] = {}
    for item in given:
        name, equals, path = item.partition("=")
        if not equals or not name or not path:
            raise click.BadParameter(f"{item!r}: give NAME=PATH", param_hint="--repo-dir")
        found[name] = Path(path).expanduser()
    return found


@app.command("leaderboard")
@click.option("--after", metavar="DATE", help="Only tasks dated after this day.")
@_common
def leaderboard_command(after: str | None, db: str | None, as_json: bool) -> None:
    """The agents, best StrictSuccess% first: pass, failure and success rates, coverage, wall time.

    Rates are macro-averages over tasks, in percent, over the methods the harness could
    judge (HrnsFail% is the share it could not: never counted against an agent). Success% is
    TestEvo-Bench's; StrictSuccess% also asks the method to detect a mutant of the focal code.

    Example: coevo leaderboard --after 2025-06-01
    """
    cutoff = parse_date(after, "--after")
    standings = scoring.leaderboard(_store(db, write=False), cutoff)
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(s) for s in standings], indent=2))
        return
    table = Table(show_edge=False, box=None, pad_edge=False)
    columns = ("agent", "model", "tasks", "StrictSuccess%", "Success%", "Pass%", "CmplFail%", "ExecFail%",
               "HrnsFail%", "CovOnPass", "MutOnPass", "seconds", "tokens", "cost")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="left" if column in ("agent", "model") else "right")

    def shown(value: float | None, digits: int = 1) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    for s in standings:
        table.add_row(
            s.agent, s.model, str(s.tasks), shown(s.strict_success_rate), shown(s.success_rate),
            shown(s.pass_rate),
            shown(s.compile_fail_rate), shown(s.exec_fail_rate), shown(s.harness_fail_rate),
            shown(s.coverage_on_pass), shown(s.mutation_on_pass), shown(s.seconds), shown(s.tokens, 0),
            shown(s.cost, 2),
        )  # fmt: skip
    out.print(table if standings else "no agent has been scored yet", highlight=False)


@app.command("show-run")
@click.argument("agent")
@click.argument("task")
@_common
def show_run_command(agent: str, task: str, db: str | None, as_json: bool) -> None:
    """Show one agent's run on one task: its prompt, its log, its diff, each method's outcome.

    Example: coevo show-run my-agent gen-0123456789abcdef
    """
    with _store(db, write=False).session() as session:
        run = session.exec(select(AgentRun).where(AgentRun.agent == agent, AgentRun.task_id == task)).first()
    if run is None:
        raise CoevoError(f"no run of agent {agent!r} on task {task!r}")
    if as_json:
        click.echo(json.dumps(run.model_dump(mode="json"), indent=2))
        return
    out.print(f"agent {run.agent} on task {run.task_id}: {run.status}, {run.seconds:.1f}s", highlight=False)
    for method, outcome in run.outcomes.items():
        detail = f" — {_visible(cause_line(outcome['message']))}" if outcome.get("message") else ""
        success = ""
        if outcome.get("success"):
            strict = outcome.get("strict")  # None: stored before strict success existed
            success = " (strict success)" if strict else " (success, not strict: detects no mutant)"
            success = " (success)" if strict is None else success
        out.print(f"  {outcome['outcome']:<13} {_visible(method)}{success}{detail}", highlight=False)
    if run.coverage_on_pass is not None:
        out.print(f"focal-method line coverage: {run.coverage_on_pass:.0%}", highlight=False)
    if run.mutants:
        m = run.mutants
        statuses = ", ".join(f"{status} {n}" for status, n in m["statuses"].items())
        line = f"mutants of the focal methods: {m['detected']} of {m['total']} detected ({statuses})"
        line += f" in {m['seconds']:.1f}s"
        out.print(line + (f"; {m['message']}" if m.get("message") else ""), highlight=False)
    if run.discarded:
        discarded = _visible(", ".join(run.discarded))
        out.print(f"discarded changes to: {discarded}", highlight=False)
    for title, text in (("prompt", run.prompt), ("agent log", run.log), ("diff of the test file", run.diff)):
        out.print(f"\n--- {title} ---", highlight=False)
        out.print(_visible(text.rstrip()) or "(empty)", highlight=False)


def _visible(text: str) -> str:
    """``text`` with control and format characters escaped (``\\x1b``): an agent's log or file
    must not drive the terminal (colours, cursor moves, a rewritten line, reversed text)."""
    return "".join(
        char if char in "\n\t" or unicodedata.category(char) not in ("Cc", "Cf") else _escaped(char)
        for char in text
    )


def _one_line(text: str) -> str:
    """``text`` (a path, a name, a message holding them) on one line: control characters, line
    breaks among them, escaped (a repository path may hold a newline)."""
    return _visible(text).replace("\n", "\\n").replace("\t", "\\t")


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


@app.command("mine")
@_mining
@_window
@click.option(
    "--window-hours",
    type=float,
    default=12.0,
    show_default=True,
    help="Production-only commits this close before a test-only commit join its pair.",
)
@click.option(
    "--test-glob",
    multiple=True,
    help="A glob that marks test files (repeatable; replaces the language default).",
)
@click.option("--exclude-glob", multiple=True, help="A glob of files to ignore (repeatable).")
@_MAVEN_ARG
@_common
def mine_command(
    repos: tuple[str, ...],
    language: str,
    workers: int | None,
    since: str | None,
    until: str | None,
    window_hours: float,
    test_glob: tuple[str, ...],
    exclude_glob: tuple[str, ...],
    maven_args: tuple[str, ...],
    db: str | None,
    as_json: bool,
) -> None:
    """Mine co-evolution candidates from git history.

    REPO is a local path or a clone URL. Example: coevo mine ./my-repo --since 2024-01-01
    """
    request_since, request_until = parse_date(since, "--since"), parse_date(until, "--until")
    store = _store(db, write=True)
    runs: list[MiningRun] = []
    with _progress(as_json) as progress:
        for location in repos:
            runs.append(
                miner.mine(
                    store,
                    miner.MineRequest(
                        location=location,
                        since=request_since,
                        until=request_until,
                        language=language,
                        window=timedelta(hours=window_hours),
                        test_globs=test_glob,
                        exclude_globs=exclude_glob,
                        build_args=maven_args,
                        workers=workers,
                    ),
                    progress,
                )
            )
    _print_runs(store, runs, as_json, {})


_TEXT_LIMIT = 50
_limit = click.option(
    "--limit",
    type=click.IntRange(min=0),
    help=f"Show at most this many; 0 for all [default: {_TEXT_LIMIT} in text, all in JSON].",
)
"""Rows a text listing shows unless --limit says otherwise; JSON gives every row."""


@app.command()
@click.option("--repo", help="Only this repository (its name).")
@click.option(
    "--kind",
    type=click.Choice([k.value for k in TestChangeKind]),
    help="Only this change kind.",
)
@_window
@_limit
@_common
def candidates(
    repo: str | None,
    kind: str | None,
    since: str | None,
    until: str | None,
    limit: int | None,
    db: str | None,
    as_json: bool,
) -> None:
    """List and count mined candidates, newest first.

    Example: coevo candidates --kind inserted --json
    """
    since_date, until_date = parse_date(since, "--since"), parse_date(until, "--until")
    if limit is None:
        limit = 0 if as_json else _TEXT_LIMIT
    listing = list_candidates(
        _store(db, write=False),
        repository=repo,
        kind=TestChangeKind(kind) if kind else None,
        since=since_date,
        until=until_date,
        limit=limit or None,
    )
    if as_json:
        click.echo(listing.model_dump_json(indent=2))
        return
    # Cells are data, not markup (`[call]` prints as written), and escaped (:func:`_visible`).
    table = Table("repo", "rev2", "date", "kind", "test", "focal (static)", box=None)
    for cand in listing.candidates:
        focal = ", ".join(f"{f.method} [{'/'.join(f.provenance)}]" for f in cand.focal[:3])
        more = f" +{len(cand.focal) - 3}" if len(cand.focal) > 3 else ""
        table.add_row(
            *(
                Text(_visible(cell))
                for cell in (
                    cand.repository,
                    cand.rev2[:10],
                    cand.rev2_date.date().isoformat(),
                    cand.change_kind,
                    f"{cand.test_file}::{cand.test_method}",
                    (focal + more) or "-",
                )
            )
        )
    if listing.candidates:
        out.print(table)
    counts = ", ".join(f"{n} {k}" for k, n in listing.by_kind.items()) or "none"
    left_out = listing.total - len(listing.candidates)
    shown = ""
    if left_out:
        shown = f" — showing {len(listing.candidates)}, {left_out} left out (--limit 0 shows all)"
    out.print(f"{listing.total} candidates: {counts}{shown}", highlight=False)


@app.command("tasks")
@click.option("--repo", help="Only this repository (its name).")
@click.option("--track", type=click.Choice([t.value for t in Track]), help="Only tasks of this track.")
@click.option("--language", type=click.Choice(["java", "python"]), help="Only tasks in this language.")
@click.option(
    "--since", metavar="DATE", help="Only tasks dated on or after this date (their rev2's; YYYY-MM-DD)."
)
@click.option("--until", metavar="DATE", help="Only tasks dated before this date (YYYY-MM-DD).")
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice([s.value for s in TaskStatus]),
    help="Only tasks with this status (repeatable) [default: all].",
)
@_limit
@_common
def tasks_command(
    repo: str | None,
    track: str | None,
    language: str | None,
    since: str | None,
    until: str | None,
    statuses: tuple[str, ...],
    limit: int | None,
    db: str | None,
    as_json: bool,
) -> None:
    """List and count the benchmark tasks, newest first; --json gives their full rows.

    Example: coevo tasks --track generation --since 2025-01-01
    """
    since_date, until_date = parse_date(since, "--since"), parse_date(until, "--until")
    if limit is None:
        limit = 0 if as_json else _TEXT_LIMIT
    listing = list_tasks(
        _store(db, write=False),
        repository=repo,
        track=Track(track) if track else None,
        language=language,
        since=since_date,
        until=until_date,
        statuses=[TaskStatus(status) for status in statuses],
        limit=limit or None,
    )
    if as_json:
        payload = {
            **{key: value for key, value in dataclasses.asdict(listing).items() if key != "tasks"},
            "tasks": [task_row(task) for task in listing.tasks],
        }
        click.echo(json.dumps(payload, indent=2))
        return
    table = Table("id", "repo", "track", "date", "status", "test file", "methods", "focal", box=None)
    for task in listing.tasks:
        focal = [f"{f['method']} [{f['provenance']}]" for f in task.focal_methods]
        date = task.rev2_date.date().isoformat() if task.rev2_date else "-"
        cells = (task.id, task.repository, task.track, date, task.status, task.test_file,
                 _first(task.test_methods), _first(focal))  # fmt: skip
        table.add_row(*(Text(_visible(cell)) for cell in cells))
    if listing.tasks:
        out.print(table)
    counts = [", ".join(f"{n} {k}" for k, n in listing.by_track.items()) or "none"]
    if listing.by_language:
        counts.append(", ".join(f"{n} {k}" for k, n in listing.by_language.items()))
    if set(listing.by_status) - {TaskStatus.ACTIVE.value}:
        counts.append(", ".join(f"{n} {k}" for k, n in listing.by_status.items()))
    left_out = listing.total - len(listing.tasks)
    shown = f" — showing {len(listing.tasks)}, {left_out} left out (--limit 0 shows all)" if left_out else ""
    out.print(f"{listing.total} tasks: {'; '.join(counts)}{shown}", highlight=False)


def _first(names: list[str], shown: int = 3) -> str:
    """The first ``shown`` names and how many more there are; ``-`` for none."""
    more = f" +{len(names) - shown}" if len(names) > shown else ""
    return (", ".join(names[:shown]) + more) or "-"


@app.command("show-task")
@click.argument("task_id", metavar="ID")
@_common
def show_task_command(task_id: str, db: str | None, as_json: bool) -> None:
    """Show everything a reviewer needs to judge one task (ID, or a prefix naming one task).

    Example: coevo show-task gen-0123456789abcdef
    """
    details = task_details(_store(db, write=False), task_id)
    if as_json:
        click.echo(json.dumps(details.as_json(), indent=2))
        return
    for line in _task_lines(details):
        out.print(line)


_CELLS = ("OO", "ON", "NO", "NN")
_DYNAMIC = ("coverage", "coverage_use", "stack")
"""Focal provenances measured by running the test; the others are static links."""


def _task_lines(details: TaskDetails) -> Iterator[Text]:
    """``coevo show-task`` as lines; everything a repository wrote is escaped (:func:`_visible`),
    diffs are coloured (on a terminal only: the console drops styles on a pipe)."""
    task, repo, pair = details.task, details.repository, details.pair

    def field(label: str, value: object) -> Text:
        return Text(f"{label:<13}{_visible(str(value))}")

    def when(moment: datetime | None) -> str:
        return moment.isoformat() if moment else "-"

    yield field("task", f"{task.id} ({task.track}, {task.language}, {task.status})")
    if task.status == TaskStatus.QUARANTINED and task.quarantine_reason:
        yield field("quarantined", task.quarantine_reason)
    identity = f" [{repo.identity or 'identity not known yet'}] from {repo.location}" if repo else ""
    yield field("repository", f"{task.repository}{identity}")
    yield field("date", f"{when(task.rev2_date)} (rev2's commit date)")
    yield field("rev1", f"{task.rev1} {when(task.rev1_date)}")
    yield field("rev2", f"{task.rev2} {when(task.rev2_date)}")
    if pair is not None:
        message = (pair.rev2_message.strip().splitlines() or [""])[0]
        yield field("rev2 commit", f"{pair.rev2_author}: {message}")
        order = " (tests first)" if pair.test_first else ""
        span = f", spanning {pair.span_seconds / 3600:.1f} h{order}" if len(pair.commits) > 1 else ""
        yield field("commits", f"{' '.join(sha[:12] for sha in pair.commits)}{span}")
    renamed = f" (was {task.old_test_file})" if task.old_test_file not in (None, task.test_file) else ""
    yield field("test file", f"{task.test_file}{renamed}")
    yield field("mined", f"{when(task.mined_at)}, curated {when(task.curated_at)}")
    if task.flaky:
        yield field("flaky", "yes")

    yield Text("\nmethods (runnable id, label)")
    for method, runnable in zip(task.test_methods, task.test_ids, strict=False):
        record = details.records.get(method)
        label = f"  {record.label}: {cause_line(record.detail)}" if record is not None else ""
        yield Text(_visible(f"  {method}  {runnable}{label}"))
    yield field("gold helpers", ", ".join(task.gold_helpers) or "none")

    yield Text("\nfocal methods (file, method, unit and change, lines, found by)")
    for focal in task.focal_methods:
        provenance = str(focal.get("provenance", ""))
        found = provenance if provenance in _DYNAMIC else f"static link: {provenance}"
        lines = f"lines {focal.get('start')}-{focal.get('end')}" if focal.get("start") else "no lines"
        unit = focal.get("unit", "method")
        yield Text(
            _visible(f"  {focal['file']}  {focal['method']}  {unit} {focal['kind']}, {lines}, {found}")
        )
    if not task.focal_methods:
        yield Text("  none")

    yield Text("\nmatrix (cell: outcome, each run's outcome, the cause)")
    for method, cells in task.matrix.items():
        yield Text(_visible(f"  {method}"))
        for name in _CELLS:
            cell = cells.get(name)
            if cell is None:
                yield Text(f"    {name}  not run")
                continue
            runs = ", ".join(cell.get("runs", []))
            cause = cause_line(cell.get("message") or "")
            yield Text(
                _visible(f"    {name}  {cell['outcome']:<14} runs: {runs}" + (f"  {cause}" if cause else ""))
            )

    yield Text("\nenvironment")
    spec = task.env_spec or {}
    if spec:
        yield Text(
            _visible(f"  {spec.get('language')} {spec.get('language_version')}, {spec.get('build_tool')}")
        )
        for key, value in spec.items():
            if key in ("language", "language_version", "build_tool") or value in (None, "", [], {}):
                continue
            if isinstance(value, list):
                value = "; ".join(" ".join(map(str, v)) if isinstance(v, list) else str(v) for v in value)
            yield Text(_visible(f"  {key}: {value}"))
    else:
        yield Text("  none recorded")
    yield field("image", task.image or "none (built on the host)")
    yield Text("build records")
    for revision, choices in sorted((task.build_records or {}).items()):
        for choice in choices:
            why = f": {choice.get('why')}" if choice.get("why") else ""
            yield Text(_visible(f"  {revision}  {choice.get('name')} {choice.get('value')}{why}"))
    for revision, installed in sorted((task.installed or {}).items()):
        yield Text(_visible(f"  {revision}  installed ({len(installed)}): {' '.join(installed)}"))
    if details.runs:
        scored = ", ".join(f"{run.agent} ({run.status})" for run in details.runs)
        yield field("agent runs", f"{scored}; coevo show-run AGENT {task.id} shows one")

    yield Text("\nhealth (re-validations, newest first: date, verdict, reason, cause)")
    for check in details.health:
        verdict = {True: "ok", False: "not ok", None: "inconclusive"}[check.ok]
        reason = f"  {check.reason}" if check.reason else ""
        cause = f"  {cause_line(check.message)}" if check.message else ""
        yield Text(_visible(f"  {when(check.checked_at)}  {verdict}{reason}{cause}  → {check.status}"))
    if not details.health:
        yield Text("  never re-validated (coevo revalidate)")

    files = sorted({task.test_file, task.old_test_file or task.test_file})
    yield Text(_visible(f"\n--- gold test diff ({', '.join(files)}) ---"))
    yield _diff(task.gold_patch)
    yield Text("\n--- production diff ---")
    yield _diff(task.production_diff)


def _diff(diff: str) -> Text:
    """A unified diff, escaped, its added lines green, removed red, hunks cyan, headers bold."""
    shown = Text()
    lines = _visible(diff.rstrip("\n")).split("\n") if diff.strip() else ["(empty)"]
    for index, line in enumerate(lines):
        if line.startswith(("diff --git", "index ", "--- ", "+++ ")):
            style = "bold"
        elif line.startswith("@@"):
            style = "cyan"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        else:
            style = ""
        shown.append(line + ("\n" if index < len(lines) - 1 else ""), style=style)
    return shown


@app.command("export")
@click.option("--since", metavar="DATE", help="Only tasks dated on or after this date (rev2's; YYYY-MM-DD).")
@click.option("--until", metavar="DATE", help="Only tasks dated before this date (YYYY-MM-DD).")
@click.option("--track", "tracks", multiple=True, type=click.Choice([t.value for t in Track]),
              help="Only tasks of this track (repeatable).")  # fmt: skip
@click.option("--language", "languages", multiple=True, type=click.Choice(["java", "python"]),
              help="Only tasks in this language (repeatable).")  # fmt: skip
@click.option("--repo", "repos", multiple=True, help="Only this repository (its name; repeatable).")
@click.option("--out", type=click.Path(path_type=Path), default=Path("snapshots"), show_default=True,
              help="The folder that holds the snapshots.")  # fmt: skip
@click.option("--format", "formats", multiple=True, type=click.Choice(["swebench"]),
              help="Also write rows in this shape (swebench: SWE-bench-style harness inputs).")  # fmt: skip
@_INCLUDE_QUARANTINED
@_common
def export_command(
    since: str | None,
    until: str | None,
    tracks: tuple[str, ...],
    languages: tuple[str, ...],
    repos: tuple[str, ...],
    out: Path,
    formats: tuple[str, ...],
    include_quarantined: bool,
    db: str | None,
    as_json: bool,
) -> None:
    """Write a dated snapshot of the tasks: JSONL, Parquet, manifest, dataset card, changelog.

    Example: coevo export --since 2025-01-01 --until 2025-07-01 --out snapshots
    """
    options = ExportOptions(
        since=parse_date(since, "--since"),
        until=parse_date(until, "--until"),
        tracks=tracks,
        languages=languages,
        repositories=repos,
        swebench="swebench" in formats,
        include_quarantined=include_quarantined,
    )
    info = export(_store(db, write=False), out, options)
    _print_snapshots([info], as_json, single=True)


@app.command("verify")
@click.argument("folder", metavar="DIR", type=click.Path(path_type=Path))
def verify_command(folder: Path) -> None:
    """Check a snapshot: every file's sha256 and size, its schema version, JSONL against Parquet.

    Example: coevo verify snapshots/2025-07-01-0123456789ab
    """
    manifest = verify_snapshot(folder)
    out.print(f"{folder}: ok, {manifest['counts']['tasks']} tasks, {len(manifest['files'])} files verified")


@app.command("import")
@click.argument("folder", metavar="DIR", type=click.Path(path_type=Path))
@_common
def import_command(folder: Path, db: str | None, as_json: bool) -> None:
    """Verify a snapshot, then load its tasks, repositories and records into a store (created if missing).

    Example: coevo import snapshots/2025-07-01-0123456789ab --db tasks.db
    """
    verify_snapshot(folder)  # a bad snapshot creates no store
    report = import_snapshot(_store(db, write=True), folder)
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(report), indent=2))
        return
    out.print(
        f"{report.tasks_added} tasks added, {report.statuses_changed} statuses changed, "
        f"{report.unchanged} unchanged; {report.repositories_added} repositories and "
        f"{report.records_added} records added"
    )


@app.command("snapshots")
@click.argument("folder", metavar="[DIR]", type=click.Path(path_type=Path), default=Path("snapshots"))
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def snapshots_command(folder: Path, as_json: bool) -> None:
    """List the snapshots in a folder (default ./snapshots) with their dates, counts and hashes.

    Example: coevo snapshots snapshots
    """
    if not folder.is_dir():
        raise CoevoError(f"no folder {folder}: give the folder coevo export --out wrote to")
    _print_snapshots(list_snapshots(folder), as_json)


def _print_snapshots(infos: list[SnapshotInfo], as_json: bool, single: bool = False) -> None:
    rows = [{**dataclasses.asdict(info), "path": str(info.path)} for info in infos]
    if as_json:
        click.echo(json.dumps(rows[0] if single else rows, indent=2))
        return
    table = Table("snapshot", "end", "tasks", "records", "tracks", "content hash", box=None)
    for info in infos:
        tracks = ", ".join(f"{n} {k}" for k, n in info.by_track.items()) or "-"
        table.add_row(str(info.path), info.end, str(info.tasks), str(info.records), tracks, info.content_hash)
    out.print(table)


@app.group()
def env() -> None:
    """Environments: what a revision needs to build and run its tests.

    Example: coevo env show ./my-repo@HEAD~3
    """


@env.command("setup")
def env_setup() -> None:
    """Prepare Docker on a machine with no reachable container registry (root; idempotent).

    Installs and starts the Docker daemon when missing and builds debian:bookworm-slim, the
    default base, with debootstrap and docker import from the host's Debian mirror. When all
    is in place it only checks and returns in a second.

    Example: sudo coevo env setup
    """
    script = importlib.resources.files("runners") / "scripts" / "setup-docker.sh"
    if os.geteuid() != 0:
        raise CoevoError("coevo env setup installs packages and starts dockerd: run it as root")
    if subprocess.run(["bash", str(script)], check=False).returncode != 0:
        raise CoevoError("Docker setup failed (its messages are above)")


@env.command("show")
@click.argument("target", metavar="REPO[@REV]")
@_LANGUAGE
@_MAVEN_ARG
@_BASE_IMAGE
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def env_show(
    target: str, language: str, maven_args: tuple[str, ...], base_images: tuple[str, ...], as_json: bool
) -> None:
    """Show the environment spec detected for a revision and the images' Dockerfiles or scripts.

    Example: coevo env show ./my-repo@v1.2.0
    """
    sha, spec, images, choices = environment_of(target, language, maven_args, _base_images(base_images))
    if as_json:
        payload = {
            "revision": sha,
            **dataclasses.asdict(spec),
            "images": [
                {"tag": plan.tag, "dockerfile": plan.dockerfile, "script": plan.script} for plan in images
            ],
            "choices": [{"backend": backend, **dataclasses.asdict(choice)} for backend, choice in choices],
        }
        click.echo(json.dumps(payload, indent=2))
        return
    key = images[0].key if images else spec.base
    out.print(f"revision   {sha}", highlight=False)
    out.print(f"language   {spec.language} {spec.language_version} (base image key {key})", highlight=False)
    out.print(f"build      {spec.build_tool}", highlight=False)
    if spec.modules:
        out.print(f"modules    {_visible(', '.join(m or '.' for m in spec.modules))}", highlight=False)
    if spec.packages_before:
        out.print(f"packages   uploaded before {spec.packages_before}", highlight=False)
    for args in spec.install:
        out.print(f"install    pip install {_visible(' '.join(args))}", highlight=False)
    for note in spec.notes:
        out.print(f"found      {_visible(note)}", highlight=False)
    for backend, choice in choices:
        out.print(f"chosen     {backend:<7} {_choice(choice)}", highlight=False)
    for plan in images:
        out.print(f"\nimage      {plan.tag}", highlight=False)
        for note in plan.notes:
            out.print(f"note       {_visible(note)}", highlight=False)
        out.print(_visible((plan.dockerfile or plan.script).rstrip()), highlight=False)


@env.command("build")
@click.argument("target", metavar="REPO[@REV]")
@_BACKEND
@_LANGUAGE
@_MAVEN_ARG
@_BASE_IMAGE
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def env_build(
    target: str,
    backend: str,
    language: str,
    maven_args: tuple[str, ...],
    base_images: tuple[str, ...],
    as_json: bool,
) -> None:
    """Build a revision's environment (images, dependencies, compiled code).

    Example: coevo env build ./my-repo@v1.2.0 --backend docker
    """
    run = build_and_test(
        target,
        language=language,
        backend=_backend(backend, _BUILDING_RISK),
        build_args=maven_args,
        base_images=_base_images(base_images),
    )
    _print_environment_run(run, as_json)


@env.command("test")
@click.argument("target", metavar="REPO[@REV]")
@click.argument("tests", nargs=-1, required=True, metavar="TEST...")
@_BACKEND
@_LANGUAGE
@click.option("--coverage", is_flag=True, help="Also measure the lines each test covers.")
@click.option(
    "--timeout", type=float, default=1800, show_default=True, help="Seconds for the build and for the tests."
)
@_MAVEN_ARG
@_BASE_IMAGE
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def env_test(
    target: str,
    tests: tuple[str, ...],
    backend: str,
    language: str,
    coverage: bool,
    timeout: float,
    maven_args: tuple[str, ...],
    base_images: tuple[str, ...],
    as_json: bool,
) -> None:
    """Build a revision and run tests in it: pkg.Class#method (Java) or pytest node ids.

    Example: coevo env test ./my-repo@HEAD demo.CalcTest#adds
    """
    run = build_and_test(
        target,
        tests,
        language,
        _backend(backend, _BUILDING_RISK),
        coverage,
        timeout,
        maven_args,
        _base_images(base_images),
    )
    _print_environment_run(run, as_json)


def _print_environment_run(run: EnvironmentRun, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(run), indent=2, default=_jsonable))
    else:
        image = f" (image {run.image}, {'cached' if run.image_cached else 'built'})" if run.image else ""
        out.print(f"revision   {run.revision}", highlight=False)
        out.print(f"backend    {run.backend}{image}", highlight=False)
        cause = _visible(cause_line(run.build.message))
        built = f"FAILED: {cause}" if not run.build.ok else f"ok ({cause})" if cause else "ok"
        out.print(f"build      {built}", highlight=False)
        for choice in run.build.choices:
            out.print(f"chosen     {_choice(choice)}", highlight=False)
        if run.build.installed:
            out.print(f"installed  {_visible(' '.join(run.build.installed))}", highlight=False)
        for result in run.tests.results if run.tests else ():
            detail = f"  {_visible(cause_line(result.message))}" if result.message else ""
            out.print(f"{result.outcome:<14} {_visible(result.test)}{detail}", highlight=False)
            if run.tests and result.test in run.tests.coverage:
                for path, lines in sorted(run.tests.coverage[result.test].lines.items()):
                    out.print(f"{'':14} covers {_visible(path)}: {_ranges(lines)}", highlight=False)
    if not run.build.ok:
        raise SystemExit(1)


def _choice(choice: BuildChoice) -> str:
    """``jdk 11: the oldest JDK …``: one line of a build record, printable as written."""
    return _visible(f"{choice.name} {choice.value}" + (f": {choice.why}" if choice.why else ""))


def _ranges(lines: frozenset[int]) -> str:
    spans: list[str] = []
    for line in sorted(lines):
        if spans and line == int(spans[-1].split("-")[-1]) + 1:
            spans[-1] = f"{spans[-1].split('-')[0]}-{line}"
        else:
            spans.append(str(line))
    return ", ".join(spans)


def _jsonable(value: object) -> object:
    if isinstance(value, frozenset | set):
        return sorted(value)
    return str(value)


@app.group("schedule")
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
@click.option("--since", metavar="DATE", help="Only commits on or after this date (YYYY-MM-DD).")
@click.option("--curate/--no-curate", default=True, show_default=True, help="Curate what each cycle mined.")
@click.option(
    "--reruns",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Runs of every matrix cell; runs that disagree make the cell flaky.",
)
@click.option(
    "--snapshots",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("snapshots"),
    show_default=True,
    help="Where a cycle that added or retired tasks writes a snapshot.",
)
@click.option(
    "--site",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("site"),
    show_default=True,
    help="Where a cycle that added or retired tasks renders the site.",
)
@click.option(
    "--revalidate",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    metavar="N",
    help="Existing tasks re-validated each cycle (a rotating sample); 0: none.",
)
@_BACKEND
@_common
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
    store = _store(db, write=True)
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
@_common
def schedule_list(db: str | None, as_json: bool) -> None:
    """List the schedules: trigger, repositories, next run and the last cycle's status.

    Example: coevo schedule list
    """
    views = miner.list_schedules(_store(db, write=False))
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
@_common
def schedule_remove(name: str, db: str | None, as_json: bool) -> None:
    """Remove a schedule and its job; the cycles it ran stay recorded.

    Example: coevo schedule remove weekly
    """
    miner.remove_schedule(_store(db, write=True), name)
    if as_json:
        click.echo(json.dumps({"removed": name}))
    else:
        out.print(f"removed schedule {name}", highlight=False)


@schedule_group.command("run")
@click.argument("name")
@_common
def schedule_run(name: str, db: str | None, as_json: bool) -> None:
    """Run one cycle of a schedule now, in the foreground, and print its report.

    Example: coevo schedule run weekly
    """
    store = _store(db, write=True)
    miner.get_schedule(store, name)  # an unknown name ends here
    with _cycle_log(as_json):
        cycle = run_cycle(store.url, name)
    _print_cycles([cycle], as_json)
    if cycle.status is not CycleStatus.COMPLETED or any(r.get("error") for r in cycle.repositories.values()):
        raise SystemExit(1)


@app.command("daemon")
@_common
def daemon_command(db: str | None, as_json: bool) -> None:
    """Run the schedules in the foreground, logging one line per step; SIGTERM or Ctrl-C stops it.

    A cycle in progress when it stops is recorded as interrupted and its work kept; missed runs
    happen once when it starts again.

    Example: coevo daemon --db coevo.db
    """
    store = _store(db, write=True)
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


@app.command("cycles")
@click.option("--schedule", "schedule_name", metavar="NAME", help="Only this schedule's cycles.")
@_limit
@_common
def cycles_command(schedule_name: str | None, limit: int | None, db: str | None, as_json: bool) -> None:
    """List the recorded cycles, newest first, with each repository's counts, duration and error.

    Example: coevo cycles --schedule weekly
    """
    store = _store(db, write=False)
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
            out.print(f"  {_one_line(repository_line(location, result))}", highlight=False, soft_wrap=True)
        if c.snapshot:
            out.print(f"  snapshot: {c.snapshot}", highlight=False, soft_wrap=True)
        if c.site:
            out.print(f"  site: {c.site}", highlight=False, soft_wrap=True)


@contextmanager
def _progress(quiet: bool) -> Iterator[miner.Progress]:
    """A rich progress bar on stderr, one task per repository."""
    with _bar(quiet) as (start, advance):
        yield _mine_bar(start, advance)


@contextmanager
def _bar(quiet: bool) -> Iterator[tuple[Callable[[str, int, str], None], Callable[[int], None]]]:
    """One rich progress display on stderr (off for JSON and pipes): (start a task, advance it)."""
    bar = Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[unit]}"),
        TimeRemainingColumn(),
        console=err,
        disable=quiet or not err.is_terminal,
    )
    current: list[TaskID] = []

    def start(description: str, total: int, unit: str) -> None:
        current.append(bar.add_task(description, total=total, unit=unit))

    def advance(n: int) -> None:
        bar.advance(current[-1], n)

    with bar:
        yield start, advance


def _print_runs(store: Store, runs: list[MiningRun], as_json: bool, errors: dict[str, str]) -> None:
    names = _repository_names(store, runs)
    if as_json:
        payload = {
            "runs": [{"repository": names[r.repository_id], **r.model_dump(mode="json")} for r in runs],
            "errors": errors,
        }
        out.print_json(json.dumps(payload))
        return
    for r in runs:
        out.print(
            f"{_one_line(names[r.repository_id])}: {r.status} — {r.commits_scanned} commits read, "
            f"{r.commits_selected} selected, {r.test_commits} changed tests "
            f"({r.already_mined} already mined), {r.pairs} pairs, {r.candidates} candidates, "
            f"{r.skipped_files} files skipped" + (f" — {r.message}" if r.message else ""),
            highlight=False,
        )
    for location, message in errors.items():
        err.print(f"error: {_one_line(location)}: {_one_line(cause_line(message))}", highlight=False)


def _repository_names(store: Store, runs: list[MiningRun]) -> dict[int, str]:
    with store.session() as session:
        names = {}
        for r in runs:
            repo = session.get(Repository, r.repository_id)
            names[r.repository_id] = repo.name if repo else str(r.repository_id)
        return names


_INTERRUPTED = (
    "interrupted; what finished is saved (units in flight are redone): run the command again to resume"
)


def main(argv: list[str] | None = None) -> int:
    """The console script: user errors end in one line on stderr, never a traceback. SIGTERM and
    SIGHUP stop it as Ctrl-C does: the run is recorded as interrupted and its sandboxes removed."""
    stop_on_signals()
    try:
        result = app.main(args=argv, prog_name="coevo", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    except click.UsageError as exc:
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx else ""
        err.print(f"error: {exc.format_message()}{hint}", highlight=False, soft_wrap=True)
        return 2
    except (click.Abort, KeyboardInterrupt) as exc:  # click turns KeyboardInterrupt into Abort
        err.print(_INTERRUPTED, highlight=False, soft_wrap=True)
        signalled = exc.__cause__ if isinstance(exc, click.Abort) else exc
        return 128 + signalled.signum if isinstance(signalled, Terminated) else 130
    except CoevoError as exc:
        err.print(f"error: {_one_line(str(exc))}", highlight=False, soft_wrap=True)
        return 1
    except OSError as exc:
        full = disk_full(exc)
        if full is None:
            raise
        err.print(f"error: {full}; the work done so far is saved", highlight=False, soft_wrap=True)
        return 1
    return result if isinstance(result, int) else 0


def entry_point() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry_point()
