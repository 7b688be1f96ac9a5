"""Environment commands: ``coevo env setup``, ``show``, ``build`` and ``test`` (what a revision
needs to build and run its tests)."""

from __future__ import annotations

import dataclasses
import importlib.resources
import json
import os
import subprocess

import click

from runners import BuildChoice, cause_line
from tasks import (
    CoevoError,
)

from ..pipeline import EnvironmentRun, build_and_test, environment_of
from .options import (
    BACKEND,
    BASE_IMAGE,
    BUILDING_RISK,
    LANGUAGE,
    MAVEN_ARG,
    base_images_of,
    chosen_backend,
    out,
    visible,
)


@click.group()
def env() -> None:
    """Environments: what a revision needs to build and run its tests.

    Example: coevo env show ./my-repo@HEAD~3
    """


@env.command("setup")
def env_setup() -> None:
    """Prepare Docker on a machine with no reachable container registry (root; idempotent).

    Installs and starts the Docker daemon when missing and builds debian:bookworm-slim, the
    default base, with debootstrap and docker import from the host's Debian mirror. When all
    is in place it only checks and returns in a second.

    Example: sudo coevo env setup
    """
    script = importlib.resources.files("runners") / "scripts" / "setup-docker.sh"
    if os.geteuid() != 0:
        raise CoevoError("coevo env setup installs packages and starts dockerd: run it as root")
    if subprocess.run(["bash", str(script)], check=False).returncode != 0:
        raise CoevoError("Docker setup failed (its messages are above)")


@env.command("show")
@click.argument("target", metavar="REPO[@REV]")
@LANGUAGE
@MAVEN_ARG
@BASE_IMAGE
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def env_show(
    target: str, language: str, maven_args: tuple[str, ...], base_images: tuple[str, ...], as_json: bool
) -> None:
    """Show the environment spec detected for a revision and the images' Dockerfiles or scripts.

    Example: coevo env show ./my-repo@v1.2.0
    """
    sha, spec, images, choices = environment_of(target, language, maven_args, base_images_of(base_images))
    if as_json:
        payload = {
            "revision": sha,
            **dataclasses.asdict(spec),
            "images": [
                {"tag": plan.tag, "dockerfile": plan.dockerfile, "script": plan.script} for plan in images
            ],
            "choices": [{"backend": backend, **dataclasses.asdict(choice)} for backend, choice in choices],
        }
        click.echo(json.dumps(payload, indent=2))
        return
    key = images[0].key if images else spec.base
    out.print(f"revision   {sha}", highlight=False)
    out.print(f"language   {spec.language} {spec.language_version} (base image key {key})", highlight=False)
    out.print(f"build      {spec.build_tool}", highlight=False)
    if spec.modules:
        out.print(f"modules    {visible(', '.join(m or '.' for m in spec.modules))}", highlight=False)
    if spec.packages_before:
        out.print(f"packages   uploaded before {spec.packages_before}", highlight=False)
    for args in spec.install:
        out.print(f"install    pip install {visible(' '.join(args))}", highlight=False)
    for note in spec.notes:
        out.print(f"found      {visible(note)}", highlight=False)
    for backend, choice in choices:
        out.print(f"chosen     {backend:<7} {_choice(choice)}", highlight=False)
    for plan in images:
        out.print(f"\nimage      {plan.tag}", highlight=False)
        for note in plan.notes:
            out.print(f"note       {visible(note)}", highlight=False)
        out.print(visible((plan.dockerfile or plan.script).rstrip()), highlight=False)


@env.command("build")
@click.argument("target", metavar="REPO[@REV]")
@BACKEND
@LANGUAGE
@MAVEN_ARG
@BASE_IMAGE
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def env_build(
    target: str,
    backend: str,
    language: str,
    maven_args: tuple[str, ...],
    base_images: tuple[str, ...],
    as_json: bool,
) -> None:
    """Build a revision's environment (images, dependencies, compiled code).

    Example: coevo env build ./my-repo@v1.2.0 --backend docker
    """
    run = build_and_test(
        target,
        language=language,
        backend=chosen_backend(backend, BUILDING_RISK),
        build_args=maven_args,
        base_images=base_images_of(base_images),
    )
    _print_environment_run(run, as_json)


@env.command("test")
@click.argument("target", metavar="REPO[@REV]")
@click.argument("tests", nargs=-1, required=True, metavar="TEST...")
@BACKEND
@LANGUAGE
@click.option("--coverage", is_flag=True, help="Also measure the lines each test covers.")
@click.option(
    "--timeout", type=float, default=1800, show_default=True, help="Seconds for the build and for the tests."
)
@MAVEN_ARG
@BASE_IMAGE
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def env_test(
    target: str,
    tests: tuple[str, ...],
    backend: str,
    language: str,
    coverage: bool,
    timeout: float,
    maven_args: tuple[str, ...],
    base_images: tuple[str, ...],
    as_json: bool,
) -> None:
    """Build a revision and run tests in it: pkg.Class#method (Java) or pytest node ids.

    Example: coevo env test ./my-repo@HEAD demo.CalcTest#adds
    """
    run = build_and_test(
        target,
        tests,
        language,
        chosen_backend(backend, BUILDING_RISK),
        coverage,
        timeout,
        maven_args,
        base_images_of(base_images),
    )
    _print_environment_run(run, as_json)


def _print_environment_run(run: EnvironmentRun, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(run), indent=2, default=_jsonable))
    else:
        image = f" (image {run.image}, {'cached' if run.image_cached else 'built'})" if run.image else ""
        out.print(f"revision   {run.revision}", highlight=False)
        out.print(f"backend    {run.backend}{image}", highlight=False)
        cause = visible(cause_line(run.build.message))
        built = f"FAILED: {cause}" if not run.build.ok else f"ok ({cause})" if cause else "ok"
        out.print(f"build      {built}", highlight=False)
        for choice in run.build.choices:
            out.print(f"chosen     {_choice(choice)}", highlight=False)
        if run.build.installed:
            out.print(f"installed  {visible(' '.join(run.build.installed))}", highlight=False)
        for result in run.tests.results if run.tests else ():
            detail = f"  {visible(cause_line(result.message))}" if result.message else ""
            out.print(f"{result.outcome:<14} {visible(result.test)}{detail}", highlight=False)
            if run.tests and result.test in run.tests.coverage:
                for path, lines in sorted(run.tests.coverage[result.test].lines.items()):
                    out.print(f"{'':14} covers {visible(path)}: {_ranges(lines)}", highlight=False)
    if not run.build.ok:
        raise SystemExit(1)


def _choice(choice: BuildChoice) -> str:
    """``jdk 11: the oldest JDK …``: one line of a build record, printable as written."""
    return visible(f"{choice.name} {choice.value}" + (f": {choice.why}" if choice.why else ""))


def _ranges(lines: frozenset[int]) -> str:
    spans: list[str] = []
    for line in sorted(lines):
        if spans and line == int(spans[-1].split("-")[-1]) + 1:
            spans[-1] = f"{spans[-1].split('-')[0]}-{line}"
        else:
            spans.append(str(line))
    return ", ".join(spans)


def _jsonable(value: object) -> object:
    if isinstance(value, frozenset | set):
        return sorted(value)
    return str(value)
