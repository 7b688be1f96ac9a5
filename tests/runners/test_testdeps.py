"""Test dependencies declared in tox, nox, CI workflows and pytest's addopts, read from files alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from runners import FolderTree, detect_env
from runners.python.testdeps import (
    DeclaredInstall,
    declared_test_installs,
    dependency_groups,
    pip_arguments,
    plugin_needs,
)

SETUP = (
    "from setuptools import setup\n"
    "setup(name='p', extras_require={'testing': ['mock'], 'docs': ['sphinx']})\n"
)


def _tree(root: Path, files: dict[str, str]) -> FolderTree:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return FolderTree(root)


TOX_INI = """\
[tox]
envlist = py38, py39, lint

[base]
deps = freezegun>=1.0

[testenv]
deps =
    pytest>=6  # the runner
    pytest-asyncio
    py38: mock
    {[base]deps}
    -rrequirements-test.txt
    -c {toxinidir}/constraints.txt
    {env:EXTRA_DEP:}
extras = testing
commands = pytest {posargs}

[testenv:lint]
deps = flake8
commands = flake8
"""


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {"tox.ini": TOX_INI},
            [
                DeclaredInstall(
                    ("pytest>=6", "pytest-asyncio", "freezegun>=1.0", "-r", "requirements-test.txt",
                     "-c", "./constraints.txt"),
                    "tox.ini [testenv] deps",
                    ("testing",),
                )
            ],
        ),
        (
            {"setup.cfg": "[tox:tox]\nenvlist = py39\n[testenv:tests]\ndeps = hypothesis\n"
                          "[testenv]\ndeps = black\n"},
            [DeclaredInstall(("hypothesis",), "setup.cfg [testenv:tests] deps")],
        ),
        (
            {"pyproject.toml": '[tool.tox]\nlegacy_tox_ini = """\n[testenv]\ndeps = pytest-mock\n"""\n'},
            [DeclaredInstall(("pytest-mock",),
                             "pyproject.toml [tool.tox] legacy_tox_ini [testenv] deps")],
        ),
        (
            {"pyproject.toml": '[tool.tox.env_run_base]\n'
                               'deps = ["pytest-xdist", "-r requirements/test.txt"]\n'
                               'extras = ["testing"]\n'},
            [DeclaredInstall(("pytest-xdist", "-r", "requirements/test.txt"),
                             "pyproject.toml [tool.tox] env_run_base deps", ("testing",))],
        ),
        (
            {"tox.toml": '[env.test]\ndeps = ["respx"]\n[env_run_base]\ndeps = ["ignored"]\n'},
            [DeclaredInstall(("respx",), "tox.toml env.test deps")],
        ),
    ],
    ids=["tox.ini", "setup.cfg", "legacy_tox_ini", "tool.tox", "tox.toml"],
)  # fmt: skip
def test_tox_deps_and_extras_of_the_test_environment(
    tmp_path: Path, files: dict[str, str], expected: list[DeclaredInstall]
) -> None:
    assert declared_test_installs(_tree(tmp_path, files)) == expected


NOXFILE = """\
import nox

REQUIREMENTS = ["attrs"]


@nox.session(python=["3.9", "3.10"])
def tests(session):
    session.install("-e", ".[testing]", "pytest-httpserver")
    session.install(*REQUIREMENTS)  # not a literal: unknown without running it
    session.install("trustme==0.9.0")
    session.run("pytest", "-q")


@nox.session
def lint(session):
    session.install("flake8")
    session.run("flake8")


def helper(session):
    session.install("never-called")
