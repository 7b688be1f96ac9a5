"""The miner: a repository's history → revision pairs and method-level candidates in the store."""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydriller import Git
from sqlalchemy import insert
from sqlmodel import Session, select

from tasks import (
    Candidate,
    CommitOutcome,
    FocalLink,
    MethodChange,
    MinedCommit,
    MiningRun,
    Repository,
    RevisionPair,
    RunStatus,
    Skip,
    Store,
    TestChangeKind,
    utcnow,
)

from .changes import MethodDelta, ParseCache, method_deltas
from .errors import SourceSyntaxError
from .files import FilePatterns, FileRole
from .gitlog import (
    BlobReader,
    LogCommit,
    count_commits,
    diff_blobs,
    git,
    iter_log,
    read_commit,
    unified_diff,
)
from .languages import Language, ParsedFile, get_language
from .links import ProductionMethod, static_links
from .pairs import DEFAULT_WINDOW, PairPlan, plan_pairs, touches
from .source import detect_language, is_url, local_checkout, repository_name

log = logging.getLogger(__name__)

_MAX_DIFF_PATHS = 500  # past this many paths, diff the whole trees rather than list them


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
    name: str | None = None
    clone_root: Path | None = None


@dataclass
class Progress:
    """Callbacks a front end passes to follow a long mine (a progress bar)."""

    start: Callable[[str, int], None] = lambda name, total: None
    advance: Callable[[int], None] = lambda n: None


@dataclass
class _Counts:
    scanned: int = 0
    selected: int = 0
    test_commits: int = 0
    already_mined: int = 0
    pairs: int = 0
    candidates: int = 0
    skipped_files: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)


def register_repository(store: Store, request: MineRequest) -> Repository:
    """The store's row for the requested repository, created (and cloned) on first use."""
    path = local_checkout(request.location, request.clone_root)
    name = request.name or repository_name(request.location if is_url(request.location) else path.name)
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
                language=language,
                test_globs=list(request.test_globs),
                exclude_globs=list(request.exclude_globs),
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
            session.add(repo)
        session.flush()
        session.refresh(repo)
        return repo


def _unique_name(session: Session, name: str) -> str:
    taken = set(session.exec(select(Repository.name)).all())
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name}-{n}", n + 1
    return candidate


def mine(store: Store, request: MineRequest, progress: Progress | None = None) -> MiningRun:
    """Mines one repository's window into the store and returns the finished run's record.

    Each commit that changes test code is written in its own transaction with
    its resume marker, so an interrupted run (Ctrl-C, a kill) loses at most the
    commit in flight, and the next run skips what is already mined.
    """
    repo = register_repository(store, request)
    return Miner(store, repo, window=request.window).run(request.since, request.until, progress)


