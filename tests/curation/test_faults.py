"""coevo's own faults are never verdicts: a missing toolchain, a Docker daemon that does not
answer, a --redo over tasks agents were scored on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlmodel import select

import miner
from coevo.example import write_example
from curation import CurateRequest, curate
from runners.scoring.agents import find_agent
from runners.scoring.scorer import ScoreOptions, leaderboard, score
from tasks import (
    AgentRun,
    CuratedPair,
    CurationRecord,
    CurationRun,
    DropReason,
    RunStatus,
    Task,
    TaskStatus,
    open_store,
)
from tests import cli
from tests.curation.histories import MAIN, TEST, _java_class, _java_test, _m, _t
from tests.gitrepo import GitRepo
from tests.runners.maven_projects import JUPITER_DEPS, pom

COEVO = str(Path(sys.executable).parent / "coevo")
NO_DAEMON = "tcp://127.0.0.1:9"
"""A Docker host nothing listens on."""


def _coevo(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return cli.coevo(*args, env={**os.environ, **env})


def _count(db: Path, table: type) -> int:
    with open_store(db).session() as session:
        return len(session.exec(select(table)).all())


@pytest.mark.maven
def test_a_jdk_coevo_lacks_is_env_failed_naming_it_and_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COEVO_WORK", str(tmp_path / "work"))
    repo = GitRepo(tmp_path / "future-java")
    subtract = _m("public int subtract(int a, int b)", "return a - b;")
    # Java 6 builds now (raised to the oldest level the JDK compiles): a release no JDK has yet.
    repo.commit("initial", "2015-03-01T10:00:00+00:00", {
        "pom.xml": pom("future", JUPITER_DEPS, release="99"),
        f"{MAIN}/Adder.java": _java_class("Adder", _m("public int add(int a, int b)", "return a + b;")),
    })  # fmt: skip
    repo.commit("subtract", "2015-03-02T10:00:00+00:00", {
        f"{MAIN}/Subtractor.java": _java_class("Subtractor", subtract),
        f"{TEST}/SubtractorTest.java": _java_test(
            "SubtractorTest", "Subtractor", _t("testSubtract", "assertEquals(1, subject.subtract(3, 2));")
        ),
    })  # fmt: skip
    db = tmp_path / "c.db"
    miner.mine(open_store(db), miner.MineRequest(location=str(repo.path), language="java"))
    assert not curate(open_store(db), CurateRequest(backend="local", workers=1, reruns=1)).errors
    with open_store(db).session() as session:
        (record,) = session.exec(select(CurationRecord)).all()
        (pair,) = session.exec(select(CuratedPair)).all()
    assert record.drop_reason == DropReason.ENV_FAILED, record
    assert "no installed JDK compiles Java 99" in record.detail
    assert (pair.rev1_build, pair.rev2_build) == ("env_failed", "env_failed")
    # Nothing new without --retry-env; with it, the pair is curated again (a coevo or machine
    # with that JDK would build it) and its rows are replaced, not added to.
    again = curate(open_store(db), CurateRequest(backend="local", workers=1, reruns=1))
    assert again.run.pairs_done == 0
    retried = curate(open_store(db), CurateRequest(backend="local", workers=1, reruns=1, retry_env=True))
    assert retried.run.pairs_done == 1
    with open_store(db).session() as session:
        records = session.exec(select(CurationRecord)).all()
        pairs = session.exec(select(CuratedPair)).all()
    assert len(records) == 1 and len(pairs) == 1 and pairs[0].run_id == retried.run.id


@pytest.mark.docker
def test_no_docker_daemon_records_nothing_and_the_next_run_curates_it_all(tmp_path: Path) -> None:
    write_example(tmp_path / "example")
    db = tmp_path / "c.db"
    env = {"COEVO_WORK": str(tmp_path / "work")}
    assert _coevo("mine", str(tmp_path / "example"), "--db", str(db), env=env).returncode == 0
    down = _coevo("curate", "--db", str(db), "--backend", "docker", env={**env, "DOCKER_HOST": NO_DAEMON})
    assert down.returncode == 1, down.stdout + down.stderr
    lines = down.stderr.strip().splitlines()
    assert len(lines) == 1 and "no Docker daemon answers" in lines[0], down.stderr
    assert "0 pairs curated, 2 left for the next run" in lines[0], lines[0]
    assert _count(db, CuratedPair) == 0 and _count(db, CurationRecord) == 0 and _count(db, Task) == 0
    with open_store(db).session() as session:
        (run,) = session.exec(select(CurationRun)).all()
    assert run.status == RunStatus.FAILED and "no Docker daemon answers" in run.message

    up = _coevo("curate", "--db", str(db), "--backend", "docker", "--reruns", "1", env=env)
    assert up.returncode == 0, up.stderr
    with open_store(db).session() as session:
        tracks = sorted(str(t.track) for t in session.exec(select(Task)).all())
    assert tracks == ["generation", "update"]


def test_redo_over_scored_tasks_keeps_their_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COEVO_WORK", str(tmp_path / "work"))
    write_example(tmp_path / "example")
    db = tmp_path / "c.db"
    miner.mine(open_store(db), miner.MineRequest(location=str(tmp_path / "example")))
    assert not curate(open_store(db), CurateRequest(backend="local", workers=1, reruns=1)).errors
    options = ScoreOptions(backend="local", test_timeout=120, reruns=1)
    assert score(open_store(db), find_agent("noop"), options=options).scored == 2
    with open_store(db).session() as session:
        tasks = {t.id for t in session.exec(select(Task)).all()}
        runs = {r.id: r.task_id for r in session.exec(select(AgentRun)).all()}

    # The same pairs curated again: the same tasks, still active, their runs untouched.
    redo = curate(open_store(db), CurateRequest(backend="local", workers=1, reruns=1, redo=True))
    assert not redo.errors and redo.run.pairs_done == 2
    with open_store(db).session() as session:
        now = {t.id: t.status for t in session.exec(select(Task)).all()}
        assert {r.id: r.task_id for r in session.exec(select(AgentRun)).all()} == runs
        assert _count(db, CuratedPair) == 2  # replaced, not added to
    assert now == dict.fromkeys(tasks, TaskStatus.ACTIVE)

    # Curated again with a stricter rule, the tasks vanish: their runs stay, the tasks are retired
    # and leave the leaderboard.
    strict = CurateRequest(backend="local", workers=1, reruns=1, redo=True, max_span_hours=-1)
    assert not curate(open_store(db), strict).errors
    with open_store(db).session() as session:
        assert {t.id: t.status for t in session.exec(select(Task)).all()} == dict.fromkeys(
            tasks, TaskStatus.RETIRED
        )
        assert {r.id for r in session.exec(select(AgentRun)).all()} == set(runs)
        labels = {str(r.drop_reason) for r in session.exec(select(CurationRecord)).all()}
    assert labels == {"pair_span_too_long"}
    assert leaderboard(open_store(db)) == []
