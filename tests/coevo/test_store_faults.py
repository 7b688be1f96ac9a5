"""A faulty store met through the real command line: one line naming the file, exit 1, nothing written.

Every fault is a real file: a store mined from the example project, then overwritten with
random bytes, truncated, emptied, mistyped or locked by another process.
"""

from __future__ import annotations

import os
import pty
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tasks import LOCK_TIMEOUT_ENV
from tests import cli

COEVO = str(Path(sys.executable).parent / "coevo")
READ_COMMANDS = (("candidates",), ("funnel",), ("leaderboard",), ("show-run", "gold", "gen-0"))


def coevo(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return cli.coevo(*args, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The example project and a real store mined from it (closed: no WAL file beside it)."""
    root = tmp_path_factory.mktemp("mined")
    assert coevo("example", str(root / "example")).returncode == 0
    result = coevo("mine", str(root / "example"), "--db", str(root / "coevo.db"))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in root.iterdir()) == ["coevo.db", "example"]
    return root / "example", root / "coevo.db"


@pytest.fixture
def store(mined: tuple[Path, Path], tmp_path: Path) -> Path:
    """A private copy of the mined store, alone in its folder."""
    folder = tmp_path / "store"
    folder.mkdir()
    return Path(shutil.copy(mined[1], folder / "coevo.db"))


def _folder(path: Path) -> dict[str, bytes]:
    """Every file beside the store and its bytes: the whole state a command could change."""
    return {p.name: p.read_bytes() for p in sorted(path.parent.iterdir())}


def _one_line_error(result: subprocess.CompletedProcess[str], *words: str) -> str:
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ")
    for word in words:
        assert word in line, line
    return line


def _fault_of_every_read_command(store: Path, *words: str) -> None:
    before = _folder(store) if store.parent.is_dir() else None
    for command in READ_COMMANDS:
        _one_line_error(coevo(*command, "--db", str(store)), str(store), *words)
        assert (_folder(store) if store.parent.is_dir() else None) == before


def test_random_bytes(store: Path) -> None:
    store.write_bytes(os.urandom(store.stat().st_size))
    _fault_of_every_read_command(store, "not a SQLite database", "backup")


def test_a_truncated_store(store: Path) -> None:
    data = store.read_bytes()
    store.write_bytes(data[: len(data) // 2])
    _fault_of_every_read_command(store, "is damaged", "malformed", "backup")


def test_a_store_cut_inside_its_header(store: Path) -> None:
    store.write_bytes(store.read_bytes()[:20])  # SQLite cannot tell this from any other file
    _fault_of_every_read_command(store, "may be damaged", "backup")


def test_a_zero_byte_file(store: Path) -> None:
    store.write_bytes(b"")
    _fault_of_every_read_command(store, "is an empty file, not a coevo store", "--db")


def test_a_mistyped_path_creates_nothing(store: Path) -> None:
    typo = store.with_name("coevo.bd")
    _fault_of_every_read_command(typo, "no coevo store at", "--db", "coevo mine")
    assert not typo.exists()


def test_another_programs_database_is_refused_by_reads_and_writes(
    mined: tuple[Path, Path], store: Path
) -> None:
    with sqlite3.connect(store.with_name("other.db")) as other:
        other.execute("CREATE TABLE bookmarks (url TEXT)")
    other_db = store.with_name("other.db")
    store.unlink()
    _fault_of_every_read_command(other_db, "another program's database")
    before = _folder(other_db)
    _one_line_error(coevo("mine", str(mined[0]), "--db", str(other_db)), "another program's database")
    assert _folder(other_db) == before


@pytest.mark.parametrize("fault", ["random bytes", "truncated"])
def test_a_write_command_on_a_damaged_store_writes_nothing(
    mined: tuple[Path, Path], store: Path, fault: str
) -> None:
    data = store.read_bytes()
    store.write_bytes(os.urandom(len(data)) if fault == "random bytes" else data[: len(data) // 2])
    before = _folder(store)
    _one_line_error(coevo("mine", str(mined[0]), "--db", str(store)), str(store))
    assert _folder(store) == before


def test_a_write_command_creates_its_store_and_a_read_then_finds_it(
    mined: tuple[Path, Path], tmp_path: Path
) -> None:
    db = tmp_path / "new.db"
    assert coevo("mine", str(mined[0]), "--db", str(db)).returncode == 0
    listing = coevo("candidates", "--db", str(db))
    assert listing.returncode == 0 and listing.stdout.splitlines()[-1].startswith("2 candidates")


@contextmanager
def _locked(store: Path, exclusive_mode: bool = False) -> Iterator[subprocess.Popen[str]]:
    """Another process holding ``BEGIN EXCLUSIVE`` on the store until the block ends.

    In WAL mode that blocks writers only; with ``exclusive_mode`` (SQLite's
    ``locking_mode=EXCLUSIVE``) it blocks readers too.
    """
    script = (
        "import sqlite3, sys\n"
        f"c = sqlite3.connect({str(store)!r}, isolation_level=None)\n"
        + ("c.execute('PRAGMA locking_mode=EXCLUSIVE')\n" if exclusive_mode else "")
        + "c.execute('BEGIN EXCLUSIVE')\n"
        "c.execute('SELECT count(*) FROM repository').fetchall()\n"
        "print('locked', flush=True)\n"
        "sys.stdin.read()\n"
        "c.execute('ROLLBACK')\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        yield holder
    finally:
        if holder.stdin is not None:
            holder.stdin.close()
        holder.wait(timeout=30)


def _main_file(store: Path) -> bytes:
    return store.read_bytes()


def test_a_write_lock_held_past_the_wait_is_one_line_and_nothing_is_written(
    mined: tuple[Path, Path], store: Path
) -> None:
    before = _main_file(store)
    with _locked(store):
        result = coevo("mine", str(mined[0]), "--db", str(store), env={LOCK_TIMEOUT_ENV: "1"})
        _one_line_error(result, str(store), "stayed locked by another process for 1 s", LOCK_TIMEOUT_ENV)
        # WAL: readers do not wait for a writer.
        listing = coevo("candidates", "--db", str(store), env={LOCK_TIMEOUT_ENV: "1"})
        assert listing.returncode == 0 and listing.stdout.splitlines()[-1].startswith("2 candidates")
    assert _main_file(store) == before


def test_a_lock_that_shuts_out_readers_is_one_line_for_a_read_command(store: Path) -> None:
    before = _main_file(store)
    with _locked(store, exclusive_mode=True):
        for command in READ_COMMANDS:
            result = coevo(*command, "--db", str(store), env={LOCK_TIMEOUT_ENV: "1"})
            _one_line_error(result, str(store), "stayed locked")
    assert _main_file(store) == before


def test_on_a_terminal_the_wait_is_told_and_a_lock_released_in_time_lets_the_command_run(
    mined: tuple[Path, Path], store: Path
) -> None:
    with _locked(store) as holder:
        controller, terminal = pty.openpty()
        command = subprocess.Popen(
            [COEVO, "mine", str(mined[0]), "--db", str(store)],
            stdout=subprocess.PIPE,
            stderr=terminal,
            text=True,
            env={**os.environ, LOCK_TIMEOUT_ENV: "60"},
        )
        os.close(terminal)
        told = b""
        while b"\n" not in told:
            told += os.read(controller, 1024)
        assert f"waiting up to 60 s for another process to release its lock on {store}".encode() in told
        assert holder.stdin is not None
        holder.stdin.close()
    stdout, _ = command.communicate(timeout=60)
    os.close(controller)
    assert command.returncode == 0
    assert stdout.startswith("example: completed")


@pytest.mark.parametrize("change", ["a value", "a column"])
def test_a_store_of_a_newer_coevo_is_refused_by_every_command_and_never_written(
    mined: tuple[Path, Path], store: Path, change: str
) -> None:
    """A newer coevo adds statuses and columns; this one would fail on them with a traceback, or
    write rows the newer one then misreads: every command refuses the store in one line."""
    with sqlite3.connect(store) as connection:
        if change == "a value":
            connection.execute("UPDATE miningrun SET status = 'ARCHIVED'")
        else:
            connection.execute("ALTER TABLE repository ADD COLUMN stars INTEGER")
    connection.close()
    before = _folder(store)
    for command in (
        *READ_COMMANDS,
        ("tasks",),
        ("show-task", "gen-0"),
        ("export", "--out", str(store.parent / "s")),
    ):
        _one_line_error(coevo(*command, "--db", str(store)), "written by a newer coevo", "upgrade coevo")
        assert _folder(store) == before, command
    for command in (("mine", str(mined[0])), ("curate",), ("score", "--agent", "gold")):
        _one_line_error(coevo(*command, "--db", str(store)), "written by a newer coevo")
        assert _folder(store) == before, command
