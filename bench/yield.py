"""Benchmark curation's task yield: coevo at a baseline ref against this checkout.

Over the repositories and windows of ``bench/build_rate.py`` (three Python, three Java, of
different ages; ``--pairs`` overrides the number of pairs per window), each behaviour mines the
window into a store of its own and curates it (``coevo mine``, ``coevo curate --backend
docker``), with caches of its own. The old behaviour is coevo at ``--baseline-ref`` (exported with
its own venv, as in build_rate), the new one this checkout. Stores are kept in ``--results``,
per coevo commit and repository, so a rerun resumes (curation is resumable) and the two
behaviours can run at different times (``--only old``, ``--only new``).

It prints, per repository and behaviour, pairs curated, tasks, tasks per 100 pairs and the test
methods those tasks hold; the labels that moved between the behaviours (per candidate:
repository, rev2, test file and method); and, for a person to check against the commits, a
sample of up to 10 of the new behaviour's tasks per language (those only it made first, then ones
both made): repository, commit, test file, methods, focal code and the reason NO fails.

Example::

    python bench/yield.py --repos-dir /work/trials/bench-repos --results /tmp/yield --only old
    python bench/yield.py --repos-dir /work/trials/bench-repos --results /tmp/yield
    python bench/yield.py --repos-dir /work/trials/bench-repos --results /tmp/y --until 2025-07-01 --pairs 6
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from build_rate import WINDOWS, Coevo, Window, new_coevo, old_coevo
from sqlmodel import select

from tasks import Candidate, CurationRecord, RevisionPair, Task, open_store

BEHAVIOURS = ("old", "new")

PATTERN_WINDOWS = (
    Window("pallets/flask", "python", "2024-11-02", 4, "2024: a new test file takes tests from another"),
    Window("google/gson", "java", "2025-12-24", 4, "2025: java.time tests share a new roundTrip helper"),
)
"""Windows that end just after a commit showing one of issue 13's patterns (``--windows patterns``)."""


def _key(window: Window) -> str:
    """The window's name in stores and reports: the repository's, and its end date unless a default."""
    default = any(w.public == window.public and w.until == window.until for w in WINDOWS)
    return window.name if default else f"{window.name}-{window.until}"


@dataclass(frozen=True)
class Outcome:
    """What one behaviour made of one window."""

    pairs: int
    tasks: list[dict[str, object]]
    labels: dict[str, str]
    """``rev2 test_file::method`` → its label or drop reason."""


def curate_window(coevo: Coevo, window: Window, path: Path, args: argparse.Namespace) -> Outcome:
    """Mines and curates ``window`` with ``coevo`` into its own store (resumed when it exists)."""
    db = args.results / f"{coevo.commit[:12]}-{_key(window)}.db"
    caches = args.cache / f"caches-{coevo.commit[:12]}"
    env = os.environ | {
        "COEVO_WORK": str(caches / "work"),
        "COEVO_VENVS": str(caches / "venvs"),
        "COEVO_M2": str(caches / "m2"),
    }
    until = datetime.fromisoformat(window.until).replace(tzinfo=UTC)
    since = (until - timedelta(days=365)).date().isoformat()
    cli = [str(coevo.python), "-m", "coevo.cli"]
    mine = [*cli, "mine", str(path), "--language", window.language, "--since", since]
    mine += ["--until", window.until, "--db", str(db)]
    _run(mine, coevo, env, f"{coevo.behaviour} {window.name}: mining")
    first = _first_curated_date(db, window.pairs)
    curate = [*cli, "curate", "--db", str(db), "--backend", args.backend, "--since", first]
    _run(curate, coevo, env, f"{coevo.behaviour} {window.name}: curating the last {window.pairs} pairs")
    return _outcome(db, first)


