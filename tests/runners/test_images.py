"""Image plans render from EnvSpecs alone; builds are cached by content hash (real Docker, marked)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from runners import EnvSpec
from runners.environments.images import (
    ImageBuildFailed,
    base_image_plan,
    build_image,
    deps_image_plan,
    docker_pythons,
)
from runners.java.jdk import NoSuitableJdk
from runners.sandbox.docker_sandbox import LABEL, OWNER_LABEL, DockerSandbox, docker_client, remove_leftovers
from runners.sandbox.scratch import remove_dead_scratch
from tasks import Owner

JAVA = EnvSpec(language="java", language_version="11", build_tool="maven", modules=("",))
PYTHON = EnvSpec(language="python", language_version="3.11", build_tool="pip")


def test_java_plan_renders_with_ca_and_tools(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n")
    jar = tmp_path / "junit.jar"
    jar.write_bytes(b"jar")
    plan = base_image_plan(JAVA, ca_bundle=ca, tool_jars={"junit-console.jar": jar})
    assert plan.tag.startswith("coevo-base:java11-")  # the JDK of Java 11's era
    assert "FROM debian:bullseye-slim" in plan.dockerfile
    assert "openjdk-11-jdk-headless maven" in plan.dockerfile
    assert "COPY tools/junit-console.jar /opt/coevo/tools/junit-console.jar" in plan.dockerfile
    assert "host-ca-%03d.crt" in plan.dockerfile
    assert plan.notes == ()
    assert dict(plan.context) == {"ca-certificates.crt": ca, "tools/junit-console.jar": jar}
    assert b"<artifactId>pitest-command-line</artifactId>" in dict(plan.files)["pit/pom.xml"]
    with_maven = base_image_plan(JAVA, tool_jars={"junit-console.jar": jar}, maven_archive=jar)
    assert "openjdk-11-jdk-headless git" in with_maven.dockerfile  # Maven comes from the archive
    assert "tar -xzf /tmp/maven.tar.gz" in with_maven.dockerfile
    # Same inputs, same tag; a changed CA bundle, a new image.
    assert base_image_plan(JAVA, ca_bundle=ca, tool_jars={"junit-console.jar": jar}).tag == plan.tag
    ca.write_text("-----BEGIN CERTIFICATE-----\nBBB\n-----END CERTIFICATE-----\n")
    assert base_image_plan(JAVA, ca_bundle=ca, tool_jars={"junit-console.jar": jar}).tag != plan.tag


JDK8_AND_PITS_JAVA = "openjdk-8-jdk-headless openjdk-17-jre-headless git"
"""PIT runs on Java 11 or later: the JDK 8 image has a Java 17 for it."""


@pytest.mark.parametrize(
    ("release", "level", "key", "debian", "packages"),
    [
        ("6", (), "java8", "sid", JDK8_AND_PITS_JAVA),
        ("8", ("maven.compiler.source",), "java8", "sid", JDK8_AND_PITS_JAVA),
        ("8", ("maven.compiler.release",), "java11", "bullseye", "openjdk-11-jdk-headless git"),  # --release
        ("17", (), "java17", "bookworm", "openjdk-17-jdk-headless git"),
        ("21", (), "java21", "trixie", "openjdk-21-jdk-headless git"),
        ("24", (), "java25", "trixie", "openjdk-25-jdk-headless git"),
    ],
)  # fmt: skip
def test_java_images_have_the_jdk_of_the_releases_era(
    tmp_path: Path, release: str, level: tuple[str, ...], key: str, debian: str, packages: str
) -> None:
    archive = tmp_path / "maven.tar.gz"
    archive.write_bytes(b"maven")
    spec = EnvSpec("java", release, "maven", modules=("",), java_level=level)
    plan = base_image_plan(spec, maven_archive=archive)
    assert plan.key == key and plan.tag.startswith(f"coevo-base:{key}-")
    assert f"FROM debian:{debian}-slim\n" in plan.dockerfile
    assert f"ca-certificates {packages} socat" in plan.dockerfile
    assert f"ENV JAVA_HOME=/usr/lib/jvm/java-{key[4:]}-openjdk-amd64" in plan.dockerfile
    # A configured image for that JDK replaces the Debian suite.
    custom = base_image_plan(spec, {key: "registry.local/debian:x"}, maven_archive=archive)
    assert "FROM registry.local/debian:x\n" in custom.dockerfile and custom.tag != plan.tag


def test_no_image_for_a_jdk_coevo_does_not_provide() -> None:
    with pytest.raises(
        NoSuitableJdk, match=r"no JDK in coevo's images compiles Java 26 \(JDK 8, 11, 17, 21, 25\)"
    ):
        base_image_plan(EnvSpec("java", "26", "maven"))
    with pytest.raises(NoSuitableJdk, match="coevo's images provide JDK 8, 11, 17, 21, 25, not JDK 23"):
        base_image_plan(JAVA, jdk=23)


def test_python_plan_without_ca_and_with_a_configured_base() -> None:
    plan = base_image_plan(PYTHON)
    assert plan.tag.startswith("coevo-base:python3.11-")
    assert "COPY ca-certificates.crt" not in plan.dockerfile
    assert "python3.11-venv" in plan.dockerfile
    custom = base_image_plan(PYTHON, from_images={"python3.11": "registry.local/debian:12"})
    assert "FROM registry.local/debian:12" in custom.dockerfile
    assert custom.tag != plan.tag


def test_each_era_python_starts_from_the_debian_suite_that_packages_it() -> None:
    assert docker_pythons() == {"3.9", "3.11", "3.13"}
    assert docker_pythons({"python3.12": "registry.local/py:3.12", "java21": "x"}) == {
        "3.9",
        "3.11",
        "3.12",
        "3.13",
    }
    for version, suite in (("3.9", "bullseye"), ("3.11", "bookworm"), ("3.13", "trixie")):
        plan = base_image_plan(dataclasses.replace(PYTHON, language_version=version))
        assert plan.tag.startswith(f"coevo-base:python{version}-") and plan.notes == ()
        assert f"FROM debian:{suite}-slim" in plan.dockerfile
        assert f"python{version} python{version}-venv" in plan.dockerfile
    unpackaged = base_image_plan(dataclasses.replace(PYTHON, language_version="3.10"))
    assert "FROM debian:bookworm-slim" in unpackaged.dockerfile
    assert unpackaged.notes == ("python 3.10 runs on Python 3.11 (Debian bookworm's)",)


def test_deps_plan_is_keyed_by_the_build_files_and_arguments() -> None:
    base = base_image_plan(JAVA)
    deps = deps_image_plan(base, {"pom.xml": b"<project/>", "core/pom.xml": b"<project/>"})
    assert deps.tag.startswith("coevo-deps:java11-") and deps.base == base.tag
    assert base.tag in deps.script and not deps.dockerfile  # run in a container of the base, committed
    assert "-Dmaven.repo.local=/opt/coevo/m2" in deps.script and "--fail-never" in deps.script
    assert dict(deps.files) == {"core/pom.xml": b"<project/>", "pom.xml": b"<project/>"}
    assert deps_image_plan(base, {"pom.xml": b"<project/>", "core/pom.xml": b"<project/>"}).tag == deps.tag
    assert deps_image_plan(base, {"pom.xml": b"<project></project>"}).tag != deps.tag
    with_args = deps_image_plan(base, dict(deps.files), ["-DjdkVersion=1.8"])
    assert "-DjdkVersion=1.8 test-compile" in with_args.script
    with pytest.raises(ImageBuildFailed, match="Python dependencies live in cached venvs"):
        deps_image_plan(base_image_plan(PYTHON), {})


@pytest.fixture(scope="module")
def python_image() -> str:
    from runners.environments.images import host_ca_bundle

    client = docker_client()
    plan = base_image_plan(PYTHON, ca_bundle=host_ca_bundle())
    build_image(client, plan)
    assert build_image(client, plan) is True  # the second build of an unchanged plan is a cache hit
    return plan.tag


@pytest.mark.docker
def test_docker_sandbox_runs_commands_with_limits_and_cleans_up(python_image: str, tmp_path: Path) -> None:
    client = docker_client()
    box = DockerSandbox(client, python_image, tmp_path, output_limit=64 * 1024)
    try:
        box.write_file("hello.py", b"import sys; print('hi'); print('err', file=sys.stderr); sys.exit(3)")
        result = box.exec(["python3", "hello.py"], timeout=60)
        assert (result.exit_code, result.stdout, result.stderr) == (3, "hi\n", "err\n")
        box.exec(["sh", "-c", "echo made > out.txt"], timeout=60)
        assert box.read_file("out.txt") == b"made\n"

        # No network: the container has a loopback interface and nothing else (no packet is sent).
        interfaces = box.exec(
            ["python3", "-c", "import socket; print(sorted(n for _, n in socket.if_nameindex()))"],
            timeout=60,
        )
        assert interfaces.stdout.strip() == "['lo']"

        started = time.monotonic()
        hung = box.exec(["sh", "-c", "sleep 300 & sleep 300"], timeout=2)
        assert hung.timed_out and hung.exit_code is None
        assert time.monotonic() - started < 60
        assert "sleep" not in box.exec(["ps", "-e", "-o", "comm="], timeout=30).stdout

        loud = box.exec(["sh", "-c", "yes 0123456789 | head -c 20000000; echo END"], timeout=120)
        assert loud.ok and loud.truncated and loud.stdout.endswith("END\n")
        assert loud.stdout.startswith("0123456789") and "[... output truncated ...]" in loud.stdout
        assert len(loud.stdout) < 70 * 1024
    finally:
        box.close()
    assert _containers_of(client, Owner.current()) == []


def _containers_of(client: Any, owner: Owner) -> list[Any]:
    return client.containers.list(
        all=True, filters={"label": f"{OWNER_LABEL}={owner.token}"}, ignore_removed=True
    )


_KILLED_RUN = """
import sys, time
from pathlib import Path
from runners.sandbox.docker_sandbox import DockerSandbox, docker_client
box = DockerSandbox(docker_client(), sys.argv[1], Path(sys.argv[2]))
box.exec(["true"], timeout=60)
print(box.scratch(), flush=True)
time.sleep(600)
"""


@pytest.mark.docker
def test_only_the_leftovers_of_dead_processes_are_removed(
    python_image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run killed with its sandbox up leaves a container and a scratch folder; cleaning up
    removes those, and neither this live process's sandbox nor containers it cannot judge."""
    client = docker_client()
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    killed = subprocess.Popen(
        [sys.executable, "-c", _KILLED_RUN, python_image, str(tmp_path)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(temporary)},
    )  # fmt: skip
    live = DockerSandbox(client, python_image, tmp_path)
    unjudged = [
        client.containers.run(python_image, ["sleep", "600"], detach=True, labels=labels)
        for labels in ({LABEL: "1"}, {LABEL: "1", OWNER_LABEL: "1-2-3-4@another-host"})
    ]
    try:
        assert killed.stdout is not None
        dead_scratch = Path(killed.stdout.readline().strip())
        dead = Owner.parse(f"{dead_scratch.parent.name}@{Owner.current().host}")
        assert dead is not None and dead.pid == killed.pid
        live.exec(["true"], timeout=60)
        killed.kill()
        killed.wait()
        assert len(_containers_of(client, dead)) == 1 and dead_scratch.is_dir()  # what a kill leaves

        assert remove_leftovers(client) >= 1  # other runs' dead leftovers on this daemon may go too
        assert remove_dead_scratch() == [dead_scratch.parent]
        assert _containers_of(client, dead) == [] and not dead_scratch.parent.exists()
        assert len(_containers_of(client, Owner.current())) == 1 and live.scratch().is_dir()
        for container in unjudged:
            container.reload()
            assert container.status == "running"
    finally:
        killed.kill()
        live.close()
        for container in unjudged:
            container.remove(force=True)


