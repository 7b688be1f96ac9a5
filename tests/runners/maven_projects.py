"""Tiny real Maven projects written into a folder, for the Maven runner's tests and benchmarks."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

JUNIT_JUPITER = "5.10.3"
JUNIT6 = "6.0.3"
JUNIT4 = "4.13.2"

_PLUGINS = """
  <build>
    <plugins>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-compiler-plugin</artifactId>
        <version>3.13.0</version>
      </plugin>
      <plugin>
        <groupId>org.apache.maven.plugins</groupId>
        <artifactId>maven-resources-plugin</artifactId>
        <version>3.3.1</version>
      </plugin>{extra}
    </plugins>
  </build>"""

CALC = """package demo;

public final class Calc {
    public static int add(int a, int b) {
        int sum = a + b;
        return sum;
    }

    public static int div(int a, int b) {
        return a / b;
    }

    private Calc() {}
}
"""
"""Production code whose line numbers the coverage test relies on: ``add`` is lines 5-6."""

CALC_ADD_LINES = frozenset({5, 6})

JUPITER_TEST = """package demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class CalcTest {
    @Test
    void adds() {
        assertEquals(5, Calc.add(2, 3));
    }

    @Test
    void addsWrongly() {
        assertEquals(6, Calc.add(2, 3), "two and three");
    }

    @Test
    void dividesByZero() {
        Calc.div(1, 0);
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3})
    void addsZero(int x) {
        assertEquals(x, Calc.add(x, 0));
    }
}
"""

SLOW_TEST = """package demo;

import org.junit.jupiter.api.Test;

class Slowness {
    @Test
    void sleeps() throws Exception {
        Thread.sleep(600_000);
    }
}
"""

OLD_TEST_CALLING_REMOVED_METHOD = """package demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class CalcTest {
    @Test
    void adds() {
        assertEquals(5, Calc.plus(2, 3));
    }
}
"""
"""An older CalcTest that calls ``Calc.plus``, which the current Calc does not have."""

OLD_TEST_EXPECTING_OTHER_BEHAVIOUR = """package demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class CalcTest {
    @Test
    void adds() {
        assertEquals(23, Calc.add(2, 3));
    }
}
"""
"""An older CalcTest that compiles against the current Calc but expects another sum."""

JUNIT4_TEST = """package demo;

import static org.junit.Assert.assertEquals;

import org.junit.Test;

public class CalcTest {
    @Test
    public void adds() {
        assertEquals(5, Calc.add(2, 3));
    }

    @Test
    public void addsWrongly() {
        assertEquals(6, Calc.add(2, 3));
    }

    @Test
    public void dividesByZero() {
        Calc.div(1, 0);
    }
}
"""

JUNIT4_PARAMETERIZED_TEST = """package demo;

import static org.junit.Assert.assertEquals;

import java.util.Arrays;
import java.util.Collection;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.junit.runners.Parameterized;

@RunWith(Parameterized.class)
public class AddZeroTest {
    @Parameterized.Parameters
    public static Collection<Object[]> data() {
        return Arrays.asList(new Object[][] {{1}, {2}});
    }

    private final int x;

    public AddZeroTest(int x) {
        this.x = x;
    }

    @Test
    public void addsZero() {
        assertEquals(x, Calc.add(x, 0));
    }
}
"""


def pom(
    artifact: str,
    dependencies: Sequence[tuple[str, str, str, str]] = (),
    *,
    packaging: str = "jar",
    modules: tuple[str, ...] = (),
    parent: str = "",
    extra_plugins: str = "",
    release: str = "17",
    level: str = "release",
    plugins: bool = True,
) -> str:
    """A pom.xml; dependencies are (group, artifact, version, scope); ``parent`` is the parent's artifact.

    ``level`` says how ``release`` is declared: ``maven.compiler.release``, or ``source`` and
    ``target``. Without ``plugins`` no plugin version is pinned: Maven's own defaults build it.
    """
    deps = "".join(
        f"""
    <dependency>
      <groupId>{group}</groupId>
      <artifactId>{name}</artifactId>
      <version>{version}</version>
      <scope>{scope}</scope>
    </dependency>"""
        for group, name, version, scope in dependencies
    )
    parent_xml = (
        f"""
  <parent>
    <groupId>demo</groupId>
    <artifactId>{parent}</artifactId>
    <version>1.0</version>
  </parent>"""
        if parent
        else ""
    )
    modules_xml = (
        "\n  <modules>" + "".join(f"\n    <module>{m}</module>" for m in modules) + "\n  </modules>"
        if modules
        else ""
    )
    build = "" if packaging == "pom" or not plugins else _PLUGINS.format(extra=extra_plugins)
    if level == "release":
        declared = f"<maven.compiler.release>{release}</maven.compiler.release>"
    else:
        declared = (
            f"<maven.compiler.source>{release}</maven.compiler.source>\n"
            f"    <maven.compiler.target>{release}</maven.compiler.target>"
        )
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>{parent_xml}
  <groupId>demo</groupId>
  <artifactId>{artifact}</artifactId>
  <version>1.0</version>
  <packaging>{packaging}</packaging>{modules_xml}
  <properties>
    {declared}
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>{deps}
  </dependencies>{build}
</project>
"""