def _run(command: list[str], coevo: Coevo, env: dict[str, str], what: str) -> None:
    print(what, file=sys.stderr, flush=True)
    done = subprocess.run(command, cwd=coevo.source, env=env, check=False)
    if done.returncode != 0:
        print(f"  {what}: exit {done.returncode}", file=sys.stderr, flush=True)


def _first_curated_date(db: Path, pairs: int) -> str:
    """The rev2 date of the oldest of the last ``pairs`` pairs: curation starts there."""
    store = open_store(str(db))
    with store.session() as s:
        dates = sorted((p.rev2_date for p in s.exec(select(RevisionPair)).all() if p.rev2_date), reverse=True)
    store.close()
    chosen = dates[:pairs]
    return chosen[-1].date().isoformat() if chosen else "1970-01-01"


def _outcome(db: Path, since: str) -> Outcome:
    store = open_store(str(db))
    with store.session() as s:
        pairs = {p.id: p for p in s.exec(select(RevisionPair)).all()}
        chosen = {i for i, p in pairs.items() if p.rev2_date and p.rev2_date.date().isoformat() >= since}
        labels = {}
        for record, candidate in s.exec(
            select(CurationRecord, Candidate).join(Candidate, Candidate.id == CurationRecord.candidate_id)
        ).all():
            if record.pair_id in chosen:
                key = f"{pairs[record.pair_id].rev2[:10]} {candidate.test_file}::{candidate.test_method}"
                labels[key] = str(record.drop_reason or record.label)
        tasks = [t.model_dump() for t in s.exec(select(Task)).all() if t.pair_id in chosen]
    store.close()
    return Outcome(len(chosen), tasks, labels)


def report(measured: dict[str, dict[Window, Outcome]], seed: int) -> None:
    print(f"\n{'window':<24} {'lang':<6}", end="")
    for behaviour in measured:
        print(f" {behaviour + ' pairs':>10} {'tasks':>6} {'/100':>6} {'methods':>8}", end="")
    print()
    windows = list(dict.fromkeys(w for outcomes in measured.values() for w in outcomes))
    for window in windows:
        print(f"{_key(window):<24} {window.language:<6}", end="")
        for outcomes in measured.values():
            got = outcomes.get(window)
            if got is None:
                print(f" {'-':>10} {'-':>6} {'-':>6} {'-':>8}", end="")
            else:
                per = 100 * len(got.tasks) / got.pairs if got.pairs else 0.0
                methods = sum(len(t["test_methods"]) for t in got.tasks)  # type: ignore[arg-type]
                print(f" {got.pairs:>10} {len(got.tasks):>6} {per:>6.1f} {methods:>8}", end="")
        print()
    old, new = measured.get("old", {}), measured.get("new", {})
    if old and new:
        _report_moved(old, new, windows)
    rng = random.Random(seed)
    for language in ("python", "java"):
        fresh: list[tuple[Window, dict[str, object], str]] = []
        both: list[tuple[Window, dict[str, object], str]] = []
        for window in windows:
            if window.language != language or window not in new:
                continue
            known = {(t["rev2"], t["test_file"], t["track"]) for t in old.get(window, _EMPTY).tasks}
            for task in new[window].tasks:
                key = (task["rev2"], task["test_file"], task["track"])
                made = "not compared" if window not in old else "both" if key in known else "new only"
                (fresh if made == "new only" else both).append((window, task, made))
        sample = rng.sample(fresh, min(10, len(fresh)))
        sample += rng.sample(both, min(10 - len(sample), len(both)))
        print(
            f"\nnew behaviour's tasks, {language}: {len(fresh)} that only it made, {len(both)} that both made"
            f" or not compared; a sample of {len(sample)} to check by hand, those only it made first"
        )
        for window, task, made in sample:
            _print_task(window, task, made)


