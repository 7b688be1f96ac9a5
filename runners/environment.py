"""An environment for a revision: a sandbox of the chosen backend and the build tool set up for it.

``local`` runs on the host (JDK chosen to fit, a venv per environment hash);
``docker`` runs in the spec's base image with the Maven repository mounted as a
shared cache; ``auto`` is Docker when a daemon answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tasks import CoevoError

from .buildtools import BuildTool, get_build_tool
from .docker_sandbox import DockerSandbox, DockerUnavailable, docker_client
from .envspec import EnvSpec
from .images import ImagePlan, base_image_plan, build_image, host_ca_bundle
from .jdk import Jdk
from .maven import MavenTool, maven_repository
from .sandbox import LocalSandbox, Sandbox
from .tools import TOOLS, tool_jar

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

    def sandbox(self, worktree: Path, network: bool = False) -> Sandbox:
        """A sandbox over ``worktree``; the network is off unless asked (builds that download)."""
        if self.image is None:
            return LocalSandbox(worktree)
        m2 = Path(maven_repository())
        m2.mkdir(parents=True, exist_ok=True)
        return DockerSandbox(
            docker_client(), self.image.tag, worktree, mounts={m2: _IMAGE_M2}, network=network
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
    if spec.language != "java":
        raise BackendUnsupported(f"{spec.language} environments run on the host for now; use --backend local")
    jars = {name: tool_jar(name) for name in TOOLS}
    plan = image_plan(spec)
    cached = build_image(docker_client(), plan)
    jdk_feature = int(plan.key.removeprefix("java"))
    tool = MavenTool(
        maven_repo=_IMAGE_M2,
        tool_path=lambda name: f"{_IMAGE_TOOLS}/{jars[name].name}",
        jdk=lambda release: Jdk(
            home=Path(f"/usr/lib/jvm/java-{jdk_feature}-openjdk-amd64"), feature=jdk_feature
        ),
    )
    return Environment("docker", spec, tool, plan), cached
