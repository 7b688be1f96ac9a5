"""One commit that changed test code → a :class:`CommitRecord`, the plain value the miner stores.

Analysis reads git and parses sources but touches no database, so it can run in
worker processes while the main process writes records in order.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from tasks import CommitOutcome, LinkProvenance, MethodChangeKind, TestChangeKind

from .changes import MethodDelta, ParseCache, method_deltas
from .errors import SourceSyntaxError
from .files import FilePatterns, FileRole
from .gitlog import BlobChange, BlobReader, diff_blobs
from .links import ProductionMethod, static_links
from .pairs import PairPlan
from .parsing import Language, MethodInfo, MethodScan, ParsedFile

log = logging.getLogger(__name__)

_MAX_DIFF_PATHS = 500  # past this many paths, diff the whole trees rather than list them


@dataclass(frozen=True)
class MethodChangeRecord:
    file: str
    old_file: str | None
    method: str
    kind: MethodChangeKind
    old_start: int | None
    old_end: int | None
    new_start: int | None
    new_end: int | None
    unit: str = "method"


@dataclass(frozen=True)
class CandidateRecord:
    test_file: str
    old_test_file: str | None
    test_method: str
    change_kind: TestChangeKind
    old_source: str | None
    new_source: str
    old_start: int | None
    old_end: int | None
    new_start: int
    new_end: int
    links: tuple[tuple[int, LinkProvenance], ...]
    """(index into the commit's method changes, provenance)."""


SYNTAX_WARNING = "syntax_warning"
"""The reason of a note, not a skip: the file was parsed, and its parser warned (the detail says what)."""


@dataclass(frozen=True)
class SkipRecord:
    sha: str
    path: str
    reason: str
    detail: str


@dataclass(frozen=True)
class PairRecord:
    """The pair as analysis sees it; the writer adds the commits' metadata (via PyDriller)."""

    rev1: str
    rev2: str
    commits: tuple[str, ...]
    span_seconds: int
    test_first: bool = False


@dataclass(frozen=True)
class CommitRecord:
    """Everything the miner writes for one commit, in one transaction."""

    sha: str
    committer_date: datetime
    outcome: CommitOutcome
    detail: str = ""
    pair: PairRecord | None = None
    changes: tuple[MethodChangeRecord, ...] = ()
    candidates: tuple[CandidateRecord, ...] = ()
    skips: tuple[SkipRecord, ...] = ()


def failed_record(sha: str, committer_date: datetime, exc: Exception) -> CommitRecord:
    """The record of a commit whose analysis failed: stored, counted, and retried by the next run."""
    detail = f"{type(exc).__name__}: {exc}".splitlines()[0]
    log.warning("commit %s failed: %s", sha[:10], detail)
    return CommitRecord(
        sha=sha,
        committer_date=committer_date,
        outcome=CommitOutcome.ERROR,
        detail=detail,
        skips=(SkipRecord(sha, "", "commit_error", detail),),
    )


@dataclass(frozen=True)
class _FileMethod:
    file: str
    old_file: str | None
    delta: MethodDelta


class CommitAnalyzer:
    """Analyses commits of one repository. Construction does no I/O."""

    def __init__(self, path: Path, language: Language, patterns: FilePatterns) -> None:
        self.path = path
        self.language = language
        self.patterns = patterns
        self.cache = ParseCache()
        self.blobs = BlobReader(path)
        self._scans: OrderedDict[str, MethodScan] = OrderedDict()

    def close(self) -> None:
        self.blobs.close()

    def analyse(self, plan: PairPlan) -> CommitRecord:
        """The record of one commit; an error becomes an ``error`` record, never an exception."""
        try:
            return self._analyse(plan)
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # an odd commit must never stop the walk
            return failed_record(plan.marker.sha, plan.marker.committer_date, exc)

    def _analyse(self, plan: PairPlan) -> CommitRecord:
        base = CommitRecord(
            sha=plan.marker.sha, committer_date=plan.marker.committer_date, outcome=plan.outcome
        )
        if plan.outcome is not CommitOutcome.PAIRED or plan.rev1 is None:
            return base
        production, tests, skips = self._method_changes(plan)
        if not production:
            # Without a changed production method, an unchanged test has nothing to depend on.
            tests = [t for t in tests if t.delta.changed]
        if not any(t.delta.changed for t in tests):
            return dataclasses.replace(base, outcome=CommitOutcome.NO_TEST_METHOD_CHANGE, skips=skips)

        changes = tuple(_change_record(p) for p in production)
        linkable = [_linkable(p) for p in production]
        index = {(p.file, p.method.key): i for i, p in enumerate(linkable)}
        names_a_changed_method = _names_a_changed_method(linkable)
        candidates = []
        for test in tests:
            new = test.delta.new
            assert new is not None
            kind = test.delta.test_kind
            unchanged = kind is TestChangeKind.UNCHANGED_WITH_CHANGED_DEPENDENCIES
            # An unchanged test is kept only if it calls changed code: skip the scan when the
            # text does not even name a changed method.
            if unchanged and not names_a_changed_method(new.source):
                continue
            links = static_links(self._scanned(new), test.file, linkable)
            if unchanged and not any(p is LinkProvenance.CALL for _, p in links):
                continue
            old = test.delta.old
            candidates.append(
                CandidateRecord(
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
                    links=tuple((index[(m.file, m.method.key)], p) for m, p in links),
                )
            )
        pair = PairRecord(
            rev1=plan.rev1,
            rev2=plan.rev2.sha,
            commits=tuple(c.sha for c in plan.commits),
            span_seconds=plan.span_seconds,
            test_first=plan.test_first,
        )
        return dataclasses.replace(
            base, pair=pair, changes=changes, candidates=tuple(candidates), skips=skips
        )

    def _method_changes(
        self, plan: PairPlan
    ) -> tuple[list[_FileMethod], list[_FileMethod], tuple[SkipRecord, ...]]:
        """Changed production methods, test methods of changed test files, skips."""
        assert plan.rev1 is not None
        production: list[_FileMethod] = []
        tests: list[_FileMethod] = []
        skips: list[SkipRecord] = []
        for change in self._blob_changes(plan):
            # Each side counts only if its name at that revision is the language's: a file renamed
            # from ``.yml`` to ``.py`` is new code, not an old version to parse as Python.
            old_path = change.old_path if change.old_blob and self._is_source(change.old_path) else None
            new_path = change.new_path if change.new_blob and self._is_source(change.new_path) else None
            role = self.patterns.role(new_path or old_path or "")
            if role is FileRole.OTHER:
                continue
            # Both sides are tried, so each revision of a file that stays broken names itself.
            old, old_skip = self._parsed(plan.rev1, old_path, change.old_blob)
            new, new_skip = self._parsed(plan.rev2.sha, new_path, change.new_blob)
            if old_skip or new_skip:
                skips += [skip for skip in (old_skip, new_skip) if skip is not None]
                continue
            for sha, path, parsed in ((plan.rev1, old_path, old), (plan.rev2.sha, new_path, new)):
                if parsed is not None and parsed.warnings and path is not None:
                    skips.append(SkipRecord(sha, path, SYNTAX_WARNING, "; ".join(parsed.warnings)))
            deltas = method_deltas(old, new, old_path, new_path)
            if role is FileRole.PRODUCTION:
                path = new_path or old_path or ""
                # Code outside methods (constants, fields, module-level assignments) changes too;
                # a name a changed method binds as well (``if NEW: f = lib.f`` / ``else: def f``)
                # is that method's change, one row per name.
                methods = {d.key for d in deltas if d.changed}
                units = method_deltas(_units(old), _units(new), old_path, new_path)
                deltas += [d for d in units if d.key not in methods]
                changed = [_FileMethod(path, old_path, d) for d in deltas if d.changed]
                production += changed
            elif new_path is not None and (plan.test_paths is None or new_path in plan.test_paths):
                tests += [
                    _FileMethod(new_path, old_path, d) for d in deltas if d.new is not None and d.new.is_test
                ]
        return production, tests, tuple(skips)

    def _blob_changes(self, plan: PairPlan) -> list[BlobChange]:
        """The language's files that differ between rev1 and rev2, with their blob ids.

        A single-commit pair already has them from the log pass; a longer pair asks git.
        """
        assert plan.rev1 is not None
        if len(plan.commits) == 1:
            return [
                BlobChange(
                    old_path=(change.old_path or change.path) if change.old_blob else None,
                    new_path=change.path if change.new_blob else None,
                    old_blob=change.old_blob,
                    new_blob=change.new_blob,
                )
                for change in plan.rev2.changes
            ]
        paths = sorted(
            {
                path
                for commit in plan.commits
                for change in commit.changes
                for path in (change.path, change.old_path)
                if path is not None and self.patterns.role(path) is not FileRole.OTHER
            }
        )
        return diff_blobs(
            self.path, plan.rev1, plan.rev2.sha, paths if len(paths) <= _MAX_DIFF_PATHS else None
        )

    def _is_source(self, path: str | None) -> bool:
        return path is not None and path.endswith(self.language.suffixes)

    def _parsed(
        self, sha: str, path: str | None, blob: str | None
    ) -> tuple[ParsedFile | None, SkipRecord | None]:
        """One side of a changed file: its parse (None where it is no source), or why not."""
        if path is None or blob is None:
            return None, None
        try:
            return self._parse(blob), None
        except SourceSyntaxError as exc:
            return None, SkipRecord(sha, path, "syntax_error", str(exc))

    def _parse(self, blob: str) -> ParsedFile:
        return self.cache.parse(
            blob, lambda: self.blobs.read(blob), lambda data: self.language.parse(data, scan="none")
        )

    def _scanned(self, method: MethodInfo) -> MethodInfo:
        """The method with its calls, type references and tokens (scanned once per distinct text)."""
        scan = self._scans.get(method.source)
        if scan is None:
            scan = self.language.scan(method.source)
            self._scans[method.source] = scan
            if len(self._scans) > 4096:
                self._scans.popitem(last=False)
        calls, type_refs, tokens = scan
        return dataclasses.replace(method, calls=calls, type_refs=type_refs, tokens=tokens)


def _units(parsed: ParsedFile | None) -> ParsedFile | None:
    """A file's units outside methods, as methods to compare across revisions."""
    return ParsedFile(methods=parsed.fields) if parsed is not None else None


def _change_record(prod: _FileMethod) -> MethodChangeRecord:
    delta = prod.delta
    either = delta.new or delta.old
    unit = either.unit if either is not None else "method"
    return MethodChangeRecord(
        file=prod.file,
        old_file=prod.old_file,
        method=delta.key,
        kind=delta.production_kind,
        old_start=delta.old.start_line if delta.old else None,
        old_end=delta.old.end_line if delta.old else None,
        new_start=delta.new.start_line if delta.new else None,
        new_end=delta.new.end_line if delta.new else None,
        unit=unit,
    )


def _linkable(prod: _FileMethod) -> ProductionMethod:
    method = prod.delta.new or prod.delta.old
    assert method is not None
    return ProductionMethod(prod.file, method, prod.delta.production_kind)


def _names_a_changed_method(production: list[ProductionMethod]) -> Callable[[str], bool]:
    """Whether a test's text holds a name it must write to call one of the changed methods."""
    return holds_a_word(
        frozenset(
            p.class_name if p.is_constructor else p.method.name
            for p in production
            if p.kind is not MethodChangeKind.REMOVED
        )
    )


_WORD = re.compile(r"\w+")


def holds_a_word(names: frozenset[str]) -> Callable[[str], bool]:
    """Whether a text holds one of ``names`` as a whole word, as ``\\b(?:name|…)\\b`` finds it.
    The text's words are compared with the names as a set: that pattern, compiled for each pair,
    cost more than the rest of the check. Names that are not one word take the pattern."""
    if all(_WORD.fullmatch(name) for name in names):
        return lambda text: not names.isdisjoint(_WORD.findall(text))
    pattern = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, names))) + r")\b")
    return lambda text: pattern.search(text) is not None
