"""Histories for curation: every commit is one class of the table or one drop reason.

Each case has its own production class (Java) or module (Python) and its own test file,
so a commit's candidates are exactly the ones its case is about. ``EXPECTED`` maps each
commit (rev2) to the label curation must give each of its candidates.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gitrepo import GitRepo
from tests.runners.maven_projects import JUPITER_DEPS, pom
from tests.shared import Shared, curated_once

TEST_TIMEOUT = 10.0
"""Seconds per run of a cell: the hanging test's three runs cost 30 s."""

MAIN = "src/main/java/demo"
TEST = "src/test/java/demo"


def _java_class(name: str, body: str) -> str:
    return f"package demo;\n\npublic class {name} {{\n{body}}}\n"


def _java_test(name: str, subject: str, *methods: str, helpers: str = "") -> str:
    field = f"    private final {subject} subject = new {subject}();\n\n" if subject else ""
    return (
        "package demo;\n\nimport static org.junit.jupiter.api.Assertions.assertEquals;\n\n"
        "import org.junit.jupiter.api.Test;\n\n"
        f"class {name} {{\n{field}" + "\n".join(methods) + helpers + "}\n"
    )


def _m(signature: str, body: str) -> str:
    """A method; ``body`` lines are indented for you."""
    lines = "".join(f"        {line}\n" for line in body.splitlines())
    return f"    {signature} {{\n{lines}    }}\n"


def _t(name: str, body: str, throws: str = "") -> str:
    return "    @Test\n" + _m(f"void {name}(){' throws ' + throws if throws else ''}", body)


def _java_files(case: str, prod: str, test: str) -> dict[str, str | bytes | None]:
    return {f"{MAIN}/{case}.java": prod, f"{TEST}/{case}Test.java": test}


FLAKY_JAVA = (
    'java.nio.file.Path state = java.nio.file.Path.of("flaky.state");\n'
    "boolean first = !java.nio.file.Files.exists(state);\n"
    "if (first) {\n"
    '    java.nio.file.Files.writeString(state, "ran");\n'
    "} else {\n"
    "    java.nio.file.Files.delete(state);\n"
    "}\n"
    "assertEquals(first ? 1 : -1, subject.sign(5));"
)
"""A flaky test: it passes and fails on alternate runs (its state survives in the worktree)."""


