"""The toolchains coevo builds and runs revisions with, in one table, a row per language: its
build tools by the name an :class:`~runners.environments.envspec.EnvSpec` gives
(``spec.build_tool``), how it finds the JDK or interpreter a revision gets on a backend (and sets
the build tool up with it), its base image, how it runs another revision's test file on a built
revision, and its mutation tool. Adding a language is a module like :mod:`runners.java.toolchain`
and a row here; no module registers itself on import."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from tasks import CoevoError

from .buildtools import BuildTool, BuiltSide, TestRun, UnknownBuildTool
from .environments.environment import Environment, EnvironmentRequest, resolve_backend
from .environments.envspec import EnvSpec, maven_build_files
from .environments.images import ImagePlan
from .environments.worktree import TreeReader
from .java import toolchain as java
from .java.jdk import JdkPlan
from .java.maven import MavenTool
from .java.outputs import judge_outputs
from .mutation import MutationResult
from .python import toolchain as python
from .python.pytest_tool import PytestTool


class NoToolchain(CoevoError):
    """A revision of a language no row of :data:`TOOLCHAINS` builds."""


class CrossRun(Protocol):
    def __call__(
        self,
        side: BuiltSide,
        test_file: str,
        content: bytes,
        ids: Sequence[str],
        tag: str,
        timeout: float,
        coverage: bool,
    ) -> TestRun:
        """``ids`` of ``content`` (another revision's ``test_file``) run on ``side``'s code, without
        changing its files (many runs share one built worktree), under the ids asked for."""


class MutationTool(Protocol):
    def __call__(
        self,
        side: BuiltSide,
        test_file: str,
        content: bytes,
        tests: Sequence[str],
        focal: Sequence[dict],
        tag: str,
        timeout: float,
        only_focal: bool = True,
        baseline: TestRun | None = None,
    ) -> MutationResult | None:
        """What ``tests`` (of ``content``, run by the cross run under ``tag``) make of the focal
        methods' mutants; None when none has a mutant."""


def _every_module(side: BuiltSide, test_file: str) -> bool:
    return True


@dataclass(frozen=True)
class Toolchain:
    """One language's way of building and running revisions."""

    language: str
    build_tools: Mapping[str, Callable[[], BuildTool]]
    """Each build tool by name, constructed without arguments."""
    environment: Callable[[EnvironmentRequest], tuple[Environment, bool]]
    """Finds the JDK or interpreter a revision gets on the request's backend and sets its build
    tool up with it: the environment (its images built), and whether they were all cached."""
    image: Callable[[EnvSpec, Mapping[str, str] | None, int | None], ImagePlan]
    """The base image plan of a revision (base images by key; Java: the JDK)."""
    run_cross: CrossRun
    mutation: MutationTool
    method_name: Callable[[str], str]
    """The method (or function) a test id names."""
    build_files: Callable[[TreeReader, EnvSpec], dict[str, bytes]] | None = None
    """The files a deps image is made of (Java's poms), when the language has one."""
    runs_tests_of: Callable[[BuiltSide, str], bool] = _every_module
    """Whether a built revision runs a test file's tests (a partial Maven build lacks some modules)."""
    retry_era: Callable[[EnvSpec, str], str | None] | None = None
    """What a build retry its build files alone decided holds for, on a backend, as text (Java: the
    era's JDK plan and the JDKs at hand); None when the language's builds learn nothing so."""
    judge_outputs: Callable[[Path, Path, EnvSpec, Sequence[str]], None] | None = None
    """Copies what a build left that the tests need from a built worktree into a judge tree (a
    fresh export of the revision), without anything compiled from the test files named; None when
    the tests need nothing of the build there (Python's venvs live elsewhere)."""


TOOLCHAINS = (
    Toolchain(
        "java",
        {"maven": MavenTool, "maven-wrapper": MavenTool},
        environment=java.java_environment,
        image=java.image_plan,
        run_cross=java.run_cross,
        mutation=java.mutation_score,
        method_name=java.method_name,
        build_files=maven_build_files,
        runs_tests_of=java.runs_tests_of,
        retry_era=java.jdk_era,
        judge_outputs=judge_outputs,
    ),
    Toolchain(
        "python",
        {"pip": PytestTool},
        environment=python.python_environment,
        image=python.image_plan,
        run_cross=python.run_cross,
        mutation=python.mutation_score,
        method_name=python.method_name,
    ),
)


def toolchain(language: str) -> Toolchain:
    """The row of ``language``."""
    for row in TOOLCHAINS:
        if row.language == language:
            return row
    known = ", ".join(row.language for row in TOOLCHAINS)
    raise NoToolchain(f"coevo cannot build {language} revisions (it builds {known})")


def get_build_tool(name: str) -> BuildTool:
    """The build tool called ``name`` (``maven``, ``maven-wrapper``, ``pip``)."""
    for row in TOOLCHAINS:
        if name in row.build_tools:
            return row.build_tools[name]()
    known = sorted(tool for row in TOOLCHAINS for tool in row.build_tools)
    raise UnknownBuildTool(f"no build tool {name!r}; known: {', '.join(known)}")


def build_files(tree: TreeReader, spec: EnvSpec) -> dict[str, bytes] | None:
    """The files of ``tree`` a deps image of ``spec``'s language is made of; None when it has none."""
    reader = toolchain(spec.language).build_files
    return reader(tree, spec) if reader is not None else None


def retry_era(spec: EnvSpec, backend: str) -> str | None:
    """What a retry ``spec``'s build files decided holds for on ``backend``
    (:attr:`Toolchain.retry_era`); None when its language learns nothing from retries."""
    era = toolchain(spec.language).retry_era
    return era(spec, backend) if era is not None else None


def image_plan(
    spec: EnvSpec, from_images: Mapping[str, str] | None = None, jdk: int | None = None
) -> ImagePlan:
    """The base image plan for ``spec`` on this host: its CA bundle, coevo's tools; for Java, JDK
    ``jdk`` (default: the one the spec's era asks for)."""
    return toolchain(spec.language).image(spec, from_images, jdk)


def prepare_environment(
    spec: EnvSpec,
    backend: str = "auto",
    build_files: Mapping[str, bytes] | None = None,
    build_args: Sequence[str] = (),
    from_images: Mapping[str, str] | None = None,
    jdk: JdkPlan | None = None,
) -> tuple[Environment, bool]:
    """The environment for ``spec``, its images built (Docker), and whether they were all cached.

    ``build_files`` (:func:`build_files`) add a deps image over the Java base image;
    ``build_args`` are the repository's own Maven arguments. Java builds with ``jdk`` (a recorded
    plan, a retry's), else the JDK of the revision's era; raises
    :class:`~runners.java.jdk.NoSuitableJdk` when that JDK cannot be had. A Python spec gets its
    interpreter chosen among the backend's (pyenv's on the host, the base images' in Docker): the
    environment's spec says which, and why in its last note.
    """
    backend = resolve_backend(backend)
    row = toolchain(spec.language)
    request = EnvironmentRequest(spec, backend, build_files, build_args, from_images, jdk)
    environment, cached = row.environment(request)

    def remake(other: JdkPlan) -> Environment:
        return prepare_environment(spec, backend, build_files, build_args, from_images, other)[0]

    if environment.jdk is not None:
        environment = dataclasses.replace(environment, remake=remake)
    return environment, cached
