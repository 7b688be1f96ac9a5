"""The store: any SQLAlchemy URL, a SQLite file in WAL mode by default.

A store is opened for writing (``mine``, ``curate``, ``score`` create it when it does not
exist) or for reading (``candidates``, ``funnel``, ``leaderboard`` never create one: a missing,
empty or foreign file is an error, and nothing is written to it). A damaged file, or a lock
that another process holds past a bounded wait, is a :class:`StoreError` naming the file and
what to do, wherever it shows up: at opening, or in any later statement.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from enum import Enum
from pathlib import Path
from typing import Any

from sqlalchemy import JSON, event, inspect, text
from sqlalchemy.engine import Engine, ExceptionContext, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError
from sqlmodel import Session, SQLModel, create_engine

from . import models as _models  # noqa: F401  (registers the tables)
from .errors import CoevoError

DEFAULT_DB = "coevo.db"
DB_ENV = "COEVO_DB"
LOCK_TIMEOUT_ENV = "COEVO_DB_LOCK_TIMEOUT"
DEFAULT_LOCK_TIMEOUT = 60.0
"""Seconds a command waits for another process's lock on a SQLite store before it gives up."""

_MARKER_TABLE = "repository"
"""The table every coevo store has: a database without it is not a coevo store."""
_CHECK_DB = "check --db (or $COEVO_DB)"
_POLL = 0.25


class StoreError(CoevoError):
    """The database could not be opened or written."""


class NewerStore(StoreError):
    """The store was written by a newer coevo (columns or values this one does not know)."""


class NoStore(StoreError):
    """A read found no coevo store: no such file, an empty file, or another program's database."""


class CorruptStore(StoreError):
    """The file is not a SQLite database, or SQLite finds it damaged (truncated, overwritten)."""


class StoreLocked(StoreError):
    """Another process held the store's lock for longer than the bounded wait."""


def database_url(db: str | os.PathLike[str] | None = None) -> str:
    """The SQLAlchemy URL for ``db``: a URL as given, a path as a SQLite file.

    Without ``db``, ``$COEVO_DB`` or ``./coevo.db``.
    """
    value = str(db) if db is not None else os.environ.get(DB_ENV) or DEFAULT_DB
    if "://" in value:
        return value
    return f"sqlite:///{Path(value).expanduser().resolve()}"


