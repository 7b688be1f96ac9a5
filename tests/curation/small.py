"""Tiny histories curated end to end on the host: mine into a fresh store, curate, read the labels."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import select

from curation import DEFAULT_KINDS, CurateRequest, curate
from miner import MineRequest, mine
from tasks import Candidate, CurationRecord, TestChangeKind, open_store
from tests.gitrepo import GitRepo


def mined_and_curated(
    repo: GitRepo,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    language: str,
    timeout: float = 30,
    kinds: tuple[TestChangeKind, ...] = DEFAULT_KINDS,
) -> Path:
    """The store of ``repo`` mined and curated on the host, one run per cell, caches in ``tmp_path``."""
    monkeypatch.setenv("COEVO_WORK", str(tmp_path / "work"))
    db = tmp_path / "coevo.db"
    assert mine(open_store(db), MineRequest(location=str(repo.path), language=language)).status == "completed"
    request = CurateRequest(backend="local", test_timeout=timeout, reruns=1, kinds=kinds)
    report = curate(open_store(db), request)
    assert report.errors == {}
    return db


def curated_on_host(location: str, root: Path, reruns: int = 1) -> Path:
    """``root/coevo.db``: ``location`` mined and curated on the host, caches in ``root`` (for
    module-scoped fixtures, which have no ``monkeypatch``)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COEVO_WORK", str(root / "work"))
        db = root / "coevo.db"
        mine(open_store(db), MineRequest(location=location))
        assert not curate(open_store(db), CurateRequest(backend="local", reruns=reruns, workers=1)).errors
    return db


def records(db: Path) -> dict[str, CurationRecord]:
    """Each candidate's record, by its test method."""
    with open_store(db).session() as s:
        rows = s.exec(
            select(CurationRecord, Candidate).join(Candidate, Candidate.id == CurationRecord.candidate_id)  # type: ignore[arg-type]
        ).all()
    return {candidate.test_method: record for record, candidate in rows}
