"""An environment for a revision: a sandbox of the chosen backend and the build tool set up for it.

``local`` runs on the host (JDK chosen to fit, a venv per environment hash);
``docker`` runs in images layered base (OS, JDK and Maven or Python, coevo's tools)
→ deps (Java: the revision's poms with their dependencies resolved into the image),
with the Maven repository (Java) or the venvs (Python, mounted at their host paths)
as shared caches for whatever the layers lack; ``auto`` is Docker when a daemon answers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tasks import CoevoError

from .buildtools import BuildTool, get_build_tool
from .docker_sandbox import WORKDIR, DockerSandbox, DockerUnavailable, Mount, docker_client
from .envspec import EnvSpec
from .images import (
    IMAGE_DEPS_REPO,
    IMAGE_PIT,
    ImagePlan,
    base_image_plan,
    build_image,
    deps_image_plan,
    host_ca_bundle,
)
from .jdk import Jdk
from .maven import MavenTool, maven_repository
from .pytest_tool import PytestTool
from .sandbox import LocalSandbox, Sandbox
from .tools import TOOLS, tool_jar
from .venvs import FoundPython, venvs_root

BACKENDS = ("auto", "docker", "local")
BASE_IMAGES_ENV = "COEVO_BASE_IMAGES"
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
    mounts: tuple[Mount, ...] = ()
    """Host folders the container sees (the Maven repository, the venvs)."""
    same_paths: bool = False
    """Mount the worktree at its host path: tools that share files by path (pytest's venvs) need it."""

    def sandbox(self, worktree: Path, network: bool = False) -> Sandbox:
        """A sandbox over ``worktree``; the network is off unless asked (builds that download)."""
        if self.image is None:
            return LocalSandbox(worktree)
        for mount in self.mounts:
            mount.host.mkdir(parents=True, exist_ok=True)
        return DockerSandbox(
            docker_client(),
            self.image.tag,
            worktree,
            mounts=self.mounts,
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


def image_plan(spec: EnvSpec, from_images: Mapping[str, str] | None = None) -> ImagePlan:
    """The base image plan for ``spec`` on this host: its CA bundle, coevo's tools."""
    if spec.language != "java":
        return base_image_plan(spec, base_images(from_images), ca_bundle=host_ca_bundle())
    jars = [tool_jar(name) for name in TOOLS]
    return base_image_plan(
        spec,
        base_images(from_images),
        ca_bundle=host_ca_bundle(),
        tool_jars={path.name: path for path in jars},
        maven_archive=tool_jar("maven"),
    )


def prepare_environment(
    spec: EnvSpec,
    backend: str = "auto",
    build_files: Mapping[str, bytes] | None = None,
    build_args: Sequence[str] = (),
    from_images: Mapping[str, str] | None = None,
) -> tuple[Environment, bool]:
    """The environment for ``spec``, its images built (Docker), and whether they were all cached.

    ``build_files`` (:func:`~runners.envspec.maven_build_files`) add a deps image over the
    Java base image; ``build_args`` are the repository's own Maven arguments.
    """
    backend = resolve_backend(backend)
    if backend == "local":
        if spec.language == "java":
            return Environment("local", spec, MavenTool(maven_args=build_args)), True
        return Environment("local", spec, get_build_tool(spec.build_tool)), True
    if spec.language not in ("java", "python"):
        raise BackendUnsupported(f"no Docker environment for {spec.language}; use --backend local")
    plan = image_plan(spec, from_images)
    client = docker_client()
    cached = build_image(client, plan)
    if spec.language == "python":
        # Venvs live on the host, mounted at the same path, keyed by the container's interpreter.
        python = plan.key.removeprefix("python")
        interpreter = FoundPython(Path(f"/usr/bin/python{python}"), f"{python} in {plan.tag}")
        venvs = venvs_root()
        tool = PytestTool(python=interpreter, scratch_root=venvs / "scratch")
        mounts = (Mount(venvs, str(venvs), writable=True),)
        return Environment("docker", spec, tool, plan, mounts, same_paths=True), cached
    if build_files:
        plan = deps_image_plan(plan, build_files, build_args)
        cached = build_image(client, plan) and cached
    jdk_feature = int(plan.key.removeprefix("java"))
    maven = MavenTool(
        maven_repo=_IMAGE_M2,
        tool_path=lambda name: f"{_IMAGE_TOOLS}/{TOOLS[name].file_name}",
        jdk=lambda release: Jdk(
            home=Path(f"/usr/lib/jvm/java-{jdk_feature}-openjdk-amd64"), feature=jdk_feature
        ),
        maven_args=build_args,
        repo_tail=IMAGE_DEPS_REPO if build_files else None,
        pit_dir=IMAGE_PIT,
    )
    m2 = (Mount(Path(maven_repository()), _IMAGE_M2, writable=True),)
    return Environment("docker", spec, maven, plan, m2), cached
