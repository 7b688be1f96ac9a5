"""``coevo site``: a store (or a snapshot) rendered as plain files any static host serves.

Pages are rendered by jinja2 with autoescape and StrictUndefined; the explorer's rows and the
leaderboard's per-task results are script files that assign JSON (``data/*.js``: they load from
``file://`` too, where a browser refuses ``fetch``), with ``<``, ``>`` and ``&`` written as
``\\u`` escapes so nothing a repository wrote can close a tag. The same store gives the same files.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer
from sqlmodel import col, select

from curation import Funnel, funnel
from curation.matrix import CELLS
from runners import cause_line
from runners.scoring.scorer import judged
from tasks import (
    AgentRun,
    Candidate,
    CoevoError,
    CuratedPair,
    CurationRecord,
    Repository,
    RevisionPair,
    Store,
    Task,
    TaskStatus,
    import_snapshot,
    open_store,
)

from . import charts

CHUNK_ROWS = 1000
"""Explorer rows per data file: the first paint loads one."""
MARKER = ".coevo-site"
"""Written into the output folder: only a folder holding it is emptied before a render."""
_CELL_MEANINGS = {
    "OO": "old test on old code",
    "ON": "old test on new code",
    "NO": "new test on old code",
    "NN": "new test on new code",
}
DYNAMIC = ("coverage", "coverage_use", "stack")
"""Focal provenances measured by running the test; the others are static links."""
TRACK_NAMES = {"generation": "test generation", "update": "test update"}


class SiteError(CoevoError):
    """The site cannot be written where asked (a folder coevo did not write)."""


@dataclass(frozen=True)
class SiteReport:
    out: Path
    tasks: int
    repositories: int
    agents: int
    files: int


def render_snapshot_site(folder: Path, out: Path, title: str = "coevo") -> SiteReport:
    """The site of a snapshot: loaded (verified) into a scratch store, then rendered; the
    snapshot's name is shown beside its tasks."""
    with tempfile.TemporaryDirectory(prefix="coevo-site-") as scratch:
        store = open_store(Path(scratch) / "snapshot.db")
        try:
            import_snapshot(store, folder)
            return render_site(store, out, title=title, source=f"snapshot {folder.name}")
        finally:
            store.close()


def render_site(store: Store, out: Path, title: str = "coevo", source: str | None = None) -> SiteReport:
    """Writes the site of ``store``'s active tasks into ``out`` (emptied first when coevo wrote
    it before; refused when it holds anything else)."""
    _prepare(out)
    data = _gather(store)
    env = _templates()
    written = 0

    def page(path: str, template: str, **values: Any) -> None:
        nonlocal written
        depth = path.count("/")
        html = env.get_template(template).render(
            root="../" * depth, title=title, source=source or Path(store.name).name, **values
        )
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(html, encoding="utf-8")
        written += 1

    def script(path: str, function: str, *values: Any) -> None:
        """A data file: one call of the page's ``coevo.<function>`` with JSON arguments."""
        nonlocal written
        target = out / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f"coevo.{function}({', '.join(_json(v) for v in values)});\n", encoding="utf-8")
        written += 1

    tasks, repos = data.tasks, data.repositories
    overall, per_repo = data.funnel
    page("index.html", "index.html", nav="overview", data=data, overall=overall)
    rows = [_explorer_row(task, data.focal_names.get(task.id, "")) for task in tasks]
    chunks = [rows[i : i + CHUNK_ROWS] for i in range(0, len(rows), CHUNK_ROWS)] or [[]]
    script(
        "data/explorer.js",
        "explorer",
        {
            "total": len(rows),
            "chunks": len(chunks),
            "columns": list(_EXPLORER_COLUMNS),
            "tracks": sorted({t.track.value for t in tasks}),
            "languages": sorted({t.language for t in tasks}),
            "repositories": sorted({t.repository for t in tasks}),
            "pages": {name: repo_page(name) for name in sorted({t.repository for t in tasks})},
        },
    )
    for index, chunk in enumerate(chunks):
        script(f"data/tasks-{index:04d}.js", "chunk", index, chunk)
    page("tasks.html", "explorer.html", nav="tasks", data=data)
    for task in tasks:
        page(
            f"tasks/{task.id}.html",
            "task.html",
            nav="tasks",
            task=task,
            data=data,
            repo=repos.get(task.repository),
            pair=data.pairs.get(task.pair_id),
            records=data.records.get(task.id, {}),
            runs=data.runs_by_task.get(task.id, []),
            gold_diff=_highlighted(task.gold_patch),
            production_diff=_highlighted(task.production_diff),
        )
    for name in sorted(per_repo):
        page(
            repo_page(name),
            "repository.html",
            nav="funnel",
            name=name,
            repo=repos.get(name),
            funnel=per_repo[name],
            tasks=[t for t in tasks if t.repository == name],
            data=data,
        )
    page("funnel.html", "funnel.html", nav="funnel", data=data, overall=overall, per_repo=per_repo)
    script("data/runs.js", "runs", data.leaderboard)
    page("leaderboard.html", "leaderboard.html", nav="leaderboard", data=data)
    static = resources.files("web") / "static"
    for item in sorted(static.iterdir(), key=lambda entry: entry.name):
        if item.name.endswith((".css", ".js")):
            (out / "static").mkdir(exist_ok=True)
            (out / "static" / item.name).write_bytes(item.read_bytes())
            written += 1
    return SiteReport(
        out=out, tasks=len(tasks), repositories=len(per_repo), agents=len(data.agents), files=written
    )


