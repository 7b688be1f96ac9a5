"""Where a repository's history comes from: a local path, or a clone URL cloned into a cache."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections import Counter
from pathlib import Path

from .errors import LanguageNotDetected, NotARepository
from .languages import all_languages

CLONES_ENV = "COEVO_CLONES"
_URL = re.compile(r"^(https?|ssh|git|file)://|^[\w.-]+@[\w.-]+:")


def is_url(location: str) -> bool:
    return bool(_URL.match(location))


def default_clone_root() -> Path:
    """``$COEVO_CLONES``, else ``~/.cache/coevo/clones``."""
    return Path(os.environ.get(CLONES_ENV) or Path.home() / ".cache" / "coevo" / "clones")


def repository_name(location: str) -> str:
    """A short name for a repository: the last path segment without ``.git``."""
    tail = location.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    return tail.removesuffix(".git") or "repo"


def default_name(location: str, path: Path) -> str:
    """The name a repository gets unless one is given: its URL's, else its ``origin``'s (so
    clones of one repository in differently named folders share it), else its folder's."""
    return repository_name(location if is_url(location) else (_origin(path) or path.name))


def local_checkout(location: str, clone_root: Path | None = None) -> Path:
    """A local git directory for ``location``: the path itself, or a clone kept up to date.

    Raises :class:`NotARepository` with a one-line reason when it is neither.
    """
    if is_url(location):
        return _clone_or_fetch(location, clone_root or default_clone_root())
    path = Path(location).expanduser()
    if not path.exists():
        raise NotARepository(f"{location}: no such file or directory")
    result = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--show-toplevel"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        bare = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "--is-bare-repository"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if bare.stdout.strip() == "true":
            return path.resolve()
        raise NotARepository(f"{location} is not a git repository")
    head = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--verify", "--quiet", "HEAD"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if head.returncode != 0:
        raise NotARepository(f"{location} has no commits yet")
    return Path(result.stdout.strip())


def clone_path(url: str, clone_root: Path | None = None) -> Path:
    """Where :func:`local_checkout` keeps its clone of ``url`` (a mirror, made or not yet)."""
    digest = hashlib.sha256(url.encode()).hexdigest()[:10]
    return (clone_root or default_clone_root()) / f"{repository_name(url)}-{digest}"


def _clone_or_fetch(url: str, clone_root: Path) -> Path:
    target = clone_path(url, clone_root)
    if (target / "HEAD").exists():
        cmd = ["git", "-C", str(target), "fetch", "--quiet", "--prune", "origin"]
    else:
        clone_root.mkdir(parents=True, exist_ok=True)
        cmd = ["git", "clone", "--quiet", "--mirror", url, str(target)]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        message = result.stderr.strip().splitlines()[-1:] or ["unknown error"]
        raise NotARepository(f"cannot clone {url}: {message[0]}")
    return target


def canonical_remote(url: str) -> str | None:
    """``host/owner/name`` of a clone URL (``https://``, ``ssh://``, ``git://``, ``git@host:owner/name``),
    lower-cased, without user, port or ``.git``; None for a local path or ``file://`` URL."""
    url = url.strip()
    scp = re.fullmatch(r"(?:[^@/]+@)?([^:/]+):(?!//)(.+)", url)
    if "://" in url:
        scheme, _, rest = url.partition("://")
        if scheme.lower() == "file":
            return None
        host, _, path = rest.partition("/")
        host = host.rpartition("@")[2].partition(":")[0]
    elif scp is not None and not url.startswith(("/", ".", "~")):
        host, path = scp.groups()
    else:
        return None
    path = path.strip("/").removesuffix(".git").strip("/")
    if not host or not path:
        return None
    return f"{host}/{path}".lower()


def origin_remote(repo_path: Path) -> str | None:
    """The canonical remote (:func:`canonical_remote`) of the repository's ``origin``; None when
    it has no origin or its origin is a local path."""
    return canonical_remote(_origin(repo_path))


def _origin(repo_path: Path) -> str:
    """The URL of the repository's ``origin`` remote; "" when it has none."""
    result = subprocess.run(
        ["git", "-C", str(repo_path), "config", "--get", "remote.origin.url"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return result.stdout.strip() if result.returncode == 0 else ""


ROOT_PREFIX = "root:"
"""What a repository identified by its root commit has before the commit's sha."""


def repository_identity(repo_path: Path, location: str = "") -> str:
    """What the repository is, wherever it was cloned: task ids derive from it.

    Its canonical remote (``host/owner/name`` of ``origin``, else of ``location`` when that is a
    clone URL), or, for a repository without a remote, ``root:<sha>`` of its root commit (the
    oldest of HEAD's root commits, when merges brought in several). Clones of one repository in
    any folders agree; raises :class:`NotARepository` when the folder holds no history.
    """
    remote = origin_remote(repo_path) or canonical_remote(location)
    if remote:
        return remote
    result = subprocess.run(
        ["git", "-C", str(repo_path), "log", "--max-parents=0", "--format=%ct %H", "HEAD"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    roots = sorted(
        (int(seconds), sha)
        for seconds, _, sha in (line.partition(" ") for line in result.stdout.splitlines())
        if seconds.isdigit() and sha
    )
    if result.returncode != 0 or not roots:
        cause = (result.stderr.strip().splitlines() or ["it has no commits"])[-1]
        raise NotARepository(f"{repo_path}: cannot find its root commit: {cause}")
    return ROOT_PREFIX + roots[0][1]


def detect_language(path: Path, revision: str = "HEAD") -> str:
    """The language whose sources dominate the tree at ``revision``; build files break ties."""
    listing = subprocess.run(
        ["git", "-C", str(path), "ls-tree", "-r", "--name-only", revision],
        capture_output=True, text=True, check=False,
    ).stdout.splitlines()  # fmt: skip
    scores: Counter[str] = Counter()
    for lang in all_languages():
        names = {Path(f).name for f in listing}
        scores[lang.name] += sum(1 for f in listing if f.endswith(lang.suffixes))
        scores[lang.name] += 1000 * sum(1 for build in lang.build_files if build in names)
    best = scores.most_common(1)
    if not best or best[0][1] == 0:
        raise LanguageNotDetected(f"{path}: found no Java or Python sources; pass --language to choose one")
    return best[0][0]
