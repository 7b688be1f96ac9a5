"""The tables coevo stores: repositories, mining runs, revision pairs and candidates.

Every unit of work writes its rows once, in one transaction, and unique keys
make a second write of the same unit impossible: that is what makes runs
resumable and idempotent.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, Column, Text, UniqueConstraint
from sqlalchemy.types import String, TypeDecorator
from sqlmodel import Field, SQLModel


class AwareDateTime(TypeDecorator[datetime]):
    """A timezone-aware timestamp, stored as UTC ISO-8601 text so it sorts and compares as text.

    Naive datetimes are refused: a timestamp without a zone is a bug waiting to happen.
    """

    impl = String(40)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> str | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: coevo stores only timezone-aware times")
        return value.astimezone(UTC).isoformat()

    def process_result_value(self, value: str | None, dialect: Any) -> datetime | None:
        return None if value is None else datetime.fromisoformat(value)


def utcnow() -> datetime:
    return datetime.now(UTC)


def _aware(nullable: bool = False, index: bool = False, now: bool = False) -> Any:
    column: Column[datetime] = Column(AwareDateTime(), nullable=nullable, index=index)
    if now:
        return Field(default_factory=utcnow, sa_column=column)
    return Field(default=None, sa_column=column)


class RunStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    INTERRUPTED = "interrupted"
    FAILED = "failed"


class CommitOutcome(StrEnum):
    """What the miner made of a commit that changed test code."""

    PAIRED = "paired"
    NO_PRODUCTION_CHANGE = "no_production_change"
    NO_TEST_METHOD_CHANGE = "no_test_method_change"
    ROOT_COMMIT = "root_commit"
    ERROR = "error"


class TestChangeKind(StrEnum):
    __test__ = False  # a test module that imports it: pytest must not take it for a test class

    INSERTED = "inserted"
    UPDATED = "updated"
    UNCHANGED_WITH_CHANGED_DEPENDENCIES = "unchanged_with_changed_dependencies"


class MethodChangeKind(StrEnum):
    ADDED = "added"
    CHANGED = "changed"
    REMOVED = "removed"


class LinkProvenance(StrEnum):
    """How a test method was linked to a production method without running it."""

    CALL = "call"
    """The test body calls the production method (or constructs its class, for constructors)."""
    CLASS_REFERENCE = "class_reference"
    """The test body names the production method's class but calls none of its changed methods."""
    NAMING = "naming"
    """Naming conventions: ``FooTest.testBar`` → ``Foo.bar``, ``test_foo.py::test_bar`` → ``foo.py::bar``."""
    REFERENCE = "reference"
    """The test body names a changed field, constant or module-level name."""


class Repository(SQLModel, table=True):
    """A repository coevo mines, with its settings and its mining watermark."""

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True)
    """A short unique name, by default the folder or URL name."""
    location: str
    """What the user gave: a local path or a clone URL."""
    path: str
    """The local git directory coevo reads (the clone, for a URL)."""
    identity: str | None = None
    """What the repository is wherever it was cloned, and what its task ids derive from: its
    canonical remote (``github.com/owner/name``) or, without one, ``root:<sha>`` of its root
    commit. None in a store from before identities, until the next ``mine``, ``curate`` or
    ``score`` finds it (:func:`~tasks.adopt_identities`)."""
    language: str
    test_globs: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    """This repository's own test-file patterns; empty means the language's defaults."""
    exclude_globs: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    build_args: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    """Extra build-tool arguments this repository needs (Maven: ``-DjdkVersion=1.8``)."""
    watermark_sha: str | None = None
    """The head commit of the last run that mined up to the branch head."""
    watermark_since: datetime | None = _aware(nullable=True)
    """The start of the window that run covered; None when it covered the whole history."""
    watermark_full_history: bool = False
    added_at: datetime | None = _aware(now=True)
    licence: str | None = None
    """The SPDX id of its licence as discovery found it (``coevo discover``); None when unknown."""


class MiningRun(SQLModel, table=True):
    """One `coevo mine` over one repository: its window, its fate and its counts."""

    id: int | None = Field(default=None, primary_key=True)
    repository_id: int = Field(foreign_key="repository.id", index=True)
    started_at: datetime | None = _aware(now=True)
    finished_at: datetime | None = _aware(nullable=True)
    status: RunStatus = RunStatus.RUNNING
    since: datetime | None = _aware(nullable=True)
    until: datetime | None = _aware(nullable=True)
    head_sha: str = ""
    owner: str = ""
    """The process running it (:class:`~tasks.processes.Owner` token): a ``running`` run whose
    owner is dead was interrupted, and the next run marks it so."""
    commits_scanned: int = 0
    """Non-merge commits the selection pass read."""
    commits_selected: int = 0
    """Commits that touched test or production files of the language."""
    test_commits: int = 0
    """Commits that touched test files (the rev2 candidates), processed in this run."""
    already_mined: int = 0
    pairs: int = 0
    candidates: int = 0
    skipped_files: int = 0
    message: str = ""


