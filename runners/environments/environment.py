"""An environment for a revision: a sandbox of the chosen backend and the build tool set up for it.
Each language's toolchain puts its environments together (:func:`runners.toolchains.prepare_environment`).

``local`` runs on the host (JDK chosen to fit, a venv per environment hash), with the
user's rights and network: nothing is isolated there, by design. ``docker`` runs in images
layered base (OS, JDK and Maven or Python, coevo's tools) → deps (Java: the revision's
poms with their dependencies resolved into the image); ``auto`` is Docker when a daemon
answers.

In Docker the shared caches (the Maven repository ``$COEVO_M2``; the venvs, mounted at
their host paths) are mounted read-only into every container. A Java build writes what it
downloads into the revision's own repository (``m2/`` beside its worktree), searched
before the deps image's and the shared one (``maven.repo.local.tail``) and read-only in the
revision's test containers; a Python build installs into its venv in a container of its own
where only that venv is writable (:func:`~runners.python.venvs.venv_for`). Builds reach the
network only through the egress proxy (:mod:`runners.sandbox.egress`); test runs not at all.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tasks import CoevoError

from ..buildtools import BuildResult, BuildTool
from ..java.jdk import JdkPlan, NoSuitableJdk, find_jdks, retry_jdk
from ..sandbox.base import LocalSandbox, Sandbox
from ..sandbox.docker_sandbox import (
    TEST_USER,
    WORKDIR,
    DockerSandbox,
    DockerUnavailable,
    Mount,
    docker_client,
)
from ..sandbox.egress import EgressPolicy, egress_policy
from .envspec import EnvSpec
from .images import IMAGE_JDKS, IMAGE_JDKS_SOURCE, ImagePlan
from .worktree import FolderTree, TreeReader

BASE_IMAGES_ENV = "COEVO_BASE_IMAGES"
REVISION_M2 = "m2"
"""A revision's own Maven repository (Docker), beside its worktree."""


@dataclass(frozen=True)
class EnvironmentRequest:
    """What a toolchain puts an environment together from
    (:func:`runners.toolchains.prepare_environment`)."""

    spec: EnvSpec
    backend: str
    """``local`` or ``docker``."""
    build_files: Mapping[str, bytes] | None = None
    """Java: the revision's build files, for a deps image
    (:func:`~runners.environments.envspec.maven_build_files`)."""
    build_args: Sequence[str] = ()
    """The repository's own build arguments (Maven's)."""
    from_images: Mapping[str, str] | None = None
    """Base images to start from, by key (:func:`base_images`)."""
    jdk: JdkPlan | None = None
    """Java: the JDK to build with (a recorded plan, a retry's), else the one of the revision's era."""


def _no_downloads(tree: TreeReader, spec: EnvSpec) -> Sequence[str]:
    return ()


def build_revision(
    environment: Environment, worktree: Path, timeout: float, fresh_worktree: Callable[[], None]
) -> tuple[Environment, BuildResult]:
    """Builds the revision in ``worktree``; when that fails in a way another JDK explains, once more
    in a fresh worktree (``fresh_worktree`` makes it) with that JDK. When its tests still do not
    compile, its production code is built alone (:meth:`~runners.java.maven.MavenTool.build_production`:
    another revision's tests can run on it). Returns the environment that made the last build,
    whose tests must run there, and that build (its choices say why).

    Raises :class:`~runners.java.jdk.NoSuitableJdk` when the JDK the build needs is not installed.
    """
    built = _build_once(environment, worktree, timeout)
    again = environment.retry(built)
    if again is not None:
        fresh_worktree()
        environment, built = again, _build_once(again, worktree, timeout)
    if not built.ok and _plain_failure(built):
        sandbox = environment.builder(worktree)
        try:
            built = environment.tool.build_production(sandbox, environment.spec, timeout, built) or built
        finally:
            sandbox.close()
    return environment, built


def _build_once(environment: Environment, worktree: Path, timeout: float) -> BuildResult:
    sandbox = environment.builder(worktree)
    try:
        return environment.tool.build(sandbox, environment.spec, timeout)
    finally:
        sandbox.close()


def _plain_failure(built: BuildResult) -> bool:
    """A build that ran to its end and failed: not timed out, nor killed from outside."""
    log = built.log
    return log is not None and not log.timed_out and log.exit_code not in (None, 137, 143)


def revision_repository(worktree: Path) -> Path:
    """The revision's own Maven repository on the host: what its build downloads (Docker)."""
    return worktree.parent / REVISION_M2


