"""Scoring agents on tasks: a workspace that cannot leak the answer, the agent's run, the verdict.

For each task-agent pair:

1. both revisions are built (shared with curation's cache), so a harness problem never
   costs the agent a run;
2. the **workspace** is a fresh git repository holding one commit of the rev2 tree — no
   history, no remote — with the test file reset: generation tasks lose the gold methods
   (the whole file when it was new), update tasks get the old versions of the updated
   methods back. The prompt lives outside it;
3. the agent runs (a container with no network unless it declares one, the workspace at
   ``/workspace``, the prompt at ``/task/prompt.md``); ``gold`` writes the developer's file and
   ``noop`` does nothing, in-process;
4. only the test file is taken back; any other change is listed and discarded. It is compiled
   alone against rev2's classes (and rev1's, for generation) and each task method gets
   ``pass``, ``exec_fail``, ``compile_fail`` or ``harness_fail``, with its coverage of the
   focal methods.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import delete
from sqlmodel import col, select

from tasks import AgentRun, CoevoError, Repository, Store, Task, TaskStatus, Track

from .agents import Agent, BadAgent
from .buildtools import Coverage
from .docker_sandbox import DockerSandbox, Mount, docker_client
from .envspec import GitTree
from .mutation import MutationResult
from .results import Outcome
from .revisions import BuiltRevision, prepare_revision, work_root
from .sandbox import LocalSandbox, Sandbox
from .success import strict_success
from .worktree import export_revision

USAGE_PREFIX = "COEVO_USAGE "
"""An agent reports what it used with a line ``COEVO_USAGE {"tokens": 1234, "cost": 0.05}``."""
_IDENTITY = {
    "GIT_AUTHOR_NAME": "coevo",
    "GIT_AUTHOR_EMAIL": "coevo@invalid",
    "GIT_COMMITTER_NAME": "coevo",
    "GIT_COMMITTER_EMAIL": "coevo@invalid",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+00:00",
}


@dataclass(frozen=True)
class ScoreOptions:
    backend: str = "docker"
    test_timeout: float = 300.0
    build_timeout: float = 1800.0
    work: Path | None = None
    base_images: Mapping[str, str] | None = None
    trust_host: bool = False
    """Let command agents run on the host (``local`` backend): they could read anything there."""


@dataclass
class Workspace:
    """Where an agent works: ``repo`` (the workspace) and ``task/prompt.md`` beside it."""

    root: Path
    test_file: str
    given: bytes | None
    """The test file as the agent gets it (None: removed, the agent writes it)."""
    prompt: str

    @property
    def repo(self) -> Path:
        return self.root / "workspace"

    @property
    def task_dir(self) -> Path:
        return self.root / "task"


# --- the workspace ---------------------------------------------------------------------------------


def reset_test_file(task: Task, repo_path: Path) -> bytes | None:
    """The test file with the answer taken out: gold methods removed, or old versions restored."""
    from miner.languages import get_language

    language = get_language(task.language)
    new = GitTree(repo_path, task.rev2).read(task.test_file)
    if new is None:
        raise CoevoError(f"task {task.id}: {task.test_file} is not in rev2")
    old = GitTree(repo_path, task.rev1).read(task.old_test_file or task.test_file)
    if task.track == Track.GENERATION and old is None:
        return None  # a new file: the agent writes all of it
    methods = language.parse(new, scan="none").by_key()
    old_methods = language.parse(old, scan="none").by_key() if old is not None else {}
    lines = new.decode("utf-8", errors="surrogateescape").splitlines(keepends=True)
    targets = sorted(
        (methods[key] for key in task.test_methods if key in methods), key=lambda m: -m.start_line
    )
    for method in targets:
        start, end = method.start_line - 1, method.end_line
        if task.track == Track.GENERATION:
            replacement: list[str] = []
        else:
            previous = old_methods.get(method.key)
            replacement = previous.source.splitlines(keepends=True) if previous else []
            if replacement and not replacement[-1].endswith("\n"):
                replacement[-1] += "\n"
            indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
            if replacement and not replacement[0].startswith(indent):
                replacement[0] = indent + replacement[0].lstrip()
        lines[start:end] = replacement
    return "".join(lines).encode("utf-8", errors="surrogateescape")


def prompt_text(task: Task, repo_path: Path, given: bytes | None) -> str:
    """What the agent is told: the track, the file, the methods, the production change."""
    names = [key.split("(")[0].split("#")[0].rsplit(".", 1)[-1] for key in task.test_methods]
    if task.track == Track.GENERATION:
        goal = (
            f"The production code changed. Write these new test methods in `{task.test_file}` "
            f"({'create the file' if given is None else 'the file exists'}): {', '.join(names)}. "
            "They must pass on the new code and capture the new behaviour (fail on the old code)."
        )
    else:
        goal = (
            f"The production code changed and these test methods in `{task.test_file}` no longer "
            f"fit it: {', '.join(names)}. Repair them so they pass on the new code."
        )
    parts = [f"# coevo task {task.id} ({task.track}, {task.language})", "", goal, "",
             "Only the test file is kept; other changes are discarded.", "",
             "## The production change", "", "```diff", task.production_diff.rstrip(), "```", "",
             "## The changed methods now", ""]  # fmt: skip
    tree, sources = GitTree(repo_path, task.rev2), dict[str, bytes | None]()
    for focal in task.focal_methods:
        if focal["file"] not in sources:
            sources[focal["file"]] = tree.read(focal["file"])
        source = sources[focal["file"]]
        if source is None or focal.get("start") is None:
            continue
        body = source.decode("utf-8", errors="replace").splitlines()[focal["start"] - 1 : focal["end"]]
        parts += [f"`{focal['file']}` — {focal['method']}", "", "```", *body, "```", ""]
    return "\n".join(parts)


def prepare_workspace(task: Task, repo_path: Path, root: Path) -> Workspace:
    """The agent's workspace: the rev2 tree with the test file reset, one commit, no history."""
    given = reset_test_file(task, repo_path)
    workspace = Workspace(root, task.test_file, given, prompt_text(task, repo_path, given))
    export_revision(repo_path, task.rev2, workspace.repo)
    target = workspace.repo / task.test_file
    if given is None:
        target.unlink(missing_ok=True)
    else:
        target.write_bytes(given)
    workspace.task_dir.mkdir(parents=True, exist_ok=True)
    (workspace.task_dir / "prompt.md").write_text(workspace.prompt)
    env = {**os.environ, **_IDENTITY, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "task"]):
        subprocess.run(["git", "-C", str(workspace.repo), *args], env=env, capture_output=True, check=True)
    return workspace


