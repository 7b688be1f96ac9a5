"""`coevo curate` on fixture histories with one case of every class and drop reason, by execution.

Java runs real Maven builds and the JUnit console launcher (test_curate_java.py, a file of its
own so that xdist runs the two histories at once), Python real venvs and pytest, both on the
host (the Docker backend runs the same build tools; tests/runners/test_backends.py shows the two
agree). The Python history also takes the crash test: curation killed with SIGKILL again and
again, then finished, equals an uninterrupted run.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import col, select

import miner
from curation import CurateRequest, curate, funnel, task_id
from runners.java.tools import MAVEN_VERSION
from tasks import (
    Candidate,
    CuratedPair,
    CurationRecord,
    CurationRun,
    Repository,
    RevisionPair,
    RunStatus,
    Task,
    TestChangeKind,
    open_store,
)
from tests import cli
from tests.curation.histories import PYTHON_EXPECTED, TEST_TIMEOUT, python_curation_history
from tests.gitrepo import GitRepo


@dataclass
class Curated:
    repo: GitRepo
    db: Path
    work: Path
    language: str
    expected: dict[str, dict[str, str]]


def _mine(repo: GitRepo, db: Path, language: str) -> None:
    miner.mine(open_store(db), miner.MineRequest(location=str(repo.path), language=language))


@pytest.fixture(scope="module")
def python_curated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Curated]:
    yield from _curated(tmp_path_factory.mktemp("python"), "python", python_curation_history, PYTHON_EXPECTED)


def _curated(
    root: Path, language: str, history: Any, expected: dict[str, dict[str, str]]
) -> Iterator[Curated]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COEVO_WORK", str(root / "work"))
        repo = history(root / "calc")
        db = root / "coevo.db"
        _mine(repo, db, language)
        # Two runs a cell show the flaky test (it alternates); the third of the default adds nothing
        # here. Every kind: the label-by-label checks include unchanged tests' negative records.
        request = CurateRequest(
            backend="local", test_timeout=TEST_TIMEOUT, workers=1, reruns=2, kinds=tuple(TestChangeKind)
        )
        report = curate(open_store(db), request)
        assert report.errors == {}
        assert report.run.status == "completed"
        yield Curated(repo, db, root / "work", language, expected)


def _labels(curated: Curated, db: Path | None = None) -> dict[str, dict[str, str]]:
    """rev2's commit label → {test method: class or drop reason}."""
    commit_of = {sha: label for label, sha in curated.repo.shas.items()}
    found: dict[str, dict[str, str]] = {}
    with open_store(db or curated.db).session() as s:
        rows = s.exec(
            select(CurationRecord, Candidate, RevisionPair)
            .join(Candidate, Candidate.id == CurationRecord.candidate_id)  # type: ignore[arg-type]
            .join(RevisionPair, RevisionPair.id == CurationRecord.pair_id)  # type: ignore[arg-type]
        ).all()
    for record, candidate, pair in rows:
        label = str(record.drop_reason) if record.drop_reason else str(record.label)
        found.setdefault(commit_of[pair.rev2], {})[candidate.test_method] = label
    return found


def _tasks(db: Path, runs: bool = True) -> dict[str, dict[str, Any]]:
    """Each task as stored, but its dates; without each cell's runs unless ``runs``."""
    with open_store(db).session() as s:
        tasks = {t.id: t.model_dump(exclude={"curated_at", "mined_at"}) for t in s.exec(select(Task)).all()}
    if not runs:
        for task in tasks.values():
            for cells in task["matrix"].values():
                for cell in cells.values():
                    cell.pop("runs")
    return tasks


def _funnel(db: Path) -> dict[str, Any]:
    overall, _ = funnel(open_store(db))
    return overall.as_json()


