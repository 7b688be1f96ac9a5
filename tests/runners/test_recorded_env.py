"""A task carries its resolved environment: scoring rebuilds it from the recorded versions.

The fixture's dependency lives in a folder of wheels the test writes (``PIP_FIND_LINKS``). A
folder index has no upload times, so pip's ``--uploaded-prior-to`` filters nothing there: a
release added after curation is taken by any build that resolves afresh, dated or not. Only
the versions recorded with the task keep the gold passing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import select

import miner
from coevo.cli import main
from curation import CurateRequest, curate
from runners.python.venvs import MARKER
from runners.scoring.scorer import leaderboard
from tasks import CuratedPair, Task, Track, open_store
from tests.gitrepo import GitRepo
from tests.runners.python_projects import (
    HALVES_1,
    HALVES_2,
    HALVES_DEPENDENCY,
    SPLIT_TEST_V1,
    SPLIT_TEST_V2,
    SPLIT_V1,
    SPLIT_V2,
    split_history,
    write_wheel,
)


@pytest.mark.slow
def test_a_release_after_curation_does_not_change_the_score(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheels = tmp_path / "wheels"
    write_wheel(wheels, "1.0", HALVES_1)
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    monkeypatch.setenv("COEVO_WORK", str(tmp_path / "curation-work"))
    monkeypatch.setenv("COEVO_VENVS", str(tmp_path / "curation-venvs"))
    repo = split_history(tmp_path / "split")
    db = tmp_path / "coevo.db"
    miner.mine(open_store(db), miner.MineRequest(location=str(repo.path)))
    assert not curate(open_store(db), CurateRequest(backend="local", workers=1)).errors
    with open_store(db).session() as session:
        task = session.exec(select(Task)).one()
        pair = session.exec(select(CuratedPair)).one()
    assert (task.track, task.test_methods) == (Track.GENERATION, ["test_quarter"])
    assert task.env_spec is not None
    pins = task.env_spec["pins"]
    assert f"{HALVES_DEPENDENCY}==1.0" in pins
    assert any(pin.startswith("python==3.12.") for pin in pins)  # May 2024's newest Python
    assert any(pin.startswith("pytest==") for pin in pins) and "split" not in str(pins)
    assert pair.build_records is not None
    rev2 = {choice["name"]: choice for choice in pair.build_records["rev2"]}
    assert rev2["dependencies"]["value"] == "as of 2024-05-02T00:00:00Z"
    assert rev2["python"]["value"].startswith("3.12.")

    # Scored where it was curated: the venvs curation built hold exactly the pins, no new one.
    venvs = sorted((tmp_path / "curation-venvs").glob(f"*/{MARKER}"))
    assert main(["score", "--agent", "gold", "--backend", "local", "--db", str(db)]) == 0
    assert sorted((tmp_path / "curation-venvs").glob(f"*/{MARKER}")) == venvs

    # Later, elsewhere (no built revision, no venv to reuse), the index has a breaking release.
    write_wheel(wheels, "2.0", HALVES_2)
    monkeypatch.setenv("COEVO_WORK", str(tmp_path / "scoring-work"))
    monkeypatch.setenv("COEVO_VENVS", str(tmp_path / "scoring-venvs"))
    assert main(["score", "--agent", "gold", "--redo", "--backend", "local", "--db", str(db)]) == 0
    [gold] = leaderboard(open_store(db))
    assert (gold.agent, gold.pass_rate, gold.success_rate, gold.harness_fail_rate) == (
        "gold",
        100.0,
        100.0,
        0.0,
    )
    # Built again from the pins (not reused): it holds 1.0, not the 2.0 the index now offers.
    markers = [p.read_text() for p in (tmp_path / "scoring-venvs").glob("*/coevo-ready.json")]
    assert markers and all(f'"{HALVES_DEPENDENCY}==1.0"' in marker for marker in markers)
    records = [json.loads(p.read_text()) for p in (tmp_path / "scoring-work").glob("*/*/build.json")]
    assert len(records) == 2  # rev2, and rev1 for the generation task's old-code cell
    for record in records:
        chosen = {choice["name"]: choice for choice in record["choices"]}
        assert chosen["dependencies"]["value"] == "as recorded"
        assert chosen["python"]["why"].startswith("python 3.12 (host): recorded with the task (python 3.12.")


@pytest.mark.slow
def test_each_revision_is_rebuilt_from_its_own_recorded_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rev2 moves to the dependency's 2.0 (which renamed ``half``): scoring rebuilds rev1 from what
    rev1 resolved (1.0), not from rev2's versions, which its requirements refuse."""
    wheels = tmp_path / "wheels"
    write_wheel(wheels, "1.0", HALVES_1)
    write_wheel(wheels, "2.0", HALVES_2)
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    monkeypatch.setenv("COEVO_WORK", str(tmp_path / "curation-work"))
    monkeypatch.setenv("COEVO_VENVS", str(tmp_path / "curation-venvs"))
    repo = GitRepo(tmp_path / "split")
    repo.commit("halve", "2024-05-01T10:00:00+00:00", {
        "requirements.txt": f"{HALVES_DEPENDENCY}==1.0\n",
        "split.py": SPLIT_V1,
        "tests/test_split.py": SPLIT_TEST_V1,
    })  # fmt: skip
    repo.commit("quarter on 2.0", "2024-05-02T10:00:00+00:00", {
        "requirements.txt": f"{HALVES_DEPENDENCY}==2.0\n",
        "split.py": SPLIT_V2.replace("half", "halved"),
        "tests/test_split.py": SPLIT_TEST_V2,
    })  # fmt: skip
    db = tmp_path / "coevo.db"
    miner.mine(open_store(db), miner.MineRequest(location=str(repo.path)))
    assert not curate(open_store(db), CurateRequest(backend="local", workers=1)).errors
    with open_store(db).session() as session:
        task = session.exec(select(Task)).one()
    assert task.installed is not None
    assert f"{HALVES_DEPENDENCY}==1.0" in task.installed["rev1"]
    assert f"{HALVES_DEPENDENCY}==2.0" in task.installed["rev2"]

    # Elsewhere: nothing built to reuse, both revisions rebuilt from their records.
    monkeypatch.setenv("COEVO_WORK", str(tmp_path / "scoring-work"))
    monkeypatch.setenv("COEVO_VENVS", str(tmp_path / "scoring-venvs"))
    assert main(["score", "--agent", "gold", "--backend", "local", "--db", str(db)]) == 0
    [gold] = leaderboard(open_store(db))
    assert (gold.success_rate, gold.harness_fail_rate) == (100.0, 0.0)
