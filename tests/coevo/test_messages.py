"""Messages as a user reads them: one line that names the cause, and project data printed as written.

Two real failures that print a useless first line: a project whose ``addopts`` names a plugin
that is not installed (pytest's first line is its usage), and a test using a fixture that does
not exist (pytest's report begins with where the test is). A history holds both, and a
parametrized failure; ``coevo run``, ``funnel``, ``env build``, ``env test``, ``score`` and
``show-run`` run as a user runs them, on the host. Where ``$SHAPES_PLUGIN`` is set, the
project's ``conftest.py`` provides the option its ``addopts`` names, as a plugin would (an option
no known plugin provides: coevo installs pytest-asyncio for ``--asyncio-mode`` itself).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlmodel import select

from tasks import CurationRecord, Task, Track, open_store
from tests.cli import coevo
from tests.gitrepo import GitRepo

EXE = Path(sys.executable).parent / "coevo"
USAGE_CAUSE = "unrecognized arguments: --shapes-mode=strict"
FIXTURE_CAUSE = "fixture 'missing_db' not found"
PARAMETER_CAUSE = "AssertionError: assert 'm' == 'cm'"
TESTS = "tests/test_shapes.py"

SHAPES = "def area(w, h):\n    return w * h\n"
PERIMETER = "\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n"
DIAGONAL = "\n\ndef diagonal(w, h):\n    return (w * w + h * h) ** 0.5\n"
VOLUME = "\n\ndef volume(w, h, d):\n    return w * h * d\n"
AREA_TEST = (
    "import pytest\n\nfrom shapes import *  # noqa: F403\n\n\ndef test_area():\n    assert area(2, 3) == 6\n"
)
PERIMETER_TEST = "\n\ndef test_perimeter(missing_db):\n    assert perimeter(2, 3) == 10\n"
DIAGONAL_TEST = """

def test_diagonal():
    assert diagonal(3, 4) == 5


@pytest.mark.parametrize("unit", ["cm", "m"])
def test_units(unit):
    assert unit == "cm"
"""
VOLUME_TEST = "\n\ndef test_volume():\n    assert volume(1, 2, 3) == 6\n"
PLUGIN = """\
import os


def pytest_addoption(parser):
    if os.environ.get("SHAPES_PLUGIN"):  # where the project's own plugin is installed
        parser.addoption("--shapes-mode")
