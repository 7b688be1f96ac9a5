"""The JDK of a revision's era, the failures another JDK explains, and the record of both."""

from __future__ import annotations

import pytest

from runners import EnvSpec
from runners.java.jdk import ERA_JDKS, NoSuitableJdk, jdk_failure, plan_jdk, recorded_plan, retry_jdk
from runners.java.maven import resolved_coordinates

SOURCE_TARGET = ("maven.compiler.source", "maven.compiler.target")
RELEASE = ("maven.compiler.release", *SOURCE_TARGET)
IMAGES = "in coevo's images"
RAISED_TO_7 = (("maven.compiler.source", "7"), ("maven.compiler.target", "7"))

JAXB_MISSING = """[ERROR] COMPILATION ERROR :
[ERROR] src/main/java/demo/Hex.java:[3,22] package javax.xml.bind does not exist
[ERROR] src/main/java/demo/Hex.java:[7,16] cannot find symbol
  symbol:   variable DatatypeConverter
  location: class demo.Hex
"""
"""What Maven 3.9 with JDK 17 printed for the JAXB fixture (tests/runners/maven_projects.py)."""
SOURCE_5 = """[ERROR] COMPILATION ERROR :
[ERROR] Source option 5 is no longer supported. Use 7 or later.
[ERROR] Target option 5 is no longer supported. Use 7 or later.
"""
"""What Maven 3.8.7's default compiler plugin (3.1) printed with JDK 17 for ``maven.compiler.release``."""


def spec(release: str, level: tuple[str, ...]) -> EnvSpec:
    return EnvSpec("java", release, "maven", modules=("",), java_level=level)


@pytest.mark.parametrize(
    ("release", "level", "available", "jdk", "raised"),
    [
        ("1.8", SOURCE_TARGET, ERA_JDKS, 8, ()),  # the JDK of its era, directly
        ("8", RELEASE, ERA_JDKS, 11, ()),  # --release needs javac 9 or later
        ("1.6", SOURCE_TARGET, ERA_JDKS, 8, ()),
        ("1.6", SOURCE_TARGET, (17, 25), 17, RAISED_TO_7),
        ("8", RELEASE, (17, 25), 17, ()),
        ("21", RELEASE, (17, 25), 25, ()),
    ],
)  # fmt: skip
def test_the_oldest_jdk_that_compiles_the_declared_release_and_levels_raised_below_it(
    release: str, level: tuple[str, ...], available: tuple[int, ...], jdk: int, raised: tuple
) -> None:
    plan = plan_jdk(spec(release, level), available)
    assert (plan.feature, plan.raised) == (jdk, raised)
    assert plan.maven_args() == [f"-D{name}={value}" for name, value in raised]
    assert [choice.name for choice in plan.choices()] == ["jdk", "level"] if raised else ["jdk"]


def test_no_jdk_new_enough_is_a_missing_toolchain_naming_what_to_install() -> None:
    with pytest.raises(NoSuitableJdk, match=r"no installed JDK compiles Java 21 \(JDK 8, 17\); install one"):
        plan_jdk(spec("21", RELEASE), (8, 17))


def test_a_removed_api_retries_on_the_newest_older_jdk_once_and_says_why() -> None:
    undeclared = spec("17", ())  # no level in the poms: 17 is coevo's default, not a bound
    first = plan_jdk(undeclared, ERA_JDKS, IMAGES)
    assert first.feature == 17
    retry = retry_jdk(first, undeclared, JAXB_MISSING, ERA_JDKS, IMAGES)
    assert retry is not None and (retry.feature, retry.retry_of) == (8, 17)
    assert [(c.name, c.value) for c in retry.choices()] == [("jdk", "8"), ("retry", "JDK 17 -> JDK 8")]
    assert "javax.xml.bind (JAXB) was removed from the JDK after 10" in retry.choices()[1].why
    assert retry_jdk(retry, undeclared, JAXB_MISSING, ERA_JDKS, IMAGES) is None  # once only
    # A release that only newer JDKs compile is no reason to go older; a host without one says so.
    declared = spec("17", RELEASE)
    assert retry_jdk(plan_jdk(declared, ERA_JDKS), declared, JAXB_MISSING, ERA_JDKS) is None
    with pytest.raises(NoSuitableJdk, match=r"no installed JDK can: it needs JDK 8 to 10; install one"):
        retry_jdk(plan_jdk(undeclared, (17, 25)), undeclared, JAXB_MISSING, (17, 25))
    assert retry_jdk(first, undeclared, "[ERROR] cannot find symbol Foo", ERA_JDKS, IMAGES) is None


