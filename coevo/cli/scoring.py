"""Scoring commands: ``coevo score`` (an agent judged on the tasks), ``coevo leaderboard`` and
``coevo show-run``."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

import click
from rich.table import Table
from sqlmodel import select

from runners import cause_line
from runners.scoring.agents import check_agent, find_agent
from runners.scoring.scorer import ScoreOptions, leaderboard, score, scoring_folders
from tasks import (
    AgentRun,
    CoevoError,
)

from .options import (
    BACKEND,
    INCLUDE_QUARANTINED,
    chosen_backend,
    common,
    err,
    opened_store,
    out,
    parse_date,
    progress_bar,
    visible,
)


@click.command("score")
@click.option(
    "--agent", "agent_name", required=True, help="The agent: a name from --agents-file, gold or noop."
)
@click.option(
    "--agents-file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="A TOML file declaring agents ([agents.NAME] command, model, cutoff, timeout, network, mount).",
)
@click.option(
    "--agent-cmd", help="An inline agent command template (placeholders: {workspace} {prompt} ...)."
)
@click.option("--after", metavar="DATE", help="Only tasks dated after this day (their rev2's date).")
@click.option("--model-cutoff", is_flag=True, help="Only tasks dated after the agent's own training cutoff.")
@click.option("--track", type=click.Choice(["generation", "update"]), help="Only tasks of this track.")
@click.option(
    "--workers", type=click.IntRange(min=1), default=1, show_default=True, help="Tasks scored at once."
)
@click.option("--redo", is_flag=True, help="Score again the tasks this agent was already scored on.")
@click.option(
    "--trust-agent",
    is_flag=True,
    help="With --backend local (or auto without Docker), run a command agent and judge its tests on the "
    "host, where they could read the gold tests.",
)
@click.option(
    "--timeout", "test_timeout", type=float, default=300, show_default=True, help="Seconds per test run."
)
@click.option(
    "--reruns",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Runs of the agent's tests on the new and on the old code; runs that disagree make a method "
    "flaky, which is no success.",
)
@click.option(
    "--repo-dir",
    "repo_dirs",
    multiple=True,
    metavar="NAME=PATH",
    help="Read repository NAME's history from this clone (repeatable); without it a repository with "
    "no history here is cloned from its recorded URL into $COEVO_CLONES.",
)
@INCLUDE_QUARANTINED
@BACKEND
@common
def score_command(
    agent_name: str,
    agents_file: Path | None,
    agent_cmd: str | None,
    after: str | None,
    model_cutoff: bool,
    track: str | None,
    workers: int,
    redo: bool,
    trust_agent: bool,
    test_timeout: float,
    reruns: int,
    repo_dirs: tuple[str, ...],
    include_quarantined: bool,
    backend: str,
    db: str | None,
    as_json: bool,
) -> None:
    """Run an agent on the tasks dated after a cutoff and judge what it writes.

    Each run gets a fresh workspace (the new code, the test file reset, no history, no
    network unless the agent declares it) and keeps only the test file. Finished task and
    agent pairs are kept; run again to resume.

    Example: coevo score --agent my-agent --agents-file agents.toml --model-cutoff
    """
    if after and model_cutoff:
        raise click.UsageError("give --after or --model-cutoff, not both")
    agent = find_agent(agent_name, agents_file, agent_cmd)
    cutoff = parse_date(after, "--after")
    store = opened_store(db, write=True)
    options = ScoreOptions(
        test_timeout=test_timeout,
        reruns=reruns,
        trust_host=trust_agent,
        repo_dirs=_repo_dirs(repo_dirs),
        include_quarantined=include_quarantined,
    )
    runs = "each repository's code" + ("" if agent.builtin else f" and agent {agent.name}")
    resolved = chosen_backend(
        backend,
        f"scoring on the host runs {runs} here",
        lambda backend: check_agent(agent, backend, trust_agent, scoring_folders(store, options)),
    )
    options = dataclasses.replace(options, backend=resolved)
    with progress_bar(as_json) as (start, advance):
        started: list[bool] = []

        def progress(done: int, total: int) -> None:
            if not started:
                start(f"scoring {agent.name}", total, "tasks")
                started.append(True)
            advance(1)

        report = score(
            store,
            agent,
            cutoff,
            model_cutoff,
            track,
            options,
            workers,
            redo,
            progress,
        )
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(report), indent=2))
    else:
        out.print(
            f"{agent.name}: {report.scored} tasks scored, {report.skipped} already scored", highlight=False
        )
    for task, message in sorted(report.errors.items()):
        err.print(f"error: task {task}: {cause_line(message)}", highlight=False)
    if report.errors:
        raise SystemExit(1)


def _repo_dirs(given: Sequence[str]) -> dict[str, Path]:
    """``NAME=PATH`` options as a map; a malformed one is a usage error."""
    found: dict[str, Path] = {}
    for item in given:
        name, equals, path = item.partition("=")
        if not equals or not name or not path:
            raise click.BadParameter(f"{item!r}: give NAME=PATH", param_hint="--repo-dir")
        found[name] = Path(path).expanduser()
    return found


@click.command("leaderboard")
@click.option("--after", metavar="DATE", help="Only tasks dated after this day.")
@common
def leaderboard_command(after: str | None, db: str | None, as_json: bool) -> None:
    """The agents, best StrictSuccess% first: pass, failure and success rates, coverage, wall time.

    Rates are macro-averages over tasks, in percent, over the methods the harness could
    judge (HrnsFail% is the share it could not: never counted against an agent). Success% is
    TestEvo-Bench's; StrictSuccess% also asks the method to detect a mutant of the focal code.

    Example: coevo leaderboard --after 2025-06-01
    """
    cutoff = parse_date(after, "--after")
    standings = leaderboard(opened_store(db, write=False), cutoff)
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(s) for s in standings], indent=2))
        return
    table = Table(show_edge=False, box=None, pad_edge=False)
    columns = ("agent", "model", "tasks", "StrictSuccess%", "Success%", "Pass%", "CmplFail%", "ExecFail%",
               "HrnsFail%", "CovOnPass", "MutOnPass", "seconds", "tokens", "cost")  # fmt: skip
    for column in columns:
        table.add_column(column, justify="left" if column in ("agent", "model") else "right")

    def shown(value: float | None, digits: int = 1) -> str:
        return "-" if value is None else f"{value:.{digits}f}"

    for s in standings:
        table.add_row(
            s.agent, s.model, str(s.tasks), shown(s.strict_success_rate), shown(s.success_rate),
            shown(s.pass_rate),
            shown(s.compile_fail_rate), shown(s.exec_fail_rate), shown(s.harness_fail_rate),
            shown(s.coverage_on_pass), shown(s.mutation_on_pass), shown(s.seconds), shown(s.tokens, 0),
            shown(s.cost, 2),
        )  # fmt: skip
    out.print(table if standings else "no agent has been scored yet", highlight=False)


@click.command("show-run")
@click.argument("agent")
@click.argument("task")
@common
def show_run_command(agent: str, task: str, db: str | None, as_json: bool) -> None:
    """Show one agent's run on one task: its prompt, its log, its diff, each method's outcome.

    Example: coevo show-run my-agent gen-0123456789abcdef
    """
    with opened_store(db, write=False).session() as session:
        run = session.exec(select(AgentRun).where(AgentRun.agent == agent, AgentRun.task_id == task)).first()
    if run is None:
        raise CoevoError(f"no run of agent {agent!r} on task {task!r}")
    if as_json:
        click.echo(json.dumps(run.model_dump(mode="json"), indent=2))
        return
    out.print(f"agent {run.agent} on task {run.task_id}: {run.status}, {run.seconds:.1f}s", highlight=False)
    for method, outcome in run.outcomes.items():
        detail = f" — {visible(cause_line(outcome['message']))}" if outcome.get("message") else ""
        success = ""
        if outcome.get("success"):
            strict = outcome.get("strict")  # None: stored before strict success existed
            success = " (strict success)" if strict else " (success, not strict: detects no mutant)"
            success = " (success)" if strict is None else success
        out.print(f"  {outcome['outcome']:<13} {visible(method)}{success}{detail}", highlight=False)
    if run.coverage_on_pass is not None:
        out.print(f"focal-method line coverage: {run.coverage_on_pass:.0%}", highlight=False)
    if run.mutants:
        m = run.mutants
        statuses = ", ".join(f"{status} {n}" for status, n in m["statuses"].items())
        line = f"mutants of the focal methods: {m['detected']} of {m['total']} detected ({statuses})"
        line += f" in {m['seconds']:.1f}s"
        out.print(line + (f"; {m['message']}" if m.get("message") else ""), highlight=False)
    if run.discarded:
        discarded = visible(", ".join(run.discarded))
        out.print(f"discarded changes to: {discarded}", highlight=False)
    for title, text in (("prompt", run.prompt), ("agent log", run.log), ("diff of the test file", run.diff)):
        out.print(f"\n--- {title} ---", highlight=False)
        out.print(visible(text.rstrip()) or "(empty)", highlight=False)