class Store:
    """A handle on the database. Construction does no I/O; :meth:`open` (or first use) connects.

    ``create``: a write store creates the file and the tables when missing; a read store
    (``create=False``) refuses to. ``lock_timeout`` bounds the wait for another process's lock
    on a SQLite file; ``waiting`` is called once, with a line saying so, when the wait begins.
    """

    def __init__(
        self,
        url: str,
        *,
        create: bool = True,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        waiting: Callable[[str], None] | None = None,
    ) -> None:
        self.url = url
        self.create = create
        self.lock_timeout = lock_timeout
        self.waiting = waiting
        self._engine: Engine | None = None

    @property
    def name(self) -> str:
        """The store as a user names it: a SQLite file's path, else the URL without its password."""
        path = self._sqlite_file()
        if path is not None:
            return str(path)
        try:
            return make_url(self.url).render_as_string(hide_password=True)
        except ArgumentError:
            return self.url

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = self._connect()
        return self._engine

    def open(self) -> Store:
        """Connects now (checks, waits for a lock, creates or upgrades the tables); returns self."""
        _ = self.engine
        return self

    def _sqlite_file(self) -> Path | None:
        """The file of a SQLite URL; None for other databases, in-memory and ``file:`` URI ones."""
        try:
            url = make_url(self.url)
        except ArgumentError:
            return None
        if not url.drivername.startswith("sqlite") or url.query.get("uri"):
            return None
        database = url.database
        if not database or database == ":memory:" or database.startswith("file:"):
            return None
        return Path(database)

    def _connect(self) -> Engine:
        try:
            url = make_url(self.url)
        except ArgumentError as exc:
            raise StoreError(f"cannot use the database URL {self.url!r}: {exc}") from None
        path = self._sqlite_file()
        kwargs: dict[str, Any] = {}
        if url.drivername.startswith("sqlite"):
            kwargs["connect_args"] = {"timeout": self.lock_timeout}
        if path is not None:
            self._check_file(path)
            self._check_tables(self._wait_for_lock(path), sqlite_file=True)
        try:
            engine = create_engine(url, **kwargs)
        except (ArgumentError, ImportError) as exc:
            raise StoreError(f"cannot use the database URL {self.url!r}: {exc}") from None
        event.listen(engine, "handle_error", self._fault)
        if engine.dialect.name == "sqlite":
            event.listen(engine, "connect", _sqlite_pragmas if self.create else _sqlite_read_pragmas)
        try:
            if path is None:
                self._check_tables(set(inspect(engine).get_table_names()), sqlite_file=False)
            self._refuse_newer(engine)  # before anything is written
            SQLModel.metadata.create_all(engine)
            _add_new_columns(engine)
        except StoreError:
            engine.dispose()
            raise
        except DBAPIError as exc:
            engine.dispose()
            cause = (str(exc.orig).strip().splitlines() or [type(exc.orig).__name__])[0]
            raise StoreError(f"cannot open the database {self.name}: {cause}") from None
        return engine

    def _check_file(self, path: Path) -> None:
        """A read store's file must exist and hold something; any existing file must be SQLite's."""
        if not path.exists():
            if not self.create:
                raise NoStore(f"no coevo store at {path}: {_CHECK_DB}, or create one with coevo mine REPO")
            if not path.parent.is_dir():
                raise StoreError(f"cannot create the database {path}: its folder does not exist")
            return
        if path.is_dir():
            raise NoStore(f"{path} is a folder, not a coevo store: {_CHECK_DB}")
        # Never open() the file here: closing any descriptor of it drops every POSIX lock this
        # process holds on it, the SQLite connections' included; another process would then take
        # itself for the last connection and delete the WAL under them ("malformed"). SQLite's own
        # probe (_wait_for_lock) tells a file that is not a database.
        wal = Path(f"{path}-wal")
        if path.stat().st_size == 0:
            if not self.create and not (wal.is_file() and wal.stat().st_size > 0):
                raise NoStore(
                    f"{path} is an empty file, not a coevo store: {_CHECK_DB}, "
                    "or delete it and create a store with coevo mine REPO"
                )
            return

    def _wait_for_lock(self, path: Path) -> set[str]:
        """Waits, up to the bound, until the file can be read (a read store) or written; returns
        the names of its tables, read before anything (even the journal mode) is written.

        SQLite's own busy wait is silent; polling here lets ``waiting`` tell the user why
        nothing happens, and ends in one :class:`StoreLocked` line instead of a stack of frames.
        """
        deadline = time.monotonic() + self.lock_timeout
        told = False
        probe = "BEGIN IMMEDIATE" if self.create else "BEGIN"
        while True:
            try:
                with closing(sqlite3.connect(path, timeout=_POLL, isolation_level=None)) as connection:
                    connection.execute(probe)
                    rows = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                    tables = {name for (name,) in rows if not name.startswith("sqlite_")}
                    connection.execute("ROLLBACK")
                return tables
            except sqlite3.Error as exc:
                if _is_damage(str(exc)):
                    raise self._damaged(str(exc)) from None
                if not _is_lock(str(exc)):
                    raise StoreError(f"cannot open the database {path}: {exc}") from None
            if time.monotonic() >= deadline:
                raise self._locked()
            if not told and self.waiting is not None:
                self.waiting(
                    f"waiting up to {self.lock_timeout:g} s for another process to release its lock on {path}"
                )
            told = True
            time.sleep(min(_POLL, max(deadline - time.monotonic(), 0.0)))

    def _check_tables(self, tables: set[str], sqlite_file: bool) -> None:
        """A read store must hold coevo's tables; a SQLite file holding only others' is refused
        (another database server may hold other programs' tables beside coevo's)."""
        if _MARKER_TABLE in tables:
            return
        if not self.create:
            what = "holds no coevo store" if not tables else "is another program's database"
            raise NoStore(f"{self.name} {what}: {_CHECK_DB}, or create a store with coevo mine REPO")
        if tables and sqlite_file:
            raise NoStore(
                f"{self.name} is another program's database (tables {', '.join(sorted(tables)[:5])}): "
                f"{_CHECK_DB}; give a new file to create a coevo store"
            )

    def _refuse_newer(self, engine: Engine) -> None:
        """Refuses, before anything is written, a store a newer coevo wrote: a column of its
        tables, or a value of one of their enumerations, that this coevo does not know."""
        existing = inspect(engine)
        known_tables = set(existing.get_table_names())
        for table in SQLModel.metadata.sorted_tables:
            if table.name not in known_tables:
                continue
            declared = {column.name for column in table.columns}
            unknown = sorted({c["name"] for c in existing.get_columns(table.name)} - declared)
            if unknown:
                raise self._newer(f"table {table.name} has column {unknown[0]!r}")
            for column in table.columns:
                allowed = getattr(column.type, "enums", None)
                if not allowed:
                    continue
                with engine.connect() as connection:
                    found = connection.execute(
                        text(f'SELECT DISTINCT "{column.name}" FROM "{table.name}"')
                    ).scalars()
                    strange = sorted({str(v) for v in found if v is not None} - set(allowed))
                if strange:
                    raise self._newer(f"{table.name}.{column.name} holds {strange[0][:40]!r}")

    def _newer(self, what: str) -> NewerStore:
        return NewerStore(
            f"{self.name} was written by a newer coevo ({what}, unknown to this one): upgrade coevo "
            "to use it; nothing was changed"
        )

    def _fault(self, context: ExceptionContext) -> None:
        """A locked or damaged SQLite file, met in any statement, becomes one named error."""
        original = context.original_exception
        if not isinstance(original, sqlite3.Error):
            return
        message = str(original)
        if _is_lock(message):
            raise self._locked()
        if _is_damage(message):
            raise self._damaged(message)

    def _locked(self) -> StoreLocked:
        return StoreLocked(
            f"{self.name} stayed locked by another process for {self.lock_timeout:g} s: let it finish "
            f"(or stop it) and run this again; ${LOCK_TIMEOUT_ENV} sets the wait"
        )

    def _damaged(self, message: str) -> CorruptStore:
        if "file is not a database" in message:
            return CorruptStore(
                f"{self.name} is not a SQLite database (it may be damaged or another kind of file): "
                f"{_CHECK_DB}, or restore the store from a backup"
            )
        return CorruptStore(
            f"{self.name} is damaged ({message}): restore it from a backup, or mine again into a new store"
        )

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session whose transaction commits on success and rolls back on any exception."""
        with Session(self.engine, expire_on_commit=False) as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None


def open_store(
    db: str | os.PathLike[str] | None = None,
    *,
    create: bool = True,
    waiting: Callable[[str], None] | None = None,
) -> Store:
    """A store for ``db`` (a path or SQLAlchemy URL; see :func:`database_url`).

    ``create=False`` for commands that only read: they never create a store. The wait for a
    lock is ``$COEVO_DB_LOCK_TIMEOUT`` seconds (default 60).
    """
    return Store(database_url(db), create=create, lock_timeout=lock_timeout(), waiting=waiting)


def lock_timeout() -> float:
    """``$COEVO_DB_LOCK_TIMEOUT`` in seconds, or the default."""
    value = os.environ.get(LOCK_TIMEOUT_ENV, "").strip()
    if not value:
        return DEFAULT_LOCK_TIMEOUT
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise StoreError(f"${LOCK_TIMEOUT_ENV} is {value!r}: give a number of seconds, e.g. 60")
    return seconds


def _is_lock(message: str) -> bool:
    return "database is locked" in message or "database table is locked" in message


def _is_damage(message: str) -> bool:
    """SQLite's words for a file it cannot trust: SQLITE_CORRUPT and SQLITE_NOTADB."""
    return "malformed" in message or "file is not a database" in message


