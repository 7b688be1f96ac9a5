"""The seam for execution: a Sandbox runs commands over a worktree, in Docker or on the host.

Both kinds take the same commands and return the same :class:`ExecResult`, so build
tools and curation never know where they run.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import stat
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from tasks import CoevoError

from ..results import UnreadableReport
from .scratch import owned_folder

BACKENDS = ("auto", "docker", "local")
"""Where a command may build and run: ``auto`` is Docker when a daemon answers, else the host."""

DEFAULT_OUTPUT_LIMIT = 1 << 20
"""Bytes of stdout (and of stderr) kept per command: the head and the tail, half each."""


@dataclass(frozen=True)
class ExecResult:
    """What one command did."""

    exit_code: int | None
    """The exit status; None when the command was killed (timeout, out of memory, sandbox gone)."""
    stdout: str
    stderr: str
    duration: float
    timed_out: bool = False
    truncated: bool = False
    """Output beyond the limit was dropped from the middle."""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class Sandbox(Protocol):
    """Runs commands in a working directory that holds a revision's files."""

    workdir: str
    """The worktree's path as commands in the sandbox see it."""

    def exec(
        self,
        argv: Sequence[str],
        timeout: float,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        untrusted: bool = False,
    ) -> ExecResult:
        """Runs ``argv`` (no shell) in ``cwd`` (default: the worktree), killing it after ``timeout`` s.
        ``untrusted``: judged tests, run as the sandbox's :attr:`test_user` when it has one."""

    @property
    def test_user(self) -> str | None:
        """Who runs ``untrusted`` commands (``uid:gid``); None: the sandbox's own user."""

    def stop_untrusted(self) -> None:
        """Kills what ``untrusted`` commands left running (nothing without a :attr:`test_user`)."""

    def write_file(self, path: str, data: bytes) -> None:
        """Writes a file, relative to the worktree."""

    def read_file(self, path: str, limit: int | None = None) -> bytes | None:
        """A file's bytes, relative to the worktree, or None when it does not exist; over ``limit``
        bytes, :class:`~runners.results.UnreadableReport`."""

    def close(self) -> None:
        """Stops everything the sandbox started and frees it; safe to call twice."""

    def scratch(self) -> Path:
        """A folder for per-run files that commands see at the same path; in Docker, one that no
        other container sees (removed on :meth:`close`)."""

    def writable(self, folders: Sequence[Path]) -> contextlib.AbstractContextManager[Sandbox]:
        """A sandbox like this one in which ``folders`` (host paths, seen at the same paths) are
        writable too, for a ``with`` block: in Docker a container of its own, on the host this one."""


