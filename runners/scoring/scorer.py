"""Scoring agents on tasks: a workspace that cannot leak the answer, the agent's run, the verdict.

For each task-agent pair:

1. both revisions are built (shared with curation's cache), so a harness problem never
   costs the agent a run;
2. the **workspace** (:mod:`runners.scoring.workspace`) is a fresh git repository holding one commit
   of the rev2 tree — no history, no remote — with the test file reset: generation tasks lose
   the gold methods (the whole file when it was new), update tasks get the old versions of the
   updated methods back. The prompt lives outside it;
3. the agent runs (a container with no capabilities and no network unless it declares one,
   the workspace at ``/workspace``, the prompt at ``/task/prompt.md``, its own folder read-only
   at ``/agent``); ``gold`` writes the developer's file and ``noop`` does nothing, in-process;
4. only the test file is taken back, read as a regular file of bounded size; any other change
   is listed and discarded. It is judged in **judge trees** (:mod:`runners.scoring.judge_tree`) that
   hold no trace of the gold: compiled alone against rev2's classes (and rev1's, for
   generation), each task method gets ``pass``, ``exec_fail``, ``compile_fail`` or
   ``harness_fail``, with its coverage of the focal methods, the focal mutants it detects and
   whether it is a (strict) success.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import functools
import hashlib
import importlib.metadata
import json
import platform
import secrets
import shutil
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from miner import default_clone_root, identify_repositories
from tasks import (
    AgentRun,
    CoevoError,
    GoldCheck,
    InfrastructureError,
    Repository,
    Store,
    Task,
    TaskStatus,
    Track,
    disk_full,
    mark_abandoned_runs,
)

from ..buildtools import BuildChoice, Coverage, TestRun
from ..environments.environment import resolve_backend
from ..environments.histories import check_repo_dirs, task_history
from ..environments.revisions import BuiltRevision, prepare_revision, work_root
from ..environments.sides import Side
from ..environments.worktree import GitTree
from ..java.maven import NO_MUTATIONS, LauncherFailed
from ..mutation import MutationResult
from ..results import Outcome, TestResult, bounded, in_context
from ..sandbox.base import LocalSandbox, Sandbox
from ..sandbox.docker_sandbox import DockerSandbox, Mount, docker_client
from ..sandbox.leftovers import remove_dead_leftovers
from ..sandbox.scratch import temporary_dir
from .agents import Agent, BadAgent, check_agent, protected_folders
from .causes import TEST_CODE, failure_cause, packages_of
from .judge_tree import judge_tree
from .success import strict_success
from .workspace import (
    DEFAULT_MAX_TEST_FILE,
    DEFAULT_MAX_WORKSPACE,
    UnreadableTestFile,
    Workspace,
    changed_paths,
    prepare_workspace,
    read_agent_file,
    reset_test_file,
    tree_state,
)

FAILS_ON_OLD = frozenset({"fail", "error", "compile_error"})
"""What counts as failing on the old code, as for curation's NO cell: a test that skips itself,
is absent, expected to fail (xfail) or hangs there does not fail — it could tell old from new
code and step aside, and would "succeed" without asserting anything about the change."""
USAGE_PREFIX = "COEVO_USAGE "
"""An agent reports what it used with a line ``COEVO_USAGE {"tokens": 1234, "cost": 0.05}``."""


@dataclass(frozen=True)
class ScoreOptions:
    backend: str = "docker"
    test_timeout: float = 300.0
    build_timeout: float = 1800.0
    work: Path | None = None
    base_images: Mapping[str, str] | None = None
    trust_host: bool = False
    """Let command agents run on the host (``local`` backend): they could read anything there."""
    max_test_file: int = DEFAULT_MAX_TEST_FILE
    """Bytes an agent's test file may have."""
    max_workspace: int = DEFAULT_MAX_WORKSPACE
    """Bytes of files an agent's workspace may hold when it is done."""
    repo_dirs: Mapping[str, Path] = field(default_factory=dict)
    """Where a repository's history is, by its name, over the store's path (``--repo-dir``)."""
    clone_root: Path | None = None
    """Where a repository with no history here is cloned from its URL (None: ``$COEVO_CLONES``)."""
    reruns: int = 3
    """Runs of an agent's file on the new and on the old code; runs that disagree make a method
    flaky, and a flaky method is no success (``--reruns``, as curation's cells)."""
    include_quarantined: bool = False
    """Score quarantined tasks too (``--include-quarantined``): by default only active ones, as a
    task whose gold no longer behaves as curated cannot judge an agent."""


# --- the agent's run -------------------------------------------------------------------------------

LOG_LIMIT = 64 * 1024
"""Characters of an agent's output kept with its run: the head and the tail, marked where cut."""
SCRATCH_SIZE = "1g"
"""The agent container's writable ``/tmp`` (its home): in memory, this big, gone with the container."""


class AgentCannotStart(BadAgent):
    """The agent's command cannot start (no such executable or script): an error of the whole
    run, never a score."""