def _add_new_columns(engine: Engine) -> None:
    """Adds columns a newer coevo declares to tables an older one created (with their defaults).

    ``create_all`` only creates missing tables; a new column must be nullable or have a
    scalar default to be added here, which is how coevo's models grow.
    """
    existing = inspect(engine)
    for table in SQLModel.metadata.sorted_tables:
        if not existing.has_table(table.name):
            continue
        present = {column["name"] for column in existing.get_columns(table.name)}
        for column in table.columns:
            if column.name in present:
                continue
            kind = column.type.compile(dialect=engine.dialect)
            default = _default_sql(column)
            with engine.begin() as connection:
                connection.execute(
                    text(f'ALTER TABLE "{table.name}" ADD COLUMN "{column.name}" {kind}{default}')
                )


def _default_sql(column: Any) -> str:
    value = column.default.arg if column.default is not None and not callable(column.default.arg) else None
    if value is None:
        # JSON lists (``default_factory=list``) start empty; anything else may hold NULL.
        return " NOT NULL DEFAULT '[]'" if isinstance(column.type, JSON) and not column.nullable else ""
    if isinstance(value, Enum):
        value = value.name
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int | float):
        return f" DEFAULT {value}"
    return " DEFAULT '" + str(value).replace("'", "''") + "'"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    # WAL lets readers (the site, `coevo candidates`) work while a miner writes.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _sqlite_read_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """A reader leaves the journal mode, a property of the file, as the writer set it."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()