def _report_moved(old: dict[Window, Outcome], new: dict[Window, Outcome], windows: list[Window]) -> None:
    moved: Counter[tuple[str, str]] = Counter()
    for window in windows:
        if window not in old or window not in new:
            continue
        for key, label in new[window].labels.items():
            before = old[window].labels.get(key, "(not a candidate)")
            if before != label:
                moved[(before, label)] += 1
    print("\nlabels that moved (old → new: candidates)")
    for (before, after), count in moved.most_common():
        print(f"  {before} → {after}: {count}")
    if not moved:
        print("  none")


def _print_task(window: Window, task: dict[str, object], made: str) -> None:
    focal = ", ".join(
        f"{f['method']} ({f.get('unit', 'method')}, {f['provenance']})"
        for f in task["focal_methods"]  # type: ignore[attr-defined]
    )
    print(f"  {window.public} {str(task['rev2'])[:10]} {task['track']} {task['test_file']} ({made})")
    print(f"    methods: {', '.join(task['test_methods'])}")  # type: ignore[arg-type]
    print(f"    focal: {focal}")
    for method, cells in task["matrix"].items():  # type: ignore[attr-defined]
        cell = cells.get("NO") or cells.get("ON") or {}
        first = str(cell.get("message", "")).splitlines()[:1]
        print(f"    {method}: NO/ON {cell.get('outcome')} {first[0] if first else ''}")


_EMPTY = Outcome(0, [], {})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repos", nargs="*", help="NAME=PATH for a repository not under --repos-dir")
    parser.add_argument("--repos-dir", type=Path, help="a folder holding one clone per repository")
    parser.add_argument("--results", type=Path, required=True, help="where the stores are kept")
    parser.add_argument("--cache", type=Path, help="coevo at the baseline and each behaviour's caches")
    parser.add_argument(
        "--baseline-ref", default="63083d0", help="the old behaviour's coevo (default: main before issue 13)"
    )
    parser.add_argument("--new-ref", help="the new behaviour's coevo (default: this checkout as it is)")
    parser.add_argument("--only", choices=BEHAVIOURS, help="run one behaviour (report what is kept)")
    parser.add_argument("--pairs", type=int, help="pairs per window (default: each window's own)")
    parser.add_argument(
        "--until", help="end every chosen window before this date (YYYY-MM-DD) instead of its own: more pairs"
    )
    parser.add_argument("--backend", default="docker", choices=("docker", "local"))
    parser.add_argument(
        "--windows",
        default="default",
        choices=("default", "patterns", "all"),
        help="build_rate's windows, windows rich in issue 13's patterns, or both",
    )
    parser.add_argument("--window", action="append", help="only this window (its store name; repeatable)")
    parser.add_argument("--seed", type=int, default=13, help="the sample's seed")
    args = parser.parse_args()
    args.results.mkdir(parents=True, exist_ok=True)
    args.cache = args.cache or args.results / "cache"
    given = dict(item.split("=", 1) for item in args.repos)
    chosen = {"default": WINDOWS, "patterns": PATTERN_WINDOWS, "all": WINDOWS + PATTERN_WINDOWS}[args.windows]
    chosen = tuple(w for w in chosen if not args.window or _key(w) in args.window)
    windows = [replace(w, pairs=args.pairs) if args.pairs else w for w in chosen]
    windows = [replace(w, until=args.until) if args.until else w for w in windows]
    measured: dict[str, dict[Window, Outcome]] = {}
    for behaviour in BEHAVIOURS:
        if args.only and behaviour != args.only:
            continue
        if behaviour == "old":
            coevo = old_coevo(args.baseline_ref, args.cache)
        else:
            coevo = (
                replace(old_coevo(args.new_ref, args.cache), behaviour="new") if args.new_ref else new_coevo()
            )
        outcomes = {}
        for window in windows:
            path = (
                Path(given[window.name]) if window.name in given else (args.repos_dir or Path()) / window.name
            )
            if not path.exists():
                print(f"{window.public}: no clone at {path}, skipped", file=sys.stderr)
                continue
            outcomes[window] = curate_window(coevo, window, path, args)
        measured[behaviour] = outcomes
    report(measured, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
