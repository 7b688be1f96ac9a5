"""The Maven build tool on tiny real projects, plus JDK choice and tool jar downloads.

Tests marked ``maven`` run real Maven builds (the first run fills ~/.m2 from Maven Central)
and the JUnit console launcher; each project is built once per module.
"""

from __future__ import annotations

import hashlib
import http.server
import os
import shutil
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from runners import (
    BuildChoice,
    BuildResult,
    EnvSpec,
    FolderTree,
    LocalSandbox,
    Outcome,
    TestResult,
    detect_env,
    get_build_tool,
)
from runners.java.jdk import Jdk, NoSuitableJdk, choose_jdk, find_jdks
from runners.java.maven import (
    CROSS_CLASSES_DIR,
    MavenTool,
    NotBuilt,
    build_command,
    classpath_file,
    maven_choice,
)
from runners.java.pit import FocalMethod
from runners.java.tools import MAVEN_VERSION, ToolArtifact, ToolDownloadFailed, UnknownTool, tool_jar
from runners.results import cause_line
from runners.sandbox.base import ExecResult

from . import maven_projects as projects

_HAS_MAVEN = shutil.which("mvn") is not None and bool(find_jdks())
needs_maven = pytest.mark.skipif(not _HAS_MAVEN, reason="needs Maven (mvn) and an installed JDK")
TOOL = MavenTool()


@dataclass(frozen=True)
class Built:
    """A project built once for a module's tests."""

    root: Path
    box: LocalSandbox
    spec: EnvSpec
    result: BuildResult


def _build(root: Path) -> Built:
    box = LocalSandbox(root)
    spec = detect_env(FolderTree(root), "java")
    return Built(root, box, spec, TOOL.build(box, spec, timeout=900))


def _built_ok(built: Built) -> Built:
    assert built.result.ok, built.result.message
    return built


@pytest.fixture(scope="module")
def jupiter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    built = _build(projects.jupiter_project(tmp_path_factory.mktemp("jupiter")))
    yield _built_ok(built)
    built.box.close()


