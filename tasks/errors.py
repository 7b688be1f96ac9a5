"""The base of every error coevo reports to a user as one line."""

from __future__ import annotations

import errno
import re

_DISK_FULL_TEXT = re.compile(r"No space left on device|Disk quota exceeded|\[Errno (?:28|122)\]|\bENOSPC\b")


class CoevoError(Exception):
    """An error a user can cause and fix; the CLI prints its message as one line, no traceback."""


class InfrastructureError(CoevoError):
    """coevo's own machinery failed — no Docker daemon, an image or tool it could not make or fetch.

    Never a fact about a task or an agent: nothing is recorded for the unit that met it, the run
    stops with this one line, and the next run does that unit again.
    """


class DiskFull(InfrastructureError):
    """A disk coevo writes to (its work folders, the venvs, the temporary folder) is full: the
    machine's fault, never a build's or a test's; the unit is retried on the next run."""


def disk_full(fault: BaseException | str) -> DiskFull | None:
    """A :class:`DiskFull` when ``fault`` (an exception, or what a build printed) says a disk is
    full; None otherwise."""
    if isinstance(fault, DiskFull):
        return fault
    if isinstance(fault, OSError) and fault.errno in (errno.ENOSPC, errno.EDQUOT):
        where = f" ({fault.filename})" if fault.filename else ""
        return DiskFull(f"a disk is full{where}: free some space and run again")
    text = fault if isinstance(fault, str) else ""
    found = _DISK_FULL_TEXT.search(text)
    if found is None:
        return None
    line = next((line.strip() for line in text.splitlines() if found.group(0) in line), found.group(0))
    return DiskFull(f"a disk is full ({line[:300]}): free some space and run again")


class MissingToolchain(CoevoError):
    """coevo cannot provide what a revision needs (a JDK for its release, a Python interpreter).

    The revision is ``env_failed`` with the toolchain named, never ``build_failed`` (a failure of
    the project itself); ``coevo curate --retry-env`` tries such pairs again.
    """
