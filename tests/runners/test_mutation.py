"""Reading PIT's report and making Python mutants (no build needed)."""

from __future__ import annotations

import cosmic_ray.plugins

from runners.mutation import (
    PYTHON_OPERATORS,
    MutationResult,
    java_focal_methods,
    only_these_tests,
    parse_mutations,
    python_mutants,
)


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
