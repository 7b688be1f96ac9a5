"""Benchmark coevo's miner against a naive PyDriller traversal of the same git history.

Both approaches look for *co-evolution commits*: non-merge commits that change
test code and production code of one language together.

* **coevo** mines the window from scratch into a fresh temporary SQLite store;
  its co-evolution commits are the rev2 of every single-commit revision pair
  (pairs spanning several commits come from coevo's 12 h window, which the
  naive way has no equivalent of, and are only counted).
* **naive** is what a PyDriller user would write: traverse every non-merge
  commit, keep those whose ``modified_files`` include a test file and a
  production file (coevo's file classification) and, at method level, those
  where lizard's ``changed_methods`` is non-empty for at least one test file and
  at least one production file.

* **floor** is the least any miner of these pairs must do: the selection pass, then reading
  and parsing once every blob the miner needs (the version before and after the pair of each
  test and production file it changed) with coevo's parser, on as many processes as coevo's
  miner uses (one per core). coevo's ratio to it says how much is left above parsing.

Each approach runs in its own child process (this script re-invoked with a
hidden ``--only`` flag that prints JSON), so wall time and peak memory
(``ru_maxrss``) of one never mix with the other's.

The script exits 1 when coevo reports a single-commit pair whose commit does
not touch both test and production files (it must be a subset of the naive
file-level set), and 2 when a child process fails.
"""

from __future__ import annotations

import argparse
import functools
import json
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

APPROACHES = ("coevo", "selection", "floor", "naive")
RUN_KEYS = (
    "status", "commits_selected", "test_commits", "pairs", "candidates", "skipped_files",
    "worker_peak_rss_mib",
)  # fmt: skip
EXAMPLES = 5


@dataclass(frozen=True)
class Window:
    """The repository and history window both approaches mine."""

    repo: str
    language: str
    since: str | None
    until: str | None

    def child_args(self) -> list[str]:
        args = [self.repo, "--language", self.language]
        if self.since:
            args += ["--since", self.since]
        if self.until:
            args += ["--until", self.until]
        return args


@dataclass(frozen=True)
class Comparison:
    """How coevo's single-commit pairs relate to the naive method- and file-level sets."""

    coevo: int
    coevo_multi_commit_pairs: int
    naive_method_level: int
    naive_file_level: int
    intersection: int
    only_coevo: int
    only_naive: int
    only_coevo_examples: list[str]
    only_naive_examples: list[str]
    coevo_within_file_level: bool
    coevo_outside_file_level: list[str]


# --- command line -----------------------------------------------------------------------------


def parse_date(value: str) -> datetime:
    """An ISO date or datetime; a date means midnight UTC, a time without zone means UTC."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a date; use YYYY-MM-DD") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Times coevo's miner against a naive PyDriller traversal of one git history "
        "and compares the co-evolution commits each finds.",
        epilog="example: .venv/bin/python bench/mine_speed.py /tmp/gson.git --since 2021-01-01 "
        "--language java",
    )
    parser.add_argument("repo", metavar="REPO", help="a local git repository (bare is fine)")
    parser.add_argument("--since", metavar="DATE", help="only commits on or after DATE")
    parser.add_argument("--until", metavar="DATE", help="only commits before DATE")
    parser.add_argument("--language", choices=("java", "python"), help="language to mine (default: detected)")
    parser.add_argument("--json", action="store_true", help="print a JSON summary instead of text")
    parser.add_argument("--only", choices=APPROACHES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for option in ("since", "until"):
        value = getattr(args, option)
        if value is not None:
            try:
                parse_date(value)
            except argparse.ArgumentTypeError as exc:
                parser.error(f"--{option}: {exc}")
    return args


def optional_date(value: str | None) -> datetime | None:
    return parse_date(value) if value is not None else None


def resolve_language(repo: str, language: str | None) -> str:
    """The requested language, else the one coevo detects; exits 2 when REPO is unusable."""
    from miner.source import detect_language, local_checkout
    from tasks import CoevoError

    try:
        path = local_checkout(repo)
        return language or detect_language(path)
    except CoevoError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)


# --- child processes: one approach each ---------------------------------------------------------


def peak_rss_mib(who: int = resource.RUSAGE_SELF) -> float:
    """Peak resident set size in MiB (``ru_maxrss`` is KiB on Linux, bytes on macOS).

    ``RUSAGE_CHILDREN`` gives the largest finished child: coevo's worker processes.
    """
    peak = resource.getrusage(who).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def run_coevo(window: Window) -> dict[str, Any]:
    """Mines the window into a fresh store; the single-commit pairs' rev2 are its commits."""
    from sqlmodel import select

    from miner import MineRequest, mine
    from tasks import RevisionPair, open_store

    request = MineRequest(
        location=window.repo,
        since=optional_date(window.since),
        until=optional_date(window.until),
        language=window.language,
    )
    with tempfile.TemporaryDirectory(prefix="coevo-bench-") as tmp:
        started = time.perf_counter()
        store = open_store(Path(tmp) / "bench.db")
        run = mine(store, request)
        seconds = time.perf_counter() - started
        with store.session() as session:
            rows = session.exec(select(RevisionPair)).all()
        store.close()
    single = sorted({row.rev2 for row in rows if row.commits == [row.rev2]})
    return {
        "seconds": seconds,
        "commits": run.commits_scanned,
        "peak_rss_mib": peak_rss_mib(),
        "status": str(run.status),
        "commits_selected": run.commits_selected,
        "test_commits": run.test_commits,
        "pairs": run.pairs,
        "candidates": run.candidates,
        "skipped_files": run.skipped_files,
        "worker_peak_rss_mib": peak_rss_mib(resource.RUSAGE_CHILDREN),
        "single_commit": single,
        "multi_commit_pairs": sum(1 for row in rows if row.commits != [row.rev2]),
    }


