"""An environment for a revision: a sandbox of the chosen backend and the build tool set up for it.

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
from ..java.jdk import JDKS_ENV, Jdk, JdkPlan, NoSuitableJdk, find_jdks, plan_jdk, retry_jdk
from ..java.maven import MavenTool, maven_repository
from ..java.tools import TOOLS, tool_jar
from ..python.pytest_tool import PytestTool
from ..python.venvs import FoundPython, NoPython, host_pythons, pip_urls, venvs_root
from ..sandbox.base import LocalSandbox, Sandbox
from ..sandbox.docker_sandbox import (
    TEST_USER,
    WORKDIR,
    DockerSandbox,
    DockerUnavailable,
    Mount,
    docker_client,
)
from ..sandbox.egress import MAVEN_SETTINGS, EgressPolicy, egress_policy
from ..toolchains import get_build_tool
from .envspec import EnvSpec, maven_download_urls, maven_repository_urls, resolve_python
from .images import (
    IMAGE_DEPS_REPO,
    IMAGE_JDKS,
    IMAGE_JDKS_SOURCE,
    IMAGE_PER_TEST_COVERAGE,
    IMAGE_PIT,
    ImagePlan,
    base_image_plan,
    build_image,
    deps_image_plan,
    docker_pythons,
    host_ca_bundle,
    image_jdk_home,
    image_tools_java,
)
from .worktree import FolderTree

BASE_IMAGES_ENV = "COEVO_BASE_IMAGES"
REVISION_M2 = "m2"
"""A revision's own Maven repository (Docker), beside its worktree."""
_IMAGE_TOOLS = "/opt/coevo/tools"
_IMAGE_M2 = "/root/.m2/repository"
_IMAGE_SHARED_M2 = "/opt/coevo/shared-m2"


class BackendUnsupported(CoevoError):
    """The chosen backend cannot run this kind of environment yet."""


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
    if not built.ok and _plain_failure(built) and isinstance(environment.tool, MavenTool):
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
        tree = FolderTree(worktree)
        if self.spec.language == "java":
            return egress_policy("java", maven_download_urls(tree, self.spec))
        return egress_policy(self.spec.language, pip_urls(self.spec, tree))

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
        if building and self.spec.language == "java":
            mounts.append(Mount(MAVEN_SETTINGS, "/root/.m2/settings.xml"))
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


def image_plan(
    spec: EnvSpec, from_images: Mapping[str, str] | None = None, jdk: int | None = None
) -> ImagePlan:
    """The base image plan for ``spec`` on this host: its CA bundle, coevo's tools; for Java, JDK
    ``jdk`` (default: the one the spec's era asks for, :func:`jdk_plan`)."""
    if spec.language != "java":
        return base_image_plan(spec, base_images(from_images), ca_bundle=host_ca_bundle())
    jars = [tool_jar(name) for name in TOOLS]
    return base_image_plan(
        spec,
        base_images(from_images),
        ca_bundle=host_ca_bundle(),
        tool_jars={path.name: path for path in jars},
        maven_archive=tool_jar("maven"),
        jdk=jdk_plan(spec, "docker").feature if jdk is None else jdk,
    )


def jdk_plan(spec: EnvSpec, backend: str) -> JdkPlan:
    """The JDK a Java revision builds with on ``backend`` (``docker`` or ``local``), and why: among
    coevo's images' JDKs in Docker, the installed ones on the host (:func:`~runners.java.jdk.plan_jdk`)."""
    if backend == "docker":
        return plan_jdk(spec, IMAGE_JDKS, IMAGE_JDKS_SOURCE)
    return plan_jdk(spec, [jdk.feature for jdk in find_jdks()])


