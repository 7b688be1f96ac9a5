"""Revisions of older eras build as they were built then: coevo's Maven on every backend, the JDK of
their release (or the one a failure points to), levels too old for the JDK raised; and each build
records what it chose and resolved, which a later build of the same task reuses."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
import zipfile
from pathlib import Path

import pytest

from runners import BuildChoice
from runners.environments.revisions import BuiltRevision, prepare_revision
from runners.java.jdk import find_jdks, oldest_level
from runners.java.maven import maven_repository
from runners.java.tools import MAVEN_VERSION, maven_home
from tests.gitrepo import GitRepo
from tests.runners import maven_projects

DATE = "2019-03-01T10:00:00+00:00"
PASS_FAIL = ["pass", "fail"]


def _history(root: Path, kind: str, declared: bool = True) -> tuple[Path, str]:
    """The era project ``kind`` committed once; without ``declared`` its pom names no Java level."""
    maven_projects.era_project(root, kind)
    if not declared:
        pom = root / "pom.xml"
        level = r"\s*<maven\.compiler\.(source|target)>[^<]*</maven\.compiler\.\1>"
        pom.write_text(re.sub(level, "", pom.read_text()))
    repo = GitRepo(root)
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "start", date=DATE)
    return root, repo.git("rev-parse", "HEAD")


def _build(
    work: Path, history: tuple[Path, str], backend: str, record: list[BuildChoice] | None = None
) -> BuiltRevision:
    path, sha = history
    return prepare_revision(work, path, sha, "java", backend, timeout=900, build_record=record or ())


def _outcomes(built: BuiltRevision, tests: list[str]) -> list[str]:
    """Each test's outcome, run where the revision was built (offline, caches read-only)."""
    assert built.status == "ok", built.message
    assert built.environment is not None and built.spec is not None and built.worktree is not None
    runner = built.environment.sandbox(built.worktree, built.repository)
    try:
        run = built.environment.tool.run_tests(runner, built.spec, tests, timeout=300)
    finally:
        runner.close()
    found = {result.test: str(result.outcome) for result in run.results}
    return [found[test] for test in tests]


def _chosen(built: BuiltRevision) -> dict[str, str]:
    return {choice.name: choice.value for choice in built.choices}


@pytest.mark.maven
def test_compiler_release_without_plugin_versions_builds_on_the_host_with_coevos_maven(
    tmp_path: Path,
) -> None:
    """Maven 3.8's default compiler plugin (3.1) ignores ``maven.compiler.release`` and asks javac 17
    for Java 5 ("Source option 5 is no longer supported"); coevo's Maven 3.9 builds it."""
    history = _history(tmp_path / "defaults", "maven-defaults")
    built = _build(tmp_path / "work", history, "local")
    assert _outcomes(built, maven_projects.ERA_TESTS["maven-defaults"]) == PASS_FAIL
    assert _chosen(built)["maven"] == MAVEN_VERSION
    assert f"maven=={MAVEN_VERSION}" in built.installed and "junit:junit:4.13.2" in built.installed
    assert any(entry.startswith("java==") for entry in built.installed)