def java_curation_history(path: Path) -> GitRepo:
    repo = GitRepo(path)
    adder_v1 = _m("public int add(int a, int b)", "return a + b;")
    greeter_v1 = _m("public String greet(String name)", 'return "Hi " + name;')
    abs_v1 = _m("public int abs(int a)", "return a < 0 ? -a : a;")
    max_v1 = _m("public int max(int a, int b)", "return a > b ? a : b;")
    divide_v1 = _m("public int divide(int a, int b)", "int q = a / b;\nreturn q;")
    twice_v1 = _m("public int twice(int a)", "return a * 2;")
    t_add = _t("testAdd", "assertEquals(3, subject.add(1, 2));")
    t_greet_v1 = _t("testGreet", 'assertEquals("Hi Bob", subject.greet("Bob"));')
    t_abs_v1 = _t("testAbs", "assertEquals(4, subject.abs(4));")
    t_max_v1 = _t("testMax", "assertEquals(3, subject.max(1, 3));")
    t_twice_v1 = _t("testTwice", "int value = subject.twice(2);\nassertEquals(4, value);")
    t_divide = _t("testDivide", "assertEquals(2, subject.divide(6, 3));")
    repo.commit("initial", "2024-05-01T10:00:00+00:00", {
        "pom.xml": pom("calc", JUPITER_DEPS),
        **_java_files("Adder", _java_class("Adder", adder_v1), _java_test("AdderTest", "Adder", t_add)),
        **_java_files("Greeter", _java_class("Greeter", greeter_v1), _java_test("GreeterTest", "Greeter", t_greet_v1)),
        **_java_files("Absolute", _java_class("Absolute", abs_v1), _java_test("AbsoluteTest", "Absolute", t_abs_v1)),
        **_java_files("Maximum", _java_class("Maximum", max_v1), _java_test("MaximumTest", "Maximum", t_max_v1)),
        **_java_files("Renamer", _java_class("Renamer", twice_v1), _java_test("RenamerTest", "Renamer", t_twice_v1)),
        f"{MAIN}/Divider.java": _java_class("Divider", divide_v1),
    })  # fmt: skip
    repo.commit("generation", "2024-05-02T10:00:00+00:00", _java_files(
        "Subtractor",
        _java_class("Subtractor", _m("public int subtract(int a, int b)", "return a - b;")),
        _java_test("SubtractorTest", "Subtractor", _t("testSubtract", "assertEquals(1, subject.subtract(3, 2));")),
    ))  # fmt: skip
    repo.commit("generation pass old", "2024-05-03T10:00:00+00:00", _java_files(
        "Adder",
        _java_class("Adder", _m("public int add(int a, int b)", "return Math.addExact(a, b);")),
        _java_test("AdderTest", "Adder", t_add, _t("testAddSmall", "assertEquals(5, subject.add(2, 3));")),
    ))  # fmt: skip
    repo.commit("update positive", "2024-05-04T10:00:00+00:00", _java_files(
        "Greeter",
        _java_class("Greeter", _m("public String greet(String name)", 'return "Hello, " + name + "!";')),
        _java_test("GreeterTest", "Greeter", _t("testGreet", 'assertEquals("Hello, Bob!", subject.greet("Bob"));')),
    ))  # fmt: skip
    repo.commit("refinement cov improve", "2024-05-05T10:00:00+00:00", _java_files(
        "Absolute",
        _java_class("Absolute", _m("public int abs(int a)", "if (a < 0) {\n    return -a;\n}\nreturn a;")),
        _java_test("AbsoluteTest", "Absolute",
                   _t("testAbs", "assertEquals(4, subject.abs(4));\nassertEquals(4, subject.abs(-4));")),
    ))  # fmt: skip
    repo.commit("refinement no cov improve", "2024-05-06T10:00:00+00:00", _java_files(
        "Maximum",
        _java_class("Maximum", _m("public int max(int a, int b)", "return Math.max(a, b);")),
        _java_test("MaximumTest", "Maximum",
                   _t("testMax", "assertEquals(3, subject.max(1, 3));\nassertEquals(2, subject.max(2, 2));")),
    ))  # fmt: skip
    repo.commit("new on new not pass", "2024-05-07T10:00:00+00:00", _java_files(
        "Negator",
        _java_class("Negator", _m("public int negate(int a)", "return -a;")),
        _java_test("NegatorTest", "Negator", _t("testNegate", "assertEquals(2, subject.negate(2));")),
    ))  # fmt: skip
    repo.commit("old on old not pass", "2024-05-08T10:00:00+00:00", _java_files(
        "Negator",
        _java_class("Negator", _m("public int negate(int a)", "return 0 - a;")),
        _java_test("NegatorTest", "Negator", _t("testNegate", "assertEquals(-2, subject.negate(2));")),
    ))  # fmt: skip
    remainder = _m("public int remainder(int a, int b)", "return a % b;")
    repo.commit("no focal code", "2024-05-09T10:00:00+00:00", _java_files(
        "Divider", _java_class("Divider", divide_v1 + remainder), _java_test("DividerTest", "Divider", t_divide),
    ))  # fmt: skip
    repo.commit("test refactoring only", "2024-05-10T10:00:00+00:00", _java_files(
        "Renamer",
        _java_class("Renamer", _m("public int twice(int a)", "return a + a;")),
        _java_test("RenamerTest", "Renamer",
                   _t("testTwice", "// twice two is four\nint result = subject.twice(2);\nassertEquals(4, result);")),
    ))  # fmt: skip
    divide_v2 = _m("public int divide(int a, int b)", "int quotient = a / b;\nreturn quotient;")
    repo.commit("deps refactoring only", "2024-05-11T10:00:00+00:00", _java_files(
        "Divider",
        _java_class("Divider", divide_v2 + remainder),
        _java_test("DividerTest", "Divider", t_divide, _t("testDivideExact", "assertEquals(3, subject.divide(9, 3));")),
    ))  # fmt: skip
    # The helper lives in another test file (one in the test's own file is part of its answer).
    repo.commit("test utility co-change", "2024-05-12T10:00:00+00:00", {
        **_java_files(
            "Squarer",
            _java_class("Squarer", _m("public int square(int a)", "return a * a;")),
            _java_test("SquarerTest", "Squarer", _t("testSquare", "assertEquals(Expect.square(3), subject.square(3));")),
        ),
        f"{TEST}/Expect.java": _java_class("Expect", _m("static int square(int a)", "return a * a;")),
    })  # fmt: skip
    repo.commit("span: production", "2024-05-13T10:00:00+00:00", {
        f"{MAIN}/Tripler.java": _java_class("Tripler", _m("public int triple(int a)", "return 3 * a;")),
    })  # fmt: skip
    repo.commit("span: tests 8h later", "2024-05-13T18:00:00+00:00", {
        f"{TEST}/TriplerTest.java": _java_test(
            "TriplerTest", "Tripler", _t("testTriple", "assertEquals(6, subject.triple(2));")
        ),
    })  # fmt: skip
    repo.commit("flaky", "2024-05-14T10:00:00+00:00", _java_files(
        "Signs",
        _java_class("Signs", _m("public int sign(int a)", "return Integer.signum(a);")),
        _java_test("SignsTest", "Signs", _t("testSign", FLAKY_JAVA, throws="java.io.IOException")),
    ))  # fmt: skip
    repo.commit("build failed", "2024-05-15T10:00:00+00:00", _java_files(
        "Broken",
        _java_class("Broken", _m("public int value()", 'int x = "text";\nreturn x;')),
        _java_test("BrokenTest", "Broken", _t("testValue", "assertEquals(1, subject.value());")),
    ))  # fmt: skip
    repo.commit("fix the build", "2024-05-15T12:00:00+00:00", {
        f"{MAIN}/Broken.java": None, f"{TEST}/BrokenTest.java": None,
    })  # fmt: skip
    repo.commit("env failed", "2024-05-16T10:00:00+00:00", {
        "pom.xml": "<project>\n<oops></project>\n",
        **_java_files(
            "Cuber",
            _java_class("Cuber", _m("public int cube(int a)", "return a * a * a;")),
            _java_test("CuberTest", "Cuber", _t("testCube", "assertEquals(8, subject.cube(2));")),
        ),
    })  # fmt: skip
    repo.commit("fix the pom", "2024-05-16T12:00:00+00:00", {"pom.xml": pom("calc", JUPITER_DEPS)})
    repo.commit("timeout", "2024-05-17T10:00:00+00:00", _java_files(
        "Sleeper",
        _java_class("Sleeper", _m("public int nap() throws InterruptedException", "Thread.sleep(600_000);\nreturn 1;")),
        _java_test("SleeperTest", "Sleeper",
                   _t("testNap", "assertEquals(1, subject.nap());", throws="InterruptedException")),
    ))  # fmt: skip
    repo.commit("no coverage", "2024-05-18T10:00:00+00:00", {
        f"{MAIN}/Halver.java": _java_class("Halver", _m("public int half(int a)", "return a / 2;")),
        f"{TEST}/ConstantsTest.java": _java_test("ConstantsTest", "", _t("testArithmetic", "assertEquals(4, 2 + 2);")),
    })  # fmt: skip
    return repo