class MinedCommit(SQLModel, table=True):
    """A commit that changed test code, mined once: its presence is the resume marker."""

    __table_args__ = (UniqueConstraint("repository_id", "sha"),)

    id: int | None = Field(default=None, primary_key=True)
    repository_id: int = Field(foreign_key="repository.id", index=True)
    sha: str
    committer_date: datetime | None = _aware()
    outcome: CommitOutcome
    detail: str = ""
    run_id: int | None = Field(default=None, foreign_key="miningrun.id")


class RevisionPair(SQLModel, table=True):
    """rev1 → rev2: the code before and after a co-evolution change.

    rev2 changes test code; rev1 is its parent, or the parent of the first of
    the production-only commits that landed just before it. A test-first pair runs from the
    parent of the test commit to the last production commit that followed it.
    """

    __table_args__ = (UniqueConstraint("repository_id", "rev2"),)

    id: int | None = Field(default=None, primary_key=True)
    repository_id: int = Field(foreign_key="repository.id", index=True)
    rev1: str
    rev2: str
    rev1_date: datetime | None = _aware()
    rev2_date: datetime | None = _aware(index=True)
    """rev2's committer date: the date of every task made from this pair."""
    rev2_author_date: datetime | None = _aware()
    rev2_utc_offset_minutes: int = 0
    """rev2's committer time zone, as git recorded it."""
    rev1_author: str = ""
    rev2_author: str = ""
    rev2_message: str = Field(default="", sa_column=Column(Text, nullable=False))
    commits: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    """The commits after rev1 up to rev2, oldest first."""
    span_seconds: int = 0
    """Time from the first commit of the pair to rev2 (0 when rev2 alone changed code and tests)."""
    test_first: bool = False
    """The tests were committed first (the pair's first commit), the production code after them up
    to rev2."""
    production_diff: str = Field(default="", sa_column=Column(Text, nullable=False))
    """Unified diff rev1 → rev2 of the production files of the language, as stores of coevo before
    2026-12 hold it; mining no longer writes it (most pairs never become tasks): a task takes it
    from :func:`miner.production_diff` when curation writes it."""


class MethodChange(SQLModel, table=True):
    """A production method added, changed or removed between rev1 and rev2."""

    __table_args__ = (UniqueConstraint("pair_id", "file", "method"),)

    id: int | None = Field(default=None, primary_key=True)
    pair_id: int = Field(foreign_key="revisionpair.id", index=True)
    file: str
    old_file: str | None = None
    method: str
    """The method's key in its file: qualified name with parameter types (Java); for a unit outside
    methods, its qualified name (``Outer.NAME``, ``Outer.<static>``, a module-level ``NAME``)."""
    kind: MethodChangeKind
    unit: str = "method"
    """``method``, ``field`` (a Java field or initializer block, a Python class attribute) or
    ``module`` (a Python module-level assignment)."""
    old_start: int | None = None
    old_end: int | None = None
    new_start: int | None = None
    new_end: int | None = None


class Candidate(SQLModel, table=True):
    """A test method that co-evolved with production code: the unit curation proves by execution."""

    __table_args__ = (UniqueConstraint("pair_id", "test_file", "test_method"),)

    id: int | None = Field(default=None, primary_key=True)
    repository_id: int = Field(foreign_key="repository.id", index=True)
    pair_id: int = Field(foreign_key="revisionpair.id", index=True)
    test_file: str
    """The test file at rev2."""
    old_test_file: str | None = None
    """The test file at rev1, when it existed (differs from ``test_file`` after a rename)."""
    test_method: str
    change_kind: TestChangeKind = Field(index=True)
    old_source: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    new_source: str = Field(default="", sa_column=Column(Text, nullable=False))
    old_start: int | None = None
    old_end: int | None = None
    new_start: int = 0
    new_end: int = 0