@dataclass
class AgentOutput:
    content: bytes | None
    """The test file the agent left (None: none, or not readable: see ``problem``)."""
    log: str
    seconds: float
    timed_out: bool
    discarded: list[str] = field(default_factory=list)
    problem: str = ""
    """Why the agent's file is not judged (a link, a device, too big; a workspace over its limit)."""


def run_agent(
    agent: Agent,
    task: Task,
    workspace: Workspace,
    repo_path: Path,
    image: str | None,
    options: ScoreOptions | None = None,
) -> AgentOutput:
    """Runs ``agent`` in ``workspace`` and takes back its test file, safely (see
    :mod:`runners.scoring.workspace`)."""
    options = options or ScoreOptions()
    started = time.monotonic()
    log, timed_out = "", False
    if agent.builtin:
        if agent.name == "gold":
            target = workspace.repo / workspace.test_file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(GitTree(repo_path, task.rev2).read(task.test_file) or b"")
    else:
        sandbox, values = _agent_sandbox(agent, task, workspace, image)
        try:
            argv = agent.argv(values)
            _check_can_start(agent, sandbox, argv)
            result = sandbox.exec(argv, agent.timeout)
        finally:
            sandbox.close()  # the container and every process of the agent are gone before reading
        if result.exit_code in (126, 127) and (why := _not_started(result.stderr, argv[0])):
            raise AgentCannotStart(f"agent {agent.name} cannot start: {why}")
        log = capped(result.stdout + ("\n" if result.stdout and result.stderr else "") + result.stderr)
        timed_out = result.timed_out
    after = tree_state(workspace.repo, options.max_workspace)
    discarded = [path for path in changed_paths(workspace.before, after) if path != workspace.test_file]
    problem = f"the workspace grew past its limit ({after.over}): nothing is judged" if after.over else ""
    content = None
    if not problem:
        try:
            content = read_agent_file(workspace.repo, workspace.test_file, options.max_test_file)
        except UnreadableTestFile as exc:
            problem = str(exc)
    return AgentOutput(content, log, time.monotonic() - started, timed_out, discarded, problem)


def capped(text: str, limit: int = LOG_LIMIT) -> str:
    """``text`` within ``limit`` characters: its head and tail, with a visible mark where it was cut."""
    if len(text) <= limit:
        return text
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n[... {cut} characters cut by coevo ...]\n{text[-half:]}"


def _check_can_start(agent: Agent, sandbox: Sandbox, argv: Sequence[str]) -> None:
    """Refuses a command whose program is not there, or that names a missing file of ``/agent``."""
    if not argv:
        raise AgentCannotStart(f"agent {agent.name}: its command is empty")
    for part in argv:
        if part == "/agent" or part.startswith("/agent/"):
            if agent.mount is None:
                raise AgentCannotStart(f"agent {agent.name}: {part} is named but the agent declares no mount")
            if not (agent.mount / part.removeprefix("/agent").lstrip("/")).exists():
                raise AgentCannotStart(
                    f"agent {agent.name}: {part} does not exist in its mount {agent.mount}"
                )
    found = sandbox.exec(["sh", "-c", 'command -v "$0" >/dev/null 2>&1', argv[0]], 60)
    if found.exit_code not in (0, None) and not found.timed_out:
        raise AgentCannotStart(f"agent {agent.name}: {argv[0]} is not a command where it runs")


def _not_started(stderr: str, program: str) -> str:
    """The line saying ``program`` could not be started (coreutils ``timeout``'s, or the host's)."""
    for line in stderr.splitlines():
        if line.startswith("timeout: failed to run command") or line.startswith(f"{program}: "):
            return line.strip()
    return ""


def _agent_sandbox(
    agent: Agent, task: Task, workspace: Workspace, image: str | None
) -> tuple[Sandbox, dict[str, str]]:
    values = {
        "test_file": task.test_file,
        "methods": ",".join(task.test_methods),
        "language": task.language,
        "track": str(task.track),
    }
    chosen = agent.image or image
    if chosen is None:
        # The host: only for agents one trusts (the host's files are all readable).
        values |= {"workspace": str(workspace.repo), "prompt": str(workspace.task_dir / "prompt.md")}
        return LocalSandbox(workspace.repo, output_limit=LOG_LIMIT), values
    mounts = [Mount(workspace.task_dir, "/task")]
    if agent.mount is not None:
        mounts.append(Mount(agent.mount, "/agent"))
    values |= {"workspace": "/workspace", "prompt": "/task/prompt.md"}
    sandbox = DockerSandbox(
        docker_client(),
        chosen,
        workspace.repo,
        mounts=mounts,
        network=agent.network,
        workdir="/workspace",
        env={"HOME": "/tmp", "LANG": "C.UTF-8"},
        output_limit=LOG_LIMIT,
        tmpfs={"/tmp": f"size={SCRATCH_SIZE}"},
        hardened=True,
    )
    return sandbox, values


# --- the verdict -----------------------------------------------------------------------------------


@dataclass
class Verdict:
    outcomes: dict[str, dict[str, Any]]
    coverage_on_pass: float | None
    mutation: MutationResult | None = None
    mutation_seconds: float = 0.0


