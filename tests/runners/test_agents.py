"""Agents files are typed, mounts cannot show an agent the answers, and no untrusted agent runs
or is judged on the host: each rule tried on real files, a real store and the real CLI."""

from __future__ import annotations

import os
import re
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
from runners.scoring.agents import Agent, BadAgent, check_mount, load_agents, protected_folders
from runners.scoring.scorer import ScoreOptions, score
from tasks import AgentRun, Repository, Task, open_store
from tests.cli import coevo
from tests.shared import curated_once

EXE = Path(sys.executable).parent / "coevo"
NO_DOCKER = {"DOCKER_HOST": "tcp://127.0.0.1:9"}
"""Nothing listens there: ``--backend auto`` finds no daemon."""


def _agents_file(folder: Path, body: str) -> Path:
    path = folder / "agents.toml"
    path.write_text(body)
    return path


def _load_error(folder: Path, body: str) -> str:
    path = _agents_file(folder, body)
    with pytest.raises(BadAgent) as caught:
        load_agents(path)
    return str(caught.value)


# --- typed keys ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "given", "expected", "shown"),
    [
        ("command", '""', "a non-empty string", "'' (a string)"),
        ("command", "3", "a non-empty string", "3 (an integer)"),
        ("model", "2025", "a string", "2025 (an integer)"),
        ("cutoff", '"June 2025"', "a date", "'June 2025' (a string)"),
        ("cutoff", "12:00:00", "a date", "12:00:00 (a time)"),
        ("cutoff", "20250601", "a date", "20250601 (an integer)"),
        ("timeout", '"1800"', "a positive number of seconds", "'1800' (a string)"),
        ("timeout", "0", "a positive number of seconds", "0 (an integer)"),
        ("timeout", "-5.5", "a positive number of seconds", "-5.5 (a float)"),
        ("timeout", "inf", "a positive number of seconds", "inf (a float)"),
        ("timeout", "1e300", "a positive number of seconds, at most a week", "1e+300 (a float)"),
        ("timeout", "true", "a positive number of seconds", "true (a boolean)"),
        ("network", '"false"', "true or false (unquoted)", "'false' (a string)"),
        ("network", "0", "true or false (unquoted)", "0 (an integer)"),
        ("mount", '["./a"]', "a string", "['./a'] (an array)"),
        ("mount", "{ path = 'a' }", "a string", "{'path': 'a'} (a table)"),
        ("image", "false", "a string", "false (a boolean)"),
        ("image", "2025-06-01", "a string", "2025-06-01 (a date)"),
    ],
)
def test_every_key_has_a_type(tmp_path: Path, key: str, given: str, expected: str, shown: str) -> None:
    command = "" if key == "command" else 'command = "true"\n'
    message = _load_error(tmp_path, f"[agents.mine]\n{command}{key} = {given}\n")
    assert message.startswith(f"{tmp_path / 'agents.toml'}: agent 'mine': {key} must be {expected}")
    assert message.endswith(f", not {shown}") and "\n" not in message


def test_a_quoted_false_is_no_boolean(tmp_path: Path) -> None:
    """``network = "false"`` once turned the network on (a non-empty string is true)."""
    message = _load_error(tmp_path, '[agents.mine]\ncommand = "true"\nnetwork = "false"\n')
    assert "agent 'mine': network must be true or false (unquoted), not 'false' (a string)" in message
    loaded = load_agents(_agents_file(tmp_path, '[agents.mine]\ncommand = "true"\nnetwork = false\n'))
    assert loaded["mine"].network is False


def test_unknown_keys_and_tables_are_errors_with_a_suggestion(tmp_path: Path) -> None:
    path = tmp_path / "agents.toml"
    message = _load_error(tmp_path, '[agents.mine]\ncommand = "true"\ntimout = 30\n')
    assert message == f"{path}: agent 'mine': unknown key 'timout'; did you mean 'timeout'?"
    message = _load_error(tmp_path, '[agents.mine]\ncommand = "true"\nflavour = "x"\n')
    assert message.endswith(
        "unknown key 'flavour'; known: command, model, cutoff, timeout, network, mount, image"
    )
    message = _load_error(tmp_path, '[agent.mine]\ncommand = "true"\n')
    assert message == f"{path}: unknown top-level table 'agent'; did you mean 'agents'?"
    message = _load_error(tmp_path, '[settings]\nx = 1\n[agents.mine]\ncommand = "true"\n')
    assert message == f"{path}: unknown top-level table 'settings'; known: agents"
    message = _load_error(tmp_path, 'command = "true"\n')
    assert message == f"{path}: unknown top-level key 'command'; known: agents"
    message = _load_error(tmp_path, "[agents]\nmine = 3\n")
    assert message == f"{path}: agent 'mine' must be a table ([agents.mine]), not 3 (an integer)"
    assert _load_error(tmp_path, "[agents.mine]\nmodel = 'm'\n") == f"{path}: agent 'mine' needs a command"


