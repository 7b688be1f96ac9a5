"""What several test files build, built once per test run and handed out.

A fixture history mined and curated into a store is the slowest thing the suite makes, and
several files read the same one. :func:`curated_once` builds each once per run, keyed by its
content (the history's last commit, which fixed names and dates make the same every time, and
the curation's options), in the run's base temporary folder: with xdist, workers share it
through a file lock there, the pattern pytest-xdist documents for session fixtures, never
through a fixed path outside the run. The venvs of every such build share one folder of the run
too (:func:`run_venvs`): coevo keys and locks venvs itself, as it does for users.

A consumer gets its own copy of the store and of the built revisions (:meth:`Shared.copy`), which
it may write; the history and the venvs are shared: the history must not be written, and venvs
are made by coevo, which keys and locks them.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

import miner
from curation import CurateRequest, curate
from runners.environments.revisions import WORK_ENV
from runners.python.venvs import VENVS_ENV
from tasks import TestChangeKind, open_store


def run_folder(factory: pytest.TempPathFactory) -> Path:
    """The folder this test run shares between its xdist workers (the base temporary folder's
    parent under xdist: ``pytest-N``, the run's own), created on first use."""
    base = factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared"
    folder.mkdir(exist_ok=True)
    return folder


def run_venvs(factory: pytest.TempPathFactory) -> Path:
    """The venvs folder every shared build of this run uses."""
    folder = run_folder(factory) / "venvs"
    folder.mkdir(exist_ok=True)
    return folder


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@dataclass(frozen=True)
class Shared:
    """A curated history as built once: read it, never write it (:meth:`copy` to write)."""

    repo: Path
    db: Path
    work: Path
    venvs: Path
    shas: dict[str, str]
    """The history's commits by label (:attr:`tests.gitrepo.GitRepo.shas`), when it has them."""

    @property
    def env(self) -> dict[str, str]:
        """The caches the build used, for commands that reuse its built revisions and venvs."""
        return {WORK_ENV: str(self.work), VENVS_ENV: str(self.venvs)}

    def copy(self, target: Path) -> Shared:
        """The store (its write-ahead log's pages included) and the built revisions copied into
        ``target``, for the consumer to write; the history and the venvs stay shared."""
        target.mkdir(parents=True, exist_ok=True)
        db = target / "coevo.db"
        with sqlite3.connect(self.db) as source, sqlite3.connect(db) as copy:
            source.backup(copy)
        shutil.copytree(self.work, target / "work", symlinks=True)
        return Shared(self.repo, db, target / "work", self.venvs, self.shas)


def curated_once(
    factory: pytest.TempPathFactory,
    make: Callable[[Path], object],
    language: str = "auto",
    *,
    name: str = "repo",
    reruns: int = 3,
    test_timeout: float = 300.0,
) -> Shared:
    """The history ``make(folder)`` writes (in a folder called ``name``, the repository's name),
    mined and curated on the host (one worker), built the first time this run asks for it with
    these options and shared after that."""
    shared = run_folder(factory)
    staging = Path(tempfile.mkdtemp(prefix=".history-", dir=shared))
    made = make(staging / name)
    shas = dict(getattr(made, "shas", {}))
    head = subprocess.run(
        ["git", "-C", str(staging / name), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    options = {
        "name": name,
        "language": language,
        "reruns": reruns,
        "test_timeout": test_timeout,
    }
    key = hashlib.sha256(json.dumps({"head": head, **options}, sort_keys=True).encode()).hexdigest()[:16]
    folder = shared / f"history-{key}"
    with _locked(shared / f"history-{key}.lock"):
        if (folder / "done").is_file():
            shutil.rmtree(staging)
        else:
            shutil.rmtree(folder, ignore_errors=True)  # a build a failure left half made
            folder.mkdir()
            (staging / name).rename(folder / name)
            shutil.rmtree(staging)
            _curate(folder, folder / name, run_venvs(factory), language, reruns, test_timeout)
            (folder / "done").write_text(head)
    return Shared(folder / name, folder / "coevo.db", folder / "work", run_venvs(factory), shas)


def _curate(
    folder: Path,
    repo: Path,
    venvs: Path,
    language: str,
    reruns: int,
    test_timeout: float,
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(WORK_ENV, str(folder / "work"))
        patch.setenv(VENVS_ENV, str(venvs))
        db = folder / "coevo.db"
        mined = miner.mine(open_store(db), miner.MineRequest(location=str(repo), language=language))
        assert mined.status == "completed", mined.message
        # Every kind: the label-by-label checks include unchanged tests' negative records.
        request = CurateRequest(
            backend="local", workers=1, reruns=reruns, test_timeout=test_timeout, kinds=tuple(TestChangeKind)
        )
        report = curate(open_store(db), request)
        assert report.errors == {}, report.errors
        assert report.run.status == "completed"
