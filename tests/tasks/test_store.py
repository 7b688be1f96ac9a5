"""The store: URLs, WAL mode, timezone-aware timestamps and clear errors."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlmodel import select

from tasks import (
    LOCK_TIMEOUT_ENV,
    CorruptStore,
    MinedCommit,
    NoStore,
    Repository,
    Store,
    StoreError,
    StoreLocked,
    database_url,
    open_store,
)


def test_database_url_from_path_env_and_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert database_url(tmp_path / "a.db") == f"sqlite:///{tmp_path / 'a.db'}"
    assert database_url("postgresql://u@h/db") == "postgresql://u@h/db"
    monkeypatch.setenv("COEVO_DB", str(tmp_path / "env.db"))
    assert database_url() == f"sqlite:///{tmp_path / 'env.db'}"


def test_sqlite_file_is_in_wal_mode_and_keeps_time_zones(tmp_path: Path) -> None:
    store = open_store(tmp_path / "c.db")
    when = datetime(2024, 3, 3, 10, 0, tzinfo=timezone(timedelta(hours=1)))
    with store.session() as s:
        repo = Repository(name="r", location="r", path="/r", language="java", added_at=when)
        s.add(repo)
        s.flush()
        assert repo.id is not None
        s.add(MinedCommit(repository_id=repo.id, sha="a" * 40, committer_date=when, outcome="paired"))
    with store.engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        stored = conn.execute(text("SELECT committer_date FROM minedcommit")).scalar()
    assert stored == "2024-03-03T09:00:00+00:00"
    with open_store(tmp_path / "c.db").session() as s:
        (row,) = s.exec(select(MinedCommit)).all()
    assert row.committer_date == when
    assert row.committer_date.tzinfo is not None


def test_naive_datetimes_are_refused(tmp_path: Path) -> None:
    store = open_store(tmp_path / "c.db")
    with pytest.raises(Exception, match="naive datetime"), store.session() as s:
        s.add(Repository(name="r", location="r", path="/r", language="java", added_at=datetime(2024, 1, 1)))
        s.flush()


def test_unique_keys_refuse_a_second_write(tmp_path: Path) -> None:
    store = open_store(tmp_path / "c.db")
    with store.session() as s:
        s.add(Repository(name="r", location="r", path="/r", language="java"))
    with pytest.raises(Exception, match="UNIQUE"), store.session() as s:
        s.add(Repository(name="r", location="r2", path="/r2", language="java"))
        s.flush()
    with store.session() as s:
        assert len(s.exec(select(Repository)).all()) == 1


def test_bad_url_is_a_store_error() -> None:
    with pytest.raises(StoreError, match="cannot use the database URL"):
        _ = open_store("nosuchdialect://x").engine


def test_a_database_from_an_older_coevo_gets_the_new_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as old:  # the repository table as the first coevo wrote it
        old.execute(
            "CREATE TABLE repository (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL,"
            " location VARCHAR NOT NULL, path VARCHAR NOT NULL, language VARCHAR NOT NULL,"
            " test_globs JSON NOT NULL,"
            " exclude_globs JSON NOT NULL, watermark_sha VARCHAR, watermark_since VARCHAR(40),"
            " watermark_full_history BOOLEAN NOT NULL, added_at VARCHAR(40))"
        )
        old.execute(
            "INSERT INTO repository VALUES (1, 'r', 'r', '/r', 'java', '[]', '[]', NULL, NULL, 0, NULL)"
        )
    with open_store(path).session() as s:
        (repo,) = s.exec(select(Repository)).all()
        assert repo.build_args == []
        repo.build_args = ["-DjdkVersion=1.8"]
        s.add(repo)
    with open_store(path).session() as s:
        assert s.exec(select(Repository)).one().build_args == ["-DjdkVersion=1.8"]


def test_a_read_store_never_creates_and_never_writes(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    with pytest.raises(NoStore, match="no coevo store at"):
        open_store(missing, create=False).open()
    assert list(tmp_path.iterdir()) == []
    path = tmp_path / "c.db"
    open_store(path).open().close()
    with sqlite3.connect(path) as conn:  # as another tool might leave it: a rollback journal
        conn.execute("PRAGMA journal_mode=DELETE")
    before = path.read_bytes()
    store = open_store(path, create=False)
    with store.session() as s:
        assert s.exec(select(Repository)).all() == []
    store.close()
    assert path.read_bytes() == before
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)


def test_a_lock_taken_during_a_session_ends_in_store_locked(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    store = Store(database_url(path), lock_timeout=0.5).open()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        locked = pytest.raises(StoreLocked, match=f"{path} stayed locked by another process for 0.5 s")
        with locked, store.session() as s:
            s.add(Repository(name="r", location="r", path="/r", language="java"))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with store.session() as s:
        assert s.exec(select(Repository)).all() == []


def test_damage_met_after_opening_is_a_corrupt_store(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    store = open_store(path).open()
    with store.session() as s:
        for n in range(200):
            s.add(Repository(name=f"r{n}", location="x" * 400, path=f"/r{n}", language="java"))
    store.close()
    data = bytearray(path.read_bytes())
    data[4096 * 2 :] = os.urandom(len(data) - 4096 * 2)  # the header is intact, the pages are not
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptStore, match=f"{path} is damaged"), open_store(path).session() as s:
        s.exec(select(Repository)).all()


def test_the_wait_for_a_lock_is_told_once_and_ends_when_the_lock_goes(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    open_store(path).open().close()
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    told: list[str] = []
    release = threading.Timer(1.5, lambda: holder.execute("ROLLBACK"))
    release.start()
    try:
        Store(database_url(path), lock_timeout=30, waiting=told.append).open().close()
    finally:
        release.join()
        holder.close()
    assert told == [f"waiting up to 30 s for another process to release its lock on {path}"]


def test_a_bad_lock_timeout_is_a_store_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LOCK_TIMEOUT_ENV, "soon")
    with pytest.raises(StoreError, match="COEVO_DB_LOCK_TIMEOUT is 'soon'"):
        open_store("x.db")


def test_opening_a_store_keeps_the_locks_of_this_process(tmp_path: Path) -> None:
    """Opening a store must not open() its file: closing any descriptor of it drops this process's
    POSIX locks, SQLite's included, and another process closing its own connection would then
    delete the WAL under this one's (the next read: "database disk image is malformed")."""
    import subprocess
    import sys

    db = tmp_path / "c.db"
    first = open_store(db)
    with first.session() as session:
        session.add(Repository(name="a", location="a", path="/a", language="python"))
    writer = "\n".join(
        [
            "import sys",
            f"sys.path.insert(0, {str(Path(__file__).parents[2])!r})",
            "from tasks import Repository, open_store",
            f"with open_store({str(db)!r}).session() as session:",
            "    session.add(Repository(name='b', location='b', path='/b', language='python'))",
        ]
    )
    open_store(db).open()  # a second store in this process, while the first one's connection lives
    subprocess.run([sys.executable, "-c", writer], check=True)
    assert Path(f"{db}-wal").exists()  # the other process did not take itself for the last one
    with open_store(db).session() as session:
        assert sorted(r.name for r in session.exec(select(Repository)).all()) == ["a", "b"]