def run_selection(window: Window) -> dict[str, Any]:
    """coevo's selection pass alone: the git log stream and the pairing, nothing parsed."""
    from miner import FilePatterns, get_language, iter_log, plan_pairs

    patterns = FilePatterns.for_language(get_language(window.language))
    commits = test_commits = 0
    started = time.perf_counter()
    log = iter_log(Path(window.repo), ["HEAD"], optional_date(window.since), optional_date(window.until))
    for _, plan in plan_pairs(log, patterns, lambda sha: None):
        commits += 1
        test_commits += plan is not None
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "commits": commits,
        "test_commits": test_commits,
        "peak_rss_mib": peak_rss_mib(),
    }


def needed_blobs(window: Window) -> tuple[int, list[str]]:
    """The commits of the selection pass and the blobs coevo's miner parses in the window: for each
    pair it plans, the version before the pair and the version at its end of every test and
    production file its commits change (a file added or deleted has one side)."""
    from miner import FilePatterns, FileRole, get_language, iter_log, plan_pairs
    from miner.gitlog import known_commit
    from tasks import CommitOutcome

    patterns = FilePatterns.for_language(get_language(window.language))
    repo = Path(window.repo)
    roles = {FileRole.TEST, FileRole.PRODUCTION}
    commits = 0
    blobs: set[str] = set()
    log = iter_log(repo, ["HEAD"], optional_date(window.since), optional_date(window.until))

    for _, plan in plan_pairs(log, patterns, functools.partial(known_commit, repo)):
        commits += 1
        if plan is None or plan.outcome != CommitOutcome.PAIRED:
            continue
        before: dict[str, str | None] = {}
        after: dict[str, str | None] = {}
        for commit in plan.commits:
            for change in commit.changes:
                if not {patterns.role(path) for path in (change.path, change.old_path) if path} & roles:
                    continue
                before.setdefault(change.old_path or change.path, change.old_blob)
                after[change.path] = change.new_blob
        blobs.update(blob for blob in (*before.values(), *after.values()) if blob)
    return commits, sorted(blobs)


def _parse_blobs(job: tuple[str, str, list[str]]) -> int:
    """Reads ``blobs`` of ``repo`` as the miner does (one ``git cat-file --batch``) and parses each
    (scan as the miner does first: none); returns how many parsed."""
    repo, language, blobs = job
    from miner import get_language
    from miner.gitlog import BlobReader

    parser = get_language(language)
    reader = BlobReader(Path(repo))
    parsed = 0
    try:
        for blob in blobs:
            try:
                parser.parse(reader.read(blob), scan="none")
                parsed += 1
            except Exception:  # a blob missing from the clone, a file the parser refuses
                pass
    finally:
        reader.close()
    return parsed


