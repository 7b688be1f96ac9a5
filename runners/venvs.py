"""Virtual environments for Python revisions: one per environment hash, shared by every worktree.

A venv is keyed by :func:`environment_key`: the interpreter, the pip install arguments
and the content of the files those arguments name (requirements files, and the
``pyproject.toml``/``setup.cfg``/``setup.py`` of local projects). Revisions whose
dependencies did not change reuse the venv; any change builds a new one.

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
import errno
import fcntl
import functools
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlparse

from tasks import CoevoError, MissingToolchain

from .egress import urls_in
from .envspec import EnvSpec, FolderTree, TreeReader
from .sandbox import ExecResult, LocalSandbox, Sandbox, read_beneath, write_beneath

VENVS_ENV = "COEVO_VENVS"
"""Environment variable naming the folder that holds the venvs (default ``~/.cache/coevo/venvs``)."""
DEFAULT_INSTALL_TIMEOUT = 1800.0
MARKER = "coevo-ready.json"
"""Written last into a finished venv; a venv folder without it is rebuilt."""

_LAYOUT = "1"
"""Bumped when the way venvs are built changes, so old ones are not reused."""
_BUILD_FILES = ("pyproject.toml", "setup.cfg", "setup.py")
_FILE_OPTIONS = ("-r", "--requirement", "-c", "--constraint")
_EDITABLE_OPTIONS = ("-e", "--editable")
_COPY_IGNORE = (".git", ".hg", ".tox", ".nox", ".venv", "venv", "node_modules", "__pycache__")
# Forwarded to pip explicitly so a sandbox that does not inherit the host environment still
# reaches the package index through a TLS-intercepting proxy.
_PIP_PASSTHROUGH = (
    "PIP_CERT",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_FIND_LINKS",
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
    """Like :func:`find_python`, keeping the version found and the note about a substitute."""
    available = _available_pythons()
    if not available:
        raise NoPython("no Python 3 interpreter found on PATH or in pyenv; install python3")
    wanted = _minor(version)
    if wanted in available:
        path, full = available[wanted]
        return FoundPython(path, full)
    # Closest minor first; on a tie the newer one, which keeps more of the older one's behaviour.
    closest = min(available, key=lambda minor: (abs(minor[1] - wanted[1]), -minor[1]))
    path, full = available[closest]
    return FoundPython(path, full, f"python {version} not installed: using {full} ({path}), the closest")


def _minor(version: str) -> tuple[int, int]:
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else (3, 0)


@functools.cache
def _available_pythons() -> dict[tuple[int, int], tuple[Path, str]]:
    """Working Python 3 interpreters by minor version: PATH first, then pyenv (newest patch)."""
    candidates: list[Path] = []
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not folder or "/shims" in folder:  # pyenv shims fail unless pyenv selects that version
            continue
        with contextlib.suppress(OSError):
            candidates += sorted(p for p in Path(folder).iterdir() if re.fullmatch(r"python3\.\d+", p.name))
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    with contextlib.suppress(OSError):
        versions = [d for d in pyenv.iterdir() if re.fullmatch(r"3\.\d+\.\d+", d.name)]
        versions.sort(key=lambda d: tuple(int(n) for n in d.name.split(".")), reverse=True)
        candidates += [d / "bin" / "python" for d in versions]
    found: dict[tuple[int, int], tuple[Path, str]] = {}
    for path in candidates:
        if not os.access(path, os.X_OK):
            continue
        full = _probe(path)
        if full and _minor(full) not in found:
            found[_minor(full)] = (path, full)
    return found


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
    for args in spec.install:
        add("install", *args)
    for path in sorted(_named_files(spec.install, tree)):
        content = tree.read(path)
        add("file", path, b"\0missing" if content is None else hashlib.sha256(content).digest())
    return digest.hexdigest()[:24]


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


def venv_for(
    spec: EnvSpec,
    worktree: Path,
    sandbox: Sandbox | None = None,
    timeout: float = DEFAULT_INSTALL_TIMEOUT,
    python: FoundPython | None = None,
) -> Path:
    """The venv for ``spec``, built on first use (``pip install`` of each ``spec.install``).

    Installs run in a scratch copy of the worktree, in a sandbox like ``sandbox`` (default: a
    LocalSandbox over ``worktree``) in which only the venv and that copy are writable (in Docker a
    container of its own: whatever runs later sees the venv read-only); a lock file keeps two
    processes from building the same venv. Raises
    :class:`VenvBuildFailed` with pip's first error line. ``python`` is the interpreter as the
    sandbox sees it (a container's own); by default the host's closest to the spec's version.
    """
    found = python or locate_python(spec.language_version)
    key = environment_key(spec, FolderTree(worktree), f"{found.path} {found.version}")
    root = venvs_root()
    venv = root / key
    if (venv / MARKER).is_file():
        return venv
    root.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout
    with _locked(root / f"{key}.lock", deadline):
        if (venv / MARKER).is_file():  # another process finished it while we waited
            return venv
        if venv.exists():
            shutil.rmtree(venv)  # an unfinished build: no marker
        try:
            _build(venv, spec, found, worktree, sandbox or LocalSandbox(worktree), deadline)
        except BaseException:
            shutil.rmtree(venv, ignore_errors=True)
            raise
    return venv


def venv_python(venv: Path) -> Path:
    """The venv's interpreter."""
    return venv / "bin" / "python"


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
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", PYTHONNOUSERSITE="1")
    return env


def _build(
    venv: Path, spec: EnvSpec, found: FoundPython, worktree: Path, sandbox: Sandbox, deadline: float
) -> None:
    """Creates the venv and runs the installs in a sandbox where only it and the staging copy are
    writable (in Docker, a container of their own: the revision's later steps see the venv read-only)."""
    venv.mkdir()
    staging = Path(tempfile.mkdtemp(prefix=f"{venv.name}.src-", dir=venv.parent))
    try:
        copy = staging / "project"
        shutil.copytree(worktree, copy, symlinks=True, ignore=shutil.ignore_patterns(*_COPY_IGNORE))
        with sandbox.writable((venv, staging)) as installer:
            _install(venv, spec, found, copy, installer, deadline)
        _strip_local_projects(venv, copy)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    marker = {
        "python": str(found.path),
        "python_version": found.version,
        "note": found.note,
        "install": [list(args) for args in spec.install],
        "built": time.time(),
    }
    # The installs ran the project's code with the venv writable: write nothing through a link it left.
    partial = venv / f"{MARKER}.partial"
    partial.unlink(missing_ok=True)
    write_beneath(venv, partial.name, json.dumps(marker, indent=1).encode())
    partial.replace(venv / MARKER)


def _install(
    venv: Path, spec: EnvSpec, found: FoundPython, copy: Path, sandbox: Sandbox, deadline: float
) -> None:
    created = sandbox.exec([str(found.path), "-m", "venv", str(venv)], timeout=_left(deadline))
    if not created.ok:
        raise VenvBuildFailed(f"cannot create a venv with {found.path}: {_pip_error(created)}", created)
    python = str(venv_python(venv))
    env = {**pip_env(), **_scm_version_env(copy)}
    for args in spec.install:
        argv = [python, "-m", "pip", "install", *_without_editable(args)]
        result = sandbox.exec(argv, timeout=_left(deadline), env=env, cwd=str(copy))
        if not result.ok:
            what = "pip install " + " ".join(args)
            reason = f"timed out after {result.duration:.0f}s" if result.timed_out else _pip_error(result)
            raise VenvBuildFailed(f"{what}: {reason}", result)


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


def _strip_local_projects(venv: Path, copy: Path) -> None:
    """Removes the modules of distributions installed from ``copy``, keeping their metadata."""
    resolved_copy = copy.resolve()
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
        # Legacy editable installs (setup.py develop) leave .egg-link files and easy-install.pth lines.
        for link in site.glob("*.egg-link"):
            target = (link.read_text().splitlines() or [""])[0].strip()
            if target and _inside(Path(target), resolved_copy):
                link.unlink()
        easy_install = read_beneath(site, "easy-install.pth")
        if easy_install is not None:
            lines = easy_install.decode(errors="replace").splitlines()
            kept = [line for line in lines if not _inside(Path(line.strip()), resolved_copy)]
            write_beneath(site, "easy-install.pth", ("\n".join(kept) + "\n").encode())


def _strip_distribution(site: Path, dist_info: Path) -> None:
    """Deletes a distribution's files inside site-packages except its ``.dist-info``."""
    record = dist_info / "RECORD"
    if not record.is_file():
        return
    folders: set[Path] = set()
    for row in csv.reader(record.read_text().splitlines()):
        relative = row[0] if row else ""
        if not relative:
            continue
        target = (site / relative).resolve()
        if not _inside(target, site.resolve()) or _inside(target, dist_info.resolve()):
            continue  # console scripts in bin/ stay: they import from PYTHONPATH at test time
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
        folders.add(target.parent)
    for folder in sorted(folders, key=lambda f: len(f.parts), reverse=True):
        while folder != site.resolve() and _inside(folder, site.resolve()):
            pycache = folder / "__pycache__"
            if pycache.is_dir() and not any(p.suffix != ".pyc" for p in pycache.iterdir()):
                shutil.rmtree(pycache)
            try:
                folder.rmdir()
            except OSError:
                break
            folder = folder.parent


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder)
    except (ValueError, OSError):
        return False
    return True


def _pip_error(result: ExecResult) -> str:
    """The line of pip's (or the venv module's) output that says what failed."""
    lines = [line.strip() for line in (result.stderr + "\n" + result.stdout).splitlines() if line.strip()]
    for prefix in ("ERROR:", "\u00d7", "Error:"):  # pip marks a failed build step with a multiplication sign
        for line in lines:
            if line.startswith(prefix):
                return line.removeprefix("ERROR:").strip()
    return lines[-1] if lines else f"exit code {result.exit_code}"