def judge(
    task: Task,
    content: bytes | None,
    new: BuiltRevision,
    old: BuiltRevision | None,
    timeout: float,
    repo_path: Path,
    given: bytes | None,
    scratch: Path,
    problem: str = "",
    undetecting: Collection[str] = (),
    reruns: int = 1,
) -> Verdict:
    """Each task method's outcome for ``content`` (the agent's test file).

    The runs on the new and the old code are made ``reruns`` times each, as curation's cells
    are: a method whose runs disagree is ``flaky`` there, and a flaky method is no success (on
    the new code it is an ``exec_fail``; on the old code it does not fail).

    Each run of the agent's code gets a judge tree of its own under ``scratch`` (see
    :mod:`runners.scoring.judge_tree`): rev2 with the test file as the agent got it (``given``) and no
    trace of the gold, a fresh one for mutation testing (so nothing the first run left
    changes it), and rev1 for generation. ``problem`` says why there is no content to judge;
    ``undetecting``: the task's methods whose gold detects no focal mutant here.
    """
    ids = dict(zip(task.test_methods, task.test_ids, strict=True))
    if content is None:
        why = problem or "the agent left no test file"
        return Verdict({m: _outcome("exec_fail", why) for m in ids}, None)
    tag = "s" + hashlib.sha256(f"{task.id}\0{content!r}".encode()).hexdigest()[:12]

    def side(built: BuiltRevision) -> Side:
        return _judge_side(task, built, repo_path, given, scratch)

    try:
        with _closing(side(new)) as new_side:
            new_runs = [
                new_side.run_cross(task.test_file, content, list(ids.values()), tag, timeout, coverage=True)
                for _ in range(max(1, reruns))
            ]
    except LauncherFailed as exc:
        # The gold ran here (the gold check): what broke the test launcher is the agent's file.
        return Verdict(
            {m: _outcome("exec_fail", f"the agent's tests broke the launcher: {exc}") for m in ids}, None
        )
    new_run = new_runs[0]
    on_new = {test: _agreed(test, new_runs, "new")[0] for test in ids.values()}
    passing = [test for test in ids.values() if on_new[test].outcome == Outcome.PASS]
    started = time.monotonic()
    mutation = None
    if passing:
        with _closing(side(new)) as mutation_side:
            mutation = mutation_side.mutation_score(
                task.test_file, content, passing, task.focal_methods, tag, timeout * 4, baseline=new_run
            )
    mutation_seconds = time.monotonic() - started
    on_old: dict[str, TestResult] = {}
    flaky_old: set[str] = set()
    if old is not None:
        try:
            with _closing(side(old)) as old_side:
                # As on the new code (each test traced; Java's all in one JVM, per-test coverage):
                # what a test sees differs between the phases only by the code.
                old_runs = [
                    old_side.run_cross(
                        task.test_file, content, list(ids.values()), tag, timeout, coverage=True
                    )
                    for _ in range(max(1, reruns))
                ]
            for test in ids.values():
                on_old[test], flaky = _agreed(test, old_runs, "old")
                if flaky:
                    flaky_old.add(test)
        except LauncherFailed as exc:
            on_old = {test: TestResult(test, Outcome.ERROR, str(exc)) for test in ids.values()}
    outcomes: dict[str, dict[str, Any]] = {}
    covered: dict[str, set[int]] = {}

    @functools.cache
    def own() -> frozenset[str]:
        return packages_of(repo_path, task.rev1, task.rev2)

    for method, test in ids.items():
        result, message = on_new[test], on_new[test].message
        lines = new_run.coverage.get(test, Coverage()).lines
        runs_changed = False
        if result.outcome == Outcome.PASS:
            kind = "pass"
            for path, numbers in lines.items():
                covered.setdefault(path, set()).update(numbers)
            runs_changed = _runs_changed_code(task, lines)
            if not runs_changed:
                message = "passes, but runs none of the changed production code"
        elif result.outcome == Outcome.COMPILE_ERROR:
            kind = "compile_fail"
        else:
            kind = "exec_fail"
        old_result = on_old.get(test)
        old_outcome = str(old_result.outcome) if old_result is not None else None
        if test in flaky_old:
            old_outcome = "flaky"
        # Failing on the old code for want of a fixture or a library the old revision lacks says
        # nothing about the change: judged as curation judges the gold (:mod:`runners.scoring.causes`).
        fails_old = (
            old_result is not None
            and test not in flaky_old
            and old_outcome in FAILS_ON_OLD
            and failure_cause(str(old_result.outcome), old_result.message, (), own()) != TEST_CODE
        )
        success = runs_changed and (task.track == Track.UPDATE or fails_old)
        strict = strict_success(success, test, mutation, asked=test not in undetecting)
        outcomes[method] = _outcome(kind, message, success, str(result.outcome), old_outcome, strict)
    passed = any(o["outcome"] == "pass" for o in outcomes.values())
    coverage = _focal_coverage(task, new, covered) if passed else None
    return Verdict(outcomes, coverage, mutation, mutation_seconds)


