"""Agents written to cheat, run for real: none gets a success, none changes what other runs read.

Every agent here runs through `coevo score` in Docker on real curated tasks of both languages
and both tracks (the Python example, the Java curation history). Before and after them the
shared state is fingerprinted — the built worktrees, the venvs, the Maven repository, the
agents' own folders — and must not change; the gold must still score 100 afterwards.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlmodel import select

from coevo.example import write_example
from tasks import AgentRun, Task, open_store
from tests.curation.histories import java_curation_history
from tests.runners import adversaries as a
from tests.shared import Shared, curated_once

COEVO = str(Path(sys.executable).parent / "coevo")


@dataclass
class Curated:
    """A store with one generation and one update task, and the folders scoring shares."""

    root: Path
    db: Path
    env: dict[str, str]
    tasks: dict[str, Task]
    """By track."""

    def fingerprint(self) -> dict[str, str]:
        """Every file of the shared state: built worktrees, venvs, the Maven repository."""
        found: dict[str, str] = {}
        for name in ("COEVO_WORK", "COEVO_VENVS", "COEVO_M2"):
            found |= fingerprint(Path(self.env[name]), prefix=name)
        return found

    def score(
        self, agent: str, agents_file: Path | None = None, *args: str
    ) -> subprocess.CompletedProcess[str]:
        command = [COEVO, "score", "--agent", agent, "--db", str(self.db), "--timeout", "120", *args]
        if agents_file is not None:
            command += ["--agents-file", str(agents_file)]
        return subprocess.run(
            command, capture_output=True, text=True, env={**os.environ, **self.env}, check=False
        )

    def runs(self, agent: str) -> dict[str, AgentRun]:
        """The agent's runs by track."""
        with open_store(self.db).session() as session:
            rows = session.exec(select(AgentRun).where(AgentRun.agent == agent)).all()
        by_id = {task.id: track for track, task in self.tasks.items()}
        return {by_id[run.task_id]: run for run in rows}


def fingerprint(root: Path, prefix: str = "") -> dict[str, str]:
    """Path → sha256 (files) or link target, without following links; lock files aside."""
    found: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = os.path.join(folder, name)
            if name.endswith(".lock"):
                continue
            key = f"{prefix}:{os.path.relpath(path, root)}"
            if os.path.islink(path):
                found[key] = "link:" + os.readlink(path)
            else:
                with open(path, "rb") as handle:
                    found[key] = hashlib.sha256(handle.read()).hexdigest()
    return found


def _curated(root: Path, shared: Shared) -> Curated:
    """``shared``'s store and built revisions copied into ``root``, with venvs and a Maven
    repository of the module's own: every folder the cheats are checked not to change is its own."""
    env = {
        "COEVO_WORK": str(root / "work"),
        "COEVO_VENVS": str(root / "venvs"),
        "COEVO_M2": str(root / "m2"),
    }
    seed = root / "m2" / "org" / "example" / "seed" / "1.0" / "seed-1.0.jar"
    seed.parent.mkdir(parents=True)
    seed.write_bytes(b"a jar nobody may change")
    db = root / "coevo.db"
    shared.copy(root)
    with open_store(db).session() as session:
        tasks = {str(t.track): t for t in session.exec(select(Task)).all()}
    assert set(tasks) == {"generation", "update"}, tasks
    return Curated(root, db, env, tasks)


@pytest.fixture(scope="module")
def python_tasks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Curated]:
    root = tmp_path_factory.mktemp("py-adversaries")
    shared = curated_once(tmp_path_factory, write_example, name="example")
    yield _curated(root, shared)


@pytest.fixture(scope="module")
def java_tasks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Curated]:
    root = tmp_path_factory.mktemp("java-adversaries")
    until = datetime(2024, 5, 5, tzinfo=UTC)  # one task of each track
    shared = curated_once(tmp_path_factory, java_curation_history, "java", reruns=1, until=until)
    yield _curated(root, shared)


def _no_success(run: AgentRun) -> None:
    assert run.success_rate == 0.0 and not any(o["success"] for o in run.outcomes.values()), run.outcomes


