"""Java's row of the toolchain table (:data:`runners.toolchains.TOOLCHAINS`): the JDK a revision
gets on each backend and Maven set up with it (:func:`java_environment`), its base image, another
revision's test class compiled and run on a built revision (:func:`run_cross`), and PIT on the
focal methods (:func:`mutation_score`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..buildtools import BuildResult, BuiltSide, TestRun
from ..environments.environment import Environment, EnvironmentRequest, base_images
from ..environments.envspec import EnvSpec, maven_download_urls, maven_repository_urls
from ..environments.images import (
    IMAGE_DEPS_REPO,
    IMAGE_JDKS,
    IMAGE_JDKS_SOURCE,
    IMAGE_PER_TEST_COVERAGE,
    IMAGE_PIT,
    ImagePlan,
    base_image_plan,
    build_image,
    deps_image_plan,
    host_ca_bundle,
    image_jdk_home,
    image_tools_java,
)
from ..mutation import MutationResult
from ..results import Outcome, TestResult
from ..sandbox.docker_sandbox import Mount, docker_client
from ..sandbox.egress import MAVEN_SETTINGS, egress_policy
from .jdk import JDKS_ENV, Jdk, JdkPlan, NoSuitableJdk, find_jdks, plan_jdk
from .maven import MavenTool, maven_repository
from .pit import java_focal_methods, only_these_tests
from .tools import TOOLS, tool_jar

CROSS_ROOT = ".coevo/cross"
"""Where another revision's test class is compiled, under its run's tag (``<tag>/classes``)."""
_IMAGE_TOOLS = "/opt/coevo/tools"
_IMAGE_M2 = "/root/.m2/repository"
_IMAGE_SHARED_M2 = "/opt/coevo/shared-m2"


def jdk_plan(spec: EnvSpec, backend: str) -> JdkPlan:
    """The JDK a Java revision builds with on ``backend`` (``docker`` or ``local``), and why: among
    coevo's images' JDKs in Docker, the installed ones on the host (:func:`~runners.java.jdk.plan_jdk`)."""
    if backend == "docker":
        return plan_jdk(spec, IMAGE_JDKS, IMAGE_JDKS_SOURCE)
    return plan_jdk(spec, [jdk.feature for jdk in find_jdks()])


def jdk_era(spec: EnvSpec, backend: str) -> str | None:
    """The JDK plan of the revision's era on ``backend`` and the JDKs at hand there, as one text:
    what a retry learnt from a revision with the same build files holds for only while these are
    the same (:mod:`runners.environments.revisions`). None when no JDK fits."""
    try:
        plan = jdk_plan(spec, backend)
    except NoSuitableJdk:
        return None
    available = IMAGE_JDKS if backend == "docker" else sorted({jdk.feature for jdk in find_jdks()})
    return json.dumps([plan.as_json(), list(available)], sort_keys=True)


def image_plan(
    spec: EnvSpec, from_images: Mapping[str, str] | None = None, jdk: int | None = None
) -> ImagePlan:
    """The base image plan of a Java revision on this host: its CA bundle, coevo's tools, JDK
    ``jdk`` (default: the one the spec's era asks for, :func:`jdk_plan`)."""
    jars = [tool_jar(name) for name in TOOLS]
    return base_image_plan(
        spec,
        base_images(from_images),
        ca_bundle=host_ca_bundle(),
        tool_jars={path.name: path for path in jars},
        maven_archive=tool_jar("maven"),
        jdk=jdk_plan(spec, "docker").feature if jdk is None else jdk,
    )


def java_environment(request: EnvironmentRequest) -> tuple[Environment, bool]:
    """Maven with the request's JDK (else the JDK of the revision's era, :func:`jdk_plan`): an
    installed JDK on the host; in Docker, coevo's image of that JDK and (with build files) a deps
    image over it. Raises :class:`~runners.java.jdk.NoSuitableJdk` when that JDK cannot be had."""
    spec, build_files, build_args = request.spec, request.build_files, request.build_args
    if request.backend == "local":
        local = request.jdk or jdk_plan(spec, "local")
        tool = MavenTool(jdk=_installed_jdk(local.feature), plan=local, maven_args=build_args)
        return Environment("local", spec, tool, jdk=local), True
    java = request.jdk or jdk_plan(spec, "docker")
    plan = image_plan(spec, request.from_images, java.feature)
    client = docker_client()
    cached = build_image(client, plan)
    if build_files:
        plan = deps_image_plan(plan, build_files, [*java.maven_args(), *build_args])
        egress = egress_policy("java", maven_repository_urls(build_files))
        cached = build_image(client, plan, egress) and cached
    tools_java = image_tools_java(java.feature)
    maven = MavenTool(
        maven_repo=_IMAGE_M2,
        tool_path=lambda name: f"{_IMAGE_TOOLS}/{TOOLS[name].file_name}",
        jdk=Jdk(home=Path(image_jdk_home(java.feature)), feature=java.feature),
        plan=java,
        maven="mvn",
        tools_jdk=Jdk(Path(image_jdk_home(tools_java)), tools_java) if tools_java else None,
        maven_args=build_args,
        repo_tail=",".join([IMAGE_DEPS_REPO, _IMAGE_SHARED_M2] if build_files else [_IMAGE_SHARED_M2]),
        pit_dir=IMAGE_PIT,
        per_test_folder=IMAGE_PER_TEST_COVERAGE,
    )
    environment = Environment(
        "docker",
        spec,
        maven,
        plan,
        (Mount(Path(maven_repository()), _IMAGE_SHARED_M2),),
        revision_repository=_IMAGE_M2,
        jdk=java,
        build_mounts=(Mount(MAVEN_SETTINGS, "/root/.m2/settings.xml"),),
        download_urls=maven_download_urls,
    )
    return environment, cached


def _installed_jdk(feature: int) -> Jdk:
    """The installed JDK ``feature`` (the oldest home of it)."""
    for jdk in find_jdks():
        if jdk.feature == feature:
            return jdk
    raise NoSuitableJdk(f"JDK {feature} is not installed; install it or list its home in ${JDKS_ENV}")


def _maven(side: BuiltSide) -> MavenTool:
    tool = side.tool
    assert isinstance(tool, MavenTool)
    return tool


def runs_tests_of(side: BuiltSide, test_file: str) -> bool:
    """Whether the module holding ``test_file`` built (a partial Maven build lacks some)."""
    return side.spec.module_for(test_file) in _maven(side).built_modules(side.sandbox, side.spec)


def method_name(test: str) -> str:
    """The method of a test id (``pkg.Class#method``)."""
    return test.split("#", 1)[1]


def run_cross(
    side: BuiltSide,
    test_file: str,
    content: bytes,
    ids: Sequence[str],
    tag: str,
    timeout: float,
    coverage: bool,
) -> TestRun:
    """``ids`` of ``content`` (another revision's ``test_file``) compiled into a folder of their
    own, put first on the classpath, and run on ``side``'s code."""
    compiled = _compile(side, test_file, content, tag, timeout)
    if not compiled.ok:
        return TestRun(tuple(TestResult(t, Outcome.COMPILE_ERROR, compiled.message) for t in ids))
    return _maven(side).run_tests(
        side.sandbox,
        side.spec,
        ids,
        timeout,
        coverage=coverage,
        module=side.spec.module_for(test_file),
        extra_classpath=[f"{CROSS_ROOT}/{tag}/classes"],
    )


def mutation_score(
    side: BuiltSide,
    test_file: str,
    content: bytes,
    tests: Sequence[str],
    focal: Sequence[dict],
    tag: str,
    timeout: float,
    only_focal: bool = True,
    baseline: TestRun | None = None,
) -> MutationResult | None:
    """PIT's mutants of the focal methods, against ``tests`` of ``content`` as :func:`run_cross`
    compiled them under ``tag`` (see :meth:`~runners.environments.sides.Side.mutation_score`)."""
    sources = {f["file"]: data for f in focal if (data := side.sandbox.read_file(f["file"])) is not None}
    methods = java_focal_methods(focal, sources)
    if not methods:
        return None
    test_class, names = tests[0].split("#")[0], [test.split("#")[1] for test in tests]
    # Compiled where the run on this tree's code would put it (a judge tree is fresh for each
    # phase): the test's class location says nothing of the phase.
    pruned = only_these_tests(content, "java", names)
    if not _compile(side, test_file, pruned, tag, timeout).ok:
        _compile(side, test_file, content, tag, timeout)  # PIT gets the whole class
    return _maven(side).mutation(
        side.sandbox,
        side.spec,
        test_class,
        names,
        methods,
        timeout,
        module=side.spec.module_for(test_file),
        extra_classpath=[f"{CROSS_ROOT}/{tag}/classes"],
        only_focal=only_focal,
    )


def _compile(side: BuiltSide, test_file: str, content: bytes, tag: str, timeout: float) -> BuildResult:
    """``content`` compiled once into ``.coevo/cross/<tag>/classes``, against ``side``'s revision."""
    source = f"{CROSS_ROOT}/{tag}/src/{test_file}"
    classes = f"{CROSS_ROOT}/{tag}/classes"
    if side.sandbox.read_file(source) == content and side.sandbox.read_file(f"{classes}/.ok") is not None:
        return BuildResult(True, "")
    side.sandbox.write_file(source, content)
    compiled = _maven(side).compile_test_file(
        side.sandbox,
        side.spec,
        source,
        classpath_module=side.spec.module_for(test_file),
        timeout=timeout,
        output_dir=classes,
    )
    if compiled.ok:
        side.sandbox.write_file(f"{classes}/.ok", b"")
    return compiled