"""
AGENT_TEST = (
    "from shapes import diagonal\n\n\ndef test_diagonal(missing_db):\n    assert diagonal(3, 4) == 5\n"
)
"""What a careless agent writes: the fixture it uses exists nowhere."""


@dataclass
class Curated:
    repo: GitRepo
    db: Path
    env: dict[str, str]
    run: subprocess.CompletedProcess[str]

    def coevo(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return coevo(*args, env=env or self.env, timeout=900)


def shapes_history(path: Path) -> GitRepo:
    """Good commits whose ``addopts`` needs the plugin ``conftest.py`` stands for, a test with a
    missing fixture, a parametrized failure; then the plugin goes and later revisions fail to
    collect."""
    repo = GitRepo(path)
    code, tests = SHAPES, AREA_TEST
    repo.commit(
        "initial",
        "2024-05-01T10:00:00+00:00",
        {
            "requirements.txt": "pytest\n",
            "pytest.ini": "[pytest]\naddopts = --shapes-mode=strict\n",
            "conftest.py": PLUGIN,
            "shapes.py": code,
            TESTS: tests,
        },
    )
    for label, day, more_code, more_tests in (
        ("perimeter", "02", PERIMETER, PERIMETER_TEST),
        ("diagonal", "03", DIAGONAL, DIAGONAL_TEST),
    ):
        code, tests = code + more_code, tests + more_tests
        repo.commit(label, f"2024-05-{day}T10:00:00+00:00", {"shapes.py": code, TESTS: tests})
    repo.commit("no plugin", "2024-05-04T10:00:00+00:00", {"conftest.py": None})
    repo.commit(
        "volume", "2024-05-05T10:00:00+00:00", {"shapes.py": code + VOLUME, TESTS: tests + VOLUME_TEST}
    )
    return repo


@pytest.fixture(scope="module")
def curated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Curated]:
    root = tmp_path_factory.mktemp("messages")
    env = {
        **os.environ,
        "COEVO_WORK": str(root / "work"),
        "SHAPES_PLUGIN": "1",
    }
    repo = shapes_history(root / "shapes")
    db = root / "coevo.db"
    result = Curated(repo, db, env, subprocess.CompletedProcess([], 0))
    snapshots = str(root / "snapshots")
    result.run = result.coevo(
        "run",
        str(repo.path),
        "--backend",
        "local",
        "--reruns",
        "1",
        "--db",
        str(db),
        "--snapshots",
        snapshots,
        "--site",
        str(root / "site"),
    )
    yield result


@pytest.mark.slow
def test_funnel_names_the_cause_of_every_drop(curated: Curated) -> None:
    assert curated.run.returncode == 0, curated.run.stderr
    text = curated.coevo("funnel", "--db", str(curated.db))
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("dropped because"))
    causes = [line.rstrip() for line in lines[start + 1 :] if line.strip()]
    unplugged = curated.repo.shas["no plugin"][:10]  # rev1 of the last pair: built first, failed first
    perimeter = [line for line in causes if line.startswith("new_on_new_not_pass") and "missing_db" in line]
    assert [line.split(None, 2)[1:] for line in perimeter] == [["1", f"NN error: setup: {FIXTURE_CAUSE}"]]
    units = [line for line in causes if "[m]" in line]  # a parametrized id's bracket, as written
    assert [line.split(None, 2)[2] for line in units] == [f"NN fail: [m]: {PARAMETER_CAUSE}"]
    built = [line for line in causes if line.startswith("build_failed")]
    assert built and all(USAGE_CAUSE in line for line in built), built
    assert built == [f"build_failed             1  rev1 {unplugged}: __main__.py: error: {USAGE_CAUSE}"]
    assert all(USAGE_CAUSE in line or FIXTURE_CAUSE in line or PARAMETER_CAUSE in line for line in causes)

    data = json.loads(curated.coevo("funnel", "--db", str(curated.db), "--json").stdout)
    dropped = data["overall"]["causes"]
    assert dropped["new_on_new_not_pass"] == {
        f"NN error: setup: {FIXTURE_CAUSE}": 1,
        f"NN fail: [m]: {PARAMETER_CAUSE}": 1,
    }
    assert sum(dropped["build_failed"].values()) == data["overall"]["drops"]["build_failed"]


@pytest.mark.slow
def test_stored_details_and_cells_keep_the_whole_message(curated: Curated) -> None:
    with open_store(curated.db).session() as session:
        records = {
            record.detail.splitlines()[0]: record for record in session.exec(select(CurationRecord)).all()
        }
    fixture = records[f"NN error: setup: {FIXTURE_CAUSE}"]
    assert "available fixtures:" in fixture.detail and "available fixtures:" in fixture.cells["NN"]["message"]
    unplugged = curated.repo.shas["no plugin"][:10]
    usage = records[f"rev1 {unplugged}: __main__.py: error: {USAGE_CAUSE}"]
    assert "ERROR: usage: __main__.py [options]" in usage.detail  # the whole output, below


@pytest.mark.slow
def test_env_build_and_test_show_the_cause_and_bracketed_ids_as_written(curated: Curated) -> None:
    head = f"{curated.repo.path}@{curated.repo.shas['volume']}"
    for command in (("env", "build", head), ("env", "test", head, f"{TESTS}::test_area")):
        failed = curated.coevo(*command, "--backend", "local")
        assert failed.returncode == 1
        assert f"build      FAILED: __main__.py: error: {USAGE_CAUSE}" in failed.stdout.splitlines()

    diagonal = f"{curated.repo.path}@{curated.repo.shas['diagonal']}"
    ids = [
        f"{TESTS}::test_perimeter",
        f"{TESTS}::test_units[cm]",
        f"{TESTS}::test_units[m]",
        f"{TESTS}::test_units",
    ]
    ran = curated.coevo("env", "test", diagonal, *ids, "--backend", "local")
    assert ran.returncode == 0, ran.stderr
    # The build record (chosen …, installed …) comes between the build and the tests.
    lines = [line for line in ran.stdout.splitlines()[2:] if not line.startswith(("chosen ", "installed "))]
    assert lines == [
        "build      ok",
        f"error          {TESTS}::test_perimeter  setup: {FIXTURE_CAUSE}",
        f"pass           {TESTS}::test_units[cm]",
        f"fail           {TESTS}::test_units[m]  {PARAMETER_CAUSE}",
        f"fail           {TESTS}::test_units  [m]: {PARAMETER_CAUSE}",
    ]


@pytest.mark.slow
def test_show_run_names_the_cause(curated: Curated, tmp_path: Path) -> None:
    with open_store(curated.db).session() as session:
        task = session.exec(select(Task).where(Task.track == Track.GENERATION)).one()
    assert task.test_methods == ["test_diagonal"]
    drifted_db = tmp_path / "drifted.db"
    with sqlite3.connect(curated.db) as source, sqlite3.connect(drifted_db) as target:
        source.backup(target)
    written = tmp_path / "agent_test.py"
    written.write_text(AGENT_TEST)
    scored = curated.coevo(
        "score", "--agent", "careless", "--agent-cmd", f"cp {written} {{workspace}}/{{test_file}}",
        "--backend", "local", "--trust-agent", "--db", str(curated.db),
    )  # fmt: skip
    assert scored.returncode == 0, scored.stderr
    shown = curated.coevo("show-run", "careless", task.id, "--db", str(curated.db))
    assert shown.returncode == 0, shown.stderr
    assert f"  exec_fail     test_diagonal — setup: {FIXTURE_CAUSE}" in shown.stdout.splitlines()

    # Scored where the plugin is missing, the gold cannot pass: the run is harness_fail, and says
    # why. (In a copy of the store made before: a gold check is kept per task and environment,
    # and the environment's key does not know the plugin.)
    without_plugin = {key: value for key, value in curated.env.items() if key != "SHAPES_PLUGIN"}
    scored = curated.coevo(
        "score", "--agent", "gold", "--backend", "local", "--db", str(drifted_db), env=without_plugin
    )
    assert scored.returncode == 0, scored.stderr
    shown = curated.coevo("show-run", "gold", task.id, "--db", str(drifted_db))
    line = shown.stdout.splitlines()[1]
    # "the gold does not hold in this environment: …" (the revisions built earlier are reused)
    assert line.startswith("  harness_fail  test_diagonal — "), shown.stdout
    assert line.endswith(f"__main__.py: error: {USAGE_CAUSE}"), shown.stdout


def test_bracketed_project_data_prints_as_written(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "extras")
    pyproject = (
        '[project]\nname = "extras"\nversion = "0.1"\n\n'
        '[project.optional-dependencies]\ntest = ["pytest"]\ndev = ["ruff"]\n'
    )
    repo.commit("initial", "2024-05-01T10:00:00+00:00", {"pyproject.toml": pyproject, "extras.py": ""})
    shown = coevo("env", "show", str(repo.path))
    assert "install    pip install -e .[test,dev]" in shown.stdout.splitlines(), shown.stdout
    db = str(tmp_path / "c.db")
    mined = coevo("mine", str(repo.path), "--db", db)
    assert mined.returncode == 0, mined.stderr
    missing = coevo("candidates", "--repo", "x[bold]y[/bold]", "--db", db)
    assert missing.stderr.splitlines() == ["error: no repository named 'x[bold]y[/bold]' (known: extras)"]
