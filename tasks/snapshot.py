"""Dated snapshots of the tasks: export, verify, import, list.

A snapshot is a folder named by its end date and a short content hash. It holds the tasks as
``tasks.jsonl`` and ``tasks.parquet`` (the same rows), the labelled non-task records as
``records.parquet``, a ``manifest.json`` (schema version, window, filters, counts, the sha256
and size of every other file), a dataset card ``README.md`` whose front matter declares the
data files as Hugging Face cards do, and a ``CHANGELOG.md`` against the newest earlier snapshot
beside it that the same store wrote (:class:`~tasks.models.ExportedSnapshot`). The same store and
options give byte-identical files: rows are sorted, nothing records when the export ran, and
rows stream to the files in batches, never all in memory.

Fields holding nested values (the EnvSpec, the matrix, focal methods, build records) are JSON
text with sorted keys, in both files, so every row has one flat schema.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlmodel import Session, col, select

from .errors import CoevoError
from .models import (
    Candidate,
    CurationRecord,
    ExportedSnapshot,
    Label,
    Repository,
    RevisionPair,
    Task,
    TaskStatus,
)
from .store import Store

if TYPE_CHECKING:
    import pyarrow as pa

SCHEMA_VERSION = 1
"""The version of the snapshot layout this coevo writes; it reads this one and older ones."""
TASKS_JSONL, TASKS_PARQUET, RECORDS_PARQUET = "tasks.jsonl", "tasks.parquet", "records.parquet"
MANIFEST, CARD, CHANGELOG, SWEBENCH = "manifest.json", "README.md", "CHANGELOG.md", "swebench.jsonl"
_REQUIRED = (TASKS_JSONL, TASKS_PARQUET, RECORDS_PARQUET, CARD, CHANGELOG)
_BATCH = 1000
_HASH_CHARS = 12

_TEXT, _LIST, _BOOL = "string", "list<string>", "bool"
"""Column types by name: pyarrow is imported by the commands that write or read Parquet only
(it costs every other command's start-up a quarter of a second)."""
TASK_FIELDS: dict[str, tuple[str, str]] = {
    "id": (_TEXT, "Stable task id: a hash of the repository's identity, revisions, test file and track."),
    "track": (_TEXT, "`generation` (write new tests) or `update` (repair broken tests)."),
    "language": (_TEXT, "`java` or `python`."),
    "status": (_TEXT, "`active`, `quarantined` or `retired`."),
    "repository": (_TEXT, "The repository's short name in the store it was exported from."),
    "repository_identity": (_TEXT, "`host/owner/name` of its canonical remote, or `root:<sha>`."),
    "clone_url": (_TEXT, "Where to clone it from (null for a local repository without a remote)."),
    "licence": (_TEXT, "The repository's licence (SPDX id) as `coevo discover` found it, or `unknown`."),
    "rev1": (_TEXT, "The commit before the change."),
    "rev1_date": (_TEXT, "rev1's committer date, ISO 8601 in UTC."),
    "rev2": (_TEXT, "The commit after the change: the task's code and gold tests."),
    "rev2_date": (_TEXT, "rev2's committer date, ISO 8601 in UTC: the task's date."),
    "test_file": (_TEXT, "The test file at rev2, the only file the agent may change."),
    "old_test_file": (_TEXT, "The test file at rev1 when it had another path, else null."),
    "test_methods": (_LIST, "The test methods the agent writes (generation) or repairs (update)."),
    "test_ids": (_LIST, "Their runnable ids (`pkg.Class#method`, pytest node ids), in the same order."),
    "gold_helpers": (_LIST, "Helpers of the test file that changed with the methods (part of the answer)."),
    "focal_methods": (
        _TEXT,
        "JSON: the production methods under test, with file, line range and provenance.",
    ),
    "gold_patch": (_TEXT, "Unified diff rev1 → rev2 of the test file: the developer's answer."),
    "production_diff": (_TEXT, "Unified diff rev1 → rev2 of the production files."),
    "given_test_file": (_TEXT, "The test file the agent starts from (null: it writes the whole file)."),
    "env_spec": (_TEXT, "JSON: the EnvSpec the task was curated in (interpreter or JDK, pins)."),
    "image": (_TEXT, "The image tag it was curated in, when built in Docker."),
    "build_records": (_TEXT, "JSON: what each revision was built with and why."),
    "installed": (_TEXT, "JSON: what each revision's build resolved."),
    "matrix": (_TEXT, "JSON: per method, the 4-way matrix cells (OO, ON, NO, NN) with every rerun."),
    "matrix_summary": (_TEXT, "JSON: per method, each cell's outcome."),
    "flaky": (_BOOL, "Whether any cell's reruns disagreed."),
}
RECORD_FIELDS: dict[str, tuple[str, str]] = {
    "repository": (_TEXT, "The repository's short name."),
    "repository_identity": (_TEXT, "Its identity, as for tasks."),
    "rev1": (_TEXT, "The commit before the change."),
    "rev1_date": (_TEXT, "ISO 8601 in UTC."),
    "rev2": (_TEXT, "The commit after the change."),
    "rev2_date": (_TEXT, "ISO 8601 in UTC."),
    "test_file": (_TEXT, "The test file at rev2."),
    "test_method": (_TEXT, "The test method."),
    "change_kind": (_TEXT, "How the method changed: `inserted`, `updated`, …"),
    "label": (_TEXT, "The class curation gave it (not a task class), or `dropped`."),
    "drop_reason": (_TEXT, "Why it was dropped, when it was."),
    "detail": (_TEXT, "What decided the label or the drop."),
    "cells": (_TEXT, "JSON: the matrix cells it ran."),
    "focal": (_TEXT, "JSON: its focal methods."),
}
_JSON_FIELDS = ("focal_methods", "env_spec", "build_records", "installed", "matrix", "cells", "focal")


def _schema(fields: dict[str, tuple[str, str]]) -> pa.Schema:
    import pyarrow as pa  # deferred: see _TEXT

    types = {_TEXT: pa.string(), _LIST: pa.list_(pa.string()), _BOOL: pa.bool_()}
    return pa.schema([(name, types[kind]) for name, (kind, _) in fields.items()])


GivenFile = Callable[[Task, Repository], str | None]
"""The test file the agent starts from for a task not imported from a snapshot: scoring's reset."""


class BadSnapshot(CoevoError):
    """A snapshot that fails verification; the message starts with the file at fault."""

    def __init__(self, folder: Path, name: str, why: str) -> None:
        super().__init__(f"{folder / name}: {why}")
        self.file = name


@dataclass(frozen=True)
class ExportOptions:
    """Which tasks a snapshot holds: rev2 dated in [since, until), and the filters (empty: all)."""

    since: datetime | None = None
    until: datetime | None = None
    tracks: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()
    repositories: tuple[str, ...] = ()
    swebench: bool = False
    include_quarantined: bool = False
    """Keep quarantined tasks (``--include-quarantined``); by default a snapshot leaves them out,
    and its changelog lists one the previous snapshot held as retired, with its reason."""

    def as_json(self) -> dict[str, Any]:
        filters: dict[str, Any] = {
            "tracks": sorted(self.tracks),
            "languages": sorted(self.languages),
            "repositories": sorted(self.repositories),
        }
        if self.include_quarantined:  # only when asked: earlier manifests keep their selection
            filters["include_quarantined"] = True
        return {
            "window": {"since": _iso(self.since), "until": _iso(self.until)},
            "filters": filters,
            "formats": ["coevo", "swebench"] if self.swebench else ["coevo"],
        }


@dataclass(frozen=True)
class SnapshotInfo:
    """A snapshot as listed: its folder, end date, content hash and counts."""

    path: Path
    end: str
    content_hash: str
    tasks: int
    records: int
    by_track: dict[str, int]
    selection: tuple[str, str] = ("", "")
    """Its window start and filters (:func:`_selection`)."""


@dataclass
class ImportReport:
    repositories_added: int = 0
    tasks_added: int = 0
    statuses_changed: int = 0
    records_added: int = 0
    unchanged: int = 0


# --- export --------------------------------------------------------------------------------------


def export_snapshot(
    store: Store, parent: Path, options: ExportOptions, version: str, given: GivenFile | None = None
) -> SnapshotInfo:
    """Writes the snapshot of ``store`` for ``options`` into a new folder of ``parent``.

    ``given`` builds the reset test file of tasks the store did not import (scoring's reset,
    passed in by the caller); without it such a task is an error. An existing snapshot of the
    same name is replaced (its data are the same).
    """
    parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".export-", dir=parent))
    try:
        counts = _write_tasks(store, staging, options, given)
        counts["records"] = _write_records(store, staging, options)
        data = [TASKS_JSONL, TASKS_PARQUET, RECORDS_PARQUET] + ([SWEBENCH] if options.swebench else [])
        files = {name: _file_entry(staging / name) for name in data}
        content = hashlib.sha256(
            json.dumps({"files": files, **options.as_json()}, sort_keys=True).encode()
        ).hexdigest()
        end = (options.until.date().isoformat() if options.until else counts.pop("newest", None)) or "undated"
        counts.pop("newest", None)
        name = f"{end}-{content[:_HASH_CHARS]}"
        manifest: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "coevo_version": version,
            "name": name,
            "end": end,
            "content_hash": content,
            **options.as_json(),
            "counts": counts,
        }
        previous = _previous(parent, name, end, _selection(manifest), _written(store))
        changelog = _changelog(staging, previous, name, _quarantine_reasons(store))
        (staging / CHANGELOG).write_text(changelog, encoding="utf-8")
        (staging / CARD).write_text(_card(manifest, options), encoding="utf-8")
        files.update({n: _file_entry(staging / n) for n in (CARD, CHANGELOG)})
        manifest["files"] = dict(sorted(files.items()))
        (staging / MANIFEST).write_text(
            json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )
        target = parent / name
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    info = _info(target, manifest)
    _remember(store, info)
    return info


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _utc(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).isoformat()


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _file_entry(path: Path) -> dict[str, Any]:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return {"sha256": digest.hexdigest(), "size": path.stat().st_size}


