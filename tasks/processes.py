"""Which process owns a run, a container or a scratch folder, and whether it still lives.

A run row, a sandbox container and a scratch folder carry their owner: its pid, its start time
(``/proc/<pid>/stat``), the boot and pid namespace it ran in, and the host. A pid alone would
lie: after a kill the kernel hands it to another process, which must not be taken for the
owner. The next coevo command that uses such things marks the runs of dead owners
``interrupted`` and removes their containers and folders; anything whose owner it cannot judge
(another host, another pid namespace, a row written before owners were recorded) stays.

A signal that asks a command to stop (SIGTERM, as SIGINT does) becomes :class:`Terminated`, a
:class:`KeyboardInterrupt`: every ``except KeyboardInterrupt`` that records an interruption and
cleans up does so for both.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from types import FrameType

from sqlmodel import col, select

from .models import CurationRun, MiningRun, RunStatus
from .store import Store


class Liveness(StrEnum):
    ALIVE = "alive"
    DEAD = "dead"
    UNKNOWN = "unknown"
    """Another host or pid namespace, or a system without ``/proc``: nobody may judge it here."""


@dataclass(frozen=True)
class Owner:
    """A process, named so that a later process with the same pid is not taken for it."""

    pid: int
    start: str
    """Its start time in clock ticks since boot (``/proc/<pid>/stat``), "" where unknown."""
    boot: str
    """The first hex digits of the boot id: a reboot ends every process."""
    namespace: str
    """Its pid namespace (hex inode): pids of other namespaces (containers) are other processes."""
    host: str = ""
    """The host name; "" in folder names (a temporary folder is this host's)."""

    @classmethod
    def current(cls) -> Owner:
        """This process."""
        pid = os.getpid()
        return cls(pid, _start_time(pid) or "", _boot(), _namespace(), socket.gethostname())

    @property
    def name(self) -> str:
        """``pid-start-boot-namespace``: safe in a file name."""
        return f"{self.pid}-{self.start or 'x'}-{self.boot or 'x'}-{self.namespace or 'x'}"

    @property
    def token(self) -> str:
        """``pid-start-boot-namespace@host``, as run rows and container labels keep it."""
        return f"{self.name}@{self.host}"

    @classmethod
    def parse(cls, text: str | None) -> Owner | None:
        """The owner a :attr:`token` or :attr:`name` names; None when it names none."""
        if not text:
            return None
        name, _, host = text.partition("@")
        parts = name.split("-")
        if len(parts) != 4 or not parts[0].isdigit():
            return None
        start, boot, namespace = ("" if part == "x" else part for part in parts[1:])
        return cls(int(parts[0]), start, boot, namespace, host)

    def liveness(self) -> Liveness:
        """Whether this process still runs, as far as this process can tell."""
        here = Owner.current()
        if self.host and self.host != here.host:
            return Liveness.UNKNOWN
        if not (self.boot and here.boot and self.start):  # no /proc: the pid is all there is
            if self.namespace == here.namespace and not _pid_exists(self.pid):
                return Liveness.DEAD
            return Liveness.UNKNOWN
        if self.boot != here.boot:
            return Liveness.DEAD  # this host rebooted since
        if self.namespace != here.namespace:
            return Liveness.UNKNOWN
        return Liveness.ALIVE if _start_time(self.pid) == self.start else Liveness.DEAD

    def is_dead(self) -> bool:
        return self.liveness() is Liveness.DEAD


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name; None when there is no process."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            text = handle.read()
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()


def _start_time(pid: int) -> str | None:
    """A live process's start time (clock ticks since boot); None when it is gone or a zombie."""
    fields = _stat_fields(pid)
    if fields is None or len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return fields[19]


def _boot() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            return handle.read().strip().replace("-", "")[:8]
    except OSError:
        return ""


def _namespace() -> str:
    try:
        link = os.readlink("/proc/self/ns/pid")  # pid:[4026531836]
    except OSError:
        return ""
    digits = link.partition("[")[2].rstrip("]")
    return format(int(digits), "x") if digits.isdigit() else ""


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# --- runs whose process is gone ---------------------------------------------------------------------


def mark_abandoned_runs(store: Store) -> int:
    """Marks ``interrupted`` the runs still ``running`` whose owner process is dead (killed, or its
    machine went down); returns how many. Runs of live processes, and runs whose owner cannot be
    judged here, stay as they are."""
    marked = 0
    with store.session() as session:
        running: list[MiningRun | CurationRun] = [
            *session.exec(select(MiningRun).where(col(MiningRun.status) == RunStatus.RUNNING)).all(),
            *session.exec(select(CurationRun).where(col(CurationRun.status) == RunStatus.RUNNING)).all(),
        ]
        for run in running:
            owner = Owner.parse(run.owner)
            if owner is None or not owner.is_dead():
                continue
            run.status = RunStatus.INTERRUPTED
            gone = f"its process (pid {owner.pid}) ended without finishing it (killed?)"
            run.message = f"{gone}; run again to resume" + (f"; {run.message}" if run.message else "")
            session.add(run)
            marked += 1
    return marked


# --- signals that stop a command ---------------------------------------------------------------------


class Terminated(KeyboardInterrupt):
    """The process was asked to stop by a signal other than SIGINT (SIGTERM, SIGHUP)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def _raise_terminated(signum: int, _frame: FrameType | None) -> None:
    raise Terminated(signum)


def stop_on_signals() -> None:
    """From now on SIGTERM and SIGHUP raise :class:`Terminated` in the main thread, as SIGINT raises
    :class:`KeyboardInterrupt`: the command records the interruption and cleans up. Only the main
    thread may set signal handlers: elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in STOP_SIGNALS:
        signal.signal(signum, _raise_terminated)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Holds SIGINT and the stop signals back until the block ends, so what it writes is written
    whole or not at all; a signal that came meanwhile is delivered then. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    signums = (signal.SIGINT, *STOP_SIGNALS)
    previous = {
        signum: signal.signal(signum, lambda signum, frame: received.append(signum)) for signum in signums
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if received:
        signal.raise_signal(received[0])  # to the handler restored above
