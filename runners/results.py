"""Per-test outcomes and the JUnit XML reports they are read from (JUnit console launcher, pytest),
and the messages of failed builds and tests: kept whole (bounded), shown by the line naming their cause.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

MESSAGE_LIMIT = 6000
"""Characters a stored build or test message keeps: its head and its tail, cut in the middle."""
CAUSE_LIMIT = 500
"""Characters of a cause line."""
REPORT_LIMIT = 64 * 1024 * 1024
"""Bytes a report that tests can write (results, XML reports, coverage) may have to be read."""


class UnreadableReport(ValueError):
    """A report a run of tests left is malformed, over :data:`REPORT_LIMIT`, or of the wrong shape.
    The tests that ran could write it: what they wrote is their outcome, an error, never coevo's."""


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
    """Why it did not pass, whole (bounded); :func:`cause_line` gives its one line."""
    duration: float = 0.0
    frames: tuple[str, ...] = ()
    """Java: the source lines its failure's stack passed through, ``pkg/path/File.java:LINE``, from
    the innermost. A method an exception left before any JaCoCo probe shows no covered line, but
    it is on this stack."""


_JAVA_FRAME = re.compile(
    r"^\s*at (?:[\w.$@-]*/)*(?P<cls>[\w$]+(?:\.[\w$]+)*)\.[\w$<>]+\((?P<file>[\w$-]+\.java):(?P<line>\d+)\)"
)
_MAX_FRAMES = 64


def java_frames(trace: str) -> tuple[str, ...]:
    """The ``pkg/path/File.java:LINE`` of each ``at pkg.Class.method(File.java:LINE)`` line of a
    Java stack trace (``Caused by`` traces included), in order, each once."""
    found: dict[str, None] = {}
    for line in trace.splitlines():
        match = _JAVA_FRAME.match(line)
        if match is None:
            continue
        package = match["cls"].rpartition(".")[0].replace(".", "/")
        found[f"{package}/{match['file']}".lstrip("/") + f":{match['line']}"] = None
        if len(found) == _MAX_FRAMES:
            break
    return tuple(found)


def parse_junit_xml(data: bytes, java: bool) -> list[TestResult]:
    """Test results from a JUnit-style XML report (one ``testsuite`` or a ``testsuites`` root).

    ``java`` ids are ``classname#name`` with the parameter list dropped; Python ids are
    rebuilt as pytest node ids from ``file`` or ``classname``.
    """
    try:
        return _junit_results(ET.fromstring(data), java)
    except (ET.ParseError, ValueError, TypeError) as exc:
        raise UnreadableReport(f"its JUnit XML report is unreadable ({type(exc).__name__}: {exc})") from None


