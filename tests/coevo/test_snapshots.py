"""`coevo export`, `verify`, `import` and `snapshots` on a store curated from a real history."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sqlmodel import select

from runners.scoring.workspace import prepare_workspace
from tasks import AgentRun, Task, TaskStatus, changes_since_snapshot, list_snapshots, open_store
from tests import cli
from tests.coevo.test_browse import CIRCLE, RECTANGLE, SQUARE, TRIANGLE, Curated, coevo
from tests.curation.small import curated_on_host
from tests.gitrepo import GitRepo

STRICT = RECTANGLE.replace("    return", "    if width < 0:\n        raise ValueError(width)\n    return")
TEST_SQUARE = "\n\ndef test_square():\n    assert square(3) == 9\n"
WRONG_SQUARE = "\n\ndef test_square():\n    assert square(3) == 10\n"
LAX = "\n\ndef test_rectangle():\n    assert rectangle(-2, 3) == -6\n"
STRICT_TEST = "\n\ndef test_rectangle():\n    with pytest.raises(ValueError):\n        rectangle(-2, 3)\n"
TEST_TRIANGLE = "\n\ndef test_triangle():\n    assert triangle(4, 3) == 6\n"
TEST_CIRCLE = "\n\ndef test_circle():\n    assert circle(2) == 12\n"
HEAD = "import pytest\n\nfrom shapes import *  # noqa: F403\n"

TRIANGLE_DATE = "2026-09-01T09:00:00+00:00"
RECTANGLE_DATE = "2026-09-01T23:30:00-05:00"
"""2026-09-02 04:30 in UTC: a task of the 2nd, though its committer's day was the 1st."""


def history(path: Path) -> GitRepo:
    """A new function (generation), a changed one at 23:30-05:00 (update), then a new function
    beside a test whose new version fails (generation, and a dropped record)."""
    repo = GitRepo(path)
    commits = [
        ("Squares and rectangles", "2026-09-01T08:00:00+00:00", SQUARE + RECTANGLE, TEST_SQUARE + LAX),
        ("Add triangles", TRIANGLE_DATE, SQUARE + RECTANGLE + TRIANGLE, TEST_SQUARE + LAX + TEST_TRIANGLE),
        ("Reject negative sides", RECTANGLE_DATE, SQUARE + STRICT + TRIANGLE,
         TEST_SQUARE + STRICT_TEST + TEST_TRIANGLE),
        ("Add circles", "2026-09-03T10:00:00+00:00", SQUARE + STRICT + TRIANGLE + CIRCLE,
         WRONG_SQUARE + STRICT_TEST + TEST_TRIANGLE + TEST_CIRCLE),
    ]  # fmt: skip
    for message, date, shapes, tests in commits:
        files = {"shapes.py": shapes, "tests/test_shapes.py": HEAD + tests, "requirements.txt": "# pytest\n"}
        repo.commit(message, date, files)
    return repo


@pytest.fixture(scope="module")
def curated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Curated]:
    root = tmp_path_factory.mktemp("snapshots")
    repo = history(root / "shapes")
    db = curated_on_host(str(repo.path), root, reruns=1)
    with open_store(db).session() as s:
        ids = {t.test_methods[0]: t.id for t in s.exec(select(Task)).all()}
    assert set(ids) == {"test_triangle", "test_rectangle", "test_circle"}
    yield Curated(db, repo, ids)


def export(db: Path, out: Path, *options: str, fresh: bool = False) -> Path:
    """``coevo export``; ``fresh``: by a new start of the console script, so that an export compared
    with another made by a fork of the test's coevo process does not share its string hashes' seed
    (what a set's order hangs on)."""
    result = cli.coevo("export", "--db", str(db), "--out", str(out), "--json", *options, fresh=fresh)
    assert result.returncode == 0, result.stderr
    return Path(json.loads(result.stdout)["path"])


def contents(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def jsonl(folder: Path, name: str = "tasks.jsonl") -> list[dict[str, object]]:
    return [json.loads(line) for line in (folder / name).read_text().splitlines()]


def copy_store(source: Path, target: Path) -> None:
    """A copy of a store in WAL mode, its journal's pages included."""
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)


