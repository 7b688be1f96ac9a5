"""Test tiers: Docker tests need a daemon, browser tests Chromium; .ci/run provides both and
insists they run. Venvs: the run's own folder, shared by every test that does not set its own."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from runners.python.venvs import SEEDS_ENV, VENVS_ENV
from tests.shared import run_folder, run_venvs


def _docker_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True, timeout=30, check=False).returncode == 0


CHROMIUM = os.environ.get("COEVO_CHROMIUM", "/usr/bin/chromium")
"""The browser the site tests drive (Debian's chromium; .ci/run installs it)."""


@pytest.fixture(scope="session", autouse=True)
def _venvs_of_the_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """``$COEVO_VENVS`` for the whole run: one folder its xdist workers share (coevo keys venvs by
    content and locks each build, as it does for users), never the user's own cache. A test that
    looks at venvs themselves (how they are built, what untrusted code can write) sets its own,
    and shares the run's seeds (``$COEVO_SEEDS``) unless it looks at those too."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(VENVS_ENV, str(run_venvs(tmp_path_factory)))
        patch.setenv(SEEDS_ENV, str(run_folder(tmp_path_factory) / "seeds"))
        yield


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto`: one worker more than the cores this process may use (`--maxprocesses` caps it;
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still decides when set). The suite's tests mostly wait on
    processes they start (Maven, the JVM, pytest, containers, timeouts): on two cores a third
    worker ran the suite in 960-973 s instead of 1,013, the cores idle 80-100 s instead of 254."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    return len(os.sched_getaffinity(0)) + 1


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Files holding a slow test start first (each file stays whole, in its order): xdist hands
    # files out in this order (`--no-loadscope-reorder`; by default it puts the files with most
    # tests first), so no worker is left running a long one alone at the end, and the Java
    # history's curation (tests/curation) starts before the scoring files that read it wait on it.
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)
    browser_items = [item for item in items if item.get_closest_marker("browser")]
    # CI sets COEVO_REQUIRE_BROWSER: there a missing Chromium is a failure, never a skip.
    if browser_items and not os.environ.get("COEVO_REQUIRE_BROWSER") and not os.access(CHROMIUM, os.X_OK):
        skip_browser = pytest.mark.skip(reason=f"no Chromium at {CHROMIUM}: apt-get install chromium")
        for item in browser_items:
            item.add_marker(skip_browser)
    docker_items = [item for item in items if item.get_closest_marker("docker")]
    # CI sets COEVO_REQUIRE_DOCKER: there a missing daemon is a failure, never a skip.
    if not docker_items or os.environ.get("COEVO_REQUIRE_DOCKER") or _docker_answers():
        return
    skip = pytest.mark.skip(reason="no Docker daemon: run `.ci/setup-docker` (as root) to start one")
    for item in docker_items:
        item.add_marker(skip)
