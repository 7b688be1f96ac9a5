"""Per-test outcomes and the JUnit XML reports they are read from (JUnit console launcher, pytest)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from enum import StrEnum


class Outcome(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    COMPILE_ERROR = "compile_error"
    ABSENT = "absent"
    """The test does not exist in the version run (or was never collected)."""
    TIMEOUT = "timeout"
    SKIPPED = "skipped"
    XFAIL = "xfail"
    """A test marked as expected to fail (pytest's ``xfail``) that failed: it did not pass. One
    that passes anyway is a pass (its assertions held), or a failure when the mark is strict."""


@dataclass(frozen=True)
class TestResult:
    """One test's outcome, with the failure message kept."""

    __test__ = False  # not a pytest test class

    test: str
    """The test's id: ``pkg.Class#method`` for Java, a pytest node id for Python."""
    outcome: Outcome
    message: str = ""
    duration: float = 0.0


def parse_junit_xml(data: bytes, java: bool) -> list[TestResult]:
    """Test results from a JUnit-style XML report (one ``testsuite`` or a ``testsuites`` root).

    ``java`` ids are ``classname#name`` with the parameter list dropped; Python ids are
    rebuilt as pytest node ids from ``file`` or ``classname``.
    """
    root = ET.fromstring(data)
    results: list[TestResult] = []
    for case in root.iter("testcase"):
        failure = case.find("failure")
        error = case.find("error")
        skipped = case.find("skipped")
        if failure is not None:
            outcome, node = Outcome.FAIL, failure
        elif error is not None:
            outcome, node = Outcome.ERROR, error
        elif skipped is not None and skipped.get("type") == "pytest.xfail":
            outcome, node = Outcome.XFAIL, skipped
        elif skipped is not None:
            outcome, node = Outcome.SKIPPED, skipped
        else:
            outcome, node = Outcome.PASS, None
        message = ""
        if node is not None:
            message = (node.get("message") or (node.text or "")).strip()
        results.append(
            TestResult(
                test=_java_id(case) if java else _python_id(case),
                outcome=outcome,
                message=message[:4000],
                duration=float(case.get("time") or 0.0),
            )
        )
    return results


def _java_id(case: ET.Element) -> str:
    name = (case.get("name") or "").split("(")[0]
    return f"{case.get('classname', '')}#{name}"


def _python_id(case: ET.Element) -> str:
    classname = case.get("classname") or ""
    name = case.get("name") or ""
    file = case.get("file")
    parts = classname.split(".")
    # pytest writes classname "tests.test_core.TestStack" for tests/test_core.py::TestStack.
    if file:
        module_parts = file.removesuffix(".py").replace("/", ".").split(".")
        inner = parts[len(module_parts) :]
        return "::".join([file, *inner, name])
    for cut in range(len(parts), 0, -1):
        if parts[cut - 1].startswith("test") or cut == 1:
            path = "/".join(parts[:cut]) + ".py"
            return "::".join([path, *parts[cut:], name])
    return name
