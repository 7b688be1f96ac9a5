"""Maven projects: compile a revision once, then run single test methods without Maven.

:meth:`MavenTool.build` runs Maven once (``test-compile`` and ``dependency:build-classpath``
in the same reactor, so sibling modules resolve to their ``target/classes``) and stores
each module's test classpath in ``.coevo/classpath/``. :meth:`MavenTool.run_tests` then
starts the JUnit Platform console launcher on that classpath (JUnit 4 through the vintage
engine), with the JaCoCo agent per test when coverage is asked for.
:meth:`MavenTool.compile_test_file` compiles one test file from another revision with
``javac`` into a folder put first on the classpath: the cross cells of the matrix.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import posixpath
import re
import shutil
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tasks import CoevoError

from ..buildtools import BuildChoice, BuildResult, Coverage, TestRun
from ..environments.envspec import EnvSpec
from ..mutation import Mutant, MutationResult, after_control_run
from ..results import (
    REPORT_LIMIT,
    Outcome,
    TestResult,
    UnreadableReport,
    bounded,
    cause_line,
    in_context,
    parse_junit_xml,
    without_roots,
)
from ..sandbox.base import ExecResult, Sandbox, UnsafePath, read_beneath
from .jdk import JDKS_ENV, Jdk, JdkPlan, NoSuitableJdk, find_jdks, plan_jdk, tools_jdk
from .pit import FocalMethod, export_identity, parse_mutations, pit_jars
from .tools import MAVEN_VERSION, maven_home, per_test_coverage, tool_jar

M2_ENV = "COEVO_M2"
"""The shared local Maven repository; ``~/.m2/repository`` when unset."""
STATE_DIR = ".coevo"
"""Where coevo keeps its files inside a worktree (classpaths, reports); git ignores it."""
CROSS_CLASSES_DIR = f"{STATE_DIR}/cross-classes"
"""The default output folder of :meth:`MavenTool.compile_test_file`, relative to the worktree."""
QUICK_JVM = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
"""For short-lived JVMs (Maven's builds, javac on one file, the console launcher, PIT and its
minions), where start-up dominates: the C1 compiler alone and the serial collector start faster
and cost less processor time (bench/mutation_speed.py measures it; on the suite's Maven tests
the processor time fell by 40%)."""
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.3.0"
"""Pinned, so every build resolves the same plugin; 3.3.0 still runs on the Maven 3.1.1 that
old wrappers download (3.5 and later need Maven 3.2.5, 3.8 needs 3.6.3)."""

SKIP_PROPERTIES = (
    "-DskipTests",
    "-Dcheckstyle.skip",
    "-Dspotless.check.skip",
    "-Dspotless.apply.skip",
    "-Denforcer.skip",
    "-Drat.skip",
    "-Djacoco.skip",
    "-Danimal.sniffer.skip",
    "-Dmaven.javadoc.skip",
    "-Dpmd.skip",
    "-Dcpd.skip",
    "-Dspotbugs.skip",
    "-Dlicense.skip",
    "-Dgpg.skip",
    "-Dmaven.gitcommitid.skip",
)
"""Checks that do not change the compiled classes and often fail on old revisions or offline."""

_DEPS_FILE = "target/coevo-deps.classpath"
_WRAPPER_PROPERTIES = ".mvn/wrapper/maven-wrapper.properties"
_OLDEST_WRAPPED_MAVEN = (3, 6, 3)
_REPORTS = ("TEST-junit-jupiter.xml", "TEST-junit-vintage.xml", "TEST-junit-platform-suite.xml")
_SOURCE_ROOTS = ("src/main/java", "src/main/kotlin", "src")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_STACK_FRAME = re.compile(r"^\s+(?:at \S|\.\.\. \d+ more$)")
_TEST_COMPILE_FAILED = re.compile(r"Failed to execute goal \S+:testCompile ")
"""Maven's line for a module whose tests did not compile."""
_CACHED_FAILURE = re.compile(r"was cached in the local repository, resolution will not be reattempted")
_CONSOLE_MAIN = "org.junit.platform.console.ConsoleLauncher"
_JVM_NOTE = "Picked up JAVA_TOOL_OPTIONS"
NO_REPORT = "PIT wrote no report: "
NO_MUTATIONS = NO_REPORT + "No mutations found"
"""How a mutation result begins when PIT said it found no mutant (read from its output: believed
only of coevo's own run of the gold, never of an agent's tests)."""
CONFIRMED_MUTANTS = 8
"""Mutants PIT says a test kills that are tried, at most, to show its own check fails under one
(in :func:`_spread`'s order: one per line of the focal code first)."""
# Maven repository folders of what the console launcher jar brings itself, aligned with its launcher.
_JUNIT_FAMILY = re.compile(
    r"/(org/junit/(platform|jupiter|vintage)|junit/junit|junit/junit-dep|org/opentest4j|org/apiguardian)/"
)
"""JUnit 4 in any form (``junit-dep`` is how projects took 4.10 and older, which the vintage engine
refuses) goes too: the launcher's JUnit 4.13.2 runs their tests, binary compatible."""
_DISCOVERY_FAILED = re.compile(r"TestEngine with ID '([^']+)' failed to discover tests")
_JUNIT6 = re.compile(r"/junit-(?:platform|jupiter)-[a-z-]+-(\d+)\.[^/]*\.jar$")


class NotBuilt(CoevoError):
    """Tests or a test file were run against a module that :meth:`MavenTool.build` did not prepare."""


class LauncherFailed(CoevoError):
    """The JUnit console launcher itself failed, so no test outcome can be read."""


class JavacRefused(CoevoError):
    """javac refused its command line (a folder it cannot find, a flag it lacks), so it compiled
    nothing: a fault of coevo's, never a compile error of the test file."""


_JAVAC_REFUSED = re.compile(
    r"^(?:javac|error): (?:directory not found|invalid flag|invalid (?:source|target) release|"
    r"file not found|no source files)\b.*$",
    re.MULTILINE,
)


def maven_repository() -> str:
    """The local Maven repository shared by all builds: ``$COEVO_M2`` or ``~/.m2/repository``."""
    return os.environ.get(M2_ENV) or str(Path.home() / ".m2" / "repository")


def build_command(
    spec: EnvSpec,
    maven_repo: str,
    extra_args: Sequence[str] = (),
    wrapper_properties: bytes | None = None,
    repo_tail: str | None = None,
    maven: str = "mvn",
) -> list[str]:
    """The one Maven run that compiles every module and writes each one's test classpath.

    ``extra_args`` are a repository's own overrides (``-DjdkVersion=1.8``), put before the
    goals. ``wrapper_properties`` is ``.mvn/wrapper/maven-wrapper.properties``, which says
    whether the project's wrapper is recent enough to use; else ``maven`` runs. ``repo_tail``
    is a read-only repository searched after ``maven_repo`` (a deps image's; Maven 3.9 and later).
    """
    return [
        *_maven_executable(spec, wrapper_properties, maven),
        "-B",
        "-q",
        "-e",
        "-Dstyle.color=never",
        "--fail-at-end",
        f"-Dmaven.repo.local={maven_repo}",
        *([f"-Dmaven.repo.local.tail={repo_tail}"] if repo_tail else []),
        *SKIP_PROPERTIES,
        *extra_args,
        *(["-pl", ",".join(spec.build_modules), "-am"] if spec.build_modules else []),
        "test-compile",
        f"{DEPENDENCY_PLUGIN}:build-classpath",
        f"-Dmdep.outputFile={_DEPS_FILE}",
        "-Dmdep.includeScope=test",
    ]