def _junit_results(root: ET.Element, java: bool) -> list[TestResult]:
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
        frames: tuple[str, ...] = ()
        if node is not None:
            message = (node.get("message") or (node.text or "")).strip()
            frames = java_frames(node.text or "") if java and outcome in (Outcome.FAIL, Outcome.ERROR) else ()
        results.append(
            TestResult(
                test=_java_id(case) if java else _python_id(case),
                outcome=outcome,
                message=bounded(message),
                duration=float(case.get("time") or 0.0),
                frames=frames,
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


# --- messages ---------------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_SOURCE = r"(?P<path>\S.*?\.(?:java|kt|groovy|scala))"
_COMPILER_ERRORS = (
    re.compile(rf"^{_SOURCE}:(?P<line>\d+): error: (?P<text>.*)$"),  # javac
    re.compile(rf"^{_SOURCE}:\[(?P<line>\d+)(?:,\d+)?\]\s+(?:error:\s*)?(?P<text>.*)$"),  # Maven
)
_SYMBOL = re.compile(r"^\s*symbol:\s+(?P<symbol>.+)$")
_PYTEST_E = re.compile(r"^E(?:\s+(?P<text>.*))?$")
_EXCEPTION = re.compile(
    r"^(?:[A-Za-z_$][\w$]*\.)*[A-Za-z_$][\w$]*(?:Error|Exception|Failure|Exit|Interrupt)(?::.*)?$"
)
_FIXTURE = re.compile(r"^fixture '[^']*' not found")
_SYNTAX = ("SyntaxError", "IndentationError", "TabError")
_FILE_LINE = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)')
_ERROR_LINE = re.compile(r"(?:^|[\s:])error:\s*\S", re.IGNORECASE)
_CAUSED_BY = re.compile(r"^\s*Caused by:\s*(?P<text>.+)$")
_STACK_FRAME = re.compile(r"^\s*(?:at |\.\.\. \d+ more$)")
_MAVEN_NOISE = re.compile(
    r"^(COMPILATION ERROR\s*:?|-> \[Help \d+\]|\[Help \d+\].*|To see the full stack trace.*|Re-run Maven.*"
    r"|For more information about the errors.*|After correcting the problems.*|\s*mvn <args>.*)$"
)
_HELP = re.compile(r"\s*-> \[Help \d+\]$")
_CUT = "\n… {} characters cut …\n"


def bounded(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` whole when short; else its head (a third) and its tail, whole lines where the cut
    allows, with a mark saying how much was cut. A cause is near the head (a usage error, the
    first compiler error) or near the tail (pytest's ``E`` lines, Java's last ``Caused by:``)."""
    if len(text) <= limit:
        return text
    head, tail = text[: limit // 3], text[len(text) - (limit - limit // 3) :]
    if head.rfind("\n") > len(head) // 2:
        head = head[: head.rfind("\n")]
    if 0 <= tail.find("\n") < len(tail) // 2:
        tail = tail[tail.find("\n") + 1 :]
    return head + _CUT.format(len(text) - len(head) - len(tail)) + tail


def without_roots(text: str, roots: Sequence[str]) -> str:
    """``text`` with paths under ``roots`` (a worktree as the sandbox and the host see it) made
    relative, so messages read the same from any worktree."""
    for root in sorted({root.rstrip("/") for root in roots if root.strip("/")}, key=len, reverse=True):
        text = re.sub(rf"(?<![\w./-]){re.escape(root)}/", "", text)
    return text


def in_context(context: str, message: str) -> str:
    """``context: message`` whose first line names the cause (``rev2 0123456789: <cause>``, then
    the whole message below it), so that :func:`cause_line` keeps the context."""
    if not message.strip():
        return context
    message = message.strip()
    cause = cause_line(message)
    if message.splitlines()[0].strip() == cause:  # it already comes first
        return f"{context}: {message}"
    return f"{context}: {cause}\n{message}"


def cause_line(text: str) -> str:
    """The line of a build or test message that names its cause, for one-line displays.

    Tried in order: the first compiler error (javac's ``path:12: error: text`` or Maven's
    ``path:[12,5] text``, shown as ``path:12: text`` with the ``symbol:`` it names), pytest's
    ``E`` lines (the first exception among them, else the first; a syntax error with its file
    and line), the last ``error:`` line (``pytest: error: unrecognized arguments: …``, pip's
    ``ERROR: …``), Maven's first own ``[ERROR]`` (not its boilerplate nor its ``Failed to
    execute goal`` summary: ``Source option 5 is no longer supported``), the last ``Caused by:``,
    the first exception line (``FooError: …``, ``fixture 'x' not found``), else the first line
    that is not Maven's boilerplate. A first line that already says the cause is kept whole: it
    carries context (which revision, which cell). At most :data:`CAUSE_LIMIT` characters.
    """
    lines = [_ANSI.sub("", line).rstrip() for line in text.splitlines()]
    first = next((index for index, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return ""
    found = _cause(lines)
    if found is None:
        return _shorten(_first_meaningful(lines))
    index, cause = found
    headline = lines[first].strip()
    if index != first and cause in headline:
        return _shorten(headline)
    return _shorten(cause)


def _cause(lines: Sequence[str]) -> tuple[int, str] | None:
    """(index, text) of the cause by the rules of :func:`cause_line`, None when none applies."""
    for index, line in enumerate(lines):
        text = _unprefixed(line)
        for pattern in _COMPILER_ERRORS:
            match = pattern.match(text)
            if match:
                return index, _with_symbol(
                    f"{match['path']}:{match['line']}: {match['text'].strip()}", lines, index
                )
    pytest_e = [
        (i, (m["text"] or "").strip()) for i, line in enumerate(lines) if (m := _PYTEST_E.match(line))
    ]
    pytest_e = [(i, text) for i, text in pytest_e if text]
    exceptions = [(i, text) for i, text in pytest_e if _EXCEPTION.match(text)]
    if exceptions or pytest_e:
        index, text = (exceptions or pytest_e)[0]
        return index, _located(text, lines, index)
    errors = [(i, line.strip()) for i, line in enumerate(lines) if _ERROR_LINE.search(line)]
    if errors:
        return errors[-1]
    maven = [
        (i, text)
        for i, line in enumerate(lines)
        if line.startswith("[ERROR]")
        and (text := _unprefixed(line).strip())
        and not _MAVEN_NOISE.match(text)
        and not text.startswith("Failed to execute goal")
    ]
    if maven:
        return maven[0][0], _HELP.sub("", maven[0][1])
    caused = [(i, m["text"].strip()) for i, line in enumerate(lines) if (m := _CAUSED_BY.match(line))]
    if caused:
        index, text = caused[-1]
        if text.endswith(":"):  # the message goes on below (Maven: "Compilation failure:")
            after = next((line.strip() for line in lines[index + 1 :] if line.strip()), "")
            text = f"{text} {after}".strip()
        return index, text
    for index, line in enumerate(lines):
        text = _unprefixed(line).strip()
        if _EXCEPTION.match(text) or _FIXTURE.match(text):
            return index, _located(text, lines, index)
    return None


def _unprefixed(line: str) -> str:
    return line.removeprefix("[ERROR]").strip() if line.startswith("[ERROR]") else line


def _with_symbol(message: str, lines: Sequence[str], index: int) -> str:
    """Adds the ``symbol:`` line javac prints under "cannot find symbol"."""
    for line in lines[index + 1 : index + 4]:
        match = _SYMBOL.match(_unprefixed(line))
        if match:
            return f"{message} ({match['symbol'].strip()})"
    return message


def _located(error: str, lines: Sequence[str], index: int) -> str:
    """A syntax error with the file and line it points at (``File "x", line 2`` above it)."""
    if not error.startswith(_SYNTAX):
        return error
    for previous in reversed(lines[max(index - 6, 0) : index]):
        match = _FILE_LINE.match(previous.removeprefix("E"))
        if match:
            return f"{error} ({match['path']}, line {match['line']})"
    return error


def _first_meaningful(lines: Sequence[str]) -> str:
    texts = [_unprefixed(line).strip() for line in lines]
    texts = [text for text in texts if text and not _STACK_FRAME.match(text)]
    kept = [text for text in texts if not _MAVEN_NOISE.match(text)]
    chosen = (kept or texts or [""])[0]
    return _HELP.sub("", chosen)


def _shorten(text: str) -> str:
    return text if len(text) <= CAUSE_LIMIT else text[: CAUSE_LIMIT - 1] + "…"