@pytest.mark.maven
@pytest.mark.docker
def test_source_1_6_builds_raised_on_the_hosts_jdk_and_as_declared_on_jdk_8_in_docker(tmp_path: Path) -> None:
    """JDK 12 and later no longer compile Java 6: on the host (JDK 17 and 25) the level is raised to
    the oldest the JDK compiles, and recorded; coevo's images have JDK 8, which compiles it as it is.
    Both give the same outcomes."""
    history = _history(tmp_path / "six", "source-1.6")
    tests = maven_projects.ERA_TESTS["source-1.6"]
    local = _build(tmp_path / "work", history, "local")
    docker = _build(tmp_path / "work", history, "docker")
    assert _outcomes(local, tests) == _outcomes(docker, tests) == PASS_FAIL
    oldest = oldest_level(min(jdk.feature for jdk in find_jdks()))
    raised = f"maven.compiler.source={oldest} maven.compiler.target={oldest}" if oldest > 6 else None
    assert _chosen(local).get("level") == raised
    assert _chosen(docker)["jdk"] == "8" and "level" not in _chosen(docker)
    assert any(entry.startswith("java==1.8.") for entry in docker.installed)
    # A cross cell compiles a test file into a folder of its own, which JDK 8's javac does not make:
    # every cross cell of a Java 8 revision was a "compile error" of coevo's (joda-time, 2015).
    for built in (docker, local):
        assert built.environment is not None and built.spec is not None and built.worktree is not None
        runner = built.environment.sandbox(built.worktree, built.repository)
        try:
            compiled = built.environment.tool.compile_test_file(
                runner,
                built.spec,
                "src/test/java/demo/CalcTest.java",
                output_dir=".coevo/cross/p1_0_NO/classes",
            )
        finally:
            runner.close()
        assert compiled.ok, compiled.message


