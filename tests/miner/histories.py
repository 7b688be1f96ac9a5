"""Hand-written histories of a tiny Java/Maven project and a tiny Python project.

Every commit is one case the miner must handle; the tests state, commit by
commit, what it must make of each.
"""

from __future__ import annotations

from pathlib import Path

from tests.gitrepo import GitRepo

POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>demo</groupId><artifactId>calc</artifactId><version>1.0</version>
  <properties><maven.compiler.release>17</maven.compiler.release></properties>
</project>
"""

CALC = "src/main/java/demo/Calculator.java"
CALC_TEST = "src/test/java/demo/CalculatorTest.java"
ARITH_TEST = "src/test/java/demo/ArithmeticTest.java"

_ADD_V1 = "    public int add(int a, int b) {\n        return a + b;\n    }\n"
_ADD_V2 = "    public int add(int a, int b) {\n        return Math.addExact(a, b);\n    }\n"
_SUB_V1 = "    public int subtract(int a, int b) {\n        return a - b;\n    }\n"
_SUB_V2 = "    public int subtract(int a, int b) {\n        return Math.subtractExact(a, b);\n    }\n"
_MUL = "    public int multiply(int a, int b) {\n        return a * b;\n    }\n"
_DIV = "    public int divide(int a, int b) {\n        return a / b;\n    }\n"
_NEG = "    public int negate(int a) {\n        return -a;\n    }\n"
_MAX_V1 = "    public int max(int a, int b) {\n        return a > b ? a : b;\n    }\n"
_MAX_V2 = "    public int max(int a, int b) {\n        return Math.max(a, b);\n    }\n"
_ABS = "    public int abs(int a) {\n        return a < 0 ? -a : a;\n    }\n"


def _calculator(*methods: str) -> str:
    return "package demo;\n\npublic class Calculator {\n" + "\n".join(methods) + "}\n"


def _test_class(name: str, *methods: str) -> str:
    return (
        "package demo;\n\nimport static org.junit.jupiter.api.Assertions.assertEquals;\n\n"
        "import org.junit.jupiter.api.Test;\n\n"
        f"class {name} {{\n    private final Calculator calc = new Calculator();\n\n"
        + "\n".join(methods)
        + "}\n"
    )


def _test(name: str, body: str) -> str:
    return f"    @Test\n    void {name}() {{\n        {body}\n    }}\n"


T_ADD_V1 = _test("testAdd", "assertEquals(3, calc.add(1, 2));")
T_ADD_V2 = _test(
    "testAdd",
    "assertEquals(3, calc.add(1, 2));\n        "
    "org.junit.jupiter.api.Assertions.assertThrows(ArithmeticException.class, "
    "() -> calc.add(Integer.MAX_VALUE, 1));",
)
T_SUB = _test("testSubtract", "assertEquals(1, calc.subtract(3, 2));")
T_SUB_REFACTORED = _test(
    "testSubtract", "int result = calc.subtract(3, 2);\n        assertEquals(1, result);"
)
T_SUB_NEG = _test("testSubtractNegative", "assertEquals(-1, calc.subtract(2, 3));")
T_DIV = _test("testDivide", "assertEquals(2, calc.divide(6, 3));")
T_NEG = _test("testNegate", "assertEquals(-2, calc.negate(2));")
T_MAX_V1 = _test("testMax", "assertEquals(3, calc.max(1, 3));")
T_MAX_V2 = _test("testMax", "assertEquals(3, calc.max(1, 3));\n        assertEquals(2, calc.max(2, 2));")
T_ABS = _test("testAbs", "assertEquals(4, calc.abs(-4));")

GREETER = (
    "package demo;\n\n// Grüße, saved as ISO-8859-1 like many old Java projects\n"
    "public class Greeter {\n    public String greet(String name) {\n"
    '        return "Café " + name;\n    }\n}\n'
).encode("latin-1")
GREETER_TEST = """package demo;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class GreeterTest {
    @Test
    void greets() {
        assertTrue(new Greeter().greet("Bob").endsWith("Bob"));
    }
}
"""
BROKEN = "package demo;\n\npublic class Broken {\n    int f() { return ; }\n    int g( {\n}\n"

SHAPES = '''package demo;

import java.util.List;
import java.util.function.Function;

public class Shapes {
    public sealed interface Shape permits Circle, Square {}

    public record Circle(double radius) implements Shape {
        public Circle {
            if (radius < 0) throw new IllegalArgumentException("negative");
        }

        double area() {
            return Math.PI * radius * radius;
        }
    }

    public record Square(double side) implements Shape {}

    public static String describe(Shape shape) {
        return switch (shape) {
            case Circle c when c.radius() == 0 -> "dot";
            case Circle c -> "circle";
            case Square s -> {
                String kind = s.side() > 10 ? "big" : "small";
                yield kind + " square";
            }
        };
    }

    public static <T extends Shape> List<String> describeAll(List<T> shapes) {
        Function<Shape, String> f = Shapes::describe;
        return shapes.stream().map(f).toList();
    }

    public static String banner() {
        return """
            Shapes
            ======
            """;
    }
}
'''
SHAPES_TEST = """package demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

