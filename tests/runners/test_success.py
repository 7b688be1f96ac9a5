"""The strict-success rule, on mutation results built by hand, and the gold check that calibrates it."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
from sqlmodel import select

from runners.mutation import Mutant, MutationResult
from runners.scoring.success import strict_success

TEST = "tests/test_shapes.py::test_triangle"
OTHER = "tests/test_shapes.py::test_square"


def _mutant(status: str, *killers: str) -> Mutant:
    """A mutant each killer detected by its own check."""
    return Mutant(
        "shapes.py", "triangle", 3, status, "ReplaceBinaryOperator_Mul_Div", "", killing_tests=killers,
        asserted_by=killers,
    )  # fmt: skip


def test_a_success_is_strict_when_it_detects_a_mutant_of_the_focal_code() -> None:
    measured = MutationResult((_mutant("KILLED", TEST, OTHER), _mutant("SURVIVED")))
    assert strict_success(True, TEST, measured)
    assert strict_success(
        True, "pkg.CalcTest#adds", MutationResult((_mutant("TIMED_OUT", "pkg.CalcTest#adds"),))
    )


def test_a_success_detecting_no_mutant_is_not_strict() -> None:
    others = MutationResult((_mutant("KILLED", OTHER), _mutant("SURVIVED"), _mutant("NO_COVERAGE")))
    assert not strict_success(True, TEST, others)
    # A RUN_ERROR with no test run is no detection, whatever it names.
    no_run = Mutant(
        "shapes.py",
        "triangle",
        3,
        "RUN_ERROR",
        "op",
        "",
        tests_run=0,
        killing_tests=(TEST,),
        asserted_by=(TEST,),
    )
    assert not strict_success(True, TEST, MutationResult((no_run,)))


def test_no_success_is_never_strict() -> None:
    assert not strict_success(False, TEST, MutationResult((_mutant("KILLED", TEST),)))
    assert not strict_success(False, TEST, None)


def test_nothing_measured_is_no_strict_success() -> None:
    """Fail closed: no result, zero mutants, no report or a run cut short shows nothing, whatever
    the reason given (PIT's "No mutations found" is text the tests could print)."""
    assert not strict_success(True, TEST, None)
    assert not strict_success(True, TEST, MutationResult(()))
    no_report = MutationResult((), "PIT wrote no report: No mutations found.", complete=False)
    assert not strict_success(True, TEST, no_report)
    failed = MutationResult((), "PIT wrote no report: timed out", complete=False)
    assert not strict_success(True, TEST, failed)
    partial = MutationResult((_mutant("KILLED", TEST),), "3 mutants not run: out of time", complete=False)
    assert not strict_success(True, TEST, partial)
    # Where nothing is asked (the gold detects nothing here either), a success stays strict.
    for measured in (None, MutationResult(()), no_report, partial):
        assert strict_success(True, TEST, measured, asked=False)


def test_an_exception_escaping_from_the_code_is_no_detection() -> None:
    """A mutant that makes the focal code raise (or loop) fails every test that calls it: only a
    test whose own check failed is its evidence; a kill no one showed to be a check (PIT's word
    alone, before coevo's confirmation run) is none."""
    escaped = Mutant("shapes.py", "rectangle", 3, "KILLED", "AddNot", "", killing_tests=(TEST, OTHER),
                     asserted_by=(OTHER,))  # fmt: skip
    assert not strict_success(True, TEST, MutationResult((escaped,)))
    assert strict_success(True, OTHER, MutationResult((escaped,)))
    timed_out = Mutant(
        "shapes.py", "rectangle", 3, "TIMED_OUT", "op", "", killing_tests=(TEST,), asserted_by=()
    )
    assert not strict_success(True, TEST, MutationResult((timed_out,)))
    by_pit = Mutant("Calc.java", "adds", 3, "KILLED", "MathMutator", "", killing_tests=("pkg.CalcTest#adds",))
    assert not strict_success(True, "pkg.CalcTest#adds", MutationResult((by_pit,)))
    confirmed = dataclasses.replace(by_pit, asserted_by=("pkg.CalcTest#adds",))
    assert strict_success(True, "pkg.CalcTest#adds", MutationResult((confirmed,)))


def test_detection_the_developers_own_method_does_not_show_is_not_asked() -> None:
    """Rule 5: where the gold detects no focal mutant (a new warnings.warn call, which no operator
    mutates), a success is strict; where it does, the agent's method must detect one too."""
    survived = MutationResult((_mutant("SURVIVED"), _mutant("SURVIVED")))
    assert strict_success(True, TEST, survived, asked=False)
    assert not strict_success(True, TEST, survived, asked=True)
    assert not strict_success(False, TEST, survived, asked=False)  # still a success first


def test_the_gold_check_measures_what_the_gold_detects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real task whose change only adds a deprecation warning: the gold checks the warning and
    kills none of the function's mutants, so detection is not asked of agents on it (click had
    one such task): an agent that checks the warning its own way succeeds strictly, as the gold."""
    import miner
    from curation import CurateRequest, curate
    from runners.scoring.agents import Agent
    from runners.scoring.scorer import ScoreOptions, score
    from tasks import AgentRun, GoldCheck, Task, open_store
    from tests.gitrepo import GitRepo

    monkeypatch.setenv("COEVO_WORK", str(tmp_path / "work"))
    old = "def area(width, height):\n    if width < 0:\n        return 0\n    return width * height\n"
    new = old.replace(
        "def area(width, height):\n",
        "def area(width, height):\n    warnings.warn('area is deprecated', DeprecationWarning)\n",
    )
    test = "import pytest\n\nfrom shapes import area\n\n\ndef test_area():\n    assert area(2, 3) == 6\n"
    repo = GitRepo(tmp_path / "warns")
    repo.commit("area", "2026-02-01T10:00:00+00:00", {
        "requirements.txt": "# pytest only\n", "shapes.py": old, "tests/test_shapes.py": test,
    })  # fmt: skip
    repo.commit("deprecate area", "2026-02-02T10:00:00+00:00", {
        "shapes.py": "import warnings\n\n\n" + new,
        "tests/test_shapes.py": test
        + "\n\ndef test_area_warns():\n    with pytest.warns(DeprecationWarning):\n        area(2, 3)\n",
    })  # fmt: skip
    db = tmp_path / "c.db"
    miner.mine(open_store(db), miner.MineRequest(location=str(repo.path)))
    assert not curate(open_store(db), CurateRequest(backend="local", workers=1, reruns=1)).errors
    with open_store(db).session() as session:
        (task,) = session.exec(select(Task)).all()
    assert task.test_ids == ["tests/test_shapes.py::test_area_warns"]
    mine = tmp_path / "mine.py"
    mine.write_text(
        "import pathlib, sys\npath = pathlib.Path(sys.argv[1])\npath.write_text(path.read_text() + "
        "'\\n\\ndef test_area_warns():\\n    with pytest.deprecated_call():\\n        area(1, 1)\\n')\n"
    )
    options = ScoreOptions(backend="local", test_timeout=120, trust_host=True, reruns=1)
    for agent in (Agent("gold"), Agent("mine", f"{sys.executable} {mine} {{test_file}}")):
        assert score(open_store(db), agent, options=options).errors == {}
    with open_store(db).session() as session:
        (check,) = session.exec(select(GoldCheck)).all()
        runs = {r.agent: r for r in session.exec(select(AgentRun)).all()}
    assert check.ok and check.undetecting == ["tests/test_shapes.py::test_area_warns"]
    assert runs["gold"].mutation_on_pass == 0.0 and runs["gold"].strict_success_rate == 1.0, runs[
        "gold"
    ].mutants
    assert (runs["mine"].success_rate, runs["mine"].strict_success_rate) == (1.0, 1.0), runs["mine"].outcomes


def test_runs_that_disagree_make_a_method_flaky() -> None:
    """An agent's method runs --reruns times on each code, as curation's cells: one outcome is
    kept when all agree; otherwise it is flaky (an error on the new code, not a failure on the
    old), whatever the order."""
    from runners.buildtools import TestRun
    from runners.results import Outcome, TestResult
    from runners.scoring.scorer import _agreed

    def runs(*outcomes: Outcome) -> list[TestRun]:
        return [TestRun((TestResult(TEST, outcome, f"run {i}"),)) for i, outcome in enumerate(outcomes)]

    for same in (Outcome.PASS, Outcome.FAIL, Outcome.COMPILE_ERROR, Outcome.ERROR, Outcome.SKIPPED):
        result, flaky = _agreed(TEST, runs(same, same, same), "old")
        assert (result.outcome, result.message, flaky) == (same, "run 0", False)
    mixes = (
        (Outcome.PASS, Outcome.FAIL, Outcome.PASS),
        (Outcome.FAIL, Outcome.FAIL, Outcome.PASS),
        (Outcome.PASS, Outcome.TIMEOUT, Outcome.PASS),
        (Outcome.ERROR, Outcome.FAIL, Outcome.FAIL),
    )
    for mixed in mixes:
        result, flaky = _agreed(TEST, runs(*mixed), "new")
        assert flaky and result.outcome == Outcome.ERROR, mixed
        assert result.message.startswith("flaky on the new code: its 3 runs gave "), result.message
    # A run that reports nothing for the method (its process died) disagrees with one that does.
    assert _agreed(TEST, [*runs(Outcome.PASS), TestRun(())], "new")[1]


def test_what_the_gold_check_asks_of_agents() -> None:
    """Nothing where the focal code has no mutant; what the gold's own checks detect in a complete
    run; everything (fail closed) where coevo could not measure the gold, so that a fault of its
    own never makes every success strict."""
    from runners.java.maven import NO_MUTATIONS
    from runners.scoring.scorer import _undetecting

    tests = [TEST, OTHER]
    assert _undetecting(tests, None) == tests
    assert _undetecting(tests, MutationResult((), f"{NO_MUTATIONS}.", complete=False)) == tests
    died = MutationResult(
        (), "PIT wrote no report: Coverage generation minion exited abnormally!", complete=False
    )
    assert _undetecting(tests, died) == []
    checked = Mutant(
        "shapes.py", "area", 3, "KILLED", "op", "", killing_tests=(TEST, OTHER), asserted_by=(TEST,)
    )
    assert _undetecting(tests, MutationResult((checked,))) == [OTHER]
    assert (
        _undetecting(tests, MutationResult((checked,), "2 mutants not run: out of time", complete=False))
        == []
    )
