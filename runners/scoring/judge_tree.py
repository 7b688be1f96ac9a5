"""Judge trees: a private copy of a built revision in which an agent's test file is judged.

A built revision's worktree is shared: curation ran the developer's tests in it, its
cross cells put the other revision's test files under ``.coevo/cross``, and its
``target/test-classes`` hold the developer's compiled tests. An agent's test judged there
could load the gold (its sibling file, its class through a fresh class loader, its
bytecode) and score exactly like it, and could leave files that later runs read.

So an agent's file is judged in a tree of its own, thrown away afterwards, holding exactly
what the agent started from: the revision's files fresh from git, the test file as the
agent got it (reset, or absent), and the build's outputs that tests need (Java: every
module's ``target/`` and coevo's classpath files) with every class compiled from the test
file removed. Nothing of curation's runs is copied.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from ..environments.revisions import BuiltRevision
from ..environments.worktree import export_revision
from ..toolchains import toolchain


def judge_tree(
    built: BuiltRevision,
    repo_path: Path,
    test_files: Iterable[str],
    given: dict[str, bytes | None],
    dest: Path,
) -> BuiltRevision:
    """A copy of ``built`` at ``dest`` for judging: ``built`` as its build left it, minus every
    trace of ``test_files`` (their sources, as given in ``given`` when named there; their
    compiled classes; bytecode caches).

    ``given`` maps a test file to the content the agent started from (None: the file is
    removed). Test files not in ``given`` keep the revision's own version (the old side of a
    generation task holds no gold). The result shares ``built``'s environment.
    """
    assert built.worktree is not None and built.spec is not None
    export_revision(repo_path, built.sha, dest)
    names = [path for path in dict.fromkeys(test_files) if path]
    copy_outputs = toolchain(built.spec.language).judge_outputs
    if copy_outputs is not None:
        copy_outputs(built.worktree, dest, built.spec, names)
    for cache in list(dest.rglob("__pycache__")):
        shutil.rmtree(cache, ignore_errors=True)
    for path, content in given.items():
        target = dest / path
        if content is None:
            target.unlink(missing_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
    _open_folders(dest)
    return dataclasses.replace(built, worktree=dest, judging=True)


def _open_folders(dest: Path) -> None:
    """Every folder of the tree writable by all and sticky (as ``/tmp``): the tests, which run as
    an unprivileged user of their own, can make files and folders anywhere, as a build's tests
    do, but cannot change, replace or remove one coevo made (the code, the compiled classes,
    coevo's own files) nor what coevo reads back. The tree's parents stay private."""
    for folder, dirs, _files in os.walk(dest):
        os.chmod(folder, 0o1777)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
