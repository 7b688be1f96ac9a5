"""Docker and the host agree: same build, same per-test outcomes, same covered lines."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from runners import FolderTree, detect_env
from runners.environments.envspec import maven_build_files
from runners.environments.images import deps_image_plan
from runners.toolchains import image_plan, prepare_environment
from tests.runners import maven_projects
from tests.runners import python_projects as pytest_projects

TESTS = ["demo.CalcTest#adds", "demo.CalcTest#addsWrongly", "demo.CalcTest#dividesByZero",
         "demo.CalcTest#addsZero", "demo.CalcTest#noSuchTest"]  # fmt: skip


def _run(
    backend: str, root: Path, tests: list[str] = TESTS, language: str = "java", network: bool = True
) -> tuple[dict[str, str], dict[str, dict[str, frozenset[int]]]]:
    """Builds ``root`` (the network on unless told), then runs ``tests`` offline with coverage.

    Java in Docker builds in the deps image of the project's poms.
    """
    spec = detect_env(FolderTree(root), language)
    build_files = maven_build_files(FolderTree(root), spec) if language == "java" else None
    environment, _ = prepare_environment(spec, backend, build_files)
    assert environment.backend == backend
    builder = environment.builder(root, network=network)
    try:
        built = environment.tool.build(builder, spec, timeout=900)
        assert built.ok, built.message
    finally:
        builder.close()
    runner = environment.sandbox(root)
    try:
        run = environment.tool.run_tests(runner, spec, tests, timeout=300, coverage=True)
    finally:
        runner.close()
    outcomes = {r.test: str(r.outcome) for r in run.results}
    return outcomes, {test: dict(cov.lines) for test, cov in run.coverage.items()}


@pytest.mark.docker
@pytest.mark.maven
def test_docker_and_local_agree_on_a_maven_project(tmp_path: Path) -> None:
    local = _run("local", maven_projects.jupiter_project(tmp_path / "local"))
    docker = _run("docker", maven_projects.jupiter_project(tmp_path / "docker"))
    assert local == docker
    outcomes, coverage = local
    assert outcomes == {
        "demo.CalcTest#adds": "pass",
        "demo.CalcTest#addsWrongly": "fail",
        "demo.CalcTest#dividesByZero": "error",
        "demo.CalcTest#addsZero": "pass",
        "demo.CalcTest#noSuchTest": "absent",
    }
    assert coverage["demo.CalcTest#adds"] == {"src/main/java/demo/Calc.java": maven_projects.CALC_ADD_LINES}


@pytest.mark.docker
@pytest.mark.maven
@pytest.mark.parametrize(
    ("project", "tests"),
    [
        (maven_projects.junit4_project, ["demo.CalcTest#adds", "demo.CalcTest#addsWrongly",
                                         "demo.CalcTest#dividesByZero", "demo.AddZeroTest#addsZero"]),
        (maven_projects.multi_module_project, ["demo.CalcTest#adds", "demo.app.AppTest#usesCore"]),
    ],
    ids=["junit4", "multi-module"],
)  # fmt: skip
def test_docker_and_local_agree_on_junit4_and_multi_module(
    tmp_path: Path, project: Callable[[Path], Path], tests: list[str]
) -> None:
    local = _run("local", project(tmp_path / "local"), tests)
    docker = _run("docker", project(tmp_path / "docker"), tests)
    assert local == docker
    assert "pass" in local[0].values()
    assert all(local[1].get(test) for test, outcome in local[0].items() if outcome == "pass")


@pytest.mark.docker
@pytest.mark.maven
def test_deps_image_builds_offline_and_a_changed_pom_rebuilds_only_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deps image holds everything the build needs: no network, an empty shared repository."""
    shared = tmp_path / "empty-m2"
    monkeypatch.setenv("COEVO_M2", str(shared))
    root = maven_projects.jupiter_project(tmp_path / "project")
    outcomes, _ = _run("docker", root, ["demo.CalcTest#adds", "demo.CalcTest#addsWrongly"], network=False)
    assert outcomes == {"demo.CalcTest#adds": "pass", "demo.CalcTest#addsWrongly": "fail"}
    assert not list(shared.rglob("*.jar"))  # nothing was fetched into the shared repository

    spec = detect_env(FolderTree(root), "java")
    base = image_plan(spec)
    deps = deps_image_plan(base, maven_build_files(FolderTree(root), spec))
    (root / "src/main/java/demo/Calc.java").write_text(maven_projects.CALC.replace("a + b", "b + a"))
    assert deps_image_plan(image_plan(spec), maven_build_files(FolderTree(root), spec)).tag == deps.tag
    (root / "pom.xml").write_text((root / "pom.xml").read_text().replace("<version>1.0", "<version>1.1", 1))
    changed = deps_image_plan(image_plan(spec), maven_build_files(FolderTree(root), spec))
    assert changed.tag != deps.tag and changed.base == deps.base == base.tag


PYTHON_PROJECTS = {
    "pyproject": {
        "pyproject.toml": pytest_projects.PYPROJECT,
        "src/calc/__init__.py": pytest_projects.CALC_INIT,
        "src/calc/core.py": pytest_projects.CALC_CORE,
        "tests/test_core.py": pytest_projects.CALC_TESTS,
        "tests/test_new.py": pytest_projects.CALC_NEW_TEST,
    },
    "requirements": {
        "requirements.txt": "six==1.16.0\n",
        "calc/__init__.py": "",
        "calc/core.py": pytest_projects.CALC_CORE,
        "tests/test_core.py": "import six\n\nfrom calc.core import add\n\n\n"
        "def test_add():\n    assert six.PY3 and add(1, 2) == 3\n\n\n"
        "def test_fail():\n    assert add(1, 1) == 3\n",
    },
}
PYTHON_TESTS = [
    "tests/test_core.py::test_add",
    "tests/test_core.py::test_fail",
    "tests/test_core.py::test_error",
    "tests/test_core.py::test_param[1-2]",
    "tests/test_core.py::TestCalc::test_sub",
    "tests/test_core.py::test_skipped",
    "tests/test_core.py::test_version_from_metadata",
    "tests/test_new.py::test_mul",
    "tests/test_core.py::test_nope",
]


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(PYTHON_PROJECTS))
def test_docker_and_local_agree_on_python_projects(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = PYTHON_PROJECTS[kind]
    local = _run("local", pytest_projects.write(tmp_path / "local", project), PYTHON_TESTS, "python")
    docker = _run("docker", pytest_projects.write(tmp_path / "docker", project), PYTHON_TESTS, "python")
    assert local == docker
    outcomes, coverage = local
    assert outcomes["tests/test_core.py::test_add"] == "pass"
    assert outcomes["tests/test_core.py::test_fail"] == "fail"
    assert outcomes["tests/test_core.py::test_nope"] == "absent"
    core = "src/calc/core.py" if kind == "pyproject" else "calc/core.py"
    assert coverage["tests/test_core.py::test_add"] == {core: frozenset({2})}
    if kind == "pyproject":
        assert outcomes["tests/test_core.py::test_error"] == "error"
        assert outcomes["tests/test_new.py::test_mul"] == "compile_error"  # mul does not exist
        assert outcomes["tests/test_core.py::test_version_from_metadata"] == "pass"