JAVA_EXPECTED: dict[str, dict[str, str]] = {
    "generation": {"SubtractorTest.testSubtract()": "test_generation"},
    "generation pass old": {
        "AdderTest.testAddSmall()": "test_generation_pass_old",
        "AdderTest.testAdd()": "test_update_negative",
    },
    "update positive": {"GreeterTest.testGreet()": "test_update_positive"},
    "refinement cov improve": {"AbsoluteTest.testAbs()": "test_refinement_cov_improve"},
    "refinement no cov improve": {"MaximumTest.testMax()": "test_refinement_no_cov_improve"},
    "new on new not pass": {"NegatorTest.testNegate()": "new_on_new_not_pass"},
    "old on old not pass": {"NegatorTest.testNegate()": "old_on_old_not_pass"},
    "no focal code": {"DividerTest.testDivide()": "no_focal_code"},
    "test refactoring only": {"RenamerTest.testTwice()": "test_refactoring_only"},
    "deps refactoring only": {
        "DividerTest.testDivide()": "deps_refactoring_only",
        "DividerTest.testDivideExact()": "deps_refactoring_only",
    },
    "test utility co-change": {"SquarerTest.testSquare()": "test_utility_co_change"},
    "span: tests 8h later": {"TriplerTest.testTriple()": "pair_span_too_long"},
    "flaky": {"SignsTest.testSign()": "flaky"},
    "build failed": {"BrokenTest.testValue()": "build_failed"},
    "env failed": {"CuberTest.testCube()": "env_failed"},
    "timeout": {"SleeperTest.testNap()": "timeout"},
    "no coverage": {"ConstantsTest.testArithmetic()": "no_coverage"},
}


