"""The toolchains coevo builds and runs revisions with, in one table: a language's build tools by
the name an :class:`~runners.environments.envspec.EnvSpec` gives (``spec.build_tool``). Adding a build tool
or a language is a row here; no module registers itself on import."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .buildtools import BuildTool, UnknownBuildTool
from .java.maven import MavenTool
from .python.pytest_tool import PytestTool


@dataclass(frozen=True)
class Toolchain:
    """One language's build tools, each constructed without arguments, by name."""

    language: str
    build_tools: Mapping[str, Callable[[], BuildTool]]


TOOLCHAINS = (
    Toolchain("java", {"maven": MavenTool, "maven-wrapper": MavenTool}),
    Toolchain("python", {"pip": PytestTool}),
)


def get_build_tool(name: str) -> BuildTool:
    """The build tool called ``name`` (``maven``, ``maven-wrapper``, ``pip``)."""
    for toolchain in TOOLCHAINS:
        if name in toolchain.build_tools:
            return toolchain.build_tools[name]()
    known = sorted(tool for toolchain in TOOLCHAINS for tool in toolchain.build_tools)
    raise UnknownBuildTool(f"no build tool {name!r}; known: {', '.join(known)}")
