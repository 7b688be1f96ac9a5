"""Fixtures the runner tests share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from coevo.example import write_example
from runners.python.venvs import VENVS_ENV
from tests.curation.histories import java_history_curated
from tests.runners.judged import Curated, curated_copy
from tests.shared import curated_once


@pytest.fixture(scope="module")
def venvs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A venv folder for one test module (``$COEVO_VENVS`` while it runs): its tests share venvs."""
    folder = tmp_path_factory.mktemp("venvs")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(VENVS_ENV, str(folder))
        yield folder


@pytest.fixture(scope="module")
def python_tasks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Curated]:
    """The Python example curated once per run, copied for the module's cheats (one task per track)."""
    root = tmp_path_factory.mktemp("py-adversaries")
    shared = curated_once(tmp_path_factory, write_example, name="example")
    yield curated_copy(root, shared)


@pytest.fixture(scope="module")
def java_tasks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Curated]:
    """The Java curation history (one task of each track), copied for the module's cheats."""
    root = tmp_path_factory.mktemp("java-adversaries")
    yield curated_copy(root, java_history_curated(tmp_path_factory))
