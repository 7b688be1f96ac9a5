"""Agents under test: declared in a TOML file or given inline, plus the built-in ``gold`` and ``noop``.

An agents file holds only ``[agents.NAME]`` tables::

    [agents.my-agent]
    command = "python3 /agent/run.py --workspace {workspace} --prompt {prompt}"
    model = "some-model-2025-06"
    cutoff = 2025-06-01        # the model's training cutoff: --model-cutoff scores only later tasks
    timeout = 1800             # seconds
    network = false            # the agent's container gets no network unless true
    mount = "./my-agent"       # a folder the container sees, read-only, at /agent
    image = ""                 # the image to run in; default: the task's own environment

Every key is typed: ``command`` a non-empty string; ``model``, ``mount`` and ``image``
strings; ``cutoff`` a TOML date or date-time, or an ISO date string; ``timeout`` a positive
number; ``network`` a TOML boolean (``"false"`` is an error, not false). A wrong type or an
unknown key or table is a :class:`BadAgent` error naming the file, the agent and the key.

``mount`` is resolved against the agents file's folder. Before any run, :func:`check_mount`
refuses a mount that is ``/``, a top-level system folder, a user's home, or that holds, is or
lies inside a folder with the answers (:func:`protected_folders`: the database's folder,
coevo's caches and built worktrees, the repositories' clones) or the Docker socket.

The command is a template; its placeholders are ``{workspace}``, ``{prompt}``,
``{test_file}`` (relative to the workspace), ``{methods}`` (comma-separated), ``{language}``
and ``{track}``. It runs with the workspace as its working folder.
"""

from __future__ import annotations

import difflib
import os
import pwd
import shlex
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url
from sqlmodel import select

from tasks import CoevoError, Repository, Store

from ..environments.revisions import work_root
from ..java.maven import maven_repository
from ..java.tools import tools_dir
from ..python.venvs import seeds_root, venvs_root
from ..sandbox.scratch import scratch_root

BUILTIN = ("gold", "noop")
_PLACEHOLDERS = ("workspace", "prompt", "test_file", "methods", "language", "track")
_SYSTEM_FOLDERS = frozenset(
    Path("/", name)
    for name in (
        "bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "media", "mnt",
        "opt", "proc", "root", "run", "sbin", "snap", "srv", "sys", "tmp", "usr", "var",
    )
)  # fmt: skip
"""Top-level folders of the system: never an agent's own folder."""
_KERNEL_FOLDERS = tuple(Path("/", name) for name in ("proc", "sys", "dev", "run", "etc", "boot"))
"""Nothing inside these is an agent's folder either: the kernel's and the system's state."""
_DOCKER_SOCKETS = (Path("/var/run/docker.sock"), Path("/run/docker.sock"))
_DOCKER_DATA = (Path("/var/lib/docker"), Path("/var/lib/containerd"))
"""Docker's and containerd's data roots by default: every container's files and volumes."""
MAX_TIMEOUT = 7 * 24 * 3600.0
"""Seconds an agent's ``timeout`` may be at most (a week)."""


class BadAgent(CoevoError):
    """An agents file or agent definition that cannot be used."""


@dataclass(frozen=True)
class Agent:
    name: str
    command: str = ""
    """The command template; empty for the built-ins."""
    model: str = ""
    cutoff: datetime | None = None
    timeout: float = 1800.0
    network: bool = False
    mount: Path | None = None
    """The agent's own folder (resolved), seen read-only at ``/agent``."""
    image: str = ""
    source: Path | None = None
    """The agents file that declared it (None: inline or built in)."""

    @property
    def builtin(self) -> bool:
        return self.name in BUILTIN and not self.command

    @property
    def label(self) -> str:
        """How errors name it: ``agents.toml: agent 'mine'``."""
        return f"{self.source}: agent {self.name!r}" if self.source else f"agent {self.name!r}"

    def argv(self, values: Mapping[str, str]) -> list[str]:
        """The command with its placeholders filled (each value one argument, never re-split)."""
        try:
            parts = shlex.split(self.command)
        except ValueError as exc:
            raise BadAgent(f"agent {self.name}: its command does not parse: {exc}") from None
        try:
            return [part.format(**values) for part in parts]
        except (KeyError, IndexError) as exc:
            known = ", ".join("{" + p + "}" for p in _PLACEHOLDERS)
            raise BadAgent(f"agent {self.name}: unknown placeholder {exc} (known: {known})") from None


