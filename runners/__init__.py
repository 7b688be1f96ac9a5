"""Environments, sandboxes, build tools and scoring: how coevo builds and runs revisions."""

from .envspec import (
    BrokenBuildFile,
    EnvSpec,
    FolderTree,
    GitTree,
    NoBuildFound,
    TreeReader,
    detect_env,
)

__all__ = [
    "BrokenBuildFile",
    "EnvSpec",
    "FolderTree",
    "GitTree",
    "NoBuildFound",
    "TreeReader",
    "detect_env",
]
