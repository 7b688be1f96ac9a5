"""JUnit XML reports, as the JUnit console launcher and pytest write them."""

from __future__ import annotations

from runners.results import Outcome, TestResult, parse_junit_xml

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
