"""Classification, refactoring checks and test ids: pure functions, every branch."""

from __future__ import annotations

import subprocess
import sys

import pytest

from curation import classify
from curation.matrix import Cell
from curation.static import is_refactoring, normalized, runnable_id
from miner.languages import get_language
from runners import EnvSpec
from runners.environments.revisions import focus_modules
from runners.java.maven import build_command
from tasks import DropReason, Label
from tasks import TestChangeKind as Kind

INSERTED, UPDATED, UNCHANGED = (
    Kind.INSERTED,
    Kind.UPDATED,
    Kind.UNCHANGED_WITH_CHANGED_DEPENDENCIES,
)


@pytest.mark.parametrize(
    ("kind", "cells", "label"),
    [
        (INSERTED, {"NN": "pass", "NO": "compile_error"}, Label.TEST_GENERATION),
        (INSERTED, {"NN": "pass", "NO": "fail"}, Label.TEST_GENERATION),
        (INSERTED, {"NN": "pass", "NO": "pass"}, Label.TEST_GENERATION_PASS_OLD),
        (INSERTED, {"NN": "pass", "NO": "xfail"}, Label.TEST_GENERATION),  # an expected failure fails
        (INSERTED, {"NN": "pass", "NO": "skipped"}, Label.TEST_GENERATION_PASS_OLD),  # a skip says nothing
        (UPDATED, {"OO": "pass", "ON": "xfail", "NO": "xfail", "NN": "pass"}, Label.TEST_UPDATE_POSITIVE),
        (UPDATED, {"OO": "pass", "ON": "fail", "NO": "error", "NN": "pass"}, Label.TEST_UPDATE_POSITIVE),
        (UPDATED, {"OO": "pass", "ON": "absent", "NO": "pass", "NN": "pass"}, Label.TEST_UPDATE_PASS_OLD),
        (UPDATED, {"OO": "pass", "ON": "pass", "NO": "fail", "NN": "pass"},
         Label.TEST_REFINEMENT_NO_COV_IMPROVE),
        (UNCHANGED, {"OO": "pass", "NN": "pass"}, Label.TEST_UPDATE_NEGATIVE),
    ],
)  # fmt: skip
def test_classes(kind: Kind, cells: dict[str, str], label: Label) -> None:
    verdict = classify(kind, cells, has_focal=True, coverage_measured=True)
    assert (verdict.label, verdict.reason) == (label, None)


def test_refinement_with_more_coverage() -> None:
    cells = {"OO": "pass", "ON": "pass", "NO": "pass", "NN": "pass"}
    verdict = classify(UPDATED, cells, True, True, coverage_improved=True)
    assert verdict.label == Label.TEST_REFINEMENT_COV_IMPROVE


@pytest.mark.parametrize(
    ("kind", "cells", "focal", "measured", "deps_refactoring", "reason"),
    [
        (INSERTED, {"NN": "pass", "NO": "timeout"}, True, True, False, DropReason.TIMEOUT),
        (INSERTED, {"NN": "flaky", "NO": "fail"}, True, True, False, DropReason.FLAKY),
        (INSERTED, {"NN": "fail", "NO": "fail"}, True, True, False, DropReason.NEW_ON_NEW_NOT_PASS),
        (INSERTED, {"NN": "skipped", "NO": "fail"}, True, True, False, DropReason.NEW_ON_NEW_NOT_PASS),
        (INSERTED, {"NN": "xfail", "NO": "fail"}, True, True, False, DropReason.NEW_ON_NEW_NOT_PASS),
        (UPDATED, {"OO": "xfail", "ON": "fail", "NO": "fail", "NN": "pass"}, True, True, False,
         DropReason.OLD_ON_OLD_NOT_PASS),
        (UPDATED, {"OO": "fail", "ON": "fail", "NO": "fail", "NN": "pass"}, True, True, False,
         DropReason.OLD_ON_OLD_NOT_PASS),
        (UNCHANGED, {"OO": "error", "NN": "pass"}, True, True, False, DropReason.OLD_ON_OLD_NOT_PASS),
        (INSERTED, {"NN": "pass", "NO": "fail"}, False, True, False, DropReason.NO_FOCAL_CODE),
        (INSERTED, {"NN": "pass", "NO": "fail"}, False, False, False, DropReason.NO_COVERAGE),
        (INSERTED, {"NN": "pass", "NO": "fail"}, True, True, True, DropReason.DEPS_REFACTORING_ONLY),
        (INSERTED, {"NO": "fail"}, True, True, False, DropReason.NEW_ON_NEW_NOT_PASS),  # NN never ran
    ],
)  # fmt: skip
def test_drop_reasons(
    kind: Kind,
    cells: dict[str, str],
    focal: bool,
    measured: bool,
    deps_refactoring: bool,
    reason: DropReason,
) -> None:
    verdict = classify(kind, cells, focal, measured, deps_refactoring=deps_refactoring)
    assert (verdict.label, verdict.reason) == (Label.DROPPED, reason)
    assert verdict.detail


