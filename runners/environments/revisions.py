"""Built revisions, one worktree and one build each, shared by the pairs and tasks that need them.

Consecutive pairs share revisions (one pair's rev2 is often the next one's rev1), so a
revision is exported and built once, under a file lock: a second worker that needs it waits
for the first build and then reuses it, and no two workers ever build the same revision at
once. The build's outcome is written beside the worktree; a build killed half-way leaves no
outcome, and the next user starts that revision over. In Docker, what the build downloads
goes into the revision's own Maven repository beside the worktree (``m2/``), deleted with it.

Revisions live in ``<work root>/<repository key>/<sha>-<backend>``: the key names the
repository itself (:func:`repository_key`: its remote, or its path), not a store's row id,
so stores and users that share a work root never share another repository's folders.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from miner import origin_remote
from tasks import CoevoError, DiskFull, InfrastructureError, MissingToolchain, disk_full

from ..buildtools import BuildChoice, BuildResult
from ..java.jdk import JdkPlan, recorded_plan
from ..python.venvs import seeds_root, venvs_root
from ..toolchains import build_files, prepare_environment, retry_era
from .environment import REVISION_M2, Environment, build_revision
from .envspec import EnvSpec, commit_date, detect_env
from .sides import Side
from .worktree import GitTree, export_revision

WORK_ENV = "COEVO_WORK"
_LAYOUT = 4
"""Bumped when what a built revision folder holds changes (2: its own Maven repository; 3: built
with the JDK of its era, or (Python) as of its date, the build's choices recorded; 4: both, and
what it resolved), so older builds are built again."""


def work_root() -> Path:
    """Where built revisions live: ``$COEVO_WORK`` or ``~/.cache/coevo/work``."""
    configured = os.environ.get(WORK_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "coevo" / "work"


@dataclass(frozen=True)
class BuiltRevision:
    """A revision's worktree and environment, and whether it built (``env_failed`` when no
    environment could be made for it — a broken build file, a toolchain coevo lacks —
    ``failed`` when the build itself failed). coevo's own failures (no Docker daemon) raise
    :class:`~tasks.InfrastructureError` instead: they are never a fact about the revision."""

    sha: str
    status: str
    """``ok``, ``failed`` or ``env_failed``."""
    message: str
    spec: EnvSpec | None = None
    environment: Environment | None = None
    worktree: Path | None = None
    image: str | None = None
    repository: Path | None = None
    """The revision's own Maven repository (Docker: what its build downloaded), kept with it."""
    choices: tuple[BuildChoice, ...] = ()
    """Its build record: what it was built with and why (interpreter, JDK, Maven, a retry)."""
    installed: tuple[str, ...] = ()
    """What its build resolved (:attr:`~runners.buildtools.BuildResult.installed`)."""
    production_only: bool = False
    """Its tests did not compile; its production code built alone
    (:attr:`~runners.buildtools.BuildResult.production_only`)."""
    judging: bool = False
    """A judge tree (:mod:`runners.scoring.judge_tree`): its tests run as an unprivileged user of
    their own."""

    def side(self) -> Side:
        """A :class:`~runners.environments.sides.Side` over this built revision (it must have built)."""
        assert self.environment is not None and self.spec is not None and self.worktree is not None
        return Side(self.environment, self.spec, self.worktree, self.repository, judging=self.judging)


def revision_dir(root: Path, repo_path: Path, sha: str, backend: str, modules: Sequence[str] = ()) -> Path:
    """The folder of a revision of the repository at ``repo_path`` (built for ``modules``)."""
    scope = "-" + hashlib.sha256("\0".join(modules).encode()).hexdigest()[:8] if modules else ""
    return root / repository_key(repo_path) / f"{sha}-{backend}{scope}"


def repository_key(repo_path: Path) -> str:
    """``<name>-<hash12>``: a readable name for the repository at ``repo_path`` and a hash of its
    identity, which is its canonical remote (``host/owner/name`` of ``origin``: clones of one
    repository share it) or, for a repository with no remote elsewhere, its absolute path."""
    return _repository_key(str(Path(repo_path).absolute()))


