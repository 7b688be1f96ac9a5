"""An environment for a revision: a sandbox of the chosen backend and the build tool set up for it.

``local`` runs on the host (JDK chosen to fit, a venv per environment hash);
``docker`` runs in the spec's base image with the Maven repository (Java) or the
venvs (Python, mounted at their host paths) as shared caches; ``auto`` is Docker
when a daemon answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tasks import CoevoError

from .buildtools import BuildTool, get_build_tool
from .docker_sandbox import WORKDIR, DockerSandbox, DockerUnavailable, docker_client
from .envspec import EnvSpec
from .images import ImagePlan, base_image_plan, build_image, host_ca_bundle
from .jdk import Jdk
from .maven import MavenTool, maven_repository
from .pytest_tool import PytestTool
from .sandbox import LocalSandbox, Sandbox
from .tools import TOOLS, tool_jar
from .venvs import FoundPython, venvs_root

BACKENDS = ("auto", "docker", "local")
_IMAGE_TOOLS = "/opt/coevo/tools"
_IMAGE_M2 = "/root/.m2/repository"


class BackendUnsupported(CoevoError):
    """The chosen backend cannot run this kind of environment yet."""


@dataclass(frozen=True)
class Environment:
    """Where a revision builds and runs: the backend, the sandbox factory's inputs, the tool."""

    backend: str
    spec: EnvSpec
    tool: BuildTool
    image: ImagePlan | None = None
    mounts: tuple[tuple[Path, str], ...] = ()
    """Host folders the container sees (the Maven repository, the venvs)."""
    same_paths: bool = False
    """Mount the worktree at its host path: tools that share files by path (pytest's venvs) need it."""

    def sandbox(self, worktree: Path, network: bool = False) -> Sandbox:
        """A sandbox over ``worktree``; the network is off unless asked (builds that download)."""
        if self.image is None:
            return LocalSandbox(worktree)
        for host, _ in self.mounts:
            host.mkdir(parents=True, exist_ok=True)
        return DockerSandbox(
            docker_client(),
            self.image.tag,
            worktree,
            mounts=dict(self.mounts),
            network=network,
            workdir=str(worktree) if self.same_paths else WORKDIR,
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


def image_plan(spec: EnvSpec) -> ImagePlan:
    """The base image plan for ``spec`` on this host: its CA bundle, coevo's tool jars."""
    jars = [tool_jar(name) for name in TOOLS] if spec.language == "java" else []
    return base_image_plan(spec, ca_bundle=host_ca_bundle(), tool_jars={path.name: path for path in jars})


def prepare_environment(spec: EnvSpec, backend: str = "auto") -> tuple[Environment, bool]:
    """The environment for ``spec``, its image built (Docker), and whether that image was cached."""
    backend = resolve_backend(backend)
    if backend == "local":
        return Environment("local", spec, get_build_tool(spec.build_tool)), True
    if spec.language not in ("java", "python"):
        raise BackendUnsupported(f"no Docker environment for {spec.language}; use --backend local")
    plan = image_plan(spec)
    cached = build_image(docker_client(), plan)
    if spec.language == "python":
        # Venvs live on the host, mounted at the same path, keyed by the container's interpreter.
        python = plan.key.removeprefix("python")
        interpreter = FoundPython(Path(f"/usr/bin/python{python}"), f"{python} in {plan.tag}")
        venvs = venvs_root()
        tool = PytestTool(python=interpreter, scratch_root=venvs / "scratch")
        return Environment("docker", spec, tool, plan, ((venvs, str(venvs)),), same_paths=True), cached
    jdk_feature = int(plan.key.removeprefix("java"))
    maven = MavenTool(
        maven_repo=_IMAGE_M2,
        tool_path=lambda name: f"{_IMAGE_TOOLS}/{TOOLS[name].file_name}",
        jdk=lambda release: Jdk(
            home=Path(f"/usr/lib/jvm/java-{jdk_feature}-openjdk-amd64"), feature=jdk_feature
        ),
    )
    m2 = ((Path(maven_repository()), _IMAGE_M2),)
    return Environment("docker", spec, maven, plan, m2), cached
