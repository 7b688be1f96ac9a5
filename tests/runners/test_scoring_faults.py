"""Scoring: a fault of coevo's environment is never charged to an agent, and loses no result."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlmodel import select

import miner
from coevo.example import write_example
from curation import CurateRequest, curate
from runners.sandbox.docker_sandbox import LABEL, OWNER_LABEL, docker_client
from runners.scoring.agents import find_agent
from runners.scoring.scorer import ScoreOptions, leaderboard, score
from tasks import AgentRun, GoldCheck, Task, open_store
from tests import cli
from tests.curation.small import mined_and_curated
from tests.gitrepo import GitRepo
from tests.shared import curated_once

COEVO = str(Path(sys.executable).parent / "coevo")


def _runs(db: Path, agent: str) -> dict[str, AgentRun]:
    with open_store(db).session() as session:
        return {r.task_id: r for r in session.exec(select(AgentRun).where(AgentRun.agent == agent)).all()}


def _gold_scores_when_checked_again(db: Path, task_id: str, options: ScoreOptions) -> None:
    """The gold check's verdicts forgotten (same environment key), the gold is checked again and
    succeeds: what the test changed in the environment was the whole cause."""
    with open_store(db).session() as session:
        for check in session.exec(select(GoldCheck)).all():
            session.delete(check)
    assert score(open_store(db), find_agent("gold"), options=options, redo=True).errors == {}
    assert _runs(db, "gold")[task_id].success_rate == 1.0


@pytest.mark.docker
def test_no_docker_daemon_stores_no_score_and_redo_keeps_the_old_ones(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    shared = curated_once(tmp_path_factory, write_example, name="example").copy(tmp_path)
    db = shared.db
    env = {**os.environ, **shared.env}
    down = {**env, "DOCKER_HOST": "tcp://127.0.0.1:9"}

    def coevo(*args: str, environment: dict[str, str] = env) -> subprocess.CompletedProcess[str]:
        return cli.coevo(*args, "--db", str(db), env=environment)

    failed = coevo("score", "--agent", "gold", "--backend", "docker", environment=down)
    assert failed.returncode == 1
    assert len(failed.stderr.strip().splitlines()) == 1 and "no Docker daemon answers" in failed.stderr
    assert _runs(db, "gold") == {}  # nothing charged, nothing to skip next time

    assert coevo("score", "--agent", "gold", "--backend", "docker", "--reruns", "1").returncode == 0
    good = {task: run.id for task, run in _runs(db, "gold").items()}
    assert len(good) == 2 and all(run.success_rate == 1.0 for run in _runs(db, "gold").values())
    again = coevo("score", "--agent", "gold", "--backend", "docker", "--redo", environment=down)
    assert again.returncode == 1 and "no Docker daemon answers" in again.stderr
    assert {task: run.id for task, run in _runs(db, "gold").items()} == good  # --redo lost nothing


def test_where_the_gold_does_not_pass_no_agent_is_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task curated where the tests found what they need, scored where they do not: the gold
    fails there, so every agent's run is harness_fail — never exec_fail — and out of the rates."""
    monkeypatch.setenv("COEVO_WORK", str(tmp_path / "work"))
    repo = GitRepo(tmp_path / "needs-env")
    test = (
        "import os\n\nfrom tools import {names}\n\n\n"
        "def test_double():\n    assert os.environ['TOOLS_FIXTURE'] == 'here'\n    assert double(2) == 4\n"
    )
    repo.commit("initial", "2026-01-01T10:00:00+00:00", {
        "requirements.txt": "# pytest is all the tests need\n",
        "tools.py": "def double(x):\n    return x + x\n",
        "tests/test_tools.py": test.format(names="double"),
    })  # fmt: skip
    repo.commit("halve", "2026-01-02T10:00:00+00:00", {
        "tools.py": "def double(x):\n    return x + x\n\n\ndef half(x):\n    return x / 2\n",
        "tests/test_tools.py": test.format(names="double, half")
        + "\n\ndef test_half():\n    assert os.environ['TOOLS_FIXTURE'] == 'here'\n    assert half(4) == 2\n",
    })  # fmt: skip
    db = tmp_path / "c.db"
    miner.mine(open_store(db), miner.MineRequest(location=str(repo.path)))
    with monkeypatch.context() as curating:
        curating.setenv("TOOLS_FIXTURE", "here")
        assert not curate(open_store(db), CurateRequest(backend="local", workers=1, reruns=1)).errors
    with open_store(db).session() as session:
        (task,) = session.exec(select(Task)).all()

    options = ScoreOptions(backend="local", test_timeout=120, reruns=1)
    for agent in ("gold", "noop"):
        assert score(open_store(db), find_agent(agent), options=options).errors == {}
        run = _runs(db, agent)[task.id]
        assert run.status == "harness_fail" and run.harness_fail_rate == 1.0, run.outcomes
        (outcome,) = run.outcomes.values()
        assert outcome["outcome"] == "harness_fail"
        assert "the developer's test_half does not pass on the new code here" in outcome["message"]
        assert "KeyError: 'TOOLS_FIXTURE'" in outcome["message"], outcome["message"]
    with open_store(db).session() as session:
        (check,) = session.exec(select(GoldCheck)).all()  # checked once, kept for the environment
    assert not check.ok and check.task_id == task.id
    standings = {s.agent: s for s in leaderboard(open_store(db))}
    assert standings["gold"].harness_fail_rate == 100.0 and standings["noop"].exec_fail_rate == 0.0

    # Where the environment gives the tests what they need, the gold holds and agents are judged.
    monkeypatch.setenv("TOOLS_FIXTURE", "here")
    _gold_scores_when_checked_again(db, task.id, options)