def _successful_but_not_strict(runs: dict[str, AgentRun]) -> None:
    """Calling the changed code and asserting nothing: a success as published, never a strict one."""
    assert {track: (run.success_rate, run.strict_success_rate) for track, run in runs.items()} == {
        "generation": (1.0, 0.0),
        "update": (1.0, 0.0),
    }, {track: run.outcomes for track, run in runs.items()}


ONCE = ("--reruns", "1")
"""For agents whose cheat does not depend on being run again (the poisoner's and the coin's do)."""


def _gold_is_perfect(curated: Curated, *args: str) -> None:
    result = curated.score("gold", None, "--backend", "docker", *ONCE, *args)
    assert result.returncode == 0, result.stderr
    runs = curated.runs("gold")
    rates = {track: (run.success_rate, run.strict_success_rate) for track, run in runs.items()}
    assert rates == {"generation": (1.0, 1.0), "update": (1.0, 1.0)}, {t: r.outcomes for t, r in runs.items()}


@pytest.mark.docker
@pytest.mark.slow
def test_python_cheats_get_nothing_and_change_nothing(python_tasks: Curated, tmp_path: Path) -> None:
    _gold_is_perfect(python_tasks)
    before = python_tasks.fingerprint()
    agents = a.write_agents(
        tmp_path,
        {
            "thief": {"run.sh": a.COPY, "test_shapes.py": a.PY_THIEF},
            "sibling": {"run.sh": a.COPY, "test_shapes.py": a.PY_SIBLING},
            "poisoner": {"run.sh": a.COPY, "test_shapes.py": a.PY_POISONER},
            "skipper": {"run.sh": a.COPY, "test_shapes.py": a.PY_SKIPPER},
            "shallow": {"run.sh": a.COPY, "test_shapes.py": a.PY_SHALLOW},
            "bare": {"run.sh": a.COPY, "test_shapes.py": a.PY_BARE},
            "sniffer": {"run.sh": a.COPY, "test_shapes.py": a.PY_SNIFFER},
            "garbler": {"run.sh": a.COPY, "test_shapes.py": a.PY_GARBLER},
            "coin": {"run.sh": a.COPY, "test_shapes.py": a.PY_COIN},
        },
    )
    folders = fingerprint(tmp_path)
    for agent in ("thief", "sibling", "poisoner", "skipper", "shallow", "bare", "sniffer", "garbler", "coin"):
        reruns = () if agent in ("poisoner", "coin") else ONCE
        result = python_tasks.score(agent, agents, "--backend", "docker", *reruns)
        assert result.returncode == 0, (agent, result.stderr)
    for agent in ("thief", "sibling"):
        runs = python_tasks.runs(agent)
        for track, method in (("generation", "test_triangle"), ("update", "test_rectangle")):
            _no_success(runs[track])
            message = runs[track].outcomes[method]["message"]
            assert "no gold found" in message, message
            # What it could reach held no test_triangle (generation) or only the old test_rectangle.
            assert "test_coevo_" not in message and "__pycache__" not in message, message
    _successful_but_not_strict(python_tasks.runs("shallow"))
    # Asserting nothing while mutants make the code raise; failing wherever a phase shows.
    _successful_but_not_strict(python_tasks.runs("bare"))
    _successful_but_not_strict(python_tasks.runs("sniffer"))
    for track, run in python_tasks.runs("sniffer").items():
        assert all(o["old"] != "fail" for o in run.outcomes.values()), (track, run.outcomes)
    # Garbled results: the agent's error, each task stored, nothing raised.
    garbled = python_tasks.runs("garbler")
    assert {track: run.exec_fail_rate for track, run in garbled.items()} == {"generation": 1.0, "update": 1.0}
    assert all("cannot read" in o["message"] for run in garbled.values() for o in run.outcomes.values())
    # Runs that disagree: flaky, no success.
    for track, run in python_tasks.runs("coin").items():
        assert run.success_rate == 0.0 and run.exec_fail_rate == 1.0, (track, run.outcomes)
        assert all("flaky on the new code" in o["message"] for o in run.outcomes.values()), run.outcomes
    skipped = python_tasks.runs("skipper")["generation"].outcomes["test_triangle"]
    assert (skipped["outcome"], skipped["old"], skipped["success"]) == ("pass", "skipped", False), skipped
    # Its conftest.py can land only in its own judge tree, where its own reruns load it: it passes
    # once, then fails (flaky, no success); nothing shared changes, and the gold scores 100 after.
    for track, run in python_tasks.runs("poisoner").items():
        assert run.success_rate == 0.0, (track, run.outcomes)
        assert all(
            "flaky on the new code: its 3 runs gave pass, " in o["message"] for o in run.outcomes.values()
        )
    assert python_tasks.fingerprint() == before
    assert fingerprint(tmp_path) == folders  # /agent is read-only
    _gold_is_perfect(python_tasks, "--redo")