# --- the agent's run -------------------------------------------------------------------------------


@dataclass
class AgentOutput:
    content: bytes | None
    """The test file the agent left (None: none)."""
    log: str
    seconds: float
    timed_out: bool
    discarded: list[str] = field(default_factory=list)


def run_agent(
    agent: Agent, task: Task, workspace: Workspace, repo_path: Path, image: str | None
) -> AgentOutput:
    """Runs ``agent`` in ``workspace`` and takes back its test file."""
    started = time.monotonic()
    log, timed_out = "", False
    target = workspace.repo / workspace.test_file
    if agent.builtin:
        if agent.name == "gold":
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(GitTree(repo_path, task.rev2).read(task.test_file) or b"")
    else:
        sandbox, values = _agent_sandbox(agent, task, workspace, image)
        try:
            result = sandbox.exec(agent.argv(values), agent.timeout)
        finally:
            sandbox.close()
        log = (result.stdout + ("\n" if result.stdout and result.stderr else "") + result.stderr)[-200_000:]
        timed_out = result.timed_out
    discarded = [path for path in _changed(workspace.repo) if path != workspace.test_file]
    content = target.read_bytes() if target.is_file() else None
    return AgentOutput(content, log, time.monotonic() - started, timed_out, discarded)


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
        return LocalSandbox(workspace.repo), values
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
    )
    return sandbox, values


