"""The miner: a repository's history → revision pairs and method-level candidates in the store."""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import functools
import itertools
import os
import signal
import subprocess
import time
from collections import deque
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Table, delete
from sqlmodel import Session, SQLModel, col, select

from tasks import (
    Candidate,
    CommitOutcome,
    FocalLink,
    MethodChange,
    MinedCommit,
    MiningRun,
    Owner,
    Repository,
    RevisionPair,
    RunStatus,
    Skip,
    Store,
    adopt_identities,
    mark_abandoned_runs,
    signals_deferred,
    utcnow,
)

from .analysis import SYNTAX_WARNING, CommitAnalyzer, CommitRecord, SkipRecord, failed_record
from .errors import NotARepository
from .files import FilePatterns, FileRole
from .gitlog import LogCommit, count_commits, git, is_shallow, iter_log, known_commit, unified_diff
from .languages import get_language
from .pairs import DEFAULT_WINDOW, PairPlan, plan_pairs, touches
from .source import (
    canonical_remote,
    clone_path,
    default_name,
    detect_language,
    local_checkout,
    repository_identity,
    repository_name,
)

if TYPE_CHECKING:
    from pydriller import Git

_PARALLEL_FROM = 300
"""Histories shorter than this many commits are mined in-process: workers cost more than they save."""
_RUN_OF_PLANS = 32
"""Consecutive plans a worker process analyses at once (:func:`_in_order`)."""
_CHECKED_AT_ONCE = 256
"""Plans whose resume markers one query reads (a query for each commit cost more than its write)."""
_SHALLOW = "shallow clone: history is cut, pairs before the cut are missing"


@dataclass(frozen=True)
class MineRequest:
    """What to mine: a repository, a window of history and the repository's settings."""

    location: str
    since: datetime | None = None
    until: datetime | None = None
    language: str = "auto"
    window: timedelta = DEFAULT_WINDOW
    test_globs: tuple[str, ...] = ()
    exclude_globs: tuple[str, ...] = ()
    build_args: tuple[str, ...] = ()
    """Extra build arguments to remember for the repository (curation's builds use them)."""
    name: str | None = None
    clone_root: Path | None = None
    workers: int | None = None
    """Analysis processes; None: one per core for long histories, in-process for short ones."""


@dataclass
class Progress:
    """Callbacks a front end passes to follow a long mine (a progress bar)."""

    start: Callable[[str, int], None] = lambda name, total: None
    advance: Callable[[int], None] = lambda n: None
    warn: Callable[[str], None] = lambda message: None
    """Something the user should know about the mine's result (one line): a shallow clone."""


@dataclass
class _Counts:
    scanned: int = 0
    selected: int = 0
    test_commits: int = 0
    already_mined: int = 0
    pairs: int = 0
    candidates: int = 0
    skipped_files: int = 0
    failed: int = 0


def register_repository(store: Store, request: MineRequest) -> Repository:
    """The store's row for the requested repository, created (and cloned) on first use."""
    path = local_checkout(request.location, request.clone_root)
    name = request.name or default_name(request.location, path)
    with store.session() as session:
        repo = session.exec(select(Repository).where(Repository.path == str(path))).first()
        if repo is None:
            language = request.language
            if language == "auto":
                language = detect_language(path)
            get_language(language)
            repo = Repository(
                name=_unique_name(session, name),
                location=request.location,
                path=str(path),
                identity=repository_identity(path, request.location),
                language=language,
                test_globs=list(request.test_globs),
                exclude_globs=list(request.exclude_globs),
                build_args=list(request.build_args),
                added_at=utcnow(),
            )
            session.add(repo)
        else:
            if request.language not in ("auto", repo.language):
                get_language(request.language)
                repo.language = request.language
            if request.test_globs:
                repo.test_globs = list(request.test_globs)
            if request.exclude_globs:
                repo.exclude_globs = list(request.exclude_globs)
            if request.build_args:
                repo.build_args = list(request.build_args)
            session.add(repo)
        session.flush()
        session.refresh(repo)
        return repo