def clone_url(repo: Repository) -> str | None:
    """Where another machine clones the repository: its location when that is a URL, else the
    https URL of its canonical remote; None for a local repository without one."""
    if "://" in repo.location or repo.location.startswith("git@"):
        return repo.location
    identity = repo.identity or ""
    if identity and not identity.startswith("root:") and "/" in identity:
        return f"https://{identity}.git"
    return None


def _task_filters(options: ExportOptions) -> list[Any]:
    where: list[Any] = []
    if options.since is not None:
        where.append(col(RevisionPair.rev2_date) >= options.since)
    if options.until is not None:
        where.append(col(RevisionPair.rev2_date) < options.until)
    if options.repositories:
        where.append(col(Repository.name).in_(options.repositories))
    if options.languages:
        where.append(col(Repository.language).in_(options.languages))
    return where


def task_snapshot_row(task: Task, repo: Repository, given: GivenFile | None) -> dict[str, Any]:
    """The snapshot row of ``task``: everything to rebuild and score it on another machine."""
    if task.given_recorded:
        start = task.given_test_file
    elif given is not None:
        start = given(task, repo)
    else:
        raise CoevoError(f"task {task.id}: no reset test file recorded, and no repository to build it from")
    summary = {
        method: {cell: value.get("outcome") for cell, value in sorted(cells.items())}
        for method, cells in sorted(task.matrix.items())
    }
    return {
        "id": task.id,
        "track": str(task.track),
        "language": task.language,
        "status": str(task.status),
        "repository": repo.name,
        "repository_identity": repo.identity,
        "clone_url": clone_url(repo),
        "licence": repo.licence or "unknown",
        "rev1": task.rev1,
        "rev1_date": _utc(task.rev1_date),
        "rev2": task.rev2,
        "rev2_date": _utc(task.rev2_date),
        "test_file": task.test_file,
        "old_test_file": task.old_test_file,
        "test_methods": list(task.test_methods),
        "test_ids": list(task.test_ids),
        "gold_helpers": list(task.gold_helpers),
        "focal_methods": _json(task.focal_methods),
        "gold_patch": task.gold_patch,
        "production_diff": task.production_diff,
        "given_test_file": start,
        "env_spec": _json(task.env_spec),
        "image": task.image,
        "build_records": _json(task.build_records),
        "installed": _json(task.installed),
        "matrix": _json(task.matrix),
        "matrix_summary": _json(summary),
        "flaky": task.flaky,
    }


