"""Revision pairs: which commit is rev1 for each commit that changes test code.

rev2 is a commit that touches test files. When it also touches production
files, rev1 is its parent. When it changes tests only, the production change
it goes with often landed just before it: the miner walks back over the
production-only commits within a window (12 h by default) and takes the
parent of the earliest as rev1, recording the span.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
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

    def find(sha: str) -> LogCommit | None:
        return recent.get(sha) or lookup(sha)

    for commit in log:
        recent[commit.sha] = commit
        if len(recent) > _BUFFER:
            recent.popitem(last=False)
        if not touches(commit, patterns, FileRole.TEST):
            yield commit, None
            continue
        yield commit, _plan(commit, patterns, find, window)


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
    sha: str | None = rev2.first_parent
    while sha is not None:
        ancestor = find(sha)
        if (
            ancestor is None
            or len(ancestor.parents) > 1
            or rev2.committer_date - ancestor.committer_date > window
            or touches(ancestor, patterns, FileRole.TEST)
        ):
            break
        run.append(ancestor)
        if touches(ancestor, patterns, FileRole.PRODUCTION):
            earliest_production = len(run)
        sha = ancestor.first_parent
    if earliest_production is None:
        return PairPlan(rev2, rev2.first_parent, (rev2,), CommitOutcome.NO_PRODUCTION_CHANGE)
    commits = run[:earliest_production]
    first = commits[-1]
    if first.first_parent is None:
        return PairPlan(rev2, None, (*reversed(commits), rev2), CommitOutcome.ROOT_COMMIT)
    return PairPlan(rev2, first.first_parent, (*reversed(commits), rev2), CommitOutcome.PAIRED)