@pytest.mark.maven
@pytest.mark.docker
def test_a_java_8_era_project_is_retried_on_jdk_8_in_docker_and_reused_when_built_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its pom declares no level, so it first builds on coevo's default JDK 17, where JAXB is gone;
    the failure names the JDKs that have it, and the build is tried once on JDK 8, which is recorded,
    and the tests run there. Built again, nothing is rebuilt. A host without a JDK 8 to 10 says so."""
    history = _history(tmp_path / "jaxb", "jaxb", declared=False)
    tests = maven_projects.ERA_TESTS["jaxb"]
    started = time.monotonic()
    docker = _build(tmp_path / "work", history, "docker")
    first = time.monotonic() - started
    assert _outcomes(docker, tests) == PASS_FAIL
    assert _chosen(docker)["jdk"] == "8"
    assert _chosen(docker)["retry"] == "JDK 17 -> JDK 8"
    retry = next(choice for choice in docker.choices if choice.name == "retry")
    assert "javax.xml.bind (JAXB) was removed from the JDK after 10" in retry.why
    started = time.monotonic()
    again = _build(tmp_path / "work", history, "docker")
    second = time.monotonic() - started
    assert again.choices == docker.choices and again.installed == docker.installed
    assert _outcomes(again, tests) == PASS_FAIL  # in the JDK 8 environment, not the first plan's
    with capsys.disabled():
        print(f"\n  JAXB project in Docker: built in {first:.1f}s (17, then 8), again in {second:.1f}s")

    local = _build(tmp_path / "work", history, "local")
    if any(jdk.feature <= 10 for jdk in find_jdks()):
        assert _outcomes(local, tests) == PASS_FAIL
    else:
        assert local.status == "env_failed"
        assert "it needs JDK 8 to 10; install one" in local.message


@pytest.mark.maven
def test_a_task_builds_with_the_jdk_and_levels_its_record_names(tmp_path: Path) -> None:
    """Scoring later builds a revision as curation recorded it, not as it would choose now; a build
    made otherwise is made again, and one made so is reused."""
    history = _history(tmp_path / "six", "source-1.6")
    work = tmp_path / "work"
    chosen = _build(work, history, "local")
    newest = max(find_jdks(), key=lambda jdk: jdk.feature).feature
    if newest == int(_chosen(chosen)["jdk"]):
        pytest.skip("this host has one JDK: no other to record")
    record = [
        BuildChoice("jdk", str(newest), "recorded"),
        BuildChoice("level", "maven.compiler.source=8 maven.compiler.target=8", "recorded"),
    ]
    recorded = _build(work, history, "local", record)
    assert _outcomes(recorded, maven_projects.ERA_TESTS["source-1.6"]) == PASS_FAIL
    assert (_chosen(recorded)["jdk"], _chosen(recorded)["level"]) == (str(newest), record[1].value)
    assert any(entry.startswith(f"java=={newest}") for entry in recorded.installed)
    assert _build(work, history, "local", record).worktree == recorded.worktree
    assert _chosen(_build(work, history, "local"))["jdk"] == str(newest)  # no record: what was built


@pytest.mark.maven
def test_a_module_that_needs_a_newer_jdk_retries_the_build_on_it(tmp_path: Path) -> None:
    """Two modules of Java 11: ``core`` builds on the host's oldest JDK, ``app`` reads a jar made
    for a newer Java than that JDK ("class file has wrong version"), so the build is partial. It
    is built once more on the JDK the jar needs, where both modules build; a host without one
    keeps the partial build."""
    jdks = sorted(find_jdks(), key=lambda jdk: jdk.feature)
    oldest, newest = jdks[0], jdks[-1]
    root = tmp_path / "modules"
    maven_projects.multi_module_project(root)
    for path in (root / "pom.xml", root / "core" / "pom.xml", root / "app" / "pom.xml"):
        path.write_text(
            path.read_text().replace(
                "<maven.compiler.release>17<", f"<maven.compiler.release>{oldest.feature}<"
            )
        )
    source = tmp_path / "newer" / "Newer.java"
    source.parent.mkdir()
    source.write_text(
        "package newer;\n\npublic class Newer {\n    public static int two() {\n        return 2;\n    }\n}\n"
    )
    classes = tmp_path / "newer" / "classes"
    subprocess.run([str(newest.home / "bin" / "javac"), "-d", str(classes), str(source)], check=True)
    (root / "app" / "lib").mkdir()
    subprocess.run(
        [
            str(newest.home / "bin" / "jar"),
            "cf",
            str(root / "app" / "lib" / "newer.jar"),
            "-C",
            str(classes),
            ".",
        ],
        check=True,
    )
    app_pom = root / "app" / "pom.xml"
    app_pom.write_text(
        app_pom.read_text().replace(
            "  </dependencies>",
            "    <dependency>\n      <groupId>demo</groupId>\n      <artifactId>newer</artifactId>\n"
            "      <version>1.0</version>\n      <scope>system</scope>\n"
            "      <systemPath>${project.basedir}/lib/newer.jar</systemPath>\n"
            "    </dependency>\n  </dependencies>",
        )
    )
    (root / "app/src/main/java/demo/app").mkdir(parents=True)
    (root / "app/src/main/java/demo/app/Two.java").write_text(
        "package demo.app;\n\npublic class Two {\n"
        "    public static int two() {\n        return newer.Newer.two();\n    }\n}\n"
    )
    repo = GitRepo(root)
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "start", date=DATE)
    assert newest.feature > oldest.feature, "the host has one JDK (coevo's machines have 17 and 25)"
    built = _build(tmp_path / "work", (root, repo.git("rev-parse", "HEAD")), "local")
    assert built.status == "ok", built.message
    assert _chosen(built)["retry"] == f"JDK {oldest.feature} -> JDK {newest.feature}"
    assert "class file" in next(c.why for c in built.choices if c.name == "retry")
    assert _outcomes(built, ["demo.CalcTest#adds", "demo.app.AppTest#usesCore"]) == ["pass", "pass"]


def test_javac_refusing_its_command_line_is_told_from_a_compile_error() -> None:
    """What JDK 8's javac printed for the missing folder (above, before the fix) is coevo's fault;
    an error in the test file is the file's, even when the line javac quotes from it reads like a
    refusal (an agent choosing which tasks it is scored on)."""
    from runners.java.maven import _javac_refusal
    from runners.sandbox.base import ExecResult

    def said(stderr: str, stdout: str = "") -> str:
        return _javac_refusal(ExecResult(2, stdout, stderr, 0.1))

    refused = (
        "javac: directory not found: .coevo/cross/p1_0_NO/classes\nUsage: javac <options> <source files>\n"
    )
    assert said(refused) == "javac: directory not found: .coevo/cross/p1_0_NO/classes"
    assert said("", refused).startswith("javac: directory not found")
    assert said("Picked up JAVA_TOOL_OPTIONS: -Dx=1\nerror: invalid flag: -proc:full\n")
    compile_error = (
        "src/test/java/demo/CalcTest.java:9: error: cannot find symbol\n  symbol: method cube(int)\n"
    )
    assert not said(compile_error)
    quoted = (
        "src/test/java/demo/CalcTest.java:3: error: class, interface, enum, or record expected\n"
        "error: file not found\n^\n1 error\n"
    )
    assert not said(quoted)


_NEEDS_JAVA_MOJO = """package coevo.test;

