"""A revision's files: read from git (:class:`GitTree`) or a folder (:class:`FolderTree`) through
:class:`TreeReader`, or written into a folder without history (:func:`export_revision`: git
archive | tar)."""

from __future__ import annotations

import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol

from tasks import CoevoError


class TreeReader(Protocol):
    """Read access to one revision's files."""

    def read(self, path: str) -> bytes | None:
        """The file's bytes, or None when it does not exist."""

    def exists(self, path: str) -> bool: ...

    def list_dir(self, path: str) -> list[str]:
        """The names of the files directly in folder ``path`` (none when it does not exist)."""


@dataclass(frozen=True)
class GitTree:
    """A revision of a git repository, read with ``git show``; no checkout needed."""

    repo: Path
    revision: str

    def read(self, path: str) -> bytes | None:
        result = subprocess.run(
            ["git", "-C", str(self.repo), "show", f"{self.revision}:{path}"],
            capture_output=True,
            check=False,
        )
        return result.stdout if result.returncode == 0 else None

    def exists(self, path: str) -> bool:
        result = subprocess.run(
            ["git", "-C", str(self.repo), "cat-file", "-e", f"{self.revision}:{path}"],
            capture_output=True,
            check=False,
        )
        return result.returncode == 0

    def files(self) -> list[str]:
        """Every file's path in the revision."""
        result = subprocess.run(
            ["git", "-C", str(self.repo), "ls-tree", "-r", "--name-only", "-z", self.revision],
            capture_output=True,
            check=True,
        )
        return [path for path in result.stdout.decode("utf-8", errors="replace").split("\0") if path]

    def list_dir(self, path: str) -> list[str]:
        result = subprocess.run(
            ["git", "-C", str(self.repo), "ls-tree", "--name-only", self.revision, f"{path.rstrip('/')}/"],
            capture_output=True,
            check=False,
        )
        names = result.stdout.decode(errors="replace").splitlines() if result.returncode == 0 else []
        return sorted(PurePosixPath(name).name for name in names)


@dataclass(frozen=True)
class FolderTree:
    """A folder on disk (a checkout or a scratch worktree)."""

    root: Path

    def read(self, path: str) -> bytes | None:
        target = self.root / path
        return target.read_bytes() if target.is_file() else None

    def exists(self, path: str) -> bool:
        return (self.root / path).exists()

    def list_dir(self, path: str) -> list[str]:
        folder = self.root / path
        return sorted(entry.name for entry in folder.iterdir() if entry.is_file()) if folder.is_dir() else []


class WorktreeFailed(CoevoError):
    """A revision's files could not be written out."""


def export_revision(repo: Path, revision: str, dest: Path) -> Path:
    """Writes the tree of ``revision`` into ``dest`` (created); works on bare repositories too."""
    check = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{revision}^{{tree}}"],
        capture_output=True,
        check=False,
    )
    if check.returncode != 0:
        raise WorktreeFailed(f"cannot export {revision} of {repo}: no such revision")
    dest.mkdir(parents=True, exist_ok=True)
    with subprocess.Popen(
        ["git", "-C", str(repo), "archive", "--format=tar", revision],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stdout is not None
        with tarfile.open(fileobj=proc.stdout, mode="r|") as archive:
            archive.extractall(dest, filter="data")
        stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise WorktreeFailed(f"cannot export {revision} of {repo}: {stderr.strip() or 'git archive failed'}")
    return dest