def dump(db: Path) -> list[str]:
    """Every row of the store, as SQL."""
    with sqlite3.connect(db) as connection:
        return list(connection.iterdump())


def test_export_writes_a_deterministic_snapshot_that_datasets_loads(curated: Curated, tmp_path: Path) -> None:
    folder = export(curated.db, tmp_path / "a")
    assert sorted(p.name for p in folder.iterdir()) == [
        "CHANGELOG.md", "README.md", "manifest.json", "records.parquet", "tasks.jsonl", "tasks.parquet",
    ]  # fmt: skip
    manifest = json.loads((folder / "manifest.json").read_text())
    assert folder.name == f"2026-09-03-{manifest['content_hash'][:12]}"
    assert manifest["counts"]["tasks"] == 3
    assert manifest["counts"]["by_track"] == {"generation": 2, "update": 1}
    assert manifest["counts"]["by_half_year"] == {"2026-H2": 3}
    assert manifest["counts"]["records"] >= 1
    assert set(manifest["files"]) == {
        "CHANGELOG.md",
        "README.md",
        "records.parquet",
        "tasks.jsonl",
        "tasks.parquet",
    }

    rows = jsonl(folder)
    assert [r["id"] for r in rows] == [
        curated.ids[m] for m in ("test_triangle", "test_rectangle", "test_circle")
    ]
    assert pd.read_parquet(folder / "tasks.parquet").to_dict("records")[0]["id"] == rows[0]["id"]
    triangle = rows[0]
    assert triangle["rev2_date"] == "2026-09-01T09:00:00+00:00"
    assert triangle["repository_identity"].startswith("root:")
    assert (triangle["clone_url"], triangle["licence"], triangle["status"]) == (None, "unknown", "active")
    assert triangle["test_ids"] == ["tests/test_shapes.py::test_triangle"]
    assert "def test_triangle" not in triangle["given_test_file"]
    assert "def test_square" in triangle["given_test_file"]
    assert "+def test_triangle" in triangle["gold_patch"]
    assert "+def triangle" in triangle["production_diff"]
    assert json.loads(triangle["matrix_summary"])["test_triangle"]["NN"] == "pass"
    focal = json.loads(triangle["focal_methods"])
    assert [(f["method"], f["start"] > 0) for f in focal] == [("triangle", True)]
    records = pd.read_parquet(folder / "records.parquet")
    assert "new_on_new_not_pass" in set(records["drop_reason"])

    again = export(curated.db, tmp_path / "b", fresh=True)
    assert again.name == folder.name
    assert contents(again) == contents(folder)

    import datasets

    tasks = datasets.load_dataset(str(folder), cache_dir=str(tmp_path / "hf"))
    assert tasks["test"]["id"] == [r["id"] for r in rows]
    loaded = datasets.load_dataset(str(folder), "records", cache_dir=str(tmp_path / "hf"))
    assert loaded["test"].num_rows == len(records)


def test_window_bounds_are_utc_since_inclusive_until_exclusive(curated: Curated, tmp_path: Path) -> None:
    triangle, rectangle = curated.ids["test_triangle"], curated.ids["test_rectangle"]

    def ids(*options: str) -> list[str]:
        return [str(r["id"]) for r in jsonl(export(curated.db, tmp_path / "w", *options))]

    assert ids("--since", "2026-09-01T09:00:00+00:00", "--until", "2026-09-02") == [triangle]
    assert ids("--until", "2026-09-01T09:00:00+00:00") == []
    # rev2 at 23:30-05:00 is 04:30 UTC on the 2nd, whatever day the committer's clock showed.
    assert ids("--since", "2026-09-02", "--until", "2026-09-03") == [rectangle]
    assert ids("--since", RECTANGLE_DATE, "--until", "2026-09-02T04:30:01+00:00") == [rectangle]
    assert ids("--since", "2026-09-01T09:00:01+00:00", "--until", "2026-09-01T23:30:00-05:00") == []
    assert export(curated.db, tmp_path / "n", "--until", "2026-09-02").name.startswith("2026-09-02-")


