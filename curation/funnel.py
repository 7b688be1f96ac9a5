"""The funnel: how many units entered and left every stage, by reason, per repository and overall."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import and_, func
from sqlmodel import col, select

from runners import cause_line
from tasks import (
    Candidate,
    CuratedPair,
    CurationRecord,
    DiscoveredRepository,
    MinedCommit,
    MiningRun,
    Repository,
    RevisionPair,
    Store,
    Task,
    UnknownRepository,
)


@dataclass
class Funnel:
    """One repository's funnel (or the sum of all), stage by stage."""

    discovered: int = 0
    """Repositories ``coevo discover`` found on GitHub (counted overall only: a rejected one has
    no repository row)."""
    rejected: Counter[str] = field(default_factory=Counter)
    """Discovered repositories that did not qualify, by reason (``inactive``, ``no_licence``…)."""
    qualified: int = 0
    registered: int = 0
    """Qualified repositories registered for mining (``coevo discover --add``)."""
    repositories: int = 0
    commits_scanned: int = 0
    """Non-merge commits the selection passes read."""
    commits_selected: int = 0
    """Commits that touched test or production code of the language."""
    test_commits: Counter[str] = field(default_factory=Counter)
    """Commits that changed test code, by what the miner made of them."""
    pairs: int = 0
    candidates: Counter[str] = field(default_factory=Counter)
    """By change kind."""
    pairs_curated: int = 0
    builds: Counter[str] = field(default_factory=Counter)
    """Curated pairs by their builds: ``ok``, ``build_failed``, ``env_failed``, ``not_built``."""
    records: int = 0
    not_curated: Counter[str] = field(default_factory=Counter)
    """Candidates with no record, by change kind: their pair is not curated yet, or their kind was
    not asked for (``coevo curate`` takes inserted and updated tests unless ``--kinds all``)."""
    classes: Counter[str] = field(default_factory=Counter)
    drops: Counter[str] = field(default_factory=Counter)
    tasks: Counter[str] = field(default_factory=Counter)
    """By track."""
    causes: dict[str, Counter[str]] = field(default_factory=dict)
    """Per drop reason, the candidates dropped by each cause (the cause line of their detail:
    ``rev2 0123456789: pytest: error: unrecognized arguments: …``)."""

    def add(self, other: Funnel) -> None:
        for name, value in vars(other).items():
            mine = getattr(self, name)
            if isinstance(value, Counter):
                mine.update(value)
            elif isinstance(value, dict):
                for key, counts in value.items():
                    mine.setdefault(key, Counter()).update(counts)
            else:
                setattr(self, name, mine + value)

    def as_json(self) -> dict[str, Any]:
        return {name: _jsonable(value) for name, value in vars(self).items()}

    def top_causes(self, per_reason: int = 3) -> list[tuple[str, int, str]]:
        """(drop reason, count, cause) rows: each reason's most common causes, most dropped first;
        a last row per reason counts the causes left out."""
        rows: list[tuple[str, int, str]] = []
        for reason, _ in self.drops.most_common():
            counts = self.causes.get(reason, Counter())
            ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
            rows += [(reason, n, cause) for cause, n in ranked[:per_reason]]
            rest = ranked[per_reason:]
            if rest:
                rows.append((reason, sum(n for _, n in rest), f"({len(rest)} other causes)"))
        return rows

    def stages(self) -> list[tuple[str, int, str]]:
        """(stage, count, breakdown) rows, in pipeline order."""

        def parts(counter: Counter[str]) -> str:
            return ", ".join(f"{n} {k}" for k, n in counter.most_common())

        discovery = [
            ("discovered", self.discovered, "on GitHub"),
            ("rejected", sum(self.rejected.values()), parts(self.rejected)),
            ("qualified", self.qualified, f"{self.registered} registered"),
        ]
        return [
            *(discovery if self.discovered else []),
            ("repositories", self.repositories, ""),
            ("commits scanned", self.commits_scanned, ""),
            ("commits selected", self.commits_selected, "touched code of the language"),
            ("test commits", sum(self.test_commits.values()), parts(self.test_commits)),
            ("candidate pairs", self.pairs, ""),
            ("candidates", sum(self.candidates.values()), parts(self.candidates)),
            ("pairs curated", self.pairs_curated, parts(self.builds)),
            ("records", self.records, ""),
            ("not curated", sum(self.not_curated.values()), parts(self.not_curated)),
            ("classes", sum(self.classes.values()), parts(self.classes)),
            ("dropped", sum(self.drops.values()), parts(self.drops)),
            ("tasks", sum(self.tasks.values()), parts(self.tasks)),
        ]