def _maven_executable(spec: EnvSpec, wrapper_properties: bytes | None, maven: str = "mvn") -> list[str]:
    """``mvnw`` when the project has one that pins a usable Maven, else ``maven`` (coevo's)."""
    return ["sh", "./mvnw"] if maven_choice(spec, wrapper_properties).value != MAVEN_VERSION else [maven]


def maven_choice(spec: EnvSpec, wrapper_properties: bytes | None) -> BuildChoice:
    """Which Maven builds the revision, and why: its wrapper's when that pins Maven 3.6.3 or later,
    else coevo's :data:`~runners.java.tools.MAVEN_VERSION`, the same on every backend.

    Wrappers pinning older Maven fall back: before 3.2.3 Maven fetched Central over plain HTTP,
    which Central refuses, and old ones predate the JDKs coevo builds with.
    """
    if spec.build_tool != "maven-wrapper":
        return BuildChoice("maven", MAVEN_VERSION, "coevo's, the same on every backend")
    found = re.search(rb"apache-maven/(\d+)\.(\d+)\.(\d+)", wrapper_properties or b"")
    if found is None:
        return BuildChoice("maven", MAVEN_VERSION, "coevo's: the project's wrapper names no Maven version")
    version = tuple(int(part) for part in found.groups())
    named = ".".join(map(str, version))
    if version >= _OLDEST_WRAPPED_MAVEN:
        return BuildChoice("maven", f"{named} (wrapper)", "the project's wrapper pins it")
    oldest = ".".join(map(str, _OLDEST_WRAPPED_MAVEN))
    return BuildChoice(
        "maven", MAVEN_VERSION, f"coevo's: the project's wrapper pins Maven {named}, older than {oldest}"
    )


def classpath_file(module: str) -> str:
    """Where :meth:`MavenTool.build` stores a module's test classpath, relative to the worktree."""
    return f"{STATE_DIR}/classpath/{module or '_root'}.txt"


@dataclass(frozen=True)
class _TestId:
    """A requested test and the class file that holds it."""

    requested: str
    class_name: str
    """The binary name (``pkg.Outer$Inner``) the launcher and its reports use."""
    method: str

    @property
    def reported(self) -> str:
        return f"{self.class_name}#{self.method}"


@dataclass(frozen=True)
class _Launch:
    """One run of the console launcher and what it reported."""

    results: dict[str, TestResult]
    """By reported id (``pkg.Outer$Inner#method``); a failed class set-up or engine is
    reported on each of the class's tests."""
    log: ExecResult
    run_dir: str
    """Its folder in the sandbox (arguments, reports, JaCoCo data)."""
    unfinished: str | None = None
    """The test that started and never finished (it hung or ended the JVM; by reported id), when
    some test asked for was not reported."""


@dataclass(frozen=True)
class _CoverageScope:
    """The production code a test's coverage is measured on."""

    classes_dirs: tuple[str, ...]
    """The worktree's ``target/classes`` folders on the test's classpath that hold classes."""
    includes: str
    """The JaCoCo agent's ``includes``: the packages of those classes, two levels deep, or ``*``."""


