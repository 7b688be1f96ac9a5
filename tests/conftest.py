"""Test tiers: Docker tests need a daemon, browser tests Chromium; .ci/run provides both and
insists they run."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest


def _docker_answers() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True, timeout=30, check=False).returncode == 0


CHROMIUM = os.environ.get("COEVO_CHROMIUM", "/usr/bin/chromium")
"""The browser the site tests drive (Debian's chromium; .ci/run installs it)."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
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
