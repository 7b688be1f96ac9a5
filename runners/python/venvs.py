"""Virtual environments for Python revisions: one per environment hash, shared by every worktree.

A venv is keyed by :func:`environment_key`: the interpreter, the pip install arguments,
the content of the files those arguments name (requirements files, and the
``pyproject.toml``/``setup.cfg``/``setup.py`` of local projects), the day the dependencies
are taken as of, a task's recorded pins, coevo's own pins and the host's settings that change
what pip resolves (``PIP_INDEX_URL``, ``PIP_CONSTRAINT`` and its content…). Revisions whose
dependencies did not change reuse the venv; any change builds a new one.

What a build resolved is recorded (:attr:`VenvBuild.installed`: ``name==version`` of every
distribution but the venv's seeds and the revision's own, and ``python==X.Y.Z``); a spec that
carries those as :attr:`~runners.environments.envspec.EnvSpec.pins` (a curated task's) is rebuilt from them
with ``pip install -c``, undated: a release made since changes nothing.

A venv starts as a copy of its interpreter's seed (``.seed-*`` in :func:`seeds_root`, the venvs
root unless ``$COEVO_SEEDS`` names another: the venv ``python -m venv`` makes, its pip brought to
the pinned version), made once by coevo's own steps: a project's install never has the seed
writable (in Docker only its own venv and staging copy are), so no revision changes what the next
one starts from, and venvs roots may share their seeds.

Revisions are built as of their time: pip installs only what was uploaded before the revision's
commit day (``--uploaded-prior-to``,
:attr:`~runners.environments.envspec.EnvSpec.packages_before`), with pip itself first brought to a
pinned version that has the option (26.0.1; Pythons older than 3.9 get the newest pip they run,
which cannot date, and the build record says so). When the dated install fails, it is tried once
more with today's releases: that venv is keyed without the date, and the reason is kept beside the
dated key (``<key>.undated``), so the revision's later runs, and other revisions with the same
inputs, go straight to it. The test tools coevo itself runs (pytest, coverage) come from the
project when it installs recent enough ones, else at versions pinned per Python
(:func:`tool_pins`), never from the date.

Sharing a venv across worktrees rules out the editable install an EnvSpec asks for
(``-e .[test]`` would point at one worktree). So the venv holds the project's
*dependencies* only: each install runs in a scratch copy of the worktree with ``-e``
dropped, and afterwards every distribution installed from that copy is stripped down to
its metadata (``importlib.metadata.version("pkg")`` and entry points keep working; its
modules are gone). At test time :func:`import_paths` puts the worktree itself, and
``src/`` for a src layout, on ``PYTHONPATH``, so tests import the revision's own code.
Compiled extension modules of the project itself are not built this way.

The interpreter comes from :func:`find_python`: ``python3.X`` on ``PATH`` (pyenv shims
skipped) or a pyenv version; when the version asked for is not installed, the closest
one is used and the substitution is recorded as a note in the venv's marker, not raised:
a near version runs most test suites, and a missing interpreter should not hide a task.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import errno
import fcntl
import functools
import hashlib
import importlib.metadata
import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlparse

from packaging.version import InvalidVersion, Version

from tasks import CoevoError, MissingToolchain

from ..buildtools import BuildChoice
from ..environments.envspec import EnvSpec
from ..environments.worktree import FolderTree, TreeReader
from ..sandbox.base import ExecResult, LocalSandbox, Sandbox, read_beneath, write_beneath
from ..sandbox.egress import urls_in
from .pythons import minor_key

VENVS_ENV = "COEVO_VENVS"
"""Environment variable naming the folder that holds the venvs (default ``~/.cache/coevo/venvs``)."""
SEEDS_ENV = "COEVO_SEEDS"
"""Environment variable naming the folder that holds the seeds venvs start from (default: the
venvs folder)."""
DEFAULT_INSTALL_TIMEOUT = 1800.0
MARKER = "coevo-ready.json"
"""Written last into a finished venv; a venv folder without it is rebuilt."""

_LAYOUT = "4"
"""Bumped when the way venvs are built changes, so old ones are not reused (2: dated installs,
pinned pip and test tools; 4: a local project's files outside site-packages stripped too)."""
_SEED_PREFIX = ".seed-"
"""Names the folders of :func:`_seed` in the seeds root (:func:`seeds_root`)."""
_SEED_MARKER = "coevo-seed.json"
"""Written last into a finished seed (a seed is no venv: it has no :data:`MARKER`)."""
UNDATED = ".undated"
"""Suffix of the file beside a dated key whose install failed: why, and that today's releases built."""
DATING_PIP = "26.0.1"
"""The pip in venvs of Python 3.9 and newer: the first with ``--uploaded-prior-to`` (and the
last that runs on 3.9)."""
_OLD_PIPS = {(3, 6): "21.3.1", (3, 7): "24.0", (3, 8): "25.0.1"}
"""The newest pip each older Python runs; none of them can date an install."""
ISOLATED_BUILDS_SINCE = "2019-02-06"
"""pip builds a project that declares no build system, and every such sdist, in an isolated
environment that needs ``setuptools>=40.8.0``, first uploaded on 2019-02-05: an install dated
before this day cannot build one, so it builds them without isolation, with setuptools and wheel
(the venv's, or today's when it has none) and the project's declared build requirements installed
first, undated."""
_BUILD_TOOLS = ("setuptools", "wheel")
_TEST_TOOLS = (
    ((3, 6), (("pytest", "7.0.1"), ("coverage", "6.2"))),
    ((3, 7), (("pytest", "7.4.4"), ("coverage", "7.2.7"))),
    ((3, 8), (("pytest", "8.3.5"), ("coverage", "7.6.1"))),
)
"""coevo's pins of the test tools it runs, by the oldest Python each serves (a newer one takes the last)."""
_COMPANIONS = {"pytest": (("py", "1.11.0"),)}
"""What coevo's pin of a tool needs raised when the project's dated install left an older one:
pytest 7.2 and later bring their own ``py`` shim, which a 2016 ``py`` 1.4 shadows and breaks
(``ValueError: can only pass None, Path instances or non-empty strings to LocalPath``)."""
_TOOL_MINIMUM = {"pytest": "4.6", "coverage": "5.0"}
"""The oldest project-installed versions coevo's pytest plugin (which reads coverage.py's data) works with."""
_RESOLUTION_SETTINGS = (
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_FIND_LINKS",
    "PIP_NO_INDEX",
    "PIP_CONSTRAINT",
    "PIP_PRE",
    "PIP_ONLY_BINARY",
    "PIP_NO_BINARY",
    "PIP_UPLOADED_PRIOR_TO",
)
"""The host's environment variables that change what pip resolves: part of every venv's key (a
constraint file's content too), and passed to pip."""
_SEEDED = frozenset({"pip", "setuptools", "wheel", "distribute", "pkg-resources"})
"""What ``python -m venv`` puts in a venv (its versions differ by interpreter build, and Debian
adds a ``pkg-resources==0.0.0``): left out of the recorded environment, as ``pip freeze`` does."""
PINS_FILE = "coevo-pins.txt"
"""The constraints file a venv rebuilt from recorded pins installs with (beside the staged copy)."""
_NETWORK_TROUBLE = (
    "Retrying (Retry(",
    "NewConnectionError",
    "ConnectTimeoutError",
    "ReadTimeoutError",
    "ProxyError",
    "Temporary failure in name resolution",
    "Max retries exceeded",
    "Connection reset by peer",
)
"""pip's words for a network that failed it: a dated install that failed so is not retried undated."""
_BUILD_FILES = ("pyproject.toml", "setup.cfg", "setup.py")
_FILE_OPTIONS = ("-r", "--requirement", "-c", "--constraint")
_EDITABLE_OPTIONS = ("-e", "--editable")
_COPY_IGNORE = (".git", ".hg", ".tox", ".nox", ".venv", "venv", "node_modules", "__pycache__")
# Forwarded to pip explicitly so a sandbox that does not inherit the host environment still
# reaches the package index through a TLS-intercepting proxy.
_PIP_PASSTHROUGH = (
    *_RESOLUTION_SETTINGS,
    "PIP_CERT",
    "PIP_DEFAULT_TIMEOUT",
    "REQUESTS_CA_BUNDLE",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
)

log = logging.getLogger(__name__)


class NoPython(MissingToolchain):
    """No Python 3 interpreter at all on this machine (neither on PATH nor in pyenv)."""


class VenvBuildFailed(CoevoError):
    """Creating a venv or installing into it failed; the message is one line, ``log`` has the output."""

    def __init__(self, message: str, log: ExecResult | None = None) -> None:
        super().__init__(message)
        self.log = log


@dataclass(frozen=True)
class VenvBuild:
    """A ready venv and how it was made: the build record of a Python revision."""

    path: Path
    python: str
    """The interpreter, as ``<full version> (<path>)``."""
    pip: str
    packages_before: str | None
    """The instant its dependencies were taken as of; None: today's releases."""
    asked_before: str | None = None
    """The instant the revision asked for (differs from ``packages_before`` after a retry)."""
    retry: str = ""
    """Why the dated install was retried with today's releases; empty when it was not."""
    undated: str = ""
    """Why the install could not be dated at all (an old pip); empty otherwise."""
    tools: tuple[tuple[str, str, str], ...] = ()
    """(tool, version, where it came from): pytest and coverage."""
    installed: tuple[str, ...] = ()
    """What the build resolved, sorted: ``name==version`` of every distribution but the venv's seeds
    (pip, setuptools…) and the revision's own, and ``python==X.Y.Z``."""
    note: str = ""
    """A substitute interpreter, when the one asked for is not here."""
    unisolated: tuple[str, ...] = ()
    """``name==version`` of the build tools an install dated before :data:`ISOLATED_BUILDS_SINCE`
    built with, without isolation; empty when builds were isolated."""
    pinned: int = 0
    """How many recorded versions it was rebuilt from (:attr:`~runners.environments.envspec.EnvSpec.pins`)."""

    def choices(self) -> tuple[BuildChoice, ...]:
        """The record as :class:`~runners.buildtools.BuildChoice` lines: dependencies (and a retry),
        then the test tools; the caller puts the interpreter first."""
        found: list[BuildChoice] = []
        if self.pinned:
            why = f"{self.pinned} versions recorded when it was curated (pip install -c {PINS_FILE})"
            found.append(BuildChoice("dependencies", "as recorded", why))
        elif self.packages_before:
            found.append(BuildChoice("dependencies", f"as of {self.packages_before}",
                                f"pip {self.pip} --uploaded-prior-to {self.packages_before}"))  # fmt: skip
            if self.unisolated:
                why = (
                    f"pip's isolated builds need setuptools>=40.8.0, uploaded after "
                    f"{self.packages_before[:10]}: {', '.join(self.unisolated)} built the project and its "
                    "sdists"
                )
                found.append(BuildChoice("builds", "without isolation", why))
        elif self.retry:
            found.append(BuildChoice("dependencies", "today's releases", self.retry))
            found.append(BuildChoice("retry", "without the date", self.retry))
        elif self.asked_before:
            found.append(BuildChoice("dependencies", "today's releases", self.undated))
        else:
            found.append(BuildChoice("dependencies", "today's releases", "no date given"))
        found += [BuildChoice(tool, version, source) for tool, version, source in self.tools]
        return tuple(found)


@dataclass(frozen=True)
class FoundPython:
    """An interpreter chosen for a requested version, and why if it is not that version."""

    path: Path
    version: str
    """Its full version, ``3.11.7``."""
    note: str = ""
    """Empty when the version asked for was found; else what was used instead."""


# --- Interpreters -------------------------------------------------------------------------------


def find_python(version: str) -> Path:
    """A ``python{version}`` interpreter, or the closest installed one (logged, not an error).

    Raises :class:`NoPython` only when no Python 3 exists at all.
    """
    found = locate_python(version)
    if found.note:
        log.warning("%s", found.note)
    return found.path


def locate_python(version: str) -> FoundPython:
    """Like :func:`find_python`, keeping the version found and the note about a substitute.

    Interpreters are tried closest minor first (on a tie the newer one, which keeps more of the
    older one's behaviour); only those tried are started, so a choice costs one start, not one
    per interpreter on the machine."""
    candidates = _candidate_pythons()
    wanted = _minor(version)
    for minor in sorted(candidates, key=lambda minor: (abs(minor[1] - wanted[1]), -minor[1])):
        for path in candidates[minor]:
            full = _probe(path)
            if full is None or _minor(full) != minor:
                continue
            if minor == wanted:
                return FoundPython(path, full)
            note = f"python {version} not installed: using {full} ({path}), the closest"
            return FoundPython(path, full, note)
    raise NoPython("no Python 3 interpreter found on PATH or in pyenv; install python3")


def _minor(version: str) -> tuple[int, int]:
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else (3, 0)


@functools.cache
def _candidate_pythons() -> dict[tuple[int, int], tuple[Path, ...]]:
    """Python 3 interpreters by the minor version their names give, in the order they are tried:
    ``python3.X`` on PATH first, then pyenv's (newest patch first). Nothing is started here."""
    found: dict[tuple[int, int], list[Path]] = {}
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not folder or "/shims" in folder:  # pyenv shims fail unless pyenv selects that version
            continue
        with contextlib.suppress(OSError):
            for path in sorted(p for p in Path(folder).iterdir() if re.fullmatch(r"python3\.\d+", p.name)):
                found.setdefault(_minor(path.name.removeprefix("python")), []).append(path)
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    with contextlib.suppress(OSError):
        versions = [d for d in pyenv.iterdir() if re.fullmatch(r"3\.\d+\.\d+", d.name)]
        versions.sort(key=lambda d: tuple(int(n) for n in d.name.split(".")), reverse=True)
        for version in versions:
            found.setdefault(_minor(version.name), []).append(version / "bin" / "python")
    return {minor: tuple(p for p in paths if os.access(p, os.X_OK)) for minor, paths in found.items()}


@functools.cache
def _probe(python: Path) -> str | None:
    """The interpreter's full version when it runs and has ``venv``; None otherwise."""
    try:
        result = subprocess.run(
            [str(python), "-c", "import sys, venv; print('%d.%d.%d' % sys.version_info[:3])"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def pip_pin(python_version: str) -> str:
    """The pip a venv of ``python_version`` is brought to: :data:`DATING_PIP`, or the newest an
    older Python runs."""
    return _OLD_PIPS.get(minor_key(python_version), DATING_PIP)


def dates_installs(python_version: str) -> bool:
    """Whether the pip of a venv of ``python_version`` has ``--uploaded-prior-to``."""
    return pip_pin(python_version) == DATING_PIP


def tool_pins(python_version: str) -> dict[str, str]:
    """coevo's pins of pytest and coverage for ``python_version``: versions that support it."""
    wanted = minor_key(python_version)
    chosen = _TEST_TOOLS[0][1]
    for oldest, pins in _TEST_TOOLS:
        if wanted >= oldest:
            chosen = pins
    return dict(chosen)


def host_pythons() -> set[str]:
    """The minor versions of the interpreters on this machine (``3.9``), pyenv's included, as
    their names give them (one that does not start is passed over when chosen:
    :func:`locate_python`)."""
    return {f"{major}.{minor}" for (major, minor), paths in _candidate_pythons().items() if paths}


# --- The environment key (pure) -----------------------------------------------------------------


def environment_key(spec: EnvSpec, tree: TreeReader, python: str) -> str:
    """The hash naming a venv: interpreter, install arguments and the content of the files they name.

    ``python`` identifies the interpreter (its path and full version).
    """
    digest = hashlib.sha256()

    def add(*parts: str | bytes) -> None:
        for part in parts:
            data = part.encode() if isinstance(part, str) else part
            digest.update(len(data).to_bytes(8, "big") + data)

    add("layout", _LAYOUT, "python", python)
    version = _version_of(python)
    add("pip", pip_pin(version), *(f"{tool}=={pin}" for tool, pin in sorted(tool_pins(version).items())))
    add(
        "companions",
        *(f"{tool}:{name}>={least}" for tool, raised in _COMPANIONS.items() for name, least in raised),
    )
    if spec.packages_before:
        add("packages-before", spec.packages_before)
    if _unisolated(spec):
        add("build-isolation", "off", *_BUILD_TOOLS)
    if spec.pins:
        add("pins", *spec.pins)
    for name in _RESOLUTION_SETTINGS:
        add(name, os.environ.get(name, ""))
    for path in os.environ.get("PIP_CONSTRAINT", "").split():
        with contextlib.suppress(OSError):
            add("constraint", path, hashlib.sha256(Path(path).read_bytes()).digest())
    for args in spec.install:
        add("install", *args)
    for path in sorted(_named_files(spec.install, tree)):
        content = tree.read(path)
        add("file", path, b"\0missing" if content is None else hashlib.sha256(content).digest())
    return digest.hexdigest()[:24]


def _version_of(python: str) -> str:
    """The version in an interpreter's identity (``/usr/bin/python3.9 3.9 in coevo-base:…``)."""
    match = re.search(r"\s(\d+\.\d+)", python)
    return match.group(1) if match else "3"


def pip_urls(spec: EnvSpec, tree: TreeReader) -> list[str]:
    """The URLs a revision's pip installs name (indexes, find-links, direct references), in its
    install arguments and in the requirement and constraint files those read."""
    texts = [" ".join(args) for args in spec.install]
    for path in sorted(_named_files(spec.install, tree)):
        if PurePosixPath(path).name not in _BUILD_FILES:
            texts.append((tree.read(path) or b"").decode("utf-8", errors="replace"))
    return [url for text in texts for url in urls_in(text)]


def _named_files(install: tuple[tuple[str, ...], ...], tree: TreeReader) -> set[str]:
    """Repository paths whose content decides what the install arguments install."""
    files: set[str] = set()
    pending: list[str] = []
    for args in install:
        requirements, projects = _split_args(args)
        pending += requirements
        files |= {_join(project, name) for project in projects for name in _BUILD_FILES}
    while pending:
        path = pending.pop()
        if path in files:
            continue
        files.add(path)
        content = tree.read(path)
        if content is None:
            continue
        base = str(PurePosixPath(path).parent)
        for line in content.decode("utf-8", errors="replace").splitlines():
            requirements, projects = _split_args(tuple(line.split("#")[0].split()))
            pending += [_join(base, r) for r in requirements]
            files |= {_join(base, _join(project, name)) for project in projects for name in _BUILD_FILES}
    return files


def _split_args(args: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The requirement/constraint files and the local project folders named by pip arguments."""
    requirements: list[str] = []
    projects: list[str] = []
    expect_file = False
    for arg in args:
        if expect_file:
            requirements.append(arg)
            expect_file = False
        elif arg in _FILE_OPTIONS:
            expect_file = True
        elif any(arg.startswith(f"{option}=") for option in _FILE_OPTIONS if option.startswith("--")):
            requirements.append(arg.split("=", 1)[1])
        elif arg.startswith("--editable="):
            projects += _local_project(arg.split("=", 1)[1])
        elif not arg.startswith("-"):
            projects += _local_project(arg)
    return requirements, projects


def _local_project(target: str) -> list[str]:
    """The folder of a local project argument (``.``, ``./sub[extra]``), or nothing for a requirement."""
    if "://" in target or not (target.startswith((".", "/")) or "/" in target.split("[")[0]):
        return []
    return [target.split("[")[0]]


def _join(base: str, path: str) -> str:
    parts: list[str] = []
    for part in PurePosixPath(base, path).parts:
        if part == "..":
            if parts:
                parts.pop()
        elif part not in (".", "/"):
            parts.append(part)
    return "/".join(parts)


# --- Building -----------------------------------------------------------------------------------


def venvs_root() -> Path:
    """The folder holding the venvs: ``$COEVO_VENVS`` or ``~/.cache/coevo/venvs``."""
    configured = os.environ.get(VENVS_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "coevo" / "venvs"


def seeds_root() -> Path:
    """The folder holding the seeds (:func:`_seed`): ``$COEVO_SEEDS`` or the venvs folder. A seed
    holds only what coevo's own steps made, so venvs folders may share one seeds folder."""
    configured = os.environ.get(SEEDS_ENV)
    return Path(configured) if configured else venvs_root()


def venv_for(
    spec: EnvSpec,
    worktree: Path,
    sandbox: Sandbox | None = None,
    timeout: float = DEFAULT_INSTALL_TIMEOUT,
    python: FoundPython | None = None,
) -> Path:
    """The path of :func:`prepare_venv`'s venv."""
    return prepare_venv(spec, worktree, sandbox, timeout, python).path


def prepare_venv(
    spec: EnvSpec,
    worktree: Path,
    sandbox: Sandbox | None = None,
    timeout: float = DEFAULT_INSTALL_TIMEOUT,
    python: FoundPython | None = None,
) -> VenvBuild:
    """The venv for ``spec``, built on first use (``pip install`` of each ``spec.install``), and
    how it was made.

    Installs run in a scratch copy of the worktree, in a sandbox like ``sandbox`` (default: a
    LocalSandbox over ``worktree``) in which only the venv and that copy are writable (in Docker a
    container of its own: whatever runs later sees the venv read-only); a lock file keeps two
    processes from building the same venv. A dated install that fails for a reason of the
    revision's (not a timeout, not the network) is retried once with today's releases. Raises
    :class:`VenvBuildFailed` with pip's first error line. ``python`` is the interpreter as the
    sandbox sees it (a container's own); by default the host's closest to the spec's version.
    """
    found = python or locate_python(spec.language_version)
    if spec.pins:
        kept = _venv_holding(spec, found, worktree, timeout)
        if kept is not None:
            return kept
        # The recorded versions decide; a date could only refuse one uploaded after it (a retry's).
        spec = dataclasses.replace(spec, packages_before=None)
    asked = spec.packages_before
    undated_because = ""
    if asked and not dates_installs(found.version):
        minor = ".".join(map(str, minor_key(found.version)))
        pip = pip_pin(found.version)
        undated_because = f"pip {pip}, the newest for Python {minor}, has no --uploaded-prior-to"
        spec = dataclasses.replace(spec, packages_before=None)
    tree = FolderTree(worktree)
    identity = f"{found.path} {found.version}"
    key = environment_key(spec, tree, identity)
    root = venvs_root()
    deadline = time.monotonic() + timeout

    def ensure(key: str, spec: EnvSpec, retry: str = "") -> VenvBuild:
        return _ensure(root, key, spec, found, worktree, sandbox, deadline, retry, asked, undated_because)

    if (root / key / MARKER).is_file() or not spec.packages_before:
        return ensure(key, spec)
    today = dataclasses.replace(spec, packages_before=None)
    today_key = environment_key(today, tree, identity)
    retry = _undated_reason(root / f"{key}{UNDATED}")
    if retry is None:
        try:
            return ensure(key, spec)
        except VenvBuildFailed as dated:
            if not _worth_retrying(dated):
                raise
            retry = f"as of {spec.packages_before[:10]}: {dated}"
            try:
                built = ensure(today_key, today, retry)
            except VenvBuildFailed as undated:
                raise VenvBuildFailed(f"{dated}; with today's releases too: {undated}", undated.log) from None
            _write_atomic(root / f"{key}{UNDATED}", json.dumps({"reason": retry, "venv": today_key}).encode())
            return built
    return ensure(today_key, today, retry)


def _venv_holding(spec: EnvSpec, found: FoundPython, worktree: Path, timeout: float) -> VenvBuild | None:
    """The venv the pins were recorded from, when it is still here (the one curation built, dated
    or retried without the date) and holds exactly them: it is the recorded environment, so a task
    scored where it was curated builds nothing new."""
    tree = FolderTree(worktree)
    identity = f"{found.path} {found.version}"
    root = venvs_root()
    resolved = dataclasses.replace(spec, pins=())
    for candidate in (resolved, dataclasses.replace(resolved, packages_before=None)):
        key = environment_key(candidate, tree, identity)
        if (root / key / MARKER).is_file() and _marker(root / key).get("installed") == list(spec.pins):
            deadline = time.monotonic() + timeout
            asked = spec.packages_before
            return _ensure(root, key, spec, found, worktree, None, deadline, asked_before=asked)
    return None


def _ensure(
    root: Path,
    key: str,
    spec: EnvSpec,
    found: FoundPython,
    worktree: Path,
    sandbox: Sandbox | None,
    deadline: float,
    retry: str = "",
    asked_before: str | None = None,
    undated: str = "",
) -> VenvBuild:
    """The venv ``key`` of ``spec``, built unless its marker says it is ready."""
    venv = root / key
    _made_once(
        venv,
        MARKER,
        deadline,
        lambda: _build(venv, spec, found, worktree, sandbox or LocalSandbox(worktree), deadline),
    )
    marker = _marker(venv)
    tools = marker.get("tools") or {}
    return VenvBuild(
        path=venv,
        python=f"{marker.get('python_version', found.version)} ({marker.get('python', found.path)})",
        pip=str(marker.get("pip", "")),
        packages_before=marker.get("packages_before"),
        asked_before=asked_before,
        retry=retry,
        undated=undated,
        tools=tuple((name, str(v[0]), str(v[1])) for name, v in sorted(tools.items())),
        installed=tuple(marker.get("installed") or ()),
        note=str(marker.get("note", "")),
        unisolated=tuple(marker.get("unisolated") or ()),
        pinned=sum(not pin.startswith("python==") for pin in spec.pins),
    )


def _marker(venv: Path) -> dict:
    try:
        found = json.loads((venv / MARKER).read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _undated_reason(path: Path) -> str | None:
    """Why the dated install of a key failed, when it did and today's releases built instead."""
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return str(found.get("reason", "")) if isinstance(found, dict) else None


def _worth_retrying(failure: VenvBuildFailed) -> bool:
    """A dated install that failed on the revision's inputs (a release missing before the date, one
    that does not build) is retried undated; a timeout or a failing network is not."""
    log = failure.log
    if log is None or log.timed_out:
        return False
    output = log.stdout + log.stderr
    return not any(words in output for words in _NETWORK_TROUBLE)


def _write_atomic(path: Path, data: bytes) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(data)
    partial.replace(path)


def venv_python(venv: Path) -> Path:
    """The venv's interpreter."""
    return venv / "bin" / "python"


def site_packages(venv: Path) -> list[Path]:
    """The venv's site-packages folders (at the same paths in Docker, where venvs are mounted)."""
    return sorted(venv.glob("lib/python*/site-packages"))


def venv_note(venv: Path) -> str:
    """The note recorded when the venv was built (a substitute interpreter), or ``""``."""
    try:
        return str(json.loads((venv / MARKER).read_text()).get("note", ""))
    except (OSError, ValueError):
        return ""


def import_paths(worktree: Path) -> tuple[Path, ...]:
    """What goes on ``PYTHONPATH`` so tests import the worktree's own code: ``src/`` if used, the root."""
    src = worktree / "src"
    if src.is_dir() and any(
        (child / "__init__.py").is_file() or child.suffix == ".py" for child in src.iterdir()
    ):
        return (src, worktree)
    return (worktree,)


def pip_env() -> dict[str, str]:
    """The environment pip runs with: the host's index and certificate settings, no prompts."""
    env = {name: os.environ[name] for name in _PIP_PASSTHROUGH if name in os.environ}
    # An empty PYTHONPATH is none: the host's must not add distributions to what pip sees.
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", PYTHONNOUSERSITE="1", PYTHONPATH="")
    return env


def _build(
    venv: Path, spec: EnvSpec, found: FoundPython, worktree: Path, sandbox: Sandbox, deadline: float
) -> None:
    """Creates the venv and runs the installs in a sandbox where only it and the staging copy are
    writable (in Docker, a container of their own: the revision's later steps see the venv read-only)."""
    seed = _seed(seeds_root(), found, sandbox, deadline)
    try:
        _clone(seed, venv)
    except OSError as exc:  # a full disk, say: the build fails and the venv is made again next time
        raise VenvBuildFailed(f"cannot copy the seed {seed.name} into {venv}: {_copy_error(exc)}") from None
    staging = Path(tempfile.mkdtemp(prefix=f"{venv.name}.src-", dir=venv.parent))
    try:
        copy = staging / "project"
        shutil.copytree(worktree, copy, symlinks=True, ignore=shutil.ignore_patterns(*_COPY_IGNORE))
        with sandbox.writable((venv, staging)) as installer:
            tools, unisolated = _install(venv, spec, found, copy, installer, deadline)
            local = _strip_local_projects(venv, copy)
            installed = _installed(venv, installer, deadline)
            interpreter = _python_version(venv, installer, deadline) or found.version
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    marker = {
        "python": str(found.path),
        "python_version": found.version,
        "note": found.note,
        "pip": pip_pin(found.version),
        "packages_before": spec.packages_before,
        "install": [list(args) for args in spec.install],
        "tools": tools,
        "unisolated": unisolated,
        "installed": sorted(
            [f"{name}=={version}" for name, version in installed.items() if name not in _SEEDED | local]
            + [f"python=={interpreter}"]
        ),
        "built": time.time(),
    }
    # The installs ran the project's code with the venv writable: write nothing through a link it left.
    partial = venv / f"{MARKER}.partial"
    partial.unlink(missing_ok=True)
    write_beneath(venv, partial.name, json.dumps(marker, indent=1).encode())
    partial.replace(venv / MARKER)


def _seed(root: Path, found: FoundPython, sandbox: Sandbox, deadline: float) -> Path:
    """The interpreter's seed in ``root``: a venv just made by ``python -m venv``, its pip brought
    to :func:`pip_pin`'s version and nothing else, built once (no project code runs in it) and
    copied for every venv of that interpreter (:func:`_clone`): creating one and bringing its pip
    up cost seconds a revision."""
    digest = hashlib.sha256()
    for part in ("seed", _LAYOUT, str(found.path), found.version, pip_pin(found.version)):
        digest.update(part.encode() + b"\0")
    for name in _RESOLUTION_SETTINGS:
        digest.update(f"{name}={os.environ.get(name, '')}".encode() + b"\0")
    seed = root / f"{_SEED_PREFIX}{digest.hexdigest()[:16]}"
    _made_once(seed, _SEED_MARKER, deadline, lambda: _make_seed(seed, found, sandbox, deadline))
    return seed


def _make_seed(seed: Path, found: FoundPython, sandbox: Sandbox, deadline: float) -> None:
    seed.mkdir()  # mounted writable in Docker: it must exist first
    pip = f"pip=={pip_pin(found.version)}"
    with sandbox.writable((seed,)) as maker:
        created = maker.exec([str(found.path), "-m", "venv", str(seed)], timeout=_left(deadline))
        if not created.ok:
            raise VenvBuildFailed(f"cannot create a venv with {found.path}: {_pip_error(created)}", created)
        _pip(
            maker, [str(venv_python(seed)), "-m", "pip", "install", pip], pip_env(), str(seed), deadline, pip
        )
    write_beneath(seed, _SEED_MARKER, json.dumps({"python": str(found.path), "pip": pip}).encode())


def _made_once(folder: Path, marker: str, deadline: float, make: Callable[[], None]) -> None:
    """``make()`` builds ``folder`` (writing ``marker`` in it last) unless the marker says it is
    built: a lock beside it keeps two processes from building it at once, and what a failed or
    interrupted build left (a folder without the marker) is removed first and on failure."""
    if (folder / marker).is_file():
        return
    folder.parent.mkdir(parents=True, exist_ok=True)
    with _locked(folder.parent / f"{folder.name}.lock", deadline):
        if (folder / marker).is_file():  # another process built it while we waited
            return
        shutil.rmtree(folder, ignore_errors=True)
        try:
            make()
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise


def _copy_error(exc: OSError) -> str:
    """What stopped a copy: the first file's reason when ``shutil.copytree`` gathered several."""
    if isinstance(exc, shutil.Error) and exc.args and isinstance(exc.args[0], list) and exc.args[0]:
        return str(exc.args[0][0][-1])
    return str(exc)


def _clone(seed: Path, venv: Path) -> None:
    """``venv`` made as a copy of ``seed``: what names the seed's own folder (``pyvenv.cfg``, the
    activation and console scripts in ``bin/``) is rewritten to name ``venv``. Compiled modules keep
    the seed's path, which Python replaces with the file's own when it loads them."""
    shutil.copytree(seed, venv, symlinks=True, ignore=shutil.ignore_patterns(_SEED_MARKER))
    old, new = str(seed).encode(), str(venv).encode()
    for path in [venv / "pyvenv.cfg", *(venv / "bin").iterdir()]:
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if old in data:
                path.write_bytes(data.replace(old, new))


def _install(
    venv: Path, spec: EnvSpec, found: FoundPython, copy: Path, sandbox: Sandbox, deadline: float
) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """Installs the revision's requirements (dated when asked) into the venv (a seed's copy),
    then coevo's test tools where the project brought none; returns where each tool came from, and
    the build tools installed for builds without isolation (:data:`ISOLATED_BUILDS_SINCE`)."""
    python = str(venv_python(venv))
    env = {**pip_env(), **_scm_version_env(copy)}
    dated = ["--uploaded-prior-to", spec.packages_before] if spec.packages_before else []
    if spec.pins:
        pins = copy.parent / PINS_FILE
        pins.write_text("".join(f"{pin}\n" for pin in spec.pins if not pin.startswith("python==")))
        dated = ["-c", str(pins)]
    unisolated: list[str] = []
    if _unisolated(spec):
        build_tools = [*_BUILD_TOOLS, *_declared_build_requirements(copy)]
        _pip(
            sandbox,
            [python, "-m", "pip", "install", *build_tools],
            env,
            str(copy),
            deadline,
            " ".join(build_tools),
        )
        present = _installed(venv, sandbox, deadline)
        unisolated = [f"{tool}=={present[tool]}" for tool in _BUILD_TOOLS if tool in present]
        dated.append("--no-build-isolation")
    _plain_requirement_files(copy, spec.install)
    for args in spec.install:
        argv = [python, "-m", "pip", "install", *dated, *_without_editable(args)]
        _pip(sandbox, argv, env, str(copy), deadline, " ".join(args))
    present = _installed(venv, sandbox, deadline)
    tools: dict[str, tuple[str, str]] = {}
    missing: list[str] = []
    minor = ".".join(map(str, minor_key(found.version)))
    for tool, pin in tool_pins(found.version).items():
        have = present.get(tool)
        if have is not None and _at_least(have, _TOOL_MINIMUM[tool]):
            tools[tool] = (have, "the project's")
        else:
            tools[tool] = (pin, f"coevo's pin for Python {minor}")
            missing.append(f"{tool}=={pin}")
            for companion, version in _COMPANIONS.get(tool, ()):
                if companion in present and not _at_least(present[companion], version):
                    missing.append(f"{companion}=={version}")
    if missing:
        pinned = dated if spec.pins else []
        argv = [python, "-m", "pip", "install", *pinned, *missing]
        _pip(sandbox, argv, env, str(copy), deadline, " ".join(missing))
    return tools, unisolated


def _unisolated(spec: EnvSpec) -> bool:
    """Whether ``spec``'s install is dated before pip's isolated builds could work."""
    before = spec.packages_before
    return before is not None and not spec.pins and before < ISOLATED_BUILDS_SINCE


def _declared_build_requirements(project: Path) -> list[str]:
    """The ``[build-system] requires`` of the project's ``pyproject.toml`` (none when it has none)."""
    with contextlib.suppress(OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        requires = (
            tomllib.loads((project / "pyproject.toml").read_text()).get("build-system", {}).get("requires")
        )
        if isinstance(requires, list):
            return [str(requirement) for requirement in requires]
    return []


def _pip(
    sandbox: Sandbox, argv: list[str], env: dict[str, str], cwd: str, deadline: float, what: str
) -> None:
    result = sandbox.exec(argv, timeout=_left(deadline), env=env, cwd=cwd)
    if not result.ok:
        reason = f"timed out after {result.duration:.0f}s" if result.timed_out else _pip_error(result)
        raise VenvBuildFailed(f"pip install {what}: {reason}", result)


_LIST_DISTRIBUTIONS = (
    "import importlib.metadata as m, json\n"
    "print(json.dumps([{'name': d.metadata['Name'], 'version': d.version} for d in m.distributions()]))"
)
"""What ``pip list --format=json`` prints, read by the interpreter alone (Python 3.8 and newer):
starting pip costs five times as much, and venvs are listed two or three times a build."""


def _installed(venv: Path, sandbox: Sandbox, deadline: float) -> dict[str, str]:
    """Every distribution in the venv and its version, as its pip lists them (the first of a name
    on the path). ``-I`` keeps the working folder and the environment off the path, as pip's own
    listing does with ``PYTHONPATH`` emptied; interpreters before 3.8 ask pip."""
    python = str(venv_python(venv))
    result = sandbox.exec([python, "-I", "-c", _LIST_DISTRIBUTIONS], timeout=_left(deadline), env=pip_env())
    if not result.ok:
        argv = [python, "-m", "pip", "list", "--format=json", "--disable-pip-version-check"]
        result = sandbox.exec(argv, timeout=_left(deadline), env=pip_env())
    try:
        listed = json.loads(result.stdout) if result.ok else []
    except ValueError:
        listed = []
    found: dict[str, str] = {}
    for entry in listed if isinstance(listed, list) else []:
        if isinstance(entry, dict) and entry.get("name") and entry.get("version"):
            found.setdefault(_normalized(str(entry["name"])), str(entry["version"]))
    return found


def _python_version(venv: Path, sandbox: Sandbox, deadline: float) -> str | None:
    """The venv interpreter's full version (``3.9.2``): a base image names only its minor."""
    argv = [str(venv_python(venv)), "-c", "import platform; print(platform.python_version())"]
    result = sandbox.exec(argv, timeout=_left(deadline))
    return result.stdout.strip() or None if result.ok else None


def _normalized(name: str) -> str:
    """A distribution's name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _at_least(version: str, minimum: str) -> bool:
    try:
        return Version(version) >= Version(minimum)
    except InvalidVersion:
        return False


def _left(deadline: float) -> float:
    return max(deadline - time.monotonic(), 1.0)


@contextlib.contextmanager
def _locked(path: Path, deadline: float) -> Iterator[None]:
    with open(path, "a") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() > deadline:
                    raise VenvBuildFailed(f"timed out waiting for another build of {path.stem}") from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _without_editable(args: tuple[str, ...]) -> list[str]:
    """pip arguments with ``-e``/``--editable`` dropped: the target is then installed normally."""
    kept: list[str] = []
    for arg in args:
        if arg in _EDITABLE_OPTIONS:
            continue
        kept.append(arg.split("=", 1)[1] if arg.startswith("--editable=") else arg)
    return kept


_EDITABLE_LINE = re.compile(r"^(\s*)(?:-e|--editable)(?:\s+|=)(\.\S*)\s*$", re.MULTILINE)


def _plain_requirement_files(copy: Path, install: tuple[tuple[str, ...], ...]) -> None:
    """The requirement files ``install`` names (:func:`_named_files`, those they include too), in the
    staging copy, with the project's own ``-e .`` lines made plain, as :func:`_without_editable`
    does for arguments: an editable install needs a PEP 660 backend, which a dated install's
    setuptools (before 64, 2022) lacks."""
    root = copy.resolve()
    for name in sorted(_named_files(install, FolderTree(copy))):
        path = copy / name
        if PurePosixPath(name).name in _BUILD_FILES or path.is_symlink() or not path.is_file():
            continue
        if not path.resolve().is_relative_to(root):
            continue
        text = path.read_text(errors="surrogateescape")
        plain = _EDITABLE_LINE.sub(r"\1\2", text)
        if plain != text:
            path.write_text(plain, errors="surrogateescape")


def _scm_version_env(project: Path) -> dict[str, str]:
    """A version for setuptools-scm/hatch-vcs, which cannot read one from the copy (no ``.git``)."""
    name = _project_name(project)
    if not name:
        return {}
    normalized = re.sub(r"[-_.]+", "_", name).upper()
    return {f"SETUPTOOLS_SCM_PRETEND_VERSION_FOR_{normalized}": "0.0.0"}


def _project_name(project: Path) -> str | None:
    with contextlib.suppress(OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        name = tomllib.loads((project / "pyproject.toml").read_text()).get("project", {}).get("name")
        if isinstance(name, str):
            return name
    for path, pattern in (
        (project / "setup.cfg", r"^name\s*=\s*([\w.-]+)"),
        (project / "setup.py", r"name\s*=\s*['\"]([\w.-]+)['\"]"),
    ):
        with contextlib.suppress(OSError):
            match = re.search(pattern, path.read_text(errors="replace"), re.MULTILINE)
            if match:
                return match.group(1)
    return None


def _strip_local_projects(venv: Path, copy: Path) -> frozenset[str]:
    """Removes the modules of distributions installed from ``copy``, keeping their metadata; returns
    their names (normalized): the revision's own, not part of its resolved environment."""
    resolved_copy = copy.resolve()
    local: set[str] = set()
    for site in venv.glob("lib/python*/site-packages"):
        if not _inside(site, venv.resolve()):  # a link the install left, out of this venv
            continue
        for direct_url in site.glob("*.dist-info/direct_url.json"):
            try:
                url = json.loads(direct_url.read_text()).get("url", "")
            except (OSError, ValueError):
                continue
            parsed = urlparse(url)
            if parsed.scheme != "file" or not _inside(Path(unquote(parsed.path)), resolved_copy):
                continue
            _strip_distribution(site, direct_url.parent)
            local.add(_normalized(direct_url.parent.name.removesuffix(".dist-info").rsplit("-", 1)[0]))
        # Legacy editable installs (setup.py develop) leave .egg-link files and easy-install.pth lines.
        for link in site.glob("*.egg-link"):
            target = (link.read_text().splitlines() or [""])[0].strip()
            if target and _inside(Path(target), resolved_copy):
                link.unlink()
                local.add(_normalized(link.stem))
        easy_install = read_beneath(site, "easy-install.pth")
        if easy_install is not None:
            lines = easy_install.decode(errors="replace").splitlines()
            kept = [line for line in lines if not _inside(Path(line.strip()), resolved_copy)]
            write_beneath(site, "easy-install.pth", ("\n".join(kept) + "\n").encode())
    return frozenset(local)


def _strip_distribution(site: Path, dist_info: Path) -> None:
    """Deletes a distribution's files anywhere in its venv except its ``.dist-info`` and the console
    scripts pip wrote for its entry points (they import from PYTHONPATH at test time). What a
    project installs outside its packages (``data_files``, ``scripts``: a test file among them)
    goes too: the venv is mounted where agents' tests run, and must hold no test of the project."""
    record = dist_info / "RECORD"
    if not record.is_file():
        return
    venv = site.resolve().parents[2]  # <venv>/lib/pythonX.Y/site-packages
    entry_points = _console_scripts(dist_info)
    folders: set[Path] = set()
    for row in csv.reader(record.read_text().splitlines()):
        relative = row[0] if row else ""
        if not relative:
            continue
        target = (site / relative).resolve()
        if not _inside(target, venv) or _inside(target, dist_info.resolve()):
            continue
        if target.parent == venv / "bin" and target.name in entry_points:
            continue
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            target.unlink()
        folders.add(target.parent)
    for folder in sorted(folders, key=lambda f: len(f.parts), reverse=True):
        while folder != venv and _inside(folder, venv) and folder not in (site.resolve(), venv / "bin"):
            pycache = folder / "__pycache__"
            if pycache.is_dir() and not any(p.suffix != ".pyc" for p in pycache.iterdir()):
                shutil.rmtree(pycache)
            try:
                folder.rmdir()
            except OSError:
                break
            folder = folder.parent


def _console_scripts(dist_info: Path) -> frozenset[str]:
    """The names of the scripts pip generates for a distribution's entry points."""
    try:
        points = importlib.metadata.PathDistribution(dist_info).entry_points
    except (OSError, ValueError, UnicodeDecodeError):
        return frozenset()
    return frozenset(point.name for point in points if point.group in ("console_scripts", "gui_scripts"))


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder)
    except (ValueError, OSError):
        return False
    return True


def _pip_error(result: ExecResult) -> str:
    """The line of pip's (or the venv module's) output that says what failed: a requirement no
    release satisfies first (a build dependency's too), then pip's first error."""
    lines = [line.strip() for line in (result.stderr + "\n" + result.stdout).splitlines() if line.strip()]
    errors = [line for line in lines if not line.startswith("ERROR: Ignored the following")]
    for line in errors:
        if "No matching distribution found for" in line:
            return line.removeprefix("ERROR:").strip()
    for prefix in ("ERROR:", "\u00d7", "Error:"):  # pip marks a failed build step with a multiplication sign
        for line in errors:
            if line.startswith(prefix):
                return line.removeprefix("ERROR:").strip()
    return lines[-1] if lines else f"exit code {result.exit_code}"