class MavenTool:
    """Builds with Maven (or its wrapper), runs tests with the JUnit console launcher.

    ``maven_repo``, ``tool_path``, ``jdk`` and ``maven`` say where things are as the sandbox
    sees them; the defaults are this host's (``$COEVO_M2``, the tool cache, the installed JDK of
    the revision's era, coevo's Maven unpacked in the tool cache). ``plan`` says why ``jdk``
    and which levels to raise for it. ``maven_args`` are added to the build command;
    ``repo_tail`` is a read-only repository searched after ``maven_repo`` (the deps image's);
    ``pit_dir`` holds PIT's jars as the sandbox sees them (default: resolved on this host);
    ``tools_jdk`` runs PIT when ``jdk`` is older than the Java 11 it needs (default: an installed one).
    ``per_test_folder`` holds the compiled per-test coverage listener as the sandbox sees it
    (default: compiled on this host by ``jdk``, :func:`~runners.java.tools.per_test_coverage`).
    """

    name = "maven"

    def __init__(
        self,
        maven_repo: str | None = None,
        tool_path: Callable[[str], str] | None = None,
        jdk: Jdk | None = None,
        maven_args: Sequence[str] = (),
        repo_tail: str | None = None,
        pit_dir: str | None = None,
        plan: JdkPlan | None = None,
        maven: str | None = None,
        tools_jdk: Jdk | None = None,
        per_test_folder: str | None = None,
    ) -> None:
        self._maven_repo = maven_repo
        self._repo_tail = repo_tail
        self._pit_dir = pit_dir
        self._maven_args = tuple(maven_args)
        self._tool_path = tool_path or (lambda name: str(tool_jar(name)))
        self._jdk = jdk
        self._plan = plan
        self._maven = maven
        self._tools_jdk = tools_jdk
        self._per_test_folder = per_test_folder

    def toolchain(self, spec: EnvSpec) -> tuple[Jdk, JdkPlan]:
        """The JDK that builds and runs ``spec``'s revision, and the plan that chose it (on the host,
        without one given: the installed JDK of its era, :func:`~runners.java.jdk.plan_jdk`)."""
        if self._jdk is not None:
            return self._jdk, self._plan or JdkPlan(self._jdk.feature, "the JDK this tool was given")
        jdks = find_jdks()
        plan = self._plan or plan_jdk(spec, [jdk.feature for jdk in jdks])
        for jdk in jdks:
            if jdk.feature == plan.feature:
                return jdk, plan
        raise NoSuitableJdk(
            f"JDK {plan.feature} is not installed; install it or list its home in ${JDKS_ENV}"
        )

    # --- build -----------------------------------------------------------------------------------

    def build(self, sandbox: Sandbox, spec: EnvSpec, timeout: float) -> BuildResult:
        """Compiles main and test code of every module and stores their test classpaths.

        Raises :class:`~runners.java.jdk.NoSuitableJdk` when no JDK fits; a project that does not
        build gives ``ok=False`` with the first compiler error (``path:line: message``). Either
        way the result's choices say which JDK and Maven built it, and which levels were raised.
        """
        return self._build(sandbox, spec, timeout)

    def build_production(
        self, sandbox: Sandbox, spec: EnvSpec, timeout: float, failed: BuildResult
    ) -> BuildResult | None:
        """After ``failed`` failed compiling tests, the production code of every module built alone
        (``maven.test.skip``), with each module's classpath: enough to run another revision's
        tests on it (the NO cell), not its own. None when the failure was not in the tests'
        compilation, or the production code does not build either."""
        log = failed.log
        if log is None or log.timed_out or not _TEST_COMPILE_FAILED.search(log.stdout + log.stderr):
            return None
        alone = self._build(sandbox, spec, timeout, ("-Dmaven.test.skip=true",))
        if not alone.ok:
            return None
        why = cause_line(failed.message)
        return dataclasses.replace(
            alone,
            message=in_context(
                "its tests do not compile; its production code was built alone", failed.message
            ),
            choices=(*alone.choices, BuildChoice("tests", "not compiled", why)),
            production_only=True,
        )

    def _build(
        self, sandbox: Sandbox, spec: EnvSpec, timeout: float, extra: Sequence[str] = ()
    ) -> BuildResult:
        jdk, plan = self.toolchain(spec)
        wrapper = sandbox.read_file(_WRAPPER_PROPERTIES)
        maven = maven_choice(spec, wrapper)
        choices = (*plan.choices(), maven)
        command = build_command(
            spec,
            self._maven_repo or maven_repository(),
            [*plan.maven_args(), *extra, *self._maven_args],  # the repository's own arguments win
            wrapper,
            self._repo_tail,
            self._maven or str(maven_home() / "bin" / "mvn"),
        )
        env = {"JAVA_HOME": str(jdk.home), "MAVEN_OPTS": " ".join(QUICK_JVM)}
        log = sandbox.exec(command, timeout, env=env)
        if not log.ok and not log.timed_out and _CACHED_FAILURE.search(log.stdout + log.stderr):
            # A download that failed once (offline, a flaky proxy) is remembered in the local
            # repository and never retried by default: force one update.
            update = command.index("-B")
            log = sandbox.exec([*command[:update], "-U", *command[update:]], timeout, env=env)
        built = self._read_build(sandbox, spec, log, timeout)
        if not built.ok:
            return dataclasses.replace(built, choices=choices)
        roots = [self._maven_repo or maven_repository(), *(self._repo_tail or "").split(",")]
        modules = spec.modules or ("",)
        entries = [entry for module in modules for entry in _read_classpath(sandbox, module) or ()]
        installed = {
            f"java=={_java_version(sandbox, jdk)}",
            f"maven=={maven.value.removesuffix(' (wrapper)')}",
            *resolved_coordinates(entries, [root for root in roots if root]),
        }
        return dataclasses.replace(built, choices=choices, installed=tuple(sorted(installed)))

    def _read_build(self, sandbox: Sandbox, spec: EnvSpec, log: ExecResult, timeout: float) -> BuildResult:
        """What a finished Maven run built: each module's classpath stored, or why none was."""
        if log.timed_out:
            return BuildResult(False, f"maven timed out after {timeout:g}s", log)
        written = 0
        for module in spec.modules or ("",):
            deps = sandbox.read_file(_in_module(module, _DEPS_FILE))
            if deps is None:
                continue
            entries = [
                _absolute(sandbox.workdir, _in_module(module, "target/test-classes")),
                _absolute(sandbox.workdir, _in_module(module, "target/classes")),
                *(entry for entry in deps.decode().strip().split(":") if entry),
            ]
            sandbox.write_file(classpath_file(module), "\n".join(entries).encode() + b"\n")
            written += 1
        if not log.ok and not written:
            return BuildResult(False, _maven_error(log, sandbox.workdir), log)
        if not written:
            return BuildResult(False, "maven built but wrote no classpath for any module", log)
        sandbox.write_file(f"{STATE_DIR}/.gitignore", b"*\n")
        if not log.ok:  # --fail-at-end: the other modules built; their tests can run
            return BuildResult(
                True, in_context("some modules did not build", _maven_error(log, sandbox.workdir)), log
            )
        return BuildResult(True, "", log)

    def built_modules(self, sandbox: Sandbox, spec: EnvSpec) -> list[str]:
        """The modules of a built worktree whose tests can run (a partial build lacks some)."""
        return [module for module in spec.modules or ("",) if sandbox.read_file(classpath_file(module))]

    # --- tests -----------------------------------------------------------------------------------

    def run_tests(
        self,
        sandbox: Sandbox,
        spec: EnvSpec,
        tests: Sequence[str],
        timeout: float,
        coverage: bool = False,
        module: str | None = None,
        extra_classpath: Sequence[str] = (),
    ) -> TestRun:
        """Runs test methods (``pkg.Class#method``) of a built worktree; every one gets a result.

        ``module`` is where the tests live (found from the compiled classes when None; pass it
        with ``extra_classpath`` in multi-module projects). ``extra_classpath``
        (worktree-relative or absolute) goes first, ahead of the module's own classes.
        ``timeout`` bounds each launcher run: one for all tests of a module. With ``coverage`` each
        test also gets its covered lines, taken between tests in that one JVM. A test that hung or
        ended the JVM costs the others nothing: it runs again alone, and the rest of the batch
        again in one JVM (:meth:`_one_jvm`).
        """
        jdk, _ = self.toolchain(spec)
        extra = [_absolute(sandbox.workdir, entry) for entry in extra_classpath]
        results: dict[str, TestResult] = {}
        coverages: dict[str, Coverage] = {}
        log: ExecResult | None = None
        candidates = [module] if module is not None else list(spec.modules or ("",))
        built = {name: cp for name in candidates if (cp := _read_classpath(sandbox, name)) is not None}
        if not built:
            raise NotBuilt(f"module {candidates[0] or '(root)'!r} has no classpath: build the worktree first")
        groups: dict[str, list[_TestId]] = {}
        for test in dict.fromkeys(tests):
            found = self._locate(sandbox, list(built), test, extra)
            if found is None:
                results[test] = TestResult(test, Outcome.ABSENT, "no compiled test class for it")
            else:
                groups.setdefault(found[0], []).append(found[1])
        for test_module, ids in groups.items():
            classpath = [*extra, *built[test_module]]
            scope = self._coverage_scope(sandbox, classpath) if coverage else None
            outcomes, lines, last = self._one_jvm(sandbox, jdk, test_module, classpath, ids, timeout, scope)
            results.update(outcomes)
            coverages.update(lines)
            log = last or log
        ordered = tuple(results[test] for test in dict.fromkeys(tests))
        return TestRun(results=ordered, coverage=coverages, log=log)

    def _one_jvm(
        self,
        sandbox: Sandbox,
        jdk: Jdk,
        module: str,
        classpath: Sequence[str],
        ids: Sequence[_TestId],
        timeout: float,
        scope: _CoverageScope | None,
    ) -> tuple[dict[str, TestResult], dict[str, Coverage], ExecResult | None]:
        """``ids`` run in one JVM (measured with ``scope``): each one's result and lines (by
        requested id), and the last run's log. A test that hung or ended that JVM runs again
        alone, and the rest of the batch again in one JVM (the tests before it too: the run
        reported nothing). Measured, every test gets its lines so: when the run does not say which
        test ended it, each test it did not measure runs alone; unmeasured, a run that names no
        such test is kept as it is (a test it did not report is absent, or timed out with it)."""
        results: dict[str, TestResult] = {}
        coverages: dict[str, Coverage] = {}
        log: ExecResult | None = None
        batch = list(ids)
        while batch:
            launch, measured = self._measured(sandbox, jdk, module, classpath, batch, timeout, scope)
            log = launch.log
            lost: list[_TestId] = []
            for test_id in batch:
                result = _outcome(test_id, launch)
                if len(batch) == 1 or (
                    test_id.reported in launch.results
                    and (scope is None or test_id.reported in measured or result.outcome == Outcome.SKIPPED)
                ):
                    results[test_id.requested] = result
                    if scope is not None:
                        coverages[test_id.requested] = measured.get(test_id.reported, Coverage())
                else:
                    lost.append(test_id)
            culprit = next((t for t in lost if t.reported == launch.unfinished), None)
            if culprit is None and scope is None:
                results.update((test_id.requested, _outcome(test_id, launch)) for test_id in lost)
                break
            # The test that hung or ended the JVM runs alone; the others again together. When
            # the run does not name it, each runs alone (one per JVM: nothing is lost).
            alone = [culprit] if culprit is not None else lost
            for test_id in alone:
                launch, measured = self._measured(sandbox, jdk, module, classpath, [test_id], timeout, scope)
                log = launch.log
                results[test_id.requested] = _outcome(test_id, launch)
                if scope is not None:
                    coverages[test_id.requested] = measured.get(test_id.reported, Coverage())
            batch = [t for t in lost if t not in alone]
        return results, coverages, log

    def compile_test_file(
        self,
        sandbox: Sandbox,
        spec: EnvSpec,
        source_path: str,
        classpath_module: str | None = None,
        timeout: float = 300.0,
        output_dir: str = CROSS_CLASSES_DIR,
    ) -> BuildResult:
        """Compiles one test file (worktree-relative) against this revision's classes into ``output_dir``.

        Pass ``output_dir`` as ``extra_classpath`` to :meth:`run_tests` to run the file's
        tests instead of the revision's own; classes accumulate there, so give each cell its own.
        ``classpath_module`` defaults to the module holding ``source_path``. Compile errors give
        ``ok=False`` and the first error line.
        """
        if sandbox.read_file(source_path) is None:
            return BuildResult(False, f"{source_path}: no such file in the worktree")
        module = spec.module_for(source_path) if classpath_module is None else classpath_module
        jdk, _ = self.toolchain(spec)
        argfile = f"{STATE_DIR}/runs/{uuid.uuid4().hex}.javac"
        classpath = self._classpath(sandbox, module)
        sandbox.write_file(argfile, _argfile(["-cp", ":".join(classpath)]))
        # JDK 23 stopped running annotation processors (Lombok) found on the classpath unasked.
        processors = ["-proc:full"] if jdk.feature >= 21 else []
        # JDK 8's javac makes no -d folder, it refuses: made from the host (no exec in the sandbox).
        sandbox.write_file(posixpath.join(output_dir, ".folder"), b"")
        output = _absolute(sandbox.workdir, output_dir)
        command = [
            str(jdk.javac),
            *(f"-J{option}" for option in QUICK_JVM),
            "-d",
            output,
            "-encoding",
            "UTF-8",
            "-nowarn",
            "-implicit:none",
            *processors,
            f"@{_absolute(sandbox.workdir, argfile)}",
            source_path,
        ]
        log = sandbox.exec(command, timeout)
        sandbox.exec(["rm", "-f", _absolute(sandbox.workdir, argfile)], 60)
        if log.timed_out:
            return BuildResult(False, f"javac timed out after {timeout:g}s", log)
        if not log.ok:
            refused = _javac_refusal(log)
            if refused:  # javac did not compile at all: no fact about the test file
                raise JavacRefused(f"javac refused to run: {refused}")
            return BuildResult(False, _javac_error(log, sandbox.workdir), log)
        return BuildResult(True, "", log)

    # --- mutation ----------------------------------------------------------------------------------

    def mutation(
        self,
        sandbox: Sandbox,
        spec: EnvSpec,
        test_class: str,
        test_methods: Sequence[str],
        focal: Sequence[FocalMethod],
        timeout: float,
        module: str | None = None,
        extra_classpath: Sequence[str] = (),
        only_focal: bool = True,
    ) -> MutationResult:
        """PIT's verdict on the mutants of the focal methods, by ``test_methods`` of ``test_class``.

        The focal classes are mutated; with ``only_focal`` every other method of them is left
        out (PIT's ``excludedMethods``), which is what makes it cheap. Only mutants on the focal
        methods' lines count. Tests that fail without mutation are skipped. PIT runs every test
        against every mutant (its full matrix), so each mutant names all the tests that detected
        it; when one was detected, the tests run once more unmutated with the launcher from the
        same folder (the control run of :func:`~runners.mutation.after_control_run`). PIT and the
        tests it runs use the revision's JDK, or Java 11 or later when that is older.
        """
        jdk = self._pit_jdk(spec)
        module = spec.module_for(focal[0].file) if module is None else module
        classpath = [
            *(_absolute(sandbox.workdir, e) for e in extra_classpath),
            *self._classpath(sandbox, module),
        ]
        console = self._tool_path(_console_tool(classpath))
        run = f"{STATE_DIR}/runs/{uuid.uuid4().hex}"
        jvm_classpath = [*self._pit_jars(), *_launch_classpath(classpath, sandbox.workdir, console)]
        classpath_args, env = _classpath_option(sandbox, jdk, jvm_classpath, f"{run}/java-args")
        classes = sorted({f.class_name for f in focal})
        keep = {f.method for f in focal}
        excluded = sorted({name for f in focal for name in f.siblings} - keep) if only_focal else []
        # PIT's report goes to the sandbox's scratch folder, which the tests cannot reach: its
        # minions, which run them, run as the sandbox's test user (when it has one).
        scratch = sandbox.scratch()
        report = f"pit-{uuid.uuid4().hex}"
        minion = _minion_launcher(scratch, report, jdk, sandbox.test_user)
        command = [
            str(jdk.java),
            *QUICK_JVM,
            *classpath_args,
            "org.pitest.mutationtest.commandline.MutationCoverageReport",
            "--jvmArgs", ",".join(QUICK_JVM),
            *(["--jvmPath", minion] if minion else []),
            "--reportDir", str(scratch / report),
            "--targetClasses", ",".join(classes),
            "--targetTests", test_class,
            "--includedTestMethods", ",".join(test_methods),
            "--skipFailingTests",
            "--sourceDirs", _absolute(sandbox.workdir, _in_module(module, "src/main/java")),
            "--outputFormats", "XML",
            "--fullMutationMatrix=true",  # every test against every mutant: who detects which
            "--timestampedReports=false",
            "--threads", "1",
            "--features", "+EXPORT",
            *(["--excludedMethods", ",".join(excluded)] if excluded else []),
        ]  # fmt: skip
        log = sandbox.exec(command, timeout, env=env, cwd=_absolute(sandbox.workdir, module))
        sandbox.stop_untrusted()  # what the tests started in PIT's minions goes before its report is read
        try:
            return self._read_pit(sandbox, spec, scratch, report, log, test_class, test_methods, focal,
                                  timeout, module, extra_classpath)  # fmt: skip
        finally:
            sandbox.exec(["rm", "-rf", _absolute(sandbox.workdir, run)], 60)
            shutil.rmtree(scratch / report, ignore_errors=True)
            (scratch / f"{report}.sh").unlink(missing_ok=True)

    def _read_pit(
        self,
        sandbox: Sandbox,
        spec: EnvSpec,
        scratch: Path,
        report_dir: str,
        log: ExecResult,
        test_class: str,
        test_methods: Sequence[str],
        focal: Sequence[FocalMethod],
        timeout: float,
        module: str,
        extra_classpath: Sequence[str],
    ) -> MutationResult:
        """PIT's report (``report_dir`` in ``scratch``), the control run, and which tests' own
        checks detect a mutant."""
        try:
            report = read_beneath(scratch, f"{report_dir}/mutations.xml", REPORT_LIMIT)
        except UnreadableReport as exc:
            return MutationResult((), f"PIT's report is unreadable: {exc}", log, complete=False)
        if report is None:
            # What PIT printed is never read as a fact (the tests write to the same streams): no
            # report is no measurement, whatever the reason shown.
            reason = "timed out" if log.timed_out else _pit_error(log)
            return MutationResult((), f"{NO_REPORT}{reason}", log, complete=False)
        tests = [f"{test_class}#{method}" for method in test_methods]
        try:
            parsed = parse_mutations(report, tests)
        except UnreadableReport as exc:
            return MutationResult((), str(exc), log, complete=False)
        mutants = tuple(m for m in parsed if _on_focal(m, focal))
        result = MutationResult(mutants, "", log)
        if not any(m.detected for m in mutants):
            return result
        deadline = time.monotonic() + max(timeout - log.duration, 60.0)
        # The control run: the scored tests once more, unmutated, from the same folder, as the
        # run on the new code ran them (in one JVM, with the coverage agent).
        try:
            control = self.run_tests(
                sandbox, spec, tests, _left(deadline), coverage=True, module=module,
                extra_classpath=extra_classpath,
            )  # fmt: skip
            passed = {r.test for r in control.results if r.outcome == Outcome.PASS}
        except LauncherFailed:  # they passed under this launcher before: the tests killed it
            passed = set()
        result = after_control_run(result, tests, passed)
        exported = _exported_mutants(scratch / report_dir)
        checked = self._checked_by(sandbox, spec, exported, result, tests, module, extra_classpath, deadline)
        mutants = tuple(dataclasses.replace(m, asserted_by=checked.get(m.ident, ())) for m in result.mutants)
        return dataclasses.replace(result, mutants=mutants)

    def _checked_by(
        self,
        sandbox: Sandbox,
        spec: EnvSpec,
        exported: Mapping[str, bytes],
        result: MutationResult,
        tests: Sequence[str],
        module: str,
        extra_classpath: Sequence[str],
        deadline: float,
    ) -> dict[str, tuple[str, ...]]:
        """For each test PIT credits with a kill, whether its own check fails under one of those
        mutants (at most :data:`CONFIRMED_MUTANTS` tried): the scored tests run again as on the
        new code (together, in one JVM, once per mutant), with the mutant's class (PIT's
        export) written over the original, and a test's failure counts
        when it is an assertion (the launcher's report says ``failure`` only for an
        AssertionError) not thrown by the project's production code. PIT cannot tell that, and
        its minion is not the launcher: a test that fails only under PIT gets no evidence.
        ``exported``: the mutants' classes by identity. Returns the mutants'
        :attr:`~runners.mutation.Mutant.ident` with the tests confirmed."""
        confirmed: dict[str, list[str]] = {}
        under: dict[str, dict[str, TestResult]] = {}
        for test in tests:
            killed = [m for m in result.mutants if m.status == "KILLED" and test in m.killing_tests]
            for mutant in _spread(killed)[:CONFIRMED_MUTANTS]:
                mutated = exported.get(mutant.ident)
                if mutant.ident not in under:
                    if mutated is None or time.monotonic() > deadline:
                        continue
                    under[mutant.ident] = self._under_mutant(
                        sandbox, spec, mutated, mutant, tests, module, extra_classpath, deadline
                    )
                if self._own_check_failed(sandbox, spec, under[mutant.ident].get(test)):
                    confirmed.setdefault(mutant.ident, []).append(test)
                    break
        return {ident: tuple(found) for ident, found in confirmed.items()}

    def _under_mutant(
        self,
        sandbox: Sandbox,
        spec: EnvSpec,
        mutated: bytes,
        mutant: Mutant,
        tests: Sequence[str],
        module: str,
        extra_classpath: Sequence[str],
        deadline: float,
    ) -> dict[str, TestResult]:
        """The scored tests' results with the mutant's class written over the original: all of
        them in one run, as on the new code (none when the class or the run fails)."""
        target = self._class_file(sandbox, spec, mutant.class_name)
        original = sandbox.read_file(target) if target else None
        if target is None or original is None:
            return {}
        try:
            sandbox.write_file(target, mutated)
            run = self.run_tests(
                sandbox, spec, tests, _left(deadline), coverage=True, module=module,
                extra_classpath=extra_classpath,
            )  # fmt: skip
        except (LauncherFailed, UnsafePath):
            return {}
        finally:
            with contextlib.suppress(UnsafePath):
                sandbox.write_file(target, original)
        return {r.test: r for r in run.results}

    def _own_check_failed(self, sandbox: Sandbox, spec: EnvSpec, found: TestResult | None) -> bool:
        """Whether a test failed on an assertion not thrown by the project's production code."""
        if found is None or found.outcome != Outcome.FAIL:
            return False
        thrower = found.frames[0].rsplit(":", 1)[0] if found.frames else ""
        return not (thrower and self._production_source(sandbox, spec, thrower))

    def _class_file(self, sandbox: Sandbox, spec: EnvSpec, class_name: str) -> str | None:
        """Where the build put ``class_name``'s class file (the module's ``target/classes``)."""
        relative = class_name.replace(".", "/") + ".class"
        for candidate in spec.modules or ("",):
            path = _in_module(candidate, f"target/classes/{relative}")
            if sandbox.read_file(path) is not None:
                return path
        return None

    def _production_source(self, sandbox: Sandbox, spec: EnvSpec, source: str) -> bool:
        """Whether ``source`` (``pkg/path/File.java``) is a production file of the project."""
        return any(
            sandbox.read_file(_in_module(candidate, f"{root}/{source}")) is not None
            for candidate in spec.modules or ("",)
            for root in ("src/main/java", "src/main/kotlin", "src/main/groovy")
        )

    def _pit_jdk(self, spec: EnvSpec) -> Jdk:
        jdk, _ = self.toolchain(spec)
        if self._tools_jdk is not None:
            return self._tools_jdk if jdk.feature < self._tools_jdk.feature else jdk
        return tools_jdk(jdk, find_jdks()) if self._pit_dir is None else jdk  # on the host

    def _pit_jars(self) -> list[str]:
        if self._pit_dir is not None:
            return [f"{self._pit_dir}/*"]
        return [str(path) for path in pit_jars()]

    # --- helpers ---------------------------------------------------------------------------------

    def _classpath(self, sandbox: Sandbox, module: str) -> list[str]:
        classpath = _read_classpath(sandbox, module)
        if classpath is None:
            raise NotBuilt(f"module {module or '(root)'!r} has no classpath: build the worktree first")
        return classpath

    def _locate(
        self, sandbox: Sandbox, modules: Sequence[str], test: str, extra: Sequence[str]
    ) -> tuple[str, _TestId] | None:
        """The module to run ``test`` in and its binary class name; None when no class file holds it."""
        class_name, _, method = test.partition("#")
        if not class_name or not method:
            return None
        for binary in _binary_names(class_name):
            class_file = binary.replace(".", "/") + ".class"
            test_id = _TestId(test, binary, method)
            in_extra = any(
                _read_absolute(sandbox, posixpath.join(folder, class_file)) is not None for folder in extra
            )
            for candidate in modules:
                if sandbox.read_file(_in_module(candidate, f"target/test-classes/{class_file}")) is not None:
                    return candidate, test_id
            if in_extra:
                return modules[0], test_id
        return None

    def _launch(
        self,
        sandbox: Sandbox,
        jdk: Jdk,
        module: str,
        classpath: Sequence[str],
        tests: Sequence[_TestId],
        timeout: float,
        scope: _CoverageScope | None,
    ) -> _Launch:
        """One console launcher run of ``tests``. coevo's listener notes in the run folder's
        ``per-test`` folder each test as it starts and ends (:func:`_unfinished`); with ``scope``,
        under JaCoCo's agent, it also takes each test's data there (:meth:`_per_test_lines`)."""
        run = f"{STATE_DIR}/runs/{uuid.uuid4().hex}"
        run_dir = _absolute(sandbox.workdir, run)
        console = self._tool_path(_console_tool(classpath))
        jvm_classpath = _launch_classpath(classpath, sandbox.workdir, console)
        # coevo's listener notes each test's start and end (and, with the agent, takes its data).
        jvm_classpath.append(self._per_test_coverage(jdk))
        lines = (
            f"-javaagent:{self._tool_path('jacoco-agent')}=output=none,includes={scope.includes}"
            if scope is not None
            else "-Dcoevo.coverage.lines=false"
        )
        listener = [f"-Dcoevo.coverage.dir={run_dir}/per-test", lines]
        classpath_args, env = _classpath_option(sandbox, jdk, jvm_classpath, f"{run}/java-args")
        basedir = _absolute(sandbox.workdir, module)
        command = [
            str(jdk.java),
            *QUICK_JVM,
            f"-Dbasedir={basedir}",
            *listener,
            *classpath_args,
            _CONSOLE_MAIN,
            "execute",
            "--disable-banner",
            "--disable-ansi-colors",
            "--details=none",
            "--config=junit.platform.discovery.listener.default=logging",
            # One test at a time, whatever the project's junit-platform.properties say: the
            # coverage listener takes each test's data between tests, and every run is alike.
            "--config=junit.jupiter.execution.parallel.enabled=false",
            "--reports-dir",
            f"{run_dir}/reports",
            *_selectors(tests),
        ]
        log = sandbox.exec(command, timeout, env=env, cwd=basedir, untrusted=True)
        reported: list[TestResult] = []
        try:
            for report in _REPORTS:
                data = sandbox.read_file(f"{run}/reports/{report}", limit=REPORT_LIMIT)
                if data is not None:
                    reported.extend(parse_junit_xml(data, java=True))
        except UnreadableReport as exc:
            # The tests ran in the JVM that wrote it (a shutdown hook can rewrite it): their error.
            sandbox.exec(["rm", "-rf", run_dir], 60)
            why = f"the tests' run left a report coevo cannot read: {exc}"
            return _Launch(
                {t.reported: TestResult(t.reported, Outcome.ERROR, why) for t in tests}, log, run_dir
            )
        if not reported and not log.timed_out and log.exit_code not in (0, 1):
            sandbox.exec(["rm", "-rf", run_dir], 60)
            raise LauncherFailed(f"the JUnit console launcher failed: {_last_line(log)}")
        failed_engine = _discovery_failure(log)
        reported_ids = {r.test.split("[")[0] for r in reported}
        if failed_engine and any(t.reported not in reported_ids for t in tests):
            # An engine that cannot discover reports no test: that is no "absent" test, but a
            # harness that cannot run them. (The line is read from the output, which the tests
            # also write: where the report has every test, they ran, whatever was printed.)
            sandbox.exec(["rm", "-rf", run_dir], 60)
            raise LauncherFailed(failed_engine)
        results: dict[str, TestResult] = {}
        for result in reported:
            class_name, _, method = result.test.partition("#")
            key = f"{class_name}#{method.split('[')[0]}"  # JUnit 4 Parameterized: "addsZero[1]"
            results[key] = _merge(results.get(key), TestResult(key, *_rest(result)))
        unfinished = None
        if log.timed_out or any(test.reported not in results for test in tests):
            unfinished = _unfinished(sandbox, f"{run_dir}/per-test")
        if scope is None:
            sandbox.exec(["rm", "-rf", run_dir], 60)
        return _Launch(results, log, run_dir, unfinished)

    def _coverage_scope(self, sandbox: Sandbox, classpath: Sequence[str]) -> _CoverageScope:
        """Which of the classpath's ``target/classes`` folders hold classes, and their packages."""
        prefix = sandbox.workdir.rstrip("/") + "/"
        candidates = [
            entry for entry in classpath if entry.startswith(prefix) and entry.endswith("/target/classes")
        ]
        if not candidates:
            return _CoverageScope((), "*")
        listed = sandbox.exec(["find", *candidates, "-name", "*.class"], 300).stdout.splitlines()
        found: set[str] = set()
        packages: set[str] = set()
        for folder in candidates:
            for line in listed:
                if line.startswith(folder + "/"):
                    found.add(folder)
                    parts = line[len(folder) + 1 :].split("/")[:-1]
                    # Agent includes match class names; the default package needs everything.
                    packages.add(".".join(parts[:2]) + ".*" if parts else "*")
        includes = "*" if "*" in packages else ":".join(sorted(packages)) or "*"
        return _CoverageScope(tuple(folder for folder in candidates if folder in found), includes)

    def _per_test_coverage(self, jdk: Jdk) -> str:
        """The listener's class folder for ``jdk``: the image's, or compiled on the host."""
        return self._per_test_folder or str(per_test_coverage(jdk.javac, jdk.feature))

    def _measured(
        self,
        sandbox: Sandbox,
        jdk: Jdk,
        module: str,
        classpath: Sequence[str],
        tests: Sequence[_TestId],
        timeout: float,
        scope: _CoverageScope | None,
    ) -> tuple[_Launch, dict[str, Coverage]]:
        """One launcher run of ``tests`` (under the coverage agent with ``scope``) and each measured
        test's lines."""
        launch = self._launch(sandbox, jdk, module, classpath, tests, timeout, scope)
        lines = self._per_test_lines(sandbox, jdk, launch, scope) if scope is not None else {}
        return launch, lines

    def _per_test_lines(
        self, sandbox: Sandbox, jdk: Jdk, launch: _Launch, scope: _CoverageScope
    ) -> dict[str, Coverage]:
        """Each measured test's covered lines (by reported id), read in one JVM from what the
        listener took in ``launch``; empty when it took nothing or its data cannot be read."""
        try:
            if launch.log.timed_out:
                return {}
            lines = f"{launch.run_dir}/lines.tsv"
            command = [
                str(jdk.java), *QUICK_JVM, "-cp",
                f"{self._per_test_coverage(jdk)}:{self._tool_path('jacoco-cli')}",
                "coevo.coverage.PerTestCoverage$Lines", f"{launch.run_dir}/per-test", lines,
                *scope.classes_dirs,
            ]  # fmt: skip
            if not sandbox.exec(command, 300).ok:
                return {}
            data = _read_absolute(sandbox, lines)
            if data is None:
                return {}
            modules = _modules_of(sandbox, scope.classes_dirs)
            paths: dict[str, str | None] = {}
            measured: dict[str, Coverage] = {}
            for test, sources in _lines_by_test(data.decode("utf-8", "replace")).items():
                covered: dict[str, frozenset[int]] = {}
                for source, numbers in sources.items():
                    if source not in paths:
                        package, _, name = source.rpartition("/")
                        candidates = _source_candidates(modules, package, name)
                        paths[source] = next(
                            (p for p in candidates if sandbox.read_file(p) is not None), None
                        )
                    path = paths[source]
                    if path is not None:
                        covered[path] = covered.get(path, frozenset()) | numbers
                measured[test] = Coverage(covered)
            return measured
        finally:
            sandbox.exec(["rm", "-rf", launch.run_dir], 60)