public final class NeedsJava implements org.apache.maven.plugin.Mojo {
    private org.apache.maven.plugin.logging.Log log;

    public void execute() {}

    public void setLog(org.apache.maven.plugin.logging.Log log) {
        this.log = log;
    }

    public org.apache.maven.plugin.logging.Log getLog() {
        return log;
    }
}
"""


def _needs_java_plugin(version: int) -> str:
    """A Maven plugin (installed in the Maven repository coevo's builds read) whose descriptor
    requires JDK ``version``: Maven refuses it on an older JDK before it runs, whatever the sources.
    Returns its ``<plugin>`` element for a pom."""
    jdk = max(find_jdks(), key=lambda found: found.feature)
    api = maven_home() / "lib" / f"maven-plugin-api-{MAVEN_VERSION}.jar"
    folder = Path(maven_repository()) / "coevo" / "test" / "needs-java-plugin" / f"{version}.1"
    jar = folder / f"needs-java-plugin-{version}.1.jar"
    if not jar.is_file():
        with tempfile.TemporaryDirectory() as scratch:
            source = Path(scratch) / "coevo" / "test" / "NeedsJava.java"
            source.parent.mkdir(parents=True)
            source.write_text(_NEEDS_JAVA_MOJO)
            classes = Path(scratch) / "classes"
            javac = [str(jdk.javac), "--release", "8", "-nowarn", "-cp", str(api), "-d", str(classes)]
            subprocess.run([*javac, str(source)], check=True, capture_output=True)
            descriptor = f"""<plugin>
  <name>needs-java</name><groupId>coevo.test</groupId><artifactId>needs-java-plugin</artifactId>
  <version>{version}.1</version><goalPrefix>needs-java</goalPrefix>
  <requiredJavaVersion>{version}</requiredJavaVersion>
  <mojos><mojo><goal>check</goal><phase>validate</phase><implementation>coevo.test.NeedsJava</implementation>
  <language>java</language><requiresDirectInvocation>false</requiresDirectInvocation>
  <requiresProject>true</requiresProject><requiresReports>false</requiresReports><aggregator>false</aggregator>
  <requiresOnline>false</requiresOnline><inheritedByDefault>true</inheritedByDefault>
  <instantiationStrategy>per-lookup</instantiationStrategy><executionStrategy>once-per-session</executionStrategy>
  <threadSafe>true</threadSafe><parameters/><configuration/><requirements/></mojo></mojos>
  <dependencies/>
</plugin>
"""
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"needs-java-plugin-{version}.1.pom").write_text(
                '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
                "<groupId>coevo.test</groupId><artifactId>needs-java-plugin</artifactId>"
                f"<version>{version}.1</version><packaging>maven-plugin</packaging></project>\n"
            )
            partial = jar.with_suffix(f".{os.getpid()}.tmp")
            with zipfile.ZipFile(partial, "w") as archive:
                archive.writestr("META-INF/maven/plugin.xml", descriptor)
                archive.write(classes / "coevo" / "test" / "NeedsJava.class", "coevo/test/NeedsJava.class")
            partial.replace(jar)
    return f"""
      <plugin>
        <groupId>coevo.test</groupId>
        <artifactId>needs-java-plugin</artifactId>
        <version>{version}.1</version>
        <executions><execution><goals><goal>check</goal></goals></execution></executions>
      </plugin>"""


def _outputs(built: BuiltRevision) -> list[str]:
    """The class files a build made, by path in its worktree."""
    assert built.worktree is not None
    return sorted(str(p.relative_to(built.worktree)) for p in built.worktree.rglob("target/**/*.class"))


@pytest.mark.maven
def test_a_retry_the_poms_decided_is_learnt_by_the_next_revision_with_the_same_poms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The poms of Java ``oldest`` use a plugin that requires the newest JDK: the first revision fails on
    the JDK of its era and is built again on the newest. The next revision, its sources changed and
    its poms the same, starts on the newest (its record says from where) and builds what it builds
    the full way; a revision whose poms changed takes the full way again, and so does one with the
    first poms once the JDKs at hand are others."""
    jdks = sorted({jdk.feature for jdk in find_jdks()})
    assert len(jdks) >= 2, f"this test needs two JDKs on the host; found {jdks}"
    oldest, newest = jdks[0], jdks[-1]
    root = maven_projects.write(
        tmp_path / "enforced",
        {
            "pom.xml": maven_projects.pom(
                "calc",
                maven_projects.JUPITER_DEPS,
                release=str(oldest),
                extra_plugins=_needs_java_plugin(newest),
            ),
            "src/main/java/demo/Calc.java": maven_projects.CALC,
            "src/test/java/demo/CalcTest.java": maven_projects.JUPITER_TEST,
        },
    )
    repo = GitRepo(root)
    shas = {}
    for name, change in (
        ("first", None),
        ("same poms", ("src/main/java/demo/Calc.java", "int sum = a + b;", "int sum = b + a;")),
        ("poms changed", ("pom.xml", "<version>1.0</version>", "<version>1.1</version>")),
        ("poms back", ("pom.xml", "<version>1.1</version>", "<version>1.0</version>")),
    ):
        if change is not None:
            path, old, new = change
            (root / path).write_text((root / path).read_text().replace(old, new, 1))
        repo.git("add", "-A")
        repo.git("commit", "-q", "-m", name, date=DATE)
        shas[name] = repo.git("rev-parse", "HEAD")

    def retry(built: BuiltRevision) -> BuildChoice:
        assert built.status == "ok", built.message
        return next(choice for choice in built.choices if choice.name == "retry")

    work = tmp_path / "work"
    first = _build(work, (root, shas["first"]), "local")
    assert retry(first).value == f"JDK {oldest} -> JDK {newest}"
    assert f"the build requires JDK {newest}" in retry(first).why and "learnt" not in retry(first).why
    learnt = _build(work, (root, shas["same poms"]), "local")
    assert retry(learnt).value == f"JDK {oldest} -> JDK {newest}"
    assert f"learnt from the build of {shas['first'][:12]}" in retry(learnt).why, retry(learnt).why
    # Built alone, the full way (a failure on the era's JDK, then the retry), it is the same build.
    alone = _build(tmp_path / "alone", (root, shas["same poms"]), "local")
    assert "learnt" not in retry(alone).why and retry(alone).value == retry(learnt).value
    assert _chosen(alone)["jdk"] == _chosen(learnt)["jdk"] == str(newest)
    assert _outputs(alone) == _outputs(learnt) != []
    # Other poms: nothing learnt applies.
    changed = _build(work, (root, shas["poms changed"]), "local")
    assert "learnt" not in retry(changed).why and retry(changed).value == f"JDK {oldest} -> JDK {newest}"
    # The first poms again, but one more JDK at hand (a home listed in $COEVO_JDKS): what was learnt
    # with the others does not apply.
    another = tmp_path / "another-jdk"
    (another / "bin").mkdir(parents=True)
    (another / "release").write_text(f'JAVA_VERSION="{newest - 1}.0.1"\n')
    for tool in ("java", "javac"):
        (another / "bin" / tool).symlink_to(max(find_jdks(), key=lambda jdk: jdk.feature).home / "bin" / tool)
    monkeypatch.setenv("COEVO_JDKS", str(another))
    assert newest - 1 in {jdk.feature for jdk in find_jdks()}
    back = _build(work, (root, shas["poms back"]), "local")
    assert "learnt" not in retry(back).why and retry(back).value == f"JDK {oldest} -> JDK {newest}"