def _py_files(case: str, module: str, test: str) -> dict[str, str | bytes | None]:
    return {f"calc/{case}.py": module, f"tests/test_{case}.py": test}


def _py_test(case: str, names: str, *tests: str) -> str:
    return f"from calc.{case} import {names}\n\n\n" + "\n\n".join(tests)


def _f(signature: str, body: str) -> str:
    return f"def {signature}:\n" + "".join(f"    {line}\n" for line in body.splitlines())


FLAKY_PYTHON = _f(
    "test_sign()",
    'state = pathlib.Path("flaky.state")\n'
    "first = not state.exists()\n"
    "if first:\n"
    '    state.write_text("ran")\n'
    "else:\n"
    "    state.unlink()\n"
    "assert sign(5) == (1 if first else -1)",
)


def python_curation_history(path: Path) -> GitRepo:
    """The Python twin of :func:`java_curation_history`: the same cases, pytest and coverage.py."""
    repo = GitRepo(path)
    requirements = "# the tests need nothing beyond pytest\n"
    divide_v1 = _f("divide(a, b)", "q = a // b\nreturn q")
    remainder = _f("remainder(a, b)", "return a % b")
    t_add = _f("test_add()", "assert add(1, 2) == 3")
    t_divide = _f("test_divide()", "assert divide(6, 3) == 2")
    repo.commit("initial", "2024-05-01T10:00:00+00:00", {
        "requirements.txt": requirements,
        "calc/__init__.py": "",
        **_py_files("adder", _f("add(a, b)", "return a + b"), _py_test("adder", "add", t_add)),
        **_py_files("greeter", _f("greet(name)", 'return "Hi " + name'),
                    _py_test("greeter", "greet", _f("test_greet()", 'assert greet("Bob") == "Hi Bob"'))),
        **_py_files("absolute", _f("absolute(a)", "return -a if a < 0 else a"),
                    _py_test("absolute", "absolute", _f("test_absolute()", "assert absolute(4) == 4"))),
        **_py_files("maximum", _f("maximum(a, b)", "return a if a > b else b"),
                    _py_test("maximum", "maximum", _f("test_maximum()", "assert maximum(1, 3) == 3"))),
        **_py_files("renamer", _f("twice(a)", "return a * 2"),
                    _py_test("renamer", "twice", _f("test_twice()", "value = twice(2)\nassert value == 4"))),
        "calc/divider.py": divide_v1,
    })  # fmt: skip
    repo.commit("generation", "2024-05-02T10:00:00+00:00", _py_files(
        "subtractor", _f("subtract(a, b)", "return a - b"),
        _py_test("subtractor", "subtract", _f("test_subtract()", "assert subtract(3, 2) == 1")),
    ))  # fmt: skip
    repo.commit("generation pass old", "2024-05-03T10:00:00+00:00", _py_files(
        "adder", _f("add(a, b)", "return sum((a, b))"),
        _py_test("adder", "add", t_add, _f("test_add_small()", "assert add(2, 3) == 5")),
    ))  # fmt: skip
    repo.commit("update positive", "2024-05-04T10:00:00+00:00", _py_files(
        "greeter", _f("greet(name)", 'return "Hello, " + name + "!"'),
        _py_test("greeter", "greet", _f("test_greet()", 'assert greet("Bob") == "Hello, Bob!"')),
    ))  # fmt: skip
    repo.commit("refinement cov improve", "2024-05-05T10:00:00+00:00", _py_files(
        "absolute", _f("absolute(a)", "if a < 0:\n    return -a\nreturn a"),
        _py_test("absolute", "absolute", _f("test_absolute()", "assert absolute(4) == 4\nassert absolute(-4) == 4")),
    ))  # fmt: skip
    repo.commit("refinement no cov improve", "2024-05-06T10:00:00+00:00", _py_files(
        "maximum", _f("maximum(a, b)", "return max(a, b)"),
        _py_test("maximum", "maximum", _f("test_maximum()", "assert maximum(1, 3) == 3\nassert maximum(2, 2) == 2")),
    ))  # fmt: skip
    repo.commit("new on new not pass", "2024-05-07T10:00:00+00:00", _py_files(
        "negator", _f("negate(a)", "return -a"),
        _py_test("negator", "negate", _f("test_negate()", "assert negate(2) == 2")),
    ))  # fmt: skip
    repo.commit("old on old not pass", "2024-05-08T10:00:00+00:00", _py_files(
        "negator", _f("negate(a)", "return 0 - a"),
        _py_test("negator", "negate", _f("test_negate()", "assert negate(2) == -2")),
    ))  # fmt: skip
    repo.commit("no focal code", "2024-05-09T10:00:00+00:00", _py_files(
        "divider", divide_v1 + "\n\n" + remainder, _py_test("divider", "divide", t_divide),
    ))  # fmt: skip
    repo.commit("test refactoring only", "2024-05-10T10:00:00+00:00", _py_files(
        "renamer", _f("twice(a)", "return a + a"),
        _py_test("renamer", "twice",
                 _f("test_twice()", "# twice two is four\nresult = twice(2)\nassert result == 4")),
    ))  # fmt: skip
    repo.commit("deps refactoring only", "2024-05-11T10:00:00+00:00", _py_files(
        "divider", _f("divide(a, b)", "quotient = a // b\nreturn quotient") + "\n\n" + remainder,
        _py_test("divider", "divide", t_divide, _f("test_divide_exact()", "assert divide(9, 3) == 3")),
    ))  # fmt: skip
    # A fixture of tests/conftest.py the test names only in a string (one in the test's own file
    # would be part of its answer).
    repo.commit("test utility co-change", "2024-05-12T10:00:00+00:00", {
        **_py_files("squarer", _f("square(a)", "return a * a"),
                    _py_test("squarer", "square",
                             _f("test_square(request)", 'assert square(3) == request.getfixturevalue("nine")'))),
        "tests/conftest.py": "import pytest\n\n\n@pytest.fixture\n" + _f("nine()", "return 9"),
    })  # fmt: skip
    repo.commit(
        "span: production", "2024-05-13T10:00:00+00:00", {"calc/tripler.py": _f("triple(a)", "return 3 * a")}
    )
    repo.commit("span: tests 8h later", "2024-05-13T18:00:00+00:00", {
        "tests/test_tripler.py": _py_test("tripler", "triple", _f("test_triple()", "assert triple(2) == 6")),
    })  # fmt: skip
    repo.commit("flaky", "2024-05-14T10:00:00+00:00", _py_files(
        "signs", "import math\n\n\n" + _f("sign(a)", "return int(math.copysign(1, a)) if a else 0"),
        "import pathlib\n\n" + _py_test("signs", "sign", FLAKY_PYTHON),
    ))  # fmt: skip
    repo.commit("build failed", "2024-05-15T10:00:00+00:00", {
        "requirements.txt": requirements + "coevo-no-such-package-anywhere==9.9.9\n",
        **_py_files("cuber", _f("cube(a)", "return a ** 3"),
                    _py_test("cuber", "cube", _f("test_cube()", "assert cube(2) == 8"))),
    })  # fmt: skip
    repo.commit("fix the build", "2024-05-15T12:00:00+00:00", {"requirements.txt": requirements})
    repo.commit("env failed", "2024-05-16T10:00:00+00:00", {
        "pyproject.toml": "[project\nname = 'calc'\n",
        **_py_files("halver", _f("half(a)", "return a // 2"),
                    _py_test("halver", "half", _f("test_half()", "assert half(4) == 2"))),
    })  # fmt: skip
    repo.commit("fix the pyproject", "2024-05-16T12:00:00+00:00", {"pyproject.toml": None})
    repo.commit("timeout", "2024-05-17T10:00:00+00:00", _py_files(
        "sleeper", "import time\n\n\n" + _f("nap()", "time.sleep(600)\nreturn 1"),
        _py_test("sleeper", "nap", _f("test_nap()", "assert nap() == 1")),
    ))  # fmt: skip
    repo.commit("no coverage", "2024-05-18T10:00:00+00:00", {
        "calc/quarter.py": _f("quarter(a)", "return a // 4"),
        "tests/test_constants.py": _f("test_arithmetic()", "assert 2 + 2 == 4"),
    })  # fmt: skip
    return repo