def _agreed(test: str, runs: Sequence[TestRun], code: str) -> tuple[TestResult, bool]:
    """``test``'s result over ``runs`` of the same file on the ``code`` (new, old) and whether they
    disagree: then it is flaky, which on the new code is an error of the agent's test."""
    results = [
        next((r for r in run.results if r.test == test), TestResult(test, Outcome.ABSENT)) for run in runs
    ]
    seen = list(dict.fromkeys(str(r.outcome) for r in results))
    if len(seen) == 1:
        return results[0], False
    message = (
        f"flaky on the {code} code: its {len(runs)} runs gave {', '.join(str(r.outcome) for r in results)}"
    )
    failed = next((r for r in results if r.outcome != Outcome.PASS), results[0])
    return TestResult(test, Outcome.ERROR, in_context(message, failed.message)), True


def _judge_side(
    task: Task, built: BuiltRevision, repo_path: Path, given: bytes | None, scratch: Path
) -> Side:
    """A side over a fresh judge tree of ``built`` in ``scratch``: rev2 gets the test file as the
    agent got it (``given``); rev1's own test file holds no gold and stays. The tree's name is
    random: the path a test sees says nothing of the phase it runs in (new code, old code,
    mutants)."""
    mine = built.sha == task.rev2
    folder = scratch / f"tree-{secrets.token_hex(8)}"
    tree = judge_tree(
        built, repo_path, [task.test_file] if mine else [], {task.test_file: given} if mine else {}, folder
    )
    return tree.side()


# --- the gold check --------------------------------------------------------------------------------


_GOLD_CHECK_LAYOUT = 4
"""Bumped when what a gold check measures changes (2: the focal mutants the gold detects; 3: by
its own checks, in complete runs only; 4: Java's evidence sought on one mutant per focal line
first, up to 8), so checks kept from before are made again."""


class GoldChecks:
    """Gold checks kept in the store (:class:`~tasks.GoldCheck`), by task and environment."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def get(self, task_id: str, environment: str) -> GoldCheck | None:
        with self._store.session() as session:
            return session.exec(
                select(GoldCheck).where(GoldCheck.task_id == task_id, GoldCheck.environment == environment)
            ).first()

    def put(self, check: GoldCheck) -> None:
        with contextlib.suppress(IntegrityError), self._store.session() as session:
            session.add(check)  # a concurrent scorer that wrote it first wins; both saw the same


def environment_key(new: BuiltRevision, old: BuiltRevision | None) -> str:
    """What a judgement depends on besides the test file: coevo, the backend, each revision's
    spec, image, what its build chose (the JDK, levels) and resolved, and (on the host, whose
    toolchains are its own) the machine."""
    parts: list[Any] = [_coevo_version(), _GOLD_CHECK_LAYOUT]
    for built in (new, old):
        if built is None or built.environment is None or built.spec is None:
            continue
        backend = built.environment.backend
        parts += [built.sha, backend, built.image or "", dataclasses.asdict(built.spec)]
        parts += [[dataclasses.astuple(choice)[:2] for choice in built.choices], list(built.installed)]
        if backend == "local":
            parts.append(platform.node())
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:20]


def check_gold(
    task: Task,
    new: BuiltRevision,
    old: BuiltRevision | None,
    repo_path: Path,
    scratch: Path,
    timeout: float,
    environment: str = "",
) -> GoldCheck:
    """Whether the developer's methods pass on the new code — and, for generation, do not pass on
    the old — judged exactly as an agent's file is; else why not. When they do not, nothing an
    agent writes can be judged there: the fault is coevo's environment, not the agent's. When
    they do, which of them detect no focal mutant (what strict success then does not ask)."""
    ok, message = _gold_holds(task, new, old, repo_path, scratch, timeout)
    if not ok:
        return GoldCheck(task_id=task.id, environment=environment, ok=False, message=message)
    gold = GitTree(repo_path, task.rev2).read(task.test_file) or b""
    given = reset_test_file(task, repo_path)
    with _closing(_judge_side(task, new, repo_path, given, scratch)) as side:
        mutation = side.mutation_score(
            task.test_file, gold, list(task.test_ids), task.focal_methods, "gold", timeout * 4
        )
    undetecting = _undetecting(list(task.test_ids), mutation)
    return GoldCheck(task_id=task.id, environment=environment, ok=True, undetecting=undetecting)


def _undetecting(tests: list[str], mutation: MutationResult | None) -> list[str]:
    """The gold methods of which strict success asks nothing (rule 2 of :mod:`runners.scoring.success`):
    all, where the focal methods have no mutant (coevo found none to make, or PIT said it found
    none: for the gold, coevo's own run of the developer's file, its word is taken); those whose
    own checks detect none, in a complete run; none where coevo could not measure the gold (a
    fault of its own must not make every success strict: it fails closed)."""
    if mutation is None or (not mutation.mutants and mutation.message.startswith(NO_MUTATIONS)):
        return tests
    if not mutation.complete:
        return []
    return [test for test in tests if not strict_success(True, test, mutation)]


@dataclass(frozen=True)
class GoldRun:
    """One run of a task's gold methods in judge trees: each runnable id's result on rev2, and on
    rev1 for generation (None for update)."""

    on_new: Mapping[str, TestResult]
    on_old: Mapping[str, TestResult] | None


def run_gold(
    task: Task, new: BuiltRevision, old: BuiltRevision | None, repo_path: Path, scratch: Path, timeout: float
) -> GoldRun:
    """Runs the developer's test file's task methods once on rev2 (and rev1 when ``old`` is
    given), each in a fresh judge tree under ``scratch``, exactly as an agent's file is run."""
    gold = GitTree(repo_path, task.rev2).read(task.test_file) or b""
    given = reset_test_file(task, repo_path)
    ids = list(task.test_ids)
    with _closing(_judge_side(task, new, repo_path, given, scratch)) as side:
        on_new = {r.test: r for r in side.run_cross(task.test_file, gold, ids, "gold", timeout).results}
    on_old = None
    if old is not None:
        with _closing(_judge_side(task, old, repo_path, given, scratch)) as side:
            on_old = {r.test: r for r in side.run_cross(task.test_file, gold, ids, "gold", timeout).results}
    return GoldRun(on_new, on_old)