# --- pure helpers ----------------------------------------------------------------------------------


def resolved_coordinates(classpath: Iterable[str], repositories: Sequence[str]) -> list[str]:
    """``group:artifact:version`` (``:classifier`` when it has one) of each classpath jar that lies
    in one of the Maven ``repositories``, read from the repository layout; sorted, each once.

    A snapshot's jar, whose file name carries its timestamp instead of the version, gets that
    file name as a fourth part: it says exactly which build of the snapshot was used.
    """
    found: set[str] = set()
    prefixes = [repository.rstrip("/") + "/" for repository in repositories]
    for entry in classpath:
        prefix = next((prefix for prefix in prefixes if entry.startswith(prefix)), None)
        parts = entry[len(prefix) :].split("/") if prefix else []
        if len(parts) < 4:
            continue  # outside every repository: a module's own classes
        *group, artifact, version, name = parts
        stem = posixpath.splitext(name)[0]
        coordinate = f"{'.'.join(group)}:{artifact}:{version}"
        if stem == f"{artifact}-{version}":
            found.add(coordinate)
        elif stem.startswith(f"{artifact}-{version}-"):
            found.add(f"{coordinate}:{stem.removeprefix(f'{artifact}-{version}-')}")
        else:
            found.add(f"{coordinate}:{name}")
    return sorted(found)


