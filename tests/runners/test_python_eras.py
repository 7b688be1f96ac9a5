"""Revisions are built as of their time: real pip, pytest and venvs on fixture histories.

Each history is a real git repository whose commit date decides what its build gets: the
dependencies uploaded before that day, the Python of its era. Each case first shows how the
build coevo did before fails (today's releases, test dependencies read from extras only), then
that it builds now, on the host and in Docker alike.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import pytest

from runners import EnvSpec, FolderTree, GitTree, LocalSandbox, Outcome, PytestTool, cause_line, detect_env
from runners.buildtools import BuildChoice, BuildResult
from runners.environments.revisions import BuiltRevision, prepare_revision
from runners.python.venvs import MARKER, UNDATED
from tests.gitrepo import GitRepo
from tests.runners.python_projects import (
    GROUPED_TESTS,
    TICKER_TESTS,
    TLS_TESTS,
    grouped_history,
    ticker_history,
    tls_history,
    write,
)


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    return tls_history(tmp_path_factory.mktemp("tls") / "repo")


@pytest.fixture(scope="module")
def ticker(tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    return ticker_history(tmp_path_factory.mktemp("ticker") / "repo")


def _build_then_run(
    repo: GitRepo, label: str, tests: Sequence[str], backend: str, work: Path
) -> tuple[BuiltRevision, dict[str, str]]:
    """The revision as curation builds it (its commit date read from git), then its tests run."""
    built = prepare_revision(work, repo.path, repo.shas[label], "python", backend, timeout=900)
    assert built.status == "ok", built.message
    side = built.side()
    try:
        run = side.run(tests, 300)
    finally:
        side.close()
    return built, {result.test: str(result.outcome) for result in run.results}


def _choices(choices: Sequence[BuildChoice]) -> dict[str, tuple[str, str]]:
    return {choice.name: (choice.value, choice.why) for choice in choices}


def _distributions(installed: Sequence[str]) -> list[str]:
    """A recorded environment without its interpreter (3.9.18 from pyenv, 3.9.2 from bullseye)."""
    return [line for line in installed if not line.startswith("python==")]


def _old_build(repo: GitRepo, label: str, root: Path, spec: EnvSpec) -> BuildResult:
    """A build of the revision with ``spec`` (as coevo made it before), in a checkout of it."""
    repo.git("worktree", "add", "-q", "--detach", str(root), repo.shas[label])
    return PytestTool().build(LocalSandbox(root), spec, timeout=900)


def _undated_spec(repo: GitRepo, label: str) -> EnvSpec:
    return detect_env(GitTree(repo.path, repo.shas[label]), "python")


@pytest.mark.slow
def test_an_unpinned_dependency_that_broke_later_builds_as_of_the_commit(
    tls: GitRepo, venvs: Path, tmp_path: Path
) -> None:
    """urllib3 2.0 removed ``DEFAULT_CIPHERS`` two years after the commit: today's releases fail it."""
    # Before: no date, so today's urllib3 (and coevo's preferred Python).
    old = _old_build(tls, "tls", tmp_path / "old", _undated_spec(tls, "tls"))
    assert not old.ok
    assert cause_line(old.message).startswith("ImportError: cannot import name 'DEFAULT_CIPHERS'")

    built, outcomes = _build_then_run(tls, "tls", TLS_TESTS, "local", tmp_path / "work")
    assert outcomes == {"tests/test_tlsconf.py::test_ciphers": "pass"}
    choices = _choices(built.choices)
    assert choices["python"][0].startswith("3.9.")
    assert choices["python"][1] == (
        "python 3.9 (host): the newest released before 2021-06-15 of 3.6-3.14"
        " (setup.py python_requires '>=3.6')"
    )
    assert choices["dependencies"] == (
        "as of 2021-06-15T00:00:00Z",
        "pip 26.0.1 --uploaded-prior-to 2021-06-15T00:00:00Z",
    )
    assert choices["pytest"] == ("6.2.4", "the project's")  # pytest of June 2021, from its test extra
    assert choices["coverage"] == ("7.6.1", "coevo's pin for Python 3.9")  # coevo's tool: pinned, not dated
    assert "retry" not in choices
    # The resolved environment: the interpreter and what pip resolved, not the venv's seeds (pip,
    # setuptools) nor the revision itself.
    assert "urllib3==1.26.5" in built.installed and "pytest==6.2.4" in built.installed
    assert any(line.startswith("python==3.9.") for line in built.installed)
    assert not [line for line in built.installed if line.split("==")[0] in ("pip", "setuptools", "tlsconf")]