class ShapesTest {
    @Test
    void describesShapes() {
        var shapes = List.of(new Shapes.Circle(1), new Shapes.Square(20));
        assertEquals(List.of("circle", "big square"), Shapes.describeAll(shapes));
    }

    @Test
    void circleArea() {
        if (new Shapes.Circle(1) instanceof Shapes.Circle c && c.radius() > 0) {
            assertEquals(Math.PI, c.area(), 1e-9);
        }
    }
}
"""


def java_history(path: Path) -> GitRepo:
    """A Maven project whose history holds one commit of every case (see test_mine_java.py)."""
    repo = GitRepo(path)
    repo.commit("initial", "2024-03-01T10:00:00+01:00", {
        "pom.xml": POM, CALC: _calculator(_ADD_V1), CALC_TEST: _test_class("CalculatorTest", T_ADD_V1),
    })  # fmt: skip
    repo.commit("inserted test", "2024-03-02T10:00:00+01:00", {
        CALC: _calculator(_ADD_V1, _SUB_V1),
        CALC_TEST: _test_class("CalculatorTest", T_ADD_V1, T_SUB),
    })  # fmt: skip
    repo.commit("updated test", "2024-03-03T10:00:00+01:00", {
        CALC: _calculator(_ADD_V2, _SUB_V1),
        CALC_TEST: _test_class("CalculatorTest", T_ADD_V2, T_SUB),
    })  # fmt: skip
    repo.commit("test-only refactor", "2024-03-03T11:00:00+01:00", {
        CALC_TEST: _test_class("CalculatorTest", T_ADD_V2, T_SUB_REFACTORED),
    })  # fmt: skip
    repo.commit("production only", "2024-03-04T09:00:00+01:00", {
        CALC: _calculator(_ADD_V2, _SUB_V1, _MUL),
    })  # fmt: skip
    # The production commit above is 26 h before the next test commit: too far to pair.
    repo.commit("docs", "2024-03-05T08:00:00+01:00", {"README.md": "# calc\n"})
    repo.commit("prod then tests 2h: prod", "2024-03-05T09:00:00+01:00", {
        CALC: _calculator(_ADD_V2, _SUB_V1, _MUL, _DIV),
    })  # fmt: skip
    repo.commit("prod then tests 2h: tests", "2024-03-05T11:00:00+01:00", {
        CALC_TEST: _test_class("CalculatorTest", T_ADD_V2, T_SUB_REFACTORED, T_DIV),
    })  # fmt: skip
    repo.commit("prod then tests 30h: prod", "2024-03-07T09:00:00+01:00", {
        CALC: _calculator(_ADD_V2, _SUB_V1, _MUL, _DIV, _NEG),
    })  # fmt: skip
    repo.commit("prod then tests 30h: tests", "2024-03-08T15:00:00+01:00", {
        CALC_TEST: _test_class("CalculatorTest", T_ADD_V2, T_SUB_REFACTORED, T_DIV, T_NEG),
    })  # fmt: skip
    repo.branch("feature")
    repo.commit("feature: max", "2024-03-09T10:00:00+01:00", {
        CALC: _calculator(_ADD_V2, _SUB_V1, _MUL, _DIV, _NEG, _MAX_V1),
        CALC_TEST: _test_class("CalculatorTest", T_ADD_V2, T_SUB_REFACTORED, T_DIV, T_NEG, T_MAX_V1),
    })  # fmt: skip
    repo.checkout("main")
    repo.commit("main: docs", "2024-03-09T11:00:00+01:00", {"README.md": "# calc\n\nA calculator.\n"})
    repo.merge("feature", "merge feature", "2024-03-09T12:00:00+01:00")
    repo.commit("rename test class", "2024-03-10T10:00:00+01:00", {
        CALC: _calculator(_ADD_V2, _SUB_V1, _MUL, _DIV, _NEG, _MAX_V2),
        ARITH_TEST: _test_class("ArithmeticTest", T_ADD_V2, T_SUB_REFACTORED, T_DIV, T_NEG, T_MAX_V2),
    }, renames={CALC_TEST: ARITH_TEST})  # fmt: skip
    repo.commit("non-utf8 source", "2024-03-11T10:00:00+01:00", {
        "src/main/java/demo/Greeter.java": GREETER,
        "src/test/java/demo/GreeterTest.java": GREETER_TEST,
    })  # fmt: skip
    repo.commit("syntax error", "2024-03-12T10:00:00+01:00", {
        "src/main/java/demo/Broken.java": BROKEN,
        CALC: _calculator(_ADD_V2, _SUB_V1, _MUL, _DIV, _NEG, _MAX_V2, _ABS),
        ARITH_TEST: _test_class(
            "ArithmeticTest", T_ADD_V2, T_SUB_REFACTORED, T_DIV, T_NEG, T_MAX_V2, T_ABS
        ),
    })  # fmt: skip
    repo.commit("modern java", "2024-03-13T10:00:00+01:00", {
        "src/main/java/demo/Shapes.java": SHAPES, "src/test/java/demo/ShapesTest.java": SHAPES_TEST,
    })  # fmt: skip
    repo.commit("unchanged test, changed code", "2024-03-14T10:00:00+01:00", {
        CALC: _calculator(_ADD_V2, _SUB_V2, _MUL, _DIV, _NEG, _MAX_V2, _ABS),
        ARITH_TEST: _test_class(
            "ArithmeticTest", T_ADD_V2, T_SUB_REFACTORED, T_DIV, T_NEG, T_MAX_V2, T_ABS, T_SUB_NEG
        ),
    })  # fmt: skip
    return repo


CORE = "calc/core.py"
CORE_TEST = "tests/test_core.py"
ARITH_PY_TEST = "tests/test_arith.py"

P_ADD_V1 = "def add(a, b):\n    return a + b\n"
P_ADD_V2 = 'def add(a, b):\n    """Adds numbers of any kind."""\n    return a + b if b else a\n'
P_SUB = "def subtract(a, b):\n    return a - b\n"
P_MUL = "def multiply(a, b):\n    return a * b\n"
P_DIV_V1 = "def divide(a, b):\n    return a / b\n"
P_DIV_V2 = (
    "def divide(a, b):\n    if b == 0:\n        raise ZeroDivisionError('b is zero')\n    return a / b\n"
)
P_ABS = "def abs_value(a):\n    return -a if a < 0 else a\n"

PT_ADD_V1 = "def test_add():\n    assert add(1, 2) == 3\n"
PT_ADD_V2 = "def test_add():\n    assert add(1, 2) == 3\n    assert add(1, 0) == 1\n"
PT_SUB = "def test_subtract():\n    assert subtract(3, 2) == 1\n"
PT_SUB_REFACTORED = "def test_subtract():\n    result = subtract(3, 2)\n    assert result == 1\n"
PT_MUL = "def test_multiply():\n    assert multiply(2, 3) == 6\n"
PT_DIV_V1 = "def test_divide():\n    assert divide(6, 3) == 2\n"
PT_DIV_V2 = (
    "def test_divide():\n    assert divide(6, 3) == 2\n"
    "    with pytest.raises(ZeroDivisionError):\n        divide(1, 0)\n"
)
PT_ABS = "def test_abs_value():\n    assert abs_value(-4) == 4\n"
PT_ADD_FLOATS = "def test_add_floats():\n    assert add(0.5, 0.25) == 0.75\n"

STACK = """class Stack:
    def __init__(self):
        self.items = []

    def push(self, item):
        self.items.append(item)

    def pop(self):
        return self.items.pop()
