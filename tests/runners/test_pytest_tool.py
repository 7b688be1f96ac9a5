"""PytestTool and shared venvs on tiny real projects: builds, outcomes, timeouts, coverage, reuse.

The venvs are built from PyPI (pytest, coverage, six, setuptools) into a folder private to
this module, and shared between its tests; the tests that build one are marked slow.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from runners import EnvSpec, FolderTree, LocalSandbox, Outcome, detect_env, get_build_tool
from runners.python import venvs
from runners.python.pytest_tool import PytestTool, _in_worktree
from runners.python.venvs import (
    MARKER,
    SEEDS_ENV,
    VENVS_ENV,
    VenvBuildFailed,
    _worth_retrying,
    dates_installs,
    environment_key,
    find_python,
    import_paths,
    locate_python,
    pip_pin,
    tool_pins,
    venv_for,
    venv_note,
)
from runners.results import cause_line
from runners.sandbox.base import ExecResult
from tests.runners.python_projects import (
    CALC_CORE,
    CALC_INIT,
    CALC_NEW_TEST,
    CALC_TESTS,
    PYPROJECT,
    write,
)

PLAIN = EnvSpec("python", "3.11", "pip", install=(("pytest", "coverage"),))
"""A spec with only the test tools, shared by the projects that need no dependencies."""


@pytest.fixture(scope="module")
def calc(tmp_path_factory: pytest.TempPathFactory, venvs: Path) -> Path:
    """A pyproject project, src layout, test extra, version read from its metadata."""
    return write(
        tmp_path_factory.mktemp("calc"),
        {
            "pyproject.toml": PYPROJECT,
            "src/calc/__init__.py": CALC_INIT,
            "src/calc/core.py": CALC_CORE,
            "tests/test_core.py": CALC_TESTS,
            "tests/test_new.py": CALC_NEW_TEST,
        },
    )


@pytest.fixture(scope="module")
def calc_spec(calc: Path) -> EnvSpec:
    return detect_env(FolderTree(calc), "python")


@pytest.fixture(scope="module")
def calc_built(calc: Path, calc_spec: EnvSpec) -> Path:
    result = PytestTool().build(LocalSandbox(calc), calc_spec, timeout=600)
    assert result.ok, result.message
    return calc


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory, venvs: Path) -> Path:
    """A flat project with no build file: hangs, floods its output, spawns a child, ends its process."""
    root = write(
        tmp_path_factory.mktemp("plain"),
        {
            "tests/test_misc.py": """\
                import subprocess
                import sys
                import time


                def test_quick():
                    pass


                def test_hang():
                    child = subprocess.Popen(["sleep", "300"])
                    with open("child.pid", "w") as out:
                        out.write(str(child.pid))
                    time.sleep(300)
            """,
            "batch.py": """\
                def add(a, b):
                    return a + b


                def half(n):
                    return n // 2
            """,
            "tests/test_batch.py": """\
                import os
                import time

                import batch

                state = []


                def test_a_adds():
                    assert batch.add(2, 3) == 5
                    state.append(1)


                def test_b_sees_the_first_tests_state():
                    assert state == [1]


                def test_c_ends_the_process():
                    os._exit(0)


                def test_d_adds_after_the_end():
                    assert batch.add(3, 4) == 7


                def test_e_hangs():
                    time.sleep(300)


                def test_f_halves_last():
                    assert batch.half(8) == 4
            """,
            "tests/test_loud.py": """\
                def test_loud_pass():
                    print("x" * 5_000_000)


                def test_loud_fail():
                    print("y" * 5_000_000)
                    assert False, "too loud"
            """,
        },
    )
    result = PytestTool().build(LocalSandbox(root), PLAIN, timeout=600)
    assert result.ok, result.message
    return root


@pytest.fixture(autouse=True)
def _private_venvs(venvs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VENVS_ENV, str(venvs))


def outcomes(run_results: Sequence) -> dict[str, Outcome]:
    return {result.test: result.outcome for result in run_results}


# --- Interpreters and keys ----------------------------------------------------------------------


def test_find_python_returns_the_version_asked_for_or_the_closest_with_a_note() -> None:
    assert find_python("3.11").exists()
    assert locate_python("3.11").version.startswith("3.11.") and locate_python("3.11").note == ""
    substitute = locate_python("3.99")
    assert substitute.path.exists() and "3.99 not installed" in substitute.note


def test_an_interpreter_that_does_not_start_is_passed_over_and_only_those_tried_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Names say which Pythons a machine has; only the one chosen (and any broken one before it)
    is started."""
    started = tmp_path / "started.txt"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real = locate_python("3.11").path
    for name, body in (
        ("python3.7", "exit 1"),  # broken: passed over
        ("python3.9", f'exec "{real}" "$@"'),  # its name says 3.9, it runs 3.11: passed over
        ("python3.11", f'exec "{real}" "$@"'),
        ("python3.12", f'exec "{real}" "$@"'),  # never tried
    ):
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\necho "{name}" >> "{started}"\n{body}\n')
        script.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "no-pyenv"))
    venvs._candidate_pythons.cache_clear()
    venvs._probe.cache_clear()
    try:
        assert venvs.host_pythons() == {"3.7", "3.9", "3.11", "3.12"}
        assert not started.exists()
        found = locate_python("3.7")
        assert found.path == bin_dir / "python3.11" and "3.7 not installed" in found.note, found
        assert started.read_text().split() == ["python3.7", "python3.9", "python3.11"]
    finally:
        venvs._candidate_pythons.cache_clear()
        venvs._probe.cache_clear()


