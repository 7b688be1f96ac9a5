"""Benchmark Java per-test coverage: a test file's methods in one launcher JVM against one JVM each.

It builds a revision of a Maven project (on the host, or in Docker with ``--backend docker``),
takes the test methods of the given test files (the first ``--tests`` of each), and measures
each method's covered lines twice:

* **batch**: what curation and scoring run: one ``run_tests`` call for a file's methods, one JVM
  with the per-test listener, one reader JVM for all their lines;
* **baseline**: one call per method, one JVM each (how coevo measured before the listener).

It prints each file's times, how many methods got the same lines and outcome both ways, how many
lack only lines that ran when a class was initialised (in one JVM, the first test that loads a
class runs its static initialisers; curation finds changed fields and constants a test reaches
without them, as it does for Python's per-test contexts), the methods that differ otherwise
(a test that depends on what an earlier one left behind), and the ratio. It exits 1 when more
than a tenth of the methods differ otherwise.

Example::

    python bench/java_coverage_speed.py --repo ~/src/commons-lang \\
        --test-file src/test/java/org/apache/commons/lang3/StringUtilsTest.java --tests 40
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from curation.static import runnable_id
from miner.java import parse_java
from runners.environments.revisions import prepare_revision


def _test_ids(root: Path, test_file: str, limit: int) -> list[str]:
    source = (root / test_file).read_bytes()
    tests = (m for m in parse_java(source, scan="none").methods if m.is_test)
    ids = (runnable_id("java", test_file, source, method.key) for method in tests)
    return list(dict.fromkeys(ids))[:limit]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True, type=Path, help="a git clone of a Maven project")
    parser.add_argument("--rev", default="HEAD", help="the revision to build (default HEAD)")
    parser.add_argument("--test-file", action="append", required=True, help="a test file (repeatable)")
    parser.add_argument("--tests", type=int, default=30, help="methods taken per file (default 30)")
    parser.add_argument("--backend", default="local", choices=("local", "docker"), help="default local")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per build or run")
    args = parser.parse_args()
    sha = subprocess.run(
        ["git", "-C", str(args.repo), "rev-parse", args.rev], capture_output=True, text=True, check=True
    ).stdout.strip()
    os.environ.setdefault("COEVO_WORK", tempfile.mkdtemp(prefix="coevo-bench-coverage-"))
    built = prepare_revision(
        Path(os.environ["COEVO_WORK"]), args.repo, sha, "java", args.backend,
        timeout=args.timeout, test_files=args.test_file,
    )  # fmt: skip
    if built.status != "ok" or built.worktree is None:
        print(f"{sha[:12]} did not build: {built.message}")
        return 2
    side = built.side()
    totals = {"batch": 0.0, "baseline": 0.0}
    methods = differ = initialised = 0
    for test_file in args.test_file:
        ids = _test_ids(built.worktree, test_file, args.tests)
        started = time.monotonic()
        batch = side.run(ids, args.timeout, coverage=True)
        seconds = time.monotonic() - started
        totals["batch"] += seconds
        started = time.monotonic()
        alone = [side.run([test], args.timeout, coverage=True) for test in ids]
        baseline = time.monotonic() - started
        totals["baseline"] += baseline
        together = {r.test: r.outcome for r in batch.results}
        for test, run in zip(ids, alone, strict=True):
            methods += 1
            own = run.coverage.get(test)
            lines = own.lines if own else {}
            shared = batch.coverage.get(test)
            batched = shared.lines if shared else {}
            if batched == lines and together[test] == run.results[0].outcome:
                continue
            if together[test] == run.results[0].outcome and all(
                covered <= lines.get(path, frozenset()) for path, covered in batched.items()
            ):
                initialised += 1  # lines a class's initialisation ran, which an earlier test triggered
                continue
            differ += 1
            print(f"  differs: {test} ({together[test]} in the batch, {run.results[0].outcome} alone)")
        print(f"{test_file}: {len(ids)} methods, batch {seconds:.1f}s, one JVM each {baseline:.1f}s")
    side.close()
    alike = methods - differ - initialised
    print(f"{methods} methods: {alike} alike, {initialised} lack only lines of a class's initialisation")
    print(f"  that an earlier test ran, {differ} differ otherwise")
    print(f"speedup: {totals['baseline'] / max(totals['batch'], 1e-9):.1f}x")
    return 1 if differ * 10 > methods else 0


if __name__ == "__main__":
    sys.exit(main())
