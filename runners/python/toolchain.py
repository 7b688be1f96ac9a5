"""Python's row of the toolchain table (:data:`runners.toolchains.TOOLCHAINS`): the interpreter a
revision gets on each backend and pytest set up with it (:func:`python_environment`), its base
image, another revision's test file run beside the code under a name of its own
(:func:`run_cross`), and Cosmic Ray's mutants of the focal functions (:func:`mutation_score`)."""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from ..buildtools import BuiltSide, TestRun
from ..environments.environment import Environment, EnvironmentRequest, base_images
from ..environments.envspec import EnvSpec, resolve_python
from ..environments.images import ImagePlan, base_image_plan, build_image, docker_pythons, host_ca_bundle
from ..environments.worktree import TreeReader
from ..mutation import MutationResult
from ..results import Outcome, TestResult
from ..sandbox.docker_sandbox import Mount, docker_client
from .mutants import python_mutants
from .pytest_tool import PytestTool
from .venvs import FoundPython, NoPython, host_pythons, pip_urls, venvs_root

COPY_PREFIX = "test_coevo_"
"""How the copy of a Python test file that :func:`run_cross` runs under a tag begins:
``test_coevo_<tag>__test_make.py`` beside ``test_make.py`` (a method run alone: tag
``<tag>_m<i>``), so its module's name differs (``tests.test_coevo_<tag>__test_make``) and a test
that checks that name fails there alone."""


def image_plan(
    spec: EnvSpec, from_images: Mapping[str, str] | None = None, jdk: int | None = None
) -> ImagePlan:
    """The base image plan of a Python revision on this host (with its CA bundle); ``jdk`` is not used."""
    return base_image_plan(spec, base_images(from_images), ca_bundle=host_ca_bundle())


def python_environment(request: EnvironmentRequest) -> tuple[Environment, bool]:
    """pytest with the interpreter chosen for the revision among the backend's (pyenv's on the
    host, the base images' in Docker): the environment's spec says which, and why in its last
    note. Venvs live on the host; in Docker they are mounted at the same path, keyed by the
    container's interpreter."""
    spec, from_images = request.spec, request.from_images
    if request.backend == "local":
        present = host_pythons()
        if not present:
            raise NoPython("no Python 3 interpreter found on PATH or in pyenv; install python3")
        spec = resolve_python(spec, present, "host")
        return Environment("local", spec, PytestTool()), True
    spec = resolve_python(spec, docker_pythons(base_images(from_images)), "Docker")
    plan = image_plan(spec, from_images)
    cached = build_image(docker_client(), plan)
    python = plan.key.removeprefix("python")
    interpreter = FoundPython(Path(f"/usr/bin/python{python}"), f"{python} in {plan.tag}")
    venvs = venvs_root()
    environment = Environment(
        "docker",
        spec,
        PytestTool(python=interpreter),
        plan,
        (Mount(venvs, str(venvs)),),
        same_paths=True,
        download_urls=_pip_urls,
    )
    return environment, cached


def _pip_urls(tree: TreeReader, spec: EnvSpec) -> list[str]:
    return pip_urls(spec, tree)


def method_name(test: str) -> str:
    """The function of a pytest node id (``tests/test_a.py::TestA::test_b[1]`` → ``test_b[1]``)."""
    return test.rsplit("::", 1)[-1]


def run_cross(
    side: BuiltSide,
    test_file: str,
    content: bytes,
    ids: Sequence[str],
    tag: str,
    timeout: float,
    coverage: bool,
) -> TestRun:
    """``ids`` of ``content`` (another revision's ``test_file``) run from a copy beside
    ``test_file`` (:data:`COPY_PREFIX`) on ``side``'s code, their results under the ids asked for."""
    with _placed(side, test_file, content, ids, tag) as placed:
        run = side.tool.run_tests(side.sandbox, side.spec, list(placed.values()), timeout, coverage=coverage)
    back = {placed_id: test for test, placed_id in placed.items()}
    results = tuple(dataclasses.replace(r, test=back.get(r.test, r.test)) for r in run.results)
    missing = tuple(TestResult(t, Outcome.ABSENT, "not a test of this file") for t in ids if t not in placed)
    cover = {back.get(test, test): lines for test, lines in run.coverage.items()}
    return TestRun(results + missing, cover, run.log)


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
    """Cosmic Ray's mutants of the focal functions against ``tests`` of ``content``, placed as
    :func:`run_cross` places them (see :meth:`~runners.environments.sides.Side.mutation_score`);
    ``baseline``, that run with coverage, spares running the tests unmutated again."""
    tool = side.tool
    assert isinstance(tool, PytestTool)
    sources = {f["file"]: data for f in focal if (data := side.sandbox.read_file(f["file"])) is not None}
    mutants = python_mutants(focal, sources)
    if not mutants:
        return None
    with _placed(side, test_file, content, tests, tag) as placed:
        if baseline is not None:  # under the ids of the placed copy
            baseline = TestRun(
                tuple(
                    dataclasses.replace(r, test=placed[r.test]) for r in baseline.results if r.test in placed
                ),
                {placed[test]: lines for test, lines in baseline.coverage.items() if test in placed},
                baseline.log,
            )
        result = tool.mutation(side.sandbox, side.spec, list(placed.values()), mutants, timeout, baseline)
    back = {placed_id: test for test, placed_id in placed.items()}  # the file's own ids
    return dataclasses.replace(
        result,
        mutants=tuple(
            dataclasses.replace(
                m,
                killing_tests=tuple(back.get(t, t) for t in m.killing_tests),
                asserted_by=tuple(back.get(t, t) for t in m.asserted_by),
            )
            for m in result.mutants
        ),
        unstable=tuple(back.get(t, t) for t in result.unstable),
    )


@contextmanager
def _placed(
    side: BuiltSide, test_file: str, content: bytes, ids: Sequence[str], tag: str
) -> Iterator[dict[str, str]]:
    """``content`` beside ``test_file`` under a unique name while the block runs; yields the
    ids of ``test_file`` asked for, each with its id in the placed copy."""
    folder, name = posixpath.split(test_file)
    placed = posixpath.join(folder, f"{COPY_PREFIX}{tag}__{name}")
    # Through the sandbox: the build or an earlier test may have left a link at that path.
    side.sandbox.write_file(placed, content)
    try:
        yield {test: placed + test[len(test_file) :] for test in ids if test.startswith(test_file + "::")}
    finally:
        (side.worktree / placed).unlink(missing_ok=True)