class FocalLink(SQLModel, table=True):
    """A static link from a candidate's test method to a changed production method."""

    __table_args__ = (UniqueConstraint("candidate_id", "method_change_id", "provenance"),)

    id: int | None = Field(default=None, primary_key=True)
    candidate_id: int = Field(foreign_key="candidate.id", index=True)
    method_change_id: int = Field(foreign_key="methodchange.id", index=True)
    provenance: LinkProvenance


class Skip(SQLModel, table=True):
    """A file or commit the miner passed over, and why: nothing bad in a repository stops a run.

    Reason ``syntax_warning`` is a note on a file that was parsed: what its parser warned about.
    """

    __table_args__ = (UniqueConstraint("repository_id", "sha", "path", "reason"),)

    id: int | None = Field(default=None, primary_key=True)
    repository_id: int = Field(foreign_key="repository.id", index=True)
    sha: str = Field(index=True)
    path: str = ""
    reason: str
    detail: str = ""


# --- curation ------------------------------------------------------------------------------------


class Label(StrEnum):
    """What curation made of a candidate: a class of the ARCHITECTURE.md table, or a drop."""

    TEST_GENERATION = "test_generation"
    TEST_GENERATION_PASS_OLD = "test_generation_pass_old"
    TEST_UPDATE_POSITIVE = "test_update_positive"
    TEST_UPDATE_PASS_OLD = "test_update_pass_old"
    """An updated test whose old version fails on the new code while its new version also passes
    on the old code: the update-track twin of ``test_generation_pass_old`` (not discriminating)."""
    TEST_REFINEMENT_COV_IMPROVE = "test_refinement_cov_improve"
    TEST_REFINEMENT_NO_COV_IMPROVE = "test_refinement_no_cov_improve"
    TEST_UPDATE_NEGATIVE = "test_update_negative"
    DROPPED = "dropped"


class DropReason(StrEnum):
    NEW_ON_NEW_NOT_PASS = "new_on_new_not_pass"
    OLD_ON_OLD_NOT_PASS = "old_on_old_not_pass"
    NO_FOCAL_CODE = "no_focal_code"
    TEST_REFACTORING_ONLY = "test_refactoring_only"
    DEPS_REFACTORING_ONLY = "deps_refactoring_only"
    TEST_UTILITY_CO_CHANGE = "test_utility_co_change"
    PAIR_SPAN_TOO_LONG = "pair_span_too_long"
    FLAKY = "flaky"
    BUILD_FAILED = "build_failed"
    ENV_FAILED = "env_failed"
    TIMEOUT = "timeout"
    NO_COVERAGE = "no_coverage"
    OLD_FAILS_ON_TEST_CODE = "old_fails_on_test_code"
    DEPENDS_ON_FILE_NAME = "depends_on_file_name"


class Track(StrEnum):
    GENERATION = "generation"
    UPDATE = "update"


class TaskStatus(StrEnum):
    ACTIVE = "active"
    QUARANTINED = "quarantined"
    RETIRED = "retired"


class CurationRun(SQLModel, table=True):
    """One `coevo curate`: its options, its fate and its counts."""

    id: int | None = Field(default=None, primary_key=True)
    started_at: datetime | None = _aware(now=True)
    finished_at: datetime | None = _aware(nullable=True)
    status: RunStatus = RunStatus.RUNNING
    owner: str = ""
    """The process running it (:class:`~tasks.processes.Owner` token), as for :class:`MiningRun`."""
    backend: str = ""
    reruns: int = 3
    pairs_done: int = 0
    pairs_failed: int = 0
    message: str = ""


class CuratedPair(SQLModel, table=True):
    """A revision pair curated once: both builds and every candidate's record, written together.

    Its presence is the resume marker: a pair with a row is never run again unless asked.
    """

    __table_args__ = (UniqueConstraint("pair_id"),)

    id: int | None = Field(default=None, primary_key=True)
    pair_id: int = Field(foreign_key="revisionpair.id", index=True)
    repository_id: int = Field(foreign_key="repository.id", index=True)
    run_id: int | None = Field(default=None, foreign_key="curationrun.id")
    rev1_build: str = ""
    """``ok``, ``failed``, ``env_failed``, or ``skipped`` (no candidate needed a build)."""
    rev2_build: str = ""
    message: str = Field(default="", sa_column=Column(Text, nullable=False))
    """What each build said (``rev1: <cause>`` then its whole message), bounded."""
    build_records: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    """Each built revision's record, ``rev1``/``rev2`` → ``[{"name", "value", "why"}, …]``: what it
    was built with and why (interpreter, JDK, Maven, dependencies' date, raised levels, retries)."""
    installed: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    """What each built revision's build resolved, ``rev1``/``rev2`` → sorted strings (Java: the JDK's
    and Maven's versions, every dependency's ``group:artifact:version``)."""
    env_spec: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    builds: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    """What each revision's build chose and why: ``{"rev1": [{"what", "value", "why"}, …], "rev2":
    …}`` (interpreter, dependencies' date, a retry without it, test tools)."""
    image: str | None = None
    backend: str = ""
    seconds: float = 0.0
    curated_at: datetime | None = _aware(now=True)