def _gold_holds(
    task: Task, new: BuiltRevision, old: BuiltRevision | None, repo_path: Path, scratch: Path, timeout: float
) -> tuple[bool, str]:
    ids = dict(zip(task.test_methods, task.test_ids, strict=True))
    gold = GitTree(repo_path, task.rev2).read(task.test_file) or b""
    given = reset_test_file(task, repo_path)
    with _closing(_judge_side(task, new, repo_path, given, scratch)) as side:
        on_new = {
            r.test: r
            for r in side.run_cross(
                task.test_file, gold, list(ids.values()), "gold", timeout, coverage=True
            ).results
        }
    for method, test in ids.items():
        if on_new[test].outcome != Outcome.PASS:
            found = on_new[test]
            why = in_context(str(found.outcome), found.message)
            return False, in_context(f"the developer's {method} does not pass on the new code here", why)
    if old is not None:
        with _closing(_judge_side(task, old, repo_path, given, scratch)) as side:
            results = side.run_cross(
                task.test_file, gold, list(ids.values()), "gold", timeout, coverage=True
            ).results
        for result in results:
            if result.outcome == Outcome.PASS:
                return (
                    False,
                    f"the developer's {result.test} passes on the old code here too: nothing discriminates",
                )
    return True, ""


def _coevo_version() -> str:
    try:
        return importlib.metadata.version("coevo")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@contextlib.contextmanager
def _closing(side: Side) -> Iterator[Side]:
    """``side`` while the block runs; then its sandbox is closed and its judge tree deleted."""
    try:
        yield side
    finally:
        side.close()
        shutil.rmtree(side.worktree, ignore_errors=True)


def _runs_changed_code(task: Task, lines: Mapping[str, frozenset[int]]) -> bool:
    """Whether a test ran a line of a focal method (the changed code the task is about).

    A test that runs none cannot be what the task asks for, whatever it asserts: without this,
    ``assert True`` in a file importing a new name would pass on the new code and "fail" on the
    old. Focal methods not found by coverage (static links) cannot be checked this way.
    """
    measured = [f for f in task.focal_methods if f.get("provenance") == "coverage" and f.get("start")]
    if not measured:
        return True
    return any(f["start"] <= n <= f["end"] for f in measured for n in lines.get(f["file"], ()))


def _focal_coverage(task: Task, built: BuiltRevision, covered: Mapping[str, set[int]]) -> float | None:
    """Covered share of the focal methods' statement lines (their bodies' code lines)."""
    total = hit = 0
    for focal in task.focal_methods:
        if focal.get("start") is None or built.worktree is None:
            continue
        path = built.worktree / focal["file"]
        if not path.is_file():
            continue
        source = path.read_text(errors="replace").splitlines()
        for number in range(focal["start"] + 1, focal["end"] + 1):
            text = source[number - 1].strip() if number <= len(source) else ""
            if not text or text.strip("{}();") == "" or text.startswith(("//", "/*", "*", "#", "@", '"""')):
                continue
            total += 1
            hit += number in covered.get(focal["file"], set())
    return hit / total if total else None


def _usage(log: str) -> tuple[int | None, float | None]:
    """Tokens and cost an agent reported: its last ``COEVO_USAGE {"tokens": N, "cost": X}`` line."""
    for line in reversed(log.splitlines()):
        if line.startswith(USAGE_PREFIX):
            try:
                usage = json.loads(line[len(USAGE_PREFIX) :])
                tokens, cost = usage.get("tokens"), usage.get("cost")
                return (
                    int(tokens) if tokens is not None else None,
                    float(cost) if cost is not None else None,
                )
            except (ValueError, TypeError, AttributeError):
                return None, None
    return None, None


def _outcome(
    kind: str,
    message: str,
    success: bool = False,
    new: str | None = None,
    old: str | None = None,
    strict: bool = False,
) -> dict[str, Any]:
    return {
        "outcome": kind,
        "success": success,
        "strict": strict,
        "new": new,
        "old": old,
        "message": bounded(message),
    }


# --- one task, one agent ------------------------------------------------------------------------------


