"""`coevo curate`: every mined pair proven by execution, its candidates labelled, its tasks written.

The unit of work is a revision pair. Its two revisions are built once (shared with other
pairs through :mod:`runners.environments.revisions`), every candidate's cells run ``reruns`` times,
and the pair's :class:`~tasks.CuratedPair`, records and tasks are written in one
transaction. A pair with a ``CuratedPair`` row is done: a killed run loses only the pairs in
flight, and the next run does the rest. Pairs run in a ``concurrent.futures`` executor
(processes), each worker writing its own results.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import signal
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from sqlalchemy import delete
from sqlmodel import col, select

from miner import identify_repositories, production_diff
from miner.files import FilePatterns, FileRole
from miner.gitlog import unified_diff
from miner.languages import get_language
from miner.parsing import Language
from runners import (
    MESSAGE_LIMIT,
    Coverage,
    GitTree,
    Outcome,
    TestRun,
    bounded,
    in_context,
    remove_dead_leftovers,
    resolve_backend,
)
from runners.environments.revisions import BuiltRevision, prepare_revision, release_revision, work_root
from runners.environments.sides import Side
from runners.python.toolchain import COPY_PREFIX
from runners.scoring.causes import TEST_CODE, failure_cause, names_of_test_code, packages_of
from tasks import (
    AgentRun,
    Candidate,
    CoevoError,
    CuratedPair,
    CurationRecord,
    CurationRun,
    DropReason,
    FocalLink,
    InfrastructureError,
    MethodChange,
    MethodChangeKind,
    MinedCommit,
    MiningRun,
    Owner,
    Repository,
    RevisionPair,
    RunStatus,
    Store,
    Task,
    TaskStatus,
    Terminated,
    TestChangeKind,
    Track,
    disk_full,
    mark_abandoned_runs,
    open_store,
    task_id,
    utcnow,
)

from .classify import DEFAULT_KINDS, FAILING, TRACK_OF_KIND, TRACKS, Verdict, cells_for, classify
from .matrix import Cell
from .static import (
    changed_test_helpers,
    file_helpers,
    is_refactoring,
    renamed_units,
    runnable_id,
    same_file_helpers,
    uses_changed_helper,
)

DEFAULT_MAX_SPAN_HOURS = 6.0


@dataclass(frozen=True)
class CurateRequest:
    """What to curate and how."""

    repository: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    """A window on rev2's date."""
    reruns: int = 3
    backend: str = "auto"
    workers: int | None = None
    """Pairs curated at once (processes); None: one per two cores, at least one."""
    redo: bool = False
    """Curate again pairs already curated; their old rows are replaced when the new ones are written."""
    retry_env: bool = False
    """Curate again pairs a revision of which had no environment (``env_failed``: a toolchain
    coevo lacked, a build file it could not read), as a newer coevo or machine may provide it."""
    test_timeout: float = 300.0
    build_timeout: float = 1800.0
    max_span_hours: float = DEFAULT_MAX_SPAN_HOURS
    base_images: Mapping[str, str] | None = None
    kinds: tuple[TestChangeKind, ...] = DEFAULT_KINDS
    """The candidates curated, by change kind: by default those that can become tasks (inserted and
    updated tests). A pair curated without some kinds is curated again for them when they are asked
    for, its other candidates' records kept."""


@dataclass
class CurateProgress:
    """Callbacks a front end passes to follow curation (a progress bar)."""

    start: Callable[[int], None] = lambda total: None
    advance: Callable[[int], None] = lambda n: None


@dataclass
class CurateReport:
    run: CurationRun
    labels: Counter[str] = field(default_factory=Counter)
    errors: dict[int, str] = field(default_factory=dict)
    """Pairs that failed unexpectedly (not written; retried next run): pair id → message."""