@pytest.mark.slow
def test_a_test_plugin_declared_only_in_tox_is_installed(
    ticker: GitRepo, venvs: Path, tmp_path: Path
) -> None:
    """pytest-asyncio is in ``tox.ini``'s deps only; its ``addopts`` needs it to start at all."""

    extras_only = dataclasses.replace(_undated_spec(ticker, "ticker"), install=(("-e", "."),))  # no tox
    old = _old_build(ticker, "ticker", tmp_path / "old", extras_only)
    assert not old.ok
    assert cause_line(old.message).endswith("error: unrecognized arguments: --asyncio-mode=strict")

    built, outcomes = _build_then_run(ticker, "ticker", TICKER_TESTS, "local", tmp_path / "work")
    assert outcomes == {"tests/test_ticker.py::test_tick": "pass"}
    assert built.spec is not None
    assert built.spec.install == (("-e", "."), ("pytest", "pytest-asyncio"))
    assert "install: pip install pytest pytest-asyncio (tox.ini [testenv] deps)" in built.spec.notes
    assert any(line.startswith("pytest-asyncio==0.23.") for line in built.installed)  # as of March 2024


@pytest.mark.slow
def test_test_dependencies_in_a_dependency_group_are_installed(venvs: Path, tmp_path: Path) -> None:
    """six is declared only in PEP 735's ``[dependency-groups]`` (attrs since May 2025, uv projects):
    the group tox names for its tests, with the group it includes; not the docs group."""
    grouped = grouped_history(tmp_path / "repo")
    extras_only = dataclasses.replace(_undated_spec(grouped, "grouped"), install=(("-e", "."),))
    old = _old_build(grouped, "grouped", tmp_path / "old", extras_only)
    assert not old.ok
    assert "No module named 'six'" in old.message

    built, outcomes = _build_then_run(grouped, "grouped", GROUPED_TESTS, "local", tmp_path / "work")
    assert outcomes == {"tests/test_grouped.py::test_shout": "pass"}
    assert built.spec is not None
    assert built.spec.install == (("-e", "."), ("pytest>=8", 'six; python_version >= "3"'))
    group_note = """install: pip install 'pytest>=8' 'six; python_version >= "3"' """
    assert group_note + "(pyproject.toml [dependency-groups] test-deps)" in built.spec.notes
    assert any(line.startswith("six==") for line in built.installed)
    assert not any(line.startswith("sphinx==") for line in built.installed)


@pytest.mark.docker
@pytest.mark.slow
def test_docker_and_the_host_agree_on_revisions_of_their_time(
    tls: GitRepo, ticker: GitRepo, venvs: Path, tmp_path: Path
) -> None:
    pythons: dict[str, tuple[str | None, str | None]] = {}
    for repo, label, tests in ((tls, "tls", TLS_TESTS), (ticker, "ticker", TICKER_TESTS)):
        host, host_outcomes = _build_then_run(repo, label, tests, "local", tmp_path / "host")
        docker, docker_outcomes = _build_then_run(repo, label, tests, "docker", tmp_path / "docker")
        assert host_outcomes == docker_outcomes == dict.fromkeys(tests, "pass")
        assert _choices(host.choices)["dependencies"] == _choices(docker.choices)["dependencies"]
        if label == "tls":  # one Python minor on both: the same versions resolved, seeds left out
            assert _distributions(host.installed) == _distributions(docker.installed)
            assert "urllib3==1.26.5" in docker.installed
        pythons[label] = tuple(b.spec.language_version if b.spec else None for b in (host, docker))  # type: ignore[assignment]
    # June 2021 asks for Python 3.9: Debian bullseye's in Docker, pyenv's on the host. March 2024
    # asks for 3.12, which no Debian suite here packages: Docker takes 3.11, also in tox's envlist.
    assert pythons == {"tls": ("3.9", "3.9"), "ticker": ("3.12", "3.11")}


