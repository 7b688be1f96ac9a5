"""The agent's workspace: what it is given, and how what it leaves is read back safely.

The workspace is a fresh git repository holding one commit of the rev2 tree — no history, no
remote — with the test file reset: generation tasks lose the gold methods (the whole file
when it was new), update tasks get the old versions of the updated methods back. The prompt
lives beside it, outside the repository.

Everything in the workspace after the agent ran is the agent's: coevo never runs git in it
(its ``.git/config`` could name a program git would start), never follows a link in it, and
reads only the test file, as a regular file of bounded size. Other changes are found by
comparing the tree with the manifest taken before the agent started.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tasks import CoevoError, Task, Track

from ..environments.worktree import GitTree, export_revision

_IDENTITY = {
    "GIT_AUTHOR_NAME": "coevo",
    "GIT_AUTHOR_EMAIL": "coevo@invalid",
    "GIT_COMMITTER_NAME": "coevo",
    "GIT_COMMITTER_EMAIL": "coevo@invalid",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+00:00",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+00:00",
}


@dataclass
class Workspace:
    """Where an agent works: ``repo`` (the workspace) and ``task/prompt.md`` beside it."""

    root: Path
    test_file: str
    given: bytes | None
    """The test file as the agent gets it (None: removed, the agent writes it)."""
    prompt: str
    before: TreeState = field(default_factory=lambda: TreeState())
    """The workspace's files as the agent got them."""

    @property
    def repo(self) -> Path:
        return self.root / "workspace"

    @property
    def task_dir(self) -> Path:
        return self.root / "task"


def reset_test_file(task: Task, repo_path: Path) -> bytes | None:
    """The test file with the answer taken out: gold methods removed, or old versions restored.

    A task imported from a snapshot carries the file it was published with, and that is what
    its agents get: the same start on every machine, whatever coevo's reset does today.
    """
    if task.given_recorded:
        return None if task.given_test_file is None else task.given_test_file.encode("utf-8")
    from miner.languages import get_language

    from ..environments.pruning import removals

    language = get_language(task.language)
    new = GitTree(repo_path, task.rev2).read(task.test_file)
    if new is None:
        raise CoevoError(f"task {task.id}: {task.test_file} is not in rev2")
    old = GitTree(repo_path, task.rev1).read(task.old_test_file or task.test_file)
    if task.track == Track.GENERATION and old is None:
        return None  # a new file: the agent writes all of it
    methods = language.parse(new, scan="none").by_key()
    old_methods = language.parse(old, scan="none").by_key() if old is not None else {}
    lines = new.decode("utf-8", errors="surrogateescape").splitlines(keepends=True)
    # The gold's helpers go with its methods: back to their old version, or out when they are new.
    wanted = [(key, task.track == Track.GENERATION) for key in task.test_methods]
    wanted += [(key, False) for key in task.gold_helpers]
    targets = sorted(
        ((methods[key], remove) for key, remove in wanted if key in methods), key=lambda t: -t[0].start_line
    )
    gone = [(m.start_line, m.end_line) for m, remove in targets if remove or m.key not in old_methods]
    left = removals(new, task.language, gone)  # Python: ``pass`` where a class would be left empty
    for method, remove in targets:
        start, end = method.start_line - 1, method.end_line
        previous = None if remove else old_methods.get(method.key)
        replacement = previous.source.splitlines(keepends=True) if previous else []
        if not previous and left.get((method.start_line, method.end_line)):
            replacement = [left[(method.start_line, method.end_line)] + "\n"]
        if replacement and not replacement[-1].endswith("\n"):
            replacement[-1] += "\n"
        indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
        if replacement and not replacement[0].startswith(indent):
            replacement[0] = indent + replacement[0].lstrip()
        lines[start:end] = replacement
    return "".join(lines).encode("utf-8", errors="surrogateescape")


def prompt_text(task: Task, repo_path: Path, given: bytes | None) -> str:
    """What the agent is told: the track, the file, the methods, the production change."""
    names = [key.split("(")[0].split("#")[0].rsplit(".", 1)[-1] for key in task.test_methods]
    if task.track == Track.GENERATION:
        goal = (
            f"The production code changed. Write these new test methods in `{task.test_file}` "
            f"({'create the file' if given is None else 'the file exists'}): {', '.join(names)}. "
            "They must pass on the new code and capture the new behaviour (fail on the old code)."
        )
    else:
        goal = (
            f"The production code changed and these test methods in `{task.test_file}` no longer "
            f"fit it: {', '.join(names)}. Repair them so they pass on the new code."
        )
    parts = [f"# coevo task {task.id} ({task.track}, {task.language})", "", goal, "",
             "Only the test file is kept; other changes are discarded. You may add helpers (methods, "
             "fixtures, set-ups) to it.", "",
             "## The production change", "", "```diff", task.production_diff.rstrip(), "```", "",
             "## The changed code now", ""]  # fmt: skip
    tree, sources = GitTree(repo_path, task.rev2), dict[str, bytes | None]()
    for focal in task.focal_methods:
        if focal["file"] not in sources:
            sources[focal["file"]] = tree.read(focal["file"])
        source = sources[focal["file"]]
        if source is None or focal.get("start") is None:
            continue
        body = source.decode("utf-8", errors="replace").splitlines()[focal["start"] - 1 : focal["end"]]
        unit = focal.get("unit", "method")
        what = (
            focal["method"]
            if unit == "method"
            else f"{focal['method']} ({'module-level' if unit == 'module' else 'field'})"
        )
        parts += [f"`{focal['file']}` — {what}", "", "```", *body, "```", ""]
    return "\n".join(parts)