def test_where_the_gold_passes_on_the_old_code_no_agent_is_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A generation task whose old code fails the new test where it was curated and passes it
    where it is scored: nothing discriminates there, so gold and noop are harness_fail, never
    judged — and judged again where the old code fails it."""
    repo = GitRepo(tmp_path / "env-fixed")
    test = "from tools import double\n\n\ndef test_zero():\n    assert double(0) == 0\n"
    repo.commit("initial", "2026-01-01T10:00:00+00:00", {
        "requirements.txt": "# pytest is all the tests need\n",
        "tools.py": "import os\n\n\ndef double(x):\n    return x * (2 if os.environ.get('FIXED') else 3)\n",
        "tests/test_tools.py": test,
    })  # fmt: skip
    repo.commit("fix double", "2026-01-02T10:00:00+00:00", {
        "tools.py": "def double(x):\n    return x * 2\n",
        "tests/test_tools.py": test + "\n\ndef test_two():\n    assert double(2) == 4\n",
    })  # fmt: skip
    db = mined_and_curated(repo, tmp_path, monkeypatch, "python")
    with open_store(db).session() as session:
        (task,) = session.exec(select(Task)).all()
    assert task.track == "generation" and task.test_methods == ["test_two"]

    options = ScoreOptions(backend="local", test_timeout=120, reruns=1)
    with monkeypatch.context() as fixed:
        fixed.setenv("FIXED", "1")
        for agent in ("gold", "noop"):
            assert score(open_store(db), find_agent(agent), options=options).errors == {}
            run = _runs(db, agent)[task.id]
            assert run.status == "harness_fail" and run.harness_fail_rate == 1.0, run.outcomes
            (outcome,) = run.outcomes.values()
            assert "passes on the old code here too: nothing discriminates" in outcome["message"], outcome

    _gold_scores_when_checked_again(db, task.id, options)


@pytest.mark.maven
def test_a_junit_4_10_project_runs_curates_and_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``junit:junit-dep:4.10``: the vintage engine refuses JUnit 4 before 4.12, so coevo runs its
    tests with the launcher's own JUnit 4; its task is curated and the gold scores 100."""
    from tests.curation.histories import MAIN, TEST, _java_class, _m
    from tests.runners.maven_projects import JUNIT_DEP_DEPS, pom

    monkeypatch.setenv("COEVO_WORK", str(tmp_path / "work"))
    test = (
        "package demo;\n\nimport static org.junit.Assert.assertEquals;\n\nimport org.junit.Test;\n\n"
        "public class SubtractorTest {\n    @Test\n    public void subtracts() {\n"
        "        assertEquals(1, new Subtractor().subtract(3, 2));\n    }\n}\n"
    )
    repo = GitRepo(tmp_path / "old-junit")
    repo.commit("initial", "2012-03-01T10:00:00+00:00", {
        "pom.xml": pom("old", JUNIT_DEP_DEPS, release="8"),
        f"{MAIN}/Adder.java": _java_class("Adder", _m("public int add(int a, int b)", "return a + b;")),
    })  # fmt: skip
    subtract = _m("public int subtract(int a, int b)", "return a - b;")
    repo.commit("subtract", "2012-03-02T10:00:00+00:00", {
        f"{MAIN}/Subtractor.java": _java_class("Subtractor", subtract),
        f"{TEST}/SubtractorTest.java": test,
    })  # fmt: skip
    db = tmp_path / "c.db"
    miner.mine(open_store(db), miner.MineRequest(location=str(repo.path), language="java"))
    assert not curate(open_store(db), CurateRequest(backend="local", workers=1, reruns=1)).errors
    with open_store(db).session() as session:
        (task,) = session.exec(select(Task)).all()
    assert task.test_ids == ["demo.SubtractorTest#subtracts"]
    assert (
        score(open_store(db), find_agent("gold"), options=ScoreOptions(backend="local", reruns=1)).errors
        == {}
    )
    run = _runs(db, "gold")[task.id]
    assert (run.pass_rate, run.success_rate) == (1.0, 1.0), run.outcomes


