"""Tests for the tree-sitter based Java method parser (miner/java.py)."""

from __future__ import annotations

import textwrap

import pytest

from miner.errors import SourceSyntaxError
from miner.java import JAVA, parse_java, scan_java_method
from miner.languages import get_language
from miner.parsing import MethodInfo


def _java(text: str) -> bytes:
    return textwrap.dedent(text).encode("utf-8")


def _methods(text: str) -> dict[str, MethodInfo]:
    return parse_java(_java(text), scan="all").by_key()


def test_junit5_test_class_keys_tests_and_lines() -> None:
    source = _java(
        """\
        package com.example;

        import org.junit.jupiter.api.*;

        class CalculatorTest {
            private Calculator calc;

            @BeforeEach
            void setUp() {
                calc = new Calculator();
            }

            /** Adds two numbers. */
            @Test
            @DisplayName("adds")
            void addsNumbers() {
                assertEquals(3, calc.add(1, 2));
            }

            @ParameterizedTest
            @ValueSource(ints = {1, 2})
            void squares(int x) {
                assertEquals(x * x, Calculator.square(x));
            }

            private int helper(String s) {
                return s.length();
            }
        }
        """
    )
    parsed = parse_java(source)
    methods = parsed.by_key()

    assert list(methods) == [
        "CalculatorTest.setUp()",
        "CalculatorTest.addsNumbers()",
        "CalculatorTest.squares(int)",
        "CalculatorTest.helper(String)",
    ]
    assert parsed.classes == ("CalculatorTest",)

    setup = methods["CalculatorTest.setUp()"]
    assert (setup.start_line, setup.end_line, setup.is_test) == (8, 11, False)
    assert setup.name == "setUp"
    assert setup.container == "CalculatorTest"
    assert setup.source.startswith("@BeforeEach\n")

    adds = methods["CalculatorTest.addsNumbers()"]
    # Starts at the first annotation, not at the Javadoc.
    assert (adds.start_line, adds.end_line, adds.is_test) == (14, 18, True)
    assert adds.source == (
        '@Test\n    @DisplayName("adds")\n    void addsNumbers() {\n'
        "        assertEquals(3, calc.add(1, 2));\n    }"
    )

    squares = methods["CalculatorTest.squares(int)"]
    assert (squares.start_line, squares.end_line, squares.is_test) == (20, 24, True)

    helper = methods["CalculatorTest.helper(String)"]
    assert (helper.start_line, helper.end_line, helper.is_test) == (26, 28, False)


def test_other_junit5_annotations_are_tests() -> None:
    methods = _methods(
        """\
        class T {
            @RepeatedTest(3) void a() {}
            @TestFactory Stream<DynamicTest> b() { return null; }
            @TestTemplate void c() {}
            @org.junit.jupiter.api.Test void d() {}
            @Override public String toString() { return ""; }
        }
        """
    )
    assert {key: m.is_test for key, m in methods.items()} == {
        "T.a()": True,
        "T.b()": True,
        "T.c()": True,
        "T.d()": True,
        "T.toString()": False,
    }


def test_junit4_qualified_annotation() -> None:
    methods = _methods(
        """\
        public class LegacyTest {
            @org.junit.Test
            public void works() {}

            @org.junit.Before
            public void before() {}
        }
        """
    )
    assert methods["LegacyTest.works()"].is_test
    assert not methods["LegacyTest.before()"].is_test


def test_junit3_test_case_methods() -> None:
    methods = _methods(
        """\
        import junit.framework.TestCase;

        public class OldTest extends junit.framework.TestCase {
            public void testFoo() {}
            public void testWithArg(int x) {}
            void testNotPublic() {}
            public int testReturnsInt() { return 1; }
            public void helper() {}
            protected void setUp() {}
        }

        class NotATestCase {
            public void testLooksLikeATest() {}
        }

        class Simple extends TestCase {
            public void testBar() {}
        }
        """
    )
    tests = {key for key, m in methods.items() if m.is_test}
    assert tests == {"OldTest.testFoo()", "Simple.testBar()"}