def test_an_empty_window_gives_an_empty_snapshot(curated: Curated, tmp_path: Path) -> None:
    folder = export(curated.db, tmp_path, "--since", "2030-01-01")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert (manifest["counts"]["tasks"], manifest["counts"]["records"]) == (0, 0)
    assert manifest["counts"]["by_track"] == {}
    assert folder.name.startswith("undated-")
    assert (folder / "tasks.jsonl").read_text() == ""
    assert pq.read_table(folder / "tasks.parquet").num_rows == 0
    assert coevo("verify", str(folder)).returncode == 0


def test_stores_sharing_a_snapshots_folder_compare_only_with_their_own(
    curated: Curated, tmp_path: Path
) -> None:
    mine = tmp_path / "mine.db"
    copy_store(curated.db, mine)
    out = tmp_path / "snaps"
    first = export(mine, out, "--until", "2026-09-03")
    # Another store, loaded from that snapshot, one task quarantined there, writes to the same folder.
    theirs = tmp_path / "theirs.db"
    loaded = coevo("import", str(first), "--db", str(theirs))
    assert loaded.returncode == 0, loaded.stderr
    assert changes_since_snapshot(open_store(theirs), out).since is None
    with open_store(theirs).session() as s:
        task = s.get(Task, curated.ids["test_rectangle"])
        assert task is not None
        task.status = TaskStatus.QUARANTINED
        s.add(task)
    other = export(theirs, out, "--until", "2026-09-03")
    assert other != first
    assert "The first snapshot of this store" in (other / "CHANGELOG.md").read_text()
    since = changes_since_snapshot(open_store(theirs), out).since
    assert since is not None and since.path == other

    with open_store(mine).session() as s:
        task = s.get(Task, curated.ids["test_triangle"])
        assert task is not None
        task.status = TaskStatus.QUARANTINED
        s.add(task)
    second = export(mine, out, "--until", "2026-09-03")  # theirs, written later, is not its predecessor
    log = (second / "CHANGELOG.md").read_text()
    assert f"Against {first.name}," in log
    assert f"## Retired (1)\n\n- {curated.ids['test_triangle']}: quarantined\n" in log
    since = changes_since_snapshot(open_store(mine), out).since
    assert since is not None and since.path == second  # its own newest, though theirs is beside it


def test_swebench_rows(curated: Curated, tmp_path: Path) -> None:
    folder = export(curated.db, tmp_path, "--format", "swebench")
    rows = {str(r["instance_id"]): r for r in jsonl(folder, "swebench.jsonl")}
    triangle = rows[curated.ids["test_triangle"]]
    task = next(r for r in jsonl(folder) if r["id"] == triangle["instance_id"])
    assert triangle["base_commit"] == task["rev1"]
    assert triangle["test_patch"] == task["gold_patch"]
    assert triangle["patch"] == task["production_diff"]
    assert triangle["created_at"] == "2026-09-01T09:00:00+00:00"
    assert triangle["FAIL_TO_PASS"] == ["tests/test_shapes.py::test_triangle"]
    assert triangle["PASS_TO_PASS"] == []
    assert "swebench.jsonl" in json.loads((folder / "manifest.json").read_text())["files"]
    assert "FAIL_TO_PASS" in (folder / "README.md").read_text()


def test_changelog_lists_added_and_retired(curated: Curated, tmp_path: Path) -> None:
    db = tmp_path / "copy.db"
    copy_store(curated.db, db)
    out = tmp_path / "snaps"
    first = export(db, out, "--until", "2026-09-03")
    assert "first snapshot" in (first / "CHANGELOG.md").read_text()
    with open_store(db).session() as s:
        task = s.get(Task, curated.ids["test_triangle"])
        assert task is not None
        task.status = TaskStatus.QUARANTINED
        s.add(task)
    second = export(db, out)
    log = (second / "CHANGELOG.md").read_text()
    assert f"Against {first.name}, the newest earlier snapshot of this store with the same window" in log
    assert f"## Added (1)\n\n- {curated.ids['test_circle']}\n" in log
    assert f"## Retired (1)\n\n- {curated.ids['test_triangle']}: quarantined\n" in log
    assert "## Changed (0)" in log

    listing = coevo("snapshots", str(out))
    assert listing.returncode == 0, listing.stderr
    lines = listing.stdout.splitlines()
    assert [line.split()[:4] for line in lines[1:]] == [
        [
            str(first),
            "2026-09-03",
            "2",
            str(json.loads((first / "manifest.json").read_text())["counts"]["records"]),
        ],
        [str(second), "2026-09-03", "2", lines[2].split()[3]],  # the quarantined task left out
    ]
    assert json.loads((second / "manifest.json").read_text())["content_hash"] in lines[2]


