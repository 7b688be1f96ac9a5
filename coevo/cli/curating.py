"""Curation commands: ``coevo curate`` (candidates proved by execution → tasks), ``coevo funnel``
(what each stage dropped, and why) and ``coevo revalidate`` (tasks whose gold rotted)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click
from rich.table import Table

import curation
from runners import cause_line
from tasks import CoevoError, HealthCheck, TestChangeKind

from .options import (
    BACKEND,
    BASE_IMAGE,
    CURATING_RISK,
    RERUNS,
    base_images_of,
    chosen_backend,
    common,
    err,
    opened_store,
    out,
    parse_date,
    progress_bar,
    visible,
    window,
)

_CURATION_OPTIONS = (
    RERUNS,
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
    click.option(
        "--kinds",
        default=",".join(curation.DEFAULT_KINDS),
        show_default=True,
        metavar="KINDS|all",
        help="Candidates curated, by change kind (comma-separated). Inserted and updated tests can "
        "become tasks; 'all' also curates unchanged_with_changed_dependencies (unchanged tests of "
        "changed code: negative records at best). A pair curated without a kind is curated for it "
        "when it is asked for later.",
    ),
)


def parse_kinds(value: str) -> tuple[TestChangeKind, ...]:
    """``--kinds``: ``all``, or change kinds separated by commas."""
    if value.strip() == "all":
        return tuple(TestChangeKind)
    names = [name.strip() for name in value.split(",") if name.strip()]
    known = [kind.value for kind in TestChangeKind]
    wrong = [name for name in names if name not in known]
    if wrong or not names:
        raise CoevoError(
            f"--kinds {value!r}: {', '.join(wrong) or 'no kind'} is not a change kind; "
            f"use 'all' or some of {', '.join(known)}"
        )
    return tuple(TestChangeKind(name) for name in dict.fromkeys(names))


def curation_options(command: Callable[..., None]) -> Callable[..., None]:
    for option in reversed(_CURATION_OPTIONS):
        command = option(command)
    return command


@click.command("curate")
@click.option("--repo", help="Only this repository (its name).")
@window
@curation_options
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
@BACKEND
@BASE_IMAGE
@common
def curate_command(
    repo: str | None,
    since: str | None,
    until: str | None,
    reruns: int,
    test_timeout: float,
    max_span_hours: float,
    kinds: str,
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
        backend=chosen_backend(backend, CURATING_RISK),
        workers=workers,
        redo=redo,
        retry_env=retry_env,
        test_timeout=test_timeout,
        max_span_hours=max_span_hours,
        base_images=base_images_of(base_images),
        kinds=parse_kinds(kinds),
    )
    store = opened_store(db, write=True)
    with _curation_progress(as_json) as progress:
        report = curation.curate(store, request, progress)
    print_curation(report, as_json)
    if report.errors:
        raise SystemExit(1)


@click.command("funnel")
@click.option("--repo", help="Only this repository (its name).")
@common
def funnel_command(repo: str | None, db: str | None, as_json: bool) -> None:
    """Count what entered and left every stage, by reason, per repository and overall, and
    what caused the drops (each reason's most common causes).

    Example: coevo funnel --json
    """
    overall, per_repo = curation.funnel(opened_store(db, write=False), repo)
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
                why.add_row(reason, str(count), visible(cause))
            out.print()
            out.print(why)
        out.print()


@click.command("revalidate")
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
@BACKEND
@BASE_IMAGE
@common
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
        backend=chosen_backend(backend, CURATING_RISK),
        test_timeout=test_timeout,
        base_images=base_images_of(base_images),
    )
    store = opened_store(db, write=True)
    with progress_bar(as_json) as (start, advance):
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
        return visible(f"inconclusive: {why}")
    if check.ok:
        return "restored" if check.task_id in report.restored else "ok"
    state = "quarantined" if check.task_id in report.quarantined else f"still {check.status}"
    return visible(f"{state}: {why}")


def curation_json(report: curation.CurateReport) -> dict[str, object]:
    return {**report.run.model_dump(mode="json"), "labels": dict(report.labels), "errors": report.errors}


def print_curation(report: curation.CurateReport, as_json: bool) -> None:
    run = report.run
    if as_json:
        click.echo(json.dumps(curation_json(report), indent=2))
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
    with progress_bar(quiet) as (start, advance):
        yield curate_bar(start, advance)


def curate_bar(
    start: Callable[[str, int, str], None], advance: Callable[[int], None]
) -> curation.CurateProgress:
    return curation.CurateProgress(start=lambda total: start("curating", total, "pairs"), advance=advance)