_SLEEPER = """#!/bin/sh
# Sleeps on the task of track $1 until the test lets it through (a file in its own folder).
if [ "$1" = "$2" ] && [ ! -e /agent/go ]; then
    touch /workspace/.agent-sleeps
    exec sleep 600
fi
"""


@pytest.mark.docker
@pytest.mark.slow
def test_sigkill_of_score_while_an_agent_runs_then_a_new_score_leaves_nothing_behind(tmp_path: Path) -> None:
    """`coevo score` killed (SIGKILL: no cleanup) while its agent's container runs: the container
    and the scratch folder stay. The next `coevo score` removes them, scores what is missing and
    keeps what was stored: every task once."""
    write_example(tmp_path / "example")
    db = tmp_path / "c.db"
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {
        **os.environ,
        "COEVO_WORK": str(tmp_path / "work"),
        "TMPDIR": str(temporary),
    }
    for args in (("mine", str(tmp_path / "example")), ("curate", "--backend", "local", "--reruns", "1")):
        done = cli.coevo(*args, "--db", str(db), env=env)
        assert done.returncode == 0, done.stderr
    with open_store(db).session() as session:
        tasks = sorted(session.exec(select(Task)).all(), key=lambda t: (t.rev2_date, t.id))
    assert len(tasks) == 2
    agents = tmp_path / "agents"
    (agents / "sleeper").mkdir(parents=True)
    (agents / "sleeper" / "run.sh").write_text(_SLEEPER)
    (agents / "agents.toml").write_text(
        f'[agents.sleeper]\ncommand = "sh /agent/run.sh {{track}} {tasks[1].track}"\n'
        'mount = "sleeper"\ntimeout = 900\n'
    )
    command = [COEVO, "score", "--agent", "sleeper", "--agents-file", str(agents / "agents.toml"),
               "--db", str(db), "--backend", "docker", "--timeout", "120"]  # fmt: skip
    scratch_root = temporary / f"coevo-{os.getuid()}"

    killed = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 900
    while not _holds(scratch_root, ".agent-sleeps") and killed.poll() is None:
        assert time.monotonic() < deadline, "the agent never started"
        time.sleep(0.5)
    assert killed.poll() is None, killed.stderr.read() if killed.stderr else ""
    first = _runs(db, "sleeper")
    assert set(first) == {tasks[0].id}  # the first task is scored and stored
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()

    client = docker_client()

    def debris() -> tuple[list[str], list[str]]:
        containers = [
            c.id
            for c in client.containers.list(all=True, filters={"label": LABEL}, ignore_removed=True)
            if (c.labels.get(OWNER_LABEL) or "").startswith(f"{killed.pid}-")
        ]
        folders = [f.name for f in scratch_root.iterdir() if f.name.startswith(f"{killed.pid}-")]
        return containers, folders

    containers, folders = debris()
    assert containers and folders, "the kill left nothing: the test shows nothing"
    assert client.containers.get(containers[0]).status == "running"

    (agents / "sleeper" / "go").touch()
    again = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    assert again.returncode == 0, again.stderr
    assert "1 tasks scored, 1 already scored" in again.stdout
    assert debris() == ([], [])
    runs = _runs(db, "sleeper")
    assert set(runs) == {task.id for task in tasks}
    assert runs[tasks[0].id].id == first[tasks[0].id].id  # kept, not scored again
    with open_store(db).session() as session:
        assert len(session.exec(select(AgentRun).where(AgentRun.agent == "sleeper")).all()) == 2


def _holds(root: Path, name: str) -> bool:
    """Whether a file ``name`` is anywhere under ``root``, while the scorer adds and removes the
    folders there (os.walk passes over a folder removed under it; pathlib's rglob raises)."""
    return any(name in files for _, _, files in os.walk(root))