def _java_version(sandbox: Sandbox, jdk: Jdk) -> str:
    """The exact version of ``jdk`` as the sandbox has it: its ``release`` file, which Debian's JDK 8
    lacks, else what its ``java -version`` says, else its feature."""
    release = sandbox.exec(["cat", f"{jdk.home}/release"], 30)
    found = re.search(r'^JAVA_VERSION="([^"]+)"', release.stdout, re.MULTILINE) if release.ok else None
    if found is None:
        version = sandbox.exec([f"{jdk.home}/bin/java", "-version"], 60)
        found = re.search(r'version "([^"]+)"', version.stderr + version.stdout)
    return found.group(1) if found else str(jdk.feature)


def _read_classpath(sandbox: Sandbox, module: str) -> list[str] | None:
    data = sandbox.read_file(classpath_file(module))
    return None if data is None else [line for line in data.decode().splitlines() if line]


def _spread(killed: Sequence[Mutant]) -> list[Mutant]:
    """``killed`` reordered to try mutants of many places before two of one place: the first line
    of each focal method, then the second of each, and so on, and one mutant of every such line
    before a second of any. Mutants of one line tend to fail alike, and a method's first lines are
    often guards whose mutants make the production code throw (no evidence), while a later line's
    is caught by the test's assertion."""
    methods: dict[str, dict[int, list[Mutant]]] = {}
    for mutant in killed:
        methods.setdefault(mutant.method, {}).setdefault(mutant.line, []).append(mutant)
    per_method = [list(lines.values()) for lines in methods.values()]
    groups = [
        lines[rank]
        for rank in range(max(map(len, per_method), default=0))
        for lines in per_method
        if rank < len(lines)
    ]
    return [group[i] for i in range(max(map(len, groups), default=0)) for group in groups if i < len(group)]


