"""Environments, sandboxes, build tools and scoring: how coevo builds and runs revisions."""

from .buildtools import (
    BuildChoice,
    BuildResult,
    BuildTool,
    Coverage,
    TestRun,
    UnknownBuildTool,
)
from .docker_sandbox import DockerSandbox, DockerUnavailable, Mount, docker_client, remove_leftovers
from .environment import BackendUnsupported, Environment, prepare_environment, resolve_backend
from .envspec import BrokenBuildFile, EnvSpec, NoBuildFound, detect_env
from .images import ImageBuildFailed, ImagePlan, base_image_plan, build_image, host_ca_bundle
from .jdk import Jdk, JdkPlan, NoSuitableJdk, choose_jdk, find_jdks
from .leftovers import remove_dead_leftovers
from .maven import CROSS_CLASSES_DIR, LauncherFailed, MavenTool, NotBuilt
from .pytest_tool import PytestTool
from .results import MESSAGE_LIMIT, Outcome, TestResult, bounded, cause_line, in_context, parse_junit_xml
from .sandbox import BACKENDS, ExecResult, LocalSandbox, Sandbox
from .toolchains import TOOLCHAINS, Toolchain, get_build_tool
from .tools import ToolDownloadFailed, UnknownTool, tool_jar
from .venvs import NoPython, VenvBuildFailed, find_python, venv_for
from .workspace import reset_test_file
from .worktree import FolderTree, GitTree, TreeReader, WorktreeFailed, export_revision

__all__ = [
    "BACKENDS",
    "CROSS_CLASSES_DIR",
    "MESSAGE_LIMIT",
    "TOOLCHAINS",
    "BackendUnsupported",
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
    "venv_for",
]