def register_url(
    store: Store, url: str, language: str, licence: str | None = None, clone_root: Path | None = None
) -> Repository:
    """The store's row for the repository at clone ``url``, registered without cloning it (what
    ``coevo discover --add`` does for each repository it qualifies).

    The row is named and placed as :func:`register_repository` would after cloning (the URL's
    name, the clone's path under ``clone_root``), so the first ``coevo mine URL`` finds it and
    clones into that path. A repository already registered (same identity or location) keeps its
    row and gains the ``licence``.
    """
    get_language(language)
    identity = canonical_remote(url)
    path = clone_path(url, clone_root)
    with store.session() as session:
        same = col(Repository.location) == url
        if identity is not None:
            same = same | (col(Repository.identity) == identity)
        repo = session.exec(select(Repository).where(same | (col(Repository.path) == str(path)))).first()
        if repo is None:
            repo = Repository(
                name=_unique_name(session, repository_name(url)),
                location=url,
                path=str(path),
                identity=identity,
                language=language,
                added_at=utcnow(),
            )
        repo.licence = licence
        session.add(repo)
        session.flush()
        session.refresh(repo)
        return repo


def identify_repositories(store: Store) -> dict[str, str]:
    """Finds the identity of each repository of the store that has none (a store from before
    identities) and moves its tasks to the ids that derive from it, with their runs, records and
    gold checks, all in one transaction (:func:`~tasks.adopt_identities`).

    Returns the repositories whose history is not where the store says (name → why): they keep
    their task ids until it is back there.
    """
    with store.session() as session:
        unknown = session.exec(select(Repository).where(col(Repository.identity).is_(None))).all()
    found: dict[int, str] = {}
    missing: dict[str, str] = {}
    for repo in unknown:
        assert repo.id is not None
        if not repo.path:  # imported without an identity: "" would be the current folder
            missing[repo.name] = "no history on this machine"
            continue
        try:
            found[repo.id] = repository_identity(Path(repo.path), repo.location)
        except NotARepository as exc:
            missing[repo.name] = str(exc)
    if found:
        with store.session() as session:
            # Another process may have identified some meanwhile: those keep what it found.
            still = set(session.exec(select(Repository.id).where(col(Repository.identity).is_(None))).all())
            adopt_identities(session, {key: value for key, value in found.items() if key in still})
    return missing


def _unique_name(session: Session, name: str) -> str:
    taken = set(session.exec(select(Repository.name)).all())
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name}-{n}", n + 1
    return candidate


def mine(store: Store, request: MineRequest, progress: Progress | None = None) -> MiningRun:
    """Mines one repository's window into the store and returns the finished run's record.

    Each commit that changes test code is written whole with its resume marker, in
    transactions of about a second: Ctrl-C keeps every commit before it, a kill
    loses at most the last second, and the next run skips what is already mined.
    """
    mark_abandoned_runs(store)
    repo = register_repository(store, request)
    identify_repositories(store)
    miner = Miner(store, repo, window=request.window, workers=request.workers)
    return miner.run(request.since, request.until, progress)