def _in_module(module: str, path: str) -> str:
    return f"{module}/{path}" if module else path


def _absolute(workdir: str, path: str) -> str:
    return path if path.startswith("/") else posixpath.normpath(posixpath.join(workdir, path))


def _unfinished(sandbox: Sandbox, folder: str) -> str | None:
    """The last test the coverage listener saw start in ``folder`` and never saw finish
    (``class#method``), None when every test it saw start finished. The listener writes a line
    to ``started.tsv`` as each test method starts and to ``index.tsv`` as it finishes."""
    try:
        started = _read_absolute(sandbox, f"{folder}/started.tsv", REPORT_LIMIT) or b""
        index = _read_absolute(sandbox, f"{folder}/index.tsv", REPORT_LIMIT) or b""
    except UnreadableReport:  # the tests' JVM wrote them: too large says nothing
        return None
    finished = Counter(line.partition("\t")[2] for line in index.decode("utf-8", "replace").splitlines())
    unfinished = None
    for key in started.decode("utf-8", "replace").splitlines():
        if finished[key] > 0:
            finished[key] -= 1  # a parameterized test starts and finishes once more per invocation
        else:
            unfinished = key
    return unfinished


def _read_absolute(sandbox: Sandbox, path: str, limit: int | None = None) -> bytes | None:
    """Reads a file given by its path in the sandbox, which must lie inside the worktree."""
    prefix = sandbox.workdir.rstrip("/") + "/"
    if path.startswith(prefix):
        return sandbox.read_file(path[len(prefix) :], limit=limit)
    return sandbox.read_file(path, limit=limit) if not path.startswith("/") else None