def run_floor(window: Window) -> dict[str, Any]:
    """The parse floor: the selection pass, then every needed blob read and parsed once, the
    blobs split evenly over one process per core."""
    import os
    from concurrent.futures import ProcessPoolExecutor

    started = time.perf_counter()
    commits, blobs = needed_blobs(window)
    workers = max(1, os.cpu_count() or 1)
    chunks = [blobs[i::workers] for i in range(workers)]
    with ProcessPoolExecutor(workers) as pool:
        parsed = sum(pool.map(_parse_blobs, [(window.repo, window.language, chunk) for chunk in chunks]))
    return {
        "seconds": time.perf_counter() - started,
        "commits": commits,
        "peak_rss_mib": peak_rss_mib(),
        "blobs": len(blobs),
        "parsed": parsed,
    }


def naive_roles(commit: Any, patterns: Any) -> tuple[list[Any], list[Any]]:
    """The commit's modified test files and production files (old or new path decides)."""
    from miner import FileRole

    tests, production = [], []
    for modified in commit.modified_files:
        roles = {patterns.role(p) for p in (modified.new_path, modified.old_path) if p}
        if FileRole.TEST in roles:
            tests.append(modified)
        if FileRole.PRODUCTION in roles:
            production.append(modified)
    return tests, production


def run_naive(window: Window) -> dict[str, Any]:
    """Traverses the window with PyDriller the way its documentation suggests."""
    import pydriller

    from miner import FilePatterns, get_language

    patterns = FilePatterns.for_language(get_language(window.language))
    file_level: list[str] = []
    method_level: list[str] = []
    commits = 0
    started = time.perf_counter()
    repository = pydriller.Repository(
        window.repo,
        since=optional_date(window.since),
        to=optional_date(window.until),
        only_no_merge=True,
    )
    for commit in repository.traverse_commits():
        commits += 1
        tests, production = naive_roles(commit, patterns)
        if not (tests and production):
            continue
        file_level.append(commit.hash)
        if any(m.changed_methods for m in tests) and any(m.changed_methods for m in production):
            method_level.append(commit.hash)
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "commits": commits,
        "peak_rss_mib": peak_rss_mib(),
        "file_level": sorted(file_level),
        "method_level": sorted(method_level),
    }


def run_only(approach: str, window: Window) -> None:
    """The child's side: runs one approach and prints its result as JSON on stdout."""
    runners = {"coevo": run_coevo, "selection": run_selection, "floor": run_floor, "naive": run_naive}
    result = runners[approach](window)
    json.dump(result, sys.stdout)


def spawn(approach: str, window: Window) -> dict[str, Any]:
    """Runs one approach in a fresh interpreter; its stderr (warnings) passes through."""
    cmd = [sys.executable, str(Path(__file__).resolve()), *window.child_args(), "--only", approach]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        print(f"error: the {approach} run failed (exit {done.returncode})", file=sys.stderr)
        sys.exit(2)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


# --- comparison and report ----------------------------------------------------------------------


def compare(coevo: dict[str, Any], naive: dict[str, Any]) -> Comparison:
    found = set(coevo["single_commit"])
    method_level = set(naive["method_level"])
    file_level = set(naive["file_level"])
    only_coevo = sorted(found - method_level)
    only_naive = sorted(method_level - found)
    outside = sorted(found - file_level)
    return Comparison(
        coevo=len(found),
        coevo_multi_commit_pairs=coevo["multi_commit_pairs"],
        naive_method_level=len(method_level),
        naive_file_level=len(file_level),
        intersection=len(found & method_level),
        only_coevo=len(only_coevo),
        only_naive=len(only_naive),
        only_coevo_examples=only_coevo[:EXAMPLES],
        only_naive_examples=only_naive[:EXAMPLES],
        coevo_within_file_level=not outside,
        coevo_outside_file_level=outside,
    )


def rate(result: dict[str, Any]) -> float:
    return result["commits"] / result["seconds"] if result["seconds"] > 0 else 0.0