def _check_everything(curated: Curated) -> None:
    assert _labels(curated) == curated.expected

    counts = _funnel(curated.db)
    every = [label for case in curated.expected.values() for label in case.values()]
    drops = {"new_on_new_not_pass", "old_on_old_not_pass", "no_focal_code", "test_refactoring_only",
             "deps_refactoring_only", "test_utility_co_change", "pair_span_too_long", "flaky",
             "build_failed", "env_failed", "timeout", "no_coverage"}  # fmt: skip
    assert counts["drops"] == dict(Counter(label for label in every if label in drops))
    assert set(counts["drops"]) == drops  # every drop reason has its case
    assert counts["classes"] == dict(Counter(label for label in every if label not in drops))
    assert counts["records"] == counts["candidates"]["inserted"] + counts["candidates"]["updated"] + counts[
        "candidates"
    ].get("unchanged_with_changed_dependencies", 0)
    assert counts["pairs_curated"] == len(curated.expected) == 17
    # The hanging test ran once: a timeout decides, and every further run (its other cell's too)
    # would wait it out again.
    with open_store(curated.db).session() as s:
        hung = s.exec(select(CurationRecord).where(CurationRecord.drop_reason == "timeout")).one()
    runs = {cell: (run["outcome"], run["runs"]) for cell, run in hung.cells.items()}
    assert runs == {"NN": ("timeout", ["timeout"]), "NO": ("not_run", [])}, hung.cells
    # Three pairs were decided before building (refactoring, test utility, span); two did not build.
    assert counts["builds"] == {"ok": 12, "not_built": 3, "build_failed": 1, "env_failed": 1}
    assert counts["tasks"] == {"generation": 1, "update": 1}

    shas = curated.repo.shas
    tasks = _tasks(curated.db)
    with open_store(curated.db).session() as s:
        identity = s.exec(select(Repository)).one().identity
    assert identity == f"root:{shas['initial']}"  # a history without a remote is its root commit
    gen_file, upd_file = (
        ("src/test/java/demo/SubtractorTest.java", "src/test/java/demo/GreeterTest.java")
        if curated.language == "java"
        else ("tests/test_subtractor.py", "tests/test_greeter.py")
    )
    gen_id = task_id(identity, shas["initial"], shas["generation"], gen_file, "generation")
    upd_id = task_id(identity, shas["generation pass old"], shas["update positive"], upd_file, "update")
    assert set(tasks) == {gen_id, upd_id}
    gen, upd = tasks[gen_id], tasks[upd_id]
    assert (gen["track"], gen["rev1"], gen["rev2"], gen["language"]) == (
        "generation",
        shas["initial"],
        shas["generation"],
        curated.language,
    )
    assert gen["rev2_date"].isoformat() == "2024-05-02T10:00:00+00:00"  # the task's date is rev2's
    assert gen["status"] == "active"
    with open_store(curated.db).session() as s:
        assert all(task.mined_at is not None for task in s.exec(select(Task)).all())
    if curated.language == "java":
        assert gen["test_ids"] == ["demo.SubtractorTest#testSubtract"]
        assert [f["method"] for f in gen["focal_methods"]] == ["Subtractor.subtract(int,int)"]
        assert upd["test_ids"] == ["demo.GreeterTest#testGreet"]
        # What each revision was built with and what it resolved go with the task, for scoring.
        for name in ("rev1", "rev2"):
            assert [c["name"] for c in gen["build_records"][name]] == ["jdk", "maven"]
            assert f"maven=={MAVEN_VERSION}" in gen["installed"][name]
            assert any(
                entry.startswith("org.junit.jupiter:junit-jupiter-api:") for entry in gen["installed"][name]
            )
        with open_store(curated.db).session() as s:
            pair = s.exec(select(CuratedPair).where(CuratedPair.pair_id == s.get(Task, gen_id).pair_id)).one()
        assert (pair.build_records, pair.installed) == (gen["build_records"], gen["installed"])
    else:
        assert gen["test_ids"] == ["tests/test_subtractor.py::test_subtract"]
        assert [f["method"] for f in gen["focal_methods"]] == ["subtract"]
        assert upd["test_ids"] == ["tests/test_greeter.py::test_greet"]
    assert gen["focal_methods"][0]["provenance"] == "coverage"
    assert "+" in gen["gold_patch"] and (
        "testSubtract" in gen["gold_patch"] or "test_subtract" in gen["gold_patch"]
    )
    assert "Hello, " in upd["production_diff"] and "Hello, Bob!" in upd["gold_patch"]
    assert gen["env_spec"]["language"] == curated.language
    method = gen["test_methods"][0]
    assert gen["matrix"][method]["NN"] == {"outcome": "pass", "runs": ["pass"] * 2, "message": ""}
    assert (
        gen["matrix"][method]["NO"]["outcome"] == "compile_error" and gen["matrix"][method]["NO"]["message"]
    )
    assert set(upd["matrix"][upd["test_methods"][0]]) == {"OO", "ON", "NO", "NN"}

    # Every worktree was released once no pending pair needed it.
    assert list(curated.work.iterdir()) and not list(curated.work.glob("*/*/work"))