def prepare_workspace(task: Task, repo_path: Path, root: Path) -> Workspace:
    """The agent's workspace: the rev2 tree with the test file reset, one commit, no history."""
    given = reset_test_file(task, repo_path)
    workspace = Workspace(root, task.test_file, given, prompt_text(task, repo_path, given))
    export_revision(repo_path, task.rev2, workspace.repo)
    target = workspace.repo / task.test_file
    if given is None:
        target.unlink(missing_ok=True)
    else:
        target.write_bytes(given)
    workspace.task_dir.mkdir(parents=True, exist_ok=True)
    (workspace.task_dir / "prompt.md").write_text(workspace.prompt)
    env = {**os.environ, **_IDENTITY, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "task"]):
        subprocess.run(["git", "-C", str(workspace.repo), *args], env=env, capture_output=True, check=True)
    workspace.before = tree_state(workspace.repo)
    return workspace


# --- what the agent left ---------------------------------------------------------------------------

DEFAULT_MAX_TEST_FILE = 512 * 1024
"""Bytes an agent's test file may have; a bigger one is not read (the run says why)."""
DEFAULT_MAX_WORKSPACE = 2 << 30
"""Bytes of files the workspace may hold after the agent ran (the tree plus what it wrote)."""
_MAX_ENTRIES = 200_000
_SKIPPED = (".git",)


@dataclass(frozen=True)
class TreeState:
    """The files of a workspace (``.git`` aside): path → (kind, size, sha256 or link target)."""

    files: dict[str, tuple[str, int, str]] = field(default_factory=dict)
    size: int = 0
    """Bytes of the regular files."""
    over: str = ""
    """Why the walk stopped early (too many files, too many bytes); empty when it did not."""


def tree_state(root: Path, max_bytes: int = DEFAULT_MAX_WORKSPACE) -> TreeState:
    """Walks ``root`` without following links; stops past ``max_bytes`` or too many entries."""
    files: dict[str, tuple[str, int, str]] = {}
    size = 0
    pending = [""]
    while pending:
        folder = pending.pop()
        try:
            entries = list(os.scandir(root / folder if folder else root))
        except OSError:
            continue
        for entry in entries:
            relative = f"{folder}/{entry.name}" if folder else entry.name
            if not folder and entry.name in _SKIPPED:
                continue
            if len(files) >= _MAX_ENTRIES:
                return TreeState(files, size, f"more than {_MAX_ENTRIES} files")
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                pending.append(relative)
            elif stat.S_ISLNK(info.st_mode):
                files[relative] = ("link", 0, os.readlink(entry.path))
            elif stat.S_ISREG(info.st_mode):
                size += info.st_size
                if size > max_bytes:
                    return TreeState(files, size, f"more than {_size(max_bytes)} of files")
                files[relative] = ("file", info.st_size, _digest(entry.path))
            else:
                files[relative] = ("special", 0, "")
    return TreeState(files, size)


def _digest(path: str) -> str:
    digest = hashlib.sha256()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def changed_paths(before: TreeState, after: TreeState) -> list[str]:
    """Paths added, removed or changed between two states of a tree."""
    paths = set(before.files) | set(after.files)
    return sorted(path for path in paths if before.files.get(path) != after.files.get(path))


class UnreadableTestFile(CoevoError):
    """The agent's test file is not a regular file coevo will read (a link, a device, too big)."""


def read_agent_file(root: Path, relative: str, limit: int = DEFAULT_MAX_TEST_FILE) -> bytes | None:
    """The regular file ``relative`` under ``root``, or None when there is none.

    No link is followed, in the file's name or in any folder above it, and nothing but a
    regular file of at most ``limit`` bytes is opened: the agent controls every entry of
    the workspace, and coevo reads it as the user running coevo. Raises
    :class:`UnreadableTestFile` saying what the entry is instead.
    """
    parts = [part for part in relative.split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        raise UnreadableTestFile(f"{relative}: not a path inside the workspace")
    flags = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        folder = os.open(root, flags | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        for index, part in enumerate(parts[:-1]):
            try:
                info = os.stat(part, dir_fd=folder, follow_symlinks=False)
            except FileNotFoundError:
                return None
            if not stat.S_ISDIR(info.st_mode):
                where = "/".join(parts[: index + 1])
                raise UnreadableTestFile(f"{relative}: {where} is {_kind(info.st_mode)}, not a folder")
            inner = os.open(part, flags | os.O_DIRECTORY, dir_fd=folder)
            os.close(folder)
            folder = inner
        try:
            info = os.stat(parts[-1], dir_fd=folder, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableTestFile(f"{relative} is {_kind(info.st_mode)}, not a regular file: not read")
        if info.st_size > limit:
            raise UnreadableTestFile(
                f"{relative} has {info.st_size} bytes, more than the {limit} allowed: not read"
            )
        try:
            fd = os.open(parts[-1], flags | os.O_NONBLOCK, dir_fd=folder)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnreadableTestFile(f"{relative} is a symbolic link: not read") from None
            raise UnreadableTestFile(f"{relative}: {exc.strerror}") from None
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise UnreadableTestFile(f"{relative} is not a regular file: not read")
            data = handle.read(limit + 1)
        if len(data) > limit:
            raise UnreadableTestFile(f"{relative} has more than the {limit} bytes allowed: not read")
        return data
    finally:
        os.close(folder)


def _size(count: int) -> str:
    return f"{count / (1 << 20):g} MiB" if count >= 1 << 20 else f"{count} bytes"


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"
