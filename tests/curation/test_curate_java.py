"""`coevo curate` on the Java fixture history: one case of every class and drop reason, by real
Maven builds and the JUnit console launcher on the host. The checks are test_curate.py's; this
file is apart so that xdist curates the Java and the Python history at once."""

from __future__ import annotations

import pytest

from tests.curation.histories import JAVA_EXPECTED, java_history_curated
from tests.curation.test_curate import Curated, _check_everything
from tests.gitrepo import GitRepo


@pytest.fixture(scope="module")
def java_curated(tmp_path_factory: pytest.TempPathFactory) -> Curated:
    """The run's one curation of the Java history, its store copied for this module."""
    shared = java_history_curated(tmp_path_factory).copy(tmp_path_factory.mktemp("java"))
    return Curated(GitRepo.opened(shared.repo, shared.shas), shared.db, shared.work, "java", JAVA_EXPECTED)


@pytest.mark.maven
@pytest.mark.slow
def test_java_curation_gives_every_label_task_and_funnel_count(java_curated: Curated) -> None:
    _check_everything(java_curated)