def test_the_environment_key_follows_install_arguments_and_file_contents(tmp_path: Path) -> None:
    files = {"requirements.txt": "-r base.txt\n", "base.txt": "six\n", "pyproject.toml": "[project]\n"}
    root = write(tmp_path, files)
    spec = EnvSpec("python", "3.11", "pip", install=(("-e", ".[test]"), ("-r", "requirements.txt")))
    key = environment_key(spec, FolderTree(root), "python 3.11.2")
    (root / "README.md").write_text("unrelated")
    (root / "src.py").write_text("code is not a dependency")
    assert environment_key(spec, FolderTree(root), "python 3.11.2") == key
    assert environment_key(spec, FolderTree(root), "python 3.12.1") != key
    (root / "base.txt").write_text("six==1.16.0\n")  # named only through requirements.txt
    changed = environment_key(spec, FolderTree(root), "python 3.11.2")
    assert changed != key
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert environment_key(spec, FolderTree(root), "python 3.11.2") != changed


def test_the_environment_key_follows_the_date_and_the_index_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write(tmp_path, {"requirements.txt": "six\n"})
    spec = EnvSpec("python", "3.11", "pip", install=(("-r", "requirements.txt"),))
    today = environment_key(spec, FolderTree(root), "python 3.11.2")
    dated = dataclasses.replace(spec, packages_before="2021-06-15T00:00:00Z")
    key = environment_key(dated, FolderTree(root), "python 3.11.2")
    assert key != today
    later = dataclasses.replace(spec, packages_before="2021-06-16T00:00:00Z")
    assert environment_key(later, FolderTree(root), "python 3.11.2") != key
    monkeypatch.setenv("PIP_INDEX_URL", "https://mirror.example/simple")
    mirrored = environment_key(dated, FolderTree(root), "python 3.11.2")
    assert mirrored != key
    # A constraint file changes what resolves: its name and its content are part of the key.
    constraints = tmp_path / "constraints.txt"
    constraints.write_text("six==1.16.0\n")
    monkeypatch.setenv("PIP_CONSTRAINT", str(constraints))
    constrained = environment_key(dated, FolderTree(root), "python 3.11.2")
    constraints.write_text("six==1.15.0\n")
    assert len({mirrored, constrained, environment_key(dated, FolderTree(root), "python 3.11.2")}) == 3
    # A task's recorded environment is a venv of its own.
    pinned = dataclasses.replace(spec, pins=("python==3.11.2", "six==1.16.0"))
    assert environment_key(pinned, FolderTree(root), "python 3.11.2") != environment_key(
        spec, FolderTree(root), "python 3.11.2"
    )


def test_pip_and_the_test_tools_are_pinned_per_python() -> None:
    assert [pip_pin(v) for v in ("3.6", "3.7", "3.8", "3.9", "3.13")] == [
        "21.3.1",
        "24.0",
        "25.0.1",
        "26.0.1",
        "26.0.1",
    ]
    assert [dates_installs(v) for v in ("3.8.18", "3.9.2", "3.11 in coevo-base:python3.11-x")] == [
        False,
        True,
        True,
    ]
    assert tool_pins("3.6.15") == {"pytest": "7.0.1", "coverage": "6.2"}
    assert tool_pins("3.12") == tool_pins("3.8") == {"pytest": "8.3.5", "coverage": "7.6.1"}


def test_a_dated_install_is_retried_only_for_the_revisions_own_reasons() -> None:
    def failure(output: str, timed_out: bool = False) -> VenvBuildFailed:
        return VenvBuildFailed("x", ExecResult(1, "", output, 1.0, timed_out=timed_out))

    assert _worth_retrying(failure("ERROR: No matching distribution found for urllib3>=2"))
    assert not _worth_retrying(failure("WARNING: Retrying (Retry(total=4 ...)) after connection broken"))
    assert not _worth_retrying(failure("", timed_out=True))
    assert not _worth_retrying(VenvBuildFailed("no log"))


def test_src_layouts_put_src_on_the_path(tmp_path: Path) -> None:
    assert import_paths(tmp_path) == (tmp_path,)
    write(tmp_path, {"src/pkg/__init__.py": ""})
    assert import_paths(tmp_path) == (tmp_path / "src", tmp_path)


def test_the_cause_of_pytest_output_is_its_exception_line_paths_relative(tmp_path: Path) -> None:
    output = f"""\
________________ ERROR collecting tests/test_core.py ________________
tests/test_core.py:1: in <module>
    import pkg
E     File "{tmp_path}/pkg/core.py", line 2
E       def broken(:
E                  ^
E   SyntaxError: invalid syntax
"""
    assert cause_line(_in_worktree(output, tmp_path)) == "SyntaxError: invalid syntax (pkg/core.py, line 2)"
    assert cause_line("E   ModuleNotFoundError: No module named 'x'\n") == (
        "ModuleNotFoundError: No module named 'x'"
    )


# --- Building -----------------------------------------------------------------------------------


def test_the_registry_knows_pip() -> None:
    assert isinstance(get_build_tool("pip"), PytestTool)


@pytest.mark.slow
def test_a_pyproject_project_installs_its_dependencies_but_not_itself(
    calc_built: Path, calc_spec: EnvSpec, venvs: Path
) -> None:
    assert calc_spec.install == (("-e", ".[test]"),)
    venv = venv_for(calc_spec, calc_built)
    assert venv.parent == venvs and (venv / MARKER).is_file() and venv_note(venv) == ""
    site = next(venv.glob("lib/python*/site-packages"))
    assert (site / "pytest").is_dir()
    assert not (site / "calc").exists(), "the project's modules must come from the worktree"
    assert list(site.glob("calc-0.1.dist-info")), "its metadata stays for importlib.metadata"
    assert not list(calc_built.glob("**/*.egg-info")) and not (calc_built / "build").exists()