@pytest.mark.docker
@pytest.mark.maven
@pytest.mark.slow
def test_java_cheats_get_nothing_and_change_nothing(java_tasks: Curated, tmp_path: Path) -> None:
    _gold_is_perfect(java_tasks)
    before = java_tasks.fingerprint()
    kinds = ("thief", "sibling", "poisoner", "shallow", "pit", "tells")
    agents = a.write_agents(tmp_path, {kind: {"run.sh": a.COPY, **a.java_files(kind)} for kind in kinds})
    for agent in kinds:
        result = java_tasks.score(agent, agents, "--backend", "docker", *ONCE)
        assert result.returncode == 0, (agent, result.stderr)
    for agent in ("thief", "sibling"):
        runs = java_tasks.runs(agent)
        for track, method in (
            ("generation", "SubtractorTest.testSubtract()"),
            ("update", "GreeterTest.testGreet()"),
        ):
            _no_success(runs[track])
            message = runs[track].outcomes[method]["message"]
            assert "no gold found; tried: []" in message, message
    _successful_but_not_strict(java_tasks.runs("shallow"))
    # PIT's "no mutations" line forged, its minion ended, the focal class deleted, its report
    # rewritten from a process of the test's own: nothing of it reaches strictness or MutOnPass.
    tricked = java_tasks.runs("pit")
    _successful_but_not_strict(tricked)
    assert tricked["update"].mutation_on_pass == 0.0, tricked["update"].mutants
    # The launcher's discovery line printed by a real test, javac quoting "error: file not found".
    told = java_tasks.runs("tells")
    assert set(told) == {"generation", "update"}, told  # no task skipped
    assert (told["generation"].success_rate, told["update"].compile_fail_rate) == (1.0, 1.0), told
    poisoned = java_tasks.runs("poisoner")
    assert {track: run.pass_rate for track, run in poisoned.items()} == {"generation": 1.0, "update": 1.0}
    assert java_tasks.fingerprint() == before
    _gold_is_perfect(java_tasks, "--redo")


@pytest.mark.maven
@pytest.mark.slow
def test_the_judge_tree_is_clean_on_the_host_too(
    python_tasks: Curated, java_tasks: Curated, tmp_path: Path
) -> None:
    """A trusted agent on the host could read anything; still, the tree it is judged in holds no gold."""
    agents = a.write_agents(
        tmp_path,
        {"sibling": {"run.sh": a.COPY, "test_shapes.py": a.PY_SIBLING, **a.java_files("sibling")}},
    )
    # On the host the agent works in its workspace: /agent is its folder there.
    text = agents.read_text().replace("sh /agent/run.sh", f"sh {tmp_path / 'sibling' / 'run.sh'}")
    agents.write_text(text)
    (tmp_path / "sibling" / "run.sh").write_text(f'cp "{tmp_path / "sibling"}/$(basename "$1")" "$1"\n')
    for curated, methods in (
        (python_tasks, ("test_triangle", "test_rectangle")),
        (java_tasks, ("SubtractorTest.testSubtract()", "GreeterTest.testGreet()")),
    ):
        result = curated.score("sibling", agents, "--backend", "local", "--trust-agent", *ONCE)
        assert result.returncode == 0, result.stderr
        runs = curated.runs("sibling")
        for (track, run), method in zip(sorted(runs.items()), methods, strict=True):
            _no_success(run)
            assert "no gold found" in run.outcomes[method]["message"], (track, run.outcomes)


