"""Benchmark running one test method with coevo's Maven runner against ``mvn test -Dtest=...``.

* **coevo** builds the project once (``MavenTool.build``: Maven ``test-compile`` plus the
  test classpath), then runs the method N times with the JUnit console launcher.
* **maven** runs ``mvn -q test -Dtest=Class#method`` N times, as a script that
  re-runs one test through Maven would; its outcome is read from surefire's report.

Both use the same JDK and local Maven repository. The script prints every run's time,
the one-off build time, and ``speedup: N.Nx`` (mean Maven run over mean coevo run). It
exits 1 when the two disagree on the test's outcome in any run, 2 when the build fails.

Example::

    python bench/run_speed.py /tmp/gson com.google.gson.GsonTest#testOverridesDefaultExcluder --module gson
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import statistics
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from runners import FolderTree, LocalSandbox, Outcome, detect_env, parse_junit_xml
from runners.java.jdk import choose_jdk
from runners.java.maven import SKIP_PROPERTIES, MavenTool, maven_repository
from tasks import CoevoError


@dataclass(frozen=True)
class Timed:
    """One run of the test: how long it took and what it gave."""

    seconds: float
    outcome: Outcome


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", type=Path, help="a Maven project folder (it is built in place)")
    parser.add_argument("test", help="the test method, pkg.Class#method")
    parser.add_argument("--module", default=None, help="the Maven module holding the test (folder)")
    parser.add_argument("-n", "--runs", type=int, default=5, help="runs per approach (default 5)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per build or run")
    parser.add_argument("--java", help="the Java release to build for, instead of the detected one")
    parser.add_argument(
        "--maven-arg", action="append", default=[], help="an extra Maven argument for both (repeatable)"
    )
    parser.add_argument(
        "--image-reuse",
        action="store_true",
        help="also time the Docker base image: a fresh build, then the same spec again (a cache hit)",
    )
    args = parser.parse_args()
    try:
        if args.image_reuse:
            _image_reuse(args)
        return _compare(args)
    except CoevoError as exc:
        print(f"error: {exc}")
        return 2


def _image_reuse(args: argparse.Namespace) -> None:
    """Builds the project's base image from scratch, then asks for it again: the second is a cache hit."""
    from runners import docker_client
    from runners.toolchains import image_plan, prepare_environment

    spec = detect_env(FolderTree(args.project), "java")
    if args.java:
        spec = replace(spec, language_version=args.java)
    with contextlib.suppress(Exception):
        docker_client().images.remove(image_plan(spec).tag, force=True)
    for attempt in ("first", "second"):
        started = time.perf_counter()
        _, cached = prepare_environment(spec, "docker")
        seconds = time.perf_counter() - started
        print(f"image, {attempt} build: {seconds:6.1f} s ({'cache hit' if cached else 'built'})")


def _compare(args: argparse.Namespace) -> int:
    root = args.project.resolve()
    spec = detect_env(FolderTree(root), "java")
    if args.java:
        spec = replace(spec, language_version=args.java)
    box = LocalSandbox(root)
    tool = MavenTool(maven_args=args.maven_arg)
    jdk = choose_jdk(spec.language_version)
    print(f"project {root} (java {spec.language_version}, JDK {jdk.feature} at {jdk.home})")

    started = time.monotonic()
    built = tool.build(box, spec, args.timeout)
    build_seconds = time.monotonic() - started
    if not built.ok:
        print(f"build failed: {built.message}")
        return 2
    print(f"coevo build (once): {build_seconds:.1f}s")

    coevo: list[Timed] = []
    for _ in range(args.runs):
        started = time.monotonic()
        run = tool.run_tests(box, spec, [args.test], args.timeout, module=args.module)
        coevo.append(Timed(time.monotonic() - started, run.results[0].outcome))
    maven = [
        _maven_run(root, args.test, args.module, str(jdk.home), args.timeout, args.maven_arg)
        for _ in range(args.runs)
    ]

    for name, runs in (("coevo", coevo), ("maven", maven)):
        times = " ".join(f"{run.seconds:.2f}s" for run in runs)
        print(f"{name:5} runs: {times}  outcomes: {', '.join(sorted({run.outcome.value for run in runs}))}")
    coevo_mean = statistics.mean(run.seconds for run in coevo)
    maven_mean = statistics.mean(run.seconds for run in maven)
    print(f"mean per run: coevo {coevo_mean:.2f}s, maven {maven_mean:.2f}s")
    total_coevo = build_seconds + sum(run.seconds for run in coevo)
    print(f"with the build: coevo {total_coevo:.1f}s, maven {sum(run.seconds for run in maven):.1f}s")
    print(f"speedup: {maven_mean / coevo_mean:.1f}x")
    if {run.outcome for run in coevo} != {run.outcome for run in maven}:
        print("MISMATCH: coevo and maven disagree on the outcome")
        return 1
    return 0


def _maven_run(
    root: Path, test: str, module: str | None, java_home: str, timeout: float, maven_args: list[str]
) -> Timed:
    class_name, _, method = test.partition("#")
    reports = root / (module or "") / "target" / "surefire-reports"
    shutil.rmtree(reports, ignore_errors=True)
    command = [
        "mvn",
        "-B",
        "-q",
        f"-Dmaven.repo.local={maven_repository()}",
        *(flag for flag in SKIP_PROPERTIES if flag != "-DskipTests"),
        *maven_args,
        f"-Dtest={class_name.rsplit('.', 1)[-1]}#{method}",
        "-DfailIfNoTests=false",
        "-Dsurefire.failIfNoSpecifiedTests=false",
        *(["-pl", module] if module else []),
        "test",
    ]
    box = LocalSandbox(root)
    started = time.monotonic()
    log = box.exec(command, timeout, env={"JAVA_HOME": java_home})
    seconds = time.monotonic() - started
    if log.timed_out:
        return Timed(seconds, Outcome.TIMEOUT)
    report = reports / f"TEST-{class_name}.xml"
    found = []
    if report.is_file():
        found = [r.outcome for r in parse_junit_xml(report.read_bytes(), java=True) if _same(r.test, test)]
    for outcome in (Outcome.ERROR, Outcome.FAIL, Outcome.PASS, Outcome.SKIPPED):
        if outcome in found:
            return Timed(seconds, outcome)
    return Timed(seconds, Outcome.ABSENT if log.ok else Outcome.ERROR)


def _same(reported: str, wanted: str) -> bool:
    class_name, _, method = reported.partition("#")
    return f"{class_name}#{method.split('[')[0]}" == wanted


if __name__ == "__main__":
    sys.exit(main())
