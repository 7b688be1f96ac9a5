"""What several commands share: the options declared once (``--db``, ``--json``, ``--backend``,
the window, ``--limit``…), the consoles, the progress bar, dates and escaping of printed text."""

from __future__ import annotations

import sys
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)

import runners
from runners import BACKENDS
from tasks import (
    CoevoError,
    Store,
    open_store,
)

# Piped output must not be cut to 80 columns: paths and method names are the payload. Nothing
# printed is Rich markup: test ids (`test_x[a]`), pip arguments (`.[test,dev]`), messages and
# names are printed as written.
out = Console(width=None if sys.stdout.isatty() else 10_000, markup=False)
err = Console(stderr=True, soft_wrap=True, markup=False)


class BadDate(CoevoError):
    """A date option that is not ISO 8601."""


def parse_date(value: str | None, option: str) -> datetime | None:
    """An ISO date or datetime; a date means midnight UTC, a time without zone means UTC."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise BadDate(f"{option} {value!r} is not a date; use YYYY-MM-DD or an ISO 8601 time") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def opened_store(db: str | None, *, write: bool) -> Store:
    """The store, opened now so a fault ends the command before any work. A read command
    (``write=False``) never creates a store; a wait for another process's lock says so on a terminal."""
    return open_store(db, create=write, waiting=_notice).open()


def _notice(line: str) -> None:
    if err.is_terminal:
        err.print(f"{line}…", highlight=False)


def common(command: Callable[..., None]) -> Callable[..., None]:
    """The options every command takes: the database and JSON output."""
    command = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(command)
    return click.option(
        "--db",
        metavar="PATH|URL",
        help="SQLite file or SQLAlchemy URL [env COEVO_DB; default ./coevo.db].",
    )(command)


SINCE = click.option("--since", metavar="DATE", help="Only commits on or after this date (YYYY-MM-DD).")


def window(command: Callable[..., None]) -> Callable[..., None]:
    command = click.option("--until", metavar="DATE", help="Only commits before this date (YYYY-MM-DD).")(
        command
    )
    return SINCE(command)


RERUNS = click.option(
    "--reruns",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Runs of every matrix cell; runs that disagree make the cell flaky.",
)
"""Curation's reruns: ``coevo run`` and ``curate`` take it, and ``schedule add`` for its cycles."""

CURATE = click.option(
    "--curate/--no-curate",
    default=True,
    show_default=True,
    help="Curate what was mined (build and run the candidates' tests).",
)
SNAPSHOTS = click.option(
    "--snapshots",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("snapshots"),
    show_default=True,
    help="Where a snapshot of every task is written when a run or cycle gained or retired tasks.",
)
SITE = click.option(
    "--site",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("site"),
    show_default=True,
    help="Where the static site is rendered (coevo site): at the end of a run; by a cycle, when "
    "it gained or retired tasks.",
)
"""What ``coevo run`` and ``schedule add`` (for its cycles) do after mining."""


BACKEND = click.option(
    "--backend",
    type=click.Choice(list(BACKENDS)),
    default="auto",
    show_default=True,
    help="Where to build and run: a Docker container, the host, or Docker when a daemon answers.",
)


def chosen_backend(requested: str, risk: str, check: Callable[[str], None] | None = None) -> str:
    """``--backend`` resolved. When ``auto`` finds no Docker daemon, one warning line on stderr
    names the ``risk`` of working on the host, once ``check`` (if any) accepts the backend."""
    backend = runners.resolve_backend(requested)
    if check is not None:
        check(backend)
    if requested == "auto" and backend == "local":
        err.print(
            f"warning: no Docker daemon answers: {risk} (use --backend docker to isolate it)", highlight=False
        )
    return backend


CURATING_RISK = "curating on the host runs each repository's code here"
BUILDING_RISK = "building on the host runs the repository's code here"

MAVEN_ARG = click.option(
    "--maven-arg",
    "maven_args",
    multiple=True,
    metavar="ARG",
    help="An extra Maven argument for this repository's builds (repeatable), e.g. -DjdkVersion=1.8.",
)


def base_images_of(values: tuple[str, ...]) -> dict[str, str]:
    found: dict[str, str] = {}
    for value in values:
        key, sep, image = value.partition("=")
        if not sep or not key or not image:
            raise click.BadParameter(f"{value!r} is not KEY=IMAGE (java17=debian:bookworm-slim)")
        found[key] = image
    return found


BASE_IMAGE = click.option(
    "--base-image",
    "base_images",
    multiple=True,
    metavar="KEY=IMAGE",
    help="The Debian-based image a base starts from (repeatable), e.g. java17=my-registry/debian:12; "
    "also $COEVO_BASE_IMAGES. Default: debian:bookworm-slim.",
)
LANGUAGE = click.option(
    "--language",
    type=click.Choice(["auto", "java", "python"]),
    default="auto",
    show_default=True,
    help="The repository's language; auto detects it from the files.",
)


def mining_options(command: Callable[..., None]) -> Callable[..., None]:
    command = click.option(
        "--workers",
        type=click.IntRange(min=1),
        help="Analysis processes [default: one per core for long histories].",
    )(command)
    command = LANGUAGE(command)
    return click.argument("repos", nargs=-1, required=True, metavar="REPO...")(command)


INCLUDE_QUARANTINED = click.option(
    "--include-quarantined",
    is_flag=True,
    help="Keep quarantined tasks (whose gold no longer behaves as curated; see coevo revalidate).",
)


def visible(text: str) -> str:
    """``text`` with control and format characters escaped (``\\x1b``): an agent's log or file
    must not drive the terminal (colours, cursor moves, a rewritten line, reversed text)."""
    return "".join(
        char if char in "\n\t" or unicodedata.category(char) not in ("Cc", "Cf") else _escaped(char)
        for char in text
    )


def one_line(text: str) -> str:
    """``text`` (a path, a name, a message holding them) on one line: control characters, line
    breaks among them, escaped (a repository path may hold a newline)."""
    return visible(text).replace("\n", "\\n").replace("\t", "\\t")


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


TEXT_LIMIT = 50
"""Rows a text listing shows unless --limit says otherwise; JSON gives every row."""
LIMIT = click.option(
    "--limit",
    type=click.IntRange(min=0),
    help=f"Show at most this many; 0 for all [default: {TEXT_LIMIT} in text, all in JSON].",
)


def rows_shown(limit: int | None, as_json: bool) -> int | None:
    """``--limit`` as the listing functions take it: None for every row."""
    if limit is None:
        limit = 0 if as_json else TEXT_LIMIT
    return limit or None


@contextmanager
def progress_bar(quiet: bool) -> Iterator[tuple[Callable[[str, int, str], None], Callable[[int], None]]]:
    """One rich progress display on stderr (off for JSON and pipes): (start a task, advance it)."""
    bar = Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[unit]}"),
        TimeRemainingColumn(),
        console=err,
        disable=quiet or not err.is_terminal,
    )
    current: list[TaskID] = []

    def start(description: str, total: int, unit: str) -> None:
        current.append(bar.add_task(description, total=total, unit=unit))

    def advance(n: int) -> None:
        bar.advance(current[-1], n)

    with bar:
        yield start, advance