def _binary_names(class_name: str) -> Iterable[str]:
    """``a.b.Outer.Inner`` as written, then with trailing dots read as nesting (``a.b.Outer$Inner``)."""
    yield class_name
    parts = class_name.split(".")
    for split in range(len(parts) - 1, 0, -1):
        if parts[split - 1][:1].isupper():
            yield ".".join(parts[:split]) + "$" + "$".join(parts[split:])


def _console_tool(classpath: Sequence[str]) -> str:
    """The console launcher for the project's JUnit: ``junit-console-6`` for JUnit 6, else the 5.x one."""
    for entry in classpath:
        match = _JUNIT6.search(entry)
        if match and int(match.group(1)) >= 6:
            return "junit-console-6"
    return "junit-console"


def _launch_classpath(classpath: Sequence[str], workdir: str, console: str) -> list[str]:
    """The launcher JVM's classpath: the worktree's classes and the project's libraries first, then
    the console launcher jar, which replaces the project's own JUnit jars.

    The revision's classes must win even where they share packages with the launcher jar
    (when the project *is* JUnit or Hamcrest), and the project's Hamcrest must win over the
    old one the launcher bundles; JUnit itself comes from the launcher so that its engines,
    platform and APIs are one aligned set.
    """
    inside = workdir.rstrip("/") + "/"
    kept = [entry for entry in classpath if entry.startswith(inside) or not _JUNIT_FAMILY.search(entry)]
    return [*kept, console]


def _classpath_option(
    sandbox: Sandbox, jdk: Jdk, classpath: Sequence[str], argfile: str
) -> tuple[list[str], dict[str, str]]:
    """How to hand a long classpath to ``java``: an ``@argfile`` (JDK 9+) or ``CLASSPATH`` (JDK 8)."""
    joined = ":".join(classpath)
    if jdk.feature < 9:
        return [], {"CLASSPATH": joined}
    sandbox.write_file(argfile, _argfile(["-cp", joined]))
    return [f"@{_absolute(sandbox.workdir, argfile)}"], {}


def _selectors(tests: Sequence[_TestId]) -> list[str]:
    """Select each class and keep only the asked methods, so parameterized methods need no signature."""
    selectors: list[str] = []
    for class_name in dict.fromkeys(test.class_name for test in tests):
        selectors += ["--select-class", class_name]
    for test in tests:
        selectors += ["--include-methodname", rf"^\Q{test.reported}\E$"]
    return selectors


def _argfile(args: Sequence[str]) -> bytes:
    """An ``@argfile`` for javac and the console launcher: each argument double-quoted."""
    quoted = ('"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"' for arg in args)
    return ("\n".join(quoted) + "\n").encode()


def _rest(result: TestResult) -> tuple[Outcome, str, float, tuple[str, ...]]:
    return result.outcome, result.message, result.duration, result.frames


