"""What the tests of agents written to cheat share: a curated store copied for them, scoring it
through `coevo score`, and fingerprints of the state no agent may change."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from sqlmodel import select

from tasks import AgentRun, Task, open_store
from tests import cli
from tests.shared import Shared

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
        command = ["score", "--agent", agent, "--db", str(self.db), "--timeout", "120", *args]
        if agents_file is not None:
            command += ["--agents-file", str(agents_file)]
        return cli.coevo(*command, env={**os.environ, **self.env})

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


def curated_copy(root: Path, shared: Shared) -> Curated:
    """``shared``'s store and built revisions copied into ``root``, with venvs and a Maven
    repository of the module's own: every folder the cheats are checked not to change is its own."""
    env = {
        "COEVO_WORK": str(root / "work"),
        "COEVO_VENVS": str(root / "venvs"),
        "COEVO_SEEDS": str(root / "venvs"),  # fingerprinted with the venvs
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


def no_success(run: AgentRun) -> None:
    assert run.success_rate == 0.0 and not any(o["success"] for o in run.outcomes.values()), run.outcomes


def successful_but_not_strict(runs: dict[str, AgentRun]) -> None:
    """Calling the changed code and asserting nothing: a success as published, never a strict one."""
    assert {track: (run.success_rate, run.strict_success_rate) for track, run in runs.items()} == {
        "generation": (1.0, 0.0),
        "update": (1.0, 0.0),
    }, {track: run.outcomes for track, run in runs.items()}


ONCE = ("--reruns", "1")
"""For agents whose cheat does not depend on being run again (the poisoner's and the coin's do)."""


def gold_is_perfect(curated: Curated, *args: str) -> None:
    result = curated.score("gold", None, "--backend", "docker", *ONCE, *args)
    assert result.returncode == 0, result.stderr
    runs = curated.runs("gold")
    rates = {track: (run.success_rate, run.strict_success_rate) for track, run in runs.items()}
    assert rates == {"generation": (1.0, 1.0), "update": (1.0, 1.0)}, {t: r.outcomes for t, r in runs.items()}
