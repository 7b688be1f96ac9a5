"""Benchmark mutation scoring: PIT restricted to the focal methods against PIT over the focal classes.

For each Java task of a curated database (the first ``--tasks``), it builds rev2 once and runs
PIT three times with the task's own test methods (the developer's, as the ``gold`` agent writes
them), all with the same short-lived JVM options:

* **scoring**: what ``coevo score`` runs: the test class compiled with only the scored methods,
  the focal classes mutated with every other method left out;
* **classes**: the same test class, the focal classes mutated whole;
* **baseline**: PIT as one would call it: the task's whole test class (``--includedTestMethods``
  naming the scored methods) and the focal classes mutated whole.

It checks that every mutant inside the focal methods is detected or not alike in all three,
prints each task's times, the ratios against ``scoring`` (``speedup: N.Nx`` is the baseline's),
and the mean cost of mutation scoring per task. It exits 1 when a verdict differs.

Example::

    coevo curate --db /tmp/gson.db --repo gson --since 2025-12-01
    python bench/mutation_speed.py --db /tmp/gson.db --tasks 3
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from sqlmodel import col, select

from runners import MavenTool, Outcome
from runners.environments.revisions import prepare_revision
from runners.environments.sides import Side
from runners.environments.worktree import GitTree
from runners.java.pit import java_focal_methods
from runners.mutation import MutationResult
from tasks import Repository, Task, open_store

MODES = ("scoring", "classes", "baseline")


def _mutation(
    mode: str, side: Side, task: Task, gold: bytes, passing: list[str], tag: str, timeout: float
) -> MutationResult | None:
    if mode != "baseline":
        only_focal = mode == "scoring"
        return side.mutation_score(
            task.test_file, gold, passing, task.focal_methods, tag, timeout, only_focal=only_focal
        )
    tool = side.environment.tool
    assert isinstance(tool, MavenTool)
    sources = {f["file"]: side.sandbox.read_file(f["file"]) or b"" for f in task.focal_methods}
    return tool.mutation(
        side.sandbox,
        side.spec,
        passing[0].split("#")[0],
        [test.split("#")[1] for test in passing],
        java_focal_methods(task.focal_methods, sources),
        timeout,
        module=side.spec.module_for(task.test_file),
        extra_classpath=[f".coevo/cross/{tag}/classes"],  # the whole gold test file, run_cross compiled
        only_focal=False,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="a database `coevo curate` filled")
    parser.add_argument("--tasks", type=int, default=3, help="Java tasks to take (default 3)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per build or PIT run")
    args = parser.parse_args()
    store = open_store(args.db)
    with store.session() as s:
        tasks = s.exec(select(Task).where(Task.language == "java").order_by(col(Task.rev2_date))).all()
        repos = {r.id: r for r in s.exec(select(Repository)).all()}
    tasks = [t for t in tasks if t.focal_methods][: args.tasks]
    if not tasks:
        print("no Java task with focal methods in the database")
        return 2
    os.environ.setdefault("COEVO_WORK", tempfile.mkdtemp(prefix="coevo-bench-mutation-"))
    work = Path(os.environ["COEVO_WORK"])
    totals = dict.fromkeys(MODES, 0.0)
    differ = 0
    for task in tasks:
        repo = repos[task.repository_id]
        built = prepare_revision(
            work, Path(repo.path), task.rev2, "java", "local", tuple(repo.build_args),
            timeout=args.timeout, test_files=[task.test_file],
        )  # fmt: skip
        if built.status != "ok" or built.spec is None or built.worktree is None:
            print(f"{task.id}: rev2 did not build ({built.message}); skipped")
            continue
        gold = GitTree(Path(repo.path), task.rev2).read(task.test_file) or b""
        side = built.side()
        tag = f"bench-{task.id}"
        ran = side.run_cross(task.test_file, gold, task.test_ids, tag, args.timeout)
        passing = [r.test for r in ran.results if r.outcome == Outcome.PASS]
        verdicts = {}
        for mode in MODES:
            started = time.monotonic()
            result = _mutation(mode, side, task, gold, passing, tag, args.timeout)
            seconds = time.monotonic() - started
            totals[mode] += seconds
            mutants = result.mutants if result is not None else ()
            verdicts[mode] = {(m.class_name, m.line, m.mutator, m.description): m.detected for m in mutants}
            score = "-" if result is None or result.score is None else f"{result.score:.2f}"
            note = f" ({result.message})" if result is not None and result.message else ""
            print(f"{task.id} {mode:8}: {seconds:6.1f}s, {len(mutants)} focal mutants, score {score}{note}")
        side.close()
        if any(verdicts[mode] != verdicts["scoring"] for mode in MODES):
            differ += 1
            print(f"{task.id}: MISMATCH between the runs' verdicts on the focal mutants")
    n = len(tasks)
    print("mutation scoring per task: " + ", ".join(f"{totals[m] / n:.1f}s ({m})" for m in MODES))
    print(f"whole classes, scored tests only: {totals['classes'] / totals['scoring']:.1f}x")
    print(f"speedup: {totals['baseline'] / totals['scoring']:.1f}x")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
