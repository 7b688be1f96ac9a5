"""`coevo tasks` and `coevo show-task` on a store curated from a real history, as a user runs them."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlmodel import select

from tasks import AgentRun, Candidate, Task, TaskStatus, open_store
from tests import cli
from tests.curation.small import curated_on_host
from tests.gitrepo import GitRepo

HOSTILE = "\x1b[2J\u202e"
"""A terminal escape (clear the screen) and a right-to-left override, as a repository may hold."""


@dataclass
class Curated:
    db: Path
    repo: GitRepo
    ids: dict[str, str]
    """Task id by its test method."""


SQUARE = "def square(side):\n    return side * side\n"
RECTANGLE = "\n\ndef rectangle(width, height):\n    return width * height\n"
STRICT_RECTANGLE = RECTANGLE.replace(
    "    return", "    if width < 0:\n        raise ValueError(width)\n    return"
)
TRIANGLE = "\n\ndef triangle(base, height):\n    return base * height / 2\n"
CIRCLE = "\n\ndef circle(radius):\n    return 3 * radius * radius\n"


def _tests(names: str, rectangle: str, *more: str) -> str:
    head = "import pytest\n\n" if "pytest" in rectangle else ""
    square = "\n\ndef test_square():\n    assert square(3) == 9\n"
    return f"{head}from shapes import {names}\n{square}\n\ndef test_rectangle():\n{rectangle}" + "".join(more)


def history(path: Path) -> GitRepo:
    """Three tasks, one commit each (a new function, a changed one, a new one whose test and
    message carry ``HOSTILE``), all on one day so that every revision installs as of one date."""
    repo = GitRepo(path)
    lax = "    assert rectangle(-2, 3) == -6\n"
    strict = "    with pytest.raises(ValueError):\n        rectangle(-2, 3)\n"
    test_triangle = "\n\ndef test_triangle():\n    assert triangle(4, 3) == 6\n"
    test_circle = f"\n\ndef test_circle():\n    # {HOSTILE}\n    assert circle(2) == 12\n"
    commits = [
        ("Squares and rectangles", SQUARE + RECTANGLE, _tests("rectangle, square", lax)),
        ("Add triangles", SQUARE + RECTANGLE + TRIANGLE,
         _tests("rectangle, square, triangle", lax, test_triangle)),
        ("Reject negative sides", SQUARE + STRICT_RECTANGLE + TRIANGLE,
         _tests("rectangle, square, triangle", strict, test_triangle)),
        (f"Add circles {HOSTILE}red", SQUARE + STRICT_RECTANGLE + TRIANGLE + CIRCLE,
         _tests("circle, rectangle, square, triangle", strict, test_triangle, test_circle)),
    ]  # fmt: skip
    for hour, (message, shapes, tests) in enumerate(commits, start=8):
        files = {
            "shapes.py": shapes,
            "tests/test_shapes.py": tests,
            "requirements.txt": "# pytest is enough\n",
        }
        repo.commit(message, f"2026-09-01T{hour:02}:00:00+00:00", files)
    return repo


@pytest.fixture(scope="module")
def curated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Curated]:
    """:func:`history` mined and curated on the host."""
    root = tmp_path_factory.mktemp("browse")
    repo = history(root / "shapes")
    db = curated_on_host(str(repo.path), root, reruns=2)
    with open_store(db).session() as s:
        ids = {t.test_methods[0]: t.id for t in s.exec(select(Task)).all()}
    assert set(ids) == {"test_triangle", "test_rectangle", "test_circle"}
    yield Curated(db, repo, ids)


def coevo(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return cli.coevo(*args, env={**os.environ, **(env or {})})


def test_tasks_lists_newest_first_then_counts(curated: Curated, tmp_path: Path) -> None:
    db = str(curated.db)
    listing = coevo("tasks", "--db", db)
    assert listing.returncode == 0, listing.stderr
    header, *rows, counts = listing.stdout.splitlines()
    assert header.split() == ["id", "repo", "track", "date", "status", "test", "file", "methods", "focal"]
    newest_first = [
        ("test_circle", "generation"),
        ("test_rectangle", "update"),
        ("test_triangle", "generation"),
    ]
    assert [row.split()[:6] for row in rows] == [
        [curated.ids[method], "shapes", track, "2026-09-01", "active", "tests/test_shapes.py"]
        for method, track in newest_first
    ]
    assert rows[0].split()[6:] == ["test_circle", "circle", "[coverage]"]
    assert counts == "3 tasks: 2 generation, 1 update; 3 python"

    def ids(*options: str) -> list[str]:
        result = coevo("tasks", "--db", db, "--json", *options)
        assert result.returncode == 0, result.stderr
        return [task["id"] for task in json.loads(result.stdout)["tasks"]]

    assert ids("--track", "update") == [curated.ids["test_rectangle"]]
    # --since keeps a task dated on it, --until leaves it out (the task's date is its rev2's).
    assert ids("--since", "2026-09-01T10:00:00+00:00") == [
        curated.ids["test_circle"],
        curated.ids["test_rectangle"],
    ]
    assert ids("--until", "2026-09-01T10:00:00+00:00") == [curated.ids["test_triangle"]]
    assert ids("--since", "2026-09-01T05:00:00-05:00", "--until", "2026-09-01T11:00:00+00:00") == [
        curated.ids["test_rectangle"]
    ]
    assert ids("--language", "java") == []
    assert ids("--repo", "shapes", "--language", "python") == [curated.ids[m] for m, _ in newest_first]
    assert coevo("tasks", "--db", db, "--language", "java").stdout == "0 tasks: none\n"
    limited = coevo("tasks", "--db", db, "--limit", "1").stdout.splitlines()
    assert len(limited) == 3 and limited[-1] == (
        "3 tasks: 2 generation, 1 update; 3 python — showing 1, 2 left out (--limit 0 shows all)"
    )

    data = json.loads(coevo("tasks", "--db", db, "--json").stdout)
    assert (data["total"], data["by_track"], data["by_repository"]) == (
        3,
        {"generation": 2, "update": 1},
        {"shapes": 3},
    )
    circle = data["tasks"][0]
    assert list(circle)[:3] == ["id", "track", "language"]  # full rows, as the model declares them
    assert (
        "+def test_circle():" in circle["gold_patch"]
        and circle["matrix"]["test_circle"]["NN"]["outcome"] == "pass"
    )

    copy = tmp_path / "copy.db"
    with sqlite3.connect(curated.db) as source, sqlite3.connect(copy) as target:
        source.backup(target)  # a live WAL store, its last writes included
    source.close()
    target.close()
    with open_store(copy).session() as s:
        task = s.get(Task, curated.ids["test_triangle"])
        assert task is not None
        task.status = TaskStatus.QUARANTINED
        s.add(task)
    quarantined = coevo("tasks", "--db", str(copy), "--status", "quarantined").stdout.splitlines()
    assert [row.split()[0] for row in quarantined[1:-1]] == [curated.ids["test_triangle"]]
    assert quarantined[-1] == "1 tasks: 1 generation; 1 python; 1 quarantined"
    everything = coevo("tasks", "--db", str(copy)).stdout.splitlines()[-1]
    assert everything == "3 tasks: 2 generation, 1 update; 3 python; 2 active, 1 quarantined"


def test_tasks_errors_are_one_line(curated: Curated, tmp_path: Path) -> None:
    unknown = coevo("tasks", "--db", str(curated.db), "--repo", "nope")
    assert (unknown.returncode, unknown.stderr) == (1, "error: no repository named 'nope' (known: shapes)\n")
    bad = coevo("tasks", "--db", str(curated.db), "--since", "last week")
    assert bad.returncode == 1
    assert bad.stderr.splitlines() == [
        "error: --since 'last week' is not a date; use YYYY-MM-DD or an ISO 8601 time"
    ]
    missing = coevo("tasks", "--db", str(tmp_path / "none.db"))
    assert missing.returncode == 1 and len(missing.stderr.splitlines()) == 1
    assert not (tmp_path / "none.db").exists()  # a read command creates no store
    wrong = coevo("tasks", "--db", str(curated.db), "--track", "both")
    assert wrong.returncode == 2 and len(wrong.stderr.splitlines()) == 1


def test_show_task_shows_what_a_reviewer_needs_escaped(curated: Curated) -> None:
    circle = curated.ids["test_circle"]
    result = coevo("show-task", circle, "--db", str(curated.db))
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "\x1b" not in text and "\u202e" not in text  # nothing the repository wrote drives the terminal
    lines = text.splitlines()
    rev1, rev2 = curated.repo.git("rev-parse", "HEAD~1"), curated.repo.git("rev-parse", "HEAD")
    root = curated.repo.git("rev-list", "--max-parents=0", "HEAD")
    assert lines[:9] == [
        f"task         {circle} (generation, python, active)",
        f"repository   shapes [root:{root}] from {curated.repo.path}",
        "date         2026-09-01T11:00:00+00:00 (rev2's commit date)",
        f"rev1         {rev1} 2026-09-01T10:00:00+00:00",
        f"rev2         {rev2} 2026-09-01T11:00:00+00:00",
        "rev2 commit  Ada Lovelace <ada@example.org>: Add circles \\x1b[2J\\u202ered",
        f"commits      {rev2[:12]}",
        "test file    tests/test_shapes.py",
        lines[8],
    ]
    assert lines[8].startswith("mined        20")
    assert "  test_circle  tests/test_shapes.py::test_circle  test_generation: NO compile_error" in lines
    assert "gold helpers none" in lines
    (focal,) = [line for line in lines if line.startswith("  shapes.py  circle  ")]
    assert focal.endswith("method added, lines 15-16, coverage")
    matrix = lines[lines.index("  test_circle") + 1 : lines.index("  test_circle") + 5]
    assert matrix[:2] == ["    OO  not run", "    ON  not run"]
    assert matrix[2].startswith(
        "    NO  compile_error  runs: compile_error, compile_error  ImportError: cannot import"
    )
    assert matrix[3].split() == ["NN", "pass", "runs:", "pass,", "pass"]
    assert "  python 3.13, pip" in lines or any(line.startswith("  python 3.") for line in lines)
    assert any(line.startswith("  pins: ") and "pytest==" in line for line in lines)
    assert "image        none (built on the host)" in lines
    assert any(line.startswith("  rev1  python 3.") for line in lines)
    assert any(line.startswith("  rev2  installed (") for line in lines)
    gold = text.index("--- gold test diff (tests/test_shapes.py) ---")
    production = text.index("--- production diff ---")
    assert gold < production
    assert "+def test_circle():\n+    # \\x1b[2J\\u202e\n" in text[gold:production]
    assert "+def circle(radius):\n" in text[production:]

    update = coevo("show-task", curated.ids["test_rectangle"], "--db", str(curated.db)).stdout.splitlines()
    cells = update[update.index("  test_rectangle") + 1 : update.index("  test_rectangle") + 5]
    assert [cell.split()[:2] for cell in cells] == [
        ["OO", "pass"],
        ["ON", "fail"],
        ["NO", "fail"],
        ["NN", "pass"],
    ]

    data = json.loads(coevo("show-task", circle, "--db", str(curated.db), "--json").stdout)
    assert data["id"] == circle and data["repository_identity"] == f"root:{root}"
    assert data["records"]["test_circle"]["label"] == "test_generation"
    assert data["pair"]["rev2_message"].startswith(f"Add circles {HOSTILE}")  # JSON keeps it exact
    assert data["matrix"]["test_circle"]["NO"]["runs"] == ["compile_error", "compile_error"]


def test_show_task_colours_diffs_only_on_a_terminal(curated: Curated) -> None:
    circle = curated.ids["test_circle"]
    coloured = coevo("show-task", circle, "--db", str(curated.db), env={"FORCE_COLOR": "1"}).stdout
    assert "\x1b[32m+def circle(radius):" in coloured  # green, as on a terminal
    assert "\x1b[2J" not in coloured and "\\x1b[2J" in coloured  # the repository's own escape still shown
    plain = coevo("show-task", circle, "--db", str(curated.db)).stdout
    assert "\x1b[" not in plain


def test_show_task_takes_a_unique_prefix_and_names_an_unknown_id(curated: Curated) -> None:
    circle = curated.ids["test_circle"]
    assert coevo("show-task", circle[:8], "--db", str(curated.db)).stdout.startswith(
        f"task         {circle} "
    )
    unknown = coevo("show-task", "gen-nope", "--db", str(curated.db))
    assert (unknown.returncode, unknown.stdout) == (1, "")
    assert unknown.stderr == f"error: no task 'gen-nope' in {curated.db}: coevo tasks lists them\n"
    several = coevo("show-task", "gen-", "--db", str(curated.db))
    assert several.returncode == 1
    (line,) = several.stderr.splitlines()
    assert line.startswith("error: 'gen-' starts several task ids (") and line.endswith("): give more of it")


def test_names_a_repository_or_agent_wrote_are_shown_escaped(curated: Curated, tmp_path: Path) -> None:
    """A Java method name may hold format characters (``Character.isIdentifierIgnorable``), a
    file name escapes: ``candidates`` and ``show-run`` show them escaped, like ``show-task``."""
    db = tmp_path / "copy.db"
    with sqlite3.connect(curated.db) as source, sqlite3.connect(db) as target:
        source.backup(target)
    hostile = f"test_triangle{HOSTILE}"
    with open_store(db).session() as s:
        candidate = s.exec(select(Candidate).where(Candidate.test_method == "test_triangle")).first()
        assert candidate is not None
        candidate.test_method = hostile
        s.add(candidate)
        outcome = {"outcome": "passed", "success": True, "strict": True, "message": f"said {HOSTILE}"}
        s.add(AgentRun(task_id=curated.ids["test_triangle"], agent="gold", outcomes={hostile: outcome}))
        s.commit()
    escaped = "test_triangle\\x1b[2J\\u202e"
    for command in (("candidates",), ("show-run", "gold", curated.ids["test_triangle"])):
        shown = coevo(*command, "--db", str(db))
        assert shown.returncode == 0, shown.stderr
        assert escaped in shown.stdout, shown.stdout
        assert "\x1b" not in shown.stdout and "\u202e" not in shown.stdout
