"""Publishing commands: snapshots (``coevo export``, ``verify``, ``import``, ``snapshots``) and the
static site (``coevo site``)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click
from rich.table import Table

import web
from tasks import (
    CoevoError,
    ExportOptions,
    SnapshotInfo,
    Track,
    import_snapshot,
    list_snapshots,
    verify_snapshot,
)

from ..release import export
from .options import (
    INCLUDE_QUARANTINED,
    common,
    opened_store,
    out,
    parse_date,
)


def site_line(site: web.SiteReport) -> str:
    index = site.out / "index.html"
    return f"site: wrote {index} ({site.tasks} tasks, {site.repositories} repositories, {site.agents} agents)"


@click.command("site")
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
@common
def site_command(snapshot: Path | None, folder: Path, title: str, db: str | None, as_json: bool) -> None:
    """Render the static site: overview, task explorer, a page per task and repository, the
    funnel, and the leaderboard with its cutoff slider and contamination curve.

    The folder is plain files with relative links: open index.html, or serve it from any host.

    Example: coevo site --out site && python3 -m http.server -d site
    """
    if snapshot is not None and db is not None:
        raise click.UsageError("give --db or --snapshot, not both")
    if snapshot is not None:
        report = web.render_snapshot_site(snapshot, folder, title=title)
    else:
        report = web.render_site(opened_store(db, write=False), folder, title=title)
    if as_json:
        click.echo(json.dumps({**dataclasses.asdict(report), "out": str(report.out)}, indent=2))
    else:
        out.print(site_line(report), highlight=False, soft_wrap=True)


@click.command("export")
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
@INCLUDE_QUARANTINED
@common
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
    info = export(opened_store(db, write=False), out, options)
    _print_snapshots([info], as_json, single=True)


@click.command("verify")
@click.argument("folder", metavar="DIR", type=click.Path(path_type=Path))
def verify_command(folder: Path) -> None:
    """Check a snapshot: every file's sha256 and size, its schema version, JSONL against Parquet.

    Example: coevo verify snapshots/2025-07-01-0123456789ab
    """
    manifest = verify_snapshot(folder)
    out.print(f"{folder}: ok, {manifest['counts']['tasks']} tasks, {len(manifest['files'])} files verified")


@click.command("import")
@click.argument("folder", metavar="DIR", type=click.Path(path_type=Path))
@common
def import_command(folder: Path, db: str | None, as_json: bool) -> None:
    """Verify a snapshot, then load its tasks, repositories and records into a store (created if missing).

    Example: coevo import snapshots/2025-07-01-0123456789ab --db tasks.db
    """
    verify_snapshot(folder)  # a bad snapshot creates no store
    report = import_snapshot(opened_store(db, write=True), folder)
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(report), indent=2))
        return
    out.print(
        f"{report.tasks_added} tasks added, {report.statuses_changed} statuses changed, "
        f"{report.unchanged} unchanged; {report.repositories_added} repositories and "
        f"{report.records_added} records added"
    )


@click.command("snapshots")
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