def funnel(store: Store, repository: str | None = None) -> tuple[Funnel, dict[str, Funnel]]:
    """The overall funnel and each repository's (only ``repository`` when given)."""
    per_repo: dict[str, Funnel] = {}
    with store.session() as session:
        repos = session.exec(select(Repository).order_by(col(Repository.name))).all()
        if repository is not None:
            repos = [r for r in repos if r.name == repository]
            if not repos:
                raise UnknownRepository(f"no repository named {repository!r} in the database")
        for repo in repos:
            rid = repo.id
            f = Funnel(repositories=1)
            scanned, selected = session.exec(
                select(
                    func.coalesce(func.sum(MiningRun.commits_scanned), 0),
                    func.coalesce(func.sum(MiningRun.commits_selected), 0),
                ).where(MiningRun.repository_id == rid)
            ).one()
            f.commits_scanned, f.commits_selected = int(scanned), int(selected)
            f.test_commits = _count(session, MinedCommit.outcome, MinedCommit.repository_id == rid)
            f.pairs = _scalar(
                session, select(func.count(col(RevisionPair.id))).where(RevisionPair.repository_id == rid)
            )
            f.candidates = _count(session, Candidate.change_kind, Candidate.repository_id == rid)
            curated = session.exec(select(CuratedPair).where(CuratedPair.repository_id == rid)).all()
            f.pairs_curated = len(curated)
            f.builds = Counter(_build_state(pair) for pair in curated)
            records = session.exec(
                select(CurationRecord.label, CurationRecord.drop_reason, CurationRecord.detail).where(
                    CurationRecord.repository_id == rid
                )
            ).all()
            f.records = len(records)
            f.not_curated = _count(
                session,
                Candidate.change_kind,
                and_(
                    col(Candidate.repository_id) == rid,
                    col(Candidate.id).not_in(select(CurationRecord.candidate_id)),
                ),
            )
            f.classes = Counter(str(label) for label, reason, _ in records if reason is None)
            f.drops = Counter(str(reason) for _, reason, _ in records if reason is not None)
            for _, reason, detail in records:
                if reason is not None:
                    f.causes.setdefault(str(reason), Counter())[cause_line(detail) or "-"] += 1
            f.tasks = _count(session, Task.track, Task.repository_id == rid)
            per_repo[repo.name] = f
    overall = Funnel()
    for f in per_repo.values():
        overall.add(f)
    if repository is None:
        _add_discovery(store, overall)
    return overall, per_repo


def _add_discovery(store: Store, overall: Funnel) -> None:
    with store.session() as session:
        rows = session.exec(
            select(
                DiscoveredRepository.qualified, DiscoveredRepository.reason, DiscoveredRepository.registered
            )
        ).all()
    overall.discovered = len(rows)
    overall.qualified = sum(1 for qualified, _, _ in rows if qualified)
    overall.registered = sum(1 for qualified, _, registered in rows if qualified and registered)
    overall.rejected = Counter(reason for qualified, reason, _ in rows if not qualified)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _jsonable(inner) for key, inner in value.items()}
    return value


def _build_state(pair: CuratedPair) -> str:
    states = {pair.rev1_build, pair.rev2_build}
    if "env_failed" in states:
        return "env_failed"
    if "failed" in states:
        return "build_failed"
    return "ok" if states == {"ok"} else "not_built"


def _count(session: Any, column: Any, condition: Any) -> Counter[str]:
    rows = session.exec(select(column, func.count()).where(condition).group_by(column)).all()
    return Counter({str(key): int(n) for key, n in rows})


def _scalar(session: Any, query: Any) -> int:
    return int(session.exec(query).one())