def _changed(repo: Path) -> list[str]:
    status = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain", "-z", "--untracked-files=all"],
        capture_output=True,
        check=False,
    ).stdout.decode("utf-8", errors="replace")
    return sorted({entry[3:] for entry in status.split("\0") if len(entry) > 3})


# --- the verdict -----------------------------------------------------------------------------------


@dataclass
class Verdict:
    outcomes: dict[str, dict[str, Any]]
    coverage_on_pass: float | None
    mutation: MutationResult | None = None
    mutation_seconds: float = 0.0


def judge(
    task: Task, content: bytes | None, new: BuiltRevision, old: BuiltRevision | None, timeout: float
) -> Verdict:
    """Each task method's outcome for ``content`` (the agent's test file)."""
    ids = dict(zip(task.test_methods, task.test_ids, strict=True))
    if content is None:
        return Verdict({m: _outcome("exec_fail", "the agent left no test file") for m in ids}, None)
    tag = "s" + hashlib.sha256(f"{task.id}\0{content!r}".encode()).hexdigest()[:12]
    new_side = new.side()
    try:
        new_run = new_side.run_cross(task.test_file, content, list(ids.values()), tag, timeout, coverage=True)
        on_new = {r.test: r for r in new_run.results}
        passing = [test for test in ids.values() if on_new[test].outcome == Outcome.PASS]
        started = time.monotonic()
        mutation = new_side.mutation_score(
            task.test_file, content, passing, task.focal_methods, tag, timeout * 4, baseline=new_run
        )
        mutation_seconds = time.monotonic() - started
    finally:
        new_side.close()
    on_old = {}
    if old is not None:
        old_side = old.side()
        try:
            old_run = old_side.run_cross(task.test_file, content, list(ids.values()), tag, timeout)
        finally:
            old_side.close()
        on_old = {r.test: r for r in old_run.results}
    outcomes: dict[str, dict[str, Any]] = {}
    covered: dict[str, set[int]] = {}
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
        old_outcome = str(on_old[test].outcome) if test in on_old else None
        success = runs_changed and (task.track == Track.UPDATE or old_outcome != "pass")
        strict = strict_success(success, test, mutation)
        outcomes[method] = _outcome(kind, message, success, str(result.outcome), old_outcome, strict)
    passed = any(o["outcome"] == "pass" for o in outcomes.values())
    coverage = _focal_coverage(task, new, covered) if passed else None
    return Verdict(outcomes, coverage, mutation, mutation_seconds)


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
        "message": message[:500],
    }


# --- one task, one agent ------------------------------------------------------------------------------


def score_task(task: Task, repo: Repository, agent: Agent, options: ScoreOptions, root: Path) -> AgentRun:
    """Runs ``agent`` on ``task`` and judges it; a harness problem is ``harness_fail``, not an error."""
    started = time.monotonic()
    run = AgentRun(task_id=task.id, agent=agent.name, model=agent.model)
    repo_path = Path(repo.path)

    def built(sha: str) -> BuiltRevision:
        return prepare_revision(
            root, repo.id or 0, repo_path, sha, repo.language, options.backend, tuple(repo.build_args),
            options.base_images, options.build_timeout, [task.test_file],
        )  # fmt: skip

    new = built(task.rev2)
    old = built(task.rev1) if task.track == Track.GENERATION else None
    broken = [b for b in (new, old) if b is not None and b.status != "ok"]
    if broken:
        message = f"{broken[0].sha[:10]} {broken[0].status}: {broken[0].message}"
        return _finish(
            run, task, {m: _outcome("harness_fail", message) for m in task.test_methods}, None, started
        )
    with tempfile.TemporaryDirectory(prefix="coevo-agent-") as scratch:
        workspace = prepare_workspace(task, repo_path, Path(scratch))
        run.prompt = workspace.prompt
        output = run_agent(agent, task, workspace, repo_path, new.image)
        run.log, run.discarded = output.log, output.discarded
        run.tokens, run.cost = _usage(output.log)
        run.diff = "".join(
            difflib.unified_diff(
                (workspace.given or b"").decode(errors="replace").splitlines(keepends=True),
                (output.content or b"").decode(errors="replace").splitlines(keepends=True),
                f"a/{task.test_file}",
                f"b/{task.test_file}",
            )
        )
        verdict = judge(task, output.content, new, old, options.test_timeout)
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


