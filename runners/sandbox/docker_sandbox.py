"""DockerSandbox: the same commands as LocalSandbox, in a container with limits and no network.

The worktree is bind-mounted at ``/work``; caches (the Maven repository) are mounted
beside it, read-only unless a :class:`Mount` says otherwise; a private scratch folder
(:meth:`DockerSandbox.scratch`) is mounted at its host path. With an
:class:`~runners.sandbox.egress.EgressPolicy` the container still has no network interface but
loopback: a relay in it reaches an :class:`~runners.sandbox.egress.EgressProxy` of this process
through a mounted Unix socket, and only the policy's hosts lie beyond. The container lives
as long as the sandbox and is always removed: on :meth:`close`, on Ctrl-C or SIGTERM, and
after a kill by :func:`remove_leftovers`, which the next command that uses Docker calls: each
container is labelled with its owner process (:class:`~tasks.Owner`), and only those of dead
owners go.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks import CoevoError, InfrastructureError, Owner

from .base import DEFAULT_OUTPUT_LIMIT, CappedOutput, ExecResult, read_beneath, write_beneath
from .egress import PROXY_ENV, RELAY_READY, SOCKET_DIR, EgressPolicy, EgressProxy, relay_command
from .scratch import scratch_dir

LABEL = "coevo.sandbox"
OWNER_LABEL = "coevo.owner"
"""The process that started the container (an :class:`~tasks.Owner` token)."""
WORKDIR = "/work"
TEST_USER = "65534:65534"
"""Who runs the tests judged in a judge tree: ``nobody``, not the root that runs coevo's own
steps in the container (PIT's main process, JaCoCo's reader), so what the tests start can
neither write what coevo reads back nor outlive their run (every process of it is killed first)."""
_KILL_TEST_USER = ["sh", "-c", "kill -9 -1 2>/dev/null; true"]


@dataclass(frozen=True)
class Mount:
    """A host folder a container sees at ``inside``; read-only unless ``writable``."""

    host: Path
    inside: str
    writable: bool = False


class DockerUnavailable(InfrastructureError):
    """No Docker daemon answers."""


class EgressUnavailable(InfrastructureError):
    """A build container's relay to the egress proxy did not start (an image without socat)."""


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


@contextlib.contextmanager
def _daemon_faults(doing: str) -> Iterator[None]:
    """The Docker daemon failing (gone, refusing, a container removed under us) is coevo's fault,
    never the command's: one :class:`DockerUnavailable` line instead of the SDK's exception."""
    from docker.errors import DockerException
    from requests.exceptions import RequestException

    try:
        yield
    except (DockerException, RequestException) as exc:
        reason = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise DockerUnavailable(f"the Docker daemon failed {doing}: {reason}") from None