JUPITER_DEPS = [("org.junit.jupiter", "junit-jupiter", JUNIT_JUPITER, "test")]
JUNIT4_DEPS = [("junit", "junit", JUNIT4, "test")]
JUNIT_DEP_DEPS = [("junit", "junit-dep", "4.10", "test")]
"""JUnit 4.10 as old projects took it: ``junit-dep``, older than the JUnit 4.12 the vintage engine needs."""


def write(root: Path, files: dict[str, str]) -> Path:
    """Writes ``files`` (path relative to ``root`` → text) and returns ``root``."""
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return root


def jupiter_project(root: Path) -> Path:
    """JUnit 5: CalcTest has a passing, a failing, an erroring and a parameterized test; Slowness hangs."""
    return write(
        root,
        {
            "pom.xml": pom("calc", JUPITER_DEPS),
            "src/main/java/demo/Calc.java": CALC,
            "src/test/java/demo/CalcTest.java": JUPITER_TEST,
            "src/test/java/demo/Slowness.java": SLOW_TEST,
        },
    )


def junit6_project(root: Path) -> Path:
    """The JUnit 5 project on JUnit 6, whose launcher the 5.x one cannot replace."""
    return write(
        root,
        {
            "pom.xml": pom("calc6", [("org.junit.jupiter", "junit-jupiter", JUNIT6, "test")]),
            "src/main/java/demo/Calc.java": CALC,
            "src/test/java/demo/CalcTest.java": JUPITER_TEST,
        },
    )


def junit4_project(root: Path) -> Path:
    """JUnit 4: the same three outcomes, plus a Parameterized runner."""
    return write(
        root,
        {
            "pom.xml": pom("calc4", JUNIT4_DEPS, release="8"),
            "src/main/java/demo/Calc.java": CALC,
            "src/test/java/demo/CalcTest.java": JUNIT4_TEST,
            "src/test/java/demo/AddZeroTest.java": JUNIT4_PARAMETERIZED_TEST,
        },
    )


def junit_dep_project(root: Path) -> Path:
    """JUnit 4.10 from ``junit:junit-dep`` (the vintage engine refuses JUnit 4 before 4.12)."""
    return write(
        root,
        {
            "pom.xml": pom("calc-dep", JUNIT_DEP_DEPS, release="8"),
            "src/main/java/demo/Calc.java": CALC,
            "src/test/java/demo/CalcTest.java": JUNIT4_TEST,
        },
    )


def multi_module_project(root: Path) -> Path:
    """A parent with ``core`` (Calc and its tests) and ``app`` (depends on core; tests call Calc)."""
    app_test = """package demo.app;

import static org.junit.jupiter.api.Assertions.assertEquals;

import demo.Calc;
import org.junit.jupiter.api.Test;

class AppTest {
    @Test
    void usesCore() {
        assertEquals(4, Calc.add(2, 2));
    }
}
"""
    return write(
        root,
        {
            "pom.xml": pom("parent", packaging="pom", modules=("core", "app")),
            "core/pom.xml": pom("core", JUPITER_DEPS, parent="parent"),
            "core/src/main/java/demo/Calc.java": CALC,
            "core/src/test/java/demo/CalcTest.java": JUPITER_TEST,
            "app/pom.xml": pom("app", [*JUPITER_DEPS, ("demo", "core", "1.0", "compile")], parent="parent"),
            "app/src/test/java/demo/app/AppTest.java": app_test,
        },
    )


def broken_project(root: Path) -> Path:
    """Production code that does not compile: line 5 calls a method that does not exist."""
    broken = CALC.replace("int sum = a + b;", "int sum = Math.plus(a, b);")
    return write(
        root,
        {
            "pom.xml": pom("broken", JUPITER_DEPS),
            "src/main/java/demo/Calc.java": broken,
        },
    )


