"""Docker images for an EnvSpec: a plan (Dockerfile text, context files, content-hash tag), then a build.

The plan is a pure value: rendering it runs nothing, and its tag is a hash of
everything that went into it, so a changed template, CA bundle or tool jar makes a
new image and an unchanged one is a cache hit. Base images are built with ``docker build``
(only coevo's own steps run there); a deps image runs the revision's build, so it is made
in a build container instead (no network but the egress proxy, no cache mounted) and
committed.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks import InfrastructureError

from ..java.jdk import ERA_JDKS, NoSuitableJdk, plan_jdk
from ..java.maven import DEPENDENCY_PLUGIN, SKIP_PROPERTIES
from ..java.tools import PER_TEST_COVERAGE_JARS, PER_TEST_COVERAGE_SOURCE, TOOLS, pit_pom
from ..rendering import render
from ..sandbox.docker_sandbox import DockerSandbox
from ..sandbox.egress import MAVEN_SETTINGS, EgressPolicy
from ..sandbox.scratch import temporary_dir
from .envspec import EnvSpec

DEFAULT_FROM = "debian:bookworm-slim"
CA_ENV = ("COEVO_CA_BUNDLE", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PIP_CERT")
IMAGE_DEPS_REPO = "/opt/coevo/m2"
"""Where a deps image keeps the dependencies it resolved (Maven's ``maven.repo.local.tail``)."""
IMAGE_DEPS_BUILD = "/opt/coevo/deps-build"
"""Where a deps image's build sees the revision's build files (mounted, not kept in the image)."""
_DEPS_SETTINGS = ".coevo-maven-settings.xml"
_DEPS_TIMEOUT = 3600.0
IMAGE_PIT = "/opt/coevo/pit/lib"
"""PIT's command line and its dependencies, one jar each, in Java base images."""
IMAGE_PER_TEST_COVERAGE = "/opt/coevo/per-test-coverage"
"""The per-test coverage listener, compiled by the image's JDK when it is built."""
# What Debian bookworm packages: one Python serves every older request.
_DEBIAN_PYTHON = "3.11"
JDK_SUITES = {8: "sid", 11: "bullseye", 17: "bookworm", 21: "trixie", 25: "trixie"}
"""The Debian suite whose ``openjdk-N-jdk-headless`` a Java base image installs, for each JDK of
:data:`~runners.java.jdk.ERA_JDKS` (sid is the only suite that still packages JDK 8)."""
IMAGE_JDKS = tuple(sorted(JDK_SUITES))
IMAGE_JDKS_SOURCE = "in coevo's images"
"""Where :func:`~runners.java.jdk.plan_jdk` says the JDKs of :data:`IMAGE_JDKS` are."""
_TOOLS_JRE = {8: 17}
"""A second Java the image of an older JDK gets for coevo's tools: PIT runs on Java 11 or later."""
assert IMAGE_JDKS == ERA_JDKS
DEBIAN_PYTHONS = {"3.9": "bullseye", "3.11": "bookworm", "3.13": "trixie"}
"""The Python each Debian suite reachable here packages, so each era's Python has a base image
(``debian:<suite>-slim``, built locally by ``coevo env setup``). sid's change under us, and
buster left the mirror."""


class ImageBuildFailed(InfrastructureError):
    """``docker build`` of a planned image failed."""


@dataclass(frozen=True)
class ImagePlan:
    """What to build: the Dockerfile, the files beside it, and the tag that names the result."""

    tag: str
    key: str
    """What the image provides: ``java17``, ``python3.11``."""
    dockerfile: str
    context: tuple[tuple[str, Path], ...]
    """(name in the build context, file on the host)."""
    notes: tuple[str, ...] = ()
    files: tuple[tuple[str, bytes], ...] = ()
    """(name in the build context, content): files coevo generates or reads from a revision."""
    base: str | None = None
    """The tag of the image this one starts from, when that is another plan (deps on base)."""
    script: str = ""
    """For an image made by running a shell script in a container of ``base`` over ``files``
    and committing it (a deps image): the script; ``dockerfile`` is then empty."""


def image_jdk_home(feature: int) -> str:
    """Where Debian installs JDK ``feature`` in a Java base image."""
    return f"/usr/lib/jvm/java-{feature}-openjdk-amd64"


def image_tools_java(feature: int) -> int | None:
    """The Java a base image of JDK ``feature`` also has for PIT (at :func:`image_jdk_home`), if any."""
    return _TOOLS_JRE.get(feature)


def host_ca_bundle() -> Path | None:
    """The CA bundle the host trusts, if one is configured (``COEVO_CA_BUNDLE``, ``SSL_CERT_FILE``, …)."""
    for name in CA_ENV:
        value = os.environ.get(name)
        if value and Path(value).is_file():
            return Path(value)
    return None


def base_image_plan(
    spec: EnvSpec,
    from_images: Mapping[str, str] | None = None,
    ca_bundle: Path | None = None,
    tool_jars: Mapping[str, Path] | None = None,
    maven_archive: Path | None = None,
    jdk: int | None = None,
) -> ImagePlan:
    """The base image for a spec: OS, JDK and Maven or Python, the host's CAs and coevo's tools.

    ``from_images`` maps base keys (``java17``, ``python3.11``) to the image to start from
    (Debian-based, since the template installs with apt); the default is ``debian:bookworm-slim``,
    and for Java the suite of :data:`JDK_SUITES` that packages the JDK. Java images get JDK
    ``jdk`` (default: the one :func:`~runners.java.jdk.plan_jdk` picks for the spec among
    :data:`IMAGE_JDKS`), ``maven_archive`` (Maven's binary tar.gz; Debian's Maven when None), the
    ``tool_jars`` and PIT's command line with its dependencies.
    """
    from_image = (from_images or {}).get(spec.base, DEFAULT_FROM)
    context: list[tuple[str, Path]] = []
    files: list[tuple[str, bytes]] = []
    if ca_bundle is not None:
        context.append(("ca-certificates.crt", ca_bundle))
    notes: list[str] = []
    if spec.language == "java":
        if jdk is None:
            jdk = plan_jdk(spec, IMAGE_JDKS, IMAGE_JDKS_SOURCE).feature
        if jdk not in JDK_SUITES:
            listed = ", ".join(map(str, IMAGE_JDKS))
            raise NoSuitableJdk(f"coevo's images provide JDK {listed}, not JDK {jdk}")
        from_image = (from_images or {}).get(f"java{jdk}") or f"debian:{JDK_SUITES[jdk]}-slim"
        if spec.language_version != str(jdk):
            notes.append(f"java {spec.language_version} is built with JDK {jdk}")
        jars = dict(tool_jars or {})
        context += [(f"tools/{name}", path) for name, path in sorted(jars.items())]
        if maven_archive is not None:
            context.append(("tools/maven.tar.gz", maven_archive))
        files.append(("pit/pom.xml", pit_pom().encode()))
        per_test_jars = [TOOLS[name].file_name for name in PER_TEST_COVERAGE_JARS]
        if not set(per_test_jars) <= set(jars):
            per_test_jars = []  # an image without coevo's tools gets no listener
        else:
            files.append(("tools/PerTestCoverage.java", PER_TEST_COVERAGE_SOURCE.read_bytes()))
        values: dict[str, Any] = {
            "jdk": jdk,
            "tools_java": image_tools_java(jdk),
            "tool_jars": sorted(jars),
            "maven_archive": maven_archive is not None,
            "pit_dir": IMAGE_PIT,
            "per_test_dir": IMAGE_PER_TEST_COVERAGE,
            "per_test_jars": per_test_jars,
        }
        template, key = "java.Dockerfile.j2", f"java{jdk}"
    elif spec.language == "python":
        python = spec.language_version
        if spec.base in (from_images or {}):
            pass  # the configured image provides this Python
        elif python in DEBIAN_PYTHONS:
            from_image = f"debian:{DEBIAN_PYTHONS[python]}-slim"
        else:
            python = _DEBIAN_PYTHON
            notes.append(f"python {spec.language_version} runs on Python {python} (Debian bookworm's)")
        values = {"python": python}
        template, key = "python.Dockerfile.j2", f"python{python}"
    else:
        raise ImageBuildFailed(f"no image template for language {spec.language!r}")
    dockerfile = render(template, from_image=from_image, ca_bundle=ca_bundle is not None, **values)
    tag = f"coevo-base:{key}-{_content_hash(dockerfile, context, files)}"
    return ImagePlan(tag, key, dockerfile, tuple(context), tuple(notes), tuple(files))


def docker_pythons(from_images: Mapping[str, str] | None = None) -> set[str]:
    """The Pythons base images provide: each Debian suite's, and those of configured ``python3.X`` images."""
    configured = {key.removeprefix("python") for key in (from_images or {}) if key.startswith("python3.")}
    return set(DEBIAN_PYTHONS) | configured


def deps_image_plan(
    base: ImagePlan, build_files: Mapping[str, bytes], build_args: Sequence[str] = ()
) -> ImagePlan:
    """The deps image over ``base``: a revision's build files with their dependencies resolved.

    Maven resolves everything ``test-compile`` and the test classpath need into
    :data:`IMAGE_DEPS_REPO` inside the image, which builds then read as a read-only tail
    repository: a source change reuses the image, a pom change rebuilds only this layer.
    Resolution never fails the image (``--fail-never``): whatever it missed (a sibling module's
    artifact, a plugin's own download) a build fetches into the revision's own repository.
    """
    if not base.key.startswith("java"):
        raise ImageBuildFailed(f"no deps image for {base.key}: Python dependencies live in cached venvs")
    files = tuple(sorted(build_files.items()))
    script = render(
        "java-deps.sh.j2",
        base_tag=base.tag,
        build_dir=IMAGE_DEPS_BUILD,
        settings=f"{IMAGE_DEPS_BUILD}/{_DEPS_SETTINGS}",
        deps_repo=IMAGE_DEPS_REPO,
        maven_args=" ".join(shlex.quote(arg) for arg in build_args),
        skip_properties=" ".join(SKIP_PROPERTIES),
        dependency_plugin=DEPENDENCY_PLUGIN,
    )
    tag = f"coevo-deps:{base.key}-{_content_hash(script, (), files)}"
    return ImagePlan(tag, base.key, "", (), (), files, base=base.tag, script=script)


def _content_hash(
    dockerfile: str, context: Sequence[tuple[str, Path]], files: Sequence[tuple[str, bytes]]
) -> str:
    digest = hashlib.sha256(dockerfile.encode())
    for name, path in context:
        digest.update(name.encode() + b"\0" + _file_digest(path))
    for name, content in files:
        digest.update(name.encode() + b"\0" + hashlib.sha256(content).digest())
    return digest.hexdigest()[:12]


def build_image(client: Any, plan: ImagePlan, egress: EgressPolicy | None = None) -> bool:
    """Builds the planned image unless its tag exists; returns True on a cache hit.

    ``egress``: what the script of a committed image (:attr:`ImagePlan.script`) may reach.
    """
    from docker.errors import BuildError, ImageNotFound

    try:
        client.images.get(plan.tag)
        return True
    except ImageNotFound:
        pass
    if plan.script:
        _run_and_commit(client, plan, egress)
        return False
    _require_base(client, plan.dockerfile)
    with temporary_dir("coevo-image-") as tmp:
        root = Path(tmp)
        (root / "Dockerfile").write_text(plan.dockerfile)
        for name, path in plan.context:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, root / name)
        for name, content in plan.files:
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(content)
        try:
            client.images.build(path=str(root), tag=plan.tag, rm=True, forcerm=True, pull=False)
        except BuildError as exc:
            lines = [str(entry.get("stream") or entry.get("error") or "").strip() for entry in exc.build_log]
            last = next((line for line in reversed(lines) if line), str(exc))
            raise ImageBuildFailed(f"building {plan.tag} failed: {last}") from None
    return False