def build_task_revisions(
    task: Task, repo: Repository, options: ScoreOptions, root: Path, repo_path: Path
) -> tuple[BuiltRevision, BuiltRevision | None]:
    """rev2 (and rev1, for generation) built under ``root`` as the task was curated: with each
    revision's recorded build choices and environment (rev2's is the task's EnvSpec pins; rev1
    may have resolved other versions), so a score or a re-validation means the same thing later."""
    pins = tuple((task.env_spec or {}).get("pins") or ())

    def built(sha: str, name: str) -> BuiltRevision:
        record = (task.build_records or {}).get(name, ())
        own = tuple((task.installed or {}).get(name) or ()) if pins and name != "rev2" else ()
        return prepare_revision(
            root, repo_path, sha, repo.language, options.backend, tuple(repo.build_args),
            options.base_images, options.build_timeout, [task.test_file],
            [BuildChoice(**choice) for choice in record], own or pins,
        )  # fmt: skip

    new = built(task.rev2, "rev2")
    old = built(task.rev1, "rev1") if task.track == Track.GENERATION else None
    return new, old


def score_task(
    task: Task,
    repo: Repository,
    agent: Agent,
    options: ScoreOptions,
    root: Path,
    gold_checks: GoldChecks | None = None,
    repo_path: Path | None = None,
) -> AgentRun:
    """Runs ``agent`` on ``task`` and judges it; a harness problem is ``harness_fail``, not an error.

    First the gold is checked in the judging environment (once per task and environment, kept
    in ``gold_checks``): where it does not hold, the agent is not run and its run is
    ``harness_fail`` with the gold's message. coevo's own failures (no Docker daemon) raise
    :class:`~tasks.InfrastructureError`: nothing is stored for the task. ``repo_path`` is where
    the history is read (default: the repository's path).
    """
    started = time.monotonic()
    run = AgentRun(task_id=task.id, agent=agent.name, model=agent.model, model_cutoff=agent.cutoff)
    repo_path = repo_path or Path(repo.path)

    new, old = build_task_revisions(task, repo, options, root, repo_path)
    broken = [b for b in (new, old) if b is not None and b.status != "ok"]
    if broken:
        message = in_context(f"{broken[0].sha[:10]} {broken[0].status}", broken[0].message)
        return _finish(
            run, task, {m: _outcome("harness_fail", message) for m in task.test_methods}, None, started
        )
    environment = environment_key(new, old)
    gold = gold_checks.get(task.id, environment) if gold_checks is not None else None
    if gold is None:
        with temporary_dir("coevo-gold-") as scratch:
            gold = check_gold(task, new, old, repo_path, Path(scratch), options.test_timeout, environment)
        if gold_checks is not None:
            gold_checks.put(gold)
    if not gold.ok:
        message = in_context("the gold does not hold in this environment", gold.message)
        return _finish(
            run, task, {m: _outcome("harness_fail", message) for m in task.test_methods}, None, started
        )
    with temporary_dir("coevo-agent-") as scratch:
        workspace = prepare_workspace(task, repo_path, Path(scratch))
        run.prompt = workspace.prompt
        output = run_agent(agent, task, workspace, repo_path, new.image, options)
        run.log, run.discarded = output.log, output.discarded
        run.tokens, run.cost = _usage(output.log)
        if not output.problem:  # a file coevo refused to read has no diff
            run.diff = "".join(
                difflib.unified_diff(
                    (workspace.given or b"").decode(errors="replace").splitlines(keepends=True),
                    (output.content or b"").decode(errors="replace").splitlines(keepends=True),
                    f"a/{task.test_file}",
                    f"b/{task.test_file}",
                )
            )
        verdict = judge(
            task, output.content, new, old, options.test_timeout, repo_path, workspace.given,
            Path(scratch), output.problem, gold.undetecting or (), options.reruns,
        )  # fmt: skip
    run.status = "timeout" if output.timed_out else "done"
    if verdict.mutation is not None:
        statuses = Counter(m.status for m in verdict.mutation.mutants)
        run.mutation_on_pass = verdict.mutation.score
        run.mutants = {
            "total": len(verdict.mutation.mutants),
            "detected": sum(m.detected for m in verdict.mutation.mutants),
            "statuses": dict(sorted(statuses.items())),
            "seconds": round(verdict.mutation_seconds, 3),
            "message": verdict.mutation.message,
            "unstable": list(verdict.mutation.unstable),
        }
    return _finish(run, task, verdict.outcomes, verdict.coverage_on_pass, started)


def _finish(
    run: AgentRun, task: Task, outcomes: dict[str, dict[str, Any]], coverage: float | None, started: float
) -> AgentRun:
    n = max(1, len(outcomes))
    kinds = [o["outcome"] for o in outcomes.values()]
    run.outcomes = outcomes
    run.status = run.status or ("harness_fail" if set(kinds) == {"harness_fail"} else "done")
    run.pass_rate = kinds.count("pass") / n
    run.compile_fail_rate = kinds.count("compile_fail") / n
    run.exec_fail_rate = kinds.count("exec_fail") / n
    run.harness_fail_rate = kinds.count("harness_fail") / n
    run.success_rate = sum(bool(o["success"]) for o in outcomes.values()) / n
    run.strict_success_rate = sum(bool(o.get("strict")) for o in outcomes.values()) / n
    run.coverage_on_pass = coverage
    run.seconds = round(time.monotonic() - started, 3)
    return run