def _task_rows(session: Session, options: ExportOptions, given: GivenFile | None) -> Iterator[dict[str, Any]]:
    query = (
        select(Task, Repository)
        .join(Repository, col(Task.repository_id) == Repository.id)
        .join(RevisionPair, col(Task.pair_id) == RevisionPair.id)
        .where(*_task_filters(options))
        .order_by(col(Task.rev2_date), col(Task.id))
    )
    if options.tracks:
        query = query.where(col(Task.track).in_(options.tracks))
    if not options.include_quarantined:
        query = query.where(col(Task.status) != TaskStatus.QUARANTINED)
    for task, repo in session.exec(query.execution_options(yield_per=_BATCH)):
        yield task_snapshot_row(task, repo, given)


def _write_tasks(
    store: Store, folder: Path, options: ExportOptions, given: GivenFile | None
) -> dict[str, Any]:
    import pyarrow as pa  # deferred: see _TEXT
    import pyarrow.parquet as pq

    schema = _schema(TASK_FIELDS)
    by: dict[str, Counter[str]] = {
        k: Counter() for k in ("track", "language", "repository", "half_year", "status")
    }
    newest: str | None = None
    licences: dict[str, str] = {}
    swebench = (folder / SWEBENCH).open("w", encoding="utf-8") if options.swebench else None
    with (
        store.session() as session,
        (folder / TASKS_JSONL).open("w", encoding="utf-8") as jsonl,
        pq.ParquetWriter(folder / TASKS_PARQUET, schema) as parquet,
    ):
        for batch in _batches(_task_rows(session, options, given)):
            for row in batch:
                jsonl.write(_json(row) + "\n")
                if swebench is not None:
                    swebench.write(_json(swebench_row(row)) + "\n")
                date = row["rev2_date"] or ""
                newest = max(newest or "", date[:10]) or None
                half = f"{date[:4]}-H{1 if date[5:7] <= '06' else 2}" if date else "undated"
                for key, value in (("track", row["track"]), ("language", row["language"]),
                                   ("repository", row["repository"]), ("half_year", half),
                                   ("status", row["status"])):  # fmt: skip
                    by[key][value] += 1
                licences[row["repository"]] = row["licence"]
            parquet.write_table(pa.Table.from_pylist(batch, schema=schema))
    if swebench is not None:
        swebench.close()
    counts: dict[str, Any] = {"tasks": sum(by["track"].values())}
    counts.update({f"by_{key}": dict(sorted(counter.items())) for key, counter in by.items()})
    counts["newest"] = newest
    if any(licence != "unknown" for licence in licences.values()):
        # Only when discovery recorded one: a store without licences writes what it always did.
        counts["licences"] = dict(sorted(licences.items()))
    return counts


