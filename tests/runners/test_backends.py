"""Docker and the host agree: same build, same per-test outcomes, same covered lines."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from runners import FolderTree, detect_env
from runners.environment import BackendUnsupported, prepare_environment
from tests.runners import maven_projects

TESTS = ["demo.CalcTest#adds", "demo.CalcTest#addsWrongly", "demo.CalcTest#dividesByZero",
         "demo.CalcTest#addsZero", "demo.CalcTest#noSuchTest"]  # fmt: skip


def _run(
    backend: str, root: Path, tests: list[str] = TESTS
) -> tuple[dict[str, str], dict[str, dict[str, frozenset[int]]]]:
    spec = detect_env(FolderTree(root), "java")
    environment, _ = prepare_environment(spec, backend)
    assert environment.backend == backend
    builder = environment.sandbox(root, network=True)
    try:
        assert environment.tool.build(builder, spec, timeout=900).ok
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


def test_python_in_docker_is_refused_in_one_line() -> None:
    spec = detect_env(FolderTree(Path(__file__).parents[2]), "python")
    with pytest.raises(BackendUnsupported, match="use --backend local"):
        prepare_environment(spec, "docker")