"""


def test_nox_sessions_that_run_pytest_give_their_literal_installs(tmp_path: Path) -> None:
    found = declared_test_installs(_tree(tmp_path, {"noxfile.py": NOXFILE}))
    assert found == [
        DeclaredInstall(("pytest-httpserver", "trustme==0.9.0"), "noxfile.py session tests", ("testing",))
    ]
    # A noxfile that does not parse is no error: it declares nothing coevo can read.
    assert declared_test_installs(_tree(tmp_path / "broken", {"noxfile.py": "def (:\n"})) == []


WORKFLOW = """\
name: CI
on: [push]
jobs:
  lint:
    runs-on: ubuntu-latest
    steps:
      - run: pip install black && black --check .
  "test":
    strategy:
      matrix:
        python-version: ["3.8", "3.9"]
    steps:
      - uses: actions/setup-python@v4
      - name: deps
        run: |
          python -m pip install --upgrade pip setuptools wheel
          pip install -U -r requirements-ci.txt coverage[toml] \\
            "responses>=0.20" ${{ matrix.extra }} $EXTRA --progress-bar off
          pip install -e .[testing]
      - run: python -m pytest --cov
"""


def test_the_pip_installs_of_the_ci_job_that_runs_pytest(tmp_path: Path) -> None:
    found = declared_test_installs(_tree(tmp_path, {".github/workflows/ci.yml": WORKFLOW}))
    assert found == [
        DeclaredInstall(
            ("-r", "requirements-ci.txt", "coverage[toml]", "responses>=0.20"),
            ".github/workflows/ci.yml job test",
            ("testing",),
        )
    ]


def test_pip_arguments_keep_requirements_and_files_and_drop_the_rest() -> None:
    words = ["-U", "--user", "-rreq.txt", "--constraint=c.txt", "--index-url", "https://idx.example/simple",
             "pip", "Setuptools>=40", "tox", ".[a, b]", "-e", "git+https://example.org/x.git#egg=x",
             "--target", "out", "not a requirement!", "six"]  # fmt: skip
    assert pip_arguments(words) == (
        ("-r", "req.txt", "-c", "c.txt", "--index-url", "https://idx.example/simple",
         "-e", "git+https://example.org/x.git#egg=x", "six"),
        ("a", "b"),
        (),
    )  # fmt: skip
    # pip's and uv's --group names a dependency group (``[path:]name``), never a requirement.
    assert pip_arguments(["--group", "Tests", "--group=pyproject.toml:dev", "--group", "$G"]) == (
        (),
        (),
        ("tests", "dev"),
    )


def test_dependency_groups_expand_their_includes_and_keep_valid_requirements_only() -> None:
    pyproject = {
        "dependency-groups": {
            "Test_Suite": [{"include-group": "base"}, "hypothesis>=6", "not a requirement!", 3],
            "base": ["pytest", {"include-group": "test-suite"}],  # a cycle, followed once
            "docs": [{"include-group": "missing"}, "sphinx"],
            "broken": "pytest",
        }
    }
    assert dependency_groups(pyproject) == {
        "test-suite": ("pytest", "hypothesis>=6"),
        "base": ("pytest", "hypothesis>=6"),
        "docs": ("sphinx",),
    }
    assert dependency_groups({"project": {}}) == {} == dependency_groups(None)


def test_the_groups_tox_nox_and_ci_name_for_the_tests(tmp_path: Path) -> None:
    tox = "[testenv]\ndependency_groups =\n    tests: test-deps\n    mypy: typing\n"
    assert declared_test_installs(_tree(tmp_path / "ini", {"tox.ini": tox})) == [
        DeclaredInstall((), "tox.ini [testenv] dependency_groups", (), ("test-deps",))
    ]
    toml = '[env_run_base]\ndependency_groups = ["Test"]\n'
    assert declared_test_installs(_tree(tmp_path / "toml", {"tox.toml": toml})) == [
        DeclaredInstall((), "tox.toml env_run_base dependency_groups", (), ("test",))
    ]
    noxfile = (
        "import nox\n\n@nox.session\ndef tests(session):\n"
        "    session.install('--group', 'checks', 'coverage')\n    session.run('pytest')\n"
    )
    assert declared_test_installs(_tree(tmp_path / "nox", {"noxfile.py": noxfile})) == [
        DeclaredInstall(("coverage",), "noxfile.py session tests", (), ("checks",))
    ]


@pytest.mark.parametrize(
    ("files", "needs"),
    [
        ({"pytest.ini": "[pytest]\naddopts = --asyncio-mode=strict -n auto -p no:cacheprovider\n"},
         [("pytest-asyncio", "pytest.ini addopts --asyncio-mode=strict"),
          ("pytest-xdist", "pytest.ini addopts -n")]),
        ({"pyproject.toml": '[tool.pytest.ini_options]\naddopts = ["--cov=p", "-pxdist"]\n'
                            'asyncio_mode = "auto"\n'},
         [("pytest-cov", "pyproject.toml addopts --cov=p"),
          ("pytest-xdist", "pyproject.toml addopts -p xdist"),
          ("pytest-asyncio", "pyproject.toml asyncio_mode")]),
        ({"tox.ini": "[pytest]\naddopts = --timeout=30 -ra\n"},
         [("pytest-timeout", "tox.ini addopts --timeout=30")]),
        ({"setup.cfg": "[tool:pytest]\nDJANGO_SETTINGS_MODULE = app.settings\n"},
         [("pytest-django", "setup.cfg django_settings_module")]),
        ({"pytest.ini": "[pytest]\naddopts = -ra --strict-markers --no-such-option\n"}, []),
    ],
)  # fmt: skip
def test_addopts_that_only_a_plugin_understands_name_it(
    tmp_path: Path, files: dict[str, str], needs: list[tuple[str, str]]
) -> None:
    assert plugin_needs(_tree(tmp_path, files)) == needs


def test_the_spec_installs_what_tox_nox_ci_and_addopts_declare_once_each(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path,
        {
            "setup.py": SETUP,
            "requirements-test.txt": "pytest\n",
            "tox.ini": TOX_INI + "\n[pytest]\naddopts = --asyncio-mode=strict --cov\n",
            "noxfile.py": NOXFILE,
            ".github/workflows/ci.yml": WORKFLOW.replace("requirements-ci.txt", "requirements-test.txt"),
        },
    )
    spec = detect_env(tree, "python")
    assert spec.install == (
        ("-e", ".[testing]"),  # tox's extras name an extra the project defines
        ("-r", "requirements-test.txt"),
        ("pytest>=6", "pytest-asyncio", "freezegun>=1.0", "-c", "./constraints.txt"),
        ("pytest-httpserver", "trustme==0.9.0"),
        ("coverage[toml]", "responses>=0.20"),
        ("pytest-cov",),  # pytest-asyncio is installed by tox's deps already
    )
    assert "install: pytest-cov (pytest needs it for tox.ini addopts --cov)" in spec.notes
    assert "install: pip install pytest-httpserver trustme==0.9.0 (noxfile.py session tests)" in spec.notes


def test_a_test_named_dependency_group_is_installed_and_others_only_when_a_tool_names_them(
    tmp_path: Path,
) -> None:
    pyproject = (
        '[project]\nname = "p"\nversion = "1"\n[project.optional-dependencies]\ndocs = ["sphinx"]\n'
        '[dependency-groups]\ntests = ["pytest", "hypothesis"]\nlint = ["ruff"]\nci = ["pytest-cov"]\n'
    )
    alone = detect_env(_tree(tmp_path / "alone", {"pyproject.toml": pyproject}), "python")
    assert alone.install == (("-e", "."), ("pytest", "hypothesis"))
    assert "install: pip install pytest hypothesis (pyproject.toml [dependency-groups] tests)" in alone.notes
    workflow = "jobs:\n  test:\n    steps:\n      - run: pip install --group ci .\n      - run: pytest\n"
    named = detect_env(
        _tree(tmp_path / "named", {"pyproject.toml": pyproject, ".github/workflows/ci.yml": workflow}),
        "python",
    )
    assert named.install == (("-e", "."), ("pytest", "hypothesis", "pytest-cov"))
