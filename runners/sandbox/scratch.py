"""coevo's temporary folders: under one root of this user's, in a folder named by their process.

``$TMPDIR/coevo-<uid>/<owner>/…`` (the owner's :attr:`~tasks.Owner.name`: pid, start time,
boot, pid namespace) holds every temporary folder a process makes: sandbox scratch folders,
agent workspaces, judge trees, egress sockets. A process that ends normally removes its own;
one that is killed leaves them, and :func:`remove_dead_scratch`, called when the next command
that makes such folders starts, removes those of every dead owner and of no live one.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

from tasks import CoevoError, Owner


class UnsafeScratchRoot(CoevoError):
    """The temporary root coevo would use is not a folder of this user's (a link, another user's)."""


def scratch_root() -> Path:
    """``$TMPDIR/coevo-<uid>``, made private to this user; refused if someone else's is there."""
    root = Path(tempfile.gettempdir()) / f"coevo-{os.getuid()}"
    try:
        root.mkdir(mode=0o700)
    except FileExistsError:
        found = root.lstat()
        if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid():
            raise UnsafeScratchRoot(
                f"{root} is not a folder of yours: remove it, or set TMPDIR to another folder"
            ) from None
    return root


def owned_folder() -> Path:
    """This process's folder under :func:`scratch_root` (made on first use)."""
    folder = scratch_root() / Owner.current().name
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        return folder
    atexit.register(_remove_if_empty, folder)
    return folder


def _remove_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):
        folder.rmdir()


def scratch_dir(prefix: str) -> Path:
    """A new private folder of this process (``tempfile.mkdtemp`` in :func:`owned_folder`)."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir=owned_folder()))


def temporary_dir(prefix: str) -> tempfile.TemporaryDirectory[str]:
    """A :class:`tempfile.TemporaryDirectory` in this process's folder."""
    return tempfile.TemporaryDirectory(prefix=prefix, dir=owned_folder(), ignore_cleanup_errors=True)


def remove_dead_scratch() -> list[Path]:
    """Removes the folders of owners that are dead (killed runs); returns what it removed.

    A folder whose owner is alive, or cannot be judged from here, stays.
    """
    root = scratch_root()
    removed = []
    for folder in sorted(root.iterdir()):
        owner = Owner.parse(folder.name)
        if owner is None or folder.is_symlink() or not folder.is_dir() or not owner.is_dead():
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed
