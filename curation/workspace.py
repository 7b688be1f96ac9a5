"""Built revisions shared by the pairs that need them: one worktree and one build per revision.

Consecutive pairs share revisions (one pair's rev2 is often the next one's rev1), so a
revision is exported and built once, under a file lock: a second worker that needs it waits
for the first build and then reuses it, and no two workers ever build the same revision at
once. The build's outcome is written beside the worktree; a build killed half-way leaves no
outcome, and the next user starts that revision over.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from runners import (
    BuildResult,
    Environment,
    EnvSpec,
    GitTree,
    detect_env,
    export_revision,
    prepare_environment,
)
from runners.envspec import maven_build_files
from tasks import CoevoError

WORK_ENV = "COEVO_WORK"


def work_root() -> Path:
    """Where built revisions live: ``$COEVO_WORK`` or ``~/.cache/coevo/work``."""
    configured = os.environ.get(WORK_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "coevo" / "work"


@dataclass(frozen=True)
class BuiltRevision:
    """A revision's worktree and environment, and whether it built (``env_failed`` when no
    environment could be made for it, ``failed`` when the build itself failed)."""

    sha: str
    status: str
    """``ok``, ``failed`` or ``env_failed``."""
    message: str
    spec: EnvSpec | None = None
    environment: Environment | None = None
    worktree: Path | None = None
    image: str | None = None


def revision_dir(root: Path, repository_id: int, sha: str, backend: str) -> Path:
    return root / f"repo-{repository_id}" / f"{sha}-{backend}"


def prepare_revision(
    root: Path,
    repository_id: int,
    repo_path: Path,
    sha: str,
    language: str,
    backend: str,
    build_args: Sequence[str] = (),
    base_images: Mapping[str, str] | None = None,
    timeout: float = 1800,
) -> BuiltRevision:
    """The revision exported and built (once, whoever asks first), or why it could not be."""
    folder = revision_dir(root, repository_id, sha, backend)
    try:
        spec = detect_env(GitTree(repo_path, sha), language)
        files = maven_build_files(GitTree(repo_path, sha), spec) if spec.language == "java" else None
        environment, _ = prepare_environment(spec, backend, files, build_args, base_images)
    except CoevoError as exc:
        return BuiltRevision(sha, "env_failed", str(exc))
    image = environment.image.tag if environment.image else None
    with _locked(folder):
        outcome = folder / "build.json"
        worktree = folder / "work"
        if not outcome.is_file():
            if folder.exists():
                shutil.rmtree(worktree, ignore_errors=True)
            try:
                export_revision(repo_path, sha, worktree)
                built = _build(environment, spec, worktree, timeout)
            except CoevoError as exc:
                built = BuildResult(False, str(exc))
            temporary = outcome.with_suffix(".tmp")
            temporary.write_text(json.dumps({"ok": built.ok, "message": built.message}))
            temporary.replace(outcome)
        recorded = json.loads(outcome.read_text())
    status = "ok" if recorded["ok"] else "failed"
    return BuiltRevision(sha, status, recorded["message"], spec, environment, worktree, image)


def release_revision(root: Path, repository_id: int, sha: str, backend: str) -> None:
    """Deletes a revision's worktree (no pair needs it any more)."""
    folder = revision_dir(root, repository_id, sha, backend)
    with _locked(folder):
        shutil.rmtree(folder / "work", ignore_errors=True)
        (folder / "build.json").unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        folder.rmdir()


def _build(environment: Environment, spec: EnvSpec, worktree: Path, timeout: float) -> BuildResult:
    sandbox = environment.sandbox(worktree, network=True)
    try:
        return environment.tool.build(sandbox, spec, timeout)
    finally:
        sandbox.close()


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder.with_name(folder.name + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