_SEVERITY = {
    Outcome.ERROR: 0,
    Outcome.FAIL: 1,
    Outcome.PASS: 2,
    Outcome.SKIPPED: 3,
}


def _merge(old: TestResult | None, new: TestResult) -> TestResult:
    """One result for a method reported many times (parameterized): the worst outcome, summed time."""
    if old is None:
        return new
    worst = min(old, new, key=lambda result: _SEVERITY.get(result.outcome, 0))
    return dataclasses.replace(worst, duration=old.duration + new.duration)


def _outcome(test: _TestId, launch: _Launch) -> TestResult:
    found = launch.results.get(test.reported)
    if found is not None:
        return TestResult(test.requested, *_rest(found))
    if launch.log.timed_out:
        return TestResult(test.requested, Outcome.TIMEOUT, "the test run timed out")
    return TestResult(test.requested, Outcome.ABSENT, "not run: no such test method")


def _on_focal(mutant: Mutant, focal: Sequence[FocalMethod]) -> bool:
    return any(
        mutant.class_name.split("$")[0] == f.class_name.split("$")[0] and f.start <= mutant.line <= f.end
        for f in focal
    )


def _maven_error(log: ExecResult, workdir: str) -> str:
    """Why Maven failed: its whole output (bounded) without stack frames, colours or the worktree's
    own path; :func:`~runners.results.cause_line` finds the cause (the first compiler error, the
    last ``Caused by:``)."""
    return _whole_output(log, workdir, log.stdout + "\n" + log.stderr)


def _javac_error(log: ExecResult, workdir: str) -> str:
    """Why javac failed: its whole output (bounded), the first error (``path:12: error: …``) first."""
    return _whole_output(log, workdir, log.stderr + "\n" + log.stdout)


def _whole_output(log: ExecResult, workdir: str, output: str) -> str:
    lines = [_ANSI.sub("", line).rstrip() for line in without_roots(output, [workdir]).splitlines()]
    kept = [line for line in lines if not _STACK_FRAME.match(line) and not line.startswith(_JVM_NOTE)]
    text = "\n".join(kept).strip()
    return bounded(text) if text else f"exit code {log.exit_code}"


def _discovery_failure(log: ExecResult) -> str:
    """``engine junit-vintage failed to discover tests: <its exception>`` when a test engine failed."""
    lines = [_ANSI.sub("", line).strip() for line in (log.stderr + "\n" + log.stdout).splitlines()]
    for index, line in enumerate(lines):
        match = _DISCOVERY_FAILED.search(line)
        if match:
            cause = next(
                (
                    text
                    for text in lines[index + 1 : index + 6]
                    if re.match(r"^[\w.$]+(Exception|Error): ", text)
                ),
                "",
            )
            return f"the JUnit {match.group(1)} engine failed to discover tests" + (
                f": {cause}" if cause else ""
            )
    return ""


def _minion_launcher(scratch: Path, report: str, jdk: Jdk, user: str | None) -> str:
    """A ``--jvmPath`` for PIT that starts its minions (which run the tests) as ``user``; "" when
    there is none (the host)."""
    if user is None:
        return ""
    uid, _, gid = user.partition(":")
    script = scratch / f"{report}.sh"
    # PIT hands a minion its arguments in files of its own that only root may read
    # (``@/tmp/pitest-args-….args``): they are opened to the minion's user first.
    script.write_text(
        "#!/bin/sh\n"
        'for arg in "$@"; do\n'
        '  case "$arg" in\n'
        '    @*) chmod a+r "${arg#@}" 2>/dev/null ;;\n'
        '    -javaagent:*) path="${arg#-javaagent:}"; chmod a+r "${path%%=*}" 2>/dev/null ;;\n'
        "  esac\n"
        "done\n"
        f'exec setpriv --reuid={uid} --regid={gid or uid} --clear-groups -- {jdk.java} "$@"\n'
    )
    script.chmod(0o755)
    return str(script)


def _exported_mutants(report: Path) -> dict[str, bytes]:
    """The classes of the mutants PIT exported into its ``report`` folder (in the sandbox's scratch
    folder, where the tests cannot reach), by identity."""
    found: dict[str, bytes] = {}
    export = report / "export"
    for details in sorted(export.rglob("details.txt")) if export.is_dir() else []:
        ident = export_identity(details.read_bytes())  # PIT's main process wrote it, as root
        classes = list(details.parent.glob("*.class"))  # the mutated class, named by its binary name
        if ident and len(classes) == 1:
            found[ident] = classes[0].read_bytes()
    return found


def _left(deadline: float) -> float:
    return max(deadline - time.monotonic(), 30.0)


def _javac_refusal(log: ExecResult) -> str:
    """The line with which javac refused its command line, or "". javac says so first and
    compiles nothing; a compile error quotes the source's lines, which may read the same (an
    agent's file holding ``error: file not found`` at column 0), so only the first line counts."""
    for text in (log.stderr, log.stdout):
        lines = [_ANSI.sub("", line).strip() for line in text.splitlines()]
        lines = [line for line in lines if line and not line.startswith(_JVM_NOTE)]
        if lines:
            refused = _JAVAC_REFUSED.match(lines[0])
            return refused.group(0).strip() if refused else ""
    return ""


def _pit_error(log: ExecResult) -> str:
    """PIT's own error (``PitHelpError: No mutations found. …``) rather than its last line
    (``See https://pitest.org for more details.``)."""
    for line in (log.stderr + "\n" + log.stdout).splitlines():
        if "PitHelpError: " in line or "PitError: " in line:
            return line.split("Error: ", 1)[1].strip()
    return _last_line(log)


def _last_line(log: ExecResult) -> str:
    for text in (log.stderr, log.stdout):
        lines = [_ANSI.sub("", line).strip() for line in text.splitlines()]
        # "Picked up JAVA_TOOL_OPTIONS: …": every JVM of a build container says how it finds the proxy.
        lines = [line for line in lines if line and not line.startswith(("at ", _JVM_NOTE))]
        if lines:
            return lines[-1]
    return f"exit code {log.exit_code}"


def _lines_by_test(text: str) -> dict[str, dict[str, frozenset[int]]]:
    """The covered lines by ``package/Source.java`` of each test (``pkg.Class#method``, parameters
    dropped), from the reader's output: a ``T<TAB>test`` line, then ``source<TAB>n,n,...`` lines."""
    tests: dict[str, dict[str, frozenset[int]]] = {}
    current: dict[str, frozenset[int]] = {}
    for line in text.splitlines():
        first, _, rest = line.partition("\t")
        if first == "T":
            class_name, _, method = rest.partition("#")
            current = tests.setdefault(f"{class_name}#{method.split('[')[0]}", {})
        elif rest:
            numbers = frozenset(int(number) for number in rest.split(",") if number.isdigit())
            current[first] = current.get(first, frozenset()) | numbers
    return tests


def _modules_of(sandbox: Sandbox, classes_dirs: Sequence[str]) -> list[str]:
    """The worktree-relative module folder of each ``target/classes`` folder."""
    prefix = sandbox.workdir.rstrip("/") + "/"
    return [folder[len(prefix) :].removesuffix("target/classes").rstrip("/") for folder in classes_dirs]


def _source_candidates(modules: Sequence[str], package: str, source: str) -> Iterable[str]:
    relative = f"{package}/{source}" if package else source
    for module in modules:
        for root in _SOURCE_ROOTS:
            yield _in_module(module, f"{root}/{relative}")