PYTHON_EXPECTED: dict[str, dict[str, str]] = {
    "generation": {"test_subtract": "test_generation"},
    "generation pass old": {"test_add_small": "test_generation_pass_old", "test_add": "test_update_negative"},
    "update positive": {"test_greet": "test_update_positive"},
    "refinement cov improve": {"test_absolute": "test_refinement_cov_improve"},
    "refinement no cov improve": {"test_maximum": "test_refinement_no_cov_improve"},
    "new on new not pass": {"test_negate": "new_on_new_not_pass"},
    "old on old not pass": {"test_negate": "old_on_old_not_pass"},
    "no focal code": {"test_divide": "no_focal_code"},
    "test refactoring only": {"test_twice": "test_refactoring_only"},
    "deps refactoring only": {
        "test_divide": "deps_refactoring_only",
        "test_divide_exact": "deps_refactoring_only",
    },
    "test utility co-change": {"test_square": "test_utility_co_change"},
    "span: tests 8h later": {"test_triple": "pair_span_too_long"},
    "flaky": {"test_sign": "flaky"},
    "build failed": {"test_cube": "build_failed"},
    "env failed": {"test_half": "env_failed"},
    "timeout": {"test_nap": "timeout"},
    "no coverage": {"test_arithmetic": "no_coverage"},
}


def java_history_curated(factory: pytest.TempPathFactory) -> Shared:
    """The Java history mined and curated once per run (:func:`tests.shared.curated_once`), as
    test_curate_java.py checks it, label by label. Its two tasks, one of each track, are the ones
    the Java scoring and cheat tests judge agents on: no test curates the history again."""
    return curated_once(factory, java_curation_history, "java", reruns=2, test_timeout=TEST_TIMEOUT)
