"""Fixtures the runner tests share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from runners.venvs import VENVS_ENV


@pytest.fixture(scope="module")
def venvs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A venv folder for one test module (``$COEVO_VENVS`` while it runs): its tests share venvs."""
    folder = tmp_path_factory.mktemp("venvs")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(VENVS_ENV, str(folder))
        yield folder