def test_overloads_generics_constructors_and_nesting() -> None:
    source = _java(
        """\
        package p;

        public class Calc<E> {
            private final int base;

            public Calc(int base) {
                this.base = base;
            }

            public int add(int a, int b) { return a + b; }

            public double add(double a, double b) { return a + b; }

            public static <T> List<T> wrap(List<T> xs, Map<String, List<T>> m, String... rest) {
                return xs;
            }

            int sum(final int[] xs, int ys[], @Deprecated java.util.List<String> q) { return 0; }

            static class Helper {
                Helper() {}
                void help() {}

                class Deep {
                    void deeper() {}
                }
            }

            class Inner {
                int get() { return base; }
            }

            enum Mode {
                FAST, SLOW;

                boolean isFast() { return this == FAST; }
            }

            interface Op {
                int apply(int x);

                default int twice(int x) { return apply(apply(x)); }
            }

            void callbacks() {
                Runnable r = () -> System.out.println("lambda");
                Object o = new Object() {
                    @Override
                    public String toString() { return "anon"; }
                };
                class Local {
                    void localMethod() {}
                }
            }
        }
        """
    )
    parsed = parse_java(source, scan="all")
    keys = [m.key for m in parsed.methods]
    assert keys == [
        "Calc.Calc(int)",
        "Calc.add(int,int)",
        "Calc.add(double,double)",
        "Calc.wrap(List,Map,String...)",
        "Calc.sum(int[],int[],java.util.List)",
        "Calc.Helper.Helper()",
        "Calc.Helper.help()",
        "Calc.Helper.Deep.deeper()",
        "Calc.Inner.get()",
        "Calc.Mode.isFast()",
        "Calc.Op.apply(int)",
        "Calc.Op.twice(int)",
        "Calc.callbacks()",
    ]
    assert parsed.classes == (
        "Calc",
        "Calc.Helper",
        "Calc.Helper.Deep",
        "Calc.Inner",
        "Calc.Mode",
        "Calc.Op",
    )
    methods = parsed.by_key()

    ctor = methods["Calc.Calc(int)"]
    assert (ctor.name, ctor.container) == ("Calc", "Calc")
    assert (ctor.start_line, ctor.end_line) == (6, 8)

    deeper = methods["Calc.Helper.Deep.deeper()"]
    assert (deeper.name, deeper.container) == ("deeper", "Calc.Helper.Deep")

    # Code inside lambdas, anonymous and local classes belongs to the enclosing method.
    callbacks = methods["Calc.callbacks()"]
    assert (callbacks.start_line, callbacks.end_line) == (45, 54)
    assert "localMethod" in callbacks.source
    assert {"println", "Object"} <= callbacks.calls
    assert not any(m.name in ("toString", "localMethod") for m in parsed.methods)

    # Type variables are not class references.
    wrap = methods["Calc.wrap(List,Map,String...)"]
    assert wrap.type_refs == {"List", "Map", "String"}


def test_modern_java_features() -> None:
    source = _java(
        """\
        package modern;

        public sealed interface Shape permits Circle, Square {
            double area();
        }

        record Point(int x, @Deprecated int y) {
            Point {
                if (x < 0) throw new IllegalArgumentException("x");
            }

            Point(int both) { this(both, both); }

            static <T extends Comparable<T>> T max(T a, T b) {
                return a.compareTo(b) >= 0 ? a : b;
            }

            double norm() { return Math.sqrt(x * x + y * y); }
        }

        final class Modern {
            String describe(Object o) {
                var text = \"\"\"
                    Hello, "text block"
                    world
                    \"\"\";
                if (o instanceof String s && !s.isEmpty()) {
                    return s + text;
                }
                int code = switch (o.hashCode() % 3) {
                    case 0 -> 10;
                    case 1 -> {
                        int t = 5;
                        yield t * 2;
                    }
                    default -> throw new IllegalStateException();
                };
                return String.valueOf(code);
            }

            void annotated(@SuppressWarnings("unused") final @Deprecated String name) {}

            public <K, V extends Number> Map<K, List<V>> group(Map<K, V> in) { return null; }
        }
        """
    )
    parsed = parse_java(source, scan="all")
    methods = parsed.by_key()
    assert list(methods) == [
        "Shape.area()",
        "Point.Point(int,int)",
        "Point.Point(int)",
        "Point.max(T,T)",
        "Point.norm()",
        "Modern.describe(Object)",
        "Modern.annotated(String)",
        "Modern.group(Map)",
    ]
    assert parsed.classes == ("Shape", "Point", "Modern")

    compact = methods["Point.Point(int,int)"]
    assert (compact.name, compact.container) == ("Point", "Point")
    assert (compact.start_line, compact.end_line) == (8, 10)
    assert "IllegalArgumentException" in compact.calls

    describe = methods["Modern.describe(Object)"]
    assert (describe.start_line, describe.end_line) == (22, 39)
    assert '"text block"' in describe.source
    assert "var" not in describe.type_refs
    assert {"String", "Object", "IllegalStateException"} <= describe.type_refs
    assert {"isEmpty", "hashCode", "valueOf"} <= describe.calls

    assert methods["Point.norm()"].type_refs == {"Math"}


def test_calls_and_type_refs() -> None:
    methods = _methods(
        """\
        class CalcTest {
            @Test
            void uses() {
                Calculator calc = new Calculator();
                assertEquals(3, calc.add(1, 2));
                assertEquals(9, Calculator.square(3));
                List<Foo> foos = new ArrayList<>();
                foos.forEach(Foo::bar);
                Supplier<Widget> make = Widget::new;
                Class<?> k = Foo.class;
                LOG.info("done");
                java.util.Objects.requireNonNull(k);
            }
        }
        """
    )
    uses = methods["CalcTest.uses()"]
    assert uses.calls == {
        "Calculator",
        "add",
        "square",
        "assertEquals",
        "ArrayList",
        "forEach",
        "bar",
        "Widget",
        "info",
        "requireNonNull",
    }
    assert uses.type_refs == {
        "Calculator",
        "List",
        "Foo",
        "ArrayList",
        "Supplier",
        "Widget",
        "Class",
        "Objects",
    }
    # ALL_CAPS receivers are constants (LOG), not classes.
    assert "LOG" not in uses.type_refs