def repo_page(name: str) -> str:
    """A repository's page: its name made safe for a file name, and a hash of it so two names
    that read alike stay apart."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")[:60] or "repository"
    return f"repos/{safe}-{hashlib.sha256(name.encode()).hexdigest()[:8]}.html"


def web_url(repo: Repository | None) -> str | None:
    """The repository's web address (an https clone URL without ``.git``, or its canonical
    remote's), None for a local one."""
    if repo is None:
        return None
    location = repo.location
    if location.startswith(("https://", "http://")):
        return location.removesuffix("/").removesuffix(".git")
    identity = repo.identity or ""
    if identity and not identity.startswith("root:") and "/" in identity:
        return f"https://{identity}"
    return None


# --- gathering -----------------------------------------------------------------------------------


_EXPLORER_COLUMNS = ("id", "track", "language", "repository", "date", "test_file", "methods", "focal")


@dataclass
class SiteData:
    tasks: list[Task]
    """Active tasks, newest first."""
    retired: int
    repositories: dict[str, Repository]
    pairs: dict[int, RevisionPair]
    records: dict[str, dict[str, CurationRecord]]
    runs_by_task: dict[str, list[AgentRun]]
    focal_names: dict[str, str]
    funnel: tuple[Funnel, dict[str, Funnel]]
    builds: dict[str, Counter[str]]
    agents: dict[str, dict[str, Any]]
    leaderboard: dict[str, Any]
    months: list[str]
    per_month: dict[str, list[int]]
    counts: dict[str, Counter[str]]
    contamination: Markup | None
    contamination_rows: list[tuple[str, int, float, int]]
    uncut_agents: list[str]

    @property
    def first_date(self) -> str:
        return _day(self.tasks[-1].rev2_date) if self.tasks else "-"

    @property
    def last_date(self) -> str:
        return _day(self.tasks[0].rev2_date) if self.tasks else "-"