def test_opening_a_second_store_on_a_file_keeps_the_first_ones_locks(tmp_path: Path) -> None:
    """Closing any descriptor of a file drops every POSIX lock the process holds on it, SQLite's
    too: had the second store read the file's header while the first was connected, the other
    process would take itself for the last user, delete the write-ahead log, and the first
    store's next write would fail (or read a "malformed" database)."""
    db = tmp_path / "coevo.db"
    first = open_store(db).open()
    with first.session() as session:
        session.add(Repository(name="a", location="a", path="/a", language="python"))
    second = open_store(db, create=False).open()
    other = (
        "import sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1])\n"
        "c.execute('CREATE TABLE other (x)')\n"
        "c.executemany('INSERT INTO other VALUES (?)', [(n,) for n in range(100)])\n"
        "c.commit()\n"
        "c.close()\n"
    )
    subprocess.run([sys.executable, "-c", other, str(db)], check=True)
    assert Path(f"{db}-wal").exists(), "another process deleted the log under this one's connections"
    with first.session() as session:
        session.add(Repository(name="c", location="c", path="/c", language="python"))
    with second.session() as session:
        assert sorted(r.name for r in session.exec(select(Repository)).all()) == ["a", "c"]
        assert session.exec(text("SELECT count(*) FROM other")).one() == (100,)
    first.close()
    second.close()