@pytest.mark.slow
def test_a_requirements_project_gets_its_packages(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "requirements.txt": "six\n",
            "tests/test_six.py": "import six\n\n\ndef test_six():\n    assert six.PY3\n",
        },
    )
    spec = detect_env(FolderTree(root), "python")
    tool = PytestTool()
    assert tool.build(LocalSandbox(root), spec, timeout=600).ok
    run = tool.run_tests(LocalSandbox(root), spec, ["tests/test_six.py::test_six"], timeout=120)
    assert outcomes(run.results) == {"tests/test_six.py::test_six": Outcome.PASS}


@pytest.mark.slow
def test_a_package_that_does_not_import_fails_the_build_naming_the_error(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "pkg/__init__.py": "from .core import *\n",
            "pkg/core.py": "def broken(:\n    pass\n",
            "tests/test_pkg.py": "import pkg\n\n\ndef test_it():\n    pass\n",
        },
    )
    result = PytestTool().build(LocalSandbox(root), PLAIN, timeout=600)
    assert not result.ok
    cause = cause_line(result.message)
    assert cause.startswith("SyntaxError:") and "pkg/core.py, line 1" in cause, result.message
    assert "ERROR collecting" in result.message and str(root) not in result.message  # whole, relative


@pytest.mark.slow
def test_a_missing_dependency_fails_the_build_with_pips_error(tmp_path: Path) -> None:
    root = write(tmp_path, {"requirements.txt": "coevo-no-such-package-xyz-123\n", "tests/test_a.py": ""})
    result = PytestTool().build(LocalSandbox(root), detect_env(FolderTree(root), "python"), timeout=600)
    assert not result.ok and "\n" not in result.message
    assert result.message.startswith("pip install -r requirements.txt: ")
    assert "coevo-no-such-package-xyz-123" in result.message


@pytest.mark.slow
def test_a_missing_import_in_the_tests_fails_the_build(tmp_path: Path) -> None:
    root = write(
        tmp_path, {"tests/test_a.py": "import not_installed_anywhere\n\n\ndef test_a():\n    pass\n"}
    )
    result = PytestTool().build(LocalSandbox(root), PLAIN, timeout=600)
    assert (result.ok, cause_line(result.message)) == (
        False,
        "ModuleNotFoundError: No module named 'not_installed_anywhere'",
    )


@pytest.mark.slow
def test_addopts_naming_a_missing_plugin_fails_the_build_with_its_cause(tmp_path: Path) -> None:
    """pytest's first line is its usage; the cause is on the next."""
    root = write(
        tmp_path,
        {
            "pytest.ini": "[pytest]\naddopts = --asyncio-mode=strict\n",
            "tests/test_a.py": "def test_a():\n    assert True\n",
        },
    )
    result = PytestTool().build(LocalSandbox(root), PLAIN, timeout=600)
    assert not result.ok and result.message.startswith("ERROR: usage: python -m pytest [options]")
    assert (
        cause_line(result.message) == "python -m pytest: error: unrecognized arguments: --asyncio-mode=strict"
    )
    assert "inifile: pytest.ini" in result.message  # paths in the worktree are relative


