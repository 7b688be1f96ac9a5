"""Candidates that cannot become tasks cost nothing by default: ``coevo curate`` takes inserted and
updated tests; ``--kinds all`` later curates the unchanged tests of changed code of the same pairs
(negative records), keeping what was curated before."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from sqlmodel import select

from curation import funnel
from tasks import CuratedPair, Task, open_store
from tests import cli
from tests.curation.small import mined_and_curated, records
from tests.gitrepo import GitRepo

ADDER_TEST = "from calc.adder import add{more}\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
ADD3_TEST = "\n\ndef test_add3():\n    assert add3(1, 2, 3) == 6\n"


def _coevo(db: Path, work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return cli.coevo(*args, "--db", str(db), env={**os.environ, "COEVO_WORK": str(work)})


def test_unchanged_tests_are_curated_only_when_asked_for_and_nothing_is_curated_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = GitRepo(tmp_path / "calc")
    repo.commit("initial", "2024-06-01T09:00:00+00:00", {
        "requirements.txt": "# pytest only\n", "calc/__init__.py": "",
        "calc/adder.py": "def add(a, b):\n    return a + b\n",
        "tests/test_adder.py": ADDER_TEST.format(more=""),
    })  # fmt: skip
    # add changes under test_add, which stays as it was; test_add3 is new.
    repo.commit("add3", "2024-06-02T09:00:00+00:00", {
        "calc/adder.py": "def add(a, b):\n    return sum((a, b))\n\n\n"
                         "def add3(a, b, c):\n    return a + b + c\n",
        "tests/test_adder.py": ADDER_TEST.format(more=", add3") + ADD3_TEST,
    })  # fmt: skip
    db = mined_and_curated(repo, tmp_path, monkeypatch, "python")  # the default kinds
    first = records(db)
    assert {method: str(r.label) for method, r in first.items()} == {"test_add3": "test_generation"}
    overall, _ = funnel(open_store(db))
    assert overall.candidates == {"inserted": 1, "unchanged_with_changed_dependencies": 1}
    assert (overall.pairs_curated, overall.records) == (1, 1)
    assert overall.not_curated == {"unchanged_with_changed_dependencies": 1}
    assert overall.drops == {}  # not curated is no drop
    shown = _coevo(db, tmp_path / "work", "funnel")
    row = next(line for line in shown.stdout.splitlines() if "not curated" in line)
    assert "1 unchanged_with_changed_dependencies" in row, shown.stdout
    with open_store(db).session() as s:
        (task,) = s.exec(select(Task)).all()

    curated = _coevo(
        db, tmp_path / "work", "curate", "--kinds", "all", "--reruns", "1", "--backend", "local", "--json"
    )
    assert curated.returncode == 0, curated.stderr
    assert json.loads(curated.stdout)["labels"] == {"test_update_negative": 1}
    now = records(db)
    assert str(now["test_add"].label) == "test_update_negative"
    assert now["test_add3"].id == first["test_add3"].id  # kept, not curated again
    overall, _ = funnel(open_store(db))
    assert (overall.pairs_curated, overall.records, overall.not_curated) == (1, 2, {})
    with open_store(db).session() as s:
        assert [t.id for t in s.exec(select(Task)).all()] == [task.id]
        assert len(s.exec(select(CuratedPair)).all()) == 1

    again = _coevo(db, tmp_path / "work", "curate", "--kinds", "all", "--backend", "local", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["labels"] == {}, again.stdout
    bad = _coevo(db, tmp_path / "work", "curate", "--kinds", "inserted,unchanged")
    assert bad.returncode == 1 and bad.stderr.splitlines() == [
        "error: --kinds 'inserted,unchanged': unchanged is not a change kind; use 'all' or some of "
        "inserted, updated, unchanged_with_changed_dependencies"
    ]
