"""The fast selection pass: one ``git log --name-status`` stream over a window of history.

Reading names and statuses only (no patches, no blobs) is what makes mining
fast; only the commits this pass selects are opened with PyDriller later.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from .errors import NotARepository

_RECORD = "\x1e"
_FIELD = "\x1f"
_FORMAT = f"{_RECORD}%H{_FIELD}%P{_FIELD}%aI{_FIELD}%cI"
_NULL_BLOB = "0" * 40


@dataclass(frozen=True)
class FileChange:
    """One file of a commit's ``--raw`` diff: status letter, paths and blob ids.

    ``old_path`` is set for renames and copies; a blob id is None on the side where the
    file does not exist (added or deleted).
    """

    status: str
    path: str
    old_path: str | None = None
    old_blob: str | None = None
    new_blob: str | None = None


@dataclass(frozen=True)
class LogCommit:
    """A commit as the selection pass sees it: ids, dates and touched paths."""

    sha: str
    parents: tuple[str, ...]
    author_date: datetime
    committer_date: datetime
    changes: tuple[FileChange, ...]

    @property
    def first_parent(self) -> str | None:
        return self.parents[0] if self.parents else None


def git(repo: Path, *args: str) -> str:
    """Runs a git command in ``repo`` and returns its standard output as text."""
    result = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise NotARepository(f"git {args[0]} failed in {repo}: {result.stderr.strip()}")
    return result.stdout


def is_shallow(repo: Path) -> bool:
    """Whether ``repo`` is a shallow clone: its history stops at commits whose parents it lacks."""
    return git(repo, "rev-parse", "--is-shallow-repository").strip() == "true"


def log_args(revisions: list[str], since: datetime | None, until: datetime | None) -> list[str]:
    """The revision and date arguments shared by the log pass and its commit count."""
    args = [*revisions]
    if since is not None:
        args.append(f"--since={since.isoformat()}")
    if until is not None:
        args.append(f"--until={until.isoformat()}")
    return args


def count_commits(repo: Path, revisions: list[str], since: datetime | None, until: datetime | None) -> int:
    """How many non-merge commits the log pass will stream (for the progress bar)."""
    out = git(repo, "rev-list", "--count", "--no-merges", *log_args(revisions, since, until), "--")
    return int(out.strip() or 0)


def iter_log(
    repo: Path,
    revisions: list[str],
    since: datetime | None = None,
    until: datetime | None = None,
) -> Iterator[LogCommit]:
    """Streams non-merge commits oldest first (parents before children), with their changed paths.

    Memory stays flat: the output is parsed as it arrives, one commit at a time.
    """
    cmd = [
        "git", "-C", str(repo), "-c", "core.quotepath=false", "log", "-z", "--reverse",
        "--topo-order", "--no-merges", "-M", "--raw", "--no-abbrev", f"--format={_FORMAT}",
        *log_args(revisions, since, until), "--",
    ]  # fmt: skip
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        pending = b""
        try:
            for chunk in iter(lambda: proc.stdout.read(1 << 16), b""):  # type: ignore[union-attr]
                pending += chunk
                *records, pending = pending.split(_RECORD.encode())
                for record in records:
                    if record:
                        yield _parse_record(record)
            if pending:
                yield _parse_record(pending)
        finally:
            if proc.poll() is None:
                proc.kill()
        stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        if proc.wait() not in (0, -9) and stderr:
            raise NotARepository(f"git log failed in {repo}: {stderr.strip()}")


def read_commit(repo: Path, sha: str) -> LogCommit:
    """One commit in the same shape as :func:`iter_log` gives (for ancestors outside the window)."""
    out = subprocess.run(
        ["git", "-C", str(repo), "-c", "core.quotepath=false", "show", "-z", "-M",
         "--raw", "--no-abbrev", f"--format={_FORMAT}", sha, "--"],
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    return _parse_record(out.lstrip(_RECORD.encode()))


def known_commit(repo: Path, sha: str) -> LogCommit | None:
    """:func:`read_commit`, or None for a commit it cannot read (a merge's combined diff, a commit
    missing from the clone): the pairing treats it as unknown."""
    try:
        return read_commit(repo, sha)
    except Exception:
        return None


_ZONE = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)([+-])(\d+):(\d\d)$")


def _git_date(text: str) -> datetime:
    """A date as ``%aI``/``%cI`` print it. A commit may carry a zone no clock has (requests has one
    of ``+51800``, printed ``+518:00``), which git accepts and Python's zones refuse: that date is
    the same instant in UTC (git prints the instant shifted by the zone)."""
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        found = _ZONE.match(text)
        if found is None:
            raise
        local, sign, hours, minutes = found.groups()
        shift = timedelta(hours=int(hours), minutes=int(minutes))
        return datetime.fromisoformat(local).replace(tzinfo=UTC) - (shift if sign == "+" else -shift)


def _parse_record(record: bytes) -> LogCommit:
    text = record.decode("utf-8", errors="surrogateescape")
    header, _, body = text.partition("\0")
    sha, parents, author_date, committer_date = header.strip().split(_FIELD)
    fields = [field for field in body.lstrip("\n").split("\0") if field]
    changes: list[FileChange] = []
    i = 0
    while i < len(fields):
        _, _, old_blob, new_blob, status = fields[i].lstrip(":").split(" ")
        if status[:1] in ("R", "C"):
            old_path: str | None = fields[i + 1]
            path = fields[i + 2]
            i += 3
        else:
            old_path, path = None, fields[i + 1]
            i += 2
        changes.append(
            FileChange(
                status[:1],
                path,
                old_path=old_path,
                old_blob=None if old_blob == _NULL_BLOB else old_blob,
                new_blob=None if new_blob == _NULL_BLOB else new_blob,
            )
        )
    return LogCommit(
        sha=sha,
        parents=tuple(parents.split()),
        author_date=_git_date(author_date),
        committer_date=_git_date(committer_date),
        changes=tuple(changes),
    )


@dataclass(frozen=True)
class BlobChange:
    """One file of ``git diff --raw`` between two revisions: blob ids and paths on each side."""

    old_path: str | None
    new_path: str | None
    old_blob: str | None
    new_blob: str | None


def diff_blobs(repo: Path, rev1: str, rev2: str, paths: list[str] | None) -> list[BlobChange]:
    """The files that differ between two revisions, with renames, without reading any content."""
    out = subprocess.run(
        ["git", "-C", str(repo), "-c", "core.quotepath=false", "diff", "--raw", "-z", "-M",
         "--no-abbrev", rev1, rev2, "--", *(paths or [])],
        capture_output=True, check=True,
    ).stdout.decode("utf-8", errors="surrogateescape")  # fmt: skip
    fields = out.split("\0")
    changes: list[BlobChange] = []
    i = 0
    while i < len(fields) - 1:
        _, _, old_blob, new_blob, status = fields[i].lstrip(":").split(" ")
        if status[0] in ("R", "C"):
            old_path, new_path = fields[i + 1], fields[i + 2]
            i += 3
        else:
            old_path = new_path = fields[i + 1]
            i += 2
        changes.append(
            BlobChange(
                old_path=None if old_blob == _NULL_BLOB else old_path,
                new_path=None if new_blob == _NULL_BLOB else new_path,
                old_blob=None if old_blob == _NULL_BLOB else old_blob,
                new_blob=None if new_blob == _NULL_BLOB else new_blob,
            )
        )
    return changes


def unified_diff(repo: Path, rev1: str, rev2: str, paths: list[str]) -> str:
    """``git diff`` text between two revisions for the given paths."""
    if not paths:
        return ""
    out = subprocess.run(
        ["git", "-C", str(repo), "diff", "-M", "--no-color", rev1, rev2, "--", *paths],
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    return out.decode("utf-8", errors="replace")


class BlobReader:
    """Reads blobs through one long-lived ``git cat-file --batch``: no process per file."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self._proc: subprocess.Popen[bytes] | None = None

    def read(self, blob: str) -> bytes:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(
                ["git", "-C", str(self.repo), "cat-file", "--batch"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            )  # fmt: skip
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(blob.encode() + b"\n")
        self._proc.stdin.flush()
        header = self._proc.stdout.readline().split()
        if len(header) != 3:
            raise KeyError(f"blob {blob} is missing from {self.repo}")
        data = self._proc.stdout.read(int(header[2]))
        self._proc.stdout.read(1)  # the newline after each object
        return data

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            self._proc.wait()
            self._proc = None
