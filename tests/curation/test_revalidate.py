"""`coevo revalidate` on a history curated on the host: a task whose gold rots is quarantined with
the reason, left out of exports and scoring, and restored when the cause is undone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import select

from curation import RevalidateRequest, health_verdict, revalidate, select_tasks
from curation.matrix import Cell
from runners.environments.revisions import BuiltRevision
from tasks import HealthCheck, Task, TaskStatus, Track, open_store
from tests.coevo.test_browse import coevo
from tests.curation.small import mined_and_curated
from tests.gitrepo import GitRepo

ADD = "def add(a, b):\n    return a + b\n"
SCALE = "\n\ndef scale(x):\n    return 2 * x\n"
HEAD = "from pathlib import Path\n\nfrom calc import *  # noqa: F403\n"
TEST_ADD = "\n\ndef test_add():\n    assert add(1, 2) == 3\n"


def gold_reading(data: Path) -> str:
    """A gold method that reads ``data``, a file outside the repository: the host backend runs
    tests on the host, where an absolute path is read as it is (no variable to pass through)."""
    return f"\n\ndef test_scale():\n    assert scale(int(Path({str(data)!r}).read_text())) == 6\n"


def history(path: Path, data: Path) -> GitRepo:
    """A new function whose new test reads ``data``: one generation task."""
    repo = GitRepo(path)
    repo.commit("Adding", "2026-09-01T08:00:00+00:00", {
        "calc.py": ADD, "tests/test_calc.py": HEAD + TEST_ADD, "requirements.txt": "# pytest\n"})  # fmt: skip
    repo.commit("Scaling", "2026-09-02T08:00:00+00:00", {
        "calc.py": ADD + SCALE, "tests/test_calc.py": HEAD + TEST_ADD + gold_reading(data)})  # fmt: skip
    return repo


@pytest.fixture
def curated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, str]:
    """(store, data file, task id): the history curated on the host, its one task active."""
    data = tmp_path / "outside" / "factor.txt"
    data.parent.mkdir()
    data.write_text("3\n")
    db = mined_and_curated(history(tmp_path / "calc", data), tmp_path, monkeypatch, "python")
    with open_store(db).session() as s:
        tasks = s.exec(select(Task)).all()
    assert [(t.track, t.test_methods, t.status) for t in tasks] == [
        (Track.GENERATION, ["test_scale"], TaskStatus.ACTIVE)
    ]
    return db, data, tasks[0].id


def _revalidate(db: Path, *options: str) -> dict[str, object]:
    result = coevo("revalidate", "--db", str(db), "--all", "--backend", "local", "--reruns", "1", "--json",
                   *options)  # fmt: skip
    assert result.returncode == 0, result.stderr
    report: dict[str, object] = json.loads(result.stdout)
    return report


def test_a_task_whose_gold_reads_a_removed_file_is_quarantined_then_restored(
    curated: tuple[Path, Path, str], tmp_path: Path
) -> None:
    db, data, task_id = curated
    assert _revalidate(db)["quarantined"] == []
    first = export_ids(db, tmp_path / "snaps")
    assert first == [task_id]

    data.unlink()
    report = _revalidate(db)
    assert report["quarantined"] == [task_id]
    with open_store(db).session() as s:
        task = s.get(Task, task_id)
        assert task is not None and task.status == TaskStatus.QUARANTINED
        assert task.quarantine_reason is not None
        assert task.quarantine_reason.startswith("gold_fails_on_new: ")
        assert "FileNotFoundError" in task.quarantine_reason and str(data) in task.quarantine_reason
        check = s.exec(select(HealthCheck).where(HealthCheck.ok == False)).one()  # noqa: E712
        assert check.reason == "gold_fails_on_new" and str(data) in check.message
        assert check.cells["test_scale"]["NN"]["runs"] == ["fail"]
        assert check.cells["test_scale"]["NO"]["outcome"] in ("fail", "error")

    # Left out of snapshots (the changelog retires it with the reason) and scoring by default.
    assert export_ids(db, tmp_path / "snaps") == []
    log = sorted((tmp_path / "snaps").glob("*/CHANGELOG.md"), key=lambda p: p.stat().st_mtime_ns)[-1]
    assert f"## Retired (1)\n\n- {task_id}: quarantined: gold_fails_on_new: " in log.read_text()
    assert export_ids(db, tmp_path / "kept", "--include-quarantined") == [task_id]
    scored = coevo("score", "--db", str(db), "--agent", "noop", "--backend", "local", "--json")
    assert scored.returncode == 0, scored.stderr
    assert json.loads(scored.stdout)["scored"] == 0

    # A schedule's cycle re-validates too (--revalidate N): the healed task is restored there.
    data.write_text("3\n")
    (tmp_path / "repos.txt").write_text("calc\n")
    every = ("--every", "3600", "--repos", str(tmp_path / "repos.txt"), "--no-curate", "--revalidate", "5")
    added = coevo("schedule", "add", "live", *every, "--backend", "local", "--reruns", "1", "--db", str(db))
    assert added.returncode == 0, added.stderr
    cycle = coevo("schedule", "run", "live", "--db", str(db))
    assert cycle.returncode == 0, cycle.stderr
    assert "revalidation: 1 checked, 0 quarantined, 1 restored" in cycle.stdout + cycle.stderr
    with open_store(db).session() as s:
        task = s.get(Task, task_id)
        assert task is not None and task.status == TaskStatus.ACTIVE and task.quarantine_reason is None

    shown = coevo("show-task", "--db", str(db), task_id)
    assert shown.returncode == 0, shown.stderr
    health = shown.stdout.split("\nhealth (")[1].split("\n\n")[0].splitlines()[1:]
    assert [line.split()[1:3] for line in health] == [
        ["ok", "→"],
        ["not", "ok"],
        ["ok", "→"],
    ]
    assert "gold_fails_on_new" in health[1] and "→ quarantined" in health[1]


def export_ids(db: Path, out: Path, *options: str) -> list[str]:
    result = coevo("export", "--db", str(db), "--out", str(out), "--json", *options)
    assert result.returncode == 0, result.stderr
    folder = Path(json.loads(result.stdout)["path"])
    return [json.loads(line)["id"] for line in (folder / "tasks.jsonl").read_text().splitlines()]


def test_no_docker_daemon_is_inconclusive_and_quarantines_nothing(
    curated: tuple[Path, Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, _, task_id = curated
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")
    report = revalidate(open_store(db), RevalidateRequest(all=True, backend="docker", reruns=1))
    assert report.stopped and report.quarantined == []
    assert [(c.task_id, c.ok, c.reason) for c in report.checks] == [(task_id, None, "infrastructure")]
    with open_store(db).session() as s:
        task = s.get(Task, task_id)
        assert task is not None and task.status == TaskStatus.ACTIVE and task.quarantine_reason is None

    shown = coevo("revalidate", "--db", str(db), "--sample", "1", "--backend", "docker")
    assert shown.returncode == 1
    assert f"{task_id}  inconclusive: infrastructure" in shown.stdout
    assert shown.stderr.startswith("error: ") and len(shown.stderr.strip().splitlines()) == 1


def test_samples_rotate_through_every_task(curated: tuple[Path, Path, str]) -> None:
    db, _, task_id = curated
    store = open_store(db)
    with store.session() as s:
        task = s.get(Task, task_id)
        assert task is not None
        for n in (1, 2):  # copies of the task: selection reads only ids and health
            s.add(Task.model_validate({**task.model_dump(), "id": f"{task_id}-copy{n}"}))
    request = RevalidateRequest(sample=1)
    seen = []
    for _ in range(3):
        (chosen,) = select_tasks(store, request)
        seen.append(chosen.id)
        with store.session() as s:
            s.add(HealthCheck(task_id=chosen.id, ok=True))
    assert sorted(seen) == sorted([task_id, f"{task_id}-copy1", f"{task_id}-copy2"])
    (again,) = select_tasks(store, request)
    assert again.id == seen[0]  # all checked: the least recently checked comes round again


def _cell(*runs: str, message: str = "") -> Cell:
    cell = Cell(list(runs))
    cell.message = message
    return cell


@pytest.mark.parametrize(
    ("cells", "expected"),
    [
        ({"m": {"NN": _cell("pass", "pass"), "NO": _cell("fail", "error")}}, "flaky"),
        ({"m": {"NN": _cell("pass", "fail"), "NO": _cell("fail", "fail")}}, "flaky"),
        ({"m": {"NN": _cell("timeout"), "NO": _cell("fail")}}, "timeout"),
        ({"m": {"NN": _cell("error", message="E   boom"), "NO": _cell("fail")}}, "gold_fails_on_new"),
        ({"m": {"NN": _cell("pass"), "NO": _cell("pass")}}, "gold_passes_on_old"),
        ({"m": {"NN": _cell("pass"), "NO": _cell("skipped")}}, "gold_passes_on_old"),
        ({"m": {"NN": _cell("pass"), "NO": _cell("compile_error")}}, ""),
    ],
)
def test_health_verdict_checks_in_order(cells: dict[str, dict[str, Cell]], expected: str) -> None:
    built = BuiltRevision("0" * 40, "ok", "")
    health = health_verdict(Track.GENERATION, built, built, cells)
    assert (health.ok, health.reason) == (expected == "", expected)


def test_a_build_that_fails_now_is_build_failed() -> None:
    broken = BuiltRevision("1" * 40, "failed", "ERROR: No matching distribution found for gone==1.0")
    health = health_verdict(Track.UPDATE, broken, None, {})
    assert (health.ok, health.reason) == (False, "build_failed")
    assert health.message.startswith("rev2 1111111111 failed: ERROR: No matching distribution")
