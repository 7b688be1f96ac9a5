"""What killed coevo processes leave behind, removed when the next command that makes such things starts.

Each container and scratch folder names its owner process (:class:`~tasks.Owner`); only those of
dead owners go, never another live command's.
"""

from __future__ import annotations

import contextlib

from .docker_sandbox import DockerUnavailable, docker_client, remove_leftovers
from .scratch import remove_dead_scratch


def remove_dead_leftovers(docker: bool) -> None:
    """Removes the scratch folders and, with ``docker``, the containers of dead coevo processes."""
    remove_dead_scratch()
    if docker:
        with contextlib.suppress(DockerUnavailable):  # the command says so itself if it needs Docker
            remove_leftovers(docker_client())
