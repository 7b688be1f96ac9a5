"""Discovery: GitHub's search → repositories that qualify for mining, and why the others do not.

Each repository the search finds is checked as published benchmark pipelines do, in this order,
and the first check it fails is its rejection reason (:class:`Rejection`):

1. ``fork``: a fork repeats another repository's history;
2. ``archived``: nobody will change it again;
3. ``no_licence`` / ``licence_not_permissive``: its licence must be one of
   :data:`PERMISSIVE_LICENCES`, so tasks made from it can be redistributed; none, or one GitHub
   cannot name (``NOASSERTION``), is ``no_licence``;
4. ``no_build_file``: the language's build file must be at its root (:data:`BUILD_FILES`), or the
   environment stage has nothing to build from;
5. ``inactive``: fewer than ``min_commits`` commits in the last 365 days: a live benchmark needs
   new commits to mine.

The cheap checks come first: the first three read the search answer itself, the last two cost a
request or a few each. Every result is a :class:`~tasks.DiscoveredRepository` row, qualified or
not, so the funnel counts the rejections; ``add`` registers the qualified ones for mining.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from enum import StrEnum
from typing import Any

from sqlmodel import select

from tasks import DiscoveredRepository, Store, utcnow

from .github import GitHubClient, GitHubError
from .languages import get_language
from .mining import register_url

PERMISSIVE_LICENCES = frozenset(
    {
        "MIT",
        "MIT-0",
        "Apache-2.0",
        "BSD-2-Clause",
        "BSD-3-Clause",
        "ISC",
        "0BSD",
        "Unlicense",
        "Zlib",
        "BSL-1.0",
    }
)
"""SPDX ids of the licences whose code may be redistributed in a benchmark with attribution only.
Copyleft (GPL, LGPL, AGPL, MPL, EPL) and source-available licences are left out: a task carries
the repository's code, and those would bind the benchmark's users."""

BUILD_FILES: dict[str, tuple[str, ...]] = {
    "java": ("pom.xml",),
    "python": ("pyproject.toml", "setup.py", "setup.cfg"),
}
"""The files at a repository's root that say coevo can build it, per language (any one will do)."""

DEFAULT_MIN_COMMITS = 50
DEFAULT_LIMIT = 100
_ACTIVITY_DAYS = 365
_PER_PAGE = 100


class Rejection(StrEnum):
    """Why a discovered repository does not qualify (the first check it failed)."""

    FORK = "fork"
    ARCHIVED = "archived"
    NO_LICENCE = "no_licence"
    LICENCE_NOT_PERMISSIVE = "licence_not_permissive"
    NO_BUILD_FILE = "no_build_file"
    INACTIVE = "inactive"


@dataclass(frozen=True)
class DiscoverRequest:
    """What to search for and how strict qualification is."""

    language: str
    min_stars: int = 0
    pushed_since: date | None = None
    """Only repositories pushed to on or after this day (GitHub's ``pushed:>=``)."""
    limit: int = DEFAULT_LIMIT
    """Repositories to take from the search, most starred first."""
    min_commits: int = DEFAULT_MIN_COMMITS
    """Commits in the last 365 days a repository needs to count as active."""
    add: bool = False
    """Register the qualified repositories for mining."""


@dataclass
class DiscoverProgress:
    """Callbacks a front end passes to follow a discovery (a progress bar)."""

    request: Callable[[int, int | None], None] = lambda requests, remaining: None
    """After each repository: requests sent so far and the quota GitHub last reported."""
    found: Callable[[DiscoveredRepository], None] = lambda row: None


@dataclass(frozen=True)
class DiscoverReport:
    """What a discovery found: one row per repository, in search order."""

    rows: tuple[DiscoveredRepository, ...]
    requests: int = 0
    """Requests sent to GitHub, 304s included."""
    not_modified: int = 0
    """Of those, the ones GitHub answered with 304 (no quota spent)."""
    rejections: Counter[str] = field(default_factory=Counter)

    @property
    def qualified(self) -> list[DiscoveredRepository]:
        return [row for row in self.rows if row.qualified]


def search_query(request: DiscoverRequest) -> str:
    """GitHub's search query for ``request`` (``language:java stars:>=10 pushed:>=2025-01-01 …``)."""
    terms = [f"language:{request.language}", f"stars:>={request.min_stars}"]
    if request.pushed_since is not None:
        terms.append(f"pushed:>={request.pushed_since.isoformat()}")
    return " ".join([*terms, "fork:false", "archived:false"])