def test_a_well_typed_file_loads(tmp_path: Path) -> None:
    (tmp_path / "real-agent").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real-agent")
    path = _agents_file(
        tmp_path,
        """[agents.a]
command = "python3 /agent/run.py {workspace}"
model = "m-1"
cutoff = 2025-06-01
timeout = 90
network = true
mount = "link"
image = "python:3.12-slim"

[agents.b]
command = "run"
cutoff = "2025-06-01T12:00:00+02:00"
timeout = 2.5

[agents.c]
command = "run"
cutoff = 2025-06-01T08:00:00
""",
    )
    agents = load_agents(path)
    assert agents["a"] == Agent(
        name="a",
        command="python3 /agent/run.py {workspace}",
        model="m-1",
        cutoff=datetime(2025, 6, 1, tzinfo=UTC),
        timeout=90.0,
        network=True,
        mount=(tmp_path / "real-agent").resolve(),  # relative to the file, the link resolved
        image="python:3.12-slim",
        source=path,
    )
    assert agents["b"].cutoff == datetime(2025, 6, 1, 10, tzinfo=UTC) and agents["b"].timeout == 2.5
    assert agents["b"].mount is None and agents["b"].network is False
    assert agents["c"].cutoff == datetime(2025, 6, 1, 8, tzinfo=UTC)


# --- mounts --------------------------------------------------------------------------------------


def _mount_error(mount: Path, protected: list[Path], homes: list[Path] | None = None) -> str:
    with pytest.raises(BadAgent) as caught:
        check_mount(mount, protected, homes)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_mounts_that_show_the_system_or_a_home_are_refused(tmp_path: Path) -> None:
    assert "is the root folder" in _mount_error(Path("/"), [])
    for system in ("/etc", "/usr", "/var", "/proc", "/home", "/tmp"):
        assert "is a system folder" in _mount_error(Path(system), []), system
    assert "is a system folder" in _mount_error(Path("/proc/self"), [])  # resolved, then inside /proc
    assert "is a system folder" in _mount_error(Path("/etc/ssl"), [])
    home = tmp_path / "users" / "ada"
    home.mkdir(parents=True)
    assert f"is a user's home folder ({home})" in _mount_error(home, [], homes=[home])
    assert f"holds a user's home folder ({home})" in _mount_error(tmp_path / "users", [], homes=[home])
    (home / "agent").mkdir()
    check_mount(home / "agent", [], homes=[home])  # a folder in a home is fine
    # The real accounts (pwd): this user's home is refused, wherever it is.
    assert re.search(r"is a (system|user's home) folder", _mount_error(Path.home(), []))


def test_missing_folders_and_files_are_refused(tmp_path: Path) -> None:
    assert (
        _mount_error(tmp_path / "nope", [])
        == f"mount {tmp_path / 'nope'} does not exist: give the agent's own folder"
    )
    (tmp_path / "run.py").write_text("print()\n")
    assert "is not a folder" in _mount_error(tmp_path / "run.py", [])


@dataclass
class Layout:
    """A real store with a repository, coevo's folders under ``root``, and an agent's folder."""

    root: Path
    protected: list[Path]
    agent: Path
    clone: Path
    work: Path


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Layout:
    work = tmp_path / "cache" / "coevo" / "work"
    for name, folder in (
        ("COEVO_WORK", work),
        ("COEVO_VENVS", tmp_path / "cache" / "coevo" / "venvs"),
        ("COEVO_SEEDS", tmp_path / "seeds"),
        ("COEVO_M2", tmp_path / "m2"),
        ("COEVO_TOOLS", tmp_path / "tools"),
    ):
        folder.mkdir(parents=True)
        monkeypatch.setenv(name, str(folder))
    (tmp_path / "data").mkdir()
    clone = tmp_path / "clones" / "example"
    (clone / "src").mkdir(parents=True)
    store = open_store(tmp_path / "data" / "coevo.db")
    with store.session() as session:
        session.add(
            Repository(
                name="example", location="https://example.invalid/x.git", path=str(clone), language="python"
            )
        )
    agent = tmp_path / "agents" / "mine"
    agent.mkdir(parents=True)
    return Layout(tmp_path, protected_folders(store), agent, clone, work)


