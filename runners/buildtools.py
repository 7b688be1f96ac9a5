"""What a build tool is and gives (:class:`BuildTool`, :class:`BuildResult`, :class:`TestRun`); the
build tools themselves are listed in :mod:`runners.toolchains`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from tasks import CoevoError

from .environments.envspec import EnvSpec
from .results import TestResult
from .sandbox.base import ExecResult, Sandbox


class UnknownBuildTool(CoevoError):
    """An EnvSpec names a build tool :mod:`runners.toolchains` does not list."""


@dataclass(frozen=True)
class BuildChoice:
    """One thing chosen for a build, and why: a line of the revision's build record (``jdk`` ``11``:
    "Java 8 from the pom; JDK 8 failed: …"; ``python`` ``3.9``; ``dependencies`` ``2021-04-02``)."""

    name: str
    """What was chosen: ``jdk``, ``maven``, ``level``, ``python``, ``dependencies``, ``retry``…"""
    value: str
    why: str = ""


@dataclass(frozen=True)
class BuildResult:
    """Whether a revision built, and the command output that says why not."""

    ok: bool
    message: str = ""
    """What failed, whole (the tool's output, bounded: :func:`~runners.results.bounded`), or
    (when ``ok``) what was worked around; :func:`~runners.results.cause_line` gives its one line."""
    log: ExecResult | None = None
    choices: tuple[BuildChoice, ...] = ()
    """What the build was made with and why, in order (its build record)."""
    installed: tuple[str, ...] = ()
    """What the build resolved: Python, every distribution of the venv as ``name==version``; Java,
    the resolved dependency coordinates. Sorted."""
    production_only: bool = False
    """Java: the revision's tests did not compile and its production code was built alone: it can
    run another revision's tests (the NO cell), not its own (:attr:`message` says why)."""


@dataclass(frozen=True)
class Coverage:
    """Lines covered per source file (repository-relative paths), for one test."""

    lines: dict[str, frozenset[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class TestRun:
    """Outcomes of the tests asked for (every one of them: missing ones are ``absent``)."""

    __test__ = False

    results: tuple[TestResult, ...]
    coverage: dict[str, Coverage] = field(default_factory=dict)
    """Per test id, when coverage was asked for."""
    log: ExecResult | None = None


class BuildTool(Protocol):
    """Builds a revision once, then runs chosen tests in it."""

    name: str

    def build(self, sandbox: Sandbox, spec: EnvSpec, timeout: float) -> BuildResult:
        """Prepares the worktree (compile, install dependencies) so tests can run offline."""

    def build_production(
        self, sandbox: Sandbox, spec: EnvSpec, timeout: float, failed: BuildResult
    ) -> BuildResult | None:
        """After the build ``failed`` on the tests, the production code built alone, so another
        revision's tests can run on it; None when that does not apply."""

    def run_tests(
        self,
        sandbox: Sandbox,
        spec: EnvSpec,
        tests: Sequence[str],
        timeout: float,
        coverage: bool = False,
    ) -> TestRun:
        """Runs the tests (``pkg.Class#method`` or pytest node ids) and reads their outcomes."""


class BuiltSide(Protocol):
    """A built revision that runs tests (:class:`~runners.environments.sides.Side`), as a
    toolchain's cross runs and mutation see it."""

    spec: EnvSpec
    worktree: Path

    @property
    def sandbox(self) -> Sandbox:
        """Where its tests run (network off)."""

    @property
    def tool(self) -> BuildTool:
        """The build tool it was built with."""