@pytest.fixture(scope="module")
def junit4(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return _built_ok(_build(projects.junit4_project(tmp_path_factory.mktemp("junit4"))))


@pytest.fixture(scope="module")
def multi(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return _built_ok(_build(projects.multi_module_project(tmp_path_factory.mktemp("multi"))))


def _outcomes(run_results: Sequence[TestResult]) -> dict[str, Outcome]:
    return {result.test: result.outcome for result in run_results}


def _beside(built: Built, name: str, class_name: str, source: str) -> str:
    """``source`` written as ``name/demo/<class_name>.java`` and compiled against the revision into
    ``.coevo/cross-<name>``; returns that folder, for ``extra_classpath``."""
    path, out = f"{name}/demo/{class_name}.java", f".coevo/cross-{name}"
    built.box.write_file(path, source.encode())
    compiled = TOOL.compile_test_file(built.box, built.spec, path, output_dir=out)
    assert compiled.ok, compiled.message
    return out


# --- Maven builds and test runs -------------------------------------------------------------------


@pytest.mark.maven
@needs_maven
def test_registered_for_maven_and_the_wrapper() -> None:
    assert isinstance(get_build_tool("maven"), MavenTool)
    assert isinstance(get_build_tool("maven-wrapper"), MavenTool)


@pytest.mark.maven
@needs_maven
def test_build_stores_each_modules_test_classpath(jupiter: Built) -> None:
    classpath = (jupiter.root / classpath_file("")).read_text().splitlines()
    assert classpath[:2] == [str(jupiter.root / "target/test-classes"), str(jupiter.root / "target/classes")]
    assert any(entry.endswith(f"junit-jupiter-api-{projects.JUNIT_JUPITER}.jar") for entry in classpath)
    assert (jupiter.root / ".coevo/.gitignore").read_text() == "*\n"
    assert (jupiter.root / "target/test-classes/demo/CalcTest.class").is_file()


@pytest.mark.maven
@needs_maven
def test_jupiter_outcomes_and_absent_tests(jupiter: Built) -> None:
    tests = [
        "demo.CalcTest#adds",
        "demo.CalcTest#addsWrongly",
        "demo.CalcTest#dividesByZero",
        "demo.CalcTest#addsZero",
        "demo.CalcTest#noSuchMethod",
        "demo.NoSuchTest#adds",
    ]
    run = TOOL.run_tests(jupiter.box, jupiter.spec, tests, timeout=120)
    assert [result.test for result in run.results] == tests
    assert _outcomes(run.results) == {
        "demo.CalcTest#adds": Outcome.PASS,
        "demo.CalcTest#addsWrongly": Outcome.FAIL,
        "demo.CalcTest#dividesByZero": Outcome.ERROR,
        "demo.CalcTest#addsZero": Outcome.PASS,  # parameterized: three invocations, one result
        "demo.CalcTest#noSuchMethod": Outcome.ABSENT,
        "demo.NoSuchTest#adds": Outcome.ABSENT,
    }
    messages = {result.test: result.message for result in run.results}
    assert "two and three" in messages["demo.CalcTest#addsWrongly"]
    assert "/ by zero" in messages["demo.CalcTest#dividesByZero"]
    assert not list((jupiter.root / ".coevo/runs").iterdir()), "run folders are removed"


@pytest.mark.maven
@needs_maven
def test_junit4_runs_through_the_vintage_engine(junit4: Built) -> None:
    assert junit4.spec.language_version == "8"
    tests = ["demo.CalcTest#adds", "demo.CalcTest#addsWrongly", "demo.CalcTest#dividesByZero"]
    run = TOOL.run_tests(junit4.box, junit4.spec, [*tests, "demo.AddZeroTest#addsZero"], timeout=120)
    assert _outcomes(run.results) == {
        "demo.CalcTest#adds": Outcome.PASS,
        "demo.CalcTest#addsWrongly": Outcome.FAIL,
        "demo.CalcTest#dividesByZero": Outcome.ERROR,
        "demo.AddZeroTest#addsZero": Outcome.PASS,  # Parameterized runner: addsZero[0], addsZero[1]
    }


@pytest.mark.maven
@needs_maven
def test_junit6_projects_get_the_junit6_launcher(tmp_path: Path) -> None:
    built = _built_ok(_build(projects.junit6_project(tmp_path)))
    tests = ["demo.CalcTest#adds", "demo.CalcTest#addsWrongly", "demo.CalcTest#addsZero"]
    run = TOOL.run_tests(built.box, built.spec, tests, timeout=120, coverage=True)
    assert _outcomes(run.results) == {
        "demo.CalcTest#adds": Outcome.PASS,
        "demo.CalcTest#addsWrongly": Outcome.FAIL,
        "demo.CalcTest#addsZero": Outcome.PASS,
    }
    # The per-test coverage listener, compiled against the 5.x platform, runs on JUnit 6's.
    assert run.coverage["demo.CalcTest#adds"].lines == {
        "src/main/java/demo/Calc.java": projects.CALC_ADD_LINES
    }
    from runners.java.maven import _console_tool

    assert _console_tool((tmp_path / classpath_file("")).read_text().splitlines()) == "junit-console-6"


@pytest.mark.maven
@needs_maven
def test_multi_module_tests_run_in_their_module_against_sibling_classes(multi: Built) -> None:
    assert multi.spec.modules == ("", "core", "app")
    app_classpath = (multi.root / classpath_file("app")).read_text().splitlines()
    assert str(multi.root / "core/target/classes") in app_classpath
    tests = ["demo.CalcTest#adds", "demo.app.AppTest#usesCore"]
    run = TOOL.run_tests(multi.box, multi.spec, tests, timeout=120, coverage=True)
    assert _outcomes(run.results) == {
        "demo.CalcTest#adds": Outcome.PASS,
        "demo.app.AppTest#usesCore": Outcome.PASS,
    }
    calc = "core/src/main/java/demo/Calc.java"
    assert run.coverage["demo.app.AppTest#usesCore"].lines == {calc: projects.CALC_ADD_LINES}
    assert run.coverage["demo.CalcTest#adds"].lines == {calc: projects.CALC_ADD_LINES}


@pytest.mark.maven
@needs_maven
def test_a_module_that_does_not_build_leaves_the_others_runnable(tmp_path: Path) -> None:
    root = projects.multi_module_project(tmp_path / "multi")
    app_test = root / "app/src/test/java/demo/app/AppTest.java"
    app_test.write_text(app_test.read_text().replace("Calc.add(2, 2)", "Calc.nope(2, 2)"))
    built = _build(root)
    assert built.result.ok
    assert cause_line(built.result.message).startswith(
        "some modules did not build: app/src/test/java/demo/app/AppTest.java:"
    )
    assert TOOL.built_modules(built.box, built.spec) == ["", "core"]  # the parent, and core
    run = TOOL.run_tests(built.box, built.spec, ["demo.CalcTest#adds"], timeout=120, module="core")
    assert _outcomes(run.results) == {"demo.CalcTest#adds": Outcome.PASS}


@pytest.mark.maven
@needs_maven
def test_coverage_is_per_test_and_exact(jupiter: Built) -> None:
    tests = ["demo.CalcTest#adds", "demo.CalcTest#addsWrongly", "demo.CalcTest#noSuchMethod"]
    run = TOOL.run_tests(jupiter.box, jupiter.spec, tests, timeout=120, coverage=True)
    assert _outcomes(run.results)["demo.CalcTest#addsWrongly"] == Outcome.FAIL
    calc = "src/main/java/demo/Calc.java"
    assert run.coverage["demo.CalcTest#adds"].lines == {calc: projects.CALC_ADD_LINES}
    assert run.coverage["demo.CalcTest#addsWrongly"].lines == {calc: projects.CALC_ADD_LINES}
    assert run.coverage["demo.CalcTest#noSuchMethod"].lines == {}


ONE_JVM_TEST = """package demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

@TestMethodOrder(MethodOrderer.MethodName.class)
class OneJvmTest {
    static int added;

    @Test
    void a_adds() {
        assertEquals(5, Calc.add(2, 3));
        added++;
    }

    @Test
    void b_seesTheFirstTestsState() {
        assertEquals(1, added);
    }

    @Test
    void c_endsTheJvm() throws Exception {
        EXIT;
    }

    @Test
    void d_addsAfterTheEnd() {
        assertEquals(7, Calc.add(3, 4));
    }

    @Test
    void e_hangs() throws Exception {
        HANG;
    }

    @Test
    void f_dividesLast() {
        assertEquals(4, Calc.div(8, 2));
    }
}
"""
"""Tests that pass only in one JVM (b sees what a did), one that ends the JVM and one that hangs
when told to."""


@pytest.mark.maven
@needs_maven
@pytest.mark.parametrize("hostile", [False, True], ids=["clean", "a-test-ends-the-jvm-and-one-hangs"])
def test_per_test_coverage_comes_from_one_jvm_and_a_test_ending_it_or_hanging_costs_the_others_nothing(
    jupiter: Built, hostile: bool
) -> None:
    tests, out = _one_jvm_tests(jupiter, hostile, "one-jvm-hostile" if hostile else "one-jvm-clean")
    run = TOOL.run_tests(jupiter.box, jupiter.spec, tests, timeout=15, coverage=True, extra_classpath=[out])
    calc, div = "src/main/java/demo/Calc.java", frozenset({10})
    a, b, c, d, e, f = tests
    outcomes = _outcomes(run.results)
    # One JVM: b passes only there; yet each test has only its own lines, as when run alone.
    assert (outcomes[a], outcomes[b], outcomes[d], outcomes[f]) == (Outcome.PASS,) * 4
    assert run.coverage[a].lines == run.coverage[d].lines == {calc: projects.CALC_ADD_LINES}
    assert run.coverage[b].lines == {}
    assert run.coverage[f].lines == {calc: div}
    if not hostile:
        assert outcomes[c] == outcomes[e] == Outcome.PASS
        assert run.coverage[c].lines == run.coverage[e].lines == {calc: div}
    else:
        # c ended the JVM and e hung it: each ran alone (c reports nothing, e times out again),
        # and the rest of the batch ran again together, b after a as before.
        assert (outcomes[c], outcomes[e]) == (Outcome.ABSENT, Outcome.TIMEOUT)
        assert run.coverage[c].lines == run.coverage[e].lines == {}
        assert _runs(jupiter, "one-jvm-hostile") == ["c", "c", "e", "e"]  # in its batch, then alone


@pytest.mark.maven
@needs_maven
def test_a_test_ending_the_jvm_or_hanging_costs_the_others_nothing_without_coverage(jupiter: Built) -> None:
    """Reruns and the cells without coverage (OO, NO) run a batch too: a new test that hangs on
    the old code (the fix of an endless loop) must not make its file's other tests time out."""
    tests, out = _one_jvm_tests(jupiter, hostile=True, folder="one-jvm-hostile-unmeasured")
    run = TOOL.run_tests(jupiter.box, jupiter.spec, tests, timeout=15, extra_classpath=[out])
    a, b, c, d, e, f = tests
    outcomes = _outcomes(run.results)
    assert (outcomes[a], outcomes[b], outcomes[d], outcomes[f]) == (Outcome.PASS,) * 4
    assert (outcomes[c], outcomes[e]) == (Outcome.ABSENT, Outcome.TIMEOUT)
    assert run.coverage == {}
    # The listener named the test that cut each run short: it ran alone once, and no more.
    assert _runs(jupiter, "one-jvm-hostile-unmeasured") == ["c", "c", "e", "e"]


def _one_jvm_tests(jupiter: Built, hostile: bool, folder: str) -> tuple[list[str], str]:
    """ONE_JVM_TEST's methods, clean or hostile, compiled into ``.coevo/cross-<folder>``. The
    hostile ones note each of their runs in ``<folder>.runs`` in the worktree (:func:`_runs`)."""
    note = f'java.nio.file.Files.write(java.nio.file.Paths.get("{folder}.runs"), "%s\\n".getBytes(), '
    note += "java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);"
    source = ONE_JVM_TEST.replace("EXIT", note % "c" + "System.exit(0)" if hostile else "Calc.div(4, 2)")
    source = source.replace("HANG", note % "e" + "Thread.sleep(600_000)" if hostile else "Calc.div(6, 3)")
    out = _beside(jupiter, folder, "OneJvmTest", source)
    names = (
        "a_adds",
        "b_seesTheFirstTestsState",
        "c_endsTheJvm",
        "d_addsAfterTheEnd",
        "e_hangs",
        "f_dividesLast",
    )
    return [f"demo.OneJvmTest#{m}" for m in names], out


def _runs(jupiter: Built, folder: str) -> list[str]:
    """Which hostile tests ran, once a line per run, in order."""
    return (jupiter.box.read_file(f"{folder}.runs") or b"").decode().split()


PARALLEL_TEST = """package demo;

import org.junit.jupiter.api.Test;

class ParallelTest {
    @Test
    void adds() throws Exception {
        Calc.add(2, 3);
        Thread.sleep(300);
    }

    @Test
    void divides() throws Exception {
        Calc.div(4, 2);
        Thread.sleep(300);
    }
}
"""


@pytest.mark.maven
@needs_maven
def test_per_test_coverage_holds_where_the_project_asks_for_parallel_tests(jupiter: Built) -> None:
    """A project's junit-platform.properties may run tests at once; their coverage would mix."""
    out = _beside(jupiter, "parallel", "ParallelTest", PARALLEL_TEST)
    parallel = (
        "junit.jupiter.execution.parallel.enabled=true",
        "junit.jupiter.execution.parallel.mode.default=concurrent",
    )
    jupiter.box.write_file(f"{out}/junit-platform.properties", "\n".join(parallel).encode() + b"\n")
    tests = ["demo.ParallelTest#adds", "demo.ParallelTest#divides"]
    run = TOOL.run_tests(jupiter.box, jupiter.spec, tests, timeout=120, coverage=True, extra_classpath=[out])
    calc = "src/main/java/demo/Calc.java"
    assert _outcomes(run.results) == dict.fromkeys(tests, Outcome.PASS)
    assert run.coverage[tests[0]].lines == {calc: projects.CALC_ADD_LINES}
    assert run.coverage[tests[1]].lines == {calc: frozenset({10})}


@pytest.mark.maven
@needs_maven
def test_a_hanging_test_times_out_and_leaves_no_java_behind(jupiter: Built) -> None:
    started = time.monotonic()
    run = TOOL.run_tests(jupiter.box, jupiter.spec, ["demo.Slowness#sleeps"], timeout=5)
    assert time.monotonic() - started < 60
    assert _outcomes(run.results) == {"demo.Slowness#sleeps": Outcome.TIMEOUT}
    assert run.log is not None and run.log.timed_out
    time.sleep(0.5)
    assert not _processes_mentioning(str(jupiter.root)), "a launcher survived the timeout"


@pytest.mark.maven
@needs_maven
def test_old_test_file_calling_a_removed_method_is_a_compile_error(jupiter: Built) -> None:
    jupiter.box.write_file("old-tests/demo/CalcTest.java", projects.OLD_TEST_CALLING_REMOVED_METHOD.encode())
    result = TOOL.compile_test_file(
        jupiter.box, jupiter.spec, "old-tests/demo/CalcTest.java", output_dir=".coevo/cross-removed"
    )
    assert not result.ok
    cause = cause_line(result.message)
    assert cause.startswith("old-tests/demo/CalcTest.java:10: cannot find symbol"), result.message
    assert "plus(int,int)" in cause


@pytest.mark.maven
@needs_maven
def test_old_test_file_compiled_against_new_code_runs_first_on_the_classpath(jupiter: Built) -> None:
    jupiter.box.write_file(
        "old-tests2/demo/CalcTest.java", projects.OLD_TEST_EXPECTING_OTHER_BEHAVIOUR.encode()
    )
    result = TOOL.compile_test_file(jupiter.box, jupiter.spec, "old-tests2/demo/CalcTest.java")
    assert result.ok, result.message
    assert (jupiter.root / CROSS_CLASSES_DIR / "demo/CalcTest.class").is_file()
    tests = ["demo.CalcTest#adds", "demo.CalcTest#addsWrongly"]
    crossed = TOOL.run_tests(
        jupiter.box, jupiter.spec, tests, timeout=120, extra_classpath=[CROSS_CLASSES_DIR]
    )
    # The old file's CalcTest replaces the revision's: its adds() expects 23, and it has no addsWrongly().
    assert _outcomes(crossed.results) == {
        "demo.CalcTest#adds": Outcome.FAIL,
        "demo.CalcTest#addsWrongly": Outcome.ABSENT,
    }
    own = TOOL.run_tests(jupiter.box, jupiter.spec, ["demo.CalcTest#adds"], timeout=120)
    assert _outcomes(own.results) == {"demo.CalcTest#adds": Outcome.PASS}


STATEFUL_TEST = """package demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class CalcTest {
    @Test
    void adds() {
        assertEquals(5, Calc.add(2, 3));
    }

    @Test
    void passesOnce() throws Exception {
        Calc.add(2, 3);
        Path marker = Path.of("MARKER");
        boolean first = !Files.exists(marker);
        if (first) {
            Files.writeString(marker, "ran");
        }
        assertTrue(first);
    }
}
"""
"""A test that passes once (PIT's unmutated coverage run) and fails after: every mutant "killed"."""


@pytest.mark.maven
@needs_maven
def test_pit_names_each_mutants_killers_and_the_control_run_drops_a_test_that_passes_once(
    jupiter: Built, tmp_path: Path
) -> None:
    source = STATEFUL_TEST.replace("MARKER", str(tmp_path / "marker"))
    jupiter.box.write_file("strict-tests/demo/CalcTest.java", source.encode())
    compiled = TOOL.compile_test_file(
        jupiter.box, jupiter.spec, "strict-tests/demo/CalcTest.java", output_dir=".coevo/cross-strict"
    )
    assert compiled.ok, compiled.message
    add = FocalMethod("src/main/java/demo/Calc.java", "demo.Calc", "add", 4, 7, ("<init>", "add", "div"))
    result = TOOL.mutation(
        jupiter.box, jupiter.spec, "demo.CalcTest", ["adds", "passesOnce"], [add], timeout=600,
        extra_classpath=[".coevo/cross-strict"],
    )  # fmt: skip
    # Both mutants of add were detected by both tests; passesOnce failed the control run after them.
    assert [(m.line, m.status, m.killing_tests) for m in result.mutants] == [
        (5, "KILLED", ("demo.CalcTest#adds",)),
        (6, "KILLED", ("demo.CalcTest#adds",)),
    ], result.message
    assert result.unstable == ("demo.CalcTest#passesOnce",) and result.complete
    assert result.message.startswith("passesOnce did not pass again on the unmutated code")


@pytest.mark.maven
@needs_maven
def test_compiling_a_missing_file_says_so(jupiter: Built) -> None:
    result = TOOL.compile_test_file(jupiter.box, jupiter.spec, "nowhere/FooTest.java")
    assert not result.ok and result.message == "nowhere/FooTest.java: no such file in the worktree"


@pytest.mark.maven
@needs_maven
def test_code_that_does_not_compile_fails_the_build_with_file_and_line(tmp_path: Path) -> None:
    built = _build(projects.broken_project(tmp_path))
    assert not built.result.ok
    cause = cause_line(built.result.message)
    assert cause == "src/main/java/demo/Calc.java:5: cannot find symbol (method plus(int,int))", cause
    assert "    at org.apache.maven" not in built.result.message  # whole, without stack frames
    with pytest.raises(NotBuilt, match="build the worktree first"):
        TOOL.run_tests(built.box, built.spec, ["demo.CalcTest#adds"], timeout=60, module="")


@pytest.mark.maven
@needs_maven
def test_an_unknown_plugin_fails_the_build_with_a_clear_message(tmp_path: Path) -> None:
    built = _build(projects.unknown_plugin_project(tmp_path))
    assert not built.result.ok
    message = cause_line(built.result.message)
    assert "org.coevo.nowhere:no-such-maven-plugin:9.9.9" in message and "could not be resolved" in message, (
        message
    )
    assert "[Help" not in message


# --- plans and parsers (no Maven) -----------------------------------------------------------------


def test_build_command_uses_a_recent_wrapper_and_the_shared_repository() -> None:
    spec = EnvSpec(language="java", language_version="17", build_tool="maven-wrapper")
    recent = b"distributionUrl=https://repo.maven.apache.org/maven2/org/apache/maven/apache-maven/3.9.6/x.zip"
    command = build_command(spec, "/cache/m2", ["-DjdkVersion=1.8"], wrapper_properties=recent)
    assert command[:2] == ["sh", "./mvnw"]
    assert "-Dmaven.repo.local=/cache/m2" in command and "-DskipTests" in command
    assert command.index("-DjdkVersion=1.8") < command.index("test-compile")
    goals = [arg for arg in command if arg == "test-compile" or arg.endswith(":build-classpath")]
    assert goals == ["test-compile", "org.apache.maven.plugins:maven-dependency-plugin:3.3.0:build-classpath"]
    old = recent.replace(b"3.9.6", b"3.1.1")
    assert build_command(spec, "/m2", wrapper_properties=old)[0] == "mvn"  # it fetches Central over http
    assert build_command(spec, "/m2")[0] == "mvn"  # no wrapper properties: mvnw cannot work
    plain = EnvSpec(language="java", language_version="17", build_tool="maven")
    assert build_command(plain, "/m2", wrapper_properties=recent)[0] == "mvn"
    assert build_command(plain, "/m2", maven="/tools/maven/bin/mvn")[0] == "/tools/maven/bin/mvn"
    # What the build record says: the wrapper's Maven wins when it is recent, else coevo's.
    wrapped = BuildChoice("maven", "3.9.6 (wrapper)", "the project's wrapper pins it")
    assert maven_choice(spec, recent) == wrapped
    assert maven_choice(spec, old).value == maven_choice(plain, None).value == MAVEN_VERSION
    assert "wrapper pins Maven 3.1.1, older than 3.6.3" in maven_choice(spec, old).why


def test_the_launcher_replaces_the_projects_junit_but_not_its_classes() -> None:
    from runners.java.maven import _console_tool, _launch_classpath

    m2 = "/m2/repository"
    classpath = [
        "/w/junit/junit/target/test-classes",  # the worktree of junit itself: kept, whatever its path
        "/w/junit/junit/target/classes",
        f"{m2}/org/junit/jupiter/junit-jupiter-api/5.10.3/junit-jupiter-api-5.10.3.jar",
        f"{m2}/org/junit/platform/junit-platform-engine/1.10.3/junit-platform-engine-1.10.3.jar",
        f"{m2}/junit/junit/4.12/junit-4.12.jar",
        f"{m2}/org/hamcrest/hamcrest/2.2/hamcrest-2.2.jar",
        f"{m2}/org/opentest4j/opentest4j/1.3.0/opentest4j-1.3.0.jar",
        f"{m2}/org/junit-pioneer/junit-pioneer/2.2.0/junit-pioneer-2.2.0.jar",
    ]
    assert _launch_classpath(classpath, "/w/junit/junit", "/tools/console.jar") == [
        "/w/junit/junit/target/test-classes",
        "/w/junit/junit/target/classes",
        f"{m2}/org/hamcrest/hamcrest/2.2/hamcrest-2.2.jar",
        f"{m2}/org/junit-pioneer/junit-pioneer/2.2.0/junit-pioneer-2.2.0.jar",
        "/tools/console.jar",
    ]
    assert _console_tool(classpath) == "junit-console"
    junit6 = f"{m2}/org/junit/jupiter/junit-jupiter-api/6.0.3/junit-jupiter-api-6.0.3.jar"
    assert _console_tool([*classpath, junit6]) == "junit-console-6"


def test_the_coverage_readers_lines_are_read_per_test_parameters_merged() -> None:
    from runners.java.maven import _lines_by_test

    text = (
        "T\tdemo.CalcTest#adds\ndemo/Calc.java\t5,6\n"
        "T\tdemo.CalcTest#addsZero[1]\ndemo/Calc.java\t5\nCalc.java\t3\n"  # the default package
        "T\tdemo.CalcTest#addsZero[2]\ndemo/Calc.java\t6\n"
        "T\tdemo.CalcTest#runsNothing\n"
    )
    assert _lines_by_test(text) == {
        "demo.CalcTest#adds": {"demo/Calc.java": frozenset({5, 6})},
        "demo.CalcTest#addsZero": {"demo/Calc.java": frozenset({5, 6}), "Calc.java": frozenset({3})},
        "demo.CalcTest#runsNothing": {},
    }


def test_nested_class_ids_are_tried_as_binary_names() -> None:
    from runners.java.maven import _binary_names

    assert list(_binary_names("a.b.Outer.Inner")) == ["a.b.Outer.Inner", "a.b.Outer$Inner"]
    assert list(_binary_names("a.b.CalcTest")) == ["a.b.CalcTest"]


def test_maven_errors_keep_their_output_without_stack_frames() -> None:
    """Maven without -e, as a wrapper may run it; real -e outputs are in ``test_results.py``."""
    from runners.java.maven import _maven_error

    compile_output = (
        "\x1b[0m[ERROR] COMPILATION ERROR : \n"
        "[ERROR] /work/tree/src/main/java/a/B.java:[12,9] cannot find symbol\n"
        "  symbol:   method nope()\n"
        "  location: class a.B\n"
        "[ERROR] Failed to execute goal org.apache.maven.plugins:maven-compiler-plugin:3.13.0:compile "
        "(default-compile) on project b: Compilation failure\n"
    )
    message = _maven_error(ExecResult(1, compile_output, "", 1.0), "/work/tree")
    assert message.splitlines()[1] == "[ERROR] src/main/java/a/B.java:[12,9] cannot find symbol"
    assert cause_line(message) == "src/main/java/a/B.java:12: cannot find symbol (method nope())"
    resolution = (
        "[ERROR] Failed to execute goal on project b: Could not resolve dependencies for project a:b:jar:1: "
        "Could not find artifact x:y:jar:1 in central (https://repo.maven.apache.org/maven2) -> [Help 1]\n"
        "[ERROR] \n[ERROR] To see the full stack trace of the errors, re-run Maven with the -e switch.\n"
        "[ERROR] Re-run Maven using the -X switch to enable full debug logging.\n"
    )
    cause = cause_line(_maven_error(ExecResult(1, resolution, "", 1.0), "/work/tree"))
    assert cause.startswith("Failed to execute goal on project b: Could not resolve dependencies")
    assert cause.endswith("(https://repo.maven.apache.org/maven2)")
    assert _maven_error(ExecResult(1, "", "", 1.0), "/w") == "exit code 1"


def test_choose_jdk_takes_the_oldest_that_still_compiles_the_release() -> None:
    jdk8, jdk17, jdk25 = Jdk(Path("/j/8"), 8), Jdk(Path("/j/17"), 17), Jdk(Path("/j/25"), 25)
    installed = [jdk25, jdk17]
    assert choose_jdk("17", installed) == jdk17
    assert choose_jdk("1.8", installed) == jdk17
    assert choose_jdk("7", installed) == jdk17  # javac 17 still has --release 7; 25 does not
    assert choose_jdk("21", installed) == jdk25
    assert choose_jdk("1.5", [jdk8, *installed]) == jdk8
    with pytest.raises(NoSuitableJdk, match="no installed JDK compiles Java 6"):
        choose_jdk("6", installed)
    with pytest.raises(NoSuitableJdk, match="no installed JDK compiles Java 26"):
        choose_jdk("26", installed)
    with pytest.raises(NoSuitableJdk, match="not a Java release"):
        choose_jdk("seventeen", installed)


def test_find_jdks_reads_release_files_once_per_home(tmp_path: Path) -> None:
    for name, version in (("jdk-21", '"21.0.2"'), ("jdk8", '"1.8.0_402"'), ("jre-11", '"11.0.1"')):
        home = tmp_path / name
        (home / "bin").mkdir(parents=True)
        (home / "release").write_text(f'IMPLEMENTOR="x"\nJAVA_VERSION={version}\n')
        if not name.startswith("jre"):
            (home / "bin" / "javac").write_text("")
    (tmp_path / "alias").symlink_to(tmp_path / "jdk-21")
    found = find_jdks(
        [tmp_path / "jdk-21", tmp_path / "alias", tmp_path / "jdk8", tmp_path / "jre-11", tmp_path]
    )
    assert [(jdk.home.name, jdk.feature) for jdk in found] == [("jdk8", 8), ("jdk-21", 21)]


# --- tool jars ------------------------------------------------------------------------------------


@pytest.fixture
def maven_repo(tmp_path: Path) -> Iterator[tuple[str, bytes]]:
    """A loopback HTTP server holding one artifact and its checksum: (base URL, jar bytes)."""
    jar = b"PK\x03\x04 not really a jar"
    folder = tmp_path / "repo/org/junit/platform/junit-platform-console-standalone/1.14.4"
    folder.mkdir(parents=True)
    name = "junit-platform-console-standalone-1.14.4.jar"
    (folder / name).write_bytes(jar)
    (folder / f"{name}.sha1").write_text(hashlib.sha1(jar).hexdigest() + "  " + name + "\n")
    handler = _quiet_handler(tmp_path / "repo")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", jar
    server.shutdown()
    server.server_close()


def test_tool_jar_downloads_once_and_checks_the_sha1(tmp_path: Path, maven_repo: tuple[str, bytes]) -> None:
    url, jar = maven_repo
    cache = tmp_path / "cache"
    path = tool_jar("junit-console", cache=cache, repository=url)
    assert path.read_bytes() == jar and path.parent == cache
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    assert [p.name for p in cache.iterdir()] == [path.name], "no temporary file is left"
    assert tool_jar("junit-console", cache=cache, repository="http://127.0.0.1:9") == path  # cached


def test_tool_jar_refuses_a_corrupt_download(tmp_path: Path, maven_repo: tuple[str, bytes]) -> None:
    url, _ = maven_repo
    jar = next((tmp_path / "repo").rglob("*.jar"))
    jar.write_bytes(b"tampered")
    cache = tmp_path / "cache"
    with pytest.raises(ToolDownloadFailed, match="does not match its published SHA-1"):
        tool_jar("junit-console", cache=cache, repository=url)
    assert list(cache.iterdir()) == []
    with pytest.raises(ToolDownloadFailed, match="HTTP 404"):
        tool_jar("jacoco-cli", cache=cache, repository=url)
    with pytest.raises(UnknownTool, match="no tool 'pit'"):
        tool_jar("pit", cache=cache)


def test_tool_artifact_paths() -> None:
    agent = ToolArtifact("org.jacoco", "org.jacoco.agent", "0.8.14", "runtime")
    assert agent.repository_path == "org/jacoco/org.jacoco.agent/0.8.14/org.jacoco.agent-0.8.14-runtime.jar"


def _quiet_handler(root: Path) -> type[http.server.SimpleHTTPRequestHandler]:
    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(root), **kwargs)  # type: ignore[arg-type]

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(int(entry.name))
    return found


@pytest.mark.maven
def test_a_missing_dependency_is_a_failed_build_naming_it(tmp_path: Path) -> None:
    root = projects.write(
        tmp_path / "missing",
        {
            "pom.xml": projects.pom(
                "calc", [*projects.JUPITER_DEPS, ("demo", "does-not-exist", "1.0", "compile")]
            ),
            "src/main/java/demo/Calc.java": projects.CALC,
        },
    )
    built = _build(root)
    assert not built.result.ok
    assert "demo:does-not-exist:jar:1.0" in cause_line(built.result.message)


def test_an_engine_that_fails_to_discover_is_a_launcher_failure_with_its_cause() -> None:
    """The console launcher's own report when the vintage engine refuses JUnit 4.10 (saved from a
    real run): no test is "absent", the harness failed, and says why."""
    from runners.java.maven import _discovery_failure
    from runners.sandbox.base import ExecResult

    stderr = (
        "Dec 01, 2026 3:41:19 AM org.junit.platform.launcher.listeners.discovery."
        "LoggingLauncherDiscoveryListener engineDiscoveryFinished\n"
        "SEVERE: TestEngine with ID 'junit-vintage' failed to discover tests\n"
        "org.junit.platform.commons.JUnitException: Unsupported version of junit:junit: 4.10. "
        "Please upgrade to version 4.12 or later.\n"
        "\tat org.junit.vintage.engine.JUnit4VersionCheck.checkSupported(JUnit4VersionCheck.java:49)\n"
    )
    stdout = (
        "Failures (1):\n  junit-vintage\n    => org.junit.platform.commons.JUnitException: "
        "TestEngine with ID 'junit-vintage' failed to discover tests\n"
    )
    assert _discovery_failure(ExecResult(1, stdout, stderr, 0.5)) == (
        "the JUnit junit-vintage engine failed to discover tests: org.junit.platform.commons.JUnitException: "
        "Unsupported version of junit:junit: 4.10. Please upgrade to version 4.12 or later."
    )
    assert _discovery_failure(ExecResult(0, "[ 2 tests successful ]\n", "", 0.5)) == ""


HALF = """package demo;

public final class Half {
    public static int half(int value) {
        if (value < 0) {
            throw new IllegalArgumentException("negative");
        }
        return value / 2;
    }

    private Half() {}
}
"""

HALF_TESTS = """package demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class HalfTest {
    @Test
    void shallow() {
        Half.half(4);
    }

    @Test
    void checks() {
        assertEquals(2, Half.half(4));
    }

    @Test
    void throwsOnNegative() {
        assertThrows(IllegalArgumentException.class, () -> Half.half(-1));
    }
}
"""


@pytest.mark.maven
@needs_maven
def test_only_a_java_tests_own_check_is_evidence_of_a_kill(tmp_path: Path) -> None:
    """PIT counts a mutant that makes the focal code throw as killed by every test calling it;
    coevo runs a test again with the mutant's class (PIT's export) over the original, and only a
    failed assertion not thrown by the production code is evidence (StrictSuccess by any
    exception, Java)."""
    root = projects.write(
        tmp_path / "half",
        {
            "pom.xml": projects.pom("half", projects.JUPITER_DEPS),
            "src/main/java/demo/Half.java": HALF,
            "src/test/java/demo/HalfTest.java": HALF_TESTS,
        },
    )
    built = _built_ok(_build(root))
    half = FocalMethod("src/main/java/demo/Half.java", "demo.Half", "half", 4, 9, ("<init>", "half"))
    compiled = (root / "target/classes/demo/Half.class").read_bytes()
    result = TOOL.mutation(
        built.box, built.spec, "demo.HalfTest", ["shallow", "checks", "throwsOnNegative"], [half], timeout=600
    )
    assert result.complete, result.message
    killed = {t for m in result.mutants for t in m.killing_tests}
    evidence = {t for m in result.mutants for t in m.evidence}
    assert "demo.HalfTest#shallow" in killed, result.mutants  # the negated check throws in it
    assert evidence == {"demo.HalfTest#checks", "demo.HalfTest#throwsOnNegative"}, result.mutants
    assert (root / "target/classes/demo/Half.class").read_bytes() == compiled  # put back
    built.box.close()


LONER_TEST = """package demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Arrays;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

@TestMethodOrder(MethodOrderer.MethodName.class)
class LonerTest {
    static boolean checked;

    @Test
    void a_checks() {
        checked = true;
        assertEquals(5, Calc.add(2, 3));
    }

    @Test
    void b_failsWhereItRunsAlone() {
        Calc.add(1, 1);
        String stack = Arrays.deepToString(Thread.getAllStackTraces().values().toArray());
        boolean mutants = stack.contains("MutationTestMinion");
        if (mutants || (!stack.contains("org.pitest") && !checked)) {
            throw new AssertionError("alone, or under PIT's mutants");
        }
    }
}
"""
"""A cheat on per-test coverage in one JVM: b asserts nothing about the code, and fails under PIT's
mutants and wherever the launcher runs it without a (alone in a JVM): were the confirmation runs
of a kill to run it alone while the run on the new code ran both together, b would be evidence
of every kill."""


@pytest.mark.maven
@needs_maven
def test_a_test_failing_where_it_runs_alone_is_no_evidence_the_confirmation_runs_are_the_new_codes_twins(
    jupiter: Built,
) -> None:
    out = _beside(jupiter, "loner", "LonerTest", LONER_TEST)
    methods = ["a_checks", "b_failsWhereItRunsAlone"]
    new_code = TOOL.run_tests(
        jupiter.box, jupiter.spec, [f"demo.LonerTest#{m}" for m in methods], timeout=120, coverage=True,
        extra_classpath=[out],
    )  # fmt: skip
    assert {r.outcome for r in new_code.results} == {Outcome.PASS}
    add = FocalMethod("src/main/java/demo/Calc.java", "demo.Calc", "add", 4, 7, ("<init>", "add", "div"))
    result = TOOL.mutation(
        jupiter.box, jupiter.spec, "demo.LonerTest", methods, [add], timeout=600, extra_classpath=[out]
    )
    assert result.complete, result.message
    killed = {t for m in result.mutants for t in m.killing_tests}
    evidence = {t for m in result.mutants for t in m.evidence}
    assert "demo.LonerTest#b_failsWhereItRunsAlone" in killed, result.mutants  # PIT is fooled
    assert evidence == {"demo.LonerTest#a_checks"}, result.mutants


GUARDED = """package demo;

public final class Guarded {
    public static int next(String digit) {
        if (digit.length() < 1) {
            throw new IllegalArgumentException("empty");
        }
        if (digit.length() > 1) {
            throw new IllegalArgumentException("long");
        }
        if (digit.charAt(0) < '0') {
            throw new IllegalArgumentException("not a digit");
        }
        return digit.charAt(0) - '0' + 1;
    }

    private Guarded() {}
}
"""
"""Each guard's boundary mutant (PIT reports them first) throws on "0"; the last line's are caught
by the assertion."""

GUARDED_TEST = """package demo;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class GuardedTest {
    @Test
    void next() {
        assertEquals(1, Guarded.next("0"));
    }
}
"""


@pytest.mark.maven
@needs_maven
def test_evidence_is_sought_past_the_guards_whose_mutants_throw(tmp_path: Path) -> None:
    """The focal method's first lines are guards: their mutants make it throw on the test's input,
    which is no evidence. The assertion catches only the last line's mutants; coevo tries one
    mutant of each line before a second of any, so it finds that (with PIT's order and the first
    three tried, the test was taken for one whose check detects nothing, and the gold check then
    asked strictness of no agent's method)."""
    root = projects.write(
        tmp_path / "guarded",
        {
            "pom.xml": projects.pom("guarded", projects.JUPITER_DEPS),
            "src/main/java/demo/Guarded.java": GUARDED,
            "src/test/java/demo/GuardedTest.java": GUARDED_TEST,
        },
    )
    built = _built_ok(_build(root))
    focal = FocalMethod("src/main/java/demo/Guarded.java", "demo.Guarded", "next", 4, 15, ("next",))
    result = TOOL.mutation(built.box, built.spec, "demo.GuardedTest", ["next"], [focal], timeout=600)
    assert result.complete, result.message
    guards = [m for m in result.mutants if m.line < 14 and m.status == "KILLED"]
    assert len(guards) >= 3 and not any(m.evidence for m in guards), result.mutants
    assert {t for m in result.mutants for t in m.evidence} == {"demo.GuardedTest#next"}, result.mutants
    built.box.close()