def _batches(rows: Iterable[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= _BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _write_records(store: Store, folder: Path, options: ExportOptions) -> int:
    import pyarrow as pa  # deferred: see _TEXT
    import pyarrow.parquet as pq

    schema = _schema(RECORD_FIELDS)
    query = (
        select(CurationRecord, Candidate, RevisionPair, Repository)
        .join(Candidate, col(CurationRecord.candidate_id) == Candidate.id)
        .join(RevisionPair, col(CurationRecord.pair_id) == RevisionPair.id)
        .join(Repository, col(CurationRecord.repository_id) == Repository.id)
        .where(col(CurationRecord.task_id).is_(None), *_task_filters(options))
        .order_by(
            col(RevisionPair.rev2_date),
            col(Repository.name),
            col(Candidate.test_file),
            col(Candidate.test_method),
        )
    )
    total = 0
    with store.session() as session, pq.ParquetWriter(folder / RECORDS_PARQUET, schema) as parquet:
        rows = (
            {
                "repository": repo.name,
                "repository_identity": repo.identity,
                "rev1": pair.rev1,
                "rev1_date": _utc(pair.rev1_date),
                "rev2": pair.rev2,
                "rev2_date": _utc(pair.rev2_date),
                "test_file": candidate.test_file,
                "test_method": candidate.test_method,
                "change_kind": str(candidate.change_kind),
                "label": str(record.label),
                "drop_reason": None if record.drop_reason is None else str(record.drop_reason),
                "detail": record.detail,
                "cells": _json(record.cells),
                "focal": _json(record.focal),
            }
            for record, candidate, pair, repo in session.exec(query.execution_options(yield_per=_BATCH))
        )
        for batch in _batches(rows):
            parquet.write_table(pa.Table.from_pylist(batch, schema=schema))
            total += len(batch)
    return total


def swebench_row(row: dict[str, Any]) -> dict[str, Any]:
    """A task row in the shape of SWE-bench-style harness inputs (see the dataset card)."""
    matrix = json.loads(row["matrix"])
    fail_to_pass: list[str] = []
    pass_to_pass: list[str] = []
    for method, test_id in zip(row["test_methods"], row["test_ids"], strict=False):
        cells = matrix.get(method, {})
        new, old = cells.get("NN", {}).get("outcome"), cells.get("NO", {}).get("outcome")
        if new != "pass" or old is None:
            continue
        (pass_to_pass if old == "pass" else fail_to_pass).append(test_id)
    identity = row["repository_identity"] or row["repository"]
    return {
        "instance_id": row["id"],
        "repo": identity.split("/", 1)[1]
        if "/" in identity and not identity.startswith("root:")
        else identity,
        "base_commit": row["rev1"],
        "target_commit": row["rev2"],
        "created_at": row["rev2_date"],
        "patch": row["production_diff"],
        "test_patch": row["gold_patch"],
        "FAIL_TO_PASS": fail_to_pass,
        "PASS_TO_PASS": pass_to_pass,
        "language": row["language"],
        "track": row["track"],
        "clone_url": row["clone_url"],
        "environment_setup_commit": row["rev2"],
        "image": row["image"],
        "env_spec": row["env_spec"],
        "version": "",
    }


# --- changelog and card --------------------------------------------------------------------------


def _selection(manifest: dict[str, Any]) -> tuple[str, str]:
    """What a snapshot selects besides its end: the window's start and the filters. Changes are
    counted only against a snapshot of the same selection (a filtered export's missing tasks are
    not retired)."""
    window = manifest.get("window") or {}
    filters = manifest.get("filters") or {}
    return str(window.get("since")), json.dumps(filters, sort_keys=True)


_EVERYTHING = _selection(ExportOptions().as_json())
"""The selection of an export with no window start and no filter (``coevo run``'s)."""


def _previous(
    parent: Path, name: str, end: str, selection: tuple[str, str], written: set[str]
) -> Path | None:
    """The newest snapshot of ``selection`` beside ``name``, of those the store wrote (content
    hashes ``written``), ending no later than it: by end date, then by when its manifest was
    written (two snapshots of one day are told apart by that). Another store's snapshots in the
    folder are never compared with."""
    found = []
    for folder in parent.iterdir():
        manifest = folder / MANIFEST
        if folder.name == name or folder.name.startswith(".") or not manifest.is_file():
            continue
        try:
            other = json.loads(manifest.read_text(encoding="utf-8"))
        except (ValueError, OSError):
            continue
        if not isinstance(other, dict) or _selection(other) != selection:
            continue
        if other.get("content_hash") not in written:
            continue
        other_end = str(other.get("end", ""))
        if other_end <= end:
            found.append((other_end, manifest.stat().st_mtime_ns, folder.name, folder))
    return max(found)[3] if found else None


def _written(store: Store) -> set[str]:
    """The content hashes of the snapshots ``store`` wrote."""
    with store.session() as session:
        return set(session.exec(select(ExportedSnapshot.content_hash)).all())


def _remember(store: Store, info: SnapshotInfo) -> None:
    """Records that ``store`` wrote ``info`` (again: the same content, nothing changes)."""
    with store.session() as session:
        if session.get(ExportedSnapshot, info.content_hash) is None:
            session.add(ExportedSnapshot(content_hash=info.content_hash, name=info.path.name))


def _summaries(path: Path) -> dict[str, tuple[str, str]]:
    """Task id → (status, digest of its row), read line by line."""
    out: dict[str, tuple[str, str]] = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            out[row["id"]] = (row["status"], hashlib.sha256(line.encode()).hexdigest())
    return out


@dataclass(frozen=True)
class StoreChanges:
    """What the store's active tasks gained and lost since a snapshot (``since``; None: no
    snapshot yet, so every active task is gained)."""

    since: SnapshotInfo | None
    added: tuple[str, ...] = ()
    retired: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.added or self.retired)


def changes_since_snapshot(store: Store, parent: Path) -> StoreChanges:
    """The tasks that became active or stopped being active in ``store`` since the newest
    snapshot of every task it wrote in ``parent`` (:func:`list_snapshots`; filtered exports and
    other stores' snapshots beside it are not compared)."""
    found = list_snapshots(parent) if parent.is_dir() else []
    written = _written(store)
    whole = [info for info in found if info.selection == _EVERYTHING and info.content_hash in written]
    newest = whole[-1] if whole else None
    active = TaskStatus.ACTIVE.value
    before = set()
    if newest is not None:
        before = {i for i, (status, _) in _summaries(newest.path / TASKS_JSONL).items() if status == active}
    with store.session() as session:
        now = set(session.exec(select(Task.id).where(col(Task.status) == TaskStatus.ACTIVE)).all())
    return StoreChanges(newest, tuple(sorted(now - before)), tuple(sorted(before - now)))


def _quarantine_reasons(store: Store) -> dict[str, str]:
    """Each quarantined task's id → ``quarantined: <its reason>`` (``quarantined`` without one)."""
    with store.session() as session:
        rows = session.exec(
            select(Task.id, Task.quarantine_reason).where(col(Task.status) == TaskStatus.QUARANTINED)
        ).all()
    return {i: f"quarantined: {reason}" if reason else "quarantined" for i, reason in rows}


def _changelog(folder: Path, previous: Path | None, name: str, quarantined: dict[str, str]) -> str:
    """The snapshot's changes against ``previous``; a task it held that is now quarantined
    (``quarantined``: id → why) is retired with the reason, whether or not this one keeps it."""
    if previous is None:
        return (
            f"# Changelog of {name}\n\n"
            "The first snapshot of this store, window start and filters in this folder: every task is new.\n"
        )
    before, now = _summaries(previous / TASKS_JSONL), _summaries(folder / TASKS_JSONL)
    active = TaskStatus.ACTIVE.value
    added = sorted(i for i in now if i not in before)
    retired = []
    for task_id, (status, _) in sorted(before.items()):
        if status != active:
            continue
        if task_id in quarantined and (task_id not in now or now[task_id][0] != active):
            retired.append(f"- {task_id}: {quarantined[task_id]}")
        elif task_id not in now:
            retired.append(f"- {task_id}: no longer in the store or the window")
        elif now[task_id][0] != active:
            retired.append(f"- {task_id}: {now[task_id][0]}")
    changed = sorted(
        i
        for i in now
        if i in before and before[i][1] != now[i][1] and not (before[i][0] == active != now[i][0])
    )
    lines = [
        f"# Changelog of {name}",
        "",
        f"Against {previous.name}, the newest earlier snapshot of this store with the same window start "
        "and filters.",
        "",
        f"## Added ({len(added)})",
        "",
    ]
    lines += [f"- {i}" for i in added] + ["", f"## Retired ({len(retired)})", "", *retired]
    lines += ["", f"## Changed ({len(changed)})", "", *[f"- {i}" for i in changed]]
    return "\n".join(lines) + "\n"


def _card(manifest: dict[str, Any], options: ExportOptions) -> str:
    counts, window = manifest["counts"], manifest["window"]
    configs = [
        "configs:",
        "- config_name: default",
        "  default: true",
        "  data_files:",
        "  - split: test",
        f"    path: {TASKS_PARQUET}",
        "- config_name: records",
        "  data_files:",
        "  - split: test",
        f"    path: {RECORDS_PARQUET}",
    ]
    if options.swebench:
        configs += ["- config_name: swebench", "  data_files:", "  - split: test", f"    path: {SWEBENCH}"]
    lines = ["---", "license: other", f"pretty_name: coevo tasks {manifest['name']}", *configs, "---", ""]
    lines += [
        f"# coevo tasks, snapshot {manifest['name']}",
        "",
        "Benchmark tasks mined by coevo from the histories of Java/Maven and Python repositories, where",
        "production code and its tests changed together, each proven by running a 4-way matrix (old and",
        "new tests on old and new code). A **generation** task asks an agent to write the test methods",
        "the developer added; an **update** task asks it to repair the test methods the change broke.",
        "",
        "## Counts",
        "",
        f"- tasks: {counts['tasks']}; non-task records: {counts['records']}",
        f"- window: since {window['since'] or 'the start'}, until {window['until'] or 'now'}",
    ]
    for key in ("by_track", "by_language", "by_repository", "by_half_year", "by_status"):
        shown = ", ".join(f"{k} {n}" for k, n in counts[key].items()) or "none"
        lines.append(f"- {key.removeprefix('by_').replace('_', ' ')}: {shown}")
    lines += [
        "",
        "## Licences",
        "",
        "Each repository's licence (SPDX id) as `coevo discover` found it: `unknown` unless recorded.",
        "",
    ]
    licences = counts.get("licences", {})
    lines += [f"- {name}: {licences.get(name, 'unknown')}" for name in counts["by_repository"]] or ["- none"]
    lines += ["", f"## Task fields (`{TASKS_JSONL}`, `{TASKS_PARQUET}`)", ""]
    lines += [f"- `{name}`: {doc}" for name, (_, doc) in TASK_FIELDS.items()]
    lines += ["", f"## Record fields (`{RECORDS_PARQUET}`, config `records`)", ""]
    lines += [f"- `{name}`: {doc}" for name, (_, doc) in RECORD_FIELDS.items()]
    if options.swebench:
        lines += [
            "",
            f"## SWE-bench shape (`{SWEBENCH}`, config `swebench`)",
            "",
            "`instance_id` (the task id), `repo` (owner/name), `base_commit` (rev1), `target_commit` (rev2),",
            "`created_at` (rev2's date), `patch` (the production diff), `test_patch` (the gold test diff),",
            "`FAIL_TO_PASS` (gold test ids failing on rev1 and passing on rev2), `PASS_TO_PASS` (passing on",
            "both; only ids whose both cells ran are listed), and the environment: `language`, `track`,",
            "`clone_url`, `environment_setup_commit`, `image`, `env_spec` (JSON), `version`.",
        ]
    lines += [
        "",
        "## Use",
        "",
        "```",
        "coevo verify DIR                 # every hash, the schema version, jsonl against parquet",
        "coevo import DIR --db tasks.db   # verify, then load the tasks into a store",
        "coevo score --db tasks.db --agent gold --repo-dir NAME=PATH",
        "```",
        "",
        "`datasets.load_dataset(DIR)` gives the tasks; `load_dataset(DIR, 'records')` the records.",
        f"The manifest (`{MANIFEST}`) holds the sha256 and size of every file.",
    ]
    return "\n".join(lines) + "\n"


# --- verify, list, import ------------------------------------------------------------------------


def read_manifest(folder: Path) -> dict[str, Any]:
    """The manifest, checked for what a reader relies on; :class:`BadSnapshot` otherwise."""
    path = folder / MANIFEST
    if not folder.is_dir():
        raise BadSnapshot(folder.parent, folder.name, "no such snapshot folder")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BadSnapshot(folder, MANIFEST, "missing") from None
    except (ValueError, OSError) as exc:
        raise BadSnapshot(folder, MANIFEST, f"not JSON ({exc})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise BadSnapshot(folder, MANIFEST, "not a coevo snapshot manifest (no files)")
    version = manifest.get("schema_version")
    if not isinstance(version, int):
        raise BadSnapshot(folder, MANIFEST, "no schema version")
    if version > SCHEMA_VERSION:
        raise BadSnapshot(
            folder,
            MANIFEST,
            f"schema version {version} is newer than this coevo reads ({SCHEMA_VERSION}): upgrade coevo",
        )
    return manifest


def verify_snapshot(folder: Path) -> dict[str, Any]:
    """Checks every file's size and sha256, the schema version, and that the JSONL and Parquet
    tasks agree row by row; returns the manifest, or raises :class:`BadSnapshot` naming the file."""
    manifest = read_manifest(folder)
    files: dict[str, Any] = manifest["files"]
    for name in _REQUIRED:
        if name not in files:
            raise BadSnapshot(folder, name, "not listed in the manifest")
    for name, entry in sorted(files.items()):
        path = folder / name
        if Path(name).name != name or not path.is_file():
            raise BadSnapshot(folder, name, "missing")
        if not isinstance(entry, dict):
            raise BadSnapshot(folder, MANIFEST, f"bad entry for {name}")
        actual = _file_entry(path)
        if actual["size"] != entry.get("size"):
            raise BadSnapshot(folder, name, f"{actual['size']} bytes, the manifest says {entry.get('size')}")
        if actual["sha256"] != entry.get("sha256"):
            raise BadSnapshot(folder, name, "its sha256 differs from the manifest's")
    _check_agreement(folder)
    return manifest


def _parquet_rows(path: Path, folder: Path) -> Iterator[dict[str, Any]]:
    import pyarrow as pa  # deferred: see _TEXT
    import pyarrow.parquet as pq

    try:
        reader = pq.ParquetFile(path)
        for batch in reader.iter_batches(batch_size=_BATCH):
            yield from batch.to_pylist()
    except (pa.ArrowException, OSError) as exc:
        raise BadSnapshot(folder, path.name, f"not readable as Parquet ({exc})") from None


def _jsonl_rows(path: Path, folder: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                yield json.loads(line)
            except ValueError:
                raise BadSnapshot(folder, path.name, f"line {number} is not JSON") from None


def _check_agreement(folder: Path) -> None:
    jsonl, parquet = _jsonl_rows(folder / TASKS_JSONL, folder), _parquet_rows(folder / TASKS_PARQUET, folder)
    number = 0
    sentinel: dict[str, Any] = {}
    while True:
        left, right = next(jsonl, sentinel), next(parquet, sentinel)
        number += 1
        if left is sentinel and right is sentinel:
            return
        if left is sentinel or right is sentinel:
            raise BadSnapshot(
                folder, TASKS_PARQUET, f"{TASKS_JSONL} and {TASKS_PARQUET} hold different row counts"
            )
        if left != right:
            raise BadSnapshot(
                folder, TASKS_PARQUET, f"row {number} ({left.get('id')}) differs from {TASKS_JSONL}'s"
            )


def list_snapshots(parent: Path) -> list[SnapshotInfo]:
    """The snapshots in ``parent`` (or ``parent`` itself when it is one), oldest first: by end
    date, then by when each was written."""
    folders = [parent] if (parent / MANIFEST).is_file() else sorted(p for p in parent.iterdir() if p.is_dir())
    found = []
    for folder in folders:
        try:
            found.append(_info(folder, read_manifest(folder)))
        except BadSnapshot:
            continue
    return sorted(found, key=lambda s: (s.end, (s.path / MANIFEST).stat().st_mtime_ns, s.path.name))


def _info(folder: Path, manifest: dict[str, Any]) -> SnapshotInfo:
    counts = manifest.get("counts", {})
    return SnapshotInfo(
        path=folder,
        end=str(manifest.get("end", "")),
        content_hash=str(manifest.get("content_hash", "")),
        tasks=int(counts.get("tasks", 0)),
        records=int(counts.get("records", 0)),
        by_track=dict(counts.get("by_track", {})),
        selection=_selection(manifest),
    )


def import_snapshot(store: Store, folder: Path) -> ImportReport:
    """Verifies the snapshot, then loads its repositories, tasks and records in one transaction.

    A task the store holds keeps its row and takes the snapshot's status; the others are added
    with their pairs. Importing one snapshot twice changes nothing.
    """
    verify_snapshot(folder)
    report = ImportReport()
    with store.session() as session:
        repos: dict[tuple[str | None, str], Repository] = {}
        for row in _jsonl_rows(folder / TASKS_JSONL, folder):
            repo = _repository(session, row, repos, report)
            pair = _pair(session, repo, row)
            task = session.get(Task, row["id"])
            if task is not None:
                if str(task.status) != row["status"]:
                    task.status = TaskStatus(row["status"])
                    if task.status != TaskStatus.QUARANTINED:
                        task.quarantine_reason = None
                    session.add(task)
                    report.statuses_changed += 1
                else:
                    report.unchanged += 1
                continue
            assert repo.id is not None and pair.id is not None
            session.add(
                Task(
                    id=row["id"], track=row["track"], language=row["language"],
                    status=TaskStatus(row["status"]),
                    repository_id=repo.id, repository=repo.name, pair_id=pair.id,
                    rev1=row["rev1"], rev2=row["rev2"],
                    rev1_date=_parse(row["rev1_date"]), rev2_date=_parse(row["rev2_date"]),
                    test_file=row["test_file"], old_test_file=row["old_test_file"],
                    test_methods=row["test_methods"], test_ids=row["test_ids"],
                    gold_helpers=row["gold_helpers"],
                    focal_methods=json.loads(row["focal_methods"]), gold_patch=row["gold_patch"],
                    production_diff=row["production_diff"], env_spec=json.loads(row["env_spec"]),
                    image=row["image"], build_records=json.loads(row["build_records"]),
                    installed=json.loads(row["installed"]), matrix=json.loads(row["matrix"]),
                    flaky=row["flaky"],
                    given_test_file=row["given_test_file"], given_recorded=True,
                )
            )  # fmt: skip
            report.tasks_added += 1
        for row in _parquet_rows(folder / RECORDS_PARQUET, folder):
            _record(session, row, repos, report)
    return report


def _parse(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _repository(
    session: Session,
    row: dict[str, Any],
    seen: dict[tuple[str | None, str], Repository],
    report: ImportReport,
) -> Repository:
    key = (row["repository_identity"], row["repository"])
    if key in seen:
        return seen[key]
    identity = row["repository_identity"]
    repo = None
    if identity is not None:
        repo = session.exec(select(Repository).where(Repository.identity == identity)).first()
    if repo is None:
        named = session.exec(select(Repository).where(Repository.name == row["repository"])).first()
        if named is not None and (identity is None or named.identity in (None, identity)):
            repo = named
    if repo is None:
        name = row["repository"]
        if session.exec(select(Repository).where(Repository.name == name)).first() is not None:
            name = f"{name}-{hashlib.sha256(str(identity).encode()).hexdigest()[:6]}"
        location = row.get("clone_url") or identity or name
        licence = row.get("licence")
        repo = Repository(
            name=name,
            location=location,
            path="",
            identity=identity,
            language=row["language"],
            licence=None if licence in (None, "unknown") else licence,
        )
        session.add(repo)
        session.flush()
        report.repositories_added += 1
    seen[key] = repo
    return repo


def _pair(session: Session, repo: Repository, row: dict[str, Any]) -> RevisionPair:
    assert repo.id is not None
    pair = session.exec(
        select(RevisionPair).where(RevisionPair.repository_id == repo.id, RevisionPair.rev2 == row["rev2"])
    ).first()
    if pair is None:
        pair = RevisionPair(
            repository_id=repo.id, rev1=row["rev1"], rev2=row["rev2"],
            rev1_date=_parse(row["rev1_date"]), rev2_date=_parse(row["rev2_date"]),
            rev2_author_date=_parse(row["rev2_date"]),
            production_diff=row.get("production_diff", ""),
        )  # fmt: skip
        session.add(pair)
        session.flush()
    return pair


def _record(
    session: Session,
    row: dict[str, Any],
    seen: dict[tuple[str | None, str], Repository],
    report: ImportReport,
) -> None:
    repo = _repository(session, {**row, "language": "", "clone_url": None}, seen, report)
    pair = _pair(session, repo, row)
    assert repo.id is not None and pair.id is not None
    candidate = session.exec(
        select(Candidate).where(
            Candidate.pair_id == pair.id,
            Candidate.test_file == row["test_file"],
            Candidate.test_method == row["test_method"],
        )
    ).first()
    if candidate is None:
        candidate = Candidate(
            repository_id=repo.id, pair_id=pair.id, test_file=row["test_file"],
            test_method=row["test_method"], change_kind=row["change_kind"],
        )  # fmt: skip
        session.add(candidate)
        session.flush()
    assert candidate.id is not None
    if (
        session.exec(select(CurationRecord).where(CurationRecord.candidate_id == candidate.id)).first()
        is not None
    ):
        return
    session.add(
        CurationRecord(
            candidate_id=candidate.id, pair_id=pair.id, repository_id=repo.id, label=Label(row["label"]),
            drop_reason=row["drop_reason"], detail=row["detail"], cells=json.loads(row["cells"]),
            focal=json.loads(row["focal"]),
        )
    )  # fmt: skip
    report.records_added += 1


__all__ = [
    "SCHEMA_VERSION",
    "BadSnapshot",
    "ExportOptions",
    "GivenFile",
    "ImportReport",
    "SnapshotInfo",
    "clone_url",
    "export_snapshot",
    "import_snapshot",
    "list_snapshots",
    "read_manifest",
    "swebench_row",
    "task_snapshot_row",
    "verify_snapshot",
]
