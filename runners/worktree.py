"""Scratch worktrees: a revision's files in a folder, without history (git archive | tar)."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

from tasks import CoevoError


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
