"""Test tiers: Docker tests need a daemon, browser tests Chromium; .ci/run provides both and
insists they run. Venvs: the run's own folder, shared by every test that does not set its own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

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


DURATIONS = Path(__file__).parent / "durations.json"
"""Seconds each test file took in a whole run (``--store-durations`` writes it again)."""

_FIRST = (
    "tests/curation/test_curate_java.py",
    "tests/curation/test_curate.py",
    "tests/runners/test_adversaries.py",
)
"""Handed out before the others: the two curation histories most scoring files read, built by
the files that check them (the Java one's consumers then follow it on its worker, as xdist queues
a second file behind a file of one test, and find it built), and the longest file reading
neither, for the third worker."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--store-durations",
        action="store_true",
        help=f"write how long each test file took to {DURATIONS.name} (the order files are handed out in)",
    )


def _file_order(config: pytest.Config, items: list[pytest.Item]) -> dict[Path, tuple[int, float]]:
    """Each file's place: :data:`_FIRST`, then the longest first by :data:`DURATIONS` (a file not
    in it counts a second a test)."""
    known = json.loads(DURATIONS.read_text()) if DURATIONS.is_file() else {}
    tests = Counter(item.path for item in items)
    order = {}
    for path, count in tests.items():
        name = path.relative_to(config.rootpath).as_posix()
        first = _FIRST.index(name) if name in _FIRST else len(_FIRST)
        order[path] = (first, -float(known.get(name, count)))
    return order


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # xdist hands whole files out in this order (`--no-loadscope-reorder`; by default it puts the
    # files with most tests first): the longest first, so no worker is left running a long one
    # alone at the end while the others wait (on two cores the three workers had ended at 711,
    # 733 and 807 s; in this order they all ended at 736 s).
    order = _file_order(config, items)
    items.sort(key=lambda item: order[item.path])
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


_took: Counter[str] = Counter()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _took[report.nodeid.split("::")[0]] += report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    """With ``--store-durations``, on the process that reports (xdist's controller): each file's
    set-up, call and tear-down times summed, written into :data:`DURATIONS` (files not run keep
    theirs)."""
    if session.config.getoption("store_durations") and not hasattr(session.config, "workerinput"):
        took = json.loads(DURATIONS.read_text()) if DURATIONS.is_file() else {}
        took.update((name, round(seconds, 1)) for name, seconds in _took.items())
        DURATIONS.write_text(json.dumps(dict(sorted(took.items())), indent=1) + "\n")
