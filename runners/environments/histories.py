"""Where scoring reads a repository's history: a folder the user names, the store's own clone,
or a fresh clone of the recorded URL (a store imported from a snapshot on another machine)."""

from __future__ import annotations

import subprocess
from collections.abc import Collection, Mapping
from pathlib import Path

from miner import NotARepository, clone_path, is_url, local_checkout
from tasks import CoevoError, Repository


class HistoryUnavailable(CoevoError):
    """A repository's history cannot be found, or lacks the commits of its tasks."""


def check_repo_dirs(given: Mapping[str, Path], names: Collection[str]) -> None:
    """Refuses a ``--repo-dir NAME=PATH`` whose NAME is no repository of the store."""
    unknown = sorted(set(given) - set(names))
    if unknown:
        known = ", ".join(sorted(names)) or "none"
        raise HistoryUnavailable(
            f"--repo-dir {unknown[0]}: the store has no such repository (it has: {known})"
        )


def task_history(
    repo: Repository, commits: Collection[str], given: Mapping[str, Path], clone_root: Path | None = None
) -> Path:
    """The git directory holding ``commits`` of ``repo``: the folder ``given`` names for it, else
    the store's path, else a clone of its recorded URL into ``clone_root`` (``$COEVO_CLONES``),
    fetched only when it lacks ``commits`` (a scored store needs no network the second time).

    Raises :class:`HistoryUnavailable` with one line saying what to give instead.
    """
    if repo.name in given:
        where = f"--repo-dir {repo.name}={given[repo.name]}"
        try:
            path = local_checkout(str(given[repo.name]))
        except NotARepository as exc:
            raise HistoryUnavailable(f"{where}: {exc}") from None
        return _holding(path, commits, where)
    if repo.path and Path(repo.path).is_dir():
        return _holding(Path(repo.path), commits, f"the history of {repo.name} at {repo.path}")
    if is_url(repo.location):
        kept = clone_path(repo.location, clone_root)
        if (kept / "HEAD").exists():
            try:  # a clone made before that holds them: no network needed
                return _holding(kept, commits, f"the clone of {repo.location} at {kept}")
            except HistoryUnavailable:
                pass  # fetched below
        try:
            path = local_checkout(repo.location, clone_root)
        except NotARepository as exc:
            raise HistoryUnavailable(
                f"{repo.name}: {exc}; give --repo-dir {repo.name}=PATH of a clone"
            ) from None
        return _holding(path, commits, f"the clone of {repo.location} at {path}")
    where = f"not at {repo.path}" if repo.path else "not on this machine"
    raise HistoryUnavailable(
        f"the history of {repo.name} is {where} and no clone URL is recorded: "
        f"give --repo-dir {repo.name}=PATH of a clone"
    )


def _holding(path: Path, commits: Collection[str], where: str) -> Path:
    """``path``, when it holds every one of ``commits``."""
    wanted = sorted(set(commits))
    result = subprocess.run(
        ["git", "-C", str(path), "cat-file", "--batch-check"],
        input="".join(f"{sha}^{{commit}}\n" for sha in wanted),
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    answers = result.stdout.splitlines()
    missing = [sha for sha, answer in zip(wanted, answers, strict=False) if answer.endswith(" missing")]
    if result.returncode != 0 or len(answers) != len(wanted):
        missing = missing or wanted
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise HistoryUnavailable(f"{where} does not hold commit {missing[0][:12]}{more} of its tasks")
    return path