class Miner:
    """Walks one repository. Construction does no I/O."""

    def __init__(
        self,
        store: Store,
        repo: Repository,
        window: timedelta = DEFAULT_WINDOW,
        workers: int | None = None,
    ) -> None:
        self.store = store
        self.repo = repo
        self.window = window
        self.workers = workers
        self.path = Path(repo.path)
        self.patterns = FilePatterns.for_language(
            get_language(repo.language), tuple(repo.test_globs), tuple(repo.exclude_globs)
        )
        self._git: Git | None = None
        self._shallow = False
        self._failed_before: set[str] = set()
        """Commits about to be mined again whose earlier attempt failed: their rows are replaced."""

    @property
    def pydriller(self) -> Git:
        if self._git is None:
            from pydriller import Git  # deferred: only pairs' diffs need it, not every command

            self._git = Git(str(self.path))
        return self._git

    def run(
        self,
        since: datetime | None = None,
        until: datetime | None = None,
        progress: Progress | None = None,
    ) -> MiningRun:
        progress = progress or Progress()
        head = git(self.path, "rev-parse", "HEAD").strip()
        self._shallow = is_shallow(self.path)
        if self._shallow:
            progress.warn(
                f"{self.path} is a shallow clone: its history is cut, so pairs before the cut will be "
                "missing (git fetch --unshallow, then mine again, adds them)"
            )
        revisions = self._revisions(head, since)
        run = MiningRun(
            repository_id=self._repo_id, since=since, until=until, head_sha=head, owner=Owner.current().token
        )
        with self.store.session() as session:
            session.add(run)
        counts = _Counts()
        total = count_commits(self.path, revisions, since, until)
        progress.start(self.repo.name, total)
        plans = self._plans_to_mine(iter_log(self.path, revisions, since, until), counts, progress)
        batch = _Batch(self.store)
        records = self._analysed(plans, total)
        try:
            for record in records:
                with signals_deferred():
                    self._write(batch.session, record, run, counts)
                batch.commit_now_and_then()
            batch.commit()
        except KeyboardInterrupt:
            batch.commit()  # every record in it is whole: Ctrl-C waits for the one being written
            self._finish(run, counts, RunStatus.INTERRUPTED, "interrupted; run again to resume")
            raise
        except Exception as exc:
            batch.rollback()
            self._finish(run, counts, RunStatus.FAILED, f"{type(exc).__name__}: {exc}")
            raise
        finally:
            records.close()  # stops the worker processes, whatever happened
        if counts.failed:
            message = f"{counts.failed} commits failed (see skips); run again to retry them"
            self._finish(run, counts, RunStatus.COMPLETED, message)
        elif self._shallow:
            # No watermark: once the history is whole, the next run walks all of it again.
            self._finish(run, counts, RunStatus.COMPLETED, _SHALLOW)
        else:
            self._finish(run, counts, RunStatus.COMPLETED, "")
            if until is None:
                self._advance_watermark(head, since)
        return run

    def _plans_to_mine(
        self, log: Iterator[LogCommit], counts: _Counts, progress: Progress
    ) -> Iterator[PairPlan]:
        """Plans of the commits that changed tests and are not mined yet; counts the rest."""
        scanned: list[PairPlan | None] = []  # each commit's plan, until their markers are read
        lookup = functools.partial(known_commit, self.path)
        for commit, plan in plan_pairs(log, self.patterns, lookup, self.window):
            counts.scanned += 1
            if plan is not None or touches(commit, self.patterns, FileRole.PRODUCTION):
                counts.selected += 1
            if plan is not None:
                counts.test_commits += 1
            scanned.append(plan)
            if len(scanned) >= _CHECKED_AT_ONCE:
                yield from self._not_mined(scanned, counts, progress)
                scanned = []
        yield from self._not_mined(scanned, counts, progress)

    def _not_mined(
        self, scanned: list[PairPlan | None], counts: _Counts, progress: Progress
    ) -> Iterator[PairPlan]:
        """The plans whose commits are not mined for good (a failed commit is tried again), with
        their resume markers read in one query; each commit counts as done once its plan is taken."""
        shas = [plan.marker.sha for plan in scanned if plan is not None]
        outcomes: dict[str, str] = {}
        if shas:
            with self.store.session() as session:
                outcomes = dict(
                    session.exec(
                        select(MinedCommit.sha, MinedCommit.outcome).where(
                            MinedCommit.repository_id == self._repo_id, col(MinedCommit.sha).in_(shas)
                        )
                    ).all()
                )
        for plan in scanned:
            if plan is not None:
                outcome = outcomes.get(plan.marker.sha)
                if outcome is not None and outcome != CommitOutcome.ERROR:
                    counts.already_mined += 1
                elif not (self._shallow and plan.outcome is CommitOutcome.ROOT_COMMIT):
                    # A commit at a shallow clone's cut has parents, only not here: it stays
                    # unmarked, so a run on the whole history pairs it.
                    if outcome is not None:
                        self._failed_before.add(plan.marker.sha)
                    yield plan
            progress.advance(1)

    def _analysed(self, plans: Iterator[PairPlan], total: int) -> Generator[CommitRecord, None, None]:
        """Records in commit order: analysed here, or by worker processes for long histories."""
        workers = self.workers or ((os.cpu_count() or 1) if total >= _PARALLEL_FROM else 1)
        language = get_language(self.repo.language)
        if workers <= 1:
            analyzer = CommitAnalyzer(self.path, language, self.patterns)
            try:
                yield from (analyzer.analyse(plan) for plan in plans)
            finally:
                analyzer.close()
            return
        with ProcessPoolExecutor(
            max_workers=workers,
            initializer=_start_worker,
            initargs=(self.path, self.repo.language, self.patterns),
        ) as pool:
            try:
                yield from _in_order(pool, plans, in_flight=2 * workers)
            except BaseException:
                pool.shutdown(wait=True, cancel_futures=True)
                raise

    def _revisions(self, head: str, since: datetime | None) -> list[str]:
        """``watermark..HEAD`` when an earlier run covered this window up to its head, else HEAD."""
        repo = self.repo
        if repo.watermark_sha is None:
            return [head]
        covered = repo.watermark_full_history or (
            since is not None and repo.watermark_since is not None and since >= repo.watermark_since
        )
        if covered and _is_ancestor(self.path, repo.watermark_sha, head):
            return [head, f"^{repo.watermark_sha}"]
        return [head]

    def _advance_watermark(self, head: str, since: datetime | None) -> None:
        with self.store.session() as session:
            repo = session.get(Repository, self.repo.id)
            assert repo is not None
            repo.watermark_sha = head
            if since is None:
                repo.watermark_full_history = True
            elif not repo.watermark_full_history and (
                repo.watermark_since is None or since < repo.watermark_since
            ):
                repo.watermark_since = since
            session.add(repo)
        self.repo = repo

    def _finish(self, run: MiningRun, counts: _Counts, status: RunStatus, message: str) -> None:
        run.status = status
        run.finished_at = utcnow()
        run.message = message
        run.commits_scanned = counts.scanned
        run.commits_selected = counts.selected
        run.test_commits = counts.test_commits
        run.already_mined = counts.already_mined
        run.pairs = counts.pairs
        run.candidates = counts.candidates
        run.skipped_files = counts.skipped_files
        with self.store.session() as session:
            session.add(run)

    @property
    def _repo_id(self) -> int:
        assert self.repo.id is not None
        return self.repo.id

    def _write(self, session: Session, record: CommitRecord, run: MiningRun, counts: _Counts) -> None:
        """Writes one commit's record and its resume marker (all of it or, interrupted, none)."""
        repo_id = self._repo_id
        metadata: dict[str, Any] = {}
        if record.pair is not None and record.candidates:
            try:
                metadata = self._metadata(record.pair.rev1, record.pair.rev2)
            except Exception as exc:
                record = failed_record(record.sha, record.committer_date, exc)
        if record.sha in self._failed_before:  # replaced by this attempt
            self._failed_before.discard(record.sha)
            session.execute(
                delete(MinedCommit).where(
                    col(MinedCommit.repository_id) == repo_id, col(MinedCommit.sha) == record.sha
                )
            )
            session.execute(
                delete(Skip).where(
                    col(Skip.repository_id) == repo_id,
                    col(Skip.sha) == record.sha,
                    col(Skip.reason) == "commit_error",
                )
            )
        if record.skips:
            self._write_skips(session, record.skips)
        if record.pair is not None and record.candidates:
            self._write_pair(session, record, metadata)
            counts.pairs += 1
            counts.candidates += len(record.candidates)
        outcome = record.outcome
        if outcome is CommitOutcome.PAIRED and not record.candidates:
            outcome = CommitOutcome.NO_TEST_METHOD_CHANGE
        session.execute(
            _table(MinedCommit).insert(),
            [
                {
                    "repository_id": repo_id,
                    "sha": record.sha,
                    "committer_date": record.committer_date,
                    "outcome": outcome,
                    "detail": record.detail,
                    "run_id": run.id,
                }
            ],
        )
        counts.skipped_files += sum(1 for k in record.skips if k.path and k.reason != SYNTAX_WARNING)
        counts.failed += outcome is CommitOutcome.ERROR

    def _write_skips(self, session: Session, skips: tuple[SkipRecord, ...]) -> None:
        """Writes the skips not stored yet: a file that stays broken is met again as the next
        pair's old version, and a commit mined again meets its own skips again."""
        repo_id = self._repo_id
        stored = set(
            session.execute(
                select(Skip.sha, Skip.path, Skip.reason).where(
                    col(Skip.repository_id) == repo_id, col(Skip.sha).in_({k.sha for k in skips})
                )
            ).all()
        )
        new: dict[tuple[str, str, str], SkipRecord] = {}
        for skip in skips:
            key = (skip.sha, skip.path, skip.reason)
            if key not in stored:
                new.setdefault(key, skip)
        if new:
            session.execute(
                _table(Skip).insert(),
                [
                    {"repository_id": repo_id, "sha": k.sha, "path": k.path, "reason": k.reason,
                     "detail": k.detail}
                    for k in new.values()
                ],
            )  # fmt: skip

    def _metadata(self, rev1_sha: str, rev2_sha: str) -> dict[str, Any]:
        """Dates, authors and message of a pair's commits, read with PyDriller.

        PyDriller opens only these two commits, and only in this process: opening a
        repository writes to its config, which worker processes must not race on.
        """
        rev2 = self.pydriller.get_commit(rev2_sha)
        rev1 = self.pydriller.get_commit(rev1_sha)
        return {
            "rev1_date": rev1.committer_date,
            "rev2_date": rev2.committer_date,
            "rev2_author_date": rev2.author_date,
            "rev2_utc_offset_minutes": -rev2.committer_timezone // 60,
            "rev1_author": _person(rev1.author.name, rev1.author.email),
            "rev2_author": _person(rev2.author.name, rev2.author.email),
            "rev2_message": rev2.msg,
        }

    def _write_pair(self, session: Session, record: CommitRecord, metadata: dict[str, Any]) -> None:
        pair = record.pair
        assert pair is not None
        repo_id = self._repo_id
        pair_id = session.execute(
            _table(RevisionPair).insert().returning(_table(RevisionPair).c.id),
            [
                {
                    "repository_id": repo_id,
                    **_fields(pair, "commits"),
                    "commits": list(pair.commits),
                    "production_diff": "",  # written for the pairs that give tasks: production_diff()
                    **metadata,
                }
            ],
        ).scalar_one()
        change_ids: list[int] = []
        if record.changes:
            change_ids = list(
                session.execute(
                    _table(MethodChange)
                    .insert()
                    .returning(_table(MethodChange).c.id, sort_by_parameter_order=True),
                    [{"pair_id": pair_id, **_fields(c)} for c in record.changes],
                ).scalars()
            )
        candidate_ids = list(
            session.execute(
                _table(Candidate).insert().returning(_table(Candidate).c.id, sort_by_parameter_order=True),
                [
                    {"repository_id": repo_id, "pair_id": pair_id, **_fields(c, "links")}
                    for c in record.candidates
                ],
            ).scalars()
        )
        links = [
            {"candidate_id": candidate_id, "method_change_id": change_ids[index], "provenance": provenance}
            for candidate_id, candidate in zip(candidate_ids, record.candidates, strict=True)
            for index, provenance in candidate.links
        ]
        if links:
            session.execute(_table(FocalLink).insert(), links)


