"""Mining commands: ``coevo mine`` (a repository's history → candidates) and ``coevo discover``
(GitHub repositories worth mining)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta

import click
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
)

import miner
from runners import cause_line
from tasks import (
    MiningRun,
    Repository,
    Store,
)

from .options import (
    MAVEN_ARG,
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


@click.command("discover")
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
@common
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
    store = opened_store(db, write=True)
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


def mine_bar(start: Callable[[str, int, str], None], advance: Callable[[int], None]) -> miner.Progress:
    return miner.Progress(
        start=lambda name, total: start(f"mining {name}", total, "commits"),
        advance=advance,
        warn=lambda message: err.print(f"warning: {message}", highlight=False),
    )


@click.command("mine")
@mining_options
@window
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
@MAVEN_ARG
@common
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
    store = opened_store(db, write=True)
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
    print_runs(store, runs, as_json, {})


@contextmanager
def _progress(quiet: bool) -> Iterator[miner.Progress]:
    """A rich progress bar on stderr, one task per repository."""
    with progress_bar(quiet) as (start, advance):
        yield mine_bar(start, advance)


def print_runs(store: Store, runs: list[MiningRun], as_json: bool, errors: dict[str, str]) -> None:
    names = repository_names(store, runs)
    if as_json:
        payload = {
            "runs": [{"repository": names[r.repository_id], **r.model_dump(mode="json")} for r in runs],
            "errors": errors,
        }
        out.print_json(json.dumps(payload))
        return
    for r in runs:
        out.print(
            f"{one_line(names[r.repository_id])}: {r.status} — {r.commits_scanned} commits read, "
            f"{r.commits_selected} selected, {r.test_commits} changed tests "
            f"({r.already_mined} already mined), {r.pairs} pairs, {r.candidates} candidates, "
            f"{r.skipped_files} files skipped" + (f" — {r.message}" if r.message else ""),
            highlight=False,
        )
    for location, message in errors.items():
        err.print(f"error: {one_line(location)}: {one_line(cause_line(message))}", highlight=False)


def repository_names(store: Store, runs: list[MiningRun]) -> dict[int, str]:
    with store.session() as session:
        names = {}
        for r in runs:
            repo = session.get(Repository, r.repository_id)
            names[r.repository_id] = repo.name if repo else str(r.repository_id)
        return names