class LocalSandbox:
    """Runs commands on the host, each in its own process group so a timeout kills all of it."""

    def __init__(
        self,
        worktree: Path,
        env: Mapping[str, str] | None = None,
        output_limit: int = DEFAULT_OUTPUT_LIMIT,
    ) -> None:
        self.workdir = str(worktree)
        self._env = dict(env or {})
        self._limit = output_limit
        self._running: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()

    test_user: str | None = None
    """The host runs everything as its own user."""

    def stop_untrusted(self) -> None:
        """Nothing to do: :meth:`exec` kills each command's process group when it ends."""

    def exec(
        self,
        argv: Sequence[str],
        timeout: float,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        untrusted: bool = False,
    ) -> ExecResult:
        """Runs ``argv`` in a process group of its own (as this user: the host isolates nothing,
        ``untrusted`` or not). When the command ends (or at the deadline)
        the whole group is killed, so no process it left in the background outlives it; output is
        read until the deadline at the latest, so a process that left the group (``setsid``) and
        holds the pipes open does not hold coevo."""
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd or self.workdir,
                env={**os.environ, **self._env, **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            return ExecResult(127, "", f"{argv[0]}: {exc.strerror}", time.monotonic() - started)
        with self._lock:
            self._running.add(proc)
        stdout, stderr = CappedOutput(self._limit), CappedOutput(self._limit)
        assert proc.stdout is not None and proc.stderr is not None
        try:
            exited = _drain(proc, {proc.stdout: stdout, proc.stderr: stderr}, started + timeout)
            _kill_group(proc)  # what it left in the background (a detached grandchild) goes too
            proc.wait()
        except BaseException:
            _kill_group(proc)
            proc.wait()
            raise
        finally:
            proc.stdout.close()
            proc.stderr.close()
            with self._lock:
                self._running.discard(proc)
        timed_out = not exited
        return ExecResult(
            exit_code=None if timed_out or proc.returncode < 0 else proc.returncode,
            stdout=stdout.text(),
            stderr=stderr.text(),
            duration=time.monotonic() - started,
            timed_out=timed_out,
            truncated=stdout.truncated or stderr.truncated,
        )

    def write_file(self, path: str, data: bytes) -> None:
        target = Path(self.workdir) / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def read_file(self, path: str, limit: int | None = None) -> bytes | None:
        target = Path(self.workdir) / path
        if not target.is_file():
            return None
        with target.open("rb") as handle:
            return _bounded_read(handle, path, limit)

    def close(self) -> None:
        with self._lock:
            running = list(self._running)
        for proc in running:
            _kill_group(proc)

    def scratch(self) -> Path:
        # The host shares everything with everyone, by design; this process's folder is removed
        # by the next coevo command if this one is killed.
        return owned_folder()

    @contextlib.contextmanager
    def writable(self, folders: Sequence[Path]) -> Iterator[LocalSandbox]:
        yield self  # everything the user may write is writable already


class UnsafePath(CoevoError):
    """A file coevo was to write in a folder untrusted code could change is not a plain file there
    (a symbolic link, a pipe, a path leading out of the folder)."""


def read_beneath(root: Path, path: str, limit: int | None = None) -> bytes | None:
    """The bytes of the regular file ``path`` below ``root``, None when there is none; over
    ``limit`` bytes, :class:`~runners.results.UnreadableReport` (what tests wrote is not read
    whole into coevo's memory).

    No symbolic link is followed, anywhere below ``root``: in a folder a container could write
    (a worktree, a scratch folder), a link may point at any file of the host.
    """
    try:
        fd = _open_beneath(root, path, os.O_RDONLY)
    except (OSError, UnsafePath):
        return None
    with os.fdopen(fd, "rb") as handle:
        return _bounded_read(handle, path, limit)


def read_capped(root: Path, path: str, limit: int) -> tuple[str, bool]:
    """The text of the regular file ``path`` below ``root`` as a command's output is kept (its
    first and last ``limit // 2`` bytes, :class:`CappedOutput`) and whether some was dropped;
    empty when there is no such file. No link is followed."""
    try:
        fd = _open_beneath(root, path, os.O_RDONLY)
    except (OSError, UnsafePath):
        return "", False
    kept = CappedOutput(limit)
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        kept.add(handle.read(limit // 2))
        if size > limit:  # the middle is never read
            handle.seek(size - limit // 2)
            kept.truncated = True
        kept.add(handle.read(limit))
    return kept.text(), kept.truncated


def _bounded_read(handle: Any, path: str, limit: int | None) -> bytes:
    if limit is None:
        return bytes(handle.read())
    data = bytes(handle.read(limit + 1))
    if len(data) > limit:
        raise UnreadableReport(f"{path} is over {limit} bytes: not read")
    return data


def write_beneath(root: Path, path: str, data: bytes, folder_mode: int | None = None) -> None:
    """Writes the regular file ``path`` below ``root`` (creating its folders, with ``folder_mode``
    when given), following no symbolic link; raises :class:`UnsafePath` when something else than
    a folder or a file is in the way."""
    try:
        fd = _open_beneath(
            root, path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, create_folders=True, folder_mode=folder_mode
        )
    except OSError as exc:
        raise UnsafePath(f"{path}: not a plain file in {root} ({exc.strerror})") from None
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _open_beneath(
    root: Path, path: str, flags: int, create_folders: bool = False, folder_mode: int | None = None
) -> int:
    parts = [part for part in PurePosixPath(path).parts if part != "."]
    if not parts or parts[0] == "/" or ".." in parts:
        raise UnsafePath(f"{path}: not a path inside {root}")
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            made = False
            if create_folders:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=folder)
                    made = True
            child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
            if made and folder_mode is not None:
                os.fchmod(child, folder_mode)
            os.close(folder)
            folder = child
        # Only a regular file is opened (a device node would be the host's device); O_NONBLOCK: a
        # pipe swapped in meanwhile fails or returns instead of blocking, and fstat below refuses it.
        with contextlib.suppress(FileNotFoundError):
            if not stat.S_ISREG(os.stat(parts[-1], dir_fd=folder, follow_symlinks=False).st_mode):
                raise UnsafePath(f"{path}: not a regular file in {root}")
        fd = os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644, dir_fd=folder)
    finally:
        os.close(folder)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnsafePath(f"{path}: not a regular file in {root}")
    return fd


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


_AFTER_EXIT = 2.0
"""Seconds output is still read after the command exited and its group was killed: what it wrote
is in the pipes by then; a writer still holding them has left the group (``setsid``)."""
_POLL = 0.1
"""Seconds between checks whether the command exited, where no pidfd tells it."""


def _drain(proc: subprocess.Popen[bytes], outputs: Mapping[Any, CappedOutput], deadline: float) -> bool:
    """Reads the command's pipes into ``outputs`` until they close, or until the deadline; returns
    whether the command exited before the deadline.

    Once the command has exited, its group is killed (while the command, a zombie, still holds
    its pid, so no other group can be hit) and the pipes are read for :data:`_AFTER_EXIT` more
    seconds at most, never past the deadline.
    """
    pidfd = _pidfd(proc.pid)
    stop = deadline
    exited = False
    open_pipes = set(outputs)
    with selectors.DefaultSelector() as selector:
        for pipe in outputs:
            os.set_blocking(pipe.fileno(), False)
            selector.register(pipe, selectors.EVENT_READ)
        if pidfd is not None:
            selector.register(pidfd, selectors.EVENT_READ)
        try:
            while True:
                if not exited and _has_exited(proc):
                    exited = True
                    _kill_group(proc)
                    stop = min(deadline, time.monotonic() + _AFTER_EXIT)
                    if pidfd is not None:
                        selector.unregister(pidfd)
                remaining = stop - time.monotonic()
                if remaining <= 0 or (exited and not open_pipes):
                    return exited
                wait = remaining if exited or pidfd is not None else min(remaining, _POLL)
                for key, _ in selector.select(wait):
                    if key.fileobj not in open_pipes:
                        continue  # the pidfd: the command exited, seen at the top of the loop
                    try:
                        chunk = os.read(key.fd, 1 << 16)
                    except BlockingIOError:
                        continue
                    if chunk:
                        outputs[key.fileobj].add(chunk)
                    else:
                        selector.unregister(key.fileobj)
                        open_pipes.discard(key.fileobj)
        finally:
            if pidfd is not None:
                os.close(pidfd)


def _pidfd(pid: int) -> int | None:
    """A file descriptor that becomes readable when ``pid`` exits (Linux 5.3+), or None."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _has_exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the command has exited, without reaping it (its pid stays its own until then)."""
    try:
        return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


class CappedOutput:
    """Output kept within a limit: the first and the last ``limit // 2`` bytes, marked if cut."""

    def __init__(self, limit: int) -> None:
        self._head = bytearray()
        self._tail = bytearray()
        self._half = max(limit // 2, 1)
        self.truncated = False

    def add(self, chunk: bytes) -> None:
        room = self._half - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._tail += chunk
            if len(self._tail) > self._half:
                self.truncated = True
                del self._tail[: len(self._tail) - self._half]

    def text(self) -> str:
        marker = b"\n[... output truncated ...]\n" if self.truncated else b""
        return bytes(self._head + marker + self._tail).decode("utf-8", errors="replace")