def test_a_timeout_outranks_a_flaky_cell_and_a_failure() -> None:
    cells = {"OO": "flaky", "ON": "fail", "NO": "timeout", "NN": "fail"}
    assert classify(UPDATED, cells, True, True).reason == DropReason.TIMEOUT


@pytest.mark.parametrize(
    ("runs", "outcome", "timed_out"),
    [
        ((), "not_run", False),
        (("pass", "pass", "pass"), "pass", False),
        (("fail",), "fail", False),
        (("pass", "fail", "pass"), "flaky", False),
        (("timeout",), "timeout", True),
        (("pass", "timeout"), "timeout", True),  # a hang once is a hang: never flaky, never rerun
        (("error", "timeout"), "timeout", True),
    ],
)
def test_a_cell_with_a_timed_out_run_is_a_timeout(
    runs: tuple[str, ...], outcome: str, timed_out: bool
) -> None:
    cell = Cell(list(runs))
    assert (cell.outcome, cell.timed_out) == (outcome, timed_out)


@pytest.mark.parametrize(
    ("kind", "cells", "bound", "label"),
    [
        (INSERTED, {"NN": "pass", "NO": "fail"}, {"NO"}, Label.DROPPED),
        (UPDATED, {"OO": "pass", "ON": "fail", "NO": "fail", "NN": "pass"}, {"ON"}, Label.DROPPED),
        # NO decides an update's positive from its pass-old twin: a name-bound NO says neither
        (UPDATED, {"OO": "pass", "ON": "fail", "NO": "error", "NN": "pass"}, {"NO"}, Label.DROPPED),
        # a passing cell is no failure to doubt
        (UPDATED, {"OO": "pass", "ON": "pass", "NO": "pass", "NN": "pass"}, {"ON"},
         Label.TEST_REFINEMENT_NO_COV_IMPROVE),
        (INSERTED, {"NN": "pass", "NO": "fail"}, set(), Label.TEST_GENERATION),
    ],
)  # fmt: skip
def test_a_failure_that_may_be_the_copys_file_names_decides_nothing(
    kind: Kind, cells: dict[str, str], bound: set[str], label: Label
) -> None:
    verdict = classify(kind, cells, True, True, name_bound=frozenset(bound))
    assert verdict.label == label
    if label == Label.DROPPED:
        assert verdict.reason == DropReason.DEPENDS_ON_FILE_NAME
        assert verdict.detail.endswith("under the copy's file name")


JAVA = get_language("java")
PYTHON = get_language("python")