class CurationRecord(SQLModel, table=True):
    """A candidate after curation: its 4-way matrix, its label or drop reason, its focal methods."""

    __table_args__ = (UniqueConstraint("candidate_id"),)

    id: int | None = Field(default=None, primary_key=True)
    candidate_id: int = Field(foreign_key="candidate.id", index=True)
    pair_id: int = Field(foreign_key="revisionpair.id", index=True)
    repository_id: int = Field(foreign_key="repository.id", index=True)
    label: Label = Field(index=True)
    drop_reason: DropReason | None = Field(default=None, index=True)
    detail: str = Field(default="", sa_column=Column(Text, nullable=False))
    """Why it was dropped, or what decided the label: a first line naming the cause (``NN error:
    setup: fixture 'db' not found``), then the whole message it came from, if any (bounded)."""
    cells: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    """``OO``/``ON``/``NO``/``NN`` → ``{"outcome", "runs": [outcomes...], "message"}`` (cells not
    run are missing; the message whole, bounded)."""
    focal: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    """Focal methods: ``{"file", "method", "kind", "start", "end", "provenance"}``, provenance
    ``coverage`` (executed at rev2) or a static link's (``call``, ``naming``, …)."""
    task_id: str | None = Field(default=None, index=True)


class Task(SQLModel, table=True):
    """A benchmark task: one (rev1, rev2, test file) of one track, with its test methods."""

    id: str = Field(primary_key=True)
    """Stable across re-runs: a hash of repository, revisions, test file and track."""
    track: Track = Field(index=True)
    language: str
    repository_id: int = Field(foreign_key="repository.id", index=True)
    repository: str
    pair_id: int = Field(foreign_key="revisionpair.id", index=True)
    rev1: str
    rev2: str
    rev1_date: datetime | None = _aware()
    rev2_date: datetime | None = _aware(index=True)
    """The task's date."""
    test_file: str
    old_test_file: str | None = None
    test_methods: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    test_ids: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    """The runnable ids of the methods (``pkg.Class#method``, pytest node ids)."""
    gold_helpers: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    """Keys of the helpers (methods, fixtures, set-ups) of the test file that changed with the test
    methods and are part of their answer: the agent's starting file does not have them either."""
    focal_methods: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    gold_patch: str = Field(default="", sa_column=Column(Text, nullable=False))
    """Unified diff rev1 → rev2 of the test file."""
    production_diff: str = Field(default="", sa_column=Column(Text, nullable=False))
    env_spec: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    image: str | None = None
    build_records: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    """Its pair's build records (:attr:`CuratedPair.build_records`): scoring and re-validation build
    each revision with what they name (the JDK and compiler levels), not with what it would choose."""
    installed: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    """What each revision's build resolved when it was curated (:attr:`CuratedPair.installed`)."""
    matrix: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    """Per test method, its cells (as in :class:`CurationRecord`)."""
    flaky: bool = False
    mined_at: datetime | None = _aware(nullable=True)
    curated_at: datetime | None = _aware(now=True)
    status: TaskStatus = TaskStatus.ACTIVE
    quarantine_reason: str | None = None
    """Why re-validation quarantined it (``gold_fails_on_new: …``, its last check's reason and first
    cause line); None while it behaves as curated (:class:`HealthCheck` keeps every check)."""
    given_test_file: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    """The test file the agent starts from, as an imported snapshot carried it (None: the agent
    writes the whole file); read only when ``given_recorded``, else built from the repository."""
    given_recorded: bool = False
    """The task came from a snapshot: ``given_test_file`` holds its reset test file."""


# --- scoring -------------------------------------------------------------------------------------