@dataclass(frozen=True)
class Environment:
    """Where a revision builds and runs: the backend, the sandbox factory's inputs, the tool."""

    backend: str
    spec: EnvSpec
    tool: BuildTool
    image: ImagePlan | None = None
    mounts: tuple[Mount, ...] = ()
    """Shared caches the containers see (the Maven repository, the venvs), read-only."""
    same_paths: bool = False
    """Mount the worktree at its host path: tools that share files by path (pytest's venvs) need it."""
    revision_repository: str | None = None
    """Where containers see the revision's own Maven repository (Java in Docker)."""
    jdk: JdkPlan | None = None
    """Java: the JDK it builds and runs with, and why."""
    remake: Callable[[JdkPlan], Environment] | None = field(default=None, compare=False, repr=False)
    """The same environment for another JDK plan (how a retry or a recorded build gets one)."""
    build_mounts: tuple[Mount, ...] = ()
    """Files a build's containers see besides (Java: the Maven settings that send it to the egress proxy)."""
    download_urls: Callable[[TreeReader, EnvSpec], Sequence[str]] = field(
        default=_no_downloads, compare=False, repr=False
    )
    """The URLs a revision's build files name to download from (its repositories, indexes): its
    egress policy lets them through."""

    def retry(self, built: BuildResult) -> Environment | None:
        """Where to build once more after ``built`` failed here in a way another JDK explains
        (:func:`~runners.java.jdk.retry_jdk`; the new plan says why); None when nothing does.

        A build where only some modules failed is retried too, when a newer JDK explains their
        failure (a plugin or a dependency that needs it): a newer JDK still builds the others.

        Raises :class:`~runners.java.jdk.NoSuitableJdk` when the JDK that would do is not installed.
        """
        partial = built.ok and built.log is not None and not built.log.ok
        if (built.ok and not partial) or self.jdk is None or self.remake is None or not _plain_failure(built):
            return None
        assert built.log is not None
        output = f"{built.log.stdout}\n{built.log.stderr}"
        try:
            if self.image is not None:
                plan = retry_jdk(self.jdk, self.spec, output, IMAGE_JDKS, IMAGE_JDKS_SOURCE)
            else:
                plan = retry_jdk(self.jdk, self.spec, output, [jdk.feature for jdk in find_jdks()])
        except NoSuitableJdk:
            if partial:  # the modules that built are worth more than the JDK that is missing
                return None
            raise
        if plan is None or (partial and plan.feature < self.jdk.feature):
            return None
        return self.remake(plan)

    def sandbox(self, worktree: Path, repository: Path | None = None, judging: bool = False) -> Sandbox:
        """Where a built revision's tests run: no network, every cache and repository read-only.
        ``repository``: the revision's own Maven repository (default: beside ``worktree``);
        ``judging``: a judge tree, whose tests run as :data:`~runners.sandbox.docker_sandbox.TEST_USER`
        (in Docker; the host isolates nothing)."""
        if self.image is None:
            return LocalSandbox(worktree)
        return self._docker(worktree, building=False, egress=None, repository=repository, judging=judging)

    def builder(self, worktree: Path, network: bool = True) -> Sandbox:
        """Where the revision builds: its own Maven repository writable, the shared caches read-only,
        and (``network``) the package registries and the hosts the revision declares reachable
        through the egress proxy, nothing else."""
        if self.image is None:
            return LocalSandbox(worktree)
        return self._docker(worktree, building=True, egress=self.egress(worktree) if network else None)

    def egress(self, worktree: Path) -> EgressPolicy:
        """What a build of ``worktree`` may reach: the registries, the host's indexes, the hosts it names."""
        return egress_policy(self.spec.language, self.download_urls(FolderTree(worktree), self.spec))

    def _docker(
        self,
        worktree: Path,
        building: bool,
        egress: EgressPolicy | None,
        repository: Path | None = None,
        judging: bool = False,
    ) -> DockerSandbox:
        assert self.image is not None
        mounts = list(self.mounts)
        if self.revision_repository is not None:
            own = repository or revision_repository(worktree)
            mounts.append(Mount(own, self.revision_repository, writable=building))
        for mount in mounts:
            mount.host.mkdir(parents=True, exist_ok=True)
        if building:
            mounts += self.build_mounts
        return DockerSandbox(
            docker_client(),
            self.image.tag,
            worktree,
            mounts=mounts,
            egress=egress,
            workdir=str(worktree) if self.same_paths else WORKDIR,
            test_user=TEST_USER if judging else None,
        )


def resolve_backend(backend: str) -> str:
    """``auto`` → ``docker`` when a daemon answers, else ``local``."""
    if backend != "auto":
        return backend
    try:
        docker_client()
    except DockerUnavailable:
        return "local"
    return "docker"


def base_images(overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """Base keys (``java17``, ``python3.11``) → the image to start from: ``$COEVO_BASE_IMAGES``
    (``java17=eclipse-temurin:17,python3.11=python:3.11-slim``), then ``overrides``."""
    found: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in os.environ.get(BASE_IMAGES_ENV, "").split(","))):
        key, sep, image = item.partition("=")
        if not sep or not key.strip() or not image.strip():
            raise CoevoError(f"${BASE_IMAGES_ENV}: {item!r} is not KEY=IMAGE (java17=debian:bookworm-slim)")
        found[key.strip()] = image.strip()
    found.update(overrides or {})
    return found