def test_a_mount_of_its_own_is_accepted(layout: Layout) -> None:
    check_mount(layout.agent, layout.protected)
    link = layout.root / "agents" / "link"
    link.symlink_to(layout.agent)
    check_mount(link, layout.protected)


def test_mounts_near_coevo_data_or_a_clone_are_refused(layout: Layout) -> None:
    data = layout.root / "data"  # the store's folder: it holds the database file
    assert f"holds {data / 'coevo.db'}, which an agent must not see" in _mount_error(data, layout.protected)
    (data / "agent").mkdir()
    check_mount(data / "agent", layout.protected)  # beside the database, not holding it
    # COEVO_WORK, an ancestor of it, and coevo's other caches.
    assert f"holds {layout.work}" in _mount_error(layout.root / "cache", layout.protected)
    assert f"is {layout.work}" in _mount_error(layout.work, layout.protected)
    for cache in ("m2", "tools", "cache/coevo/venvs", "seeds"):
        assert f"is {layout.root / cache}," in _mount_error(layout.root / cache, layout.protected)
    # A repository's clone: its history holds the gold tests.
    assert f"is {layout.clone}" in _mount_error(layout.clone, layout.protected)
    assert f"lies inside {layout.clone}" in _mount_error(layout.clone / "src", layout.protected)
    assert f"holds {layout.clone}" in _mount_error(layout.root / "clones", layout.protected)
    # A link to a protected folder is the folder.
    (layout.root / "agents" / "sneaky").symlink_to(layout.clone)
    message = _mount_error(layout.root / "agents" / "sneaky", layout.protected)
    assert f"(really {layout.clone}) is {layout.clone}" in message
    # The Docker socket's folder is a system folder; a socket elsewhere is protected by its path.
    assert Path("/run/docker.sock") in {p.resolve() for p in layout.protected}


def test_mounts_of_running_judges_and_dockers_data_are_refused(layout: Layout) -> None:
    """coevo's scratch root holds the judge trees of runs going on now (the gold's cross files
    among them); Docker's data root holds every container's files and volumes."""
    from runners.sandbox.scratch import scratch_root

    root = scratch_root()
    assert f"is {root}," in _mount_error(root, layout.protected)
    inside = root / "someone-else"
    inside.mkdir(exist_ok=True)
    try:
        assert f"lies inside {root}" in _mount_error(inside, layout.protected)
    finally:
        inside.rmdir()
    for data in (Path("/var/lib/docker"), Path("/var/lib/containerd")):
        assert data in layout.protected
    assert "system folder" in _mount_error(Path("/proc/self"), layout.protected)
    assert "system folder" in _mount_error(Path("/sys/kernel"), layout.protected)


def test_a_bad_mount_in_an_agents_file_stops_scoring(layout: Layout) -> None:
    path = _agents_file(
        layout.root / "agents", f'[agents.mine]\ncommand = "true"\nmount = "{layout.clone}"\n'
    )
    agent = load_agents(path)["mine"]
    store = open_store(layout.root / "data" / "coevo.db")
    with pytest.raises(BadAgent, match=rf"^{path}: agent 'mine': mount {layout.clone} is {layout.clone}, "):
        score(store, agent, options=ScoreOptions(backend="docker"))
    with store.session() as session:
        assert session.exec(select(AgentRun)).all() == []


# --- the backend policy, through the CLI --------------------------------------------------------


@dataclass
class Curated:
    db: Path
    repo: Path
    env: dict[str, str]


@pytest.fixture(scope="module")
def curated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Curated]:
    """The example history curated on the host (built once per run, copied for this module): one
    generation and one update task."""
    shared = curated_once(tmp_path_factory, write_example, name="example").copy(
        tmp_path_factory.mktemp("curated")
    )
    with pytest.MonkeyPatch.context() as patch:
        for name, value in shared.env.items():
            patch.setenv(name, value)
        with open_store(shared.db).session() as s:
            assert len(s.exec(select(Task)).all()) == 2
        yield Curated(shared.db, shared.repo, shared.env)


def _copy(curated: Curated, folder: Path) -> Path:
    db = folder / "coevo.db"
    with sqlite3.connect(curated.db) as source, sqlite3.connect(db) as target:
        source.backup(target)
    return db