# --- Running ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_missing_fixture_and_a_parametrized_failure_keep_their_whole_message(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "tests/test_b.py": """\
                import pytest


                def test_uses_missing(missing_db):
                    assert missing_db


                @pytest.mark.parametrize("x", ["a", "b"])
                def test_x(x):
                    assert x == "a"
                """
        },
    )
    asked = [
        "tests/test_b.py::test_uses_missing",
        "tests/test_b.py::test_x[a]",
        "tests/test_b.py::test_x[b]",
        "tests/test_b.py::test_x",
    ]
    run = PytestTool().run_tests(LocalSandbox(root), PLAIN, asked, timeout=120)
    found = {r.test: (r.outcome, cause_line(r.message)) for r in run.results}
    assert found == {
        "tests/test_b.py::test_uses_missing": (Outcome.ERROR, "setup: fixture 'missing_db' not found"),
        "tests/test_b.py::test_x[a]": (Outcome.PASS, ""),
        "tests/test_b.py::test_x[b]": (Outcome.FAIL, "AssertionError: assert 'b' == 'a'"),
        "tests/test_b.py::test_x": (Outcome.FAIL, "[b]: AssertionError: assert 'b' == 'a'"),
    }
    missing = run.results[0].message
    assert "available fixtures:" in missing and "file tests/test_b.py, line 4" in missing
    assert run.results[2].message.endswith("- a\n  + b")  # pytest's whole explanation


@pytest.mark.slow
def test_outcomes_map_back_to_the_node_ids_asked_for(calc_built: Path, calc_spec: EnvSpec) -> None:
    asked = [
        "tests/test_core.py::test_add",
        "tests/test_core.py::test_fail",
        "tests/test_core.py::test_error",
        "tests/test_core.py::test_param[1-2]",
        "tests/test_core.py::test_param[2-3]",
        "tests/test_core.py::TestCalc::test_sub",
        "tests/test_core.py::test_skipped",
        "tests/test_core.py::test_version_from_metadata",
        "tests/test_new.py::test_mul",
        "tests/test_core.py::test_param[9-9]",
    ]
    run = PytestTool().run_tests(LocalSandbox(calc_built), calc_spec, asked, timeout=120)
    assert [r.test for r in run.results] == asked
    assert outcomes(run.results) == {
        "tests/test_core.py::test_add": Outcome.PASS,
        "tests/test_core.py::test_fail": Outcome.FAIL,
        "tests/test_core.py::test_error": Outcome.ERROR,
        "tests/test_core.py::test_param[1-2]": Outcome.PASS,
        "tests/test_core.py::test_param[2-3]": Outcome.PASS,
        "tests/test_core.py::TestCalc::test_sub": Outcome.PASS,
        "tests/test_core.py::test_skipped": Outcome.SKIPPED,
        "tests/test_core.py::test_version_from_metadata": Outcome.PASS,
        "tests/test_new.py::test_mul": Outcome.COMPILE_ERROR,
        "tests/test_core.py::test_param[9-9]": Outcome.ABSENT,
    }
    messages = {r.test: r.message for r in run.results}
    assert "assert 2 == 3" in messages["tests/test_core.py::test_fail"]
    assert "fixture broke" in messages["tests/test_core.py::test_error"]
    assert messages["tests/test_core.py::test_skipped"] == "not today"
    assert cause_line(messages["tests/test_new.py::test_mul"]) == (
        "ImportError: cannot import name 'mul' from 'calc.core' (src/calc/core.py)"
    )
    assert run.coverage == {}


@pytest.mark.slow
def test_a_test_asked_for_without_parameters_runs_them_all(calc_built: Path, calc_spec: EnvSpec) -> None:
    asked = ["tests/test_core.py::test_param", "tests/test_core.py::test_add"]
    run = PytestTool().run_tests(LocalSandbox(calc_built), calc_spec, asked, timeout=120, coverage=True)
    assert outcomes(run.results) == {asked[0]: Outcome.PASS, asked[1]: Outcome.PASS}
    assert run.coverage[asked[0]].lines == {"src/calc/core.py": frozenset({2})}


@pytest.mark.slow
def test_pytest_deprecations_do_not_fail_an_old_suite_that_errors_on_warnings(tmp_path: Path) -> None:
    """A newer pytest deprecates what old suites do; their ``filterwarnings = error`` must not care."""
    root = write(
        tmp_path / "old",
        {
            "requirements.txt": "",
            "pytest.ini": "[pytest]\nfilterwarnings =\n    error\n",
            "tests/test_old.py": "import pytest\n\n\n@pytest.mark.parametrize('x', iter([1, 2]))\n"
            "def test_iterable(x):\n    assert x in (1, 2)\n",
        },
    )
    spec = detect_env(FolderTree(root), "python")
    assert PytestTool().build(LocalSandbox(root), spec, timeout=600).ok
    run = PytestTool().run_tests(LocalSandbox(root), spec, ["tests/test_old.py::test_iterable"], timeout=120)
    assert outcomes(run.results) == {"tests/test_old.py::test_iterable": Outcome.PASS}, run.results


@pytest.mark.slow
def test_worktrees_of_one_spec_share_the_venv_but_run_their_own_code(
    calc_built: Path, calc_spec: EnvSpec, tmp_path: Path
) -> None:
    other = tmp_path / "calc-v2"
    shutil.copytree(calc_built, other)
    (other / "src/calc/core.py").write_text(CALC_CORE.replace("a + b", "a * b"))
    assert venv_for(calc_spec, other) == venv_for(calc_spec, calc_built)
    test = "tests/test_core.py::test_add"
    old = PytestTool().run_tests(LocalSandbox(calc_built), calc_spec, [test], timeout=120)
    new = PytestTool().run_tests(LocalSandbox(other), calc_spec, [test], timeout=120)
    assert (old.results[0].outcome, new.results[0].outcome) == (Outcome.PASS, Outcome.FAIL)


@pytest.mark.slow
def test_missing_files_and_tests_are_absent_and_the_rest_still_runs(plain: Path) -> None:
    asked = [
        "tests/test_misc.py::test_quick",
        "tests/test_misc.py::test_gone",
        "tests/gone.py::test_a",
        "../x.py",
    ]
    run = PytestTool().run_tests(LocalSandbox(plain), PLAIN, asked, timeout=120)
    assert outcomes(run.results) == {
        "tests/test_misc.py::test_quick": Outcome.PASS,
        "tests/test_misc.py::test_gone": Outcome.ABSENT,
        "tests/gone.py::test_a": Outcome.ABSENT,
        "../x.py": Outcome.ABSENT,
    }


@pytest.mark.slow
def test_expected_failures_are_xfail_and_an_unexpected_pass_passes(tmp_path: Path) -> None:
    root = write(
        tmp_path,
        {
            "tests/test_expected.py": """\
                import pytest


                @pytest.mark.xfail(reason="not fixed yet")
                def test_known_bug():
                    assert 1 + 1 == 3


                @pytest.mark.xfail(reason="fixed already")
                def test_fixed_bug():
                    assert 1 + 1 == 2


                @pytest.mark.xfail(strict=True, reason="must fail")
                def test_strict_fixed():
                    assert True


                def test_imperative():
                    pytest.xfail("backend down")


                @pytest.mark.parametrize("x", [1, pytest.param(2, marks=pytest.mark.xfail(reason="two"))])
                def test_param(x):
                    assert x == 1


                @pytest.mark.parametrize("x", [pytest.param(2, marks=pytest.mark.xfail(reason="two"))])
                def test_only_xfail(x):
                    assert x == 1
            """,
        },
    )
    assert PytestTool().build(LocalSandbox(root), PLAIN, timeout=600).ok
    asked = [
        f"tests/test_expected.py::{name}"
        for name in ("test_known_bug", "test_fixed_bug", "test_strict_fixed", "test_imperative", "test_param",
                     "test_param[2]", "test_only_xfail")
    ]  # fmt: skip
    run = PytestTool().run_tests(LocalSandbox(root), PLAIN, asked, timeout=120)
    found = {r.test.split("::")[1]: (r.outcome, r.message) for r in run.results}
    assert found == {
        "test_known_bug": (Outcome.XFAIL, "not fixed yet: assert (1 + 1) == 3"),
        "test_fixed_bug": (Outcome.PASS, "passed, though marked xfail: fixed already"),
        "test_strict_fixed": (Outcome.FAIL, "[XPASS(strict)] must fail"),
        "test_imperative": (Outcome.XFAIL, "backend down"),
        "test_param": (Outcome.PASS, ""),  # one parameter passes, the other fails as expected
        "test_param[2]": (Outcome.XFAIL, "two: assert 2 == 1"),
        "test_only_xfail": (Outcome.XFAIL, "two: assert 2 == 1"),
    }


@pytest.mark.slow
def test_a_hanging_test_times_out_leaving_no_process(plain: Path) -> None:
    asked = ["tests/test_misc.py::test_quick", "tests/test_misc.py::test_hang"]
    started = time.monotonic()
    run = PytestTool().run_tests(LocalSandbox(plain), PLAIN, asked, timeout=8)
    assert time.monotonic() - started < 60
    assert outcomes(run.results) == {
        "tests/test_misc.py::test_quick": Outcome.PASS,
        "tests/test_misc.py::test_hang": Outcome.TIMEOUT,
    }
    assert run.log is not None and run.log.timed_out
    child = int((plain / "child.pid").read_text())
    time.sleep(0.2)
    assert not _alive(child), "the test's child process survived the timeout"


@pytest.mark.parametrize("coverage", [False, True], ids=["unmeasured", "measured"])
def test_a_test_ending_the_process_or_hanging_costs_the_others_nothing(plain: Path, coverage: bool) -> None:
    """A new test that hangs on the old code (the fix of an endless loop) or ends pytest's process
    must not cost the other tests of its batch their outcomes and lines."""
    names = ("a_adds", "b_sees_the_first_tests_state", "c_ends_the_process", "d_adds_after_the_end")
    asked = [f"tests/test_batch.py::test_{name}" for name in (*names, "e_hangs", "f_halves_last")]
    run = PytestTool().run_tests(LocalSandbox(plain), PLAIN, asked, timeout=8, coverage=coverage)
    a, b, c, d, e, f = asked
    found = outcomes(run.results)
    # The rest ran again in one process: b still sees what a did.
    assert [found[t] for t in (a, b, d, f)] == [Outcome.PASS] * 4
    assert (found[c], found[e]) == (Outcome.ERROR, Outcome.TIMEOUT)
    if coverage:
        lines = {test: measured.lines for test, measured in run.coverage.items()}
        assert lines == {
            a: {"batch.py": frozenset({2})},
            b: {},
            c: {},  # it ran, and ended the process before coverage.py could save what it ran
            d: {"batch.py": frozenset({2})},
            f: {"batch.py": frozenset({6})},
        }
    else:
        assert run.coverage == {}


@pytest.mark.slow
def test_megabytes_of_output_still_give_results(plain: Path) -> None:
    asked = ["tests/test_loud.py::test_loud_pass", "tests/test_loud.py::test_loud_fail"]
    run = PytestTool().run_tests(LocalSandbox(plain), PLAIN, asked, timeout=120)
    assert outcomes(run.results) == {asked[0]: Outcome.PASS, asked[1]: Outcome.FAIL}
    assert run.results[1].message.startswith("AssertionError: too loud")
    assert run.log is not None and run.log.truncated


@pytest.mark.slow
def test_coverage_gives_each_test_exactly_the_lines_it_ran(calc_built: Path, calc_spec: EnvSpec) -> None:
    asked = [
        "tests/test_core.py::test_add",
        "tests/test_core.py::TestCalc::test_sub",
        "tests/test_core.py::test_param[2-3]",
        "tests/test_core.py::test_skipped",
    ]
    run = PytestTool().run_tests(LocalSandbox(calc_built), calc_spec, asked, timeout=120, coverage=True)
    assert not list(calc_built.rglob("__pycache__")) and not list(calc_built.glob(".coverage*"))
    assert all(r.outcome in (Outcome.PASS, Outcome.SKIPPED) for r in run.results)
    assert {test: cov.lines for test, cov in run.coverage.items()} == {
        "tests/test_core.py::test_add": {"src/calc/core.py": frozenset({2})},
        "tests/test_core.py::TestCalc::test_sub": {"src/calc/core.py": frozenset({6, 7})},
        "tests/test_core.py::test_param[2-3]": {"src/calc/core.py": frozenset({2})},
        "tests/test_core.py::test_skipped": {},
    }


# --- Reuse --------------------------------------------------------------------------------------


class CountingSandbox(LocalSandbox):
    """A LocalSandbox that counts the venvs built through it (each build installs the requirements)."""

    installs: list[Sequence[str]]

    def __init__(self, worktree: Path, installs: list[Sequence[str]]) -> None:
        super().__init__(worktree)
        self.installs = installs

    def exec(
        self,
        argv: Sequence[str],
        timeout: float,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> ExecResult:
        if list(argv[1:4]) == ["-m", "pip", "install"] and "-r" in argv:
            self.installs.append(argv)
        return super().exec(argv, timeout, env, cwd)


@pytest.mark.slow
def test_an_unchanged_spec_reuses_its_venv(plain: Path) -> None:
    installs: list[Sequence[str]] = []
    venv = venv_for(PLAIN, plain)
    marker = (venv / MARKER).stat().st_mtime_ns
    assert PytestTool().build(CountingSandbox(plain, installs), PLAIN, timeout=600).ok
    assert installs == [] and (venv / MARKER).stat().st_mtime_ns == marker


@pytest.mark.slow
def test_venvs_build_once_rebuild_without_a_marker_and_follow_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seeds = tmp_path / "seeds"
    monkeypatch.setenv(SEEDS_ENV, str(seeds))
    root = write(tmp_path / "project", {"requirements.txt": "six\n# built concurrently\n"})
    spec = EnvSpec("python", "3.11", "pip", install=(("-r", "requirements.txt"),))
    installs: list[Sequence[str]] = []
    venvs: list[Path] = []

    def build() -> None:
        venvs.append(venv_for(spec, root, CountingSandbox(root, installs)))

    threads = [threading.Thread(target=build) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(venvs) == 3 and len(set(venvs)) == 1
    assert len(installs) == 1, "three builders of one venv must install once"

    venv = venvs[0]
    (venv / MARKER).unlink()
    (venv / "leftover").write_text("from an interrupted build")
    assert venv_for(spec, root, CountingSandbox(root, installs)) == venv
    assert len(installs) == 2 and (venv / MARKER).is_file() and not (venv / "leftover").exists()

    (root / "requirements.txt").write_text("six\n# built concurrently, then changed\n")
    other = venv_for(spec, root, CountingSandbox(root, installs))
    assert other != venv
    assert len(installs) == 3
    # Every venv is a copy of one seed (the interpreter's venv with its pip pinned), made once in
    # $COEVO_SEEDS and shared by another venvs folder, whose copies name their own folder: their
    # pip runs from and installs into them.
    monkeypatch.setenv(VENVS_ENV, str(tmp_path / "other-venvs"))
    elsewhere = venv_for(spec, root, CountingSandbox(root, installs))
    assert elsewhere.parent == tmp_path / "other-venvs" and len(installs) == 4
    assert len([seed for seed in seeds.glob(".seed-*") if seed.is_dir()]) == 1
    assert not list(venv.parent.glob(".seed-*")) and not list(elsewhere.parent.glob(".seed-*"))
    for made in (venv, other, elsewhere):
        assert (made / "bin" / "pip").read_text().startswith(f"#!{made}/bin/python")
        said = subprocess.run([made / "bin" / "pip", "--version"], capture_output=True, text=True, check=True)
        assert f"from {made}/lib/" in said.stdout and ".seed-" not in said.stdout, said.stdout
        assert ".seed-" not in (made / "pyvenv.cfg").read_text()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split()[2] != "Z"


# --- Mutation ------------------------------------------------------------------------------------

RANGES = """\
def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


