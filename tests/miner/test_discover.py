"""Discovery against a fake GitHub on loopback: qualification, rate limits, faults and ETags.

Every test talks HTTP to a real server (:mod:`tests.miner.github_fake`); time is a fake clock
whose ``sleep`` records the wait, so waiting for a reset an hour away takes no time.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import select

from curation import funnel
from miner import (
    DiscoverRequest,
    GitHubClient,
    GitHubError,
    StoreCache,
    clone_path,
    discover,
)
from tasks import DiscoveredRepository, ExportOptions, Repository, Store, Task, Track, open_store
from tasks.snapshot import _card, task_snapshot_row
from tests import cli

from .github_fake import NOW, FakeClock, FakeGitHub, FakeRepo, Reply, serve

SEARCH = "/search/repositories"

MIXED = [
    FakeRepo("acme/forked", stars=900, fork=True),
    FakeRepo("acme/dusty", stars=800, archived=True),
    FakeRepo("acme/unlicensed", stars=700, licence=None),
    FakeRepo("acme/unnamed", stars=650, licence="NOASSERTION"),
    FakeRepo("acme/copyleft", stars=600, licence="GPL-3.0"),
    FakeRepo("acme/gradle", stars=500, files=("build.gradle",)),
    FakeRepo("acme/quiet", stars=400, commits=12),
    FakeRepo("acme/busy", stars=300, licence="Apache-2.0", commits=120),
    FakeRepo("acme/steady", stars=200, licence="BSD-3-Clause", commits=50),
]

REASONS = [
    "fork",
    "archived",
    "no_licence",
    "no_licence",
    "licence_not_permissive",
    "no_build_file",
    "inactive",
]
"""Why each of MIXED but the last two is rejected."""
REJECTED = {
    "fork": 1, "archived": 1, "no_licence": 2, "licence_not_permissive": 1, "no_build_file": 1, "inactive": 1,
}  # fmt: skip


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return open_store(tmp_path / "d.db").open()


@pytest.fixture
def fake(clock: FakeClock) -> Iterator[FakeGitHub]:
    github = FakeGitHub(clock, [dataclasses.replace(repo) for repo in MIXED], page_size=3)
    with serve(github):
        yield github


def client(fake: FakeGitHub, clock: FakeClock, store: Store | None = None, **kwargs: object) -> GitHubClient:
    return GitHubClient(
        fake.base,
        clock=clock,
        rng=random.Random(7),
        cache=StoreCache(store) if store is not None else None,
        timeout=kwargs.pop("timeout", 5.0),  # type: ignore[arg-type]
        **kwargs,  # type: ignore[arg-type]
    )


def java(limit: int = 100, **kwargs: object) -> DiscoverRequest:
    return DiscoverRequest(language="java", limit=limit, **kwargs)  # type: ignore[arg-type]


def test_search_follows_next_links_across_pages_up_to_the_limit(
    fake: FakeGitHub, clock: FakeClock, store: Store
) -> None:
    fake.repos = [FakeRepo(f"acme/r{n}", stars=100 - n, licence="GPL-3.0") for n in range(8)]
    report = discover(store, client(fake, clock), java(limit=7, min_stars=10, pushed_since=None))
    assert [row.full_name for row in report.rows] == [f"acme/r{n}" for n in range(7)]
    searches = [seen for seen in fake.seen if seen.path == SEARCH]
    assert [seen.query.get("page") for seen in searches] == [None, "2", "3"]
    assert searches[0].query == {
        "q": "language:java stars:>=10 fork:false archived:false",
        "sort": "stars",
        "order": "desc",
        "per_page": "100",
    }

    fake.seen.clear()
    report = discover(store, client(fake, clock), java(limit=6))
    assert len(report.rows) == 6 and fake.hits(SEARCH) == 2, "no page is fetched past the limit"


def test_every_rejection_reason_and_the_qualified(fake: FakeGitHub, clock: FakeClock, store: Store) -> None:
    report = discover(store, client(fake, clock), java(min_commits=50))
    found = {
        row.full_name: (row.qualified, row.reason, row.detail, row.commits_last_year) for row in report.rows
    }
    assert found == {
        "acme/forked": (False, "fork", "a fork", None),
        "acme/dusty": (False, "archived", "archived", None),
        "acme/unlicensed": (False, "no_licence", "no licence, or one GitHub cannot name", None),
        "acme/unnamed": (False, "no_licence", "no licence, or one GitHub cannot name", None),
        "acme/copyleft": (False, "licence_not_permissive", "GPL-3.0", None),
        "acme/gradle": (False, "no_build_file", "no pom.xml at its root", None),
        "acme/quiet": (False, "inactive", "12 commits in the last year, fewer than 50", 12),
        "acme/busy": (True, "", "", 50),
        "acme/steady": (True, "", "", 50),
    }
    assert dict(report.rejections) == REJECTED
    assert [row.licence for row in report.rows] == [
        "MIT", "MIT", None, None, "GPL-3.0", "MIT", "MIT", "Apache-2.0", "BSD-3-Clause",
    ]  # fmt: skip
    # Cheap checks first: forks, archived and unlicensed repositories cost no request of their own.
    asked = {seen.path for seen in fake.seen}
    assert not any(
        path.startswith(("/repos/acme/forked", "/repos/acme/dusty", "/repos/acme/copyleft")) for path in asked
    )
    # Commits are counted only up to the threshold: 120 commits in pages of 3 need 17 pages, not 40.
    assert fake.hits("/repos/acme/busy/commits") == 17
    since = {seen.query["since"] for seen in fake.seen if seen.path.endswith("/commits")}
    assert since == {"2024-06-15T00:00:00Z"}, "a year before the clock's day, so the URL holds all day"


def test_python_accepts_any_of_its_build_files(fake: FakeGitHub, clock: FakeClock, store: Store) -> None:
    fake.repos = [
        FakeRepo("py/cfg", files=("setup.cfg",)),
        FakeRepo("py/modern", files=("pyproject.toml", "setup.py")),
        FakeRepo("py/none", files=("requirements.txt",)),
    ]
    report = discover(store, client(fake, clock), DiscoverRequest(language="python", min_commits=10))
    assert [(row.full_name, row.reason, row.detail) for row in report.rows] == [
        ("py/cfg", "", ""),
        ("py/modern", "", ""),
        ("py/none", "no_build_file", "no pyproject.toml / setup.py / setup.cfg at its root"),
    ]
    assert [seen.path for seen in fake.seen if "/contents/" in seen.path and "py/modern" in seen.path] == [
        "/repos/py/modern/contents/pyproject.toml"
    ], "the first build file found ends the look"


@pytest.mark.parametrize("status", [200, 403])
def test_an_exhausted_quota_waits_exactly_until_its_reset(
    fake: FakeGitHub, clock: FakeClock, store: Store, status: int
) -> None:
    fake.repos = [FakeRepo(f"acme/r{n}", licence=None) for n in range(5)]
    reset = int(NOW) + 1234
    exhausted = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(reset)}
    if status == 200:  # the last request of the quota succeeds; the next one must wait
        fake.inject(SEARCH, Reply(headers=exhausted))
    else:  # the quota was spent elsewhere: GitHub refuses until the reset
        fake.inject(SEARCH, Reply(403, exhausted, json.dumps({"message": "API rate limit exceeded"})))
    github = client(fake, clock)
    report = discover(store, github, java())
    assert len(report.rows) == 5
    assert clock.waits == [reset - NOW] == [1234.0]
    assert clock.now() == reset
    assert github.remaining is not None and github.remaining > 0


@pytest.mark.parametrize("status", [403, 429])
def test_a_secondary_limit_waits_retry_after(fake: FakeGitHub, clock: FakeClock, status: int) -> None:
    fake.inject(
        "/repos/acme/busy",
        Reply(
            status, {"Retry-After": "7"}, json.dumps({"message": "You have exceeded a secondary rate limit"})
        ),
    )
    fake.repos = [FakeRepo("acme/busy")]
    assert client(fake, clock).get("/repos/acme/busy")["full_name"] == "acme/busy"
    assert clock.waits == [7.0]
    assert [seen.status for seen in fake.seen] == [status, 200]


def test_a_forbidden_answer_without_limits_is_one_line(fake: FakeGitHub, clock: FakeClock) -> None:
    fake.inject("/repos/acme/busy", Reply(403, {}, json.dumps({"message": "Resource not accessible"})))
    with pytest.raises(GitHubError) as raised:
        client(fake, clock).get("/repos/acme/busy")
    assert str(raised.value) == "GET /repos/acme/busy answered 403: Resource not accessible"
    assert clock.waits == []


def _backoffs(seed: int, n: int) -> list[float]:
    rng = random.Random(seed)
    return [2 ** (k - 1) / 2 + rng.uniform(0, 2 ** (k - 1) / 2) for k in range(1, n + 1)]


def test_a_5xx_burst_is_retried_with_growing_jittered_backoff(
    fake: FakeGitHub, clock: FakeClock, store: Store
) -> None:
    fake.repos = [FakeRepo("acme/lib", commits=3)]
    burst = [Reply(502, {}, "<html>Bad Gateway</html>"), Reply(503), Reply(502), Reply(503)]
    fake.inject("/repos/acme/lib/commits", *burst)
    report = discover(store, client(fake, clock), java(min_commits=3))
    assert [(row.qualified, row.commits_last_year) for row in report.rows] == [(True, 3)]
    assert clock.waits == _backoffs(7, 4)
    for attempt, wait in enumerate(clock.waits, start=1):
        assert 2 ** (attempt - 1) / 2 <= wait <= 2 ** (attempt - 1)
    assert clock.waits == sorted(clock.waits)
    assert fake.hits("/repos/acme/lib/commits") == 5


def test_too_many_5xx_end_in_a_one_line_github_error(
    fake: FakeGitHub, clock: FakeClock, store: Store
) -> None:
    fake.inject(SEARCH, *[Reply(503)] * 5)
    with pytest.raises(GitHubError) as raised:
        discover(store, client(fake, clock), java())
    message = str(raised.value)
    assert message.startswith("GET /search/repositories?q=language%3Ajava")
    assert message.endswith(" answered 503 (5 attempts); try again later") and "\n" not in message
    assert raised.value.status == 503
    assert len(clock.waits) == 4 and fake.hits(SEARCH) == 5


def test_malformed_json_names_the_path(fake: FakeGitHub, clock: FakeClock, store: Store) -> None:
    fake.inject("/repos/acme/quiet/contents/pom.xml", Reply(200, {}, '{"name": "pom.xml", '))
    with pytest.raises(GitHubError) as raised:
        discover(store, client(fake, clock), java())
    assert str(raised.value) == "GET /repos/acme/quiet/contents/pom.xml returned malformed JSON"
    with store.session() as session:
        kept = session.exec(select(DiscoveredRepository.full_name)).all()
    assert len(kept) == 6, "the repositories checked before the fault keep their rows"


def test_a_slow_answer_times_out_and_is_retried(fake: FakeGitHub, clock: FakeClock) -> None:
    fake.repos = [FakeRepo("acme/lib")]
    fake.inject("/repos/acme/lib", Reply(delay=1.0))
    github = client(fake, clock, timeout=0.5)
    assert github.get("/repos/acme/lib")["full_name"] == "acme/lib"
    assert clock.waits == _backoffs(7, 1)
    assert fake.arrived["/repos/acme/lib"] == 2


def test_a_dropped_connection_is_retried_then_one_line(clock: FakeClock) -> None:
    github = GitHubClient("http://127.0.0.1:9", clock=clock, rng=random.Random(7), retries=2, timeout=2)
    with pytest.raises(GitHubError) as raised:
        github.get("/rate_limit")
    assert str(raised.value) == "GET /rate_limit connection failed (3 attempts); try again later"
    assert clock.waits == _backoffs(7, 2)


def test_a_second_discovery_revalidates_with_etags_and_costs_no_quota(
    fake: FakeGitHub, clock: FakeClock, store: Store
) -> None:
    first = discover(store, client(fake, clock, store), java())
    spent = fake.costly
    assert first.not_modified == 0 and spent == first.requests > 0
    fake.seen.clear()

    second = discover(store, client(fake, clock, store), java())
    assert [row.full_name for row in second.rows] == [row.full_name for row in first.rows]
    assert second.requests == len(fake.seen) == first.requests
    # Unchanged resources are answered 304; only a missing file is read again (a 404 has no ETag).
    gradle = "/repos/acme/gradle/contents/pom.xml"
    assert [(seen.path, "If-None-Match" in seen.headers) for seen in fake.seen if seen.status != 304] == [
        (gradle, False)
    ]
    assert second.not_modified == second.requests - 1 and fake.costly == 1

    fake.seen.clear()
    fake.repos[-1].stars = 10_000  # the search's last page changes; nothing else does
    third = discover(store, client(fake, clock, store), java())
    assert [(seen.path, seen.query.get("page")) for seen in fake.seen if seen.status != 304] == [
        (gradle, None),
        (SEARCH, "3"),
    ]
    assert third.rows[-1].stars == 10_000


def test_rows_are_stored_with_reasons_and_updated_on_rediscovery(
    fake: FakeGitHub, clock: FakeClock, store: Store
) -> None:
    discover(store, client(fake, clock), java())
    fake.repos = [FakeRepo("acme/quiet", stars=401, commits=75)]
    clock.sleep(86_400)
    discover(store, client(fake, clock), java())
    with store.session() as session:
        rows = {row.full_name: row for row in session.exec(select(DiscoveredRepository)).all()}
    assert len(rows) == len(MIXED)
    quiet = rows["acme/quiet"]
    assert (quiet.qualified, quiet.reason, quiet.stars, quiet.commits_last_year) == (True, "", 401, 50)
    assert quiet.discovered_at is not None and quiet.discovered_at.tzinfo is not None
    assert quiet.pushed_at is not None and quiet.pushed_at.isoformat() == "2025-06-01T10:00:00+00:00"
    assert (rows["acme/copyleft"].reason, rows["acme/copyleft"].licence) == (
        "licence_not_permissive",
        "GPL-3.0",
    )
    assert rows["acme/busy"].clone_url == "https://github.com/acme/busy.git"


def test_add_registers_the_qualified_for_mining_without_cloning(
    fake: FakeGitHub, clock: FakeClock, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COEVO_CLONES", str(tmp_path / "clones"))
    report = discover(store, client(fake, clock), java(add=True))
    assert [(row.full_name, row.registered) for row in report.qualified] == [
        ("acme/busy", True),
        ("acme/steady", True),
    ]
    assert not any(row.registered for row in report.rows if not row.qualified)
    with store.session() as session:
        repos = session.exec(select(Repository).order_by(Repository.name)).all()
    url = "https://github.com/acme/busy.git"
    assert [(r.name, r.location, r.identity, r.language, r.licence) for r in repos] == [
        ("busy", url, "github.com/acme/busy", "java", "Apache-2.0"),
        ("steady", "https://github.com/acme/steady.git", "github.com/acme/steady", "java", "BSD-3-Clause"),
    ]
    assert repos[0].path == str(clone_path(url)), "where `coevo mine URL` will clone it"
    assert not (tmp_path / "clones").exists(), "nothing was cloned"

    discover(store, client(fake, clock), java(add=True))
    with store.session() as session:
        assert len(session.exec(select(Repository)).all()) == 2, "a second --add registers nothing twice"


def test_the_funnel_counts_discovery_before_mining(fake: FakeGitHub, clock: FakeClock, store: Store) -> None:
    discover(store, client(fake, clock), java(add=True))
    overall, per_repo = funnel(store)
    assert (overall.discovered, overall.qualified, overall.registered) == (9, 2, 2)
    assert dict(overall.rejected) == REJECTED
    assert overall.stages()[:4] == [
        ("discovered", 9, "on GitHub"),
        (
            "rejected",
            7,
            "2 no_licence, 1 fork, 1 archived, 1 licence_not_permissive, 1 no_build_file, 1 inactive",
        ),
        ("qualified", 2, "2 registered"),
        ("repositories", 2, ""),
    ]
    assert per_repo["busy"].stages()[0][0] == "repositories", "discovery is counted overall only"


def test_the_cli_discovers_as_json(fake: FakeGitHub, tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    env = {**os.environ, "GITHUB_TOKEN": "t0ken", "COEVO_CLONES": str(tmp_path / "clones")}
    args = ["discover", "--api-url", fake.base, "--language", "java", "--min-stars", "5"]
    shown = cli.coevo(*args, "--limit", "8", "--add", "--json", "--db", str(db), env=env)
    assert shown.returncode == 0, shown.stderr
    rows = json.loads(shown.stdout)
    assert [(row["full_name"], row["reason"]) for row in rows] == [
        (repo.full_name, reason)
        for repo, reason in zip(
            MIXED[:8],
            [
                "fork",
                "archived",
                "no_licence",
                "no_licence",
                "licence_not_permissive",
                "no_build_file",
                "inactive",
                "",
            ],
            strict=True,
        )
    ]
    assert rows[-1]["registered"] is True and rows[-1]["licence"] == "Apache-2.0"
    assert all(seen.headers.get("Authorization") == "Bearer t0ken" for seen in fake.seen)
    assert all(seen.headers.get("X-GitHub-Api-Version") == "2022-11-28" for seen in fake.seen)
    assert all(seen.headers.get("Accept") == "application/vnd.github+json" for seen in fake.seen)

    text = cli.coevo(*args, "--limit", "8", "--db", str(db), env=env)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == "acme/forked  900★  MIT  fork (a fork)"
    assert lines[7] == "acme/busy  300★  Apache-2.0  qualified, registered"
    assert lines[-1].startswith("discovered 8 repositories: 1 qualified, rejected: 2 no_licence, 1 fork")
    summary = re.search(r"; (\d+) requests, (\d+) unchanged \(304\)$", lines[-1])
    assert summary is not None, lines[-1]
    assert int(summary[1]) == len(fake.seen) // 2 and int(summary[2]) == int(summary[1]) - 1

    funnel_text = cli.coevo("funnel", "--db", str(db), env=env)
    assert "discovered" in funnel_text.stdout and "2 no_licence" in funnel_text.stdout

    bad = cli.coevo(*args, "--pushed-since", "last week", "--db", str(db))
    assert bad.returncode == 1
    assert bad.stderr.splitlines() == [
        "error: --pushed-since 'last week' is not a date; use YYYY-MM-DD or an ISO 8601 time"
    ]
    fake.inject(SEARCH, Reply(200, {}, "not json"))
    broken = cli.coevo(*args, "--db", str(tmp_path / "other.db"), env=env)
    assert broken.returncode == 1 and len(broken.stderr.splitlines()) == 1
    assert (
        broken.stderr.startswith("error: GET /search/repositories?q=") and "malformed JSON" in broken.stderr
    )


def test_a_snapshot_row_and_card_show_the_discovered_licence() -> None:
    repo = Repository(name="busy", location="https://github.com/acme/busy.git", path="", language="java")
    task = Task(
        id="t1", track=Track.GENERATION, language="java", repository_id=1, repository="busy", pair_id=1,
        rev1="a", rev2="b", test_file="src/test/java/FooTest.java", given_recorded=True, given_test_file="",
    )  # fmt: skip
    assert task_snapshot_row(task, repo, None)["licence"] == "unknown"
    repo.licence = "Apache-2.0"
    assert task_snapshot_row(task, repo, None)["licence"] == "Apache-2.0"
    by = {
        "by_track": {},
        "by_language": {},
        "by_repository": {"busy": 1, "lazy": 1},
        "by_half_year": {},
        "by_status": {},
    }
    counts = {"tasks": 2, "records": 0, **by, "licences": {"busy": "Apache-2.0", "lazy": "unknown"}}
    card = _card({"name": "s", "counts": counts, "window": {"since": None, "until": None}}, ExportOptions())
    assert "- busy: Apache-2.0\n- lazy: unknown\n" in card
