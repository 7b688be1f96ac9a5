"""Read-side views of the store for commands and reports."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from pydantic import BaseModel
from sqlmodel import col, select

from .errors import CoevoError
from .models import Candidate, FocalLink, MethodChange, Repository, RevisionPair, TestChangeKind
from .store import Store


class UnknownRepository(CoevoError):
    """A repository name the store does not hold."""


class FocalView(BaseModel):
    file: str
    method: str
    kind: str
    provenance: list[str]


class CandidateView(BaseModel):
    """A candidate with its pair's revisions and dates and its static focal links."""

    id: int
    repository: str
    rev1: str
    rev2: str
    rev1_date: datetime
    rev2_date: datetime
    span_seconds: int
    test_file: str
    test_method: str
    change_kind: TestChangeKind
    focal: list[FocalView]


class CandidateListing(BaseModel):
    total: int
    by_kind: dict[str, int]
    by_repository: dict[str, int]
    candidates: list[CandidateView]


def list_candidates(
    store: Store,
    repository: str | None = None,
    kind: TestChangeKind | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int | None = None,
) -> CandidateListing:
    """Candidates matching the filters, newest rev2 first, with counts over all that match."""
    with store.session() as session:
        query = (
            select(Candidate, RevisionPair, Repository)
            .join(RevisionPair, col(Candidate.pair_id) == RevisionPair.id)
            .join(Repository, col(Candidate.repository_id) == Repository.id)
        )
        if repository is not None:
            if session.exec(select(Repository).where(Repository.name == repository)).first() is None:
                names = ", ".join(session.exec(select(Repository.name)).all()) or "none yet"
                raise UnknownRepository(f"no repository named {repository!r} (known: {names})")
            query = query.where(Repository.name == repository)
        if kind is not None:
            query = query.where(Candidate.change_kind == kind)
        if since is not None:
            query = query.where(col(RevisionPair.rev2_date) >= since)
        if until is not None:
            query = query.where(col(RevisionPair.rev2_date) < until)
        query = query.order_by(
            col(RevisionPair.rev2_date).desc(), col(Candidate.test_file), col(Candidate.test_method)
        )
        rows = session.exec(query).all()
        by_kind = Counter(str(candidate.change_kind) for candidate, _, _ in rows)
        by_repo = Counter(repo.name for _, _, repo in rows)
        shown = rows if limit is None else rows[:limit]
        ids = [candidate.id for candidate, _, _ in shown]
        links = session.exec(
            select(FocalLink, MethodChange)
            .join(MethodChange, col(FocalLink.method_change_id) == MethodChange.id)
            .where(col(FocalLink.candidate_id).in_(ids))
        ).all()
    focal: dict[int, dict[int, FocalView]] = {}
    for link, change in links:
        assert change.id is not None
        views = focal.setdefault(link.candidate_id, {})
        view = views.setdefault(
            change.id,
            FocalView(file=change.file, method=change.method, kind=change.kind, provenance=[]),
        )
        view.provenance.append(str(link.provenance))
    return CandidateListing(
        total=len(rows),
        by_kind=dict(sorted(by_kind.items())),
        by_repository=dict(sorted(by_repo.items())),
        candidates=[
            CandidateView(
                id=candidate.id or 0,
                repository=repo.name,
                rev1=pair.rev1,
                rev2=pair.rev2,
                rev1_date=pair.rev1_date,  # type: ignore[arg-type]
                rev2_date=pair.rev2_date,  # type: ignore[arg-type]
                span_seconds=pair.span_seconds,
                test_file=candidate.test_file,
                test_method=candidate.test_method,
                change_kind=candidate.change_kind,
                focal=sorted(focal.get(candidate.id or 0, {}).values(), key=lambda f: (f.file, f.method)),
            )
            for candidate, pair, repo in shown
        ],
    )