def production_diff(session: Session, pair: RevisionPair, repo_path: Path) -> str:
    """``git diff`` rev1 → rev2 of the pair's production files whose methods changed (both names of
    a renamed one), as the pair's stored column held it when mining wrote it: a task needs it, and
    most pairs never give one, so mining no longer runs a ``git diff`` for every pair."""
    if pair.production_diff:
        return pair.production_diff
    rows = session.execute(
        select(MethodChange.file, MethodChange.old_file).where(MethodChange.pair_id == pair.id)
    ).all()
    paths = sorted({path for row in rows for path in row if path})
    return unified_diff(repo_path, pair.rev1, pair.rev2, paths)


def _table(model: type[SQLModel]) -> Table:
    """The model's Core table: plain executemany inserts, without the ORM's per-row bookkeeping."""
    table: Table = model.__table__  # type: ignore[attr-defined]
    return table


def _person(name: str | None, email: str | None) -> str:
    return f"{name or ''} <{email or ''}>".strip()


def _fields(value: Any, *exclude: str) -> dict[str, Any]:
    """A record's fields as insert parameters, less the ``exclude``d ones."""
    return {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.name not in exclude}


class _Batch:
    """One open transaction that commits about once a second.

    A commit per record would cost more than the records themselves; a kill loses at
    most the last second of work, and a record is never half-written.
    """

    def __init__(self, store: Store, seconds: float = 1.0) -> None:
        self._store = store
        self._seconds = seconds
        self._session: Session | None = None
        self._since = time.monotonic()

    @property
    def session(self) -> Session:
        if self._session is None:
            self._session = Session(self._store.engine, expire_on_commit=False)
            self._since = time.monotonic()
        return self._session

    def commit_now_and_then(self) -> None:
        if time.monotonic() - self._since >= self._seconds:
            self.commit()

    def commit(self) -> None:
        if self._session is not None:
            self._session.commit()
            self._session.close()
            self._session = None

    def rollback(self) -> None:
        if self._session is not None:
            self._session.rollback()
            self._session.close()
            self._session = None