def _gather(store: Store) -> SiteData:
    with store.session() as session:
        everything = session.exec(
            select(Task).order_by(
                col(Task.rev2_date).desc(), col(Task.repository), col(Task.test_file), col(Task.id)
            )
        ).all()
        tasks = [t for t in everything if t.status == TaskStatus.ACTIVE]
        repositories = {r.name: r for r in session.exec(select(Repository)).all()}
        pair_ids = {t.pair_id for t in tasks}
        pairs = {p.id: p for p in session.exec(select(RevisionPair)).all() if p.id in pair_ids}
        records: dict[str, dict[str, CurationRecord]] = defaultdict(dict)
        for record, method in session.exec(
            select(CurationRecord, Candidate.test_method)
            .join(Candidate, col(Candidate.id) == col(CurationRecord.candidate_id))
            .where(col(CurationRecord.task_id).is_not(None))
        ):
            records[str(record.task_id)][method] = record
        runs = session.exec(select(AgentRun).order_by(col(AgentRun.agent), col(AgentRun.task_id))).all()
        curated = session.exec(select(CuratedPair)).all()
        names = {r.id: r.name for r in repositories.values()}
        builds: dict[str, Counter[str]] = defaultdict(Counter)
        for pair in curated:
            for state in (pair.rev1_build, pair.rev2_build):
                builds[names.get(pair.repository_id, "?")][state or "not built"] += 1
    active = {t.id: t for t in tasks}
    runs_by_task: dict[str, list[AgentRun]] = defaultdict(list)
    for run in runs:
        if run.task_id in active:
            runs_by_task[run.task_id].append(run)
    agents = _agents(r for r in runs if r.task_id in active)
    focal_names = {t.id: " ".join(sorted({str(f.get("method", "")) for f in t.focal_methods})) for t in tasks}
    months, per_month = _per_month(tasks)
    counts = {
        "track": Counter(t.track.value for t in tasks),
        "language": Counter(t.language for t in tasks),
        "repository": Counter(t.repository for t in tasks),
    }
    chart, rows, uncut = _contamination(tasks, runs_by_task, agents)
    return SiteData(
        tasks=tasks,
        retired=len(everything) - len(tasks),
        repositories=repositories,
        pairs={k: v for k, v in pairs.items() if k is not None},
        records=dict(records),
        runs_by_task=dict(runs_by_task),
        focal_names=focal_names,
        funnel=funnel(store),
        builds=dict(builds),
        agents=agents,
        leaderboard=_leaderboard_data(tasks, runs_by_task, agents),
        months=months,
        per_month=per_month,
        counts=counts,
        contamination=chart,
        contamination_rows=rows,
        uncut_agents=uncut,
    )


def _agents(runs: Iterable[AgentRun]) -> dict[str, dict[str, Any]]:
    """Each scored agent's model and declared training cutoff (the newest run's)."""
    found: dict[str, dict[str, Any]] = {}
    for run in runs:
        known = found.setdefault(run.agent, {"model": run.model, "cutoff": None, "tasks": 0})
        known["tasks"] += 1
        if run.model_cutoff is not None:
            known["cutoff"] = _day(run.model_cutoff)
    return dict(sorted(found.items()))


def _per_month(tasks: list[Task]) -> tuple[list[str], dict[str, list[int]]]:
    """Every month from the first task's to the last's, and the tasks of each track in each."""
    dated = [t for t in tasks if t.rev2_date is not None]
    if not dated:
        return [], {}
    first = min(t.rev2_date for t in dated if t.rev2_date)
    last = max(t.rev2_date for t in dated if t.rev2_date)
    months = []
    year, month = first.year, first.month
    while (year, month) <= (last.year, last.month):
        months.append(f"{year:04d}-{month:02d}")
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    counts: Counter[tuple[str, str]] = Counter(
        (t.track.value, f"{t.rev2_date:%Y-%m}") for t in dated if t.rev2_date
    )
    tracks = sorted({t.track.value for t in dated})
    return months, {track: [counts[(track, m)] for m in months] for track in tracks}


def _contamination(
    tasks: list[Task], runs_by_task: dict[str, list[AgentRun]], agents: dict[str, dict[str, Any]]
) -> tuple[Markup | None, list[tuple[str, int, float, int]], list[str]]:
    """Per agent with a declared cutoff, Success% (as the leaderboard averages it) of the tasks
    of each month before and after that cutoff."""
    buckets: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for task in tasks:
        if task.rev2_date is None:
            continue
        for run in runs_by_task.get(task.id, []):
            cutoff = agents[run.agent]["cutoff"]
            if cutoff is None:
                continue
            cut = datetime.fromisoformat(cutoff)
            offset = (task.rev2_date.year - cut.year) * 12 + task.rev2_date.month - cut.month
            value = judged(run, run.success_rate)
            if value is not None:
                buckets[run.agent][offset].append(value)
    uncut = [name for name, agent in agents.items() if agent["cutoff"] is None]
    if not buckets:
        return None, [], uncut
    series: dict[str, list[tuple[int, float, int]]] = {}
    rows: list[tuple[str, int, float, int]] = []
    for agent in sorted(buckets):
        points = []
        for offset in sorted(buckets[agent]):
            values = buckets[agent][offset]
            percent = round(100 * sum(values) / len(values), 1)
            points.append((offset, percent, len(values)))
            rows.append((agent, offset, percent, len(values)))
        series[agent] = points
    offsets = [offset for points in series.values() for offset, _, _ in points]
    chart = charts.contamination(
        "Success% by task date relative to each agent's training cutoff",
        series,
        (min([*offsets, 0]), max([*offsets, 0])),
    )
    return chart, rows, uncut


