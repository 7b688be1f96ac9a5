"""Reading PIT's report and making Python mutants (no build needed)."""

from __future__ import annotations

from pathlib import Path

import cosmic_ray.plugins

from runners.java.pit import java_focal_methods, only_these_tests, parse_mutations, pit_test_id
from runners.mutation import Mutant, MutationResult, after_control_run
from runners.python.mutants import PYTHON_OPERATORS, python_mutants

DATA = Path(__file__).parent / "data"


def _mutation(status: str, tests_run: int, line: int, killer: str = "") -> str:
    return (
        f"<mutation detected='{str(status not in ('SURVIVED', 'NO_COVERAGE')).lower()}' status='{status}'"
        f" numberOfTestsRun='{tests_run}'><sourceFile>Calc.java</sourceFile>"
        "<mutatedClass>demo.Calc</mutatedClass><mutatedMethod>add</mutatedMethod>"
        f"<methodDescription>(II)I</methodDescription><lineNumber>{line}</lineNumber>"
        "<mutator>org.pitest.mutationtest.engine.gregor.mutators.MathMutator</mutator>"
        f"<killingTest>{killer}</killingTest><description>Replaced integer addition with subtraction"
        "</description></mutation>"
    )


def test_pit_report_statuses_and_a_run_error_with_no_test_is_not_a_kill() -> None:
    report = (
        "<?xml version='1.0' encoding='UTF-8'?><mutations partial='false'>"
        + _mutation("KILLED", 1, 3, "demo.CalcTest.[test:add()]")
        + _mutation("SURVIVED", 2, 4)
        + _mutation("TIMED_OUT", 1, 5)
        + _mutation("NO_COVERAGE", 0, 6)
        + _mutation("RUN_ERROR", 0, 7)  # the minion had none of the tests mapped to it
        + _mutation("RUN_ERROR", 1, 8)  # a test ran and the minion died: PIT's detection
        + "</mutations>"
    )
    mutants = parse_mutations(report.encode())
    assert [(m.line, m.status, m.tests_run, m.detected) for m in mutants] == [
        (3, "KILLED", 1, True),
        (4, "SURVIVED", 2, False),
        (5, "TIMED_OUT", 1, True),
        (6, "NO_COVERAGE", 0, False),
        (7, "RUN_ERROR", 0, False),
        (8, "RUN_ERROR", 1, True),
    ]
    assert mutants[0].mutator == "MathMutator" and mutants[0].method == "add"
    assert mutants[0].killing_tests == ("demo.CalcTest#add",)  # without the full matrix: PIT's first
    assert MutationResult(tuple(mutants)).score == 3 / 6
    assert MutationResult(()).score is None


def test_python_mutants_are_pits_defaults_on_the_focal_lines_only() -> None:
    assert set(PYTHON_OPERATORS) <= set(cosmic_ray.plugins.operator_names())
    source = b"def area(w, h):\n    return w * h\n\n\ndef half(x):\n    return x / 2\n"
    mutants = python_mutants([{"file": "a.py", "method": "area", "start": 1, "end": 2}], {"a.py": source})
    found = [(m.function, m.line, m.operator) for m in mutants]
    assert found == [("area", 2, "ReplaceBinaryOperator_Mul_Div")]
    assert mutants[0].source == source.replace(b"w * h", b"w / h")
    # Not UTF-8, or not Python (Cosmic Ray's parser would mutate it anyway): no mutants, no error.
    broken = {
        "a.py": b"def area(w, h):\n    return w * h  # \xff\n",
        "b.py": b"def area(w, h:\n    return w * h\n",
    }
    focal = [{"file": f, "method": "area", "start": 1, "end": 2} for f in broken]
    assert python_mutants(focal, broken) == []


ADAPTERS = b"""package demo;

public class Adapters {
    public static final Adapter NAME = new Adapter() {
        @Override public String read(String in) { return in.trim(); }
    };

    int size() { return 1; }

    static class Inner {
        Inner() {}
        int twice(int x) { return 2 * x; }
    }
}
"""


