"""Environments, sandboxes, build tools and scoring: how coevo builds and runs revisions."""

from .buildtools import (
    BuildResult,
    BuildTool,
    Coverage,
    TestRun,
    UnknownBuildTool,
    build_tool,
    get_build_tool,
)
from .envspec import (
    BrokenBuildFile,
    EnvSpec,
    FolderTree,
    GitTree,
    NoBuildFound,
    TreeReader,
    detect_env,
)
from .results import Outcome, TestResult, parse_junit_xml
from .sandbox import ExecResult, LocalSandbox, Sandbox

__all__ = [
    "BrokenBuildFile",
    "BuildResult",
    "BuildTool",
    "Coverage",
    "EnvSpec",
    "ExecResult",
    "FolderTree",
    "GitTree",
    "LocalSandbox",
    "NoBuildFound",
    "Outcome",
    "Sandbox",
    "TestResult",
    "TestRun",
    "TreeReader",
    "UnknownBuildTool",
    "build_tool",
    "detect_env",
    "get_build_tool",
    "parse_junit_xml",
]
