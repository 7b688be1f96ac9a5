"""Benchmark reading a revision's environment from git: one listing per commit against a git
process per question.

For the last ``--revisions`` commits of a repository it detects each one's environment and reads
its build files as ``prepare_revision`` does (``detect_env`` and ``build_files`` over a
:class:`~runners.environments.worktree.GitTree`), ``--runs`` times each way, alternating:

* **listing**: what coevo does: the commit named by its full id, whose tree one ``git ls-tree``
  lists (paths that exist, folders' contents) and whose files are read by blob id;
* **per question** (the previous behaviour): the same commit named ``<id>^{commit}``, which
  ``GitTree`` asks of git path by path (``git show``, ``git cat-file -e``, ``git ls-tree``).

It prints the mean milliseconds a revision each way and ``speedup: N.Nx``; it exits 1 when an
environment or a build file differs between the two ways.

Example::

    python bench/tree_read_speed.py --repo /tmp/requests --language python --revisions 50
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from runners.environments.envspec import commit_date, detect_env
from runners.environments.worktree import GitTree, _listing
from runners.toolchains import build_files


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repo", type=Path, required=True, help="a git repository (a clone)")
    parser.add_argument("--language", choices=("java", "python"), required=True)
    parser.add_argument("--revisions", type=int, default=50, help="the last N commits of HEAD")
    parser.add_argument("--runs", type=int, default=3, help="rounds, each way once a round")
    args = parser.parse_args()
    shas = subprocess.run(
        ["git", "-C", str(args.repo), "rev-list", f"--max-count={args.revisions}", "HEAD"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    dates = {sha: commit_date(args.repo, sha) for sha in shas}
    ways = {"listing": lambda sha: sha, "per question": lambda sha: f"{sha}^{{commit}}"}
    seconds: dict[str, list[float]] = {way: [] for way in ways}
    seen: dict[str, dict[str, object]] = {way: {} for way in ways}
    for round_ in range(args.runs):
        order = list(ways) if round_ % 2 == 0 else list(reversed(ways))
        for way in order:
            _listing.cache_clear()  # each round reads every commit afresh
            started = time.perf_counter()
            for sha in shas:
                tree = GitTree(args.repo, ways[way](sha))
                spec = detect_env(tree, args.language, dates[sha])
                seen[way][sha] = (spec, build_files(tree, spec))
            seconds[way].append(time.perf_counter() - started)
    for way, spent in seconds.items():
        each = statistics.mean(spent) / len(shas) * 1000
        print(f"{way:>12}: {each:7.1f} ms a revision ({len(shas)} revisions)")
    print(f"speedup: {statistics.mean(seconds['per question']) / statistics.mean(seconds['listing']):.1f}x")
    differ = [sha for sha in shas if seen["listing"][sha] != seen["per question"][sha]]
    for sha in differ[:5]:
        print(f"differs: {sha[:12]}", file=sys.stderr)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