def unknown_plugin_project(root: Path) -> Path:
    """A pom whose build uses a plugin no repository has."""
    plugin = """
      <plugin>
        <groupId>org.coevo.nowhere</groupId>
        <artifactId>no-such-maven-plugin</artifactId>
        <version>9.9.9</version>
        <executions>
          <execution>
            <phase>compile</phase>
            <goals><goal>run</goal></goals>
          </execution>
        </executions>
      </plugin>"""
    return write(
        root,
        {
            "pom.xml": pom("unknown", JUPITER_DEPS, extra_plugins=plugin),
            "src/main/java/demo/Calc.java": CALC,
        },
    )


# --- projects of other eras -------------------------------------------------------------------------

HEX = """package demo;

import javax.xml.bind.DatatypeConverter;

public final class Hex {
    public static String of(byte[] bytes) {
        return DatatypeConverter.printHexBinary(bytes);
    }

    private Hex() {}
}
"""
"""Java 8 era code: JAXB's ``DatatypeConverter`` was in the JDK until 10."""

HEX_TEST = """package demo;

import static org.junit.Assert.assertEquals;

import org.junit.Test;

public class HexTest {
    @Test
    public void printsHex() {
        assertEquals("CAFE", Hex.of(new byte[] {(byte) 0xca, (byte) 0xfe}));
    }

    @Test
    public void printsWrongly() {
        assertEquals("cafe", Hex.of(new byte[] {(byte) 0xca, (byte) 0xfe}));
    }
}
"""
"""One passing and one failing test, whatever the JDK (the same outcomes on every backend)."""

CACHE = """package demo;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;

public final class Memo {
    private final Cache<String, Integer> cache = Caffeine.newBuilder().maximumSize(10).build();

    public int lengthOf(String text) {
        return cache.get(text, String::length);
    }
}
"""

CACHE_TEST = """package demo;

import static org.junit.Assert.assertEquals;

import org.junit.Test;

public class MemoTest {
    @Test
    public void remembers() {
        Memo memo = new Memo();
        assertEquals(3, memo.lengthOf("abc"));
        assertEquals(3, memo.lengthOf("abc"));
    }

    @Test
    public void countsWrongly() {
        assertEquals(4, new Memo().lengthOf("abc"));
    }
}
"""

ERA_TESTS = {
    "maven-defaults": ["demo.CalcTest#adds", "demo.CalcTest#addsWrongly"],
    "source-1.6": ["demo.CalcTest#adds", "demo.CalcTest#addsWrongly"],
    "jaxb": ["demo.HexTest#printsHex", "demo.HexTest#printsWrongly"],
    "java-11-library": ["demo.MemoTest#remembers", "demo.MemoTest#countsWrongly"],
}
"""The tests of each project of :func:`era_project`: the first passes, the second fails."""


def era_project(root: Path, kind: str) -> Path:
    """A project of an older era, by ``kind`` (a key of :data:`ERA_TESTS`):

    - ``maven-defaults``: ``maven.compiler.release`` 8 and no plugin versions; Maven 3.8's default
      compiler plugin (3.1) ignores ``release`` and asks javac for Java 5.
    - ``source-1.6``: source and target 1.6, which JDK 12 and later no longer compile.
    - ``jaxb``: source and target 1.8, using ``javax.xml.bind`` (in the JDK until 10).
    - ``java-11-library``: source and target 1.8 with Caffeine 3, whose classes are Java 11's:
      JDK 8's javac cannot read them.
    """
    junit = [("junit", "junit", JUNIT4, "test")]
    files = {
        "maven-defaults": {
            "pom.xml": pom("defaults", junit, release="8", plugins=False),
            "src/main/java/demo/Calc.java": CALC,
            "src/test/java/demo/CalcTest.java": JUNIT4_TEST,
        },
        "source-1.6": {
            "pom.xml": pom("six", junit, release="1.6", level="source"),
            "src/main/java/demo/Calc.java": CALC,
            "src/test/java/demo/CalcTest.java": JUNIT4_TEST,
        },
        "jaxb": {
            "pom.xml": pom("jaxb", junit, release="1.8", level="source"),
            "src/main/java/demo/Hex.java": HEX,
            "src/test/java/demo/HexTest.java": HEX_TEST,
        },
        "java-11-library": {
            "pom.xml": pom(
                "memo",
                [("com.github.ben-manes.caffeine", "caffeine", "3.1.8", "compile"), *junit],
                release="1.8",
                level="source",
            ),
            "src/main/java/demo/Memo.java": CACHE,
            "src/test/java/demo/MemoTest.java": CACHE_TEST,
        },
    }
    return write(root, files[kind])
