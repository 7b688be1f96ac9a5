"""Task ids derive from what a repository is, not from the folder it was cloned into, and a store
from before identities is migrated with its agent runs still linked."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlmodel import select

import miner
from coevo.cli import main
from coevo.example import write_example
from curation import CurateRequest, curate
from runners.scoring.scorer import leaderboard
from tasks import AgentRun, CurationRecord, GoldCheck, Repository, Task, open_store, task_id


@dataclass
class Clones:
    root: Path
    origin: Path
    first: Path
    """The store of the clone in ``one/shapes``."""
    second: Path
    """The store of the clone in ``two/geometry``."""


@pytest.fixture(scope="module")
def clones(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clones]:
    """The example history cloned into two differently named folders, each mined and curated on
    the host into its own store (the venvs shared)."""
    root = tmp_path_factory.mktemp("identity")
    origin = root / "example"
    write_example(origin)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COEVO_WORK", str(root / "work"))
        stores = []
        for folder in ("one/shapes", "two/geometry"):
            clone = root / folder
            subprocess.run(["git", "clone", "-q", str(origin), str(clone)], check=True, capture_output=True)
            db = root / f"{folder.split('/')[0]}.db"
            miner.mine(open_store(db), miner.MineRequest(location=str(clone)))
            assert not curate(open_store(db), CurateRequest(backend="local", reruns=1, workers=1)).errors
            stores.append(db)
        yield Clones(root, origin, *stores)


def _task_ids(db: Path) -> set[str]:
    with open_store(db).session() as s:
        return set(s.exec(select(Task.id)).all())


def _root_commit(repo: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "rev-list", "--max-parents=0", "HEAD"], capture_output=True, text=True
    ).stdout.strip()


def test_two_clones_in_two_folders_give_the_same_task_ids(clones: Clones) -> None:
    with open_store(clones.first).session() as s:
        first = s.exec(select(Repository)).one()
    with open_store(clones.second).session() as s:
        second = s.exec(select(Repository)).one()
    assert (first.name, second.name) == ("example", "example")  # named by what they are clones of
    assert first.identity == second.identity == f"root:{_root_commit(clones.origin)}"
    ids = _task_ids(clones.first)
    assert len(ids) == 2 and {i[:4] for i in ids} == {"gen-", "upd-"}
    assert _task_ids(clones.second) == ids


def _copy(source: Path, target: Path) -> Path:
    """A copy of a live WAL database, its last writes included."""
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    src.close()
    dst.close()
    return target


def _as_before_identities(db: Path) -> dict[str, str]:
    """Turns ``db`` into a store of the coevo before identities: no ``identity`` column, task ids
    hashed from the repository's name, in every table that names them. Returns new id → old id."""
    old_of: dict[str, str] = {}
    connection = sqlite3.connect(db)
    with connection:
        connection.execute("PRAGMA foreign_keys=OFF")
        names = dict(connection.execute("SELECT id, name FROM repository").fetchall())
        rows = connection.execute("SELECT id, repository_id, rev1, rev2, test_file, track FROM task")
        for new, repository_id, rev1, rev2, test_file, track in rows.fetchall():
            old = task_id(names[repository_id], rev1, rev2, test_file, track.lower())
            for table, column in (("task", "id"), ("agentrun", "task_id"), ("curationrecord", "task_id"),
                                  ("goldcheck", "task_id")):  # fmt: skip
                connection.execute(f"UPDATE {table} SET {column} = ? WHERE {column} = ?", (old, new))
            old_of[new] = old
    connection.execute("ALTER TABLE repository DROP COLUMN identity")
    connection.close()
    return old_of


def _scored(db: Path, agent: str, finished: datetime, log: str) -> None:
    """An agent run and a gold check on every task of ``db``, as ``coevo score`` stores them."""
    with open_store(db).session() as s:
        for task in s.exec(select(Task)).all():
            s.add(AgentRun(task_id=task.id, agent=agent, status="done", pass_rate=1.0, log=log,
                           finished_at=finished))  # fmt: skip
            s.add(GoldCheck(task_id=task.id, environment=f"env-{log}", ok=True, checked_at=finished))


