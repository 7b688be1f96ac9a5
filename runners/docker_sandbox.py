"""DockerSandbox: the same commands as LocalSandbox, in a container with limits and no network.

The worktree is bind-mounted at ``/work``; caches (the Maven repository) are mounted
beside it. The container lives as long as the sandbox and is always removed: on
:meth:`close`, on Ctrl-C, and by :func:`remove_leftovers` after a kill.
"""

from __future__ import annotations

import contextlib
import shlex
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks import CoevoError

from .sandbox import DEFAULT_OUTPUT_LIMIT, CappedOutput, ExecResult, read_beneath, write_beneath

LABEL = "coevo.sandbox"
WORKDIR = "/work"


@dataclass(frozen=True)
class Mount:
    """A host folder a container sees at ``inside``; read-only unless ``writable``."""

    host: Path
    inside: str
    writable: bool = False


class DockerUnavailable(CoevoError):
    """No Docker daemon answers."""


def docker_client() -> Any:
    """A client for the local daemon; raises :class:`DockerUnavailable` with a one-line hint."""
    import docker
    from docker.errors import DockerException

    try:
        client = docker.from_env()
        client.ping()
    except DockerException as exc:
        reason = str(exc).splitlines()[0][:120]
        raise DockerUnavailable(
            f"no Docker daemon answers ({reason}); start dockerd or use --backend local"
        ) from None
    return client


def remove_leftovers(client: Any) -> int:
    """Removes sandboxes a killed run left behind; returns how many."""
    containers = client.containers.list(all=True, filters={"label": LABEL})
    for container in containers:
        with contextlib.suppress(Exception):
            container.remove(force=True)
    return len(containers)


class DockerSandbox:
    """Runs commands in a container of ``image`` over a bind-mounted worktree. No I/O until used."""

    def __init__(
        self,
        client: Any,
        image: str,
        worktree: Path,
        mounts: Sequence[Mount] = (),
        env: Mapping[str, str] | None = None,
        network: bool = False,
        cpus: float = 2.0,
        memory: str = "4g",
        pids: int = 1024,
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
        workdir: str = WORKDIR,
        tmpfs: Mapping[str, str] | None = None,
    ) -> None:
        """``tmpfs``: in-memory folders (path inside → options, ``size=1g``), gone with the container."""
        self.workdir = workdir
        self._client = client
        self._image = image
        self._worktree = worktree
        self._mounts = tuple(mounts)
        self._tmpfs = dict(tmpfs or {})
        self._env = dict(env or {})
        self._network = network
        self._cpus = cpus
        self._memory = memory
        self._pids = pids
        self._limit = output_limit
        self._container: Any = None

    def _started(self) -> Any:
        if self._container is None:
            volumes = {str(self._worktree): {"bind": self.workdir, "mode": "rw"}}
            volumes |= {
                str(m.host): {"bind": m.inside, "mode": "rw" if m.writable else "ro"} for m in self._mounts
            }
            self._container = self._client.containers.run(
                self._image,
                command=["sleep", "infinity"],
                detach=True,
                working_dir=self.workdir,
                environment=self._env,
                volumes=volumes,
                network_mode="bridge" if self._network else "none",
                nano_cpus=int(self._cpus * 1e9),
                mem_limit=self._memory,
                pids_limit=self._pids,
                labels={LABEL: "1"},
                init=True,
                tmpfs=self._tmpfs or None,
            )
        return self._container

    def exec(
        self,
        argv: Sequence[str],
        timeout: float,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> ExecResult:
        container = self._started()
        started = time.monotonic()
        # `timeout` inside the container kills the command's whole process group; the outer
        # deadline only guards against a wedged daemon.
        command = ["timeout", "--signal=KILL", f"{max(timeout, 1):.0f}", *argv]
        api = self._client.api
        exec_id = api.exec_create(
            container.id,
            command,
            workdir=cwd or self.workdir,
            environment=dict(env or {}),
            stdout=True,
            stderr=True,
        )["Id"]
        stdout, stderr = CappedOutput(self._limit), CappedOutput(self._limit)

        def drain() -> None:
            for out, err in api.exec_start(exec_id, stream=True, demux=True):
                if out:
                    stdout.add(out)
                if err:
                    stderr.add(err)

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        reader.join(timeout + 30)
        if reader.is_alive():  # the daemon stopped answering: the container goes
            self.close()
            return ExecResult(None, stdout.text(), stderr.text(), time.monotonic() - started, True)
        code = api.exec_inspect(exec_id)["ExitCode"]
        timed_out = code in (124, 137) and time.monotonic() - started >= timeout
        return ExecResult(
            exit_code=None if timed_out or code in (137,) else code,
            stdout=stdout.text(),
            stderr=stderr.text(),
            duration=time.monotonic() - started,
            timed_out=timed_out,
            truncated=stdout.truncated or stderr.truncated,
        )

    def write_file(self, path: str, data: bytes) -> None:
        """Writes into the worktree from the host, following no link the container may have made."""
        write_beneath(self._worktree, path, data)

    def read_file(self, path: str) -> bytes | None:
        """Reads from the worktree on the host; a symbolic link reads as no file."""
        return read_beneath(self._worktree, path)

    def close(self) -> None:
        container, self._container = self._container, None
        if container is not None:
            with contextlib.suppress(Exception):
                container.remove(force=True)

    def __enter__(self) -> DockerSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def describe(self) -> str:
        return f"docker {self._image} over {self._worktree} ({shlex.quote(self.workdir)})"