def active_tasks_after(
    tasks: Sequence[Task], after: Any, track: str | None, include_quarantined: bool = False
) -> list[Task]:
    """The active tasks (and quarantined ones, with ``include_quarantined``) dated strictly after
    ``after`` (a datetime or None), of ``track``."""
    wanted = {TaskStatus.ACTIVE, TaskStatus.QUARANTINED} if include_quarantined else {TaskStatus.ACTIVE}
    return [
        t
        for t in tasks
        if t.status in wanted
        and (after is None or (t.rev2_date is not None and t.rev2_date > after))
        and (track is None or str(t.track) == track)
    ]


# --- many tasks, and the leaderboard -----------------------------------------------------------------


@dataclass
class ScoreReport:
    agent: str
    scored: int = 0
    skipped: int = 0
    """Tasks already scored for this agent (kept)."""
    errors: dict[str, str] = field(default_factory=dict)


def score(
    store: Store,
    agent: Agent,
    after: datetime | None = None,
    model_cutoff: bool = False,
    track: str | None = None,
    options: ScoreOptions | None = None,
    workers: int = 1,
    redo: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> ScoreReport:
    """Scores ``agent`` on every active task dated after the cutoff (quarantined ones too with
    ``options.include_quarantined``); finished pairs are kept.

    The cutoff is ``after``, or with ``model_cutoff`` the agent's own training cutoff. Before
    anything runs or is stored, an agent that would run or be judged on the host untrusted, or
    whose mount could show it the answers, is refused (:func:`~runners.scoring.agents.check_agent`).
    Then what killed runs left goes: their containers and scratch folders (agent workspaces,
    judge trees), never those of a live run; a killed run's stored results are whole, as each
    task's run is written at once.
    """
    options = options or ScoreOptions()
    if options.backend == "auto":
        options = dataclasses.replace(options, backend=resolve_backend("auto"))
    check_agent(agent, options.backend, options.trust_host, scoring_folders(store, options))
    mark_abandoned_runs(store)
    remove_dead_leftovers(docker=options.backend == "docker" or bool(agent.image))
    identify_repositories(store)  # runs are stored under the ids the tasks will keep
    cutoff = agent.cutoff if model_cutoff else after
    if model_cutoff and cutoff is None:
        raise BadAgent(f"agent {agent.name} declares no cutoff: give --after DATE instead")
    with store.session() as session:
        tasks = active_tasks_after(
            session.exec(select(Task).order_by(col(Task.rev2_date))).all(),
            cutoff,
            track,
            options.include_quarantined,
        )
        done = set(session.exec(select(AgentRun.task_id).where(AgentRun.agent == agent.name)).all())
        if redo:  # the tasks in scope run again; each old run goes when its new one is stored
            done -= {t.id for t in tasks}
        repos = {r.id: r for r in session.exec(select(Repository)).all()}
    gold_checks = GoldChecks(store)
    report = ScoreReport(agent.name, skipped=sum(t.id in done for t in tasks))
    todo = [t for t in tasks if t.id not in done]
    root = options.work or work_root()
    histories = task_histories(repos.values(), todo, options)

    def one(task: Task) -> str | None:
        """Scores and stores one task; the error, if any."""
        try:
            repo = repos[task.repository_id]
            run = score_task(task, repo, agent, options, root, gold_checks, histories[task.repository_id])
        except (AgentCannotStart, InfrastructureError):
            raise  # the agent or coevo itself, not the task: the whole run stops, nothing stored
        except CoevoError as exc:
            return str(exc)
        except OSError as exc:
            full = disk_full(exc)
            if full is None:
                raise
            raise full from None  # the machine's: the task is scored on the next run
        with store.session() as session:
            session.exec(
                delete(AgentRun).where(col(AgentRun.agent) == agent.name, col(AgentRun.task_id) == task.id)
            )
            session.add(run)
        return None

    with ThreadPoolExecutor(workers) as pool:
        errors = map(one, todo) if workers <= 1 else pool.map(one, todo)  # one worker: this thread
        try:
            for index, (task, error) in enumerate(zip(todo, errors, strict=True)):
                if error is None:
                    report.scored += 1
                else:
                    report.errors[task.id] = error
                if progress:
                    progress(index + 1, len(todo))
        except BaseException:
            pool.shutdown(cancel_futures=True)  # tasks not started yet never start
            raise
    return report


def task_histories(
    repos: Iterable[Repository], tasks: Sequence[Task], options: ScoreOptions
) -> dict[int, Path]:
    """Where each repository of ``tasks`` has its history, holding their commits, before anything
    runs (:func:`~runners.environments.histories.task_history`: ``--repo-dir``, the store's path, or a
    clone)."""
    repos = list(repos)
    check_repo_dirs(options.repo_dirs, [r.name for r in repos])
    commits: dict[int, set[str]] = {}
    for task in tasks:
        commits.setdefault(task.repository_id, set()).update((task.rev1, task.rev2))
    return {
        repo.id: task_history(repo, commits[repo.id], options.repo_dirs, options.clone_root)
        for repo in repos
        if repo.id in commits
    }


def scoring_folders(store: Store, options: ScoreOptions) -> list[Path]:
    """What no agent's mount may show (:func:`~runners.scoring.agents.protected_folders`), and the
    histories scoring reads besides the store's: the folders of ``--repo-dir``, the clones."""
    return [
        *protected_folders(store, options.work),
        *options.repo_dirs.values(),
        options.clone_root or default_clone_root(),
    ]


@dataclass
class Standing:
    """One agent's row of the leaderboard: macro-averages over its tasks (percent)."""

    agent: str
    model: str
    tasks: int
    pass_rate: float
    success_rate: float
    """TestEvo-Bench's Success%: passes on the new code (runs the changed code; generation:
    fails on the old), kept for comparison."""
    strict_success_rate: float
    """StrictSuccess%: a success that also detects a mutant of the focal methods."""
    compile_fail_rate: float
    exec_fail_rate: float
    harness_fail_rate: float
    coverage_on_pass: float | None
    mutation_on_pass: float | None
    seconds: float
    tokens: float | None = None
    """Mean tokens per task, over the runs that reported them; likewise ``cost``."""
    cost: float | None = None
    groups: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    """By ``track``, ``language``, ``repository`` and ``window`` (half-years): Pass%, Success%
    and StrictSuccess%."""


def leaderboard(store: Store, after: datetime | None = None) -> list[Standing]:
    """Every scored agent over the active tasks dated after ``after``: best StrictSuccess% first,
    then Success%, then Pass%."""
    with store.session() as session:
        rows = session.exec(select(AgentRun, Task).join(Task, col(Task.id) == col(AgentRun.task_id))).all()
    by_agent: dict[str, list[tuple[AgentRun, Task]]] = {}
    for run, task in rows:
        if task.status != TaskStatus.ACTIVE:
            continue  # retired or quarantined: no longer part of the benchmark
        if after is None or (task.rev2_date is not None and task.rev2_date > after):
            by_agent.setdefault(run.agent, []).append((run, task))
    standings = [_standing(agent, runs) for agent, runs in by_agent.items()]
    return sorted(standings, key=lambda s: (-s.strict_success_rate, -s.success_rate, -s.pass_rate, s.agent))


def _mean_of(values: Sequence[float | int | None], scale: float = 1.0, digits: int = 4) -> float | None:
    """The mean of the values present, times ``scale``, rounded; None when none is."""
    present = [v for v in values if v is not None]
    return round(scale * sum(present) / len(present), digits) if present else None


def _half_year(task: Task) -> str:
    return f"{task.rev2_date.year}-H{1 + (task.rev2_date.month > 6)}" if task.rev2_date else "undated"


def judged(run: AgentRun, rate: float) -> float | None:
    """``rate`` over the methods the harness could judge (harness failures do not count against
    an agent); None when it could judge none. The leaderboard and the site average these."""
    share = 1 - run.harness_fail_rate
    return rate / share if share > 0 else None


def _standing(agent: str, runs: list[tuple[AgentRun, Task]]) -> Standing:
    def mean(values: Sequence[float | None]) -> float | None:
        return _mean_of(values, scale=100, digits=1)  # percent

    groups: dict[str, dict[str, dict[str, float]]] = {}
    for name, key in (
        ("track", lambda t: str(t.track)),
        ("language", lambda t: t.language),
        ("repository", lambda t: t.repository),
        ("window", _half_year),
    ):
        buckets: dict[str, list[tuple[AgentRun, Task]]] = {}
        for run, task in runs:
            buckets.setdefault(key(task), []).append((run, task))
        groups[name] = {
            value: {
                "tasks": len(members),
                "pass": mean([judged(r, r.pass_rate) for r, _ in members]) or 0.0,
                "success": mean([judged(r, r.success_rate) for r, _ in members]) or 0.0,
                "strict": mean([judged(r, r.strict_success_rate) for r, _ in members]) or 0.0,
            }
            for value, members in sorted(buckets.items())
        }
    return Standing(
        agent=agent,
        model=runs[0][0].model,
        tasks=len(runs),
        pass_rate=mean([judged(r, r.pass_rate) for r, _ in runs]) or 0.0,
        success_rate=mean([judged(r, r.success_rate) for r, _ in runs]) or 0.0,
        strict_success_rate=mean([judged(r, r.strict_success_rate) for r, _ in runs]) or 0.0,
        compile_fail_rate=mean([judged(r, r.compile_fail_rate) for r, _ in runs]) or 0.0,
        exec_fail_rate=mean([judged(r, r.exec_fail_rate) for r, _ in runs]) or 0.0,
        harness_fail_rate=mean([r.harness_fail_rate for r, _ in runs]) or 0.0,
        coverage_on_pass=mean([r.coverage_on_pass for r, _ in runs]),
        mutation_on_pass=mean([r.mutation_on_pass for r, _ in runs]),
        seconds=round(sum(r.seconds for r, _ in runs) / len(runs), 1),
        tokens=_mean_of([r.tokens for r, _ in runs]),
        cost=_mean_of([r.cost for r, _ in runs]),
        groups=groups,
    )
