"""Pairs found both ways: tests committed before their code (test-first), and a test-only commit
whose walk back meets a commit that changed code and other tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import select

from curation import CurateRequest, curate
from miner import MineRequest, mine
from tasks import Candidate, CurationRecord, MinedCommit, RevisionPair, Task, open_store
from tests.gitrepo import GitRepo

CORE = "calc/core.py"
TEST = "tests/test_core.py"
ADD = "def add(a, b):\n    return a + b\n"
SUB = "\n\ndef sub(a, b):\n    return a - b\n"
MUL = "\n\ndef mul(a, b):\n    return a * b\n"
NEG = "\n\ndef neg(a):\n    return -a\n"
T_ADD = "from calc.core import *  # noqa\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
T_SUB = "\n\ndef test_sub():\n    assert sub(3, 2) == 1\n"
T_NEG = "\n\ndef test_neg():\n    assert neg(2) == -2\n"
T_OTHER = "from calc.core import neg\n\n\ndef test_neg_twice():\n    assert neg(neg(2)) == 2\n"


def _history(path: Path) -> GitRepo:
    repo = GitRepo(path)
    repo.commit("initial", "2024-06-01T09:00:00+00:00", {
        "requirements.txt": "# pytest only\n", "calc/__init__.py": "", CORE: ADD, TEST: T_ADD,
    })  # fmt: skip
    repo.commit("tests first", "2024-06-02T10:00:00+00:00", {TEST: T_ADD + T_SUB})
    repo.commit("code 16 s later", "2024-06-02T10:00:16+00:00", {CORE: ADD + SUB})
    repo.commit("docs", "2024-06-02T10:05:00+00:00", {"README.md": "# calc\n"})
    repo.commit("more code", "2024-06-02T10:10:00+00:00", {CORE: ADD + SUB + MUL})
    repo.commit("code and its tests", "2024-06-03T09:00:00+00:00", {
        CORE: ADD + SUB + MUL + NEG, TEST: T_ADD + T_SUB + T_NEG,
    })  # fmt: skip
    repo.commit("other tests of it", "2024-06-03T09:30:00+00:00", {"tests/test_other.py": T_OTHER})
    return repo


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> tuple[GitRepo, Path]:
    root = tmp_path_factory.mktemp("both-ways")
    repo = _history(root / "calc")
    db = root / "coevo.db"
    assert mine(open_store(db), MineRequest(location=str(repo.path), language="python")).status == "completed"
    return repo, db


def test_tests_committed_first_pair_with_the_code_that_follows(mined: tuple[GitRepo, Path]) -> None:
    repo, db = mined
    label = {sha: name for name, sha in repo.shas.items()}
    with open_store(db).session() as s:
        outcomes = {label[m.sha]: m.outcome for m in s.exec(select(MinedCommit)).all()}
        pairs = {label[p.rev2]: p for p in s.exec(select(RevisionPair)).all()}
        candidates = {
            label[pairs_rev2]: sorted(f"{c.test_file}::{c.test_method}" for c in group)
            for pairs_rev2, group in _by_pair(s).items()
        }
    assert outcomes == {
        "initial": "root_commit",
        "tests first": "paired",
        "code and its tests": "paired",
        "other tests of it": "paired",
    }
    first = pairs["more code"]
    assert first.test_first and first.rev1 == repo.shas["initial"]
    assert [label[c] for c in first.commits] == ["tests first", "code 16 s later", "docs", "more code"]
    assert first.span_seconds == 10 * 60
    assert candidates["more code"] == [f"{TEST}::test_sub"]
    # The walk back from the test-only commit crossed the commit that changed code and other
    # tests: its rev1 is before that commit, and only its own test file gives candidates.
    crossed = pairs["other tests of it"]
    assert not crossed.test_first and crossed.rev1 == repo.shas["more code"]
    assert candidates["other tests of it"] == ["tests/test_other.py::test_neg_twice"]
    assert candidates["code and its tests"] == [f"{TEST}::test_neg"]


def _by_pair(session: object) -> dict[str, list[Candidate]]:
    found: dict[str, list[Candidate]] = {}
    for candidate, pair in session.exec(  # type: ignore[attr-defined]
        select(Candidate, RevisionPair).join(RevisionPair, RevisionPair.id == Candidate.pair_id)  # type: ignore[arg-type]
    ).all():
        found.setdefault(pair.rev2, []).append(candidate)
    return found


def test_a_test_first_pair_gives_a_generation_task(
    mined: tuple[GitRepo, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    repo, db = mined
    monkeypatch.setenv("COEVO_WORK", str(tmp_path / "work"))
    report = curate(open_store(db), CurateRequest(backend="local", test_timeout=30, reruns=1))
    assert report.errors == {}
    with open_store(db).session() as s:
        tasks = {(t.rev2, t.test_file, tuple(t.test_methods)): t for t in s.exec(select(Task)).all()}
        labels = {r.detail.splitlines()[0] for r in s.exec(select(CurationRecord)).all()}
    assert (repo.shas["more code"], TEST, ("test_sub",)) in tasks, labels
    task = tasks[(repo.shas["more code"], TEST, ("test_sub",))]
    assert task.track == "generation" and task.rev1 == repo.shas["initial"]
    assert (repo.shas["other tests of it"], "tests/test_other.py", ("test_neg_twice",)) in tasks
