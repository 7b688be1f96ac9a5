"""Benchmark the 4-way matrix: coevo's compile-once curation against four full ``mvn test`` runs.

On a mined database of a real Maven project, it takes the first ``--pairs`` pairs (in the
window) that have inserted or updated test methods, at most ``--per-pair`` of them each, and
runs every cell those candidates need both ways:

* **coevo** curates the pairs as ``coevo curate`` does with one run per cell: each revision
  is built once (``test-compile``, shared by consecutive pairs), its own tests run with the
  JUnit console launcher, the other revision's test file is compiled alone with ``javac``
  (the cross cells), and NN (and ON) runs measure per-test coverage as curation does;
* **naive** exports the code revision into a fresh folder for every cell, puts the test
  file's version in place, and runs ``mvn test -Dtest=Class`` (compiling everything), then
  reads surefire's report for the method (a compile failure is ``compile_error``).

It prints each candidate's cells both ways, the wall time per candidate and ``speedup:
N.Nx``; it exits 1 when the verdicts of any cell differ.

Example::

    coevo mine /tmp/gson.git --db /tmp/gson.db
    python bench/curate_speed.py --db /tmp/gson.db --repo gson --since 2025-06-01 --pairs 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from sqlmodel import col, select

from curation.classify import cells_for
from curation.curate import CurateRequest, _Item, _PairCurator
from runners import FolderTree, GitTree, LocalSandbox, Outcome, detect_env, export_revision, parse_junit_xml
from runners.java.jdk import choose_jdk
from runners.java.maven import SKIP_PROPERTIES, maven_repository
from tasks import Candidate, FocalLink, MethodChange, Repository, RevisionPair, TestChangeKind, open_store


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="a database `coevo mine` filled")
    parser.add_argument("--repo", required=True, help="the repository's name in it")
    parser.add_argument("--since", help="only pairs whose rev2 is on or after this date")
    parser.add_argument("--pairs", type=int, default=3, help="pairs to take (default 3)")
    parser.add_argument("--per-pair", type=int, default=2, help="candidates per pair (default 2)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per build or test run")
    args = parser.parse_args()
    store = open_store(args.db)
    since = datetime.fromisoformat(args.since).replace(tzinfo=UTC) if args.since else None
    with store.session() as s:
        repo = s.exec(select(Repository).where(Repository.name == args.repo)).one()
        query = select(RevisionPair).where(RevisionPair.repository_id == repo.id)
        if since:
            query = query.where(col(RevisionPair.rev2_date) >= since)
        chosen: list[tuple[RevisionPair, list[Candidate], list[MethodChange], dict]] = []
        for pair in s.exec(query.order_by(col(RevisionPair.rev2_date))).all():
            candidates = s.exec(
                select(Candidate)
                .where(Candidate.pair_id == pair.id)
                .where(col(Candidate.change_kind).in_([TestChangeKind.INSERTED, TestChangeKind.UPDATED]))
                .order_by(col(Candidate.test_file), col(Candidate.test_method))
            ).all()[: args.per_pair]
            if not candidates:
                continue
            changes = list(s.exec(select(MethodChange).where(MethodChange.pair_id == pair.id)).all())
            links = s.exec(
                select(FocalLink, MethodChange)
                .join(MethodChange, col(FocalLink.method_change_id) == col(MethodChange.id))
                .where(col(FocalLink.candidate_id).in_([c.id for c in candidates]))
            ).all()
            static: dict = {}
            for link, change in links:
                static.setdefault(link.candidate_id, []).append((str(link.provenance), change))
            chosen.append((pair, list(candidates), changes, static))
            if len(chosen) == args.pairs:
                break
    if not chosen:
        print("no pair with inserted or updated tests in that window")
        return 2

    work = Path(tempfile.mkdtemp(prefix="coevo-bench-curate-"))
    os.environ["COEVO_WORK"] = str(work / "coevo")
    request = CurateRequest(backend="local", reruns=1, test_timeout=args.timeout, build_timeout=args.timeout)
    started = time.monotonic()
    items: list[tuple[RevisionPair, _Item]] = []
    for pair, candidates, changes, static in chosen:
        curated, _ = _PairCurator(repo, pair, candidates, changes, static, request).run()
        items += [(pair, item) for item in curated if item.cells]
    coevo_seconds = time.monotonic() - started
    if not items:
        print("every chosen candidate was decided without running (refactorings, spans, builds)")
        return 2

    started = time.monotonic()
    mismatches = 0
    naive_cells = 0
    for pair, item in items:
        naive = _naive(Path(repo.path), pair, item, work / "naive", args.timeout)
        naive_cells += len(naive)
        coevo = {cell: result.outcome for cell, result in item.cells.items()}
        same = coevo == naive
        mismatches += not same
        print(f"{item.candidate.test_method}: coevo {coevo} naive {naive}{'' if same else '  MISMATCH'}")
    naive_seconds = time.monotonic() - started
    shutil.rmtree(work, ignore_errors=True)

    n = len(items)
    print(f"{n} candidates from {len(chosen)} pairs, {naive_cells} cells")
    print(f"coevo: {coevo_seconds:.1f}s ({coevo_seconds / n:.1f}s per candidate, builds included)")
    print(f"naive: {naive_seconds:.1f}s ({naive_seconds / n:.1f}s per candidate)")
    print(f"speedup: {naive_seconds / coevo_seconds:.1f}x")
    if mismatches:
        print(f"MISMATCH: {mismatches} candidates differ")
        return 1
    return 0


def _naive(repo: Path, pair: RevisionPair, item: _Item, root: Path, timeout: float) -> dict[str, str]:
    """Each cell the candidate needs: a fresh export of the code, the test file put in, ``mvn test``."""
    candidate = item.candidate
    outcomes: dict[str, str] = {}
    for cell in cells_for(candidate.change_kind):
        test_old, code_old = cell[0] == "O", cell[1] == "O"
        code_rev = pair.rev1 if code_old else pair.rev2
        test_rev = pair.rev1 if test_old else pair.rev2
        test_path = candidate.old_test_file if test_old else candidate.test_file
        test = item.old_id if test_old else item.new_id
        if test_path is None or test is None:
            outcomes[cell] = "absent"
            continue
        folder = root / f"{candidate.id}-{cell}"
        shutil.rmtree(folder, ignore_errors=True)
        export_revision(repo, code_rev, folder)
        content = GitTree(repo, test_rev).read(test_path)
        assert content is not None
        # One version of the test class in the tree: the chosen one, at the rev2 path.
        if candidate.old_test_file and candidate.old_test_file != candidate.test_file:
            (folder / candidate.old_test_file).unlink(missing_ok=True)
        target = folder / candidate.test_file
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        outcomes[cell] = _mvn_test(folder, test, candidate.test_file, timeout)
        shutil.rmtree(folder, ignore_errors=True)
    return outcomes


def _mvn_test(root: Path, test: str, test_file: str, timeout: float) -> str:
    spec = detect_env(FolderTree(root), "java")
    module = spec.module_for(test_file)
    class_name = test.partition("#")[0]
    command = [
        "mvn", "-B", "-q", f"-Dmaven.repo.local={maven_repository()}",
        *(flag for flag in SKIP_PROPERTIES if flag != "-DskipTests"),
        f"-Dtest={class_name.rsplit('.', 1)[-1]}", "-DfailIfNoTests=false",
        "-Dsurefire.failIfNoSpecifiedTests=false", *(["-pl", module, "-am"] if module else []), "test",
    ]  # fmt: skip
    java_home = str(choose_jdk(spec.language_version).home)
    log = LocalSandbox(root).exec(command, timeout, env={"JAVA_HOME": java_home})
    if log.timed_out:
        return "timeout"
    report = root / module / "target" / "surefire-reports" / f"TEST-{class_name}.xml"
    if report.is_file():
        found = [r.outcome for r in parse_junit_xml(report.read_bytes(), java=True) if _same(r.test, test)]
        for outcome in (Outcome.ERROR, Outcome.FAIL, Outcome.PASS, Outcome.SKIPPED):
            if outcome in found:
                return str(outcome)
        return "absent"
    output = log.stdout + log.stderr
    return "compile_error" if "COMPILATION ERROR" in output or "Compilation failure" in output else "error"


def _same(reported: str, wanted: str) -> bool:
    class_name, _, method = reported.partition("#")
    return f"{class_name}#{method.split('[')[0]}" == wanted


if __name__ == "__main__":
    sys.exit(main())
