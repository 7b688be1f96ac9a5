"""Agents written to cheat, run for real on Python tasks: none gets a success, none changes what
other runs read (the Java ones: test_adversaries_java.py, a file of its own so that xdist runs the
two at once).

Every agent here runs through `coevo score` in Docker on real curated tasks of both tracks (the
Python example). Before and after them the shared state is fingerprinted — the built worktrees,
the venvs, the Maven repository, the agents' own folders — and must not change; the gold must
still score 100 afterwards.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from tests import cli
from tests.runners import adversaries as a
from tests.runners.judged import (
    ONCE,
    Curated,
    fingerprint,
    gold_is_perfect,
    no_success,
    successful_but_not_strict,
)


@pytest.mark.docker
@pytest.mark.slow
def test_python_cheats_get_nothing_and_change_nothing(python_tasks: Curated, tmp_path: Path) -> None:
    gold_is_perfect(python_tasks)
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
            no_success(runs[track])
            message = runs[track].outcomes[method]["message"]
            assert "no gold found" in message, message
            # What it could reach held no test_triangle (generation) or only the old test_rectangle.
            assert "test_coevo_" not in message and "__pycache__" not in message, message
    successful_but_not_strict(python_tasks.runs("shallow"))
    # Asserting nothing while mutants make the code raise; failing wherever a phase shows.
    successful_but_not_strict(python_tasks.runs("bare"))
    successful_but_not_strict(python_tasks.runs("sniffer"))
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
    gold_is_perfect(python_tasks, "--redo")


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
            no_success(run)
            assert all(message in o["message"] for o in run.outcomes.values()), (agent, track, run.outcomes)
            stored = run.diff + run.log + json.dumps(run.outcomes)
            assert host_secret not in stored and "SQLite format" not in stored and len(stored) < 100_000
    # The terminal's escapes are stored as written but shown escaped.
    gid = python_tasks.tasks["generation"].id
    shown = cli.coevo("show-run", "terminal", gid, "--db", str(store))
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
