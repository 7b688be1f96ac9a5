"""JUnit XML reports, as the JUnit console launcher and pytest write them; build and test
messages, from saved real outputs of pytest, Maven and javac (``data/``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from runners.java.maven import _javac_error, _maven_error
from runners.python.pytest_tool import _by_request, _combine
from runners.results import (
    CAUSE_LIMIT,
    MESSAGE_LIMIT,
    Outcome,
    TestResult,
    bounded,
    cause_line,
    in_context,
    parse_junit_xml,
)
from runners.sandbox.base import ExecResult

CONSOLE_LAUNCHER = b"""<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="JUnit Jupiter" tests="3" skipped="0" failures="1" errors="1" time="0.05">
  <testcase name="adds()" classname="demo.CalculatorTest" time="0.011"/>
  <testcase name="divides(int)" classname="demo.CalculatorTest" time="0.002">
    <failure message="expected: &lt;2&gt; but was: &lt;3&gt;"
             type="org.opentest4j.AssertionFailedError">trace</failure>
  </testcase>
  <testcase name="boom" classname="demo.LegacyTest" time="0.001">
    <error message="java.lang.IllegalStateException: no" type="java.lang.IllegalStateException">trace</error>
  </testcase>
</testsuite>
"""

PYTEST = b"""<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0"
 failures="1" skipped="1" tests="3" time="0.04"><testcase classname="tests.test_core" name="test_add"
 time="0.001" /><testcase classname="tests.test_stack.TestStack" name="test_pop" time="0.001"><failure
 message="assert 1 == 2">def test_pop(): ...</failure></testcase><testcase classname="tests.test_core"
 name="test_skip" time="0.000"><skipped type="pytest.skip" message="not today">skip</skipped></testcase>
</testsuite></testsuites>
"""


def test_console_launcher_report() -> None:
    assert parse_junit_xml(CONSOLE_LAUNCHER, java=True) == [
        TestResult("demo.CalculatorTest#adds", Outcome.PASS, "", 0.011),
        TestResult("demo.CalculatorTest#divides", Outcome.FAIL, "expected: <2> but was: <3>", 0.002),
        TestResult("demo.LegacyTest#boom", Outcome.ERROR, "java.lang.IllegalStateException: no", 0.001),
    ]


def test_pytest_report() -> None:
    results = parse_junit_xml(PYTEST, java=False)
    assert [(r.test, r.outcome) for r in results] == [
        ("tests/test_core.py::test_add", Outcome.PASS),
        ("tests/test_stack.py::TestStack::test_pop", Outcome.FAIL),
        ("tests/test_core.py::test_skip", Outcome.SKIPPED),
    ]
    assert results[1].message == "assert 1 == 2"


PYTEST_XFAIL = b"""<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests">
<testsuite name="pytest" errors="0" failures="1" skipped="2" tests="4" time="0.090">
<testcase classname="tests.test_expected" name="test_known_bug" time="0.001">
<skipped type="pytest.xfail" message="not fixed yet" /></testcase>
<testcase classname="tests.test_expected" name="test_fixed_bug" time="0.002" />
<testcase classname="tests.test_expected" name="test_strict_fixed" time="0.000">
<failure message="[XPASS(strict)] must fail">[XPASS(strict)] must fail</failure></testcase>
<testcase classname="tests.test_expected" name="test_imperative" time="0.001">
<skipped type="pytest.xfail" message="backend down" /></testcase></testsuite></testsuites>
"""
"""Written by pytest 9.2 (``--junitxml``) for xfail-marked tests: failed, passed anyway (not
strict, and strict) and ``pytest.xfail()`` called."""


def test_pytest_expected_failures() -> None:
    results = parse_junit_xml(PYTEST_XFAIL, java=False)
    assert [(r.test.split("::")[-1], r.outcome, r.message) for r in results] == [
        ("test_known_bug", Outcome.XFAIL, "not fixed yet"),
        ("test_fixed_bug", Outcome.PASS, ""),
        ("test_strict_fixed", Outcome.FAIL, "[XPASS(strict)] must fail"),
        ("test_imperative", Outcome.XFAIL, "backend down"),
    ]


# --- messages: whole, bounded, and the line that names the cause ----------------------------------

DATA = Path(__file__).parent / "data"


def _saved(name: str) -> str:
    return (DATA / name).read_text()


def test_the_cause_of_a_pytest_usage_error_is_its_error_line_not_the_usage() -> None:
    """``addopts`` naming a plugin that is not installed: pytest's first line is its usage."""
    output = _saved("pytest-addopts-usage-error.txt")
    assert output.startswith("ERROR: usage: python -m pytest [options]")
    assert cause_line(output) == "python -m pytest: error: unrecognized arguments: --asyncio-mode=strict"


def test_a_missing_fixture_and_a_parametrized_failure_keep_their_cause() -> None:
    records = [json.loads(line) for line in _saved("pytest-plugin-records.jsonl").splitlines()]
    ran = _combine(records, Path("/work"))
    missing = ran["tests/test_b.py::test_uses_missing"]
    assert missing.outcome == Outcome.ERROR
    assert missing.message.startswith("setup: fixture 'missing_db' not found\nfile tests/test_b.py, line 4\n")
    assert "available fixtures: capfd" in missing.message  # the whole report, paths relative
    assert cause_line(missing.message) == "setup: fixture 'missing_db' not found"
    # Without the context pytest's report begins with where the test is, not what is wrong.
    assert cause_line(records[1]["message"]) == "fixture 'missing_db' not found"
    failed = ran["tests/test_b.py::test_x[b]"]
    assert (failed.outcome, cause_line(failed.message)) == (Outcome.FAIL, "AssertionError: assert 'b' == 'a'")
    assert failed.message.endswith("- a\n  + b")
    both = _by_request(["tests/test_b.py::test_x"], ran)["tests/test_b.py::test_x"]
    assert cause_line(both.message) == "[b]: AssertionError: assert 'b' == 'a'"