@pytest.mark.parametrize(
    ("old", "new", "refactoring"),
    [
        ("@Test void a() { int x = f(1); assertEquals(2, x); }",
         "@Test\nvoid renamed() {\n  // why\n  int y = f(1);\n  assertEquals(2, y);\n}", True),
        ("@Test void a() { assertEquals(2, f(1)); }", "@Test void a() { assertEquals(3, f(1)); }", False),
        ("@Test void a() { assertEquals(2, f(1)); }", "@Test void a() { assertEquals(2, g(1)); }", False),
        ("@Test void a() { assertEquals(2, calc.total); }", "@Test void a() { assertEquals(2, calc.sum); }",
         False),
        ("@Test void a() { int x = 1; int y = 2; }", "@Test void a() { int y = 1; int x = 2; }", True),
        ("@Test void a() { int x = 1; int y = x; }", "@Test void a() { int x = 1; int y = 1; }", False),
    ],
)  # fmt: skip
def test_java_refactoring_is_layout_comments_and_renames(old: str, new: str, refactoring: bool) -> None:
    assert is_refactoring(JAVA, old, new) is refactoring


def test_python_refactoring_and_keywords_stay() -> None:
    old = "def test_a():\n    value = f(1)\n    assert value == 2\n"
    assert is_refactoring(PYTHON, old, "def test_b():\n    # c\n    result = f(1)\n    assert result == 2\n")
    assert not is_refactoring(PYTHON, old, "def test_a():\n    value = f(1)\n    assert value != 2\n")
    assert normalized(("if", "x", "is", "None"), "python") == ("if", "<v0>", "is", "None")


OLD_STYLE = """def test_post(httpbin):
    r = requests.post(httpbin('post'), data={'a': 'b'},
                      headers = {'X-Thing': 'yes'})
    assert (r.status_code == 200)
    assert r.json()['form'] == {u'a': 'b'}  # layout as written in 2015
"""


def test_a_formatters_python_rewrite_is_refactoring() -> None:
    """requests 2a6f290bc0 ran black over every test: quotes, parentheses, trailing commas and
    layout changed, nothing else. ruff's formatter (black's style) rewrites the same way here."""
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "-"],
        input=OLD_STYLE,
        capture_output=True,
        text=True,
        check=True,
    )
    formatted = done.stdout
    assert '"post"' in formatted and formatted != OLD_STYLE
    formatted = formatted.replace('u"a"', '"a"')  # and pyupgrade's
    assert is_refactoring(PYTHON, OLD_STYLE, formatted)
    assert not is_refactoring(PYTHON, OLD_STYLE, formatted.replace('"yes"', '"no"'))
    assert not is_refactoring(PYTHON, OLD_STYLE, formatted.replace("== 200", "== 201"))


def test_test_ids_from_method_keys() -> None:
    source = b"// header\npackage org.demo.util;\n\nclass CalcTest {}\n"
    assert runnable_id("java", "src/test/java/org/demo/util/CalcTest.java", source, "CalcTest.adds(int)") == (
        "org.demo.util.CalcTest#adds"
    )
    assert runnable_id(
        "java", "src/test/java/CalcTest.java", b"class CalcTest {}", "CalcTest.Inner.adds()"
    ) == ("CalcTest.Inner#adds")
    assert (
        runnable_id("python", "tests/test_calc.py", None, "TestCalc.test_add")
        == "tests/test_calc.py::TestCalc::test_add"
    )
    assert runnable_id("python", "tests/test_calc.py", None, "test_add#2") == "tests/test_calc.py::test_add"


def test_only_the_modules_holding_the_tests_are_built() -> None:
    spec = EnvSpec("java", "17", "maven", modules=("", "core", "it/jpms"))
    focused = focus_modules(spec, ["core/src/test/java/a/ATest.java"])
    assert focused.build_modules == ("core",)
    command = build_command(focused, "/m2")
    assert command[command.index("-pl") : command.index("-pl") + 3] == ["-pl", "core", "-am"]
    assert focus_modules(spec, ["src/test/java/RootTest.java"]) == spec  # the root needs everything
    single = EnvSpec("java", "17", "maven", modules=("",))
    assert focus_modules(single, ["src/test/java/ATest.java"]) == single
    assert "-pl" not in build_command(spec, "/m2")
