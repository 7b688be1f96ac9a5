"""Benchmark reading Python per-test coverage: in the tests' own process against a reader process.

It builds a revision of a Python project on the host (its venv, as curation builds it), takes
the test functions of the given test files (the first ``--tests`` of each), and runs them under
coverage.py with coevo's pytest plugin ``--runs`` times each way, alternating:

* **in-process**: what curation and scoring run: the plugin turns coverage.py's data into each
  test's lines at the end of the tests' process (``pytest_unconfigure``);
* **reader** (the previous behaviour, kept here only): the same run without that hook, then a
  Python process of its own that reads coverage.py's data file and writes the same lines.

It prints the mean seconds of a run each way and ``speedup: N.Nx``; it exits 1 when the lines
of any run differ between the two ways.

Example::

    python bench/python_coverage_speed.py --repo /tmp/requests --test-file tests/test_hooks.py --runs 10
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from curation.static import runnable_id
from miner.python import parse_python
from runners.environments.revisions import prepare_revision
from runners.python import pytest_tool
from runners.python.venvs import venv_for, venv_python

_READER = """\
import json
import sys

import coverage

data = coverage.CoverageData(basename=sys.argv[1])
data.read()
lines = {}
for path in data.measured_files():
    for line, contexts in (data.contexts_by_lineno(path) or {}).items():
        for context in contexts:
            if context:
                lines.setdefault(context, {}).setdefault(path, []).append(line)
with open(sys.argv[2], "w", encoding="utf-8") as out:
    json.dump(lines, out)
"""
"""The reader coevo ran as a process of its own after each measured run, before the plugin did it."""


def _test_ids(root: Path, test_file: str, limit: int) -> list[str]:
    source = (root / test_file).read_bytes()
    tests = (m for m in parse_python(source, scan="none").methods if m.is_test)
    return list(dict.fromkeys(runnable_id("python", test_file, source, m.key) for m in tests))[:limit]


def _run(
    venv: Path, worktree: Path, ids: list[str], files: list[str], in_process: bool
) -> tuple[float, dict]:
    """One run of ``ids`` with coverage either way: its seconds and the lines by test."""
    with tempfile.TemporaryDirectory(prefix="coevo-bench-pycov-") as name:
        scratch = Path(name)
        plugin = pytest_tool._PLUGIN_SOURCE
        if not in_process:  # the previous plugin: no hook reads coverage.py's data
            plugin = plugin.replace("def pytest_unconfigure(", "def _not_a_hook(")
        (scratch / "_coevo_pytest.py").write_text(plugin)
        (scratch / "select.json").write_text(json.dumps(ids))
        rc = f"[run]\nsource =\n    {worktree.resolve()}\ndata_file = {scratch / 'coverage.data'}\n"
        (scratch / "coveragerc").write_text(rc)
        out = scratch / "coverage.json"
        env = {
            **os.environ,
            **pytest_tool._test_env(venv, worktree, (scratch,)),
            "COEVO_PYTEST_SELECT": str(scratch / "select.json"),
            "COEVO_PYTEST_RESULTS": str(scratch / "results.jsonl"),
            "COEVO_PYTEST_COVERAGE": str(out),
        }
        python = str(venv_python(venv))
        argv = [python, "-m", "coverage", "run", f"--rcfile={scratch / 'coveragerc'}", "-m", "pytest"]
        argv += ["-p", "_coevo_pytest", "-q", "--tb=short", "-p", "no:cacheprovider", *files]
        started = time.monotonic()
        subprocess.run(argv, cwd=worktree, env=env, capture_output=True, check=False)
        if not in_process:
            (scratch / "read_coverage.py").write_text(_READER)
            reader = [python, str(scratch / "read_coverage.py"), str(scratch / "coverage.data"), str(out)]
            subprocess.run(reader, cwd=worktree, env=env, capture_output=True, check=False)
        seconds = time.monotonic() - started
        return seconds, json.loads(out.read_text()) if out.is_file() else {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True, type=Path, help="a git clone of a Python project")
    parser.add_argument("--rev", default="HEAD", help="the revision to build (default HEAD)")
    parser.add_argument("--test-file", action="append", required=True, help="a test file (repeatable)")
    parser.add_argument("--tests", type=int, default=30, help="test functions taken per file (default 30)")
    parser.add_argument("--runs", type=int, default=10, help="runs each way (default 10)")
    args = parser.parse_args()
    sha = subprocess.run(
        ["git", "-C", str(args.repo), "rev-parse", args.rev], capture_output=True, text=True, check=True
    ).stdout.strip()
    os.environ.setdefault("COEVO_WORK", tempfile.mkdtemp(prefix="coevo-bench-pycov-"))
    built = prepare_revision(
        Path(os.environ["COEVO_WORK"]), args.repo, sha, "python", "local", test_files=args.test_file
    )
    if built.status != "ok" or built.worktree is None or built.spec is None:
        print(f"{sha[:12]} did not build: {built.message}")
        return 2
    worktree = built.worktree
    venv = venv_for(built.spec, worktree)
    ids = [test for test_file in args.test_file for test in _test_ids(worktree, test_file, args.tests)]
    times: dict[bool, list[float]] = {True: [], False: []}
    differ = 0
    for _ in range(args.runs):
        lines = {}
        for in_process in (False, True):
            seconds, lines[in_process] = _run(venv, worktree, ids, args.test_file, in_process)
            times[in_process].append(seconds)
        differ += lines[True] != lines[False] or not lines[True]
    before, after = statistics.mean(times[False]), statistics.mean(times[True])
    print(f"{sha[:12]}: {len(ids)} tests in {len(args.test_file)} files, {args.runs} runs each way")
    print(f"reader process {before:.3f}s a run, in-process {after:.3f}s; runs whose lines differ: {differ}")
    print(f"speedup: {before / max(after, 1e-9):.2f}x")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