def test_tokens_ignore_whitespace_and_comments() -> None:
    methods = _methods(
        """\
        class A {
            int f(int x) {
                return x + 1;
            }
        }

        class B {
            int f(int x)
            {
                // a comment
                return x
                    /* inline */ + 1;   // trailing
            }
        }

        class C {
            int f(int x) {
                return x + 2;
            }
        }

        class D {
            int f(int x) {
                String s = "a  b";
                return x;
            }
        }

        class E {
            int f(int x) {
                String s = "a b";
                return x;
            }
        }
        """
    )
    a, b, c = methods["A.f(int)"], methods["B.f(int)"], methods["C.f(int)"]
    assert a.tokens == b.tokens
    assert a.tokens == ("int", "f", "(", "int", "x", ")", "{", "return", "x", "+", "1", ";", "}")
    assert a.source != b.source
    assert a.tokens != c.tokens
    # Whitespace inside a string literal is part of the literal.
    assert methods["D.f(int)"].tokens != methods["E.f(int)"].tokens


def test_latin1_source_is_decoded_without_error() -> None:
    source = (
        b"class Caf {\n"
        b"    // caf\xe9\n"
        b"    String name() {\n"
        b'        return "caf\xe9"; // \xe0 la carte\n'
        b"    }\n"
        b"}\n"
    )
    method = parse_java(source, scan="all").by_key()["Caf.name()"]
    assert (method.start_line, method.end_line) == (3, 5)
    assert 'return "caf\u00e9";' in method.source
    assert '"caf\u00e9"' in method.tokens


def test_utf8_source_is_decoded_as_utf8() -> None:
    source = 'class U {\n    String s() { return "naïve ☕"; }\n}\n'.encode()
    method = parse_java(source).by_key()["U.s()"]
    assert '"naïve ☕"' in method.source


def test_syntax_error_reports_line() -> None:
    source = _java(
        """\
        class Broken {
            void f() {
                int x = ;
            }
        }
        """
    )
    with pytest.raises(SourceSyntaxError) as info:
        parse_java(source)
    assert info.value.line == 3
    assert str(info.value) == "syntax error at line 3"


def test_missing_brace_is_a_syntax_error() -> None:
    source = _java(
        """\
        class Broken {
            void f() {
                int x = 1;
        """
    )
    with pytest.raises(SourceSyntaxError) as info:
        parse_java(source)
    assert info.value.line == 3  # the closing braces go missing after the last token


def test_empty_file_has_no_methods() -> None:
    parsed = parse_java(b"")
    assert parsed.methods == ()
    assert parsed.classes == ()


def test_java_language_is_registered() -> None:
    from miner.languages import get_language

    java = get_language("java")
    assert java is JAVA
    assert java.parse is parse_java
    assert java.suffixes == (".java",)
    assert "pom.xml" in java.build_files
    assert "*Test.java" in java.test_globs


def test_body_scan_is_for_tests_unless_asked() -> None:
    source = _java(
        """
        class CalcTest {
            @Test void adds() { new Calc().add(1, 2); }
            int helper() { return new Calc().add(1, 2); }
        }
        """
    )
    methods = parse_java(source).by_key()
    assert methods["CalcTest.adds()"].calls == {"Calc", "add"}
    assert methods["CalcTest.helper()"].calls == frozenset()
    assert methods["CalcTest.helper()"].tokens == ()
    assert parse_java(source, scan="all").by_key()["CalcTest.helper()"].calls == {"Calc", "add"}


def test_anonymous_classes_in_field_initializers_are_listed_under_the_field() -> None:
    methods = _methods(
        """
        class TypeAdapters {
            static final Adapter<Boolean> BOOLEAN = new Adapter<Boolean>() {
                @Override public Boolean read(Reader in) { return in.next(); }
                @Override public void write(Writer out, Boolean value) { out.value(value); }
            };
            static final Runnable R = () -> {}, S = new Runnable() { public void run() {} };
            void m() { Runnable local = new Runnable() { public void run() {} }; }
        }
        """
    )
    assert sorted(methods) == [
        "TypeAdapters.BOOLEAN.read(Reader)",
        "TypeAdapters.BOOLEAN.write(Writer,Boolean)",
        "TypeAdapters.S.run()",
        "TypeAdapters.m()",
    ]


def test_scan_of_a_single_method() -> None:
    calls, type_refs, tokens = scan_java_method(
        '@Test\nvoid parses() {\n    assertEquals(1, new Parser().parse("1")); // one\n}'
    )
    assert calls == {"assertEquals", "Parser", "parse"}
    assert "Parser" in type_refs
    assert tokens[:4] == ("@", "Test", "void", "parses")
    assert "// one" not in tokens
    compact = scan_java_method("Point {\n    if (x < 0) throw new IllegalArgumentException();\n}")
    assert "IllegalArgumentException" in compact[0]
    assert get_language("java").scan is scan_java_method
