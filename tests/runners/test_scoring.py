"""Scoring agents on real curated tasks (the example history: one generation, one update task).

The built-in agents run in-process; command agents run in Docker containers (the only way an
untrusted agent cannot read the host), so those tests need a daemon.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import delete
from sqlmodel import col, select

from coevo.example import write_example
from runners.scoring.agents import Agent, BadAgent, find_agent, load_agents
from runners.scoring.scorer import ScoreOptions, leaderboard, prepare_workspace, score
from tasks import AgentRun, Repository, Task, Track, open_store
from tests import cli
from tests.shared import curated_once

GOLD_GENERATION = "triangle(4, 3) == 6"
"""A line only the developer's new test has: no workspace may contain it."""
GOLD_UPDATE = "with pytest.raises(ValueError)"


@dataclass
class Tasks:
    work: Path
    venvs: Path
    db: Path
    repo: Path
    generation: Task
    update: Task


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tasks]:
    """coevo's example history curated on the host (built once per run), copied for this module."""
    shared = curated_once(tmp_path_factory, write_example, name="example").copy(
        tmp_path_factory.mktemp("scoring")
    )
    with pytest.MonkeyPatch.context() as patch:
        for name, value in shared.env.items():
            patch.setenv(name, value)
        with open_store(shared.db).session() as s:
            found = {t.track: t for t in s.exec(select(Task)).all()}
        yield Tasks(
            shared.work, shared.venvs, shared.db, shared.repo, found[Track.GENERATION], found[Track.UPDATE]
        )


def _copy_db(source: Path, target: Path) -> None:
    """A copy of a live WAL database, its last writes included."""
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)


def _runs(db: Path, agent: str) -> dict[str, AgentRun]:
    with open_store(db).session() as s:
        return {r.task_id: r for r in s.exec(select(AgentRun).where(AgentRun.agent == agent)).all()}


def test_the_workspace_holds_the_new_code_and_no_answer(tasks: Tasks, tmp_path: Path) -> None:
    for task, gold, kept, focal in (
        (tasks.generation, GOLD_GENERATION, "def test_rectangle", "def triangle"),
        (tasks.update, GOLD_UPDATE, "assert rectangle(-2, 3) == -6", "def rectangle"),
    ):
        workspace = prepare_workspace(task, tasks.repo, tmp_path / task.id)
        test_file = (workspace.repo / task.test_file).read_text()
        assert gold not in test_file and kept in test_file
        assert "def triangle" in (workspace.repo / "shapes.py").read_text()  # the new code
        git = ["git", "-C", str(workspace.repo)]
        assert (
            subprocess.run([*git, "rev-list", "--all", "--count"], capture_output=True, text=True).stdout
            == "1\n"
        )
        assert subprocess.run([*git, "remote"], capture_output=True, text=True).stdout == ""
        objects = subprocess.run(
            [*git, "cat-file", "--batch-all-objects", "--batch"], capture_output=True
        ).stdout
        assert gold.encode() not in objects
        assert gold not in workspace.prompt
        assert focal in (workspace.task_dir / "prompt.md").read_text()  # the changed method's new source
    assert "test_triangle" in prepare_workspace(tasks.generation, tasks.repo, tmp_path / "p").prompt


