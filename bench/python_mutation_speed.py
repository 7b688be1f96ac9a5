"""Benchmark Python mutation testing: every mutant's run forked by one driver process against a
process per mutant (coevo's way before the driver).

It writes a small project (a module of arithmetic functions and their tests) into a temporary
folder, builds its venv on the host, makes Cosmic Ray's mutants of every function, and measures
``--runs`` times each way, alternating:

* **one driver**: :meth:`~runners.python.pytest_tool.PytestTool.mutation`, whose mutant runs (and
  control run) are forks of one process that has pytest and coverage.py loaded;
* **a process per mutant** (the previous behaviour): each mutant written over the module by the
  host, then the tests run alone by a driver of their own (a new interpreter importing pytest
  and coverage.py), as ``coverage run -m pytest`` was started per mutant before.

It prints seconds and processor seconds (this process's children) a way, ``speedup: N.Nx``, and
exits 1 when a mutant's status differs between the two ways.

Example::

    python bench/python_mutation_speed.py --runs 3
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from runners import EnvSpec, LocalSandbox
from runners.python.mutants import python_mutants
from runners.python.pytest_tool import PytestTool, _fate

MODULE = """\
def area(width, height):
    if width < 0 or height < 0:
        raise ValueError("negative side")
    return width * height


def mean(values):
    total = 0
    for value in values:
        total = total + value
    return total / len(values)


def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


def discount(price, percent):
    if percent > 100:
        percent = 100
    return price - price * percent / 100
"""
TESTS = """\
import pytest

from shapes import area, clamp, discount, mean


def test_area():
    assert area(2, 3) == 6
    with pytest.raises(ValueError):
        area(-1, 2)


def test_mean():
    assert mean([1, 2, 3]) == 2


def test_clamp():
    assert clamp(5, 0, 10) == 5
    assert clamp(-1, 0, 10) == 0


def test_discount():
    assert discount(200, 10) == 180
"""
FOCAL = [
    {"file": "shapes.py", "method": "area", "start": 1, "end": 4},
    {"file": "shapes.py", "method": "mean", "start": 7, "end": 11},
    {"file": "shapes.py", "method": "clamp", "start": 14, "end": 19},
    {"file": "shapes.py", "method": "discount", "start": 22, "end": 25},
]
SPEC = EnvSpec(
    "python", f"{sys.version_info[0]}.{sys.version_info[1]}", "pip", install=(("pytest", "coverage"),)
)


def per_process(tool: PytestTool, box: LocalSandbox, tests: list[str], mutants: list) -> list[str]:
    """The previous way: a process per mutant, the host writing each mutant over the module
    (``mutants``: those the driver's way ran, not those no test's coverage reached)."""
    originals = {mutant.file: box.read_file(mutant.file) or b"" for mutant in mutants}
    statuses = []
    for mutant in mutants:
        box.write_file(mutant.file, mutant.source)
        run, records = tool._run(box, SPEC, tests, 60, coverage=True, measure=False)
        box.write_file(mutant.file, originals[mutant.file])
        statuses.append(_fate(mutant, run, records).status)
    return statuses


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3, help="rounds, each way once a round")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "project"
        (root / "tests").mkdir(parents=True)
        (root / "shapes.py").write_text(MODULE)
        (root / "tests" / "test_shapes.py").write_text(TESTS)
        os.environ.setdefault("COEVO_VENVS", str(Path(folder) / "venvs"))
        box = LocalSandbox(root)
        tool = PytestTool()
        built = tool.build(box, SPEC, 1800)
        if not built.ok:
            print(f"the project did not build: {built.message}", file=sys.stderr)
            return 1
        tests = [f"tests/test_shapes.py::test_{name}" for name in ("area", "mean", "clamp", "discount")]
        mutants = python_mutants(FOCAL, {"shapes.py": MODULE.encode()})
        print(f"{len(mutants)} mutants of {len(FOCAL)} functions, {len(tests)} tests")
        first = tool.mutation(box, SPEC, tests, mutants, 600).mutants
        ran = [mutant for mutant, found in zip(mutants, first, strict=True) if found.status != "NO_COVERAGE"]
        print(f"{len(ran)} of them run, each way (the others no test reaches)")

        def driver() -> list[str]:
            return [
                m.status
                for m in tool.mutation(box, SPEC, tests, mutants, 600).mutants
                if m.status != "NO_COVERAGE"
            ]

        ways = {"one driver": driver, "a process per mutant": lambda: per_process(tool, box, tests, ran)}
        seconds: dict[str, list[float]] = {way: [] for way in ways}
        cpu: dict[str, list[float]] = {way: [] for way in ways}
        seen: dict[str, list[str]] = {}
        for round_ in range(args.runs):
            for way in list(ways) if round_ % 2 == 0 else list(reversed(ways)):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                started = time.perf_counter()
                seen[way] = ways[way]()
                seconds[way].append(time.perf_counter() - started)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu[way].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    for way in ways:
        mean_cpu = statistics.mean(cpu[way])
        print(f"{way:>22}: {statistics.mean(seconds[way]):6.2f} s, {mean_cpu:6.2f} s of processor")
    speedup = statistics.mean(seconds["a process per mutant"]) / statistics.mean(seconds["one driver"])
    print(f"speedup: {speedup:.1f}x")
    if seen["one driver"] != seen["a process per mutant"]:
        print("statuses differ:", seen, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