def active_tasks_after(tasks: Sequence[Task], after: Any, track: str | None) -> list[Task]:
    """The active tasks dated strictly after ``after`` (a datetime or None), of ``track``."""
    return [
        t
        for t in tasks
        if t.status == TaskStatus.ACTIVE
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
    """Scores ``agent`` on every active task dated after the cutoff; finished pairs are kept.

    The cutoff is ``after``, or with ``model_cutoff`` the agent's own training cutoff.
    """
    options = options or ScoreOptions()
    if not agent.builtin and not agent.image and options.backend == "local" and not options.trust_host:
        raise BadAgent(
            f"agent {agent.name} would run on the host, where it could read the gold tests: "
            "use --backend docker, or --trust-agent if you trust it"
        )
    cutoff = agent.cutoff if model_cutoff else after
    if model_cutoff and cutoff is None:
        raise BadAgent(f"agent {agent.name} declares no cutoff: give --after DATE instead")
    with store.session() as session:
        tasks = active_tasks_after(
            session.exec(select(Task).order_by(col(Task.rev2_date))).all(), cutoff, track
        )
        done = set(session.exec(select(AgentRun.task_id).where(AgentRun.agent == agent.name)).all())
        if redo:  # only the tasks in scope: runs on older tasks or other tracks are kept
            in_scope = [t.id for t in tasks]
            session.exec(
                delete(AgentRun).where(col(AgentRun.agent) == agent.name, col(AgentRun.task_id).in_(in_scope))
            )
            done -= set(in_scope)
        repos = {r.id: r for r in session.exec(select(Repository)).all()}
    report = ScoreReport(agent.name, skipped=sum(t.id in done for t in tasks))
    todo = [t for t in tasks if t.id not in done]
    root = options.work or work_root()

    def one(task: Task) -> str | None:
        """Scores and stores one task; the error, if any."""
        try:
            run = score_task(task, repos[task.repository_id], agent, options, root)
        except CoevoError as exc:
            return str(exc)
        with store.session() as session:
            session.add(run)
        return None

    with ThreadPoolExecutor(workers) as pool:
        errors = map(one, todo) if workers <= 1 else pool.map(one, todo)  # one worker: this thread
        for index, (task, error) in enumerate(zip(todo, errors, strict=True)):
            if error is None:
                report.scored += 1
            else:
                report.errors[task.id] = error
            if progress:
                progress(index + 1, len(todo))
    return report


@dataclass
class Standing:
    """One agent's row of the leaderboard: macro-averages over its tasks (percent)."""

    agent: str
    model: str
    tasks: int
    pass_rate: float
    success_rate: float
    """TestEvo-Bench's Success%: passes on the new code (runs the changed code; generation:
    does not pass on the old), kept for comparison."""
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
    """Every scored agent over tasks dated after ``after``: best StrictSuccess% first, then
    Success%, then Pass%."""
    with store.session() as session:
        rows = session.exec(select(AgentRun, Task).join(Task, col(Task.id) == col(AgentRun.task_id))).all()
    by_agent: dict[str, list[tuple[AgentRun, Task]]] = {}
    for run, task in rows:
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


def _standing(agent: str, runs: list[tuple[AgentRun, Task]]) -> Standing:
    def mean(values: Sequence[float | None]) -> float | None:
        return _mean_of(values, scale=100, digits=1)  # percent

    def judged(run: AgentRun, rate: float) -> float | None:
        """A rate over the methods the harness could judge (harness failures do not count)."""
        share = 1 - run.harness_fail_rate
        return rate / share if share > 0 else None

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