def load_agents(path: Path) -> dict[str, Agent]:
    """The agents a TOML file declares, by name; any wrong type or unknown key is a :class:`BadAgent`."""
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise BadAgent(f"cannot read the agents file {path}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BadAgent(f"{path} is not valid TOML: {exc}") from None
    for key in data:
        if key != "agents":
            kind = "table" if isinstance(data[key], dict) else "key"
            raise BadAgent(f"{path}: unknown top-level {kind} {key!r}{_suggest(key, ['agents'])}")
    declared = data.get("agents", {})
    if not isinstance(declared, dict):
        raise BadAgent(f"{path}: 'agents' must be tables ([agents.NAME]), not {_given(declared)}")
    agents: dict[str, Agent] = {}
    for name, table in declared.items():
        if not isinstance(table, dict):
            raise BadAgent(f"{path}: agent {name!r} must be a table ([agents.{name}]), not {_given(table)}")
        agents[name] = _agent(name, table, path)
    return agents


def find_agent(name: str, agents_file: Path | None = None, command: str | None = None) -> Agent:
    """The agent called ``name``: inline (``command``), from the file, or built in."""
    if command:
        return Agent(name=name, command=command)
    if agents_file is not None:
        declared = load_agents(agents_file)
        if name in declared:
            return declared[name]
    if name in BUILTIN:
        return Agent(name=name)
    where = f" in {agents_file}" if agents_file else ""
    raise BadAgent(f"no agent named {name!r}{where}; built in: {', '.join(BUILTIN)}")


def check_agent(agent: Agent, backend: str, trusted: bool, protected: Sequence[Path]) -> None:
    """Raises :class:`BadAgent` when ``agent`` may not be scored this way.

    With the ``local`` backend every command agent's tests run on the host (and the agent
    too, unless it declares an image), where they could read the gold tests: only a
    ``trusted`` one runs there. Its mount must pass :func:`check_mount`.
    """
    if not agent.builtin and backend == "local" and not trusted:
        judged = " (its tests are judged there, whatever image it declares)" if agent.image else ""
        raise BadAgent(
            f"agent {agent.name} would run on the host, where it could read the gold tests{judged}: "
            "use --backend docker, or --trust-agent if you trust it"
        )
    if agent.mount is not None:
        try:
            check_mount(agent.mount, protected)
        except BadAgent as exc:
            raise BadAgent(f"{agent.label}: {exc}") from None
    if agent.image and backend == "docker":
        check_image(agent)


def check_image(agent: Agent) -> None:
    """Raises :class:`BadAgent` when the image ``agent`` declares is not on this Docker host: coevo
    pulls nothing (a name could resolve to anyone's image on a public registry)."""
    from docker.errors import DockerException, ImageNotFound

    from ..sandbox.docker_sandbox import docker_client

    client = docker_client()  # no daemon: its own one line
    try:
        client.images.get(agent.image)
    except ImageNotFound:
        raise BadAgent(
            f"{agent.label}: image {agent.image!r} is not on this Docker host: build or load it "
            "(docker build / docker load); coevo pulls no image"
        ) from None
    except DockerException as exc:  # a name the daemon refuses
        reason = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise BadAgent(f"{agent.label}: image {agent.image!r} cannot be used: {reason}") from None


def check_mount(mount: Path, protected: Sequence[Path], homes: Sequence[Path] | None = None) -> None:
    """Raises :class:`BadAgent` when ``mount`` is no folder to show an agent.

    It must be an existing folder (symlinks resolved) that is not ``/``, a top-level system
    folder or anything in ``/proc``, ``/sys``, ``/dev``, ``/run``, ``/etc`` or ``/boot``, not a
    user's home (``homes``; default: every account's) nor a folder holding one, and neither
    is, holds, nor lies inside a ``protected`` path.
    """
    found = mount.resolve()
    shown = f"mount {mount}" + (f" (really {found})" if found != mount else "")
    if not found.is_dir():
        what = "is not a folder" if found.exists() else "does not exist"
        raise BadAgent(f"{shown} {what}: give the agent's own folder")
    if found == Path("/"):
        raise BadAgent(f"{shown} is the root folder: give the agent's own folder")
    if found in _SYSTEM_FOLDERS or any(found.is_relative_to(kernel) for kernel in _KERNEL_FOLDERS):
        raise BadAgent(f"{shown} is a system folder: give the agent's own folder")
    for home in _homes() if homes is None else homes:
        home = home.resolve()
        if home != Path("/") and home.is_relative_to(found):
            held = "is" if home == found else "holds"
            raise BadAgent(f"{shown} {held} a user's home folder ({home}): give the agent's own folder")
    for path in protected:
        path = path.resolve()
        if found == path or found.is_relative_to(path) or path.is_relative_to(found):
            relation = "is" if found == path else "lies inside" if found.is_relative_to(path) else "holds"
            raise BadAgent(
                f"{shown} {relation} {path}, which an agent must not see (coevo's data, a repository "
                "with the gold tests, or the Docker socket): give the agent a folder outside it"
            )


def protected_folders(store: Store, work: Path | None = None) -> list[Path]:
    """What no agent's mount may show: the store's file, coevo's work folders and caches
    (``work``: the built revisions, default :func:`~runners.environments.revisions.work_root`), the Docker
    socket and every repository of the store (their clones hold the gold tests in history)."""
    found = [
        *([work] if work else []),
        work_root(),
        venvs_root(),
        seeds_root(),
        Path(maven_repository()),
        tools_dir(),
        Path.home() / ".cache" / "coevo",
        *_DOCKER_SOCKETS,
        *_DOCKER_DATA,
        *_docker_data_root(),
        scratch_root(),  # judge trees and workspaces of runs going on now
    ]
    socket = os.environ.get("DOCKER_HOST", "")
    if socket.startswith("unix://"):
        found.append(Path(socket.removeprefix("unix://")))
    url = make_url(store.url)
    if url.drivername.startswith("sqlite") and url.database not in (None, "", ":memory:"):
        found.append(Path(url.database).absolute())  # a mount holding the file shows it
    with store.session() as session:
        for repository in session.exec(select(Repository)).all():
            found.append(Path(repository.path))
            if "://" not in repository.location and Path(repository.location).expanduser().exists():
                found.append(Path(repository.location).expanduser())
    return found


def _docker_data_root() -> list[Path]:
    """The data root the Docker daemon reports, when one answers (it may not be the default)."""
    try:
        from ..sandbox.docker_sandbox import docker_client

        root = docker_client().info().get("DockerRootDir")
    except Exception:  # no daemon: the default roots are refused anyway
        return []
    return [Path(root)] if isinstance(root, str) and root.startswith("/") else []


def _homes() -> list[Path]:
    return [Path(entry.pw_dir) for entry in pwd.getpwall() if entry.pw_dir] + [Path.home()]


# --- the keys of an agent's table --------------------------------------------------------------------


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _command(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _timeout(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if 0 < value <= MAX_TIMEOUT else None


def _network(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _cutoff(value: Any) -> datetime | None:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if isinstance(value, date) and not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day, tzinfo=UTC)
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


_KEYS: dict[str, tuple[Callable[[Any], Any], str]] = {
    "command": (_command, "a non-empty string"),
    "model": (_text, "a string"),
    "cutoff": (_cutoff, "a date (2025-06-01, unquoted or as an ISO string) or a date-time"),
    "timeout": (_timeout, "a positive number of seconds, at most a week"),
    "network": (_network, "true or false (unquoted)"),
    "mount": (_text, "a string (a folder, relative to the agents file)"),
    "image": (_text, "a string (an image name)"),
}
"""Each key an agent's table may hold: its parser (None: the wrong type) and what it expects."""


def _agent(name: str, table: dict[str, Any], path: Path) -> Agent:
    where = f"{path}: agent {name!r}"
    for key in table:
        if key not in _KEYS:
            raise BadAgent(f"{where}: unknown key {key!r}{_suggest(key, list(_KEYS))}")
    if "command" not in table:
        raise BadAgent(f"{where} needs a command")
    values: dict[str, Any] = {}
    for key, given in table.items():
        parse, expected = _KEYS[key]
        value = parse(given)
        if value is None:
            raise BadAgent(f"{where}: {key} must be {expected}, not {_given(given)}")
        values[key] = value
    mount = values.pop("mount", "")
    return Agent(
        name=name,
        **values,
        mount=(path.parent / Path(mount).expanduser()).resolve() if mount else None,
        source=path,
    )


def _suggest(key: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1)
    if close:
        return f"; did you mean {close[0]!r}?"
    return f"; known: {', '.join(known)}"


def _given(value: Any) -> str:
    """A TOML value as the user wrote it, and its TOML type."""
    kinds = [
        (bool, "a boolean"),
        (str, "a string"),
        (int, "an integer"),
        (float, "a float"),
        (datetime, "a date-time"),
        (date, "a date"),
        (time, "a time"),
        (list, "an array"),
        (dict, "a table"),
    ]
    kind = next((name for cls, name in kinds if isinstance(value, cls)), type(value).__name__)
    if isinstance(value, bool):
        shown = str(value).lower()
    elif isinstance(value, date | time):
        shown = value.isoformat()
    else:
        shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"{shown} ({kind})"