@functools.cache
def _repository_key(path: str) -> str:
    remote = origin_remote(Path(path))
    identity = remote or os.path.realpath(path)
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", (remote or path).rstrip("/").rsplit("/", 1)[-1])
    name = name.removesuffix(".git").strip("._-") or "repo"
    return f"{name[:40]}-{hashlib.sha256(identity.encode()).hexdigest()[:12]}"


def focus_modules(spec: EnvSpec, test_files: Sequence[str]) -> EnvSpec:
    """``spec`` restricted to the Maven modules that hold ``test_files`` (all when the root does)."""
    needed = {spec.module_for(path) for path in test_files}
    if not needed or "" in needed or len(spec.modules) <= 1:  # Python: no modules
        return spec
    return dataclasses.replace(spec, build_modules=tuple(sorted(needed)))


def prepare_revision(
    root: Path,
    repo_path: Path,
    sha: str,
    language: str,
    backend: str,
    build_args: Sequence[str] = (),
    base_images: Mapping[str, str] | None = None,
    timeout: float = 1800,
    test_files: Sequence[str] = (),
    build_record: Sequence[BuildChoice] = (),
    pins: Sequence[str] = (),
) -> BuiltRevision:
    """The revision exported and built (once, whoever asks first), or why it could not be.

    In a multi-module Maven project only the modules holding ``test_files`` are built, with
    what they need: other modules (integration tests, samples) often need more than
    ``test-compile`` gives them. A Java build that fails in a way another JDK explains is tried
    once more with it (:func:`~runners.environments.environment.build_revision`); which JDK built it is
    recorded, and the revision's tests run with that one. A ``build_record`` (a task's,
    from its curation) names the JDK and levels to build with instead of choosing them again: a
    build made otherwise is made again with those. ``pins`` (Python) is a task's recorded
    environment: the revision is built from it (a build that already holds exactly it is kept).

    A revision not built before whose build files (and repository, backend, build arguments) are
    those of one whose build needed a retry that its build files alone decided (a required Java
    version) starts with the JDK that retry ended with (a hint kept under ``root/jdk-hints``):
    its first build would fail the same way. Its record names the revision the retry was learnt
    from.
    """
    jdk = recorded_plan(build_record)
    hint: Path | None = None
    try:
        spec = detect_env(GitTree(repo_path, sha), language, commit_date(repo_path, sha))
        spec = focus_modules(spec, test_files)
        if pins:  # only Python's tasks record them
            spec = dataclasses.replace(spec, pins=tuple(pins))
        files = build_files(GitTree(repo_path, sha), spec)
        folder = revision_dir(root, repo_path, sha, backend, spec.build_modules)
        era = retry_era(spec, backend) if jdk is None and not (folder / "build.json").is_file() else None
        if files and era is not None:
            hint = _hint_file(root, repo_path, backend, files, build_args, era)
            jdk = _hinted_plan(hint)
        environment, _ = prepare_environment(spec, backend, files, build_args, base_images, jdk)
        spec = environment.spec  # with what the backend chose (a Python among its own)
    except InfrastructureError:
        raise  # coevo's own failure: nothing about the revision is recorded
    except CoevoError as exc:
        return BuiltRevision(sha, "env_failed", str(exc))
    image = environment.image.tag if environment.image else None
    with _locked(folder):
        outcome = folder / "build.json"
        worktree = folder / "work"
        if _layout(outcome) != _LAYOUT or not _built_with(outcome, jdk) or not _holds(outcome, spec.pins):
            shutil.rmtree(worktree, ignore_errors=True)
            shutil.rmtree(folder / REVISION_M2, ignore_errors=True)

            def fresh_worktree() -> None:
                shutil.rmtree(worktree, ignore_errors=True)
                export_revision(repo_path, sha, worktree)

            try:
                export_revision(repo_path, sha, worktree)
                environment, built = build_revision(environment, worktree, timeout, fresh_worktree)
            except MissingToolchain as exc:
                # What coevo lacks (a JDK for Java 6) is not the revision's failure, and a coevo
                # that has it must try again: nothing is recorded.
                return BuiltRevision(sha, "env_failed", str(exc), spec, environment, None, image)
            except InfrastructureError:
                raise
            except CoevoError as exc:
                built = BuildResult(False, str(exc))
            if _killed(built):
                # Killed from outside (a stopped run, the OOM killer): not the revision's fault.
                raise BuildInterrupted(f"the build of {sha[:10]} was killed; it is retried next run")
            if not built.ok and (
                full := _full_disk(built, [folder, venvs_root(), seeds_root(), Path(tempfile.gettempdir())])
            ):
                raise full  # the machine's fault: nothing is recorded, the build is retried
            record = {
                "ok": built.ok,
                "message": built.message,
                "layout": _LAYOUT,
                "choices": [dataclasses.asdict(choice) for choice in built.choices],
                "jdk": environment.jdk.as_json() if environment.jdk is not None else None,
                "installed": list(built.installed),
                "pins": list(spec.pins),
                "production_only": built.production_only,
            }
            temporary = outcome.with_suffix(".tmp")
            temporary.write_text(json.dumps(record))
            temporary.replace(outcome)
            if hint is not None and jdk is None:
                _keep_hint(hint, environment.jdk, sha)
        recorded = json.loads(outcome.read_text())
    try:
        environment = _recorded_environment(environment, recorded.get("jdk"))
    except InfrastructureError:
        raise
    except CoevoError as exc:  # the JDK that built it is gone from this host
        return BuiltRevision(sha, "env_failed", str(exc), spec, environment, None, image)
    if spec.pins and recorded.get("pins") != list(spec.pins):
        spec = dataclasses.replace(spec, pins=())  # built afresh and resolved to exactly the pins: kept
    status = "ok" if recorded["ok"] else "failed"
    choices = tuple(BuildChoice(**choice) for choice in recorded.get("choices") or ())
    image = environment.image.tag if environment.image else None
    return BuiltRevision(
        sha, status, recorded["message"], spec, environment, worktree, image, folder / REVISION_M2, choices,
        tuple(recorded.get("installed") or ()), bool(recorded.get("production_only")),
    )  # fmt: skip