@pytest.mark.docker
@pytest.mark.slow
def test_what_the_agent_leaves_is_read_safely(python_tasks: Curated, tmp_path: Path) -> None:
    store = python_tasks.db
    agents = a.write_agents(
        tmp_path,
        {
            "environ": {"run.sh": a.link_to("/proc/self/environ")},
            "store": {"run.sh": a.link_to(str(store))},
            "parent": {"run.sh": a.PARENT_LINK},
            "fifo": {"run.sh": a.FIFO},
            "huge": {"run.sh": a.HUGE},
            "terminal": {"run.sh": a.TERMINAL},
            "harvester": {"run.sh": a.HARVESTER},
        },
    )
    folders = fingerprint(tmp_path)
    for agent in ("environ", "store", "parent", "fifo", "huge", "terminal", "harvester"):
        result = python_tasks.score(agent, agents, "--backend", "docker", *ONCE)
        assert result.returncode == 0, (agent, result.stderr)
    said = {
        "environ": "tests/test_shapes.py is a symbolic link, not a regular file: not read",
        "store": "tests/test_shapes.py is a symbolic link, not a regular file: not read",
        "parent": "tests is a symbolic link, not a folder",
        "fifo": "tests/test_shapes.py is a FIFO, not a regular file: not read",
        "huge": "tests/test_shapes.py has 28000000 bytes, more than the 524288 allowed: not read",
    }
    host_secret = os.environ.get("PATH", "")
    for agent, message in said.items():
        for track, run in python_tasks.runs(agent).items():
            _no_success(run)
            assert all(message in o["message"] for o in run.outcomes.values()), (agent, track, run.outcomes)
            stored = run.diff + run.log + json.dumps(run.outcomes)
            assert host_secret not in stored and "SQLite format" not in stored and len(stored) < 100_000
    # The terminal's escapes are stored as written but shown escaped.
    gid = python_tasks.tasks["generation"].id
    shown = subprocess.run(
        [COEVO, "show-run", "terminal", gid, "--db", str(store)], capture_output=True, text=True
    )
    assert "\\x1b[2J\\x1b[31mred\\x1b]0;title\\x07" in shown.stdout and "\x1b" not in shown.stdout
    assert python_tasks.runs("terminal")["generation"].tokens == 5

    # Nothing a harvester keeps survives its task: a second pass (and --redo) finds nothing.
    assert python_tasks.score("harvester", agents, "--backend", "docker", "--redo", *ONCE).returncode == 0
    for run in python_tasks.runs("harvester").values():
        assert "HARVEST found=[ ]" in run.log, run.log
        assert "/agent" not in run.log.split("kept=")[1] and "/task" not in run.log.split("kept=")[1], run.log
    assert fingerprint(tmp_path) == folders


@pytest.mark.docker
def test_an_agent_that_cannot_start_fails_the_run_and_stores_nothing(
    python_tasks: Curated, tmp_path: Path
) -> None:
    copy = tmp_path / "c.db"
    with sqlite3.connect(python_tasks.db) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    (tmp_path / "empty").mkdir()
    agents = tmp_path / "agents.toml"
    agents.write_text(
        '[agents.missing-script]\ncommand = "python3 /agent/nope.py {test_file}"\nmount = "empty"\n\n'
        '[agents.missing-program]\ncommand = "no-such-agent-program {test_file}"\n'
    )
    curated = Curated(tmp_path, copy, python_tasks.env, python_tasks.tasks)
    for agent, said in (
        ("missing-script", "agent missing-script: /agent/nope.py does not exist in its mount"),
        ("missing-program", "agent missing-program: no-such-agent-program is not a command where it runs"),
    ):
        result = curated.score(agent, agents, "--backend", "docker")
        assert result.returncode == 1 and said in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert curated.runs(agent) == {}