class AgentRun(SQLModel, table=True):
    """One agent on one task: what it was asked, what it wrote, and how its test methods did.

    Written once, whole, when the run is over: a scored task-agent pair is never run again
    unless asked.
    """

    __table_args__ = (UniqueConstraint("task_id", "agent"),)

    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(foreign_key="task.id", index=True)
    agent: str = Field(index=True)
    model: str = ""
    model_cutoff: datetime | None = _aware(nullable=True)
    """The agent's declared training cutoff when it was scored (None: it declared none): the site
    flags a task dated before it and draws Success% against it (the contamination curve)."""
    status: str = ""
    """``done``: the agent ran and was judged; ``timeout``: it ran out of time (its file is still
    judged); ``harness_fail``: coevo could not prepare or judge the run."""
    outcomes: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    """Test method → ``{"outcome": pass|exec_fail|compile_fail|harness_fail, "success": bool,
    "strict": bool, "new": cell outcome on rev2, "old": on rev1 (generation), "message": …}``.
    A success passes on rev2, runs a line of a focal method and, for generation, fails, errs or
    does not compile on rev1 (skipped, absent, xfail or a timeout there is no failure); a strict
    success also detects a mutant of the focal methods (when they have one: see
    ``runners/scoring/success.py``). Runs stored before strict success have no ``"strict"``. The message
    is whole (bounded), its first line naming the cause when it has context."""
    pass_rate: float = 0.0
    success_rate: float = 0.0
    strict_success_rate: float = 0.0
    """The share of methods that are strict successes (0.0 for runs stored before it existed)."""
    compile_fail_rate: float = 0.0
    exec_fail_rate: float = 0.0
    harness_fail_rate: float = 0.0
    coverage_on_pass: float | None = None
    """Line coverage of the focal methods by the agent's passing methods (None: none passed)."""
    mutation_on_pass: float | None = None
    """The share of the focal methods' mutants the agent's passing methods detect (None: not measured)."""
    mutants: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    """How mutation scoring went: ``{"total", "detected", "statuses": {status: n}, "seconds",
    "message", "unstable": tests that failed the control run}``; None when it did not run (no
    passing method, no focal method)."""
    prompt: str = Field(default="", sa_column=Column(Text, nullable=False))
    log: str = Field(default="", sa_column=Column(Text, nullable=False))
    diff: str = Field(default="", sa_column=Column(Text, nullable=False))
    """What the agent changed in the test file (unified diff against the reset file)."""
    discarded: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    """Other files the agent changed: never used, listed here."""
    seconds: float = 0.0
    tokens: int | None = None
    cost: float | None = None
    finished_at: datetime | None = _aware(now=True)


class GoldCheck(SQLModel, table=True):
    """Whether a task's gold methods pass (and, for generation, fail on the old code) in one
    judging environment: if they do not, nothing an agent writes is judged there.

    Checked once per task and environment (``environment`` hashes the backend, images, specs
    and host), and kept: a later scoring in the same environment reads it.
    """

    __table_args__ = (UniqueConstraint("task_id", "environment"),)

    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(index=True)
    environment: str
    ok: bool
    message: str = Field(default="", sa_column=Column(Text, nullable=False))
    """Why the gold does not hold here (the method and its outcome), empty when it does."""
    undetecting: list[str] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    """The gold's methods (runnable ids) that detect no mutant of the focal methods here: strict
    success does not ask an agent's method for what the developer's own did not do. None: not
    measured (a check stored before this was)."""
    checked_at: datetime | None = _aware(now=True)


class HealthCheck(SQLModel, table=True):
    """One re-validation of a task (``coevo revalidate``): its revisions rebuilt afresh and its gold
    methods run again, and whether they still behave as curated. Every check is kept: the task's
    health history."""

    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(index=True)
    checked_at: datetime | None = _aware(now=True, index=True)
    ok: bool | None = None
    """True: the gold behaves as curated; False: it does not (the task is quarantined); None:
    inconclusive — coevo's own fault (no Docker daemon), never a verdict on the task."""
    reason: str = ""
    """Why not, as a short code: ``gold_fails_on_new``, ``gold_passes_on_old``, ``flaky``,
    ``timeout``, ``build_failed``, ``env_failed``, ``infrastructure``; empty when ok."""
    message: str = Field(default="", sa_column=Column(Text, nullable=False))
    """The evidence in words, its first line naming the cause (bounded)."""
    cells: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    """Per test method, ``NN`` (and ``NO`` for generation) → ``{"outcome", "runs", "message"}``."""
    backend: str = ""
    environment: str = ""
    """The judging environment's key (as for :class:`GoldCheck`); empty when nothing was built."""
    status: TaskStatus = TaskStatus.ACTIVE
    """The task's status after this check."""