"""
STACK_TEST = """from calc.stack import Stack


class TestStack:
    def test_push(self):
        stack = Stack()
        stack.push(1)
        assert stack.items == [1]

    def test_pop(self):
        stack = Stack()
        stack.push(2)
        assert stack.pop() == 2

    def helper(self):
        return Stack()
"""
GREET = "# -*- coding: latin-1 -*-\n\ndef greet(name):\n    return 'Café ' + name\n".encode("latin-1")
GREET_TEST = "from calc.greet import greet\n\n\ndef test_greet():\n    assert greet('Bob').endswith('Bob')\n"
LEGACY = "def legacy():\n    return 'Grüße'\n".encode("latin-1")  # latin-1 bytes, no coding cookie
BROKEN_PY = "def broken(:\n    pass\n"


def _module(*functions: str) -> str:
    return "\n\n".join(functions)


def _tests(*functions: str) -> str:
    return "import pytest\n\nfrom calc.core import *  # noqa\n\n\n" + "\n\n".join(functions)


def python_history(path: Path) -> GitRepo:
    """A pytest project whose history holds one commit of every case (see test_mine_python.py)."""
    repo = GitRepo(path)
    repo.commit("initial", "2024-05-01T10:00:00-04:00", {
        "pyproject.toml": '[project]\nname = "calc"\nversion = "1.0"\n',
        "calc/__init__.py": "", CORE: _module(P_ADD_V1), CORE_TEST: _tests(PT_ADD_V1),
    })  # fmt: skip
    repo.commit("inserted test", "2024-05-02T10:00:00-04:00", {
        CORE: _module(P_ADD_V1, P_SUB), CORE_TEST: _tests(PT_ADD_V1, PT_SUB),
    })  # fmt: skip
    repo.commit("updated test", "2024-05-03T10:00:00-04:00", {
        CORE: _module(P_ADD_V2, P_SUB), CORE_TEST: _tests(PT_ADD_V2, PT_SUB),
    })  # fmt: skip
    repo.commit("test-only refactor", "2024-05-03T11:00:00-04:00", {
        CORE_TEST: _tests(PT_ADD_V2, PT_SUB_REFACTORED),
    })  # fmt: skip
    repo.commit("prod then tests 2h: prod", "2024-05-04T09:00:00-04:00", {"calc/stack.py": STACK})
    repo.commit(
        "prod then tests 2h: tests",
        "2024-05-04T11:00:00-04:00",
        {"tests/test_stack.py": STACK_TEST},
    )
    repo.commit("prod then tests 30h: prod", "2024-05-06T09:00:00-04:00", {
        CORE: _module(P_ADD_V2, P_SUB, P_MUL),
    })  # fmt: skip
    repo.commit("prod then tests 30h: tests", "2024-05-07T15:00:00-04:00", {
        CORE_TEST: _tests(PT_ADD_V2, PT_SUB_REFACTORED, PT_MUL),
    })  # fmt: skip
    repo.branch("feature")
    repo.commit("feature: divide", "2024-05-08T10:00:00-04:00", {
        CORE: _module(P_ADD_V2, P_SUB, P_MUL, P_DIV_V1),
        CORE_TEST: _tests(PT_ADD_V2, PT_SUB_REFACTORED, PT_MUL, PT_DIV_V1),
    })  # fmt: skip
    repo.checkout("main")
    repo.commit("main: readme", "2024-05-08T11:00:00-04:00", {"README.md": "# calc\n"})
    repo.merge("feature", "merge feature", "2024-05-08T12:00:00-04:00")
    repo.commit("rename test module", "2024-05-09T10:00:00-04:00", {
        CORE: _module(P_ADD_V2, P_SUB, P_MUL, P_DIV_V2),
        ARITH_PY_TEST: _tests(PT_ADD_V2, PT_SUB_REFACTORED, PT_MUL, PT_DIV_V2),
    }, renames={CORE_TEST: ARITH_PY_TEST})  # fmt: skip
    repo.commit("non-utf8 source", "2024-05-10T10:00:00-04:00", {
        "calc/greet.py": GREET, "tests/test_greet.py": GREET_TEST,
    })  # fmt: skip
    repo.commit("syntax error", "2024-05-11T10:00:00-04:00", {
        "calc/broken.py": BROKEN_PY,
        "calc/legacy.py": LEGACY,
        CORE: _module(P_ADD_V2, P_SUB, P_MUL, P_DIV_V2, P_ABS),
        ARITH_PY_TEST: _tests(PT_ADD_V2, PT_SUB_REFACTORED, PT_MUL, PT_DIV_V2, PT_ABS),
    })  # fmt: skip
    repo.commit("unchanged test, changed code", "2024-05-12T10:00:00-04:00", {
        CORE: _module(P_ADD_V1, P_SUB, P_MUL, P_DIV_V2, P_ABS),
        ARITH_PY_TEST: _tests(PT_ADD_V2, PT_SUB_REFACTORED, PT_MUL, PT_DIV_V2, PT_ABS, PT_ADD_FLOATS),
    })  # fmt: skip
    return repo