def curate(store: Store, request: CurateRequest, progress: CurateProgress | None = None) -> CurateReport:
    """Curates every pending pair of the request's window; returns the run and its label counts.

    First, what killed runs left is dealt with: their runs are marked ``interrupted``, their
    containers and scratch folders removed (see :func:`~tasks.mark_abandoned_runs`).
    """
    progress = progress or CurateProgress()
    backend = resolve_backend(request.backend)
    request = dataclasses.replace(request, backend=backend)
    mark_abandoned_runs(store)
    remove_dead_leftovers(docker=backend == "docker")
    identify_repositories(store)
    pending = _pending_pairs(store, request)
    with store.session() as session:
        paths = {r.id: Path(r.path) for r in session.exec(select(Repository)).all()}
        run = CurationRun(backend=backend, reruns=request.reruns, owner=Owner.current().token)
        session.add(run)
        session.flush()
        session.refresh(run)
    report = CurateReport(run)
    progress.start(len(pending))
    root = work_root()
    needs = Counter(rev for _, rev1, rev2, _ in pending for rev in {rev1, rev2})
    done = failed = 0

    def finished(pair: tuple[int, str, str, int], result: PairOutcome | BaseException) -> None:
        nonlocal done, failed
        pair_id, rev1, rev2, repository_id = pair
        if isinstance(result, OSError) and (full := disk_full(result)) is not None:
            result = full  # a full disk is the machine's, never the pair's
        if isinstance(result, InfrastructureError):
            left = len(pending) - done - failed
            raise InfrastructureError(
                f"{result} — curation stopped: {done} pairs curated, {left} left for the next run"
            )
        if isinstance(result, BaseException):
            failed += 1
            report.errors[pair_id] = f"{type(result).__name__}: {result}"
        else:
            done += 1
            report.labels.update(result.labels)
        for rev in {rev1, rev2}:
            needs[rev] -= 1
            if needs[rev] == 0:
                release_revision(root, paths[repository_id], rev, backend)
        progress.advance(1)

    status, stopped = RunStatus.COMPLETED, ""
    try:
        workers = request.workers or max(1, (os.cpu_count() or 1) // 2)
        if workers <= 1 or len(pending) <= 1:
            for pair in pending:
                try:
                    result: PairOutcome | BaseException = curate_pair(store.url, pair[0], request, run.id)
                except Exception as exc:
                    result = exc
                finished(pair, result)
        else:
            with ProcessPoolExecutor(
                workers, mp_context=get_context("spawn"), initializer=_start_worker
            ) as pool:
                _run_pool(pool, pending, store.url, request, run.id, finished)
    except KeyboardInterrupt as exc:
        status = RunStatus.INTERRUPTED
        by = f" by {exc.args[0]}" if isinstance(exc, Terminated) else ""
        stopped = f"interrupted{by}: {done} pairs curated; run again to resume"
        raise
    except InfrastructureError as exc:
        status, stopped = RunStatus.FAILED, str(exc)
        raise
    finally:
        with store.session() as session:
            stored = session.get(CurationRun, run.id)
            assert stored is not None
            stored.status = status
            stored.finished_at = utcnow()
            stored.pairs_done, stored.pairs_failed = done, failed
            errors = "; ".join(f"pair {k}: {v}" for k, v in sorted(report.errors.items()))
            stored.message = (stopped or errors)[:4000]
            session.add(stored)
        report.run = stored
    return report


def _run_pool(
    pool: ProcessPoolExecutor,
    pending: Sequence[tuple[int, str, str, int]],
    url: str,
    request: CurateRequest,
    run_id: int | None,
    finished: Callable[[tuple[int, str, str, int], PairOutcome | BaseException], None],
) -> None:
    futures: dict[Future[PairOutcome], tuple[int, str, str, int]] = {
        pool.submit(_curate_in_worker, url, pair[0], request, run_id): pair for pair in pending
    }
    try:
        while futures:
            ready, _ = wait(futures, return_when=FIRST_COMPLETED)
            for future in ready:
                pair = futures.pop(future)
                error = future.exception()
                finished(pair, error if error is not None else future.result())
    except BaseException:
        _stop_workers(pool)
        raise


_STOP_GRACE = 60.0
"""Seconds a worker has to close its sandboxes after SIGTERM before it is killed."""


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """Stops the pairs in flight now, their sandboxes closed (see :func:`_stop_worker`), rather
    than waiting for them to finish; pairs not started yet never start. The pool's processes are
    reachable only through its private table."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)  # forgets the processes
    for process in processes:
        with contextlib.suppress(Exception):
            process.terminate()
    deadline = time.monotonic() + _STOP_GRACE
    for process in processes:
        with contextlib.suppress(Exception):
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()


def _pending_pairs(store: Store, request: CurateRequest) -> list[tuple[int, str, str, int]]:
    """(pair id, rev1, rev2, repository id) of the pairs to curate, oldest rev2 first: those with
    a candidate of the kinds asked for that has no record yet (or any, with ``redo``; or whose
    build had no environment, with ``retry_env``)."""
    asked = col(Candidate.change_kind).in_(request.kinds)
    with store.session() as session:
        query = select(RevisionPair).where(col(RevisionPair.id).in_(select(Candidate.pair_id).where(asked)))
        if request.repository is not None:
            repo = session.exec(select(Repository).where(Repository.name == request.repository)).first()
            if repo is None:
                raise CoevoError(f"no repository named {request.repository!r} in the database")
            query = query.where(RevisionPair.repository_id == repo.id)
        if request.since is not None:
            query = query.where(col(RevisionPair.rev2_date) >= request.since)
        if request.until is not None:
            query = query.where(col(RevisionPair.rev2_date) < request.until)
        pairs = session.exec(query.order_by(col(RevisionPair.rev2_date), col(RevisionPair.id))).all()
        done: set[int | None] = set()
        if not request.redo:
            curated = session.exec(select(CuratedPair)).all()
            lacking = set(
                session.exec(
                    select(Candidate.pair_id)
                    .where(asked, col(Candidate.id).not_in(select(CurationRecord.candidate_id)))
                    .distinct()
                ).all()
            )
            done = {c.pair_id for c in curated if not _whole_again(c, request) and c.pair_id not in lacking}
        return [
            (p.id, p.rev1, p.rev2, p.repository_id) for p in pairs if p.id not in done and p.id is not None
        ]


def _whole_again(curated: CuratedPair, request: CurateRequest) -> bool:
    """Whether every candidate of the curated pair (of the kinds asked for) is curated again, not
    only those with no record: ``redo``, or ``retry_env`` and a build had no environment."""
    return request.redo or (request.retry_env and "env_failed" in (curated.rev1_build, curated.rev2_build))


# --- one pair --------------------------------------------------------------------------------------


@dataclass
class PairOutcome:
    """What a worker returns to the main process (the rows are already written)."""

    pair_id: int
    labels: Counter[str]


@dataclass
class _Item:
    """A candidate on its way through the pair's curation."""

    candidate: Candidate
    new_id: str
    old_id: str | None
    cells: dict[str, Cell] = field(default_factory=dict)
    verdict: Verdict | None = None
    focal: list[dict[str, Any]] = field(default_factory=list)
    helpers: list[str] = field(default_factory=list)
    """Keys of the changed helpers of its own test file that are part of its answer."""
    name_bound: set[str] = field(default_factory=set)
    """Cross cells (NO, ON) whose failure may be the copy's name's: the test failed under that
    name on its own revision too (:meth:`_PairCurator._check_copy_names`)."""


@dataclass(frozen=True)
class _TestFile:
    """A test file the pair changed, with its candidates and both versions."""

    path: str
    items: list[_Item]
    content: bytes
    old: tuple[str, bytes] | None
    """The old revision's version, its path and content, when it had one."""
    tag: str
    """Names its cross cells' classes or copies (``p<pair>_<index>``)."""


def _runnable(items: Sequence[_Item], cell: str, old: bool) -> list[tuple[_Item, str]]:
    """The tests of ``items`` that run in ``cell``: none whose run timed out in any cell (a timeout
    decides the verdict, and every further run would cost the whole timeout)."""
    chosen = [
        (item, item.old_id if old else item.new_id)
        for item in items
        if cell in item.cells and not any(c.timed_out for c in item.cells.values())
    ]
    return [(item, test) for item, test in chosen if test is not None]


_BUSY = False
"""Whether this worker process is curating a pair."""
_STOPPING = False
"""Whether this worker was asked to stop (it starts no pair then)."""


def _start_worker() -> None:
    """Worker initializer: the main process alone answers Ctrl-C, and stops workers with SIGTERM."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop_worker)


def _stop_worker(signum: int, _frame: object) -> None:
    """SIGTERM interrupts the pair in flight, so its sandboxes close (processes killed, containers
    removed) and nothing of it is written. An idle worker starts no pair any more and ends when
    the pool tells it to (it may be waiting for work holding the pool's queue lock: an exception
    or exit there would leave the lock taken and the pool stuck)."""
    global _STOPPING
    _STOPPING = True
    if _BUSY:
        raise Terminated(signum)


def _curate_in_worker(url: str, pair_id: int, request: CurateRequest, run_id: int | None) -> PairOutcome:
    global _BUSY
    _BUSY = True
    try:
        if _STOPPING:
            raise Terminated(signal.SIGTERM)
        return curate_pair(url, pair_id, request, run_id)
    finally:
        _BUSY = False


def curate_pair(url: str, pair_id: int, request: CurateRequest, run_id: int | None) -> PairOutcome:
    """Curates one pair and writes its rows in one transaction (runs in a worker process)."""
    started = time.monotonic()
    store = open_store(url)
    try:
        with store.session() as session:
            pair = session.get(RevisionPair, pair_id)
            assert pair is not None
            repo = session.get(Repository, pair.repository_id)
            assert repo is not None
            if repo.identity is None:
                raise CoevoError(
                    f"repository {repo.name}: no git history at {repo.path} to identify it by (its "
                    "remote or root commit); restore the clone there and curate again"
                )
            candidates = list(
                session.exec(
                    select(Candidate).where(
                        Candidate.pair_id == pair_id, col(Candidate.change_kind).in_(request.kinds)
                    )
                ).all()
            )
            earlier = session.exec(select(CuratedPair).where(CuratedPair.pair_id == pair_id)).first()
            if earlier is not None and not _whole_again(earlier, request):
                # Curated before without these kinds: only the candidates that have no record yet.
                recorded = set(
                    session.exec(select(CurationRecord.candidate_id).where(CurationRecord.pair_id == pair_id))
                )
                candidates = [c for c in candidates if c.id not in recorded]
            if not candidates:  # another run curated them meanwhile
                return PairOutcome(pair_id, Counter())
            changes = list(session.exec(select(MethodChange).where(MethodChange.pair_id == pair_id)).all())
            links = session.exec(
                select(FocalLink, MethodChange)
                .join(MethodChange, col(FocalLink.method_change_id) == col(MethodChange.id))
                .where(col(FocalLink.candidate_id).in_([c.id for c in candidates]))
            ).all()
        static: dict[int | None, list[tuple[str, MethodChange]]] = {}
        for link, change in links:
            static.setdefault(link.candidate_id, []).append((str(link.provenance), change))
        curator = _PairCurator(repo, pair, candidates, changes, static, request)
        items, built = curator.run()
        with store.session() as session:
            _write(session, repo, pair, items, built, request, run_id, time.monotonic() - started)
        return PairOutcome(pair_id, Counter(_label_name(item) for item in items))
    finally:
        store.close()


def _label_name(item: _Item) -> str:
    assert item.verdict is not None
    return str(item.verdict.reason) if item.verdict.reason else str(item.verdict.label)


class _PairCurator:
    def __init__(
        self,
        repo: Repository,
        pair: RevisionPair,
        candidates: Sequence[Candidate],
        changes: Sequence[MethodChange],
        static: Mapping[int | None, list[tuple[str, MethodChange]]],
        request: CurateRequest,
    ) -> None:
        self.repo = repo
        self.path = Path(repo.path)
        self.pair = pair
        self.language: Language = get_language(repo.language)
        self.patterns = FilePatterns.for_language(
            self.language, tuple(repo.test_globs), tuple(repo.exclude_globs)
        )
        self.candidates = sorted(candidates, key=lambda c: (c.test_file, c.test_method))
        self.changes = changes
        self.static = static
        self.request = request
        self._files: dict[tuple[str, str], bytes | None] = {}
        self.test_side: dict[str, list[str]] = {}
        """Test files that changed in the pair → the changed helpers they define."""
        self.renamed = renamed_units(self.path, pair.rev1, pair.rev2, self.language)
        """The classes or modules the pair renamed with their files (:func:`renamed_units`)."""
        self.old_test_names: dict[str, frozenset[str]] = {}
        self._own_packages: frozenset[str] | None = None
        """When rev1's tests did not compile (none of its test classes is there for NO): each of
        its test files → the names by which a failure names it."""

    def show(self, revision: str, path: str | None) -> bytes | None:
        if path is None:
            return None
        if (revision, path) not in self._files:
            self._files[revision, path] = GitTree(self.path, revision).read(path)
        return self._files[revision, path]

    def run(self) -> tuple[list[_Item], dict[str, BuiltRevision | None]]:
        pair, lang = self.pair, self.language.name
        items = []
        for candidate in self.candidates:
            new_id = runnable_id(
                lang, candidate.test_file, self.show(pair.rev2, candidate.test_file), candidate.test_method
            )
            old_id = None
            if candidate.change_kind != TestChangeKind.INSERTED and candidate.old_test_file:
                old_source = self.show(pair.rev1, candidate.old_test_file)
                old_id = runnable_id(lang, candidate.old_test_file, old_source, candidate.test_method)
            items.append(_Item(candidate, new_id, old_id))
        self._static_checks(items)
        built: dict[str, BuiltRevision | None] = {"rev1": None, "rev2": None}
        runnable = [item for item in items if item.verdict is None]
        if not runnable:
            return items, built
        built["rev1"], built["rev2"] = (self._prepare(pair.rev1), self._prepare(pair.rev2))
        for side in (built["rev1"], built["rev2"]):
            assert side is not None
            if side.status != "ok":
                reason = DropReason.ENV_FAILED if side.status == "env_failed" else DropReason.BUILD_FAILED
                which = "rev1" if side is built["rev1"] else "rev2"
                for item in runnable:
                    item.verdict = Verdict.drop(reason, in_context(f"{which} {side.sha[:10]}", side.message))
                return items, built
        rev1, rev2 = built["rev1"], built["rev2"]
        assert rev1 is not None and rev2 is not None
        if rev1.production_only:
            self.old_test_names = self._test_names(self.pair.rev1)
        old_side, new_side = rev1.side(), rev2.side()
        try:
            for item in runnable:
                # A revision whose tests did not compile runs another's (NO), not its own (OO, NN).
                needs_own = {"rev1": "OO" in cells_for(item.candidate.change_kind), "rev2": True}
                for name, matrix_side, revision in (("rev1", old_side, rev1), ("rev2", new_side, rev2)):
                    if not matrix_side.runs_tests_of(item.candidate.test_file) or (
                        revision.production_only and needs_own[name]
                    ):
                        detail = in_context(f"{name} {revision.sha[:10]}", revision.message)
                        item.verdict = Verdict.drop(DropReason.BUILD_FAILED, detail)
                        break
            runnable = [item for item in runnable if item.verdict is None]
            self._run_matrix(runnable, old_side, new_side)
        finally:
            old_side.close()
            new_side.close()
        for item in runnable:
            self._decide(item)
        return items, built

    def _own(self) -> frozenset[str]:
        """The packages and modules of the pair's code, either revision (read once per pair)."""
        if self._own_packages is None:
            self._own_packages = packages_of(self.path, self.pair.rev1, self.pair.rev2)
        return self._own_packages

    def _test_names(self, revision: str) -> dict[str, frozenset[str]]:
        paths = [
            path for path in GitTree(self.path, revision).files() if self.patterns.role(path) == FileRole.TEST
        ]
        return {path: names_of_test_code({path: ()}) for path in paths}

    def _prepare(self, sha: str) -> BuiltRevision:
        return prepare_revision(
            work_root(),
            self.path,
            sha,
            self.repo.language,
            self.request.backend,
            tuple(self.repo.build_args),
            self.request.base_images,
            self.request.build_timeout,
            sorted({path for c in self.candidates for path in (c.test_file, c.old_test_file) if path}),
        )

    # --- before running anything ------------------------------------------------------------------

    def _static_checks(self, items: Sequence[_Item]) -> None:
        span_limit = self.request.max_span_hours * 3600
        if self.pair.span_seconds > span_limit:
            for item in items:
                item.verdict = Verdict.drop(
                    DropReason.PAIR_SPAN_TOO_LONG,
                    f"span {self.pair.span_seconds / 3600:.1f} h > {self.request.max_span_hours:g} h",
                )
            return
        helpers = changed_test_helpers(
            self.path, self.pair.rev1, self.pair.rev2, self.patterns, self.language
        )
        self.test_side = {path: [name for name, _ in changed.values()] for path, changed in helpers.items()}
        own: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {}
        for item in items:
            candidate = item.candidate
            if (
                candidate.change_kind == TestChangeKind.UPDATED
                and candidate.old_source is not None
                and is_refactoring(self.language, candidate.old_source, candidate.new_source, self.renamed)
            ):
                item.verdict = Verdict.drop(
                    DropReason.TEST_REFACTORING_ONLY, "the test changed only by refactoring"
                )
                continue
            if candidate.change_kind == TestChangeKind.UNCHANGED_WITH_CHANGED_DEPENDENCIES:
                continue  # its own code did not change; a changed helper is its dependency
            tokens = self.language.scan(candidate.new_source)[2]
            if candidate.test_file not in own:
                source = self.show(self.pair.rev2, candidate.test_file)
                own[candidate.test_file] = file_helpers(self.language, source)
            helper = uses_changed_helper(candidate.test_file, tokens, helpers, own[candidate.test_file])
            if helper is not None:
                item.verdict = Verdict.drop(
                    DropReason.TEST_UTILITY_CO_CHANGE, f"uses changed test code {helper}"
                )
            else:
                item.helpers = same_file_helpers(candidate.test_file, tokens, helpers)

    # --- the matrix ---------------------------------------------------------------------------------

    def _run_matrix(self, items: Sequence[_Item], old_side: Side, new_side: Side) -> None:
        by_file: dict[str, list[_Item]] = {}
        for item in items:
            by_file.setdefault(item.candidate.test_file, []).append(item)
            for cell in cells_for(item.candidate.change_kind):
                item.cells[cell] = Cell()
        files = []
        for index, (path, group) in enumerate(sorted(by_file.items())):
            old_path = next((i.candidate.old_test_file for i in group if i.candidate.old_test_file), None)
            content = self.show(self.pair.rev2, path) or b""
            old_content = self.show(self.pair.rev1, old_path) if old_path else None
            old = (old_path, old_content) if old_path is not None and old_content is not None else None
            files.append(_TestFile(path, group, content, old, f"p{self.pair.id}_{index}"))
        self._run_cells(files, old_side, new_side)

    def _run_cells(self, files: Sequence[_TestFile], old_side: Side, new_side: Side) -> None:
        """Every cell of ``files``' candidates, ``reruns`` times. A revision's own tests (NN, OO) run
        in one batch for all of ``files``; a cross cell runs another revision's file in place of
        this one's, one file at a time."""
        timeout = self.request.test_timeout
        every = [item for file in files for item in file.items]
        for attempt in range(max(1, self.request.reruns)):
            first = attempt == 0
            wanted = _runnable(every, "NN", old=False)
            if wanted:
                self._record("NN", wanted, new_side.run([t for _, t in wanted], timeout, coverage=first))
            for file in files:
                wanted = _runnable(file.items, "NO", old=False)
                if wanted:
                    run = old_side.run_cross(
                        file.path, file.content, [t for _, t in wanted], f"{file.tag}_NO", timeout
                    )
                    self._record("NO", wanted, run)
            wanted = _runnable(every, "OO", old=True)
            if wanted:
                self._record("OO", wanted, old_side.run([t for _, t in wanted], timeout))
            for file in files:
                wanted = _runnable(file.items, "ON", old=True)
                if wanted and file.old is not None:
                    tests = [t for _, t in wanted]
                    run = new_side.run_cross(*file.old, tests, f"{file.tag}_ON", timeout, coverage=first)
                    self._record("ON", wanted, run)
        for file in files:
            wanted = _runnable(file.items, "NO", old=False)
            self._check_copy_names(wanted, "NO", file.path, file.content, file.tag, new_side)
            if file.old is not None:
                wanted = _runnable(file.items, "ON", old=True)
                self._check_copy_names(wanted, "ON", *file.old, file.tag, old_side)

    def _check_copy_names(
        self,
        wanted: Sequence[tuple[_Item, str]],
        cell: str,
        test_file: str,
        content: bytes,
        tag: str,
        own: Side,
    ) -> None:
        """A cross cell runs a copy of the test file under another name (:data:`COPY_PREFIX`); a
        failure that names the copy may be that name's alone (attrs' ``repr(C(1))`` is expected to
        start ``<tests.test_make.ü``). Those tests run again on their own revision as a copy under
        the same tag: failing there too, the cell says nothing about the code (``name_bound``)."""
        prefix = f"{COPY_PREFIX}{tag}_{cell}"  # the whole file's copy, or a method's alone
        suspects = [
            (item, test)
            for item, test in wanted
            if item.cells[cell].outcome in FAILING and prefix in item.cells[cell].message
        ]
        if not suspects:
            return
        tests = [test for _, test in suspects]
        run = own.run_cross(test_file, content, tests, f"{tag}_{cell}", self.request.test_timeout)
        results = {result.test: result for result in run.results}
        for item, test in suspects:
            if results[test].outcome != Outcome.PASS:
                item.name_bound.add(cell)

    @staticmethod
    def _record(cell: str, wanted: Sequence[tuple[_Item, str]], run: TestRun) -> None:
        results = {result.test: result for result in run.results}
        for item, test in wanted:
            item.cells[cell].add(results[test], run.coverage.get(test))

    # --- focal methods and the verdict --------------------------------------------------------------

    def _decide(self, item: _Item) -> None:
        candidate = item.candidate
        coverage = item.cells["NN"].coverage
        production = _production_lines(coverage, self.patterns)
        focal: list[dict[str, Any]] = []
        if production:
            for change in self.changes:
                if (
                    change.kind == MethodChangeKind.REMOVED
                    or change.new_start is None
                    or change.new_end is None
                ):
                    continue
                lines = production.get(change.file, frozenset())
                if any(change.new_start <= line <= change.new_end for line in lines):
                    focal.append(_focal(change, "coverage"))
            focal += self._units_reached(candidate, production, {(f["file"], f["method"]) for f in focal})
            focal += self._thrown_through(item, {(f["file"], f["method"]) for f in focal})
        else:
            seen: set[int | None] = set()
            for provenance, change in self.static.get(candidate.id, []):
                if change.id not in seen:
                    seen.add(change.id)
                    focal.append(_focal(change, provenance))
        item.focal = focal
        focal_changes = [
            c for c in self.changes if any(f["file"] == c.file and f["method"] == c.method for f in focal)
        ]
        deps_refactoring = bool(focal_changes) and all(self._refactored(c) for c in focal_changes)
        improved = False
        if "ON" in item.cells and item.cells["ON"].coverage is not None:
            before = _production_lines(item.cells["ON"].coverage, self.patterns)
            improved = any(lines - before.get(path, frozenset()) for path, lines in production.items())
        others = names_of_test_code({p: h for p, h in self.test_side.items() if p != candidate.test_file})
        others |= {
            name for p, names in self.old_test_names.items() if p != candidate.test_file for name in names
        }
        on_test_code = frozenset(
            cell
            for cell in ("NO", "ON")
            if cell in item.cells
            and failure_cause(item.cells[cell].outcome, item.cells[cell].message, others, self._own())
            == TEST_CODE
        )
        verdict = classify(
            candidate.change_kind,
            {cell: result.outcome for cell, result in item.cells.items()},
            has_focal=bool(focal),
            coverage_measured=bool(production),
            deps_refactoring=deps_refactoring,
            coverage_improved=improved,
            on_test_code=on_test_code,
            name_bound=frozenset(item.name_bound),
        )
        item.verdict = _with_cell_message(verdict, item.cells)

    def _units_reached(
        self, candidate: Candidate, production: Mapping[str, frozenset[int]], found: set[tuple[str, str]]
    ) -> list[dict[str, Any]]:
        """Changed code outside methods the test reaches: it runs at import or class load, where
        per-test coverage does not see it, so it counts when the test names it (``reference``) or
        a line of its file the test executed names it (``coverage_use``)."""
        named = {
            change.id for provenance, change in self.static.get(candidate.id, []) if provenance == "reference"
        }
        reached = []
        for change in self.changes:
            if (
                change.unit == "method"
                or change.kind == MethodChangeKind.REMOVED
                or (change.file, change.method) in found
            ):
                continue
            if change.id in named:
                reached.append(_focal(change, "reference"))
                continue
            name = change.method.rsplit(".", 1)[-1].split("#", 1)[0]
            source = self.show(self.pair.rev2, change.file) if change.file in production else None
            if source is None or name.startswith("<"):
                continue
            lines = source.decode("utf-8", errors="replace").splitlines()
            word = re.compile(rf"\b{re.escape(name)}\b")
            own = range(change.new_start or 0, (change.new_end or 0) + 1)
            if any(
                0 < line <= len(lines) and line not in own and word.search(lines[line - 1])
                for line in production[change.file]
            ):
                reached.append(_focal(change, "coverage_use"))
        return reached

    def _thrown_through(self, item: _Item, found: set[tuple[str, str]]) -> list[dict[str, Any]]:
        """Changed methods an exception left on the new code before JaCoCo saw a line of them
        (it counts a line once a later probe runs: ``return Math.addExact(a, b)`` that throws
        shows none), found on the stack of the old test's failure there (ON) and linked to the
        test statically: the old test ran them, and the new one, its repair, calls them."""
        frames = item.cells["ON"].frames if "ON" in item.cells else set()
        if not frames:
            return []
        lines: dict[str, set[int]] = {}
        for frame in frames:
            path, _, number = frame.rpartition(":")
            lines.setdefault(path, set()).add(int(number))
        thrown = []
        for _, change in self.static.get(item.candidate.id, []):
            start, end = change.new_start, change.new_end
            if (
                change.unit != "method"
                or start is None
                or end is None
                or (change.file, change.method) in found
            ):
                continue
            on_stack = [n for p, ns in lines.items() if f"/{change.file}".endswith(f"/{p}") for n in ns]
            if any(start <= n <= end for n in on_stack):
                found.add((change.file, change.method))
                thrown.append(_focal(change, "stack"))
        return thrown

    def _refactored(self, change: MethodChange) -> bool:
        """Whether a changed production method only changed by refactoring (added ones did not)."""
        if change.kind != MethodChangeKind.CHANGED or None in (
            change.old_start,
            change.old_end,
            change.new_start,
            change.new_end,
        ):
            return False
        old = _lines(
            self.show(self.pair.rev1, change.old_file or change.file), change.old_start, change.old_end
        )
        new = _lines(self.show(self.pair.rev2, change.file), change.new_start, change.new_end)
        if old is None or new is None:
            return False
        if change.unit != "method":  # a field or constant: only its layout, or a renamed class, changed
            return [self.renamed.get(word, word) for word in _WORDS.findall(old)] == _WORDS.findall(new)
        return is_refactoring(self.language, old, new, self.renamed)


_WORDS = re.compile(r"[\w$]+|\S")
"""The words and symbols of a field or constant's lines (``$`` is part of a Java name)."""

_FAILED_CELL = {DropReason.NEW_ON_NEW_NOT_PASS: "NN", DropReason.OLD_ON_OLD_NOT_PASS: "OO"}


def _with_cell_message(verdict: Verdict, cells: Mapping[str, Cell]) -> Verdict:
    """A drop because a cell did not pass says why, with the cell's message (``NN error: fixture
    'db' not found``, then the whole message)."""
    by_cell = (DropReason.OLD_FAILS_ON_TEST_CODE, DropReason.DEPENDS_ON_FILE_NAME)
    named = verdict.detail.split(" ", 1)[0] if verdict.reason in by_cell else ""
    cell = cells.get(_FAILED_CELL.get(verdict.reason, named)) if verdict.reason else None
    if cell is None or not cell.message:
        return verdict
    return dataclasses.replace(verdict, detail=in_context(verdict.detail, cell.message))


def _production_lines(coverage: Coverage | None, patterns: FilePatterns) -> dict[str, frozenset[int]]:
    if coverage is None:
        return {}
    return {
        path: lines
        for path, lines in coverage.lines.items()
        if lines and patterns.role(path) == FileRole.PRODUCTION
    }


def _focal(change: MethodChange, provenance: str) -> dict[str, Any]:
    return {
        "file": change.file,
        "method": change.method,
        "kind": str(change.kind),
        "start": change.new_start,
        "end": change.new_end,
        "provenance": provenance,
        "unit": change.unit,
    }


def _lines(source: bytes | None, start: int | None, end: int | None) -> str | None:
    if source is None or start is None or end is None:
        return None
    return "\n".join(source.decode("utf-8", errors="replace").splitlines()[start - 1 : end])


# --- writing ---------------------------------------------------------------------------------------


def _recorded_spec(rev2: BuiltRevision | None) -> dict[str, Any] | None:
    """rev2's EnvSpec as stored with the pair and its tasks: a Python one with its resolved
    environment as pins, which scoring and re-validation rebuild it from."""
    if rev2 is None or rev2.spec is None:
        return None
    spec = rev2.spec
    if spec.language == "python" and rev2.status == "ok" and rev2.installed:
        spec = dataclasses.replace(spec, pins=rev2.installed)
    return dataclasses.asdict(spec)


def _write(
    session: Any,
    repo: Repository,
    pair: RevisionPair,
    items: Sequence[_Item],
    built: Mapping[str, BuiltRevision | None],
    request: CurateRequest,
    run_id: int | None,
    seconds: float,
) -> None:
    rev1, rev2 = built["rev1"], built["rev2"]
    spec = _recorded_spec(rev2)
    image = rev2.image if rev2 is not None else None
    messages = [in_context(name, b.message) for name, b in built.items() if b is not None and b.message]
    records = {
        name: [dataclasses.asdict(choice) for choice in b.choices]
        for name, b in built.items()
        if b is not None and b.choices
    }
    installed = {name: list(b.installed) for name, b in built.items() if b is not None and b.installed}
    assert pair.id is not None and repo.identity is not None
    identity = repo.identity
    # A pair curated again (--redo, --retry-env, kinds not asked for before) replaces the rows of
    # the candidates it curated here, in the transaction that writes the new ones: a run that
    # fails or is killed first leaves the old ones whole. Other kinds' records and tasks stay.
    curated = [item.candidate.id for item in items]
    session.exec(delete(CurationRecord).where(col(CurationRecord.candidate_id).in_(curated)))
    session.exec(delete(CuratedPair).where(col(CuratedPair.pair_id) == pair.id))
    tracks = {TRACK_OF_KIND[kind] for item in items if (kind := item.candidate.change_kind) in TRACK_OF_KIND}
    of_pair = select(Task).where(Task.pair_id == pair.id, col(Task.track).in_(sorted(tracks)))
    earlier = {task.id: task for task in session.exec(of_pair).all()} if tracks else {}
    session.add(
        CuratedPair(
            pair_id=pair.id,
            repository_id=pair.repository_id,
            run_id=run_id,
            rev1_build=rev1.status if rev1 else "skipped",
            rev2_build=rev2.status if rev2 else "skipped",
            message=bounded("\n".join(messages), 2 * MESSAGE_LIMIT),
            build_records=records or None,
            installed=installed or None,
            env_spec=spec,
            image=image,
            backend=request.backend,
            seconds=round(seconds, 3),
        )
    )
    groups: dict[tuple[str, Track], list[_Item]] = {}
    for item in items:
        assert item.verdict is not None
        track = TRACKS.get(item.verdict.label)
        if track is not None:
            groups.setdefault((item.candidate.test_file, track), []).append(item)
    task_of: dict[int | None, str] = {}
    mined_at = _mined_at(session, pair)
    changed_code = production_diff(session, pair, Path(repo.path)) if groups else ""
    for (test_file, track), members in sorted(groups.items()):
        identifier = task_id(identity, pair.rev1, pair.rev2, test_file, str(track))
        old_file = next((m.candidate.old_test_file for m in members if m.candidate.old_test_file), None)
        focal: dict[tuple[str, str], dict[str, Any]] = {}
        for member in members:
            for entry in member.focal:
                focal.setdefault((entry["file"], entry["method"]), entry)
            task_of[member.candidate.id] = identifier
        session.merge(
            Task(
                id=identifier,
                track=track,
                language=repo.language,
                repository_id=pair.repository_id,
                repository=repo.name,
                pair_id=pair.id,
                rev1=pair.rev1,
                rev2=pair.rev2,
                rev1_date=pair.rev1_date,
                rev2_date=pair.rev2_date,
                test_file=test_file,
                old_test_file=old_file,
                test_methods=[m.candidate.test_method for m in members],
                test_ids=[m.new_id for m in members],
                gold_helpers=sorted({key for m in members for key in m.helpers}),
                focal_methods=[focal[key] for key in sorted(focal)],
                gold_patch=unified_diff(
                    Path(repo.path), pair.rev1, pair.rev2, sorted({test_file, old_file or test_file})
                ),
                production_diff=changed_code,
                env_spec=spec,
                image=image,
                build_records=records or None,
                installed=installed or None,
                matrix={
                    m.candidate.test_method: {k: c.as_json() for k, c in m.cells.items()} for m in members
                },
                flaky=False,
                mined_at=mined_at,
                curated_at=utcnow(),
            )
        )
    _retire_vanished(session, earlier, set(task_of.values()))
    for item in items:
        assert item.verdict is not None and item.candidate.id is not None
        session.add(
            CurationRecord(
                candidate_id=item.candidate.id,
                pair_id=pair.id,
                repository_id=pair.repository_id,
                label=item.verdict.label,
                drop_reason=item.verdict.reason,
                detail=item.verdict.detail,
                cells={cell: result.as_json() for cell, result in item.cells.items()},
                focal=item.focal,
                task_id=task_of.get(item.candidate.id),
            )
        )


def _retire_vanished(session: Any, earlier: Mapping[str, Task], kept: set[str]) -> None:
    """Tasks a pair no longer yields: deleted, unless agents were scored on them — then retired,
    their runs kept (and out of the leaderboard, which counts active tasks only)."""
    for identifier, task in earlier.items():
        if identifier in kept:
            continue
        if session.exec(select(AgentRun.id).where(AgentRun.task_id == identifier)).first() is None:
            session.delete(task)
        else:
            task.status = TaskStatus.RETIRED
            session.add(task)


def _mined_at(session: Any, pair: RevisionPair) -> datetime | None:
    run = session.exec(
        select(MiningRun)
        .join(MinedCommit, col(MinedCommit.run_id) == col(MiningRun.id))
        .where(
            MinedCommit.repository_id == pair.repository_id,
            col(MinedCommit.sha).in_([*pair.commits, pair.rev2]),
        )
    ).first()
    return run.started_at if run is not None else None