@pytest.mark.docker
def test_a_container_killed_mid_run_is_a_recorded_failure(python_image: str, tmp_path: Path) -> None:
    import threading

    client = docker_client()
    box = DockerSandbox(client, python_image, tmp_path)
    try:
        box.exec(["true"], timeout=30)
        killer = threading.Timer(2.0, lambda: _containers_of(client, Owner.current())[0].kill())
        killer.start()
        result = box.exec(["sleep", "120"], timeout=300)
        killer.join()
        assert not result.ok and result.exit_code is None and not result.timed_out
    finally:
        box.close()
    assert _containers_of(client, Owner.current()) == []


@pytest.mark.docker
def test_a_container_removed_under_a_sandbox_is_coevos_fault_not_a_result(
    python_image: str, tmp_path: Path
) -> None:
    """The daemon failing under a run (here: its container removed) is an InfrastructureError
    naming what failed — never an outcome a test or a task could be charged with."""
    from tasks import InfrastructureError

    client = docker_client()
    box = DockerSandbox(client, python_image, tmp_path)
    try:
        assert box.exec(["true"], timeout=30).ok
        _containers_of(client, Owner.current())[0].remove(force=True)
        with pytest.raises(InfrastructureError, match="the Docker daemon failed running a command"):
            box.exec(["true"], timeout=30)
    finally:
        box.close()


@pytest.mark.docker
def test_cleaning_up_while_other_runs_remove_their_own_containers_raises_nothing(python_image: str) -> None:
    """Another live command removing its sandboxes while this one looks for leftovers (xdist
    workers, two coevo commands, a cluster's workers): a container gone between the daemon's list
    and its inspect is no error, and a live owner's container is never removed."""
    import threading

    client = docker_client()
    labels = {LABEL: "1", OWNER_LABEL: Owner.current().token}
    made = [client.api.create_container(python_image, ["true"], labels=labels)["Id"] for _ in range(40)]
    kept = client.api.create_container(python_image, ["true"], labels=labels)["Id"]
    listed = [c["Id"] for c in client.api.containers(all=True, filters={"label": LABEL})]
    ours = [container for container in listed if container in made]  # in the order cleaning inspects them

    def remove_ours() -> None:  # from the end: cleaning's inspects meet containers already gone
        for container in reversed(ours):
            client.api.remove_container(container, force=True)

    remover = threading.Thread(target=remove_ours)
    try:
        remover.start()
        while remover.is_alive():
            remove_leftovers(client)
        remover.join()
        client.api.inspect_container(kept)  # a live owner's: still there
    finally:
        remover.join()
        client.api.remove_container(kept, force=True)