def test_pit_names_focal_methods_of_declared_nested_and_anonymous_classes() -> None:
    path = "src/main/java/demo/Adapters.java"
    focal = [
        {"file": path, "method": "Adapters.size()", "start": 8, "end": 8},
        {"file": path, "method": "Adapters.Inner.twice(int)", "start": 12, "end": 12},
        {"file": path, "method": "Adapters.Inner.Inner()", "start": 11, "end": 11},
        # javac numbers the anonymous class (Adapters$1): PIT gets every class nested in Adapters.
        {"file": path, "method": "Adapters.NAME.read(String)", "start": 5, "end": 5},
    ]
    named = [(f.class_name, f.method, f.siblings) for f in java_focal_methods(focal, {path: ADAPTERS})]
    assert named == [
        ("demo.Adapters", "size", ("size",)),
        ("demo.Adapters$Inner", "twice", ("<init>", "twice")),
        ("demo.Adapters$Inner", "<init>", ("<init>", "twice")),
        ("demo.Adapters$*", "read", ("read",)),
    ]


def test_only_the_scored_test_methods_stay_in_the_class_pit_gets() -> None:
    source = b"""package demo;

import org.junit.jupiter.api.Test;

class CalcTest {
    private int helper() { return 2; }

    @Test
    void keeps() { assert helper() == 2; }

    @Test
    void drops() {
        assert false;
    }
}
"""
    pruned = only_these_tests(source, "java", ["keeps"]).decode()
    assert "void keeps()" in pruned and "helper()" in pruned
    assert "drops" not in pruned and "assert false" not in pruned
    assert pruned.count("@Test") == 1


LOOP_CALC = """package demo;

public final class Calc {
    public static long countTo(long n) {
        long i = 0;
        while (i < n) {
            i++;
        }
        return i;
    }
}
"""
LOOP_TEST = """package demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

class CalcTest {
    @Test
    void countsToThree() {
        assertEquals(3, Calc.countTo(3));
    }

    @Test
    void countsToZero() {
        assertEquals(0, Calc.countTo(0));
    }
}
"""
"""The sources PIT mutated for ``data/pit-matrix-timeouts.xml``: two mutants loop forever."""


def _killers(report: str, scored: list[str]) -> list[tuple[int, str, str, tuple[str, ...]]]:
    mutants = parse_mutations((DATA / report).read_bytes(), scored)
    return [(m.line, m.mutator, m.status, m.killing_tests) for m in mutants]


def test_pits_full_matrix_names_every_test_that_detects_each_mutant() -> None:
    """Saved real reports (``data/README.md`` says how each was made), in coevo's test ids."""
    adds, adds_zero = "demo.CalcTest#adds", "demo.CalcTest#addsZero"
    # JUnit 5: a method and a parameterized one (``test-template``); ``add(x, 0)`` cannot tell
    # ``+`` from ``-``, and the failing tests PIT skipped detect nothing.
    assert _killers("pit-matrix-jupiter.xml", [adds, "demo.CalcTest#addsWrongly", adds_zero]) == [
        (5, "MathMutator", "KILLED", (adds,)),
        (6, "PrimitiveReturnsMutator", "KILLED", (adds, adds_zero)),
    ]
    # JUnit 4 through the vintage engine, and a Parameterized runner's invocations (``addsZero[0]``).
    assert _killers("pit-matrix-junit4.xml", [adds, "demo.CalcTest#addsWrongly"]) == [
        (5, "MathMutator", "KILLED", (adds,)),
        (6, "PrimitiveReturnsMutator", "KILLED", (adds,)),
    ]
    assert _killers("pit-matrix-junit4-parameterized.xml", ["demo.AddZeroTest#addsZero"]) == [
        (5, "MathMutator", "SURVIVED", ()),
        (6, "PrimitiveReturnsMutator", "KILLED", ("demo.AddZeroTest#addsZero",)),
    ]
    # A timed-out minion names no killing test: the covering tests not listed as succeeding.
    three, zero = "demo.CalcTest#countsToThree", "demo.CalcTest#countsToZero"
    assert _killers("pit-matrix-timeouts.xml", [three, zero]) == [
        (6, "ConditionalsBoundaryMutator", "KILLED", (three, zero)),
        (7, "MathMutator", "TIMED_OUT", (three,)),  # countsToZero never enters the loop
        (6, "NegateConditionalsMutator", "TIMED_OUT", (three, zero)),
        (9, "PrimitiveReturnsMutator", "KILLED", (three,)),
    ]