def _require_base(client: Any, dockerfile: str) -> None:
    """A Debian image coevo builds locally (``coevo env setup``) must be there: no registry is
    asked for it, which where none is reachable would fail slowly and say nothing useful."""
    from docker.errors import ImageNotFound

    match = re.search(r"^FROM (debian:[\w.-]+-slim)\s*$", dockerfile, re.MULTILINE)
    if match is None:
        return
    try:
        client.images.get(match.group(1))
    except ImageNotFound:
        raise ImageBuildFailed(
            f"{match.group(1)} is not on this Docker host: run `coevo env setup` as root, which builds "
            "it with debootstrap"
        ) from None


def _run_and_commit(client: Any, plan: ImagePlan, egress: EgressPolicy | None) -> None:
    """Runs the plan's script in a build container of its base over its files, then commits it."""
    assert plan.base is not None
    with temporary_dir("coevo-image-") as tmp:
        folder = Path(tmp)
        for name, content in plan.files:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(content)
        shutil.copyfile(MAVEN_SETTINGS, folder / _DEPS_SETTINGS)
        sandbox = DockerSandbox(
            client, plan.base, folder, egress=egress, workdir=IMAGE_DEPS_BUILD, scratch=False
        )
        try:
            result = sandbox.exec(["sh", "-c", plan.script], _DEPS_TIMEOUT)
            if not result.ok:
                last = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
                raise ImageBuildFailed(f"building {plan.tag} failed: {last[0]}")
            sandbox.commit(plan.tag)
        finally:
            sandbox.close()


def _file_digest(path: Path) -> bytes:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.digest()