def countdown(n):
    while n > 0:
        n -= 1
    return n


def doubled_sum(items):
    return sum(
        item * 2 for item in items
    )


def unused(x):
    return x + 1


def scale(x, factor=2):
    return x * factor
"""


@pytest.mark.slow
def test_each_mutant_is_served_to_the_tests_and_the_tree_is_left_alone(tmp_path: Path) -> None:
    from runners.python.mutants import python_mutants

    root = write(
        tmp_path / "ranges",
        {
            "ranges.py": RANGES,
            "tests/test_ranges.py": """\
                from ranges import clamp, countdown, doubled_sum, scale


                def test_clamp():
                    assert clamp(5, 0, 10) == 5
                    assert clamp(-1, 0, 10) == 0


                def test_countdown():
                    assert countdown(3) == 0


                def test_doubled_sum():
                    assert doubled_sum([1, 2]) == 6


                def test_scale():
                    assert scale(3) == 6
            """,
            "tests/test_other.py": "def test_nothing_imported():\n    assert True\n",
        },
    )
    focal = [
        {"file": "ranges.py", "method": "clamp", "start": 1, "end": 6},
        {"file": "ranges.py", "method": "countdown", "start": 9, "end": 12},
        {"file": "ranges.py", "method": "doubled_sum", "start": 15, "end": 18},
        {"file": "ranges.py", "method": "unused", "start": 21, "end": 22},
        {"file": "ranges.py", "method": "scale", "start": 25, "end": 26},
    ]
    mutants = python_mutants(focal, {"ranges.py": RANGES.encode()})
    box = LocalSandbox(root)
    tests = [f"tests/test_ranges.py::test_{name}" for name in ("clamp", "countdown", "doubled_sum", "scale")]
    result = PytestTool().mutation(box, PLAIN, tests, mutants, timeout=600)
    verdicts = {(m.method, m.line, m.mutator, m.description): m.status for m in result.mutants}
    assert verdicts == {
        # clamp: only x below lo and x inside are tried, so the boundaries and ``hi`` survive.
        ("clamp", 2, "ReplaceComparisonOperator_Lt_LtE", "occurrence 0"): "SURVIVED",
        ("clamp", 2, "ReplaceComparisonOperator_Lt_GtE", "occurrence 0"): "KILLED",
        ("clamp", 4, "ReplaceComparisonOperator_Gt_GtE", "occurrence 0"): "SURVIVED",
        ("clamp", 4, "ReplaceComparisonOperator_Gt_LtE", "occurrence 0"): "KILLED",
        ("clamp", 2, "AddNot", "occurrence 0"): "KILLED",
        ("clamp", 4, "AddNot", "occurrence 1"): "KILLED",
        # countdown: ``n -= 2`` ends at -1; ``n -= 0`` never ends.
        ("countdown", 10, "ReplaceComparisonOperator_Gt_GtE", "occurrence 1"): "KILLED",
        ("countdown", 10, "ReplaceComparisonOperator_Gt_LtE", "occurrence 1"): "KILLED",
        ("countdown", 10, "AddNot", "occurrence 2"): "KILLED",
        ("countdown", 10, "NumberReplacer", "occurrence 0"): "KILLED",
        ("countdown", 10, "NumberReplacer", "occurrence 1"): "KILLED",
        ("countdown", 11, "NumberReplacer", "occurrence 2"): "KILLED",
        ("countdown", 11, "NumberReplacer", "occurrence 3"): "TIMED_OUT",
        # doubled_sum: coverage.py says line 16 ran; its statement spans line 17 too.
        ("doubled_sum", 17, "ReplaceBinaryOperator_Mul_Div", "occurrence 0"): "KILLED",
        ("doubled_sum", 17, "NumberReplacer", "occurrence 4"): "KILLED",
        ("doubled_sum", 17, "NumberReplacer", "occurrence 5"): "KILLED",
        # unused: no test runs it, so its mutants are not even tried.
        ("unused", 22, "ReplaceBinaryOperator_Add_Sub", "occurrence 0"): "NO_COVERAGE",
        ("unused", 22, "NumberReplacer", "occurrence 6"): "NO_COVERAGE",
        ("unused", 22, "NumberReplacer", "occurrence 7"): "NO_COVERAGE",
        # scale: its default is computed at import, outside the test's coverage, and still used.
        ("scale", 25, "NumberReplacer", "occurrence 8"): "KILLED",
        ("scale", 25, "NumberReplacer", "occurrence 9"): "KILLED",
        ("scale", 26, "ReplaceBinaryOperator_Mul_Div", "occurrence 1"): "KILLED",
    }, verdicts
    assert result.score == 17 / 22 and not result.message and result.unstable == ()
    # Each mutant names the tests that did not pass with it: on a timeout, all not reported passing.
    killers = {(m.method, m.line, m.mutator, m.description): m.killing_tests for m in result.mutants}
    assert killers[("clamp", 2, "ReplaceComparisonOperator_Lt_GtE", "occurrence 0")] == (tests[0],)
    assert killers[("clamp", 2, "ReplaceComparisonOperator_Lt_LtE", "occurrence 0")] == ()
    assert killers[("countdown", 11, "NumberReplacer", "occurrence 3")] == tuple(tests[1:])
    assert (root / "ranges.py").read_text() == RANGES  # mutants are imported, never written
    other = ["tests/test_other.py::test_nothing_imported"]
    unrelated = PytestTool().mutation(box, PLAIN, other, mutants[:1], timeout=600)
    assert [m.status for m in unrelated.mutants] == ["NO_COVERAGE"]
    failing = PytestTool().mutation(box, PLAIN, ["tests/test_other.py::test_gone"], mutants, timeout=600)
    assert (failing.mutants, failing.message) == ((), "no test passes without mutation")


@pytest.mark.slow
def test_a_pytest_section_of_setup_cfg_is_honoured(tmp_path: Path) -> None:
    """pytest 4 and later refuse to start on a ``[pytest]`` section in ``setup.cfg`` (2016's attrs
    has one); coevo gives its options on the command line: its ``python_files`` decides here."""
    root = write(
        tmp_path / "p",
        {
            "requirements.txt": "# pytest only\n",
            "setup.cfg": "[metadata]\nname = p\n\n[pytest]\npython_files =\n    check_*.py\naddopts = -rs\n",
            "tests/check_p.py": "def test_p():\n    assert True\n",
        },
    )
    built = PytestTool().build(LocalSandbox(root), PLAIN, timeout=900)
    assert built.ok and built.message == "", built.message
    run = PytestTool().run_tests(LocalSandbox(root), PLAIN, ["tests/check_p.py::test_p"], timeout=120)
    assert [(r.outcome, r.message) for r in run.results] == [(Outcome.PASS, "")]


AREA = """\
def area(width, height):
    if width < 0 or height < 0:
        raise ValueError("negative side")
    return width * height