def summary(
    window: Window,
    coevo: dict[str, Any],
    selection: dict[str, Any],
    floor: dict[str, Any],
    naive: dict[str, Any],
    comparison: Comparison,
) -> dict[str, Any]:
    """The machine-readable summary (``--json``): counts, examples, timings and memory."""

    def timing(result: dict[str, Any]) -> dict[str, Any]:
        keys = ("seconds", "commits", "peak_rss_mib")
        return {key: result[key] for key in keys} | {"commits_per_second": rate(result)}

    return {
        "window": asdict(window),
        "coevo": timing(coevo) | {key: coevo[key] for key in RUN_KEYS},
        "selection": timing(selection),
        "floor": timing(floor) | {"blobs": floor["blobs"], "parsed": floor["parsed"]},
        "naive": timing(naive),
        "speedup": naive["seconds"] / coevo["seconds"] if coevo["seconds"] > 0 else None,
        "selection_speedup": naive["seconds"] / selection["seconds"] if selection["seconds"] > 0 else None,
        "over_floor": coevo["seconds"] / floor["seconds"] if floor["seconds"] > 0 else None,
        "comparison": asdict(comparison),
    }


def print_report(data: dict[str, Any]) -> None:
    window, coevo, naive, cmp = data["window"], data["coevo"], data["naive"], data["comparison"]
    span = f"{window['since'] or 'start'} .. {window['until'] or 'HEAD'}"
    print(f"repository: {window['repo']}  language: {window['language']}  window: {span}")
    print(
        f"coevo run: {coevo['status']}, {coevo['commits']} commits scanned, "
        f"{coevo['commits_selected']} selected, {coevo['test_commits']} touching tests, "
        f"{coevo['pairs']} pairs, {coevo['candidates']} candidates, "
        f"{coevo['skipped_files']} skipped files"
    )
    print()
    print("co-evolution commits")
    print(f"  coevo single-commit pairs (rev2):          {cmp['coevo']}")
    print(f"  coevo multi-commit pairs (12 h window):    {cmp['coevo_multi_commit_pairs']}")
    print(f"  naive, test+production methods changed:    {cmp['naive_method_level']}")
    print(f"  naive, test+production files touched:      {cmp['naive_file_level']}")
    print(f"  intersection (coevo & naive methods):      {cmp['intersection']}")
    for side in ("only_coevo", "only_naive"):
        examples = ", ".join(cmp[f"{side}_examples"]) or "-"
        print(f"  {side.replace('_', ' ')}: {cmp[side]}  e.g. {examples}")
    if cmp["coevo_within_file_level"]:
        print("  check: coevo single-commit pairs ⊆ naive file-level set: OK")
    else:
        outside = cmp["coevo_outside_file_level"]
        print(f"  check: FAILED, {len(outside)} coevo pairs touch no test+production files:")
        for sha in outside[:EXAMPLES]:
            print(f"    {sha}")
    print()
    print("timing")
    for name, result in (
        ("coevo", coevo),
        ("selection", data["selection"]),
        ("floor", data["floor"]),
        ("naive", naive),
    ):
        print(
            f"  {name:9s}: {result['seconds']:8.1f} s  {result['commits']:6d} commits  "
            f"{result['commits_per_second']:8.1f} commits/s  "
            f"peak {result['peak_rss_mib']:7.1f} MiB"
        )
    print(f"  coevo's largest worker process: peak {coevo['worker_peak_rss_mib']:7.1f} MiB")
    for label, key in (("whole miner", "speedup"), ("selection pass", "selection_speedup")):
        value = data[key]
        print(f"  speedup, {label}: {value:.1f}x" if value is not None else f"  speedup, {label}: n/a")
    floor = data["floor"]
    ratio = data["over_floor"]
    print(f"  the floor parsed {floor['parsed']} of {floor['blobs']} blobs the miner needs")
    print(f"  coevo / floor: {ratio:.2f}x" if ratio is not None else "  coevo / floor: n/a")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    window = Window(args.repo, resolve_language(args.repo, args.language), args.since, args.until)
    if args.only:
        run_only(args.only, window)
        return 0
    coevo = spawn("coevo", window)
    selection = spawn("selection", window)
    floor = spawn("floor", window)
    naive = spawn("naive", window)
    comparison = compare(coevo, naive)
    data = summary(window, coevo, selection, floor, naive, comparison)
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print_report(data)
    return 0 if comparison.coevo_within_file_level else 1


if __name__ == "__main__":
    sys.exit(main())
