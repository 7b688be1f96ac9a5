"""Stores to render sites from: synthetic tasks and agent runs written as rows (the site reads
rows; the rows' origin is not what these tests try), with hostile text in every field a
repository or an agent controls."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import insert

from tasks import (
    AgentRun,
    Candidate,
    CuratedPair,
    CurationRecord,
    Label,
    Repository,
    RevisionPair,
    Store,
    Task,
    TaskStatus,
    TestChangeKind,
    Track,
    open_store,
)

PAYLOADS = (
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(2)>',
    "</script><script>alert(3)</script>",
)
"""What a hostile repository writes wherever it can; a page shows it as text or it failed."""
HOSTILE = " ".join(PAYLOADS)
AGENTS = (
    ("early-model", "model-a", datetime(2024, 6, 1, tzinfo=UTC)),
    ("late-model", "model-b", datetime(2025, 9, 1, tzinfo=UTC)),
    ("no-cutoff", "model-c", None),
)
START = datetime(2024, 1, 3, 9, 30, tzinfo=UTC)

_DIFF = (
    "--- a/src/calc.py\n+++ b/src/calc.py\n@@ -1,2 +1,4 @@\n def add(a, b):\n-    return a + b\n"
    "+    if a is None:\n+        raise TypeError('a')\n+    return a + b\n"
)
_GOLD = "--- a/tests/test_calc.py\n+++ b/tests/test_calc.py\n@@ -1 +1,3 @@\n+def test_add_none():\n+    ...\n"


def synthetic_store(db: Path, tasks: int, seed: int = 7, runs: bool = True) -> Store:
    """``tasks`` tasks of both tracks and languages in three repositories over about 30 months
    (the first one hostile: its name, message, file, methods and diffs hold :data:`PAYLOADS`),
    one retired, and each agent of :data:`AGENTS` scored on every third."""
    rng = random.Random(seed)
    store = open_store(db)
    with store.session() as session:
        repos = [
            Repository(name=f"evil{PAYLOADS[1]}", location="/nowhere/evil", path="", identity="root:1", language="python"),
            Repository(name="calc", location="https://github.com/example/calc.git", path="", identity="github.com/example/calc", language="python"),
            Repository(name="lists", location="/nowhere/lists", path="", identity="root:3", language="java"),
        ]  # fmt: skip
        session.add_all(repos)
        session.flush()
        pair_rows = []
        for i, repo in enumerate(repos):
            assert repo.id is not None
            pair = RevisionPair(
                repository_id=repo.id, rev1=f"{i}" * 40, rev2=f"{i + 5}" * 40, rev1_date=START, rev2_date=START, rev2_author_date=START,
                rev2_author=f"Mallory {PAYLOADS[0]}" if i == 0 else "Ada",
                rev2_message=f"Fix {HOSTILE}\n\nbody {PAYLOADS[2]}" if i == 0 else "Add a check",
                commits=[f"{i + 5}" * 40], production_diff=_DIFF,
            )  # fmt: skip
            session.add(pair)
            pair_rows.append(pair)
        session.flush()
        for pair, repo in zip(pair_rows, repos, strict=True):
            assert pair.id is not None and repo.id is not None
            session.add(CuratedPair(pair_id=pair.id, repository_id=repo.id, rev1_build="ok", rev2_build="ok"))
            candidate = Candidate(
                repository_id=repo.id, pair_id=pair.id, test_file="tests/test_calc.py",
                test_method=f"test_{PAYLOADS[0]}" if repo is repos[0] else "test_add_none",
                change_kind=TestChangeKind.INSERTED, new_source="def test(): ...",
            )  # fmt: skip
            session.add(candidate)
            session.flush()
            assert candidate.id is not None
            session.add(
                CurationRecord(
                    candidate_id=candidate.id, pair_id=pair.id, repository_id=repo.id,
                    label=Label.TEST_GENERATION, detail=f"NO fail: {PAYLOADS[2]}",
                    task_id="gen-0000000000000000" if repo is repos[0] else None,
                )
            )  # fmt: skip
        pairs = [(p.id, r.id, r.name, r.language) for p, r in zip(pair_rows, repos, strict=True)]
    rows, run_rows = [], []
    for i in range(tasks):
        pair_id, repo_id, repo_name, language = pairs[i % 3]
        hostile = i % 3 == 0
        track = Track.GENERATION if rng.random() < 0.6 else Track.UPDATE
        date = START + timedelta(hours=int(i * 30 * 30 * 24 / max(tasks, 1)), minutes=rng.randrange(60))
        method = f"test_{PAYLOADS[0]}" if hostile else f"test_case_{i}"
        rows.append(
            {
                "id": f"{'gen' if track == Track.GENERATION else 'upd'}-{i:016x}", "track": track.name,
                "language": language, "repository_id": repo_id, "repository": repo_name, "pair_id": pair_id,
                "rev1": f"{i:040x}", "rev2": f"{i + 1:040x}", "rev1_date": date - timedelta(days=1),
                "rev2_date": date,
                "test_file": f"tests/test_{PAYLOADS[1]}.py" if hostile else f"tests/test_mod{i % 40}.py",
                "old_test_file": None, "test_methods": [method, f"test_more_{i}"],
                "test_ids": [f"tests/test_mod.py::{method}"], "gold_helpers": [],
                "focal_methods": [
                    {"file": "src/calc.py", "method": f"add{'<b>' if hostile else ''}", "kind": "modified",
                     "unit": "method", "start": 1, "end": 4, "provenance": "coverage"}
                ],
                "gold_patch": _GOLD + (f"+    assert s == '{HOSTILE}'\n" if hostile else ""),
                "production_diff": _DIFF + (f"+# {HOSTILE}\n" if hostile else ""),
                "env_spec": None, "image": None, "build_records": None, "installed": None,
                "matrix": {
                    method: {
                        "NO": {"outcome": "fail", "runs": ["fail", "fail"], "message": f"AssertionError: {PAYLOADS[2]}"},
                        "NN": {"outcome": "pass", "runs": ["pass", "pass"], "message": ""},
                    }
                },
                "flaky": False, "mined_at": date, "curated_at": date,
                "status": (TaskStatus.RETIRED if i == 5 else TaskStatus.ACTIVE).name,
                "given_test_file": None, "given_recorded": False,
            }
        )  # fmt: skip
        if runs and i % 3 == 1:
            for agent, model, cutoff in AGENTS:
                harness = 1.0 if rng.random() < 0.05 else rng.choice((0.0, 0.0, 0.25, 0.5))
                judged = 1 - harness
                passed = round(rng.random() * judged, 4)
                success = round(passed * rng.random(), 4)
                run_rows.append(
                    {
                        "task_id": rows[-1]["id"], "agent": agent, "model": model, "model_cutoff": cutoff,
                        "status": "done", "outcomes": {}, "pass_rate": passed, "success_rate": success,
                        "strict_success_rate": round(success * rng.choice((0.0, 0.5, 1.0)), 4),
                        "compile_fail_rate": round((judged - passed) * rng.random(), 4),
                        "exec_fail_rate": 0.0, "harness_fail_rate": harness,
                        "coverage_on_pass": None if passed == 0 else round(rng.random(), 4),
                        "mutation_on_pass": None if passed == 0 or rng.random() < 0.3 else round(rng.random(), 4),
                        "mutants": None, "prompt": "", "log": HOSTILE, "diff": "", "discarded": [],
                        "seconds": round(rng.random() * 100, 3), "tokens": rng.choice((None, rng.randrange(1, 9000))),
                        "cost": rng.choice((None, round(rng.random(), 4))), "finished_at": date,
                    }
                )  # fmt: skip
    with store.engine.begin() as connection:
        for first in range(0, len(rows), 2000):
            connection.execute(insert(Task), rows[first : first + 2000])
        for first in range(0, len(run_rows), 2000):
            connection.execute(insert(AgentRun), run_rows[first : first + 2000])
    return store
