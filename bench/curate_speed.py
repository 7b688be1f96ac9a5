"""Benchmark curation's 4-way matrix against four full ``mvn test`` runs, or against coevo's previous path.

On a mined database of a real project, it takes the first ``--pairs`` pairs (in the window)
that have inserted or updated test methods, at most ``--per-pair`` of them each (0: all), and
curates them as ``coevo curate`` does on the host, with ``--reruns`` runs a cell. Then, with
``--against naive`` (the default; Maven projects):

* **naive** exports the code revision into a fresh folder for every cell, puts the test
  file's version in place, and runs ``mvn test -Dtest=Class`` (compiling everything), then
  reads surefire's report for the method (a compile failure is ``compile_error``);

it prints each candidate's cells both ways, the wall time per candidate and ``speedup:
N.Nx``, and exits 1 when the verdicts of any cell differ. With ``--against previous`` (Java
and Python), each pair is curated a second time, in a work folder of its own, the way coevo
curated before issue 30 (kept here only, selected by :func:`_previous_path`):

* Java: a run with coverage starts **one launcher JVM per test** (each test's lines are that
  JVM's), not one for the batch with the lines taken between tests;
* Python: each test's lines are read from coverage.py's data by **a reader process** of their
  own after the tests' process, not by coevo's plugin at the end of it;
* both: a pair's **own-revision cells (NN, OO) run file by file**, as the cross cells do, not in
  one batch for all the pair's test files;

it prints, per candidate, every cell whose outcome or production lines differ and every label
that differs, the seconds of each path per pair and candidate, where they went (builds, own
tests, cross cells, the rest) and ``speedup: N.Nx``, and exits 1
when an outcome or a label differs. Lines that only the previous path has and that a class's
static initialisation runs (in one JVM, the first test that loads a class runs them) are
counted apart: curation finds the changed fields and constants a test reaches without them.

Example::

    coevo mine /tmp/gson.git --db /tmp/gson.db
    python bench/curate_speed.py --db /tmp/gson.db --repo gson --since 2025-06-01 --pairs 3
    python bench/curate_speed.py --db /tmp/rq.db --repo requests --since 2024-01-01 --pairs 8 \\
        --per-pair 0 --against previous
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from python_coverage_speed import _READER  # beside this file: the reader process coevo ran before
from sqlmodel import col, select

from curation.classify import cells_for
from curation.curate import CurateRequest, _Item, _label_name, _PairCurator
from curation.matrix import Cell
from runners import FolderTree, GitTree, LocalSandbox, Outcome, detect_env, export_revision, parse_junit_xml
from runners.buildtools import TestRun
from runners.environments.sides import Side
from runners.java.jdk import choose_jdk
from runners.java.maven import SKIP_PROPERTIES, MavenTool, maven_repository
from runners.python import pytest_tool
from runners.python.venvs import venv_python
from tasks import Candidate, FocalLink, MethodChange, Repository, RevisionPair, TestChangeKind, open_store


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="a database `coevo mine` filled")
    parser.add_argument("--repo", required=True, help="the repository's name in it")
    parser.add_argument("--since", help="only pairs whose rev2 is on or after this date")
    parser.add_argument("--pairs", type=int, default=3, help="pairs to take (default 3)")
    parser.add_argument("--per-pair", type=int, default=2, help="candidates per pair (default 2; 0: all)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per build or test run")
    parser.add_argument("--reruns", type=int, default=1, help="runs a cell (default 1)")
    parser.add_argument(
        "--against", choices=("naive", "previous"), default="naive", help="what coevo is compared with"
    )
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
            ).all()[: args.per_pair or None]
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

    request = CurateRequest(
        backend="local", reruns=args.reruns, test_timeout=args.timeout, build_timeout=args.timeout
    )
    if args.against == "previous":
        return _against_previous(repo, chosen, request)
    if repo.language != "java":
        print(f"--against naive runs Maven: {repo.name} is {repo.language} (try --against previous)")
        return 2
    work = Path(tempfile.mkdtemp(prefix="coevo-bench-curate-"))
    os.environ["COEVO_WORK"] = str(work / "coevo")
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


def _against_previous(
    repo: Repository,
    chosen: list[tuple[RevisionPair, list[Candidate], list[MethodChange], dict]],
    request: CurateRequest,
) -> int:
    """Each pair curated by the new path, then by the previous one, each in a work folder of its
    own (each builds its revisions; caches shared by content, such as venvs, are paid by the new
    path, first), and their cells and labels compared."""
    work = Path(tempfile.mkdtemp(prefix="coevo-bench-curate-"))
    seconds = {"new": 0.0, "previous": 0.0}
    spent: dict[str, Counter[str]] = {"new": Counter(), "previous": Counter()}
    candidates = outcomes = labels = initialised = lines = 0
    decided: Counter[str] = Counter()
    for pair, pair_candidates, changes, static in chosen:
        curated: dict[str, dict[int | None, _Item]] = {}
        took: dict[str, float] = {}
        for way in ("new", "previous"):
            os.environ["COEVO_WORK"] = str(work / way)
            started = time.monotonic()
            with _previous_path(repo.language) if way == "previous" else nullcontext(), _clocked(spent[way]):
                items, _ = _PairCurator(repo, pair, pair_candidates, changes, static, request).run()
            took[way] = time.monotonic() - started
            seconds[way] += took[way]
            curated[way] = {item.candidate.id: item for item in items}
        print(
            f"pair {pair.id} {pair.rev1[:10]}..{pair.rev2[:10]}: {len(pair_candidates)} candidates, "
            f"previous {took['previous']:.1f}s, new {took['new']:.1f}s"
        )
        for key, new in curated["new"].items():
            old = curated["previous"][key]
            candidates += 1
            decided[_label_name(new)] += 1
            name = new.candidate.test_method
            if _label_name(old) != _label_name(new):
                labels += 1
                print(f"  label differs: {name}: previous {_label_name(old)}, new {_label_name(new)}")
            for cell in sorted(set(old.cells) | set(new.cells)):
                before, after = old.cells.get(cell, Cell()), new.cells.get(cell, Cell())
                if before.outcome != after.outcome:
                    outcomes += 1
                    print(f"  {cell} differs: {name}: previous {before.outcome}, new {after.outcome}")
                    continue
                was = before.coverage.lines if before.coverage else {}
                now = after.coverage.lines if after.coverage else {}
                if was == now:
                    continue
                if all(covered <= was.get(path, frozenset()) for path, covered in now.items()):
                    initialised += 1  # lines a class's initialisation ran for an earlier test
                    continue
                lines += 1
                print(f"  {cell} lines differ: {name}: previous {_count(was)} lines, new {_count(now)}")
    shutil.rmtree(work, ignore_errors=True)
    print(
        f"{candidates} candidates from {len(chosen)} pairs ({repo.language}): {dict(decided.most_common())}"
    )
    for way, took in seconds.items():
        parts = ", ".join(
            f"{phase} {spent[way][phase]:.1f}s" for phase in ("builds", "own tests", "cross cells")
        )
        rest = took - sum(spent[way].values())
        each = f"{took / max(candidates, 1):.1f}s per candidate, {took / len(chosen):.1f}s per pair"
        print(f"{way}: {took:.1f}s ({each})")
        print(f"  {parts}, the rest (static checks, verdicts) {rest:.1f}s")
    print(f"cells whose new lines lack only lines of a class's initialisation: {initialised}")
    print(f"cells whose lines differ otherwise: {lines}; outcomes that differ: {outcomes}; labels: {labels}")
    print(f"speedup: {seconds['previous'] / max(seconds['new'], 1e-9):.2f}x")
    return 1 if outcomes or labels else 0


@contextmanager
def _clocked(spent: Counter[str]) -> Iterator[None]:
    """Seconds spent building revisions, running their own tests (NN, OO) and running another
    revision's test file (NO, ON: its compilation or copy included), added to ``spent``."""
    curate_module = importlib.import_module("curation.curate")  # the package's curate is a function
    originals = (curate_module.prepare_revision, Side.run, Side.run_cross)

    def timed(phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            started = time.monotonic()
            try:
                return function(*args, **kwargs)
            finally:
                spent[phase] += time.monotonic() - started

        return run

    curate_module.prepare_revision = timed("builds", originals[0])  # type: ignore[assignment]
    Side.run = timed("own tests", originals[1])  # type: ignore[method-assign]
    Side.run_cross = timed("cross cells", originals[2])  # type: ignore[method-assign]
    try:
        yield
    finally:
        curate_module.prepare_revision, Side.run, Side.run_cross = originals  # type: ignore[method-assign]


def _count(lines: dict[str, frozenset[int]]) -> int:
    return sum(len(numbers) for numbers in lines.values())


@contextmanager
def _previous_path(language: str) -> Iterator[None]:
    """Curation's runs as coevo ran them before issue 30, in this process until the block ends."""
    batched = _PairCurator._run_cells

    def file_by_file(self: _PairCurator, files: Sequence[Any], old_side: Side, new_side: Side) -> None:
        for file in files:  # every cell, NN and OO too, one test file at a time
            batched(self, [file], old_side, new_side)

    _PairCurator._run_cells = file_by_file  # type: ignore[method-assign]
    try:
        with _previous_runs(language):
            yield
    finally:
        _PairCurator._run_cells = batched  # type: ignore[method-assign]


@contextmanager
def _previous_runs(language: str) -> Iterator[None]:
    """The runners' previous ways of measuring coverage (a JVM per Java test, a reader process)."""
    if language == "java":
        batched = MavenTool.run_tests

        def one_jvm_each(
            self: MavenTool,
            sandbox: Any,
            spec: Any,
            tests: Sequence[str],
            timeout: float,
            coverage: bool = False,
            **rest: Any,
        ) -> TestRun:
            if not coverage:
                return batched(self, sandbox, spec, tests, timeout, False, **rest)
            runs = [
                batched(self, sandbox, spec, [test], timeout, True, **rest) for test in dict.fromkeys(tests)
            ]
            measured = {test: lines for run in runs for test, lines in run.coverage.items()}
            return TestRun(tuple(run.results[0] for run in runs), measured, runs[-1].log)

        MavenTool.run_tests = one_jvm_each  # type: ignore[method-assign]
        try:
            yield
        finally:
            MavenTool.run_tests = batched  # type: ignore[method-assign]
        return
    plugin, read, python = pytest_tool._PLUGIN_SOURCE, pytest_tool._read_coverage, pytest_tool.venv_python
    used: list[Path] = []

    def remembered(venv: Path) -> Path:
        used.append(venv_python(venv))
        return used[-1]

    def reader_first(scratch: Path, worktree: Path) -> dict:
        if (scratch / "coverage.data").is_file():
            (scratch / "read_coverage.py").write_text(_READER)
            reader = [str(used[-1]), str(scratch / "read_coverage.py"), str(scratch / "coverage.data")]
            subprocess.run(
                [*reader, str(scratch / "coverage.json")], cwd=worktree, capture_output=True, check=False
            )
        return read(scratch, worktree)

    pytest_tool._PLUGIN_SOURCE = plugin.replace("def pytest_unconfigure(", "def _not_a_hook(")
    pytest_tool._read_coverage = reader_first
    pytest_tool.venv_python = remembered
    try:
        yield
    finally:
        pytest_tool._PLUGIN_SOURCE, pytest_tool._read_coverage, pytest_tool.venv_python = plugin, read, python


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
