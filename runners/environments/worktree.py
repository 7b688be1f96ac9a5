"""A revision's files: read from git (:class:`GitTree`) or a folder (:class:`FolderTree`) through
:class:`TreeReader`, or written into a folder without history (:func:`export_revision`: git
archive | tar)."""

from __future__ import annotations

import functools
import re
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
    """A revision of a git repository, read from git; no checkout needed.

    A commit given by its full id has a tree that never changes: its listing is read once (one
    ``git ls-tree`` for the last few commits read) and answers which paths exist and what a folder
    holds without a process each; a file is read by its blob id. A revision given by name (a
    branch, ``HEAD``), or an unusual path, is asked of git each time."""

    repo: Path
    revision: str

    def _listing(self) -> dict[str, tuple[str, str]] | None:
        """The commit's listing (path → type, object id), when the revision is a full commit id
        that git can list."""
        if not _FULL_ID.fullmatch(self.revision):
            return None
        try:
            return _listing(self.repo, self.revision)
        except _Unlisted:
            return None

    def _listed(self, path: str) -> tuple[dict[str, tuple[str, str]], str] | None:
        """The listing and ``path`` as it spells it, when the listing can answer for ``path``."""
        key = path.rstrip("/")
        listing = self._listing() if _plain(key) else None
        return (listing, key) if listing is not None else None

    def read(self, path: str) -> bytes | None:
        listed = self._listed(path)
        if listed is not None:
            kind, oid = listed[0].get(listed[1], ("", ""))
            if not kind:
                return None
            if kind == "blob":
                result = subprocess.run(
                    ["git", "-C", str(self.repo), "cat-file", "blob", oid], capture_output=True, check=False
                )
                return result.stdout if result.returncode == 0 else None
        result = subprocess.run(  # by name, a folder (git prints its listing) or a submodule
            ["git", "-C", str(self.repo), "show", f"{self.revision}:{path}"],
            capture_output=True,
            check=False,
        )
        return result.stdout if result.returncode == 0 else None

    def exists(self, path: str) -> bool:
        listed = self._listed(path)
        if listed is not None:
            return listed[1] in listed[0]
        result = subprocess.run(
            ["git", "-C", str(self.repo), "cat-file", "-e", f"{self.revision}:{path}"],
            capture_output=True,
            check=False,
        )
        return result.returncode == 0

    def files(self) -> list[str]:
        """Every file's path in the revision."""
        listing = self._listing()
        if listing is not None:
            return [path for path, (kind, _) in listing.items() if kind != "tree"]
        result = subprocess.run(
            ["git", "-C", str(self.repo), "ls-tree", "-r", "--name-only", "-z", self.revision],
            capture_output=True,
            check=True,
        )
        return [path for path in result.stdout.decode("utf-8", errors="replace").split("\0") if path]

    def list_dir(self, path: str) -> list[str]:
        listed = self._listed(path)
        if listed is not None:
            listing, folder = listed
            return sorted(
                name for parent, _, name in (p.rpartition("/") for p in listing) if parent == folder
            )
        folder = f"{path.rstrip('/')}/"
        result = subprocess.run(
            ["git", "-C", str(self.repo), "ls-tree", "--name-only", "-z", self.revision, folder],
            capture_output=True,
            check=False,
        )
        names = result.stdout.decode(errors="replace").split("\0") if result.returncode == 0 else []
        return sorted(PurePosixPath(name).name for name in names if name)


_FULL_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def _plain(path: str) -> bool:
    """A path relative to the tree's root as git's listing spells it (no ``.``, ``..`` or empty
    parts, no trailing ``/``): only such a path is looked up in a listing."""
    return all(part not in ("", ".", "..") for part in path.split("/"))


class _Unlisted(Exception):
    """git could not list the commit: it is asked path by path instead (nothing is kept)."""


@functools.lru_cache(maxsize=4)
def _listing(repo: Path, commit: str) -> dict[str, tuple[str, str]]:
    """Every path of ``commit``'s tree, folders too: path → (type, object id)."""
    result = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "-t", "-z", "--full-tree", commit],
        capture_output=True,
        check=False,
    )
    if result.returncode != 0:
        raise _Unlisted(commit)
    entries: dict[str, tuple[str, str]] = {}
    for record in result.stdout.split(b"\0"):
        head, _, name = record.partition(b"\t")
        fields = head.split()
        if len(fields) == 3 and name:
            # As the rest of coevo reads paths: a name that is not UTF-8 gets U+FFFD, never a surrogate.
            entries[name.decode("utf-8", errors="replace")] = (fields[1].decode(), fields[2].decode())
    return entries


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
