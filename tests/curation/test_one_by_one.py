"""When a new test file does not import on the old code, each method is judged on its own.

A new file holds a method that uses a new function and one that uses only the old API; the
import of the new function fails the whole module on the old code. Cut down to each method and
what it uses, the first still fails there (a task) and the second passes (no task). An agent
whose method passes on the old code gets no success, whatever else its file imports.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from sqlmodel import select

from curation import CurateRequest, curate
from miner import MineRequest, mine
from runners.agents import Agent
from runners.pruning import alone
from runners.scoring import ScoreOptions, score
from tasks import AgentRun, Candidate, CurationRecord, Task, open_store
from tests.gitrepo import GitRepo

NEW_FILE = (
    "from calc.squarer import square, cube\n\n\n"
    "def expected_cube(a):\n    return a * square(a)\n\n\n"
    "def test_square_again():\n    assert square(3) == 9\n\n\n"
    "def test_cube():\n    assert cube(2) == expected_cube(2)\n"
)
CHEAT = """
import pathlib, sys
path = pathlib.Path(sys.argv[1])
path.parent.mkdir(parents=True, exist_ok=True)
# Imports the new function, but its method checks only what the old code already does.
path.write_text(
    "from calc.squarer import square, cube\\n\\n\\ndef test_cube():\\n    assert square(2) == 4\\n"
)
"""


def test_a_method_is_judged_alone_when_its_file_does_not_import_on_the_old_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COEVO_WORK", str(tmp_path / "work"))
    monkeypatch.setenv("COEVO_VENVS", str(tmp_path / "venvs"))
    repo = GitRepo(tmp_path / "calc")
    repo.commit("initial", "2024-06-01T09:00:00+00:00", {
        "requirements.txt": "# pytest only\n", "calc/__init__.py": "",
        "calc/squarer.py": "def square(a):\n    return a * a\n",
    })  # fmt: skip
    repo.commit("cube", "2024-06-02T09:00:00+00:00", {
        "calc/squarer.py": "def square(a):\n    return a**2\n\n\ndef cube(a):\n    return a * a * a\n",
        "tests/test_squarer.py": NEW_FILE,
    })  # fmt: skip
    db = tmp_path / "coevo.db"
    assert mine(open_store(db), MineRequest(location=str(repo.path), language="python")).status == "completed"
    report = curate(open_store(db), CurateRequest(backend="local", test_timeout=30, reruns=1))
    assert report.errors == {}
    with open_store(db).session() as s:
        labels = {
            c.test_method: (r.label, r.drop_reason, r.cells["NO"]["outcome"])
            for r, c in s.exec(
                select(CurationRecord, Candidate).join(Candidate, Candidate.id == CurationRecord.candidate_id)  # type: ignore[arg-type]
            ).all()
        }
        (task,) = s.exec(select(Task)).all()
    # test_square_again needs only square: cut down, it imports and passes on the old code.
    assert labels["test_square_again"][0] == "test_generation_pass_old"
    assert labels["test_cube"][0] == "test_generation" and labels["test_cube"][2] == "compile_error"
    assert task.test_methods == ["test_cube"]

    (tmp_path / "cheat.py").write_text(CHEAT)
    cheat = Agent("cheat", f"{sys.executable} {tmp_path / 'cheat.py'} {{workspace}}/{{test_file}}")
    assert score(open_store(db), cheat, options=ScoreOptions("local", 60, trust_host=True)).errors == {}
    with open_store(db).session() as s:
        run = s.exec(select(AgentRun).where(AgentRun.agent == "cheat")).one()
    outcome = run.outcomes["test_cube"]
    assert (outcome["new"], outcome["old"], outcome["success"]) == ("pass", "pass", False), outcome


def test_a_cut_keeps_what_the_method_uses_and_line_numbers() -> None:
    cut = alone(NEW_FILE.encode(), "python", "test_square_again")
    assert cut is not None
    text = cut.decode()
    assert "from calc.squarer import square\n" in text and "cube" not in text
    assert "def expected_cube" not in text  # test_square_again does not use it
    assert len(text.splitlines()) == len(NEW_FILE.splitlines())
    cut = alone(NEW_FILE.encode(), "python", "test_cube")
    assert cut is not None and "def expected_cube" in cut.decode() and "import square, cube" in cut.decode()