def test_gold_reaches_every_metric_and_noop_nothing(tasks: Tasks, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COEVO_WORK", str(tasks.work))
    options = ScoreOptions(backend="local", test_timeout=120, reruns=1)  # reruns: test_strict_success_…
    for name in ("gold", "noop"):
        report = score(open_store(tasks.db), find_agent(name), options=options)
        assert (report.scored, report.errors) == (2, {})
    gold = _runs(tasks.db, "gold")
    assert {r.pass_rate for r in gold.values()} == {1.0} and {r.success_rate for r in gold.values()} == {1.0}
    assert {r.strict_success_rate for r in gold.values()} == {1.0}  # the developer's tests detect mutants
    assert all(r.coverage_on_pass is not None and r.coverage_on_pass > 0 for r in gold.values())
    # Python mutants of the focal functions (triangle's ``*`` and ``/``, rectangle's ``<``, ...):
    # the gold tests detect some, and every one the tests ran was served to them.
    for run in gold.values():
        assert run.mutation_on_pass is not None and run.mutation_on_pass > 0, run.mutants
        assert run.mutants is not None and run.mutants["total"] >= 2 and not run.mutants["message"]
        assert "NO_COVERAGE" not in run.mutants["statuses"], run.mutants
    generation = gold[tasks.generation.id].outcomes["test_triangle"]
    assert (generation["new"], generation["old"], generation["success"]) == ("pass", "compile_error", True)
    assert generation["strict"] is True
    noop = _runs(tasks.db, "noop")
    assert {r.success_rate for r in noop.values()} == {r.strict_success_rate for r in noop.values()} == {0.0}
    assert all(r.mutation_on_pass is None and r.mutants is None for r in noop.values())
    assert noop[tasks.generation.id].outcomes["test_triangle"]["outcome"] == "exec_fail"  # never written
    assert noop[tasks.update.id].outcomes["test_rectangle"]["outcome"] == "exec_fail"  # the old test fails
    standings = leaderboard(open_store(tasks.db))
    assert [(s.agent, s.tasks, s.strict_success_rate, s.success_rate, s.pass_rate) for s in standings] == [
        ("gold", 2, 100.0, 100.0, 100.0),
        ("noop", 2, 0.0, 0.0, 0.0),
    ]
    assert standings[0].groups["track"] == {
        "generation": {"tasks": 1, "pass": 100.0, "success": 100.0, "strict": 100.0},
        "update": {"tasks": 1, "pass": 100.0, "success": 100.0, "strict": 100.0},
    }
    again = score(open_store(tasks.db), find_agent("gold"), options=options)
    assert (again.scored, again.skipped) == (0, 2)  # resumable: finished pairs are kept


def test_after_and_model_cutoffs_exclude_older_tasks(tasks: Tasks, tmp_path: Path) -> None:
    agents = tmp_path / "agents.toml"
    agents.write_text('[agents.late]\ncommand = "true"\ncutoff = 2026-09-20\nmodel = "m-1"\n')
    late = load_agents(agents)["late"]
    assert late.cutoff == datetime(2026, 9, 20, tzinfo=UTC) and late.model == "m-1"
    db = tmp_path / "c.db"
    _copy_db(tasks.db, db)
    with pytest.raises(BadAgent, match="would run on the host, where it could read the gold tests"):
        score(open_store(db), late, options=ScoreOptions(backend="local", work=tasks.work))
    options = ScoreOptions(backend="local", test_timeout=120, work=tasks.work, trust_host=True, reruns=1)
    cutoff = datetime(2026, 9, 15, 10, tzinfo=UTC)
    with open_store(db).session() as s:
        s.exec(delete(AgentRun).where(col(AgentRun.agent) == "noop"))
    report = score(open_store(db), find_agent("noop"), after=cutoff, options=options)
    assert report.scored == 1  # the generation task is dated exactly at the cutoff: not after it
    assert set(_runs(db, "noop")) == {tasks.update.id}
    # --redo scores again the tasks in scope only: the generation run, out of scope, is kept.
    score(open_store(db), find_agent("noop"), options=options, track="generation")
    kept = _runs(db, "noop")[tasks.generation.id].id
    again = score(open_store(db), find_agent("noop"), after=cutoff, options=options, redo=True)
    assert (again.scored, again.skipped) == (1, 0)
    runs = _runs(db, "noop")
    assert set(runs) == {tasks.generation.id, tasks.update.id} and runs[tasks.generation.id].id == kept
    by_model = score(open_store(db), late, model_cutoff=True, options=options)
    assert by_model.scored == 1 and set(_runs(db, "late")) == {tasks.update.id}
    with pytest.raises(BadAgent, match="declares no cutoff"):
        score(open_store(db), Agent("x", "true"), model_cutoff=True, options=options)
    with pytest.raises(BadAgent, match="unknown placeholder 'nope'"):
        Agent("y", "run {nope}").argv({})


# --- strict success: a success must also detect a mutant ---------------------------------------------

STRICTNESS_AGENTS = {
    "shallow": """import pathlib, re, sys
# Calls the new or changed code and asserts nothing: it passes on the new code, runs the focal
# lines and (generation: the file imports triangle) does not pass on the old code.
path, track = pathlib.Path(sys.argv[1]), sys.argv[2]
if track == "generation":
    name, body = "test_triangle", ["    triangle(4, 3)"]
else:  # a bare call would assert "does not raise", which a mutant of the check breaks
    body = ["    try:", "        rectangle(-2, 3)", "    except ValueError:", "        pass"]
    name = "test_rectangle"
text = re.sub(r"square$", "square, triangle", path.read_text(), flags=re.M)  # imports it
text = re.sub(rf"\\ndef {name}\\(.*?(?=\\n\\S|\\Z)", "", text, flags=re.S)
path.write_text(text.rstrip() + "\\n\\n\\n" + "\\n".join([f"def {name}():", *body]) + "\\n")
""",
    "stateful": """import pathlib, re, sys, uuid
# Passes the first time it runs and fails every later time (a marker file named by the hash of
# the test file, which holds a fresh token): every mutant would look killed.
path, track, markers = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
name, call = "test_triangle", "triangle(4, 3)"
if track == "update":
    name, call = "test_rectangle", "rectangle(2, 3)"
text = re.sub(r"square$", "square, triangle", path.read_text(), flags=re.M)  # imports it
text = re.sub(rf"\\ndef {name}\\(.*?(?=\\n\\S|\\Z)", "", text, flags=re.S)
lines = [
    "import hashlib",
    "import pathlib as _pathlib",
    "",
    f"TOKEN = {uuid.uuid4().hex!r}",
    "",
    "",
    "def _first_run():",
    "    content = _pathlib.Path(__file__).read_bytes()",
    f"    marker = _pathlib.Path({markers!r}) / hashlib.sha256(content).hexdigest()",
    "    if marker.exists():",
    "        return False",
    "    marker.write_text('ran')",
    "    return True",
    "",
    "",
    f"def {name}():",
    f"    {call}",
    "    assert _first_run()",
]
path.write_text(text.rstrip() + "\\n\\n\\n" + "\\n".join(lines) + "\\n")
""",
}


def test_strict_success_needs_a_detected_mutant_and_a_test_that_passes_twice(
    tasks: Tasks, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COEVO_WORK", str(tasks.work))
    db = tmp_path / "c.db"
    _copy_db(tasks.db, db)
    markers = tmp_path / "markers"
    markers.mkdir()
    for name, source in STRICTNESS_AGENTS.items():
        (tmp_path / f"{name}.py").write_text(source)
        command = f"{sys.executable} {tmp_path / name}.py {{test_file}} {{track}} {markers}"
        # One run per code, so that the stateful agent meets the control run (with the default
        # reruns its own second run already shows it flaky, below).
        options = ScoreOptions("local", 120, trust_host=True, reruns=1)
        report = score(open_store(db), Agent(name, command), options=options)
        assert (report.scored, report.errors) == (2, {})
    methods = {tasks.generation.id: "test_triangle", tasks.update.id: "test_rectangle"}

    # Shallow: a success on both tracks (it runs the changed code), detecting no mutant.
    shallow = _runs(db, "shallow")
    for task_id, method in methods.items():
        run, outcome = shallow[task_id], shallow[task_id].outcomes[method]
        assert (outcome["outcome"], outcome["success"], outcome["strict"]) == ("pass", True, False), outcome
        assert (run.success_rate, run.strict_success_rate, run.mutation_on_pass) == (1.0, 0.0, 0.0), (
            run.mutants
        )
        assert run.mutants is not None and run.mutants["total"] >= 2 and run.mutants["unstable"] == []
    assert shallow[tasks.generation.id].outcomes["test_triangle"]["old"] == "compile_error"

    # Stateful: every mutant's run fails, and so does the control run after them: no credit.
    stateful = _runs(db, "stateful")
    for task_id, method in methods.items():
        run, outcome = stateful[task_id], stateful[task_id].outcomes[method]
        assert (outcome["outcome"], outcome["success"], outcome["strict"]) == ("pass", True, False), outcome
        assert (run.success_rate, run.strict_success_rate, run.mutation_on_pass) == (1.0, 0.0, 0.0), (
            run.mutants
        )
        assert run.mutants is not None and run.mutants["detected"] == 0 < run.mutants["total"]
        assert run.mutants["unstable"] == [f"tests/test_shapes.py::{method}"]
        assert f"{method} did not pass again on the unmutated code" in run.mutants["message"]
    command = f"{sys.executable} {tmp_path / 'stateful'}.py {{test_file}} {{track}} {tmp_path / 'markers2'}"
    (tmp_path / "markers2").mkdir()
    rerun = ScoreOptions("local", 120, trust_host=True)  # --reruns 3: its runs disagree
    assert score(open_store(db), Agent("stateful3", command), options=rerun).scored == 2
    for task_id, method in methods.items():
        outcome = _runs(db, "stateful3")[task_id].outcomes[method]
        assert (outcome["outcome"], outcome["success"]) == ("exec_fail", False), outcome
        assert outcome["message"].startswith("flaky on the new code: its 3 runs gave pass, fail, fail"), (
            outcome
        )

    # Both rates are reported, StrictSuccess% first.
    board = cli.coevo("leaderboard", "--db", str(db), "--json")
    rows = [(r["agent"], r["strict_success_rate"], r["success_rate"]) for r in json.loads(board.stdout)]
    assert rows == [
        ("gold", 100.0, 100.0),
        ("shallow", 0.0, 100.0),
        ("stateful", 0.0, 100.0),
        ("noop", 0.0, 0.0),
        ("stateful3", 0.0, 0.0),
    ]
    table = cli.coevo("leaderboard", "--db", str(db)).stdout
    assert table.splitlines()[0].split()[3:6] == ["StrictSuccess%", "Success%", "Pass%"]
    for agent, mark in (
        ("gold", "(strict success)"),
        ("shallow", "(success, not strict: detects no mutant)"),
    ):
        shown = cli.coevo("show-run", agent, tasks.update.id, "--db", str(db)).stdout
        assert f"test_rectangle {mark}" in shown, shown


# --- command agents, in Docker ----------------------------------------------------------------------

AGENTS = {
    "pass_both.py": """import pathlib, sys
path = pathlib.Path(sys.argv[1])
text = path.read_text().replace("import rectangle, square, triangle", "import rectangle, square")
path.write_text(text + "\\n\\ndef test_triangle():\\n    assert square(2) == 4\\n")
""",
    "edits_production.py": """import pathlib, sys
pathlib.Path("shapes.py").write_text("def triangle(base, height):\\n    return 0\\n")
path = pathlib.Path(sys.argv[1])
path.write_text(path.read_text().replace("import rectangle, square", "import rectangle, square, triangle")
                + "\\n\\ndef test_triangle():\\n    assert triangle(4, 3) == 6\\n")
""",
    "syntax_error.py": """import pathlib, sys
print('COEVO_USAGE {"tokens": 1200, "cost": 0.25}')
path = pathlib.Path(sys.argv[1])
path.write_text(path.read_text() + "\\n\\ndef test_triangle(:\\n    pass\\n")
""",
    "vacuous.py": """import pathlib, re, sys
# Tests that assert nothing: they pass on the new code, and in a file importing a new name
# they "fail" on the old one too.
path, methods = pathlib.Path(sys.argv[1]), sys.argv[2].split(",")
text = path.read_text()
for name in methods:
    text = re.sub(rf"\\ndef {name}\\(.*?(?=\\n\\S|\\Z)", "", text, flags=re.S)
    text += f"\\n\\ndef {name}():\\n    assert True\\n"
path.write_text(text)
""",
    "snoop.py": """import os, pathlib, socket, subprocess
gold = "triangle(4, 3) " + "== 6"
found = []
for name, value in os.environ.items():
    if gold in value:
        found.append("env:" + name)
objects = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], capture_output=True).stdout
if gold.encode() in objects:
    found.append(".git")
for top in ["/"]:
    for folder, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if os.path.join(folder, d) not in ("/proc", "/sys", "/dev")]
        for name in files:
            path = os.path.join(folder, name)
            try:
                if os.path.getsize(path) < 5_000_000 and gold.encode() in open(path, "rb").read():
                    found.append(path)
            except OSError:
                pass
network = "blocked"
for host, port in (("pypi.org", 443), ("1.1.1.1", 53), ("172.17.0.1", 22)):
    try:
        socket.create_connection((host, port), timeout=3).close()
        network = "open:" + host
    except OSError:
        pass
print("SEARCHED", os.getcwd(), "parents", str(pathlib.Path.cwd().parent))
print("LEAKS", sorted(found))
print("NETWORK", network)
""",
}


@pytest.fixture(scope="module")
def agents_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("agents")
    lines = []
    for name, source in AGENTS.items():
        stem = name.removesuffix(".py")
        (root / stem).mkdir()  # each agent sees only its own folder
        (root / stem / name).write_text(source)
        command = f"python3 /agent/{name} {{test_file}} {{methods}}"
        lines += [f"[agents.{stem}]", f'command = "{command}"', f'mount = "{stem}"', "timeout = 120", ""]
    lines += ["[agents.hangs]", 'command = "sleep 600"', "timeout = 5", ""]
    (root / "agents.toml").write_text("\n".join(lines))
    return root / "agents.toml"


@pytest.mark.docker
@pytest.mark.slow
def test_command_agents_in_containers(tasks: Tasks, agents_file: Path, tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    _copy_db(tasks.db, db)
    env_work = {"COEVO_WORK": str(tmp_path / "work"), "COEVO_VENVS": str(tasks.venvs)}
    for agent in ("pass_both", "edits_production", "syntax_error", "snoop", "hangs", "vacuous"):
        track = [] if agent == "vacuous" else ["--track", "generation"]
        result = cli.coevo(
            "score", "--agent", agent, "--agents-file", str(agents_file), "--db", str(db),
            "--backend", "docker", *track, "--timeout", "120", "--reruns", "1",
            env={**os.environ, **env_work},
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
    gid = tasks.generation.id
    run = {
        agent: _runs(db, agent)[gid]
        for agent in ("pass_both", "edits_production", "syntax_error", "snoop", "hangs")
    }

    # Asserting nothing passes and runs none of the changed code: never a success, in either track.
    vacuous = _runs(db, "vacuous")
    for task, method in ((tasks.generation, "test_triangle"), (tasks.update, "test_rectangle")):
        outcome = vacuous[task.id].outcomes[method]
        assert (outcome["outcome"], outcome["success"]) == ("pass", False), outcome
        assert outcome["message"] == "passes, but runs none of the changed production code"
    # Judged alone, its method does not need the import of triangle, which it never uses: it passes
    # on the old code too.
    assert vacuous[gid].outcomes["test_triangle"]["old"] == "pass"
    assert {r.coverage_on_pass for r in vacuous.values()} == {0.0}

    both = run["pass_both"].outcomes["test_triangle"]
    assert (both["outcome"], both["old"], both["success"]) == ("pass", "pass", False)
    assert (run["pass_both"].pass_rate, run["pass_both"].success_rate) == (1.0, 0.0)

    edited = run["edits_production"]
    assert edited.discarded == ["shapes.py"]
    assert edited.outcomes["test_triangle"]["outcome"] == "pass"  # judged on the real code, not its edit
    assert edited.success_rate == 1.0

    assert run["syntax_error"].outcomes["test_triangle"]["outcome"] == "compile_fail"
    assert (run["syntax_error"].tokens, run["syntax_error"].cost) == (1200, 0.25)  # as the agent reported

    assert run["hangs"].status == "timeout"
    assert run["hangs"].outcomes["test_triangle"]["outcome"] == "exec_fail"

    log = run["snoop"].log
    assert "SEARCHED /workspace parents /" in log
    assert "LEAKS []" in log, log
    assert "NETWORK blocked" in log, log

    shown = cli.coevo("show-run", "edits_production", gid, "--db", str(db))
    assert (
        "discarded changes to: shapes.py" in shown.stdout and "--- diff of the test file ---" in shown.stdout
    )
    board = json.loads(cli.coevo("leaderboard", "--db", str(db), "--json").stdout)
    assert board[0]["agent"] == "edits_production" and board[0]["success_rate"] == 100.0
    with open_store(db).session() as s:
        assert s.exec(select(Repository)).one().name == "example"


@pytest.mark.maven
@pytest.mark.slow
def test_gold_on_java_tasks_kills_the_focal_mutants_and_an_imported_snapshot_scores_the_same(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Java: gold passes, succeeds, covers and kills PIT's mutants of the focal methods, so each
    of its methods is a strict success (PIT's matrix names it, the control run keeps it); noop
    does none of that. The store exported, imported and exported again gives the same snapshot,
    and the imported store, given a clone of the history, scores both agents as the original."""
    from tests.coevo.test_browse import coevo
    from tests.coevo.test_snapshots import contents, export, results
    from tests.curation.histories import java_history_curated

    mine = java_history_curated(tmp_path_factory).copy(tmp_path)  # one task of each track
    monkeypatch.setenv("COEVO_WORK", str(mine.work))
    db = mine.db
    options = ScoreOptions(backend="local", test_timeout=120, reruns=1)  # reruns: test_strict_success_…
    for name in ("gold", "noop"):
        assert score(open_store(db), find_agent(name), options=options).errors == {}
    gold = list(_runs(db, "gold").values())
    assert len(gold) == 2
    assert all((r.pass_rate, r.success_rate, r.strict_success_rate) == (1.0, 1.0, 1.0) for r in gold), [
        (r.outcomes, r.mutants) for r in gold
    ]
    assert all(r.mutants is not None and r.mutants["unstable"] == [] for r in gold)
    assert all(r.coverage_on_pass and r.mutation_on_pass and r.mutation_on_pass > 0 for r in gold), [
        (r.coverage_on_pass, r.mutation_on_pass) for r in gold
    ]
    noop = list(_runs(db, "noop").values())
    assert all(r.success_rate == r.strict_success_rate == 0.0 and r.mutation_on_pass is None for r in noop)
    (standing, *_) = leaderboard(open_store(db))
    assert (
        standing.agent == "gold" and standing.mutation_on_pass is not None and standing.mutation_on_pass > 0
    )
    assert standing.strict_success_rate == 100.0

    first = export(db, tmp_path / "one")
    imported = tmp_path / "imported.db"
    assert coevo("import", str(first), "--db", str(imported)).returncode == 0
    again = export(imported, tmp_path / "two", fresh=True)
    assert again.name == first.name
    assert contents(again) == contents(first)
    clone = tmp_path / "elsewhere"
    subprocess.run(["git", "clone", "-q", str(mine.repo), str(clone)], check=True)
    for name in ("gold", "noop"):
        scored = coevo("score", "--agent", name, "--backend", "local", "--db", str(imported), "--timeout",
                       "120", "--reruns", "1", "--repo-dir", f"{mine.repo.name}={clone}")  # fmt: skip
        assert scored.returncode == 0, scored.stderr
        assert scored.stdout.startswith(f"{name}: 2 tasks scored"), scored.stdout
    expected = results(db)
    assert len(expected) == 4
    assert results(imported) == expected