@pytest.mark.parametrize(
    ("output", "jdk", "oldest", "newest"),
    [
        (JAXB_MISSING, 17, None, 10),
        (SOURCE_5, 17, None, 8),  # javac 9 to 11 compile Java 6 at the oldest, 8 still compiles 5
        ("error: invalid target release: 21", 17, 21, None),
        ("java.lang.reflect.InaccessibleObjectException: Unable to make field private final byte[] "
         "java.lang.String.value accessible: module java.base does not \"opens java.lang\" to unnamed module",
         17, None, 15),
        ("class file has wrong version 55.0, should be 52.0", 8, 11, None),
        # gson's proto module of 2026 builds with protobuf-maven-plugin 4, which needs JDK 17.
        ("[ERROR] The plugin io.github.ascopes:protobuf-maven-plugin:4.1.3 has unmet prerequisites:\n"
         "[ERROR] \tRequired Java version 17 is not met by current version: 11.0.32.1", 11, 17, None),
        ("Rule 0: org.apache.maven.enforcer.rules.version.RequireJavaVersion failed with message:\n"
         "Detected JDK version 1.8.0-462 (JAVA_HOME=/usr/lib/jvm/java-8) is not in the allowed range [11,).",
         8, 11, None),
        ("Required Java version 17 is not met by current version: 21.0.1", 21, None, None),
        ("Tests run: 3, Failures: 1", 17, None, None),
    ],
)  # fmt: skip
def test_failures_another_jdk_explains(output: str, jdk: int, oldest: int | None, newest: int | None) -> None:
    failure = jdk_failure(output, jdk)
    if oldest is None and newest is None:
        assert failure is None
    else:
        assert failure is not None and (failure.oldest, failure.newest) == (oldest, newest)
        # Only a required Java version is decided by the build files before any source compiles.
        required = "Required Java version" in output or "RequireJavaVersion" in output
        assert failure.by_build_files == required


def test_a_recorded_plan_is_read_back_from_its_build_record() -> None:
    plan = plan_jdk(spec("1.6", SOURCE_TARGET), (17, 25))
    retried = retry_jdk(plan_jdk(spec("17", ()), (8, 17)), spec("17", ()), JAXB_MISSING, (8, 17))
    assert retried is not None
    for made in (plan, retried):
        assert recorded_plan(made.choices()) == made
    assert recorded_plan(()) is None


def test_resolved_coordinates_from_a_classpath() -> None:
    classpath = [
        "/work/target/test-classes",
        "/m2/junit/junit/4.13.2/junit-4.13.2.jar",
        "/tail/org/hamcrest/hamcrest-core/1.3/hamcrest-core-1.3.jar",
        "/m2/org/openjfx/javafx-base/21/javafx-base-21-linux.jar",
        "/m2/com/acme/lib/1.0-SNAPSHOT/lib-1.0-20240102.030405-7.jar",
        "/elsewhere/x.jar",
    ]
    assert resolved_coordinates(classpath, ["/m2", "/tail/"]) == [
        "com.acme:lib:1.0-SNAPSHOT:lib-1.0-20240102.030405-7.jar",
        "junit:junit:4.13.2",
        "org.hamcrest:hamcrest-core:1.3",
        "org.openjfx:javafx-base:21:linux",
    ]
