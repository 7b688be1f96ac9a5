"""Releasing the benchmark: a dated snapshot of the store's tasks, written when asked
(``coevo export``) or when the store gained or retired tasks since the newest one
(``coevo run`` and each cycle)."""

from __future__ import annotations

from pathlib import Path

from miner import identify_repositories
from runners import reset_test_file
from tasks import (
    CoevoError,
    ExportOptions,
    Repository,
    SnapshotInfo,
    Store,
    StoreChanges,
    Task,
    changes_since_snapshot,
    export_snapshot,
)

from .version import __version__


def export(store: Store, parent: Path, options: ExportOptions) -> SnapshotInfo:
    """The snapshot of ``store`` for ``options`` in a new folder of ``parent``. A store from before
    identities has its repositories identified first: a snapshot names tasks by their stable ids."""
    identify_repositories(store)
    return export_snapshot(store, parent, options, __version__, given_test_file)


def snapshot_if_changed(store: Store, parent: Path) -> tuple[StoreChanges, SnapshotInfo | None]:
    """What changed since the newest snapshot in ``parent``, and the snapshot of all tasks
    written there when the store gained or retired any (None: nothing to release)."""
    changes = changes_since_snapshot(store, parent)
    if not changes.changed:
        return changes, None
    return changes, export(store, parent, ExportOptions())


def given_test_file(task: Task, repo: Repository) -> str | None:
    """The test file an agent starts from on ``task``, as scoring resets it, read from the
    repository's history (for a snapshot row; None: the agent writes the whole file)."""
    if not repo.path or not Path(repo.path).is_dir():
        raise CoevoError(
            f"task {task.id}: the history of {repo.name} is not at {repo.path or 'a known path'}, "
            "and the reset test file is built from it: clone it there, or export from a store that has it"
        )
    given = reset_test_file(task, Path(repo.path))
    return None if given is None else given.decode("utf-8", errors="replace")
