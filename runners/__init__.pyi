"""Environments, sandboxes, build tools and scoring: how coevo builds and runs revisions."""

from .buildtools import (
    BuildChoice,
    BuildResult,
    BuildTool,
    Coverage,
    TestRun,
    UnknownBuildTool,
)
from .environments.environment import Environment, resolve_backend
from .environments.envspec import BrokenBuildFile, EnvSpec, NoBuildFound, detect_env
from .environments.images import ImageBuildFailed, ImagePlan, base_image_plan, build_image, host_ca_bundle
from .environments.worktree import FolderTree, GitTree, TreeReader, WorktreeFailed, export_revision
from .java.jdk import Jdk, JdkPlan, NoSuitableJdk, choose_jdk, find_jdks
from .java.maven import CROSS_CLASSES_DIR, LauncherFailed, MavenTool, NotBuilt
from .java.tools import ToolDownloadFailed, UnknownTool, tool_jar
from .python.pytest_tool import PytestTool
from .python.venvs import NoPython, VenvBuildFailed, find_python, venv_for
from .results import MESSAGE_LIMIT, Outcome, TestResult, bounded, cause_line, in_context, parse_junit_xml
from .sandbox.base import BACKENDS, ExecResult, LocalSandbox, Sandbox
from .sandbox.docker_sandbox import DockerSandbox, DockerUnavailable, Mount, docker_client, remove_leftovers
from .sandbox.leftovers import remove_dead_leftovers
from .scoring.workspace import reset_test_file
from .toolchains import TOOLCHAINS, NoToolchain, Toolchain, get_build_tool, prepare_environment, toolchain

__all__ = [
    "BACKENDS",
    "CROSS_CLASSES_DIR",
    "MESSAGE_LIMIT",
    "TOOLCHAINS",
    "BrokenBuildFile",
    "BuildChoice",
    "BuildResult",
    "BuildTool",
    "Coverage",
    "DockerSandbox",
    "DockerUnavailable",
    "EnvSpec",
    "Environment",
    "ExecResult",
    "FolderTree",
    "GitTree",
    "ImageBuildFailed",
    "ImagePlan",
    "Jdk",
    "JdkPlan",
    "LauncherFailed",
    "LocalSandbox",
    "MavenTool",
    "Mount",
    "NoBuildFound",
    "NoPython",
    "NoSuitableJdk",
    "NoToolchain",
    "NotBuilt",
    "Outcome",
    "PytestTool",
    "Sandbox",
    "TestResult",
    "TestRun",
    "ToolDownloadFailed",
    "Toolchain",
    "TreeReader",
    "UnknownBuildTool",
    "UnknownTool",
    "VenvBuildFailed",
    "WorktreeFailed",
    "base_image_plan",
    "bounded",
    "build_image",
    "cause_line",
    "choose_jdk",
    "detect_env",
    "docker_client",
    "export_revision",
    "find_jdks",
    "find_python",
    "get_build_tool",
    "host_ca_bundle",
    "in_context",
    "parse_junit_xml",
    "prepare_environment",
    "remove_dead_leftovers",
    "remove_leftovers",
    "reset_test_file",
    "resolve_backend",
    "tool_jar",
    "toolchain",
    "venv_for",
]