_ANALYZER: CommitAnalyzer | None = None


def _start_worker(path: Path, language: str, patterns: FilePatterns) -> None:
    """Worker initializer: the main process alone answers Ctrl-C and writes the store."""
    global _ANALYZER
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    _ANALYZER = CommitAnalyzer(path, get_language(language), patterns)


def _die_with_parent() -> None:
    """Linux: the kernel kills this worker when the main process dies, even by SIGKILL, which
    gives the pool no chance to stop it (it would wait for work forever)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _analyse_in_worker(plans: list[PairPlan]) -> list[CommitRecord]:
    assert _ANALYZER is not None
    return [_ANALYZER.analyse(plan) for plan in plans]


def _in_order(pool: Executor, plans: Iterator[PairPlan], in_flight: int) -> Iterator[CommitRecord]:
    """Results of the pool in submission order, with a bounded number of runs of plans in flight.

    A worker takes :data:`_RUN_OF_PLANS` consecutive plans at once: consecutive pairs share most
    of their files (one pair's new version is the next one's old), and a worker parses each blob
    once for all the pairs it holds; plans dealt one at a time to alternating workers had both
    parse the same files."""
    pending: deque[Future[list[CommitRecord]]] = deque()
    while run := list(itertools.islice(plans, _RUN_OF_PLANS)):
        pending.append(pool.submit(_analyse_in_worker, run))
        if len(pending) >= in_flight:
            yield from pending.popleft().result()
    while pending:
        yield from pending.popleft().result()


def _is_ancestor(path: Path, ancestor: str, head: str) -> bool:
    return (
        subprocess.run(
            ["git", "-C", str(path), "merge-base", "--is-ancestor", ancestor, head],
            capture_output=True, check=False,
        ).returncode
        == 0
    )  # fmt: skip