@pytest.mark.slow
def test_a_dated_install_that_fails_is_retried_once_with_todays_releases(venvs: Path, tmp_path: Path) -> None:
    files = {
        "requirements.txt": "urllib3>=2\n",  # no urllib3 2 existed on 2022-01-01
        "tests/test_u.py": "import urllib3\n\n\ndef test_two():\n    assert urllib3.__version__ >= '2'\n",
    }
    root = write(tmp_path / "a", files)
    spec = dataclasses.replace(detect_env(FolderTree(root), "python"), packages_before="2022-01-01T00:00:00Z")
    first = PytestTool().build(LocalSandbox(root), spec, timeout=900)
    assert first.ok, first.message
    retry = "as of 2022-01-01: pip install -r requirements.txt: No matching distribution found for urllib3>=2"
    assert _choices(first.choices)["dependencies"] == ("today's releases", retry)
    assert _choices(first.choices)["retry"] == ("without the date", retry)
    assert first.message == f"built with today's releases: {retry}"
    assert len(list(venvs.glob(f"*{UNDATED}"))) == 1

    # Another revision with the same inputs goes straight to today's venv: no dated attempt again.
    other = write(tmp_path / "b", files)
    venv_count = len(list(venvs.glob(f"*/{MARKER}")))
    again = PytestTool().build(LocalSandbox(other), spec, timeout=900)
    assert again.ok and again.choices == first.choices
    assert len(list(venvs.glob(f"*/{MARKER}"))) == venv_count
    run = PytestTool().run_tests(LocalSandbox(other), spec, ["tests/test_u.py::test_two"], 300)
    assert [result.outcome for result in run.results] == [Outcome.PASS]


@pytest.mark.slow
def test_a_revision_older_than_isolated_builds_builds_as_of_its_date(venvs: Path, tmp_path: Path) -> None:
    """A 2016 project with a bare ``setup.py``: pip's isolated build needs setuptools>=40.8.0
    (February 2019), so a dated install used to fail and fall back to today's releases (six 1.17).
    It now builds without isolation, with the dependencies of its date; its dated pytest 3.0.1
    is below what coevo runs, and coevo's pytest 8 would break on the ``py`` 1.4 that came with it."""
    root = write(tmp_path / "olden", {
        "setup.py": 'from setuptools import setup\n\nsetup(name="olden", version="0.1", py_modules=["olden"],'
        ' install_requires=["six"])\n',
        "olden.py": "import six\n\n\ndef text(value):\n    return six.text_type(value)\n",
        "requirements.txt": "pytest==3.0.1\n",
        "tests/test_olden.py": 'import six\n\nfrom olden import text\n\n\ndef test_text():\n'
        '    assert six.__version__ == "1.10.0"  # as of September 2016\n    assert text(1) == "1"\n',
    })  # fmt: skip
    spec = dataclasses.replace(
        detect_env(FolderTree(root), "python"), language_version="3.9", packages_before="2016-09-01T00:00:00Z"
    )
    built = PytestTool().build(LocalSandbox(root), spec, timeout=900)
    assert built.ok, built.message
    choices = _choices(built.choices)
    assert "retry" not in choices
    assert choices["dependencies"][0] == "as of 2016-09-01T00:00:00Z"
    assert choices["builds"][0] == "without isolation"
    assert "six==1.10.0" in built.installed and "py==1.11.0" in built.installed  # py raised for pytest 8
    assert choices["pytest"] == ("8.3.5", "coevo's pin for Python 3.9")
    run = PytestTool().run_tests(LocalSandbox(root), spec, ["tests/test_olden.py::test_text"], 300)
    assert [(result.outcome, result.message) for result in run.results] == [(Outcome.PASS, "")]