def test_a_store_from_before_identities_is_migrated_with_its_runs_linked(
    clones: Clones, tmp_path: Path
) -> None:
    db = _copy(clones.first, tmp_path / "old.db")
    _scored(db, "mine", datetime(2026, 1, 1, tzinfo=UTC), "first")
    old_of = _as_before_identities(db)
    new_ids = _task_ids(clones.second)
    assert set(old_of) == new_ids and not set(old_of.values()) & new_ids

    # Opening the old store adds the column; read commands see it as it was.
    assert _task_ids(db) == set(old_of.values())
    with open_store(db).session() as s:
        assert s.exec(select(Repository)).one().identity is None

    # The next curation (nothing left to curate) migrates it, runs and all, in one go.
    report = curate(open_store(db), CurateRequest(backend="local", reruns=1))
    assert (report.errors, report.run.pairs_done) == ({}, 0)
    assert _task_ids(db) == new_ids
    with open_store(db).session() as s:
        assert s.exec(select(Repository)).one().identity == f"root:{_root_commit(clones.origin)}"
        assert {r.task_id for r in s.exec(select(AgentRun)).all()} == new_ids
        assert {c.task_id for c in s.exec(select(GoldCheck)).all()} == new_ids
        records = {r.task_id for r in s.exec(select(CurationRecord)).all() if r.task_id is not None}
        assert records == new_ids
    (standing,) = leaderboard(open_store(db))
    assert (standing.agent, standing.tasks) == ("mine", 2)  # the runs still count on their tasks


def test_one_repository_from_two_clones_in_one_old_store_becomes_one_set_of_tasks(
    clones: Clones, tmp_path: Path
) -> None:
    """Both clones mined into one store before identities: each clone's tasks had their own ids.
    Migrated, they are the same tasks; each keeps one row, and of two runs of one agent the later."""
    db = _copy(clones.first, tmp_path / "old.db")
    _scored(db, "mine", datetime(2026, 1, 1, tzinfo=UTC), "earlier")
    with open_store(db).session() as s:
        shapes = s.exec(select(Repository)).one()
        twin = Repository(name="geometry", location=str(clones.root / "two/geometry"),
                          path=str(clones.root / "two/geometry"), language="python")  # fmt: skip
        s.add(twin)
        s.flush()
        for task in s.exec(select(Task).where(Task.repository_id == shapes.id)).all():
            s.add(Task(**{**task.model_dump(), "id": "x" + task.id, "repository_id": twin.id,
                          "repository": "geometry"}))  # fmt: skip
            s.flush()
            s.add(AgentRun(task_id="x" + task.id, agent="mine", status="done", log="later",
                           finished_at=datetime(2026, 2, 1, tzinfo=UTC)))  # fmt: skip
    _as_before_identities(db)
    assert len(_task_ids(db)) == 4

    assert miner.identify_repositories(open_store(db)) == {}
    assert _task_ids(db) == _task_ids(clones.second)
    with open_store(db).session() as s:
        runs = s.exec(select(AgentRun)).all()
        assert sorted((r.task_id, r.log) for r in runs) == sorted((i, "later") for i in _task_ids(db))
        assert {r.identity for r in s.exec(select(Repository)).all()} == {
            f"root:{_root_commit(clones.origin)}"
        }


def test_a_repository_whose_clone_is_gone_keeps_its_ids_until_it_is_back(
    clones: Clones, tmp_path: Path
) -> None:
    db = _copy(clones.first, tmp_path / "old.db")
    old_of = _as_before_identities(db)
    with open_store(db).session() as s:
        repo = s.exec(select(Repository)).one()
        path, repo.path = repo.path, str(tmp_path / "moved")
        s.add(repo)
    missing = miner.identify_repositories(open_store(db))
    assert list(missing) == ["example"] and "cannot find its root commit" in missing["example"]
    assert _task_ids(db) == set(old_of.values())
    with open_store(db).session() as s:
        repo = s.exec(select(Repository)).one()
        repo.path = path
        s.add(repo)
    assert miner.identify_repositories(open_store(db)) == {}
    assert _task_ids(db) == set(old_of)


def test_a_store_from_before_identities_exports_its_tasks_under_their_stable_ids(
    clones: Clones, tmp_path: Path
) -> None:
    db = _copy(clones.first, tmp_path / "old.db")
    _as_before_identities(db)
    assert main(["export", "--db", str(db), "--out", str(tmp_path / "snapshots")]) == 0
    (folder,) = (tmp_path / "snapshots").iterdir()
    rows = [json.loads(line) for line in (folder / "tasks.jsonl").read_text().splitlines()]
    assert {row["id"] for row in rows} == _task_ids(clones.first)