@pytest.mark.slow
def test_python_curation_gives_every_label_task_and_funnel_count(python_curated: Curated) -> None:
    _check_everything(python_curated)


@pytest.mark.slow
def test_a_second_run_does_nothing_and_redo_gives_the_same_tasks(
    python_curated: Curated, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COEVO_WORK", str(python_curated.work))
    before = _tasks(python_curated.db)
    again = curate(open_store(python_curated.db), CurateRequest(backend="local", test_timeout=TEST_TIMEOUT))
    assert (again.run.pairs_done, sum(again.labels.values())) == (0, 0)
    redo = curate(
        open_store(python_curated.db),
        CurateRequest(backend="local", test_timeout=TEST_TIMEOUT, redo=True, since=_date("2024-05-02"),
                      until=_date("2024-05-05")),
    )  # fmt: skip
    assert redo.run.pairs_done == 3  # generation, generation pass old, update positive
    assert _tasks(python_curated.db).keys() == before.keys()
    # The tasks (all in the window) ran each cell again as often as the default says: three (the
    # fixture ran two).
    runs = {
        len(cell["runs"])
        for task in _tasks(python_curated.db).values()
        for cells in task["matrix"].values()
        for cell in cells.values()
    }
    assert runs == {3}, runs
    assert _labels(python_curated) == python_curated.expected


def _date(text: str) -> Any:
    from datetime import UTC, datetime

    return datetime.fromisoformat(text).replace(tzinfo=UTC)


CRASH_UNTIL = "2024-05-13"
"""The crash tests curate the history's first 11 pairs (up to the test utility co-change), every
kind of decision but the slow ones (the flaky test's reruns, the failed builds, the hanging test),
and compare them with the uninterrupted run's; with no flaky test among them, each test is run
once (``--reruns 1``) and must still decide as the uninterrupted run's three runs did."""


def _before_crash_until(curated: Curated) -> dict[str, dict[str, str]]:
    """The uninterrupted run's labels of the pairs the crash tests curate."""
    dates = dict(
        line.split(" ", 1)
        for line in subprocess.run(
            ["git", "-C", str(curated.repo.path), "log", "--format=%H %cs"],
            capture_output=True, text=True, check=True,
        ).stdout.splitlines()
    )  # fmt: skip
    kept = {label for label, sha in curated.repo.shas.items() if dates[sha] < CRASH_UNTIL}
    expected = {label: case for label, case in curated.expected.items() if label in kept}
    assert len(expected) == 11, expected
    return expected


def _curated_pairs(db: Path) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30) as conn:
        try:
            return int(conn.execute("SELECT count(*) FROM curatedpair").fetchone()[0])
        except sqlite3.OperationalError:
            return 0


@pytest.mark.slow
def test_sigkill_at_any_moment_then_a_final_run_equals_an_uninterrupted_run(
    python_curated: Curated, tmp_path: Path
) -> None:
    db = tmp_path / "killed.db"
    _mine(python_curated.repo, db, "python")
    env = {
        **os.environ,
        "COEVO_WORK": str(tmp_path / "work"),
    }
    exe = Path(sys.executable).parent / "coevo"
    command = [str(exe), "curate", "--db", str(db), "--backend", "local", "--timeout", str(TEST_TIMEOUT),
               "--workers", "2", "--until", CRASH_UNTIL, "--reruns", "1", "--kinds", "all"]  # fmt: skip
    expected = _before_crash_until(python_curated)
    for kill_after in (1, 4, 7):
        proc = subprocess.Popen(command, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)  # fmt: skip
        deadline = time.monotonic() + 300
        while _curated_pairs(db) < kill_after and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert proc.poll() is None, (
            f"curation ended before the kill: {proc.stderr.read() if proc.stderr else ''}"
        )
        os.killpg(proc.pid, signal.SIGKILL)  # the whole process tree, workers included
        proc.wait()
        assert _curated_pairs(db) < len(expected)
    final = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert final.returncode == 0, final.stderr
    assert "curation: completed" in final.stdout

    assert _labels(python_curated, db) == expected
    # Both tasks are in the window; one run each here against two there.
    assert _tasks(db, runs=False) == _tasks(python_curated.db, runs=False)