def test_pit_test_names_become_coevo_ids() -> None:
    vintage = "demo.AddZeroTest.[engine:junit-vintage]/[runner:demo.AddZeroTest]/[test:%5B1%5D]"
    assert pit_test_id(vintage + "/[test:addsZero%5B1%5D(demo.AddZeroTest)]") == "demo.AddZeroTest#addsZero"
    nested = "demo.CalcTest$Inner.[engine:junit-jupiter]/[class:demo.CalcTest]/[nested-class:Inner]"
    assert pit_test_id(nested + "/[method:adds(int)]") == "demo.CalcTest$Inner#adds"
    assert pit_test_id("demo.CalcTest.adds(demo.CalcTest)") == "demo.CalcTest#adds"  # PIT's JUnit 4
    assert pit_test_id("something else") == "something else"
    # Matched to the scored ids, which may spell a nested class with a dot.
    report = (
        (DATA / "pit-matrix-jupiter.xml")
        .read_bytes()
        .replace(b"[method:adds()]", b"[nested-class:In]/[method:adds()]")
    )
    (first, _) = parse_mutations(report, ["demo.CalcTest.In#adds"])
    assert first.killing_tests == ("demo.CalcTest.In#adds",)


def test_a_test_that_fails_the_control_run_gets_credit_for_no_mutant() -> None:
    a, b = "t.py::test_a", "t.py::test_b"

    def mutant(status: str, *killers: str) -> Mutant:
        return Mutant("m.py", "f", 1, status, "op", "", killing_tests=killers)

    result = MutationResult(
        (mutant("KILLED", a, b), mutant("KILLED", b), mutant("TIMED_OUT", b), mutant("SURVIVED"))
    )
    assert after_control_run(result, [a, b], {a, b}) is result  # both pass again: nothing changes
    checked = after_control_run(result, [a, b], {a})
    assert [(m.status, m.killing_tests) for m in checked.mutants] == [
        ("KILLED", (a,)),
        ("SURVIVED", ()),
        ("SURVIVED", ()),
        ("SURVIVED", ()),
    ]
    assert checked.score == 1 / 4 and checked.unstable == (b,)
    assert checked.message == (
        "test_b did not pass again on the unmutated code after the mutants (the control run): "
        "no mutant counts as detected by it"
    )
    # A detected mutant naming no test was detected by all of them.
    unnamed = MutationResult((mutant("RUN_ERROR"),), "2 mutants not run: out of time")
    assert after_control_run(unnamed, [a, b], {a}).mutants[0].status == "RUN_ERROR"
    nobody = after_control_run(unnamed, [a, b], set())
    assert nobody.mutants[0].status == "SURVIVED" and nobody.unstable == (a, b)
    assert nobody.message.startswith("2 mutants not run: out of time; test_a, test_b did not pass")
    assert nobody.message.endswith("detected by them")


def test_a_pit_report_coevo_cannot_read_is_no_measurement() -> None:
    """What a test's process could leave in PIT's report folder: not XML, a number that is none."""
    import pytest

    from runners.results import UnreadableReport

    for report in (
        b"<mutations><mutation",
        b"not xml",
        b"<mutations>"
        + _mutation("KILLED", 1, 3)
        .replace("<lineNumber>3</lineNumber>", "<lineNumber>three</lineNumber>")
        .encode()
        + b"</mutations>",
    ):
        with pytest.raises(UnreadableReport):
            parse_mutations(report)