def discover(
    store: Store, client: GitHubClient, request: DiscoverRequest, progress: DiscoverProgress | None = None
) -> DiscoverReport:
    """Searches GitHub for ``request``'s repositories, qualifies each, stores every result (a
    rediscovered repository's row is updated) and, with ``add``, registers the qualified ones."""
    get_language(request.language)
    progress = progress or DiscoverProgress()
    # A day's resolution: the commits URL stays the same all day, so a repeated discovery's
    # requests are conditional and cost nothing.
    today = datetime.fromtimestamp(client.clock.now(), UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    since = today - timedelta(days=_ACTIVITY_DAYS)
    params = {"q": search_query(request), "sort": "stars", "order": "desc", "per_page": _PER_PAGE}
    rows: list[DiscoveredRepository] = []
    for item in client.paginate("/search/repositories", params, limit=request.limit):
        row = _qualify(client, item, request, since)
        row = _save(store, row, request.add)
        rows.append(row)
        progress.found(row)
        progress.request(client.requests, client.remaining)
    return DiscoverReport(
        rows=tuple(rows),
        requests=client.requests,
        not_modified=client.not_modified,
        rejections=Counter(row.reason for row in rows if not row.qualified),
    )


def _qualify(
    client: GitHubClient, item: dict[str, Any], request: DiscoverRequest, since: datetime
) -> DiscoveredRepository:
    full_name = str(item["full_name"])
    licence = (item.get("license") or {}).get("spdx_id")
    licence = None if licence in (None, "", "NOASSERTION") else str(licence)
    row = DiscoveredRepository(
        full_name=full_name,
        clone_url=str(item.get("clone_url") or ""),
        html_url=str(item.get("html_url") or ""),
        language=request.language,
        stars=int(item.get("stargazers_count") or 0),
        licence=licence,
        pushed_at=_timestamp(item.get("pushed_at")),
    )
    reason, detail = _rejection(client, item, row, request, since)
    row.qualified, row.reason, row.detail = reason is None, str(reason or ""), detail
    return row


def _rejection(
    client: GitHubClient,
    item: dict[str, Any],
    row: DiscoveredRepository,
    request: DiscoverRequest,
    since: datetime,
) -> tuple[Rejection | None, str]:
    if item.get("fork"):
        return Rejection.FORK, "a fork"
    if item.get("archived"):
        return Rejection.ARCHIVED, "archived"
    if row.licence is None:
        return Rejection.NO_LICENCE, "no licence, or one GitHub cannot name"
    if row.licence not in PERMISSIVE_LICENCES:
        return Rejection.LICENCE_NOT_PERMISSIVE, row.licence
    candidates = BUILD_FILES[request.language]
    if not any(client.exists(f"/repos/{row.full_name}/contents/{name}") for name in candidates):
        return Rejection.NO_BUILD_FILE, "no " + " / ".join(candidates) + " at its root"
    row.commits_last_year = _commits_since(client, row.full_name, since, request.min_commits)
    if row.commits_last_year < request.min_commits:
        return (
            Rejection.INACTIVE,
            f"{row.commits_last_year} commits in the last year, fewer than {request.min_commits}",
        )
    return None, ""


def _commits_since(client: GitHubClient, full_name: str, since: datetime, enough: int) -> int:
    """Commits on the default branch since ``since``, counted only up to ``enough``: pages past
    the threshold would cost quota and change nothing."""
    params = {"since": since.isoformat().replace("+00:00", "Z"), "per_page": _PER_PAGE}
    try:
        return sum(1 for _ in client.paginate(f"/repos/{full_name}/commits", params, limit=enough))
    except GitHubError as exc:
        if exc.status == 409:  # GitHub's answer for an empty repository
            return 0
        raise


def _save(store: Store, found: DiscoveredRepository, add: bool) -> DiscoveredRepository:
    with store.session() as session:
        row = session.exec(
            select(DiscoveredRepository).where(DiscoveredRepository.full_name == found.full_name)
        ).first()
        if row is None:
            row = found
        else:
            registered = row.registered
            for name, value in found.model_dump(exclude={"id", "registered", "discovered_at"}).items():
                setattr(row, name, value)
            row.registered = registered
            row.discovered_at = utcnow()
        session.add(row)
        session.flush()
    if add and row.qualified and row.clone_url:
        register_url(store, row.clone_url, row.language, row.licence)
        with store.session() as session:
            row.registered = True
            session.add(row)
    return row


def _timestamp(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