def _coevo(
    curated: Curated, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return coevo(*args, env={**os.environ, **curated.env, **(env or {})}, timeout=600)


def _refused(curated: Curated, folder: Path, agents: str, backend: str) -> tuple[list[str], int]:
    """``coevo score --agent`` NAME (the agents file's only agent) on a copy of the store: the
    lines it printed on stderr (it must exit 1) and how many runs it stored."""
    db = _copy(curated, folder)
    path = _agents_file(folder, agents)
    name = re.search(r"\[agents\.(\w+)\]", agents)
    assert name is not None
    result = _coevo(
        curated,
        "score",
        "--agent",
        name.group(1),
        "--agents-file",
        str(path),
        "--db",
        str(db),
        "--backend",
        backend,
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    return result.stderr.splitlines(), _agent_runs(db)


def _agent_runs(db: Path) -> int:
    with open_store(db).session() as session:
        return len(session.exec(select(AgentRun)).all())


def test_local_refuses_an_agent_declaring_an_image(curated: Curated, tmp_path: Path) -> None:
    """Its container is no shelter: the judge would run its test file on the host."""
    lines, runs = _refused(
        curated, tmp_path, '[agents.boxed]\ncommand = "true"\nimage = "python:3.11-slim"\n', "local"
    )
    assert lines == [
        "error: agent boxed would run on the host, where it could read the gold tests (its tests are "
        "judged there, whatever image it declares): use --backend docker, or --trust-agent if you trust it"
    ]
    assert runs == 0


@pytest.mark.docker
def test_an_image_not_on_the_docker_host_is_one_line_and_never_pulled(
    curated: Curated, tmp_path: Path
) -> None:
    """A name coevo does not have could be anyone's image on a public registry: it is refused
    before anything runs, naming the image, not blamed on the daemon."""
    agents = '[agents.boxed]\ncommand = "true"\nimage = "coevo-no-such-image:1"\n'
    lines, runs = _refused(curated, tmp_path, agents, "docker")
    assert lines == [
        f"error: {tmp_path / 'agents.toml'}: agent 'boxed': image 'coevo-no-such-image:1' is not on this "
        "Docker host: build or load it (docker build / docker load); coevo pulls no image"
    ]
    assert runs == 0


def test_a_bad_agents_file_is_one_line(curated: Curated, tmp_path: Path) -> None:
    lines, runs = _refused(
        curated, tmp_path, '[agents.mine]\ncommand = "true"\nnetwork = "false"\n', "docker"
    )
    assert lines == [
        f"error: {tmp_path / 'agents.toml'}: agent 'mine': network must be true or false (unquoted), "
        "not 'false' (a string)"
    ]
    assert runs == 0


def test_auto_without_docker_warns_once_and_never_runs_an_agent_on_the_host(
    curated: Curated, tmp_path: Path
) -> None:
    db = _copy(curated, tmp_path)
    refused = _coevo(
        curated, "score", "--agent", "mine", "--agent-cmd", "true", "--db", str(db), env=NO_DOCKER
    )
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        "error: agent mine would run on the host, where it could read the gold tests: "
        "use --backend docker, or --trust-agent if you trust it"
    ]
    assert _agent_runs(db) == 0

    scored = _coevo(
        curated, "score", "--agent", "noop", "--track", "update", "--db", str(db), "--json", env=NO_DOCKER
    )
    assert scored.returncode == 0, scored.stderr
    assert scored.stderr.splitlines() == [
        "warning: no Docker daemon answers: scoring on the host runs each repository's code here "
        "(use --backend docker to isolate it)"
    ]
    assert scored.stdout.startswith("{") and '"scored": 1' in scored.stdout  # the warning is not in the JSON
    assert _agent_runs(db) == 1

    curated_again = _coevo(curated, "curate", "--db", str(db), "--json", env=NO_DOCKER)
    assert curated_again.returncode == 0, curated_again.stderr
    assert curated_again.stderr.splitlines() == [
        "warning: no Docker daemon answers: curating on the host runs each repository's code here "
        "(use --backend docker to isolate it)"
    ]

    snapshots = str(db.parent / "snapshots")
    ran = _coevo(
        curated, "run", str(curated.repo), "--db", str(db), "--snapshots", snapshots, "--json",
        "--site", str(db.parent / "site"), env=NO_DOCKER
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr.splitlines() == [
        "warning: no Docker daemon answers: curating on the host runs each repository's code here "
        "(use --backend docker to isolate it)"
    ]