def remove_leftovers(client: Any) -> int:
    """Removes the sandboxes of dead processes (a killed run's); returns how many.

    A container whose owner lives (another coevo command at work), or cannot be judged from
    here (another host or pid namespace, a container without an owner label), stays.
    """
    removed = 0
    # Other live commands remove their own containers meanwhile: one gone between the daemon's
    # list and the SDK's inspect of it is no error (it would end this command with a traceback).
    for container in client.containers.list(all=True, filters={"label": LABEL}, ignore_removed=True):
        owner = Owner.parse((container.labels or {}).get(OWNER_LABEL))
        if owner is None or not owner.is_dead():
            continue
        with contextlib.suppress(Exception):
            container.remove(force=True, v=True)
            removed += 1
    return removed


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
        egress: EgressPolicy | None = None,
        scratch: bool = True,
        hardened: bool = False,
        test_user: str | None = None,
    ) -> None:
        """``network``: the default bridge, open to everything (trusted agents only); ``egress``:
        no network but the policy's hosts, through the proxy (builds). ``tmpfs``: in-memory folders
        (path inside → options, ``size=1g``), gone with the container. ``scratch``: mount a
        private scratch folder (:meth:`scratch`). ``hardened``: no Linux capabilities and no
        privilege gain (for agents, which need neither). ``test_user``: who runs the commands
        :meth:`exec` is told are ``untrusted`` (a judge tree's tests), and whose processes are
        all killed when such a command ends."""
        self.test_user = test_user
        self.workdir = workdir
        self._client = client
        self._image = image
        self._worktree = worktree
        self._mounts = tuple(mounts)
        self._tmpfs = dict(tmpfs or {})
        self._hardened = hardened
        self._env = dict(env or {})
        self._network = network
        self._egress = egress
        self._cpus = cpus
        self._memory = memory
        self._pids = pids
        self._limit = output_limit
        self._container: Any = None
        self._proxy: EgressProxy | None = None
        self._with_scratch = scratch
        self._scratch: Path | None = None

    def _started(self) -> Any:
        if self._container is None:
            volumes = {str(self._worktree): {"bind": self.workdir, "mode": "rw"}}
            volumes |= {
                str(m.host): {"bind": m.inside, "mode": "rw" if m.writable else "ro"} for m in self._mounts
            }
            if self._with_scratch:
                scratch = self.scratch()
                volumes[str(scratch)] = {"bind": str(scratch), "mode": "rw"}
            command = ["sleep", "infinity"]
            if self._egress is not None:
                self._proxy = EgressProxy(self._egress)
                volumes[str(self._proxy.start())] = {"bind": SOCKET_DIR, "mode": "ro"}
                command = relay_command()
            with _daemon_faults(f"starting a container of {self._image}"):
                self._container = self._run_container(volumes, command)
            if self._egress is not None and self._container.exec_run(RELAY_READY).exit_code != 0:
                self.close()
                raise EgressUnavailable(f"the egress relay (socat) did not start in {self._image}")
        return self._container

    def _run_container(self, volumes: dict[str, dict[str, str]], command: list[str]) -> Any:
        return self._client.containers.run(
            self._image,
            command=command,
            detach=True,
            working_dir=self.workdir,
            environment=self._env,
            volumes=volumes,
            network_mode="bridge" if self._network and self._egress is None else "none",
            nano_cpus=int(self._cpus * 1e9),
            mem_limit=self._memory,
            pids_limit=self._pids,
            labels={LABEL: "1", OWNER_LABEL: Owner.current().token},
            init=True,
            tmpfs=self._tmpfs or None,
            **({"cap_drop": ["ALL"], "security_opt": ["no-new-privileges"]} if self._hardened else {}),
        )

    def scratch(self) -> Path:
        """A host folder of this sandbox's own, seen at the same path inside: per-run files (a test
        runner's plugin, its results) go there, out of reach of every other container; removed on
        :meth:`close`."""
        if not self._with_scratch:
            raise CoevoError(f"{self.describe()} has no scratch folder")
        if self._scratch is None:
            self._scratch = scratch_dir("coevo-scratch-")
            if self.test_user is not None:  # its tests may go through it, to their own folders
                self._scratch.chmod(0o711)
        return self._scratch

    @contextlib.contextmanager
    def writable(self, folders: Sequence[Path]) -> Iterator[DockerSandbox]:
        """A sandbox like this one (image, worktree, network, egress) whose ``folders`` (host paths,
        seen at the same paths) are also writable, in a container of its own, for the block."""
        sandbox = DockerSandbox(
            self._client,
            self._image,
            self._worktree,
            mounts=(*self._mounts, *(Mount(folder, str(folder), writable=True) for folder in folders)),
            env=self._env,
            network=self._network,
            cpus=self._cpus,
            memory=self._memory,
            pids=self._pids,
            output_limit=self._limit,
            workdir=self.workdir,
            tmpfs=self._tmpfs,
            egress=self._egress,
            scratch=self._with_scratch,
            hardened=self._hardened,
            test_user=self.test_user,
        )
        try:
            yield sandbox
        finally:
            sandbox.close()

    def exec(
        self,
        argv: Sequence[str],
        timeout: float,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        untrusted: bool = False,
    ) -> ExecResult:
        """Runs ``argv``; ``untrusted`` (tests being judged): as :attr:`test_user` when there is
        one, every process of that user killed before this returns."""
        container = self._started()
        user = self.test_user if untrusted else None
        started = time.monotonic()
        # `timeout` inside the container kills the command's whole process group; the outer
        # deadline only guards against a wedged daemon.
        command = ["timeout", "--signal=KILL", f"{max(timeout, 1):.0f}", *argv]
        api = self._client.api
        environment = dict(env or {})
        if user is not None:
            environment.setdefault("HOME", "/tmp")
        if self._egress is not None:
            environment |= PROXY_ENV  # the host's proxy settings (pip_env) would lead nowhere
        with _daemon_faults("running a command in its container"):
            exec_id = api.exec_create(
                container.id,
                command,
                workdir=cwd or self.workdir,
                environment=environment,
                stdout=True,
                stderr=True,
                **({"user": user} if user is not None else {}),
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
        if reader.is_alive():  # the daemon stopped answering: no fact about the command
            self.close()
            raise DockerUnavailable(
                f"the Docker daemon stopped answering while {self.describe()} ran a command"
            )
        with _daemon_faults("reading how a command ended"):
            code = api.exec_inspect(exec_id)["ExitCode"]
        if user is not None:
            self.stop_untrusted()
        timed_out = code in (124, 137) and time.monotonic() - started >= timeout
        return ExecResult(
            exit_code=None if timed_out or code in (137,) else code,
            stdout=stdout.text(),
            stderr=stderr.text(),
            duration=time.monotonic() - started,
            timed_out=timed_out,
            truncated=stdout.truncated or stderr.truncated,
        )

    def stop_untrusted(self) -> None:
        """Kills every process of :attr:`test_user` (what judged tests left running, ``setsid``
        or not), before coevo reads what they ran."""
        if self.test_user is None or self._container is None:
            return
        with _daemon_faults("stopping the tests' processes"):
            self._container.exec_run(_KILL_TEST_USER, user=self.test_user)

    def commit(self, tag: str) -> None:
        """Saves the container's files (not its mounts) as image ``tag``, with its image's command and
        working folder (the container's label stays on the image: Docker cannot drop one; its owner
        is emptied, so a container someone starts from the image is nobody's leftover)."""
        container = self._started()
        config = self._client.images.get(self._image).attrs.get("Config") or {}
        changes = [
            f"CMD {json.dumps(config.get('Cmd') or [])}",
            f"WORKDIR {config.get('WorkingDir') or '/'}",
            f'LABEL {OWNER_LABEL}=""',
        ]
        repository, _, name = tag.rpartition(":")
        container.commit(repository=repository, tag=name, changes=changes)

    def write_file(self, path: str, data: bytes) -> None:
        """Writes into the worktree from the host, following no link the container may have made
        (folders it makes are open to the tests as the judge tree's are, when they have a user)."""
        write_beneath(self._worktree, path, data, folder_mode=0o1777 if self.test_user else None)

    def read_file(self, path: str, limit: int | None = None) -> bytes | None:
        """Reads from the worktree on the host; a symbolic link reads as no file."""
        return read_beneath(self._worktree, path, limit)

    def close(self) -> None:
        container, self._container = self._container, None
        if container is not None:
            with contextlib.suppress(Exception):
                container.remove(force=True, v=True)
        proxy, self._proxy = self._proxy, None
        if proxy is not None:
            proxy.close()
        scratch, self._scratch = self._scratch, None
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)

    def __enter__(self) -> DockerSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def describe(self) -> str:
        return f"docker {self._image} over {self._worktree} ({shlex.quote(self.workdir)})"
