"""The whole pipeline in one call: what `coevo run` and the scheduler execute.

It mines each repository, curates what was mined, then writes a snapshot when the store's
tasks changed since the last one; the site joins it as it is built.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from curation import CurateProgress, CurateReport, CurateRequest, curate
from miner import (
    MineRequest,
    NotARepository,
    Progress,
    detect_language,
    local_checkout,
    mine,
)
from miner.gitlog import git
from runners import BuildResult, EnvSpec, GitTree, TestRun, detect_env, remove_dead_leftovers
from runners.buildtools import BuildChoice
from runners.environments.environment import base_images as configured_base_images
from runners.environments.environment import build_revision
from runners.environments.envspec import commit_date, maven_build_files, resolve_python
from runners.environments.images import ImagePlan, deps_image_plan, docker_pythons
from runners.environments.worktree import export_revision
from runners.java.jdk import NoSuitableJdk
from runners.java.maven import maven_choice
from runners.java.toolchain import jdk_plan
from runners.sandbox.scratch import temporary_dir
from runners.toolchains import build_files, image_plan, prepare_environment
from tasks import (
    CoevoError,
    MiningRun,
    Repository,
    SnapshotInfo,
    Store,
    StoreChanges,
)
from web import SiteReport, render_site

from .release import snapshot_if_changed


@dataclass
class PipelineReport:
    """What one pipeline run did, per repository, and the errors that stopped a repository."""

    runs: list[MiningRun] = field(default_factory=list)
    curations: list[CurateReport] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    changes: StoreChanges | None = None
    """The tasks gained and retired since the newest snapshot (None: snapshots not asked for)."""
    snapshot: SnapshotInfo | None = None
    """The snapshot written, when there were changes."""
    site: SiteReport | None = None
    """The site rendered at the end (None: not asked for, or it failed: see ``errors``)."""

    @property
    def ok(self) -> bool:
        return not self.errors


def run_pipeline(
    store: Store,
    locations: Sequence[str],
    since: datetime | None = None,
    until: datetime | None = None,
    language: str = "auto",
    workers: int | None = None,
    progress: Progress | None = None,
    curation: CurateRequest | None = None,
    curate_progress: CurateProgress | None = None,
    snapshots: Path | None = None,
    site: Path | None = None,
) -> PipelineReport:
    """Runs every stage for each repository; a repository that fails does not stop the others.

    ``curation`` (None: mining only) says how to curate; each repository's newly mined pairs
    are curated right after it is mined, within the same window. Then, with ``snapshots``, a
    snapshot of every task is written there when the store gained or retired tasks since the
    newest one there (:func:`snapshot_if_changed`). Last, with ``site``, the static site of
    the store is rendered there.
    """
    report = PipelineReport()
    for location in locations:
        try:
            run = mine(
                store,
                MineRequest(location=location, since=since, until=until, language=language, workers=workers),
                progress,
            )
        except CoevoError as exc:
            report.errors[location] = str(exc)
            continue
        report.runs.append(run)
        if curation is None:
            continue
        with store.session() as session:
            repository = session.get(Repository, run.repository_id)
            name = repository.name if repository else None
        request = dataclasses.replace(curation, repository=name, since=since, until=until)
        try:
            curated = curate(store, request, curate_progress)
        except CoevoError as exc:
            report.errors[location] = f"curation: {exc}"
            continue
        report.curations.append(curated)
        if curated.errors:
            report.errors[location] = f"curation: {len(curated.errors)} pairs failed (retried next run)"
    if snapshots is not None:
        try:
            report.changes, report.snapshot = snapshot_if_changed(store, snapshots)
        except CoevoError as exc:
            report.errors["snapshot"] = str(exc)
    if site is not None:
        try:
            report.site = render_site(store, site)
        except CoevoError as exc:
            report.errors["site"] = str(exc)
    return report


def split_revision(target: str) -> tuple[str, str]:
    """``REPO@REV`` → (repo, rev); a bare REPO means HEAD. ``git@host:org/r.git`` is a repo, not a rev."""
    location, at, revision = target.rpartition("@")
    if not at or not location or ":" in revision:
        return target, "HEAD"
    return location, revision


def environment_of(
    target: str,
    language: str = "auto",
    build_args: Sequence[str] = (),
    base_images: Mapping[str, str] | None = None,
) -> tuple[str, EnvSpec, list[ImagePlan], list[tuple[str, BuildChoice]]]:
    """The full commit id, EnvSpec and image plans of ``REPO@REV`` (rendered, nothing built), and
    what each backend would build it with, and why (``docker``/``local``, a choice); a Python spec
    with the interpreter Docker would give it."""
    path, sha, spec = _revision_env(target, language)
    if spec.language == "python":
        spec = resolve_python(spec, docker_pythons(configured_base_images(base_images)), "Docker")
    if spec.language != "java":
        return sha, spec, [image_plan(spec, base_images)], []
    tree = GitTree(path, sha)
    maven = maven_choice(spec, tree.read(".mvn/wrapper/maven-wrapper.properties"))
    choices: list[tuple[str, BuildChoice]] = []
    for backend in ("docker", "local"):
        try:
            choices += [(backend, choice) for choice in (*jdk_plan(spec, backend).choices(), maven)]
        except NoSuitableJdk as exc:
            choices.append((backend, BuildChoice("jdk", "none", str(exc))))
    try:
        plan = jdk_plan(spec, "docker")
    except NoSuitableJdk:
        return sha, spec, [], choices
    base = image_plan(spec, base_images, plan.feature)
    deps = deps_image_plan(base, maven_build_files(tree, spec), [*plan.maven_args(), *build_args])
    return sha, spec, [base, deps], choices


def _revision_env(target: str, language: str) -> tuple[Path, str, EnvSpec]:
    location, revision = split_revision(target)
    path = local_checkout(location)
    try:
        sha = git(path, "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}").strip()
    except NotARepository:
        raise CoevoError(f"{location} has no revision {revision!r}") from None
    if language == "auto":
        language = detect_language(path, sha)
    return path, sha, detect_env(GitTree(path, sha), language, commit_date(path, sha))


@dataclass(frozen=True)
class EnvironmentRun:
    """What `coevo env build` / `coevo env test` did for one revision."""

    revision: str
    spec: EnvSpec
    backend: str
    image: str | None
    image_cached: bool
    build: BuildResult
    tests: TestRun | None = None


def build_and_test(
    target: str,
    tests: Sequence[str] = (),
    language: str = "auto",
    backend: str = "auto",
    coverage: bool = False,
    timeout: float = 1800,
    build_args: Sequence[str] = (),
    base_images: Mapping[str, str] | None = None,
) -> EnvironmentRun:
    """Builds ``REPO@REV`` in a scratch worktree and runs ``tests`` in it (network off for tests).

    ``build_args`` are extra Maven arguments; ``base_images`` override the images to start from.
    """
    path, sha, spec = _revision_env(target, language)
    files = build_files(GitTree(path, sha), spec)
    environment, cached = prepare_environment(spec, backend, files, build_args, base_images)
    spec = environment.spec  # with the interpreter the backend chose
    remove_dead_leftovers(docker=environment.backend == "docker")
    with temporary_dir("coevo-worktree-") as tmp:
        worktree = export_revision(path, sha, Path(tmp) / "work")

        def fresh_worktree() -> None:
            shutil.rmtree(worktree)
            export_revision(path, sha, worktree)

        environment, built = build_revision(environment, worktree, timeout, fresh_worktree)
        image = environment.image.tag if environment.image else None
        run = EnvironmentRun(sha, spec, environment.backend, image, cached, built)
        if not built.ok or not tests:
            return run
        runner = environment.sandbox(worktree)
        try:
            results = environment.tool.run_tests(runner, spec, tests, timeout, coverage=coverage)
        finally:
            runner.close()
    return dataclasses.replace(run, tests=results)
