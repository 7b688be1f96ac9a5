"""Revision pairs: which commit is rev1 for each commit that changes test code.

rev2 is a commit that touches test files. When it also touches production
files, rev1 is its parent. When it changes tests only, the production change
it goes with often landed just before it: the miner walks back over the
production-only commits within a window (12 h by default) and takes the
parent of the earliest as rev1, recording the span. The walk may end on a
commit that changes both, when it changes other test files: its production
change is the one the test needs, and only the test-only commit's own test
files count.

Tests are also written first: a test-only commit with no production change
before it, followed within the window by production-only commits, is paired
from its parent to the last of those (*test-first*; rev2 is then that
production commit, and the test commit marks the pair as mined).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta

from tasks import CommitOutcome

from .files import FilePatterns, FileRole
from .gitlog import LogCommit

DEFAULT_WINDOW = timedelta(hours=12)
_BUFFER = 20_000  # recent commits kept for the walk back; older ones are read from git on demand


@dataclass(frozen=True)
class PairPlan:
    """What the miner will do with one commit that changed test code."""

    rev2: LogCommit
    rev1: str | None
    commits: tuple[LogCommit, ...]
    """The commits after rev1 up to and including rev2, oldest first."""
    outcome: CommitOutcome
    """``paired``, or why there is no pair (``no_production_change``, ``root_commit``)."""
    test_commit: LogCommit | None = None
    """Test-first: the commit that changed the tests, before the production commits up to rev2."""
    test_paths: frozenset[str] | None = None
    """When set, only these test files give candidates (a walk back that crossed a commit which
    changed other test files with its production code)."""

    @property
    def marker(self) -> LogCommit:
        """The commit that changed the tests: its record marks the pair as mined."""
        return self.test_commit or self.rev2

    @property
    def test_first(self) -> bool:
        return self.test_commit is not None

    @property
    def span_seconds(self) -> int:
        first = self.commits[0].committer_date
        return int((self.rev2.committer_date - first).total_seconds())


def touches(commit: LogCommit, patterns: FilePatterns, role: FileRole) -> bool:
    """Whether the commit adds, changes, renames or deletes a file of the given role."""
    return any(
        patterns.role(change.path) is role
        or (change.old_path is not None and patterns.role(change.old_path) is role)
        for change in commit.changes
    )


def plan_pairs(
    log: Iterable[LogCommit],
    patterns: FilePatterns,
    lookup: Callable[[str], LogCommit | None],
    window: timedelta = DEFAULT_WINDOW,
) -> Iterator[tuple[LogCommit, PairPlan | None]]:
    """Pairs every commit of the stream that touches test files; yields each commit with its plan.

    The stream must list parents before children (``git log --reverse
    --topo-order``). ``lookup`` reads a commit the stream did not show (an
    ancestor before the window of this run), or returns None.
    """
    recent: OrderedDict[str, LogCommit] = OrderedDict()
    waiting: _TestFirst | None = None
    """A test-only commit with no production change before it, and the commits after it so far."""

    def find(sha: str) -> LogCommit | None:
        return recent.get(sha) or lookup(sha)

    for commit in log:
        recent[commit.sha] = commit
        if len(recent) > _BUFFER:
            recent.popitem(last=False)
        if waiting is not None:
            if waiting.extended_by(commit, patterns, window):
                yield commit, None
                continue
            yield waiting.test, waiting.plan(patterns)
            waiting = None
        if not touches(commit, patterns, FileRole.TEST):
            yield commit, None
            continue
        plan = _plan(commit, patterns, find, window)
        if plan.outcome is CommitOutcome.NO_PRODUCTION_CHANGE:
            waiting = _TestFirst(commit, plan)
            continue
        yield commit, plan
    if waiting is not None:
        yield waiting.test, waiting.plan(patterns)


@dataclass
class _TestFirst:
    test: LogCommit
    alone: PairPlan
    """Its plan when no production commit follows."""
    after: list[LogCommit] = field(default_factory=list)

    def extended_by(self, commit: LogCommit, patterns: FilePatterns, window: timedelta) -> bool:
        """Whether ``commit`` continues the line after the test commit: its child, no merge, no
        test change, within the window."""
        tip = self.after[-1] if self.after else self.test
        if commit.first_parent != tip.sha or len(commit.parents) > 1:
            return False
        if touches(commit, patterns, FileRole.TEST):
            return False
        if commit.committer_date - self.test.committer_date > window:
            return False
        self.after.append(commit)
        return True

    def plan(self, patterns: FilePatterns) -> PairPlan:
        last = max(
            (i for i, c in enumerate(self.after) if touches(c, patterns, FileRole.PRODUCTION)), default=None
        )
        if last is None:
            return self.alone
        rev2 = self.after[last]
        commits = (self.test, *self.after[: last + 1])
        return PairPlan(rev2, self.test.first_parent, commits, CommitOutcome.PAIRED, test_commit=self.test)


def _plan(
    rev2: LogCommit,
    patterns: FilePatterns,
    find: Callable[[str], LogCommit | None],
    window: timedelta,
) -> PairPlan:
    if rev2.first_parent is None:
        return PairPlan(rev2, None, (rev2,), CommitOutcome.ROOT_COMMIT)
    if touches(rev2, patterns, FileRole.PRODUCTION):
        return PairPlan(rev2, rev2.first_parent, (rev2,), CommitOutcome.PAIRED)
    # Test-only commit: walk back over commits that leave tests alone, within the window.
    run: list[LogCommit] = []
    earliest_production: int | None = None
    crossed = False
    sha: str | None = rev2.first_parent
    while sha is not None:
        ancestor = find(sha)
        if (
            ancestor is None
            or len(ancestor.parents) > 1
            or rev2.committer_date - ancestor.committer_date > window
        ):
            break
        if touches(ancestor, patterns, FileRole.TEST):
            # A commit that changed both may hold the production change this test needs, when
            # none came after it; its own test files are its pair's, not this one's.
            if (
                earliest_production is None
                and touches(ancestor, patterns, FileRole.PRODUCTION)
                and not _test_paths(ancestor, patterns) & _test_paths(rev2, patterns)
            ):
                run.append(ancestor)
                earliest_production, crossed = len(run), True
            break
        run.append(ancestor)
        if touches(ancestor, patterns, FileRole.PRODUCTION):
            earliest_production = len(run)
        sha = ancestor.first_parent
    if earliest_production is None:
        return PairPlan(rev2, rev2.first_parent, (rev2,), CommitOutcome.NO_PRODUCTION_CHANGE)
    commits = run[:earliest_production]
    first = commits[-1]
    only = _test_paths(rev2, patterns) if crossed else None
    if first.first_parent is None:
        return PairPlan(rev2, None, (*reversed(commits), rev2), CommitOutcome.ROOT_COMMIT)
    return PairPlan(
        rev2, first.first_parent, (*reversed(commits), rev2), CommitOutcome.PAIRED, test_paths=only
    )


def _test_paths(commit: LogCommit, patterns: FilePatterns) -> frozenset[str]:
    """The test files a commit adds, changes, renames or deletes (both names of a rename)."""
    return frozenset(
        path
        for change in commit.changes
        for path in (change.path, change.old_path)
        if path is not None and patterns.role(path) is FileRole.TEST
    )