LOW_SPACE = 1 << 30
"""Bytes free under which a disk counts as full when a build says so (a build that merely prints
"No space left on device" with room to spare failed on its own)."""
NEARLY_FULL = 64 << 20
"""Bytes free under which a failed build is put down to the disk whatever it printed (a venv's
``ensurepip`` says only that it failed)."""


def _full_disk(built: BuildResult, folders: Sequence[Path]) -> DiskFull | None:
    """Why a failed build is the machine's fault: it says a disk is full and one of the folders it
    writes is low on space, or one of them is all but full."""
    said = disk_full(_build_output(built))
    if said is not None and _low_on_space(folders, LOW_SPACE):
        return said
    low = _low_on_space(folders, NEARLY_FULL)
    if low is not None:
        return DiskFull(f"a disk is full ({low} has less than {NEARLY_FULL >> 20} MiB free): free some space")
    return None


def _low_on_space(folders: Sequence[Path], free: int) -> Path | None:
    """The first of ``folders`` with less than ``free`` bytes left on its disk."""
    for folder in folders:
        probe = folder
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        try:
            usage = shutil.disk_usage(probe)
        except OSError:
            continue
        if usage.free < free:
            return folder
    return None


def _build_output(built: BuildResult) -> str:
    """What a failed build said: its message and its output."""
    log = built.log
    return "\n".join(filter(None, [built.message, log.stdout if log else "", log.stderr if log else ""]))