"""


@pytest.mark.slow
def test_only_a_tests_own_check_detects_a_mutant(tmp_path: Path) -> None:
    """A mutant that makes the code raise fails every test that calls it; only the tests whose own
    check failed (an assert, an explicit raise, pytest.raises, unittest's assertions) are its
    evidence: a test that asserts nothing detects none (StrictSuccess by any exception)."""
    from runners.python.mutants import python_mutants

    root = write(
        tmp_path / "area",
        {
            "area.py": AREA,
            "tests/test_area.py": """\
                import unittest

                import pytest

                from area import area


                def test_shallow():
                    area(2, 3)


                def test_checks():
                    assert area(2, 3) == 6


                def test_raises():
                    with pytest.raises(ValueError):
                        area(-1, 3)


                def test_explicit():
                    if area(2, 3) != 6:
                        raise RuntimeError("wrong area")


                class TestCase(unittest.TestCase):
                    def test_equal(self):
                        self.assertEqual(area(2, 3), 6)
            """,
        },
    )
    focal = [{"file": "area.py", "method": "area", "start": 1, "end": 4}]
    mutants = python_mutants(focal, {"area.py": AREA.encode()})
    names = ("shallow", "checks", "raises", "explicit")
    tests = [f"tests/test_area.py::test_{name}" for name in names] + [
        "tests/test_area.py::TestCase::test_equal"
    ]
    result = PytestTool().mutation(LocalSandbox(root), PLAIN, tests, mutants, timeout=600)
    killed = {t for m in result.mutants for t in m.killing_tests}
    evidence = {t for m in result.mutants for t in m.evidence}
    assert tests[0] in killed, result.mutants  # the negated check raises ValueError in it
    assert evidence == set(tests[1:]), result.mutants
    negated = [m for m in result.mutants if m.mutator == "AddNot" and m.line == 2]
    assert negated and all(tests[0] in m.killing_tests and tests[0] not in m.evidence for m in negated)
    # The asserting test is killed there by the escaping ValueError too, not by its assert.
    assert all(tests[1] not in m.evidence for m in negated)


@pytest.mark.slow
def test_results_a_test_garbles_are_its_error_never_coevos(tmp_path: Path) -> None:
    """The tests run in the process that writes the results file and can append to it: a line
    that is no record, a field of another type, or a file over the limit gives every test an
    error with one line, and nothing raises."""
    from runners.python import pytest_tool

    root = write(
        tmp_path / "garble",
        {
            "tests/test_g.py": """\
                import os

                LINE = os.environ.get("GARBLE_LINE", "")


                def test_garbles():
                    if LINE:
                        with open(os.environ["COEVO_PYTEST_RESULTS"], "a") as out:
                            out.write(LINE + "\\n")


                def test_other():
                    assert True
            """,
        },
    )
    tests = ["tests/test_g.py::test_garbles", "tests/test_g.py::test_other"]
    box = LocalSandbox(root)
    for line in ('{"collected": null}', "5", '{"id": ["x"]}', '{"id": "x", "duration": "slow"}', "not json"):
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("GARBLE_LINE", line)
            run = PytestTool().run_tests(box, PLAIN, tests, timeout=120)
        assert [r.outcome for r in run.results] == [Outcome.ERROR, Outcome.ERROR], (line, run.results)
        assert "results coevo cannot read" in run.results[0].message, run.results[0].message
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pytest_tool, "REPORT_LIMIT", 10_000)
        patch.setenv("GARBLE_LINE", '{"message": "' + "x" * 20_000 + '"}')
        run = PytestTool().run_tests(box, PLAIN, tests, timeout=120)
    assert "over 10000 bytes" in run.results[0].message, run.results[0].message
    clean = PytestTool().run_tests(box, PLAIN, tests, timeout=120)
    assert [r.outcome for r in clean.results] == [Outcome.PASS, Outcome.PASS]


def test_the_results_reader_takes_only_what_the_plugin_writes() -> None:
    from runners.python.pytest_tool import _read_records
    from runners.results import UnreadableReport

    good = (
        b'{"collected": ["t.py::a"]}\n'
        b'{"id": "t.py::a", "when": "call", "outcome": "passed", "duration": 0.1}\n'
    )
    assert len(_read_records(good)) == 2
    assert len(_read_records(good + b'{"id": "t.py::b", "wh')) == 2  # a killed run's last line
    for bad in (
        b"[]\n",
        b"{}\n",
        b'{"collected": [1]}\n',
        b'{"duration": true}\n',
        b'{"other": 1}\n',
        b"x\n",
    ):
        with pytest.raises(UnreadableReport):
            _read_records(good + bad)


@pytest.mark.slow
def test_what_a_project_installs_outside_its_packages_leaves_the_venv(tmp_path: Path) -> None:
    """A setup.py that installs its tests as ``data_files`` and ``scripts`` left the gold test file
    in the venv, which is mounted where agents' tests run: every file of the project's own
    distribution goes, but its metadata and its entry points' scripts."""
    secret = "GOLD_" + "MARKER_7f3a"
    root = write(
        tmp_path / "leaky",
        {
            "setup.py": """\
                from setuptools import setup

                setup(
                    name="leaky",
                    version="1.0",
                    py_modules=["leaky"],
                    data_files=[("tests", ["tests/test_leaky.py"]), ("share/leaky", ["tests/test_leaky.py"])],
                    scripts=["tests/test_leaky.py"],
                    entry_points={"console_scripts": ["Leaky-Tool = leaky:main"]},
                )
            """,
            "requirements.txt": "pytest\ncoverage\n.\n",
            "leaky.py": "def main():\n    return 1\n",
            "tests/test_leaky.py": (
                f"import leaky\n\n\ndef test_main():\n    assert leaky.main() == 1  # {secret}\n"
            ),
        },
    )
    spec = detect_env(FolderTree(root), "python")
    built = PytestTool().build(LocalSandbox(root), spec, timeout=900)
    assert built.ok, built.message
    venv = venv_for(spec, root)
    holding = [str(p) for p in venv.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    assert holding == [], holding
    assert (venv / "bin" / "Leaky-Tool").is_file()  # an entry point's script imports from the worktree
    assert list(venv.glob("lib/python*/site-packages/leaky-1.0.dist-info"))
    run = PytestTool().run_tests(LocalSandbox(root), spec, ["tests/test_leaky.py::test_main"], timeout=120)
    assert [r.outcome for r in run.results] == [Outcome.PASS], run.results