class Miner:
    """Walks one repository. Construction does no I/O."""

    def __init__(self, store: Store, repo: Repository, window: timedelta = DEFAULT_WINDOW) -> None:
        self.store = store
        self.repo = repo
        self.window = window
        self.path = Path(repo.path)
        self.language: Language = get_language(repo.language)
        self.patterns = FilePatterns.for_language(
            self.language, tuple(repo.test_globs), tuple(repo.exclude_globs)
        )
        self.cache = ParseCache()
        self.blobs = BlobReader(self.path)
        self._git: Git | None = None

    @property
    def pydriller(self) -> Git:
        if self._git is None:
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
        revisions = self._revisions(head, since)
        assert self.repo.id is not None
        run = MiningRun(
            repository_id=self.repo.id, started_at=utcnow(), since=since, until=until, head_sha=head
        )
        with self.store.session() as session:
            session.add(run)
        counts = _Counts()
        progress.start(self.repo.name, count_commits(self.path, revisions, since, until))
        try:
            for commit, plan in plan_pairs(
                iter_log(self.path, revisions, since, until),
                self.patterns,
                self._lookup,
                self.window,
            ):
                counts.scanned += 1
                if plan is not None or touches(commit, self.patterns, FileRole.PRODUCTION):
                    counts.selected += 1
                if plan is not None:
                    counts.test_commits += 1
                    self._mine_commit(plan, run, counts)
                progress.advance(1)
        except KeyboardInterrupt:
            self._finish(run, counts, RunStatus.INTERRUPTED, "interrupted; run again to resume")
            raise
        except Exception as exc:
            self._finish(run, counts, RunStatus.FAILED, f"{type(exc).__name__}: {exc}")
            raise
        finally:
            self.blobs.close()
        self._finish(run, counts, RunStatus.COMPLETED, "")
        if until is None:
            self._advance_watermark(head, since)
        return run

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

    def _lookup(self, sha: str) -> LogCommit | None:
        try:
            return read_commit(self.path, sha)
        except Exception:
            return None

    def _mine_commit(self, plan: PairPlan, run: MiningRun, counts: _Counts) -> None:
        sha = plan.rev2.sha
        with self.store.session() as session:
            done = session.exec(
                select(MinedCommit.id).where(
                    MinedCommit.repository_id == self.repo.id, MinedCommit.sha == sha
                )
            ).first()
        if done is not None:
            counts.already_mined += 1
            return
        try:
            with self.store.session() as session:
                outcome = self._write_commit(session, plan, run, counts)
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # an odd commit must never stop the walk
            log.warning("skipping commit %s: %s", sha[:10], exc)
            outcome = CommitOutcome.ERROR
            with self.store.session() as session:
                session.add(self._marker(plan, run, outcome, f"{type(exc).__name__}: {exc}"))
                session.add(
                    Skip(repository_id=self._repo_id, sha=sha, reason="commit_error", detail=str(exc))
                )
        counts.outcomes[outcome] = counts.outcomes.get(outcome, 0) + 1

    @property
    def _repo_id(self) -> int:
        assert self.repo.id is not None
        return self.repo.id

    def _marker(
        self, plan: PairPlan, run: MiningRun, outcome: CommitOutcome, detail: str = ""
    ) -> MinedCommit:
        return MinedCommit(
            repository_id=self._repo_id,
            sha=plan.rev2.sha,
            committer_date=plan.rev2.committer_date,
            outcome=outcome,
            detail=detail,
            run_id=run.id,
        )

    def _write_commit(
        self, session: Session, plan: PairPlan, run: MiningRun, counts: _Counts
    ) -> CommitOutcome:
        """Writes one commit's pair, method changes, candidates, links, skips and marker."""
        if plan.outcome is not CommitOutcome.PAIRED or plan.rev1 is None:
            session.add(self._marker(plan, run, plan.outcome))
            return plan.outcome
        analysis = self._analyse(plan)
        for skip in analysis.skips:
            session.add(skip)
        counts.skipped_files += len(analysis.skips)
        if not analysis.tests:
            outcome = CommitOutcome.NO_TEST_METHOD_CHANGE
            session.add(self._marker(plan, run, outcome))
            return outcome

        rev2 = self.pydriller.get_commit(plan.rev2.sha)
        rev1 = self.pydriller.get_commit(plan.rev1)
        pair = RevisionPair(
            repository_id=self._repo_id,
            rev1=plan.rev1,
            rev2=plan.rev2.sha,
            rev1_date=rev1.committer_date,
            rev2_date=rev2.committer_date,
            rev2_author_date=rev2.author_date,
            rev2_utc_offset_minutes=-rev2.committer_timezone // 60,
            rev1_author=_person(rev1.author.name, rev1.author.email),
            rev2_author=_person(rev2.author.name, rev2.author.email),
            rev2_message=rev2.msg,
            commits=[c.sha for c in plan.commits],
            span_seconds=plan.span_seconds,
            production_diff=analysis.production_diff,
        )
        session.add(pair)
        session.flush()
        assert pair.id is not None
        change_ids: dict[tuple[str, str], int] = {}
        rows: list[MethodChange] = []
        for prod in analysis.production:
            row = MethodChange(
                pair_id=pair.id,
                file=prod.file,
                old_file=prod.old_file,
                method=prod.delta.key,
                kind=prod.delta.production_kind,
                old_start=prod.delta.old.start_line if prod.delta.old else None,
                old_end=prod.delta.old.end_line if prod.delta.old else None,
                new_start=prod.delta.new.start_line if prod.delta.new else None,
                new_end=prod.delta.new.end_line if prod.delta.new else None,
            )
            rows.append(row)
        session.add_all(rows)
        session.flush()
        for prod, row in zip(analysis.production, rows, strict=True):
            assert row.id is not None
            change_ids[(prod.file, prod.delta.key)] = row.id
        production = [prod.as_linkable() for prod in analysis.production]
        link_rows: list[dict[str, Any]] = []
        for test in analysis.tests:
            new = test.delta.new
            assert new is not None
            links = static_links(new, test.file, production)
            kind = test.delta.test_kind
            if kind is TestChangeKind.UNCHANGED_WITH_CHANGED_DEPENDENCIES and not any(
                provenance == "call" for _, provenance in links
            ):
                continue
            old = test.delta.old
            candidate = Candidate(
                repository_id=self._repo_id,
                pair_id=pair.id,
                test_file=test.file,
                old_test_file=test.old_file,
                test_method=test.delta.key,
                change_kind=kind,
                old_source=old.source if old else None,
                new_source=new.source,
                old_start=old.start_line if old else None,
                old_end=old.end_line if old else None,
                new_start=new.start_line,
                new_end=new.end_line,
            )
            session.add(candidate)
            session.flush()
            assert candidate.id is not None
            link_rows += [
                {
                    "candidate_id": candidate.id,
                    "method_change_id": change_ids[(prod_method.file, prod_method.method.key)],
                    "provenance": provenance,
                }
                for prod_method, provenance in links
            ]
            counts.candidates += 1
        if link_rows:
            # Links are many and plain: one executemany, not an ORM object each.
            session.execute(insert(FocalLink), link_rows)
        session.add(self._marker(plan, run, CommitOutcome.PAIRED))
        counts.pairs += 1
        return CommitOutcome.PAIRED

    def _analyse(self, plan: PairPlan) -> _Analysis:
        """Method-level changes of the language's files between rev1 and rev2."""
        assert plan.rev1 is not None
        paths = sorted(
            {
                path
                for commit in plan.commits
                for change in commit.changes
                for path in (change.path, change.old_path)
                if path is not None and self.patterns.role(path) is not FileRole.OTHER
            }
        )
        restrict = paths if len(paths) <= _MAX_DIFF_PATHS else None
        analysis = _Analysis()
        production_paths: list[str] = []
        for change in diff_blobs(self.path, plan.rev1, plan.rev2.sha, restrict):
            role = self.patterns.role(change.new_path or change.old_path or "")
            if role is FileRole.OTHER:
                continue
            try:
                old = self._parse(change.old_blob) if change.old_blob else None
            except SourceSyntaxError as exc:
                analysis.skips.append(self._skip(plan.rev1, change.old_path or "", exc))
                continue
            try:
                new = self._parse(change.new_blob) if change.new_blob else None
            except SourceSyntaxError as exc:
                analysis.skips.append(self._skip(plan.rev2.sha, change.new_path or "", exc))
                continue
            deltas = method_deltas(old, new, change.old_path, change.new_path)
            if role is FileRole.PRODUCTION:
                changed = [d for d in deltas if d.changed]
                path = change.new_path or change.old_path or ""
                analysis.production += [_FileMethod(path, change.old_path, d) for d in changed]
                production_paths += {p for p in (change.old_path, change.new_path) if p}
            elif change.new_path is not None:
                analysis.tests += [
                    _FileMethod(change.new_path, change.old_path, d)
                    for d in deltas
                    if d.new is not None and d.new.is_test
                ]
        if not analysis.production:
            # Tests are only co-evolution candidates when production methods changed alongside:
            # an unchanged test then has nothing to depend on.
            analysis.tests = [t for t in analysis.tests if t.delta.changed]
        if not any(t.delta.changed for t in analysis.tests):
            analysis.tests = []
        elif production_paths:
            analysis.production_diff = unified_diff(
                self.path, plan.rev1, plan.rev2.sha, sorted(set(production_paths))
            )
        return analysis

    def _parse(self, blob: str) -> ParsedFile:
        return self.cache.parse(self.language, blob, lambda: self.blobs.read(blob))

    def _skip(self, sha: str, path: str, exc: SourceSyntaxError) -> Skip:
        return Skip(repository_id=self._repo_id, sha=sha, path=path, reason="syntax_error", detail=str(exc))


@dataclass(frozen=True)
class _FileMethod:
    file: str
    old_file: str | None
    delta: MethodDelta

    def as_linkable(self) -> ProductionMethod:
        method = self.delta.new or self.delta.old
        assert method is not None
        return ProductionMethod(self.file, method, self.delta.production_kind)


@dataclass
class _Analysis:
    production: list[_FileMethod] = field(default_factory=list)
    tests: list[_FileMethod] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)
    production_diff: str = ""


def _person(name: str | None, email: str | None) -> str:
    return f"{name or ''} <{email or ''}>".strip()


def _is_ancestor(path: Path, ancestor: str, head: str) -> bool:
    return (
        subprocess.run(
            ["git", "-C", str(path), "merge-base", "--is-ancestor", ancestor, head],
            capture_output=True, check=False,
        ).returncode
        == 0
    )  # fmt: skip
