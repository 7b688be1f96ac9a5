"""`coevo` run as a command, each run a process of its own forked from one that has imported coevo.

A start of the console script spends ~0.7 s of processor time importing SQLAlchemy, SQLModel and
coevo before the command does anything, and the suite starts it hundreds of times. Here each xdist
worker keeps one server process that has imported the CLI and every command's module, and each
:func:`coevo` call is a fork of it: a process of its own, with the caller's arguments, environment,
working folder and files for its standard streams, that runs the console script's entry point and
exits as the script would (its exit status, atexit handlers, threads joined). What a fork shares
with its server is only what importing left behind (no command has run in the server), and its
string hashes' seed: pass ``fresh=True`` where a test compares runs that must not share it, or
where the start itself is under test (the console script: ``.venv/bin/coevo``).

Tests that signal, stream or race a command use :data:`EXE` with :mod:`subprocess` as before.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

EXE = Path(sys.executable).parent / "coevo"
"""The installed console script, as a user starts it."""

_SERVER = r"""
import sys

sys.path[0] = sys.argv[3]  # the console script's folder, not the working folder, as for the script

import array, gc, json, os, signal, socket, struct, tempfile

import click
import sqlalchemy.orm

from coevo.cli import _COMMANDS, app, entry_point

for _name in _COMMANDS:  # every command's module, as its first use would load it
    app.get_command(click.Context(app), _name)
sqlalchemy.orm.configure_mappers()  # what the first query of a command would do
gc.freeze()  # what importing made stays out of the forks' collections while they run


def _serve(path, parent):
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path + ".new")
    listener.listen(16)
    os.rename(path + ".new", path)  # the path appears listening: no client connects in between
    listener.settimeout(1.0)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # monitors reaped by the kernel
    while True:
        try:
            connection, _ = listener.accept()
        except TimeoutError:
            if os.getppid() != parent:  # the worker is gone
                os._exit(0)
            continue
        fds = array.array("i")
        message, ancillary, _, _ = connection.recvmsg(1 << 20, socket.CMSG_LEN(3 * fds.itemsize))
        for level, kind, data in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
        if os.fork() == 0:  # the monitor: forks the command, waits for it, reports its status
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            request = json.loads(message)
            pid = os.fork()
            if pid == 0:
                connection.close()
                for target, fd in enumerate(fds):
                    os.dup2(fd, target)
                    os.close(fd)
                os.chdir(request["cwd"])
                os.environ.clear()
                os.environ.update(request["env"])
                tempfile.tempdir = None  # found again from $TMPDIR, as by a new process
                return request["argv"]
            for fd in fds:
                os.close(fd)
            connection.sendall(struct.pack("!q", pid))
            _, status = os.waitpid(pid, 0)
            connection.sendall(struct.pack("!q", status))
            os._exit(0)
        connection.close()
        for fd in fds:
            os.close(fd)


sys.argv = _serve(sys.argv[1], int(sys.argv[2]))
try:
    status = entry_point()
finally:
    gc.unfreeze()  # the exit collects everything, as a process's own exit does (a store's close)
sys.exit(status)
"""

_server: tuple[subprocess.Popen[bytes], str, dict[str, str]] | None = None


_READ_AT_START = ("LANG", "LANGUAGE", "FORCE_COLOR", "NO_COLOR", "TERM", "COLORTERM", "COLUMNS", "LINES")
"""Read as Python starts (the locale) or as coevo's modules load (its consoles' colours and width)."""


def _at_start(env: Mapping[str, str]) -> dict[str, str]:
    """What of ``env`` is read before a command runs (Python's own ``PYTHON*``, :data:`_READ_AT_START`):
    a fork cannot take it from its request, so a run asking for other values starts afresh."""
    return {k: v for k, v in env.items() if k.startswith(("PYTHON", "LC_")) or k in _READ_AT_START}


def _server_for(env: Mapping[str, str]) -> str | None:
    """The socket of this process's server (started on first use), or None when ``env`` differs
    from the server's in what Python reads at its start."""
    global _server
    if _server is not None and _server[0].poll() is None:
        return _server[1] if _at_start(env) == _server[2] else None
    folder = tempfile.mkdtemp(prefix="coevo-cli-")
    path = os.path.join(folder, "socket")
    process = subprocess.Popen(
        [sys.executable, "-c", _SERVER, path, str(os.getpid()), str(EXE.parent)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while not os.path.exists(path):
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the coevo fork server did not start (exit status {process.poll()})")
        time.sleep(0.02)
    _server = (process, path, _at_start(os.environ))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    atexit.register(process.kill)
    return _server[1] if _at_start(env) == _server[2] else None


def coevo(
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    input: str | None = None,
    timeout: float | None = None,
    fresh: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``coevo ARGS`` as :func:`subprocess.run` with ``capture_output=True, text=True`` runs it:
    ``env`` the whole environment (default: this process's), ``cwd`` its folder."""
    argv = [str(EXE), *args]
    environment = dict(os.environ if env is None else env)
    server = None if fresh else _server_for(environment)
    if server is None:
        return subprocess.run(
            argv,
            capture_output=True,
            text=True,
            env=environment,
            cwd=cwd,
            input=input,
            timeout=timeout,
            check=False,
        )
    request = {"argv": argv, "env": environment, "cwd": str(cwd or os.getcwd())}
    with (
        tempfile.TemporaryFile() as stdin,
        tempfile.TemporaryFile() as stdout,
        tempfile.TemporaryFile() as stderr,
        socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as connection,
    ):
        stdin.write((input or "").encode())
        stdin.seek(0)
        connection.connect(server)
        fds = struct.pack("3i", stdin.fileno(), stdout.fileno(), stderr.fileno())
        connection.sendmsg([json.dumps(request).encode()], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
        pid = struct.unpack("!q", _read(connection, None))[0]
        try:
            status = struct.unpack("!q", _read(connection, timeout))[0]
        except TimeoutError:
            os.kill(pid, signal.SIGKILL)
            _read(connection, None)
            raise subprocess.TimeoutExpired(argv, timeout or 0, _text(stdout), _text(stderr)) from None
        return subprocess.CompletedProcess(
            argv, os.waitstatus_to_exitcode(status), _text(stdout), _text(stderr)
        )


def _read(connection: socket.socket, timeout: float | None) -> bytes:
    connection.settimeout(timeout)
    data = b""
    while len(data) < 8:
        chunk = connection.recv(8 - len(data))
        if not chunk:
            raise RuntimeError("the coevo fork server's monitor ended without a status")
        data += chunk
    return data


def _text(stream: IO[bytes]) -> str:
    """What the command wrote, decoded as ``text=True`` decodes it (universal newlines)."""
    stream.seek(0)
    return stream.read().decode().replace("\r\n", "\n").replace("\r", "\n")
