"""Browsing commands: ``coevo candidates``, ``coevo tasks`` and ``coevo show-task``."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from datetime import datetime

import click
from rich.table import Table
from rich.text import Text

from runners import cause_line
from tasks import (
    TaskDetails,
    TaskStatus,
    TestChangeKind,
    Track,
    list_candidates,
    list_tasks,
    task_details,
    task_row,
)

from .options import (
    LIMIT,
    common,
    opened_store,
    out,
    parse_date,
    rows_shown,
    visible,
    window,
)


@click.command()
@click.option("--repo", help="Only this repository (its name).")
@click.option(
    "--kind",
    type=click.Choice([k.value for k in TestChangeKind]),
    help="Only this change kind.",
)
@window
@LIMIT
@common
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
    listing = list_candidates(
        opened_store(db, write=False),
        repository=repo,
        kind=TestChangeKind(kind) if kind else None,
        since=since_date,
        until=until_date,
        limit=rows_shown(limit, as_json),
    )
    if as_json:
        click.echo(listing.model_dump_json(indent=2))
        return
    # Cells are data, not markup (`[call]` prints as written), and escaped (:func:`visible`).
    table = Table("repo", "rev2", "date", "kind", "test", "focal (static)", box=None)
    for cand in listing.candidates:
        focal = ", ".join(f"{f.method} [{'/'.join(f.provenance)}]" for f in cand.focal[:3])
        more = f" +{len(cand.focal) - 3}" if len(cand.focal) > 3 else ""
        table.add_row(
            *(
                Text(visible(cell))
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


@click.command("tasks")
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
@LIMIT
@common
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
    listing = list_tasks(
        opened_store(db, write=False),
        repository=repo,
        track=Track(track) if track else None,
        language=language,
        since=since_date,
        until=until_date,
        statuses=[TaskStatus(status) for status in statuses],
        limit=rows_shown(limit, as_json),
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
        table.add_row(*(Text(visible(cell)) for cell in cells))
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


@click.command("show-task")
@click.argument("task_id", metavar="ID")
@common
def show_task_command(task_id: str, db: str | None, as_json: bool) -> None:
    """Show everything a reviewer needs to judge one task (ID, or a prefix naming one task).

    Example: coevo show-task gen-0123456789abcdef
    """
    details = task_details(opened_store(db, write=False), task_id)
    if as_json:
        click.echo(json.dumps(details.as_json(), indent=2))
        return
    for line in _task_lines(details):
        out.print(line)


_CELLS = ("OO", "ON", "NO", "NN")
_DYNAMIC = ("coverage", "coverage_use", "stack")
"""Focal provenances measured by running the test; the others are static links."""


def _task_lines(details: TaskDetails) -> Iterator[Text]:
    """``coevo show-task`` as lines; everything a repository wrote is escaped (:func:`visible`),
    diffs are coloured (on a terminal only: the console drops styles on a pipe)."""
    task, repo, pair = details.task, details.repository, details.pair

    def field(label: str, value: object) -> Text:
        return Text(f"{label:<13}{visible(str(value))}")

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
        yield Text(visible(f"  {method}  {runnable}{label}"))
    yield field("gold helpers", ", ".join(task.gold_helpers) or "none")

    yield Text("\nfocal methods (file, method, unit and change, lines, found by)")
    for focal in task.focal_methods:
        provenance = str(focal.get("provenance", ""))
        found = provenance if provenance in _DYNAMIC else f"static link: {provenance}"
        lines = f"lines {focal.get('start')}-{focal.get('end')}" if focal.get("start") else "no lines"
        unit = focal.get("unit", "method")
        yield Text(visible(f"  {focal['file']}  {focal['method']}  {unit} {focal['kind']}, {lines}, {found}"))
    if not task.focal_methods:
        yield Text("  none")

    yield Text("\nmatrix (cell: outcome, each run's outcome, the cause)")
    for method, cells in task.matrix.items():
        yield Text(visible(f"  {method}"))
        for name in _CELLS:
            cell = cells.get(name)
            if cell is None:
                yield Text(f"    {name}  not run")
                continue
            runs = ", ".join(cell.get("runs", []))
            cause = cause_line(cell.get("message") or "")
            yield Text(
                visible(f"    {name}  {cell['outcome']:<14} runs: {runs}" + (f"  {cause}" if cause else ""))
            )

    yield Text("\nenvironment")
    spec = task.env_spec or {}
    if spec:
        yield Text(
            visible(f"  {spec.get('language')} {spec.get('language_version')}, {spec.get('build_tool')}")
        )
        for key, value in spec.items():
            if key in ("language", "language_version", "build_tool") or value in (None, "", [], {}):
                continue
            if isinstance(value, list):
                value = "; ".join(" ".join(map(str, v)) if isinstance(v, list) else str(v) for v in value)
            yield Text(visible(f"  {key}: {value}"))
    else:
        yield Text("  none recorded")
    yield field("image", task.image or "none (built on the host)")
    yield Text("build records")
    for revision, choices in sorted((task.build_records or {}).items()):
        for choice in choices:
            why = f": {choice.get('why')}" if choice.get("why") else ""
            yield Text(visible(f"  {revision}  {choice.get('name')} {choice.get('value')}{why}"))
    for revision, installed in sorted((task.installed or {}).items()):
        yield Text(visible(f"  {revision}  installed ({len(installed)}): {' '.join(installed)}"))
    if details.runs:
        scored = ", ".join(f"{run.agent} ({run.status})" for run in details.runs)
        yield field("agent runs", f"{scored}; coevo show-run AGENT {task.id} shows one")

    yield Text("\nhealth (re-validations, newest first: date, verdict, reason, cause)")
    for check in details.health:
        verdict = {True: "ok", False: "not ok", None: "inconclusive"}[check.ok]
        reason = f"  {check.reason}" if check.reason else ""
        cause = f"  {cause_line(check.message)}" if check.message else ""
        yield Text(visible(f"  {when(check.checked_at)}  {verdict}{reason}{cause}  → {check.status}"))
    if not details.health:
        yield Text("  never re-validated (coevo revalidate)")

    files = sorted({task.test_file, task.old_test_file or task.test_file})
    yield Text(visible(f"\n--- gold test diff ({', '.join(files)}) ---"))
    yield _diff(task.gold_patch)
    yield Text("\n--- production diff ---")
    yield _diff(task.production_diff)


def _diff(diff: str) -> Text:
    """A unified diff, escaped, its added lines green, removed red, hunks cyan, headers bold."""
    shown = Text()
    lines = visible(diff.rstrip("\n")).split("\n") if diff.strip() else ["(empty)"]
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