def test_import_round_trip_is_idempotent_and_updates_statuses(curated: Curated, tmp_path: Path) -> None:
    original = export(curated.db, tmp_path / "one")
    db = tmp_path / "imported.db"
    result = coevo("import", str(original), "--db", str(db))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("3 tasks added, 0 statuses changed, 0 unchanged; 1 repositories")
    before = dump(db)
    again = coevo("import", str(original), "--db", str(db))
    assert again.stdout.startswith("0 tasks added, 0 statuses changed, 3 unchanged; 0 repositories")
    assert dump(db) == before

    # Exported again from the imported store, elsewhere: the same files under the same name.
    copy = export(db, tmp_path / "two", fresh=True)
    assert copy.name == original.name
    assert contents(copy) == contents(original)

    # A newer snapshot from the original store, with one task quarantined, moves its status.
    newer_db = tmp_path / "newer.db"
    copy_store(curated.db, newer_db)
    with open_store(newer_db).session() as s:
        task = s.get(Task, curated.ids["test_circle"])
        assert task is not None
        task.status = TaskStatus.QUARANTINED
        s.add(task)
    newer = export(newer_db, tmp_path / "three", "--include-quarantined")  # else it is left out
    moved = coevo("import", str(newer), "--db", str(db))
    assert moved.stdout.startswith("0 tasks added, 1 statuses changed, 2 unchanged"), moved.stdout
    with open_store(db).session() as s:
        assert s.get(Task, curated.ids["test_circle"]).status == TaskStatus.QUARANTINED  # type: ignore[union-attr]


def _one_byte(folder: Path) -> str:
    path = folder / "tasks.jsonl"
    data = bytearray(path.read_bytes())
    data[10] ^= 1
    path.write_bytes(bytes(data))
    return "tasks.jsonl"


def _missing(folder: Path) -> str:
    (folder / "records.parquet").unlink()
    return "records.parquet"


def _not_json(folder: Path) -> str:
    path = folder / "manifest.json"
    path.write_text(path.read_text()[:-3])
    return "manifest.json"


def _newer_schema(folder: Path) -> str:
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["schema_version"] += 1
    path.write_text(json.dumps(manifest))
    return "manifest.json"