class DiscoveredRepository(SQLModel, table=True):
    """A repository that ``coevo discover`` found on GitHub, and whether it qualifies for mining.

    A later discovery of the same repository updates its row: the row says what the last one saw.
    """

    id: int | None = Field(default=None, primary_key=True)
    full_name: str = Field(index=True, unique=True)
    """``owner/name`` on the GitHub that was searched."""
    clone_url: str
    html_url: str = ""
    language: str
    """The language it was searched for (``java``, ``python``)."""
    stars: int = 0
    licence: str | None = None
    """Its licence's SPDX id; None when it has none or GitHub cannot tell (``NOASSERTION``)."""
    pushed_at: datetime | None = _aware(nullable=True)
    qualified: bool = False
    reason: str = ""
    """Why it was rejected (the first check it failed: ``fork``, ``archived``, ``no_licence``,
    ``licence_not_permissive``, ``no_build_file``, ``inactive``); empty when it qualified."""
    detail: str = ""
    """The rejection in words (``GPL-3.0``, ``12 commits in the last year, fewer than 50``)."""
    commits_last_year: int | None = None
    """Commits in the 365 days before discovery, counted up to the threshold (so ``50`` means at
    least 50); None when an earlier check rejected it."""
    registered: bool = False
    """``coevo discover --add`` registered it for mining (it has a :class:`Repository` row)."""
    discovered_at: datetime | None = _aware(now=True)


class HttpCache(SQLModel, table=True):
    """The last answer to a GET, kept so the next one is a conditional request (``If-None-Match``):
    GitHub answers an unchanged resource with 304, which costs no quota."""

    url: str = Field(primary_key=True)
    etag: str
    body: str = Field(sa_column=Column(Text, nullable=False))
    link: str | None = None
    """The answer's ``Link`` header: a 304 does not always repeat where the next page is."""
    fetched_at: datetime | None = _aware(now=True)


class ExportedSnapshot(SQLModel, table=True):
    """A snapshot this store wrote (:func:`~tasks.snapshot.export_snapshot`), by its content hash. A
    new snapshot's changelog, and the live cycle's "anything new?", compare only with snapshots the
    store wrote: stores that share a snapshots folder never compare with each other's (a copy of
    the file is the same store). Snapshots stay a function of the tasks: two stores holding the
    same tasks write the same folder, byte for byte."""

    content_hash: str = Field(primary_key=True)
    name: str
    written_at: datetime | None = _aware(now=True)


class CycleStatus(StrEnum):
    """The fate of one scheduled cycle; ``skipped`` means another cycle of its schedule still ran."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    SKIPPED = "skipped"


class Schedule(SQLModel, table=True):
    """A recurring pipeline run (``coevo schedule add``): what it mines, when, and how.

    Its timing also lives in APScheduler's job store (``apscheduler_jobs``, same database, job id =
    the name); this row is what a cycle reads to know what to do.
    """

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True)
    cron: str | None = None
    """A crontab expression (minute hour day month weekday), read in UTC; None with ``every``."""
    every: int | None = None
    """Seconds between cycles instead of a cron expression (for tests and demos)."""
    repos: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    """The repositories' locations (paths or clone URLs); empty when ``discover_language`` is set."""
    discover_language: str | None = None
    """Mine the repositories ``coevo discover --add`` registered for this language instead."""
    options: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    """How each cycle runs: since, curate, backend, reruns, snapshots, site, revalidate_sample
    (see :class:`miner.ScheduleOptions`)."""
    created_at: datetime | None = _aware(now=True)
    claimed_at: datetime | None = _aware(nullable=True)
    """When a cycle last started: writing it first makes cycles of one schedule start one at a time."""


class Cycle(SQLModel, table=True):
    """One run of a schedule's cycle: its fate, and what each repository gave."""

    id: int | None = Field(default=None, primary_key=True)
    schedule: str = Field(index=True)
    """The schedule's name."""
    started_at: datetime | None = _aware(now=True)
    finished_at: datetime | None = _aware(nullable=True)
    status: CycleStatus = CycleStatus.RUNNING
    owner: str = ""
    """The process running it (:class:`~tasks.processes.Owner` token): a ``running`` cycle whose
    owner is dead was interrupted, and the next cycle of its schedule marks it so."""
    repositories: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    """location → {commits, already_mined, pairs, candidates, labels, tasks_added, seconds, error}."""
    snapshot: str | None = None
    """The snapshot folder written, when the cycle added or retired tasks."""
    site: str | None = None
    """The site folder rendered, when it was."""
    message: str = Field(default="", sa_column=Column(Text, nullable=False))
