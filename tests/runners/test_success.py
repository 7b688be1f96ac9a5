"""The strict-success rule, on mutation results built by hand (nothing runs)."""

from __future__ import annotations

from runners.mutation import Mutant, MutationResult
from runners.success import strict_success

TEST = "tests/test_shapes.py::test_triangle"
OTHER = "tests/test_shapes.py::test_square"


def _mutant(status: str, *killers: str) -> Mutant:
    return Mutant(
        "shapes.py", "triangle", 3, status, "ReplaceBinaryOperator_Mul_Div", "", killing_tests=killers
    )


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
    no_run = Mutant("shapes.py", "triangle", 3, "RUN_ERROR", "op", "", tests_run=0, killing_tests=(TEST,))
    assert not strict_success(True, TEST, MutationResult((no_run,)))


def test_no_success_is_never_strict() -> None:
    assert not strict_success(False, TEST, MutationResult((_mutant("KILLED", TEST),)))
    assert not strict_success(False, TEST, None)


def test_focal_code_without_mutants_leaves_success_as_it_is() -> None:
    assert strict_success(True, TEST, None)  # nothing to measure
    assert strict_success(True, TEST, MutationResult(()))  # PIT found none on the focal lines
    found_none = MutationResult((), "PIT wrote no report: No mutations found.", complete=True)
    assert strict_success(True, TEST, found_none)


def test_mutants_that_could_not_be_measured_prove_nothing() -> None:
    failed = MutationResult((), "PIT wrote no report: timed out", complete=False)
    assert not strict_success(True, TEST, failed)
    # What was measured before time ran out still counts.
    partial = MutationResult((_mutant("KILLED", TEST),), "3 mutants not run: out of time", complete=False)
    assert strict_success(True, TEST, partial)