def _curation_runs(db: Path) -> list[CurationRun]:
    store = open_store(db, create=False)
    try:
        with store.session() as s:
            return list(s.exec(select(CurationRun).order_by(col(CurationRun.id))).all())
    finally:
        store.close()  # no connection of this process stays open beside the runs it watches


def _gone(group: int, within: float = 60) -> bool:
    """Whether every process of the process group has ended (within ``within`` seconds)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


@pytest.mark.slow
def test_sigterm_leaves_the_run_interrupted_and_the_next_start_marks_a_killed_one(
    python_curated: Curated, tmp_path: Path
) -> None:
    """SIGTERM: the run stops, its workers with it, and says it was interrupted. SIGKILL: the run
    cannot say so, and stays ``running`` until the next `coevo curate` sees its process gone."""
    db = tmp_path / "stopped.db"
    _mine(python_curated.repo, db, "python")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {
        **os.environ,
        "COEVO_WORK": str(tmp_path / "work"),
        "TMPDIR": str(temporary),
    }
    exe = Path(sys.executable).parent / "coevo"
    command = [str(exe), "curate", "--db", str(db), "--backend", "local", "--timeout", str(TEST_TIMEOUT),
               "--workers", "2", "--until", CRASH_UNTIL, "--reruns", "1", "--kinds", "all"]  # fmt: skip

    def started(after_pairs: int) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(command, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)  # fmt: skip
        deadline = time.monotonic() + 300
        while _curated_pairs(db) < after_pairs and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert proc.poll() is None, f"curation ended first: {proc.stderr.read() if proc.stderr else ''}"
        return proc

    terminated = started(after_pairs=1)
    terminated.send_signal(signal.SIGTERM)  # the main process only, as a service manager would
    assert terminated.wait(timeout=120) == 128 + signal.SIGTERM
    assert terminated.stderr is not None and "interrupted" in terminated.stderr.read().decode()
    assert _gone(terminated.pid), "a worker outlived the stopped curation"
    expected = _before_crash_until(python_curated)
    assert _curated_pairs(db) < len(expected), "the pairs in flight were not stopped"
    [run] = _curation_runs(db)
    assert run.status == RunStatus.INTERRUPTED and "SIGTERM" in run.message, run
    assert run.finished_at is not None

    killed = started(after_pairs=_curated_pairs(db) + 1)
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()
    assert [r.status for r in _curation_runs(db)] == [RunStatus.INTERRUPTED, RunStatus.RUNNING]
    left = list((temporary / f"coevo-{os.getuid()}").iterdir())

    final = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert final.returncode == 0, final.stderr
    first, second, last = _curation_runs(db)
    assert (first.status, second.status, last.status) == (
        RunStatus.INTERRUPTED, RunStatus.INTERRUPTED, RunStatus.COMPLETED
    )  # fmt: skip
    assert f"(pid {killed.pid})" in second.message and "run again to resume" in second.message
    assert not [folder for folder in left if folder.exists()], "a dead run's scratch folder is left"
    assert _labels(python_curated, db) == expected


def test_funnel_and_curate_cli_on_an_uncurated_database(tmp_path: Path) -> None:
    repo = python_curation_history(tmp_path / "calc")
    db = tmp_path / "c.db"
    _mine(repo, db, "python")
    shown = cli.coevo("funnel", "--db", str(db), "--json")
    assert shown.returncode == 0, shown.stderr
    counts = json.loads(shown.stdout)
    assert counts["overall"]["pairs"] == 17 and counts["overall"]["records"] == 0
    assert counts["overall"]["candidates"] == {
        "inserted": 12,
        "updated": 5,
        "unchanged_with_changed_dependencies": 2,
    }
    text = cli.coevo("funnel", "--db", str(db))
    assert "candidate pairs" in text.stdout and "17" in text.stdout
    bad = cli.coevo("curate", "--db", str(db), "--repo", "nope")
    assert bad.returncode == 1 and bad.stderr.splitlines() == [
        "error: no repository named 'nope' in the database"
    ]