def _leaderboard_data(
    tasks: list[Task], runs_by_task: dict[str, list[AgentRun]], agents: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """What the leaderboard page recomputes its scores from: each scored task's date (seconds
    since the epoch) and track, and each run's rates as stored."""
    scored = [t for t in tasks if runs_by_task.get(t.id)]
    scored.sort(key=lambda t: (t.rev2_date or datetime.min.replace(tzinfo=UTC), t.id))
    index = {t.id: i for i, t in enumerate(scored)}
    names = list(agents)
    runs = []
    for task in scored:
        for run in sorted(runs_by_task[task.id], key=lambda r: r.agent):
            runs.append(
                [
                    names.index(run.agent), index[task.id], run.pass_rate, run.success_rate,
                    run.strict_success_rate, run.compile_fail_rate, run.exec_fail_rate,
                    run.harness_fail_rate, run.coverage_on_pass, run.mutation_on_pass, run.seconds,
                    run.tokens, run.cost,
                ]
            )  # fmt: skip
    return {
        "agents": [{"name": n, "model": agents[n]["model"], "cutoff": agents[n]["cutoff"]} for n in names],
        "tasks": [
            [int(t.rev2_date.timestamp()) if t.rev2_date else None, t.track.value, _day(t.rev2_date)]
            for t in scored
        ],
        "runs": runs,
    }


def _explorer_row(task: Task, focal: str) -> list[Any]:
    return [
        task.id, task.track.value, task.language, task.repository, _day(task.rev2_date), task.test_file,
        " ".join(task.test_methods), focal,
    ]  # fmt: skip


# --- rendering -----------------------------------------------------------------------------------


def _prepare(out: Path) -> None:
    if out.exists():
        if not out.is_dir():
            raise SiteError(f"{out} is a file: give --out a folder")
        if any(out.iterdir()) and not (out / MARKER).exists():
            raise SiteError(f"{out} holds files coevo did not write: give --out an empty or new folder")
        for child in out.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("written by coevo site: emptied and rewritten by the next render\n")


def _templates() -> Environment:
    env = Environment(
        loader=PackageLoader("web", "templates"),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(
        cells=CELLS,
        cell_meanings=_CELL_MEANINGS,
        dynamic=DYNAMIC,
        track_names=TRACK_NAMES,
        repo_page=repo_page,
        web_url=web_url,
        day=_day,
        cause_line=cause_line,
        charts=charts,
        flagged=_trained_after,
        stage_rows=lambda stages: [(stage, n) for stage, n, _ in stages],
    )
    return env


def _trained_after(run: AgentRun, task: Task) -> bool:
    """Whether the agent declared a training cutoff after the task's date (it may have seen it)."""
    return run.model_cutoff is not None and task.rev2_date is not None and run.model_cutoff > task.rev2_date


_FORMATTER = HtmlFormatter(cssclass="diff", wrapcode=True)
_LEXER = DiffLexer()


def _highlighted(diff: str) -> Markup:
    """A unified diff as highlighted, escaped HTML (pygments escapes every token)."""
    if not diff.strip():
        return Markup('<p class="muted">(empty)</p>')
    return Markup(highlight(diff, _LEXER, _FORMATTER))


def _day(moment: datetime | None) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d") if moment else "-"


def _json(value: Any) -> str:
    """Compact JSON that is also safe inside a script: ``<``, ``>``, ``&`` and the line
    separators JavaScript once refused are ``\\u`` escapes."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    for char in "<>&\u2028\u2029":
        text = text.replace(char, f"\\u{ord(char):04x}")
    return text