def test_the_cause_of_a_compile_error_is_the_first_compiler_error_with_its_symbol() -> None:
    log = ExecResult(1, _saved("maven-compile-error.txt"), "", 1.0)
    message = _maven_error(log, "/work")
    assert "    at org.apache" not in message and "/work/" not in message and len(message) < 2000
    assert cause_line(message) == "src/main/java/demo/Calc.java:5: cannot find symbol (method plus(int,int))"
    javac = ExecResult(1, "", _saved("javac-cannot-find-symbol.txt"), 1.0)
    assert cause_line(_javac_error(javac, "/work")) == (
        "src/test/java/demo/OtherTest.java:5: cannot find symbol (method mul(int,int))"
    )


def test_the_cause_of_a_missing_dependency_is_the_last_caused_by() -> None:
    output = _saved("maven-missing-dependency.txt")
    expected = (
        "org.eclipse.aether.transfer.ArtifactNotFoundException: Could not find artifact "
        "org.coevo.nowhere:no-such-lib:jar:9.9.9 in central (https://repo.maven.apache.org/maven2)"
    )
    assert cause_line(output) == expected
    message = _maven_error(ExecResult(1, output, "", 1.0), "/work")
    assert cause_line(message) == expected and message.count("Caused by:") == 4


def test_mavens_own_error_beats_a_caused_by_that_only_says_compilation_failure() -> None:
    """An old compiler plugin ignores maven.compiler.release and asks JDK 17 for Java 5."""
    output = _saved("maven-old-compiler-plugin.txt")
    assert (
        "Caused by: org.apache.maven.plugin.compiler.CompilationFailureException: Compilation failure"
        in output
    )
    assert cause_line(output) == "Source option 5 is no longer supported. Use 7 or later."


def test_cause_line_rules_in_order() -> None:
    assert cause_line("") == "" and cause_line("\n  \n") == ""
    assert cause_line("just one line\nand more") == "just one line"
    syntax = (
        'E     File "pkg/core.py", line 2\nE       def broken(:\nE                  ^\n'
        "E   SyntaxError: invalid syntax"
    )
    assert cause_line(syntax) == "SyntaxError: invalid syntax (pkg/core.py, line 2)"
    assert cause_line("ImportError while importing\nE   ModuleNotFoundError: No module named 'x'") == (
        "ModuleNotFoundError: No module named 'x'"
    )
    assert cause_line("ERROR: Could not find x\nERROR: No matching distribution found for x") == (
        "ERROR: No matching distribution found for x"
    )
    java = (
        "java.lang.RuntimeException: wrapped\n\tat a.B.c(B.java:1)\n"
        "Caused by: java.lang.IllegalStateException: the real one\n\tat a.B.d(B.java:2)"
    )
    assert cause_line(java) == "java.lang.IllegalStateException: the real one"
    assert cause_line('Traceback (most recent call last):\n  File "x.py", line 1\nValueError: bad') == (
        "ValueError: bad"
    )
    assert cause_line("\x1b[31mred\x1b[0m") == "red"
    assert len(cause_line("x" * 10_000)) == CAUSE_LIMIT


def test_context_goes_first_and_the_whole_message_stays() -> None:
    usage = _saved("pytest-addopts-usage-error.txt")
    detail = in_context("rev2 0123456789", usage)
    assert detail.splitlines()[0] == (
        "rev2 0123456789: python -m pytest: error: unrecognized arguments: --asyncio-mode=strict"
    )
    assert detail.endswith(usage.strip()) and cause_line(detail) == detail.splitlines()[0]
    assert in_context("NN fail", "AssertionError: x\n  - a") == "NN fail: AssertionError: x\n  - a"
    assert in_context("NN error", "") == "NN error"
    assert cause_line(in_context("outer", in_context("inner", usage))) == (
        "outer: inner: python -m pytest: error: unrecognized arguments: --asyncio-mode=strict"
    )


def test_bounded_keeps_head_and_tail_with_a_visible_cut() -> None:
    assert bounded("short") == "short"
    text = "".join(f"line {n}\n" for n in range(5000))
    kept = bounded(text)
    assert len(kept) <= MESSAGE_LIMIT + 40
    assert kept.startswith("line 0\n") and kept.endswith("line 4999\n")
    cut = re.search(r"\n… (\d+) characters cut …\n", kept)
    assert cut is not None
    head, tail = kept[: cut.start()], kept[cut.end() :]
    assert len(head) + int(cut.group(1)) + len(tail) == len(text)
    assert not head.endswith("line") and tail.startswith("line ")  # whole lines either side


def test_a_junit_report_coevo_cannot_read_is_one_error() -> None:
    """A test's JVM writes its own report (a shutdown hook can garble it): unreadable, never a crash."""
    import pytest

    from runners.results import UnreadableReport, parse_junit_xml

    for report in (
        b"<testsuite><testcase",
        b"\x00\x01",
        b'<testsuite><testcase name="a" time="slow"/></testsuite>',
    ):
        with pytest.raises(UnreadableReport, match="JUnit XML report is unreadable"):
            parse_junit_xml(report, java=True)