def _disagreeing(folder: Path) -> str:
    """Parquet rows that differ from the JSONL ones, with a manifest that vouches for both."""
    table = pq.read_table(folder / "tasks.parquet")
    statuses = ["retired", *table.column("status").to_pylist()[1:]]
    table = table.set_column(table.schema.get_field_index("status"), "status", pa.array(statuses))
    pq.write_table(table, folder / "tasks.parquet")
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    data = (folder / "tasks.parquet").read_bytes()
    manifest["files"]["tasks.parquet"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    path.write_text(json.dumps(manifest))
    return "tasks.parquet"


@pytest.fixture(scope="module")
def imported(curated: Curated, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A store that imported the snapshot of the first two days, and the newer snapshot of all
    three: what each damaged copy below is tried against."""
    root = tmp_path_factory.mktemp("bad-snapshots")
    older = export(curated.db, root / "snaps", "--until", "2026-09-02")
    db = root / "store.db"
    assert coevo("verify", str(older)).returncode == 0
    assert coevo("import", str(older), "--db", str(db)).returncode == 0
    newer = export(curated.db, root / "snaps")
    assert coevo("verify", str(newer)).returncode == 0  # whole before each test damages a copy
    return db, newer


@pytest.mark.parametrize("damage", [_one_byte, _missing, _not_json, _newer_schema, _disagreeing])
def test_a_bad_snapshot_names_its_file_and_imports_nothing(
    imported: tuple[Path, Path], tmp_path: Path, damage: object
) -> None:
    shared_db, shared_newer = imported
    db, newer = tmp_path / "store.db", tmp_path / shared_newer.name
    copy_store(shared_db, db)
    shutil.copytree(shared_newer, newer)
    before = dump(db)
    bad = damage(newer)  # type: ignore[operator]
    for command in ("verify", "import"):
        result = (
            coevo(command, str(newer), "--db", str(db)) if command == "import" else coevo(command, str(newer))
        )
        assert result.returncode == 1, result
        assert result.stderr.count("\n") == 1, result.stderr
        assert result.stderr.startswith(f"error: {newer / bad}: "), result.stderr
    assert dump(db) == before
    fresh = tmp_path / "fresh.db"
    assert coevo("import", str(newer), "--db", str(fresh)).returncode == 1
    assert not fresh.exists()


def _score(curated: Curated, db: Path, agent: str, *options: str) -> subprocess.CompletedProcess[str]:
    """``coevo score`` on the host, with the module's build and venv caches, each test run once
    (reruns are tested by tests/runners/test_scoring.py)."""
    root = curated.db.parent
    caches = {"COEVO_WORK": str(root / "work")}
    command = ("score", "--agent", agent, "--backend", "local", "--db", str(db), "--reruns", "1", *options)
    return coevo(*command, env=caches)


def results(db: Path) -> dict[tuple[str, str], object]:
    """Each run's per-method outcomes, success and pass, by agent and task."""
    with open_store(db).session() as s:
        return {
            (run.agent, run.task_id): (
                run.status,
                run.pass_rate,
                run.success_rate,
                run.strict_success_rate,
                {
                    m: (o["outcome"], o["success"], o["strict"], o["new"], o["old"])
                    for m, o in run.outcomes.items()
                },
            )
            for run in s.exec(select(AgentRun)).all()
        }


@pytest.mark.slow
def test_an_imported_store_scores_as_the_original_with_the_history_given(
    curated: Curated, tmp_path: Path
) -> None:
    original = tmp_path / "original.db"
    copy_store(curated.db, original)
    imported = tmp_path / "imported.db"
    assert coevo("import", str(export(original, tmp_path / "snap")), "--db", str(imported)).returncode == 0
    clone = tmp_path / "elsewhere"
    subprocess.run(["git", "clone", "-q", str(curated.repo.path), str(clone)], check=True)

    # No history here and no URL to clone: one line saying what to give.
    missing = _score(curated, imported, "noop")
    assert missing.returncode == 1
    assert missing.stderr.strip().splitlines() == [
        "error: the history of shapes is not on this machine and no clone URL is recorded: "
        "give --repo-dir shapes=PATH of a clone"
    ]
    other = GitRepo(tmp_path / "other")
    other.commit("Unrelated", "2026-09-01T08:00:00+00:00", {"a.py": "a = 1\n"})
    for given, says in [
        (f"shapes={other.path}", f"--repo-dir shapes={other.path} does not hold commit "),
        (f"shapes={tmp_path / 'nowhere'}", "no such file or directory"),
        (f"squares={clone}", "--repo-dir squares: the store has no such repository (it has: shapes)"),
    ]:
        refused = _score(curated, imported, "noop", "--repo-dir", given)
        assert refused.returncode == 1 and says in refused.stderr, refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert results(imported) == {}

    for agent in ("gold", "noop"):
        for db, options in ((original, ()), (imported, ("--repo-dir", f"shapes={clone}"))):
            scored = _score(curated, db, agent, *options)
            assert scored.returncode == 0, scored.stderr
            assert scored.stdout.startswith(f"{agent}: 3 tasks scored"), scored.stdout
    expected = results(original)
    assert len(expected) == 6
    assert results(imported) == expected
    gold = [value for (agent, _), value in expected.items() if agent == "gold"]
    assert all(v[1] == 1.0 for v in gold)  # type: ignore[index]


def test_an_imported_task_starts_from_its_recorded_test_file(curated: Curated, tmp_path: Path) -> None:
    imported = tmp_path / "imported.db"
    assert coevo("import", str(export(curated.db, tmp_path / "snap")), "--db", str(imported)).returncode == 0
    with open_store(imported).session() as s:
        task = s.get(Task, curated.ids["test_triangle"])
        assert task is not None and task.given_test_file is not None
        task.given_test_file = "# as published\n" + task.given_test_file
        s.add(task)
        s.commit()
        s.refresh(task)
    workspace = prepare_workspace(task, curated.repo.path, tmp_path / "scratch")
    assert (workspace.repo / "tests/test_shapes.py").read_text().startswith("# as published\n")
    assert "def test_triangle" not in (workspace.repo / "tests/test_shapes.py").read_text()


def test_clones_in_two_folders_export_the_same_snapshot(curated: Curated, tmp_path: Path) -> None:
    root = curated.db.parent
    caches = {"COEVO_WORK": str(root / "work")}
    window = ("--since", "2026-09-01T09:00:00+00:00", "--until", "2026-09-01T10:00:00+00:00")
    folders = []
    for name in ("left", "right-copy"):
        clone = tmp_path / name
        subprocess.run(["git", "clone", "-q", str(curated.repo.path), str(clone)], check=True)
        db = str(tmp_path / f"{name}.db")
        apart = name != "left"  # the second by new starts: the two must not share a hash seed
        for command in (["mine", str(clone)], ["curate", "--backend", "local", "--reruns", "1"]):
            ran = cli.coevo(*command, "--db", db, *window, env={**os.environ, **caches}, fresh=apart)
            assert ran.returncode == 0, ran.stderr
        folders.append(export(Path(db), tmp_path / f"{name}-snapshots", *window, fresh=apart))
    left, right = folders
    assert [r["id"] for r in jsonl(left)] == [r["id"] for r in jsonl(right)] == [curated.ids["test_triangle"]]
    assert left.name == right.name
    assert contents(left) == contents(right)


def test_run_writes_a_snapshot_when_tasks_were_gained_or_retired(curated: Curated, tmp_path: Path) -> None:
    db = tmp_path / "copy.db"
    copy_store(curated.db, db)
    root = curated.db.parent
    caches = {"COEVO_WORK": str(root / "work")}
    out = tmp_path / "snaps"

    def run() -> subprocess.CompletedProcess[str]:
        site = ("--site", str(tmp_path / "site"))
        options = ("--backend", "local", "--db", str(db), "--snapshots", str(out), *site)
        ran = coevo("run", str(curated.repo.path), *options, env=caches)
        assert ran.returncode == 0, ran.stderr
        return ran

    first = run()
    [written] = list_snapshots(out)
    assert (
        f"snapshot: wrote {written.path} (3 tasks; 3 added, 0 retired (the first snapshot there))"
        in first.stdout
    )
    assert {r["id"] for r in jsonl(written.path)} == set(curated.ids.values())

    # A filtered export beside it, newer: the run still compares with the snapshot of every task.
    filtered = export(db, out, "--track", "generation")
    assert {r["id"] for r in jsonl(filtered)} == {curated.ids["test_triangle"], curated.ids["test_circle"]}
    assert list_snapshots(out)[-1].path == filtered
    assert "every task is new" in (filtered / "CHANGELOG.md").read_text()
    again = run()
    assert f"snapshot: no task gained or retired since {written.path}; none written" in again.stdout
    assert {s.path for s in list_snapshots(out)} == {written.path, filtered}

    with open_store(db).session() as s:
        task = s.get(Task, curated.ids["test_circle"])
        assert task is not None
        task.status = TaskStatus.RETIRED
        s.add(task)
    third = run()
    newer = list_snapshots(out)[-1]
    assert newer.path != written.path
    assert f"snapshot: wrote {newer.path} (3 tasks; 0 added, 1 retired since {written.path})" in third.stdout
    assert f"- {curated.ids['test_circle']}: retired" in (newer.path / "CHANGELOG.md").read_text()
