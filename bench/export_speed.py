"""Benchmark snapshot export and verify: rows per second and peak memory, 10k rows beside 100k.

For each size, a store is filled with that many synthetic tasks (one repository, one pair,
realistic field sizes, the reset test file recorded as an imported task has it), then a fresh
process exports it (``tasks.export_snapshot``) and verifies the snapshot
(``tasks.verify_snapshot``) and reports its own peak resident memory. Rows stream to the files
in batches, so the peak must stay about the same from 10k to 100k rows: the ratio printed last
is the baseline (10k) against the large run.

Example::

    python bench/export_speed.py            # 10,000 and 100,000 rows
    python bench/export_speed.py 2000 20000
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import insert

from tasks import ExportOptions, Repository, RevisionPair, Task, export_snapshot, open_store, verify_snapshot

_TEST_FILE = "def test_x():\n    assert f(1) == 2\n" * 30
_DIFF = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n" * 10


def fill(db: Path, rows: int) -> None:
    store = open_store(db)
    with store.session() as session:
        repo = Repository(
            name="synthetic", location="/nowhere", path="", identity="root:0", language="python"
        )
        session.add(repo)
        session.flush()
        assert repo.id is not None
        start = datetime(2024, 1, 1, tzinfo=UTC)
        pair = RevisionPair(
            repository_id=repo.id, rev1="a" * 40, rev2="b" * 40, rev1_date=start, rev2_date=start,
            rev2_author_date=start,
        )  # fmt: skip
        session.add(pair)
        session.flush()
        repo_id, pair_id = repo.id, pair.id
    with store.engine.begin() as connection:
        for first in range(0, rows, 5000):
            batch = []
            for i in range(first, min(first + 5000, rows)):
                date = start + timedelta(minutes=i)
                batch.append(
                    {
                        "id": f"gen-{i:016x}", "track": "GENERATION", "language": "python",
                        "repository_id": repo_id, "repository": "synthetic", "pair_id": pair_id,
                        "rev1": f"{i:040x}", "rev2": f"{i + 1:040x}", "rev1_date": date, "rev2_date": date,
                        "test_file": f"tests/test_m{i}.py", "test_methods": [f"test_{i}"],
                        "test_ids": [f"tests/test_m{i}.py::test_{i}"], "gold_helpers": [],
                        "focal_methods": [{"file": "m.py", "method": "f", "start": 1, "end": 3}],
                        "gold_patch": _DIFF, "production_diff": _DIFF, "env_spec": {"python": "3.11"},
                        "matrix": {f"test_{i}": {"NN": {"outcome": "pass", "runs": ["pass"]}}},
                        "flaky": False, "status": "ACTIVE", "given_test_file": _TEST_FILE,
                        "given_recorded": True, "curated_at": date,
                    }
                )  # fmt: skip
            connection.execute(insert(Task), batch)
    store.close()


def measure(db: Path, out: Path) -> None:
    """In its own process: export and verify, then print seconds and peak memory as JSON."""
    started = time.perf_counter()
    info = export_snapshot(open_store(db, create=False), out, ExportOptions(), "bench")
    exported = time.perf_counter()
    verify_snapshot(info.path)
    verified = time.perf_counter()
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"rows": info.tasks, "export": exported - started, "verify": verified - exported,
                      "peak_mib": peak_kib / 1024}))  # fmt: skip


def main(sizes: list[int]) -> None:
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for rows in sizes:
            db = Path(tmp) / f"store-{rows}.db"
            fill(db, rows)
            child = subprocess.run(
                [sys.executable, __file__, "--measure", str(db), str(Path(tmp) / f"out-{rows}")],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            results.append(json.loads(child.stdout))
    print(f"{'rows':>8} {'export rows/s':>14} {'verify rows/s':>14} {'peak MiB':>9}")
    for r in results:
        export_rate, verify_rate = r["rows"] / r["export"], r["rows"] / r["verify"]
        print(f"{r['rows']:>8} {export_rate:>14,.0f} {verify_rate:>14,.0f} {r['peak_mib']:>9.1f}")
    base, large = results[0], results[-1]
    memory = large["peak_mib"] / base["peak_mib"]
    print(
        f"{large['rows'] // base['rows']}x the rows: peak memory x{memory:.2f}, "
        f"export rate x{(large['rows'] / large['export']) / (base['rows'] / base['export']):.2f}"
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--measure"]:
        measure(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        main([int(a) for a in sys.argv[1:]] or [10_000, 100_000])