def prepare_environment(
    spec: EnvSpec,
    backend: str = "auto",
    build_files: Mapping[str, bytes] | None = None,
    build_args: Sequence[str] = (),
    from_images: Mapping[str, str] | None = None,
    jdk: JdkPlan | None = None,
) -> tuple[Environment, bool]:
    """The environment for ``spec``, its images built (Docker), and whether they were all cached.

    ``build_files`` (:func:`~runners.environments.envspec.maven_build_files`) add a deps image over the
    Java base image; ``build_args`` are the repository's own Maven arguments. Java builds with
    ``jdk`` (a recorded plan, a retry's), else the JDK of the revision's era (:func:`jdk_plan`);
    raises :class:`~runners.java.jdk.NoSuitableJdk` when that JDK cannot be had. A Python spec gets
    its interpreter chosen among the backend's (pyenv's on the host, the base images' in
    Docker): the environment's spec says which, and why in its last note.
    """
    backend = resolve_backend(backend)

    def remake(other: JdkPlan) -> Environment:
        return prepare_environment(spec, backend, build_files, build_args, from_images, other)[0]

    if backend == "local":
        if spec.language == "java":
            local = jdk or jdk_plan(spec, "local")
            tool = MavenTool(jdk=_installed_jdk(local.feature), plan=local, maven_args=build_args)
            return Environment("local", spec, tool, jdk=local, remake=remake), True
        if spec.language == "python":
            present = host_pythons()
            if not present:
                raise NoPython("no Python 3 interpreter found on PATH or in pyenv; install python3")
            spec = resolve_python(spec, present, "host")
        return Environment("local", spec, get_build_tool(spec.build_tool)), True
    if spec.language not in ("java", "python"):
        raise BackendUnsupported(f"no Docker environment for {spec.language}; use --backend local")
    if spec.language == "python":
        spec = resolve_python(spec, docker_pythons(base_images(from_images)), "Docker")
    java = (jdk or jdk_plan(spec, "docker")) if spec.language == "java" else None
    plan = image_plan(spec, from_images, java.feature if java else None)
    client = docker_client()
    cached = build_image(client, plan)
    if spec.language == "python":
        # Venvs live on the host, mounted at the same path, keyed by the container's interpreter.
        python = plan.key.removeprefix("python")
        interpreter = FoundPython(Path(f"/usr/bin/python{python}"), f"{python} in {plan.tag}")
        venvs = venvs_root()
        mounts = (Mount(venvs, str(venvs)),)
        return Environment(
            "docker", spec, PytestTool(python=interpreter), plan, mounts, same_paths=True
        ), cached
    assert java is not None
    if build_files:
        plan = deps_image_plan(plan, build_files, [*java.maven_args(), *build_args])
        egress = egress_policy("java", maven_repository_urls(build_files))
        cached = build_image(client, plan, egress) and cached
    tools_java = image_tools_java(java.feature)
    maven = MavenTool(
        maven_repo=_IMAGE_M2,
        tool_path=lambda name: f"{_IMAGE_TOOLS}/{TOOLS[name].file_name}",
        jdk=Jdk(home=Path(image_jdk_home(java.feature)), feature=java.feature),
        plan=java,
        maven="mvn",
        tools_jdk=Jdk(Path(image_jdk_home(tools_java)), tools_java) if tools_java else None,
        maven_args=build_args,
        repo_tail=",".join([IMAGE_DEPS_REPO, _IMAGE_SHARED_M2] if build_files else [_IMAGE_SHARED_M2]),
        pit_dir=IMAGE_PIT,
        per_test_folder=IMAGE_PER_TEST_COVERAGE,
    )
    shared = (Mount(Path(maven_repository()), _IMAGE_SHARED_M2),)
    environment = Environment(
        "docker", spec, maven, plan, shared, revision_repository=_IMAGE_M2, jdk=java, remake=remake
    )
    return environment, cached


def _installed_jdk(feature: int) -> Jdk:
    """The installed JDK ``feature`` (the oldest home of it)."""
    for jdk in find_jdks():
        if jdk.feature == feature:
            return jdk
    raise NoSuitableJdk(f"JDK {feature} is not installed; install it or list its home in ${JDKS_ENV}")