def _hint_file(
    root: Path,
    repo_path: Path,
    backend: str,
    files: Mapping[str, bytes],
    build_args: Sequence[str],
    era: str,
) -> Path:
    """Where a JDK hint for these build files of this repository on ``backend`` is kept, while the
    era's JDK plan and the JDKs at hand (``era``, :func:`~runners.toolchains.retry_era`) hold."""
    digest = hashlib.sha256()
    for part in (str(repo_path.resolve()), backend, era, *build_args):
        digest.update(part.encode() + b"\0")
    for name, content in sorted(files.items()):
        digest.update(name.encode() + b"\0" + hashlib.sha256(content).digest())
    return root / "jdk-hints" / f"{digest.hexdigest()[:24]}.json"


def _hinted_plan(hint: Path) -> JdkPlan | None:
    """The JDK plan a revision with the same build files ended with after a retry that its build
    files alone decided (:attr:`~runners.java.jdk.JdkPlan.retry_by_build_files`): this revision
    starts with it, and its record says where the retry was learnt. None without a hint."""
    try:
        kept = json.loads(hint.read_text())
        plan = JdkPlan.from_json(kept["plan"])
        found_at = str(kept["found_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if plan.retry_of is None or not plan.retry_by_build_files:
        return None
    learnt = f"learnt from the build of {found_at[:12]}, whose build files are the same"
    why = f"{plan.retry_why} ({learnt}: not built with JDK {plan.retry_of} again)"
    return dataclasses.replace(plan, retry_why=why)


def _keep_hint(hint: Path, plan: JdkPlan | None, sha: str) -> None:
    """Keeps ``plan`` for the next revision with the same build files when a retry its build files
    decided led to it."""
    if plan is None or plan.retry_of is None or not plan.retry_by_build_files:
        return
    hint.parent.mkdir(parents=True, exist_ok=True)
    temporary = hint.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps({"plan": plan.as_json(), "found_at": sha}))
    temporary.replace(hint)


def _built_with(outcome: Path, jdk: JdkPlan | None) -> bool:
    """Whether the build recorded in ``outcome`` used ``jdk``'s JDK and levels (any, when None)."""
    if jdk is None:
        return True
    try:
        made = json.loads(outcome.read_text()).get("jdk")
    except (OSError, ValueError):
        return False
    if not isinstance(made, dict):
        return False
    return (made.get("feature"), [tuple(pair) for pair in made.get("raised", ())]) == (
        jdk.feature,
        list(jdk.raised),
    )


def _recorded_environment(environment: Environment, jdk: dict | None) -> Environment:
    """The environment of the JDK a revision was built with (a retry's), where tests must run."""
    if jdk is None or environment.jdk is None or environment.remake is None:
        return environment
    plan = JdkPlan.from_json(jdk)
    return environment if plan == environment.jdk else environment.remake(plan)


def release_revision(root: Path, repo_path: Path, sha: str, backend: str) -> None:
    """Deletes a revision's worktrees, whatever modules they built (no pair needs them any more)."""
    base = revision_dir(root, repo_path, sha, backend)
    for folder in sorted(base.parent.glob(base.name + "*")):
        if not folder.is_dir():
            continue
        with _locked(folder):
            shutil.rmtree(folder / "work", ignore_errors=True)
            shutil.rmtree(folder / REVISION_M2, ignore_errors=True)
            (folder / "build.json").unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            folder.rmdir()


class BuildInterrupted(CoevoError):
    """A build was killed by a signal it did not ask for; nothing about the revision is recorded."""


def _killed(built: BuildResult) -> bool:
    log = built.log
    if log is None or log.timed_out or built.ok:
        return False
    return log.exit_code is None or log.exit_code in (137, 143)  # 128 + SIGKILL, SIGTERM (via a shell)


def _layout(outcome: Path) -> int | None:
    """The layout a recorded build was made with; None when there is no complete record."""
    try:
        return int(json.loads(outcome.read_text()).get("layout", 1))
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def _holds(outcome: Path, pins: tuple[str, ...]) -> bool:
    """Whether a recorded build has the environment ``pins`` ask for: built from them, or resolved
    to exactly them (the build a task was curated from)."""
    if not pins:
        return True
    try:
        recorded = json.loads(outcome.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(recorded, dict) and list(pins) in (recorded.get("pins"), recorded.get("installed"))


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder.with_name(folder.name + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
