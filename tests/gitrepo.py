"""Builds tiny real git repositories for tests: commits with exact files, dates and branches."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


class GitRepo:
    """A real repository in a folder; every commit gets the date you give it (with its zone)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.shas: dict[str, str] = {}
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    @classmethod
    def opened(cls, path: Path, shas: dict[str, str]) -> GitRepo:
        """A repository another fixture wrote, with its commits by label: read it, commit nothing."""
        repo = cls.__new__(cls)
        repo.path, repo.shas = path, dict(shas)
        return repo

    def git(self, *args: str, date: str | None = None) -> str:
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "Ada Lovelace",
            "GIT_AUTHOR_EMAIL": "ada@example.org",
            "GIT_COMMITTER_NAME": "Ada Lovelace",
            "GIT_COMMITTER_EMAIL": "ada@example.org",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_SYSTEM": os.devnull,
            # No background upkeep after each commit: a tiny history never needs it.
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "maintenance.auto",
            "GIT_CONFIG_VALUE_0": "false",
        }
        if date:
            env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
        return subprocess.run(
            ["git", "-C", str(self.path), *args],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()

    def commit(
        self,
        label: str,
        date: str,
        files: dict[str, str | bytes | None] | None = None,
        renames: dict[str, str] | None = None,
    ) -> str:
        """Writes ``files`` (None deletes), applies ``renames`` (git mv), commits; returns the sha.

        ``label`` is the commit message and the key in :attr:`shas`.
        """
        for old, new in (renames or {}).items():
            (self.path / new).parent.mkdir(parents=True, exist_ok=True)
            self.git("mv", old, new)
        written, removed = [], []
        for name, content in (files or {}).items():
            target = self.path / name
            if content is None:
                removed.append(name)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content, encoding="utf-8")
            written.append(name)
        if removed:
            self.git("rm", "-q", "--", *removed)
        if written:
            self.git("add", "--", *written)
        self.git("commit", "-q", "--allow-empty", "-m", label, date=date)
        sha = self.git("rev-parse", "HEAD")
        self.shas[label] = sha
        return sha

    def branch(self, name: str) -> None:
        self.git("checkout", "-q", "-b", name)

    def checkout(self, name: str) -> None:
        self.git("checkout", "-q", name)

    def merge(self, branch: str, label: str, date: str) -> str:
        self.git("merge", "-q", "--no-ff", "-m", label, branch, date=date)
        sha = self.git("rev-parse", "HEAD")
        self.shas[label] = sha
        return sha

    def read(self, name: str) -> str:
        return (self.path / name).read_text(encoding="utf-8")


def synthetic_history(path: Path, commits: int) -> None:
    """A Python project of ``commits`` commits, each adding a function and its test (fast-import).

    Built in one ``git fast-import`` stream so a long history takes a second, not minutes.
    """
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    lines: list[str] = []
    module = ""
    tests = "from pkg.core import *  # noqa\n"
    for i in range(commits):
        module += f"\n\ndef f{i}(x):\n    return x + {i}\n"
        tests += f"\n\ndef test_f{i}():\n    assert f{i}(0) == {i}\n"
        message = f"add f{i}"
        lines += [
            "commit refs/heads/main",
            f"committer Ada Lovelace <ada@example.org> {1_700_000_000 + i * 3600} +0000",
            f"data {len(message)}",
            message,
        ]
        for name, content in (("pkg/core.py", module), ("tests/test_core.py", tests)):
            data = content.encode()
            lines += [f"M 100644 inline {name}", f"data {len(data)}", content]
    stream = "\n".join(lines) + "\n"
    subprocess.run(["git", "-C", str(path), "fast-import", "--quiet"], input=stream.encode(), check=True)
    subprocess.run(["git", "-C", str(path), "reset", "-q", "--hard", "main"], check=True)
