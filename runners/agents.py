"""Agents under test: declared in a TOML file or given inline, plus the built-in ``gold`` and ``noop``.

An agents file::

    [agents.my-agent]
    command = "python3 /agent/run.py --workspace {workspace} --prompt {prompt}"
    model = "some-model-2025-06"
    cutoff = "2025-06-01"      # the model's training cutoff: --model-cutoff scores only later tasks
    timeout = 1800             # seconds
    network = false            # the agent's container gets no network unless true
    mount = "./my-agent"       # a folder the container sees, read-only, at /agent
    image = ""                 # the image to run in; default: the task's own environment

The command is a template; its placeholders are ``{workspace}``, ``{prompt}``,
``{test_file}`` (relative to the workspace), ``{methods}`` (comma-separated), ``{language}``
and ``{track}``. It runs with the workspace as its working folder.
"""

from __future__ import annotations

import shlex
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from tasks import CoevoError

BUILTIN = ("gold", "noop")
_PLACEHOLDERS = ("workspace", "prompt", "test_file", "methods", "language", "track")


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
    image: str = ""

    @property
    def builtin(self) -> bool:
        return self.name in BUILTIN and not self.command

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
    """The agents a TOML file declares, by name."""
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise BadAgent(f"cannot read the agents file {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise BadAgent(f"{path} is not valid TOML: {exc}") from None
    agents: dict[str, Agent] = {}
    for name, table in (data.get("agents") or {}).items():
        if not isinstance(table, dict) or not table.get("command"):
            raise BadAgent(f"{path}: agent {name!r} needs a command")
        agents[name] = _agent(name, table, path.parent)
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


def _agent(name: str, table: dict[str, Any], base: Path) -> Agent:
    cutoff = table.get("cutoff")
    if isinstance(cutoff, date) and not isinstance(cutoff, datetime):
        cutoff = datetime(cutoff.year, cutoff.month, cutoff.day, tzinfo=UTC)
    elif isinstance(cutoff, str):
        try:
            cutoff = datetime.fromisoformat(cutoff)
        except ValueError:
            raise BadAgent(f"agent {name}: cutoff {cutoff!r} is not a date (YYYY-MM-DD)") from None
    if isinstance(cutoff, datetime) and cutoff.tzinfo is None:
        cutoff = cutoff.replace(tzinfo=UTC)
    mount = table.get("mount")
    return Agent(
        name=name,
        command=str(table["command"]),
        model=str(table.get("model", "")),
        cutoff=cutoff,
        timeout=float(table.get("timeout", 1800)),
        network=bool(table.get("network", False)),
        mount=(base / mount).resolve() if mount else None,
        image=str(table.get("image", "")),
    )
