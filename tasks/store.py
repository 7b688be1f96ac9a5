"""The store: any SQLAlchemy URL, a SQLite file in WAL mode by default."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Any

from sqlalchemy import JSON, event, inspect, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import ArgumentError, OperationalError
from sqlmodel import Session, SQLModel, create_engine

from . import models as _models  # noqa: F401  (registers the tables)
from .errors import CoevoError

DEFAULT_DB = "coevo.db"
DB_ENV = "COEVO_DB"


class StoreError(CoevoError):
    """The database could not be opened or written."""


def database_url(db: str | os.PathLike[str] | None = None) -> str:
    """The SQLAlchemy URL for ``db``: a URL as given, a path as a SQLite file.

    Without ``db``, ``$COEVO_DB`` or ``./coevo.db``.
    """
    value = str(db) if db is not None else os.environ.get(DB_ENV) or DEFAULT_DB
    if "://" in value:
        return value
    return f"sqlite:///{Path(value).expanduser().resolve()}"


class Store:
    """A handle on the database. Construction does no I/O; :meth:`open` creates the tables."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._engine: Engine | None = None

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = self._connect()
        return self._engine

    def _connect(self) -> Engine:
        kwargs: dict[str, Any] = {}
        if self.url.startswith("sqlite"):
            path = self.url.removeprefix("sqlite:///")
            if path and path != ":memory:" and not Path(path).parent.is_dir():
                raise StoreError(f"cannot create the database {path}: its folder does not exist")
            kwargs["connect_args"] = {"timeout": 60}
        try:
            engine = create_engine(self.url, **kwargs)
        except (ArgumentError, ImportError) as exc:
            raise StoreError(f"cannot use the database URL {self.url!r}: {exc}") from None
        if engine.dialect.name == "sqlite":
            event.listen(engine, "connect", _sqlite_pragmas)
        try:
            SQLModel.metadata.create_all(engine)
            _add_new_columns(engine)
        except OperationalError as exc:
            raise StoreError(f"cannot open the database {self.url}: {exc.orig}") from None
        return engine

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


def open_store(db: str | os.PathLike[str] | None = None) -> Store:
    """A store for ``db`` (a path or SQLAlchemy URL; see :func:`database_url`)."""
    return Store(database_url(db))


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
