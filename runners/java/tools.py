"""Tool jars the runners put next to a project: the JUnit console launcher and JaCoCo; and Maven.

Each jar is fetched once from Maven Central into a cache folder (``$COEVO_TOOLS`` or
``~/.cache/coevo/tools``), checked against the ``.sha1`` published beside it, and
written under a temporary name then renamed, so parallel workers never see half a jar.
Mutation testing tools (PIT) join the same table when the scorer needs them.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

import requests

from tasks import CoevoError, InfrastructureError

from ..rendering import TEMPLATES, render

TOOLS_ENV = "COEVO_TOOLS"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
_TIMEOUT = 60.0


class UnknownTool(CoevoError):
    """A tool name no entry of :data:`TOOLS` has."""


class ToolDownloadFailed(InfrastructureError):
    """A tool jar could not be fetched or did not match its published checksum."""


@dataclass(frozen=True)
class ToolArtifact:
    """A jar on Maven Central, by its coordinates."""

    group: str
    artifact: str
    version: str
    classifier: str = ""
    extension: str = "jar"

    @property
    def file_name(self) -> str:
        suffix = f"-{self.classifier}" if self.classifier else ""
        return f"{self.artifact}-{self.version}{suffix}.{self.extension}"

    @property
    def repository_path(self) -> str:
        """Its path below a Maven repository's root."""
        return f"{self.group.replace('.', '/')}/{self.artifact}/{self.version}/{self.file_name}"


JUNIT_CONSOLE_VERSION = "1.14.4"
"""The newest JUnit 5 platform. Its jar brings the Jupiter and Vintage engines with JUnit 4.13.2
and replaces a project's own JUnit jars; 1.12 added ``--include-methodname``, which selects
parameterized methods by name."""
JUNIT6_CONSOLE_VERSION = "6.0.3"
"""For projects on JUnit 6 (Java 17 and later), whose APIs the 5.x engines do not have."""
MAVEN_VERSION = "3.9.16"
"""The Maven in coevo's images: 3.9 reads a second, read-only local repository
(``maven.repo.local.tail``), which is how a deps image's baked dependencies serve a build."""
PIT_VERSION = "1.30.2"
PIT_JUNIT5_VERSION = "1.2.3"
JACOCO_VERSION = "0.8.14"
"""The first JaCoCo that officially supports Java 25 class files (0.8.12 supports Java 22)."""

TOOLS: dict[str, ToolArtifact] = {
    "junit-console": ToolArtifact(
        "org.junit.platform", "junit-platform-console-standalone", JUNIT_CONSOLE_VERSION
    ),
    "junit-console-6": ToolArtifact(
        "org.junit.platform", "junit-platform-console-standalone", JUNIT6_CONSOLE_VERSION
    ),
    "jacoco-agent": ToolArtifact("org.jacoco", "org.jacoco.agent", JACOCO_VERSION, "runtime"),
    "jacoco-cli": ToolArtifact("org.jacoco", "org.jacoco.cli", JACOCO_VERSION, "nodeps"),
}
"""The tools by the names :func:`tool_jar` takes."""

ARCHIVES: dict[str, ToolArtifact] = {
    "maven": ToolArtifact("org.apache.maven", "apache-maven", MAVEN_VERSION, "bin", "tar.gz"),
}
"""Distributions images unpack (fetched and checked like the jars, never put on a classpath)."""


def tools_dir() -> Path:
    """Where tool jars are cached: ``$COEVO_TOOLS`` or ``~/.cache/coevo/tools``."""
    configured = os.environ.get(TOOLS_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "coevo" / "tools"


def tool_jar(
    name: str,
    cache: Path | None = None,
    repository: str = MAVEN_CENTRAL,
    session: requests.Session | None = None,
) -> Path:
    """The local path of tool ``name``, one of :data:`TOOLS` (``junit-console``, ``jacoco-cli``...).

    Downloads it on first use; HTTPS trusts ``$REQUESTS_CA_BUNDLE`` like any requests call.
    """
    try:
        artifact = TOOLS.get(name) or ARCHIVES[name]
    except KeyError:
        raise UnknownTool(f"no tool {name!r}; known: {', '.join(sorted(TOOLS))}") from None
    folder = cache or tools_dir()
    target = folder / artifact.file_name
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    url = f"{repository.rstrip('/')}/{artifact.repository_path}"
    http = session or requests.Session()
    try:
        expected = _fetch_sha1(http, url + ".sha1")
        _download(http, url, target, expected)
    finally:
        if session is None:
            http.close()
    return target


def maven_home(cache: Path | None = None, session: requests.Session | None = None) -> Path:
    """Coevo's Maven (:data:`MAVEN_VERSION`, the one its images install), unpacked once into the tool
    cache from the checked archive: the host backend builds with it rather than whatever ``mvn``
    is on the PATH, so every backend runs the same Maven."""
    archive = tool_jar("maven", cache, session=session)
    home = archive.parent / f"apache-maven-{MAVEN_VERSION}"
    if (home / "bin" / "mvn").is_file():
        return home
    unpacking = Path(tempfile.mkdtemp(dir=archive.parent, prefix=f".{home.name}."))
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(unpacking, filter="data")
        (inner,) = unpacking.iterdir()  # apache-maven-<version>/
        try:
            os.rename(inner, home)
        except OSError:
            if not (home / "bin" / "mvn").is_file():  # not another worker's finished copy
                raise
    except (OSError, tarfile.TarError, ValueError) as exc:
        raise ToolDownloadFailed(f"cannot unpack {archive}: {exc}") from None
    finally:
        shutil.rmtree(unpacking, ignore_errors=True)
    return home


def pit_pom() -> str:
    """The pom whose dependencies are PIT's command line and its JUnit 5 plugin at coevo's versions:
    resolved on the host (:func:`~runners.java.pit.pit_jars`) and in Java images alike."""
    return render("pit-pom.xml.j2", pit_version=PIT_VERSION, pit_junit5_version=PIT_JUNIT5_VERSION)


PER_TEST_COVERAGE_SOURCE = TEMPLATES / "PerTestCoverage.java"
"""The JUnit listener that takes JaCoCo's data after each test, and the reader that turns it into
lines per test: compiled by each JDK that runs tests, here by :func:`per_test_coverage` and in
Docker images when they are built."""
PER_TEST_COVERAGE_JARS = ("jacoco-agent", "jacoco-cli", "junit-console")
"""What it compiles against: JaCoCo's runtime API, the analysis in JaCoCo's command-line jar (under
the packages that jar moves it to) and the JUnit Platform's listener API."""
_LISTENER = "org.junit.platform.launcher.TestExecutionListener"


@functools.cache
def per_test_coverage(javac: Path, feature: int, cache: Path | None = None) -> Path:
    """A class folder holding :data:`PER_TEST_COVERAGE_SOURCE` compiled by ``javac`` (JDK
    ``feature``) and the service file that makes the JUnit Platform load the listener; made once
    per source, jars and JDK in the tool cache, under a temporary name then renamed, and looked
    up once per process (every coverage run asks for it)."""
    source = PER_TEST_COVERAGE_SOURCE.read_bytes()
    against = " ".join(TOOLS[name].file_name for name in PER_TEST_COVERAGE_JARS).encode()
    folder = cache or tools_dir()
    digest = hashlib.sha256(source + b"\0" + against).hexdigest()[:12]
    target = folder / f"per-test-coverage-{digest}-java{feature}"
    if (target / "META-INF").is_dir():
        return target
    jars = [str(tool_jar(name, cache)) for name in PER_TEST_COVERAGE_JARS]
    making = Path(tempfile.mkdtemp(dir=folder, prefix=f".{target.name}."))
    try:
        compiled = subprocess.run(
            [str(javac), "-nowarn", "-encoding", "UTF-8", "-cp", ":".join(jars), "-d", str(making),
             str(PER_TEST_COVERAGE_SOURCE)],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        if compiled.returncode != 0:
            why = (compiled.stderr or compiled.stdout).strip().splitlines()
            raise ToolDownloadFailed(f"cannot compile coevo's coverage listener: {why[0] if why else javac}")
        services = making / "META-INF" / "services"
        services.mkdir(parents=True)
        (services / _LISTENER).write_text("coevo.coverage.PerTestCoverage\n")
        making.chmod(0o755)
        try:
            os.rename(making, target)
        except OSError:
            if not (target / "META-INF").is_dir():  # not another worker's finished copy
                raise
    except (OSError, subprocess.SubprocessError) as exc:
        raise ToolDownloadFailed(f"cannot compile coevo's coverage listener: {exc}") from None
    finally:
        shutil.rmtree(making, ignore_errors=True)
    return target


def _fetch_sha1(http: requests.Session, url: str) -> str:
    try:
        response = http.get(url, timeout=_TIMEOUT)
        response.raise_for_status()
    except requests.RequestException as exc:
        raise ToolDownloadFailed(f"cannot fetch {url}: {_reason(exc)}") from None
    digest = response.text.strip().split()[0].lower() if response.text.strip() else ""
    if len(digest) != 40:
        raise ToolDownloadFailed(f"{url} holds no SHA-1 checksum")
    return digest


def _download(http: requests.Session, url: str, target: Path, expected_sha1: str) -> None:
    sha1 = hashlib.sha1()
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as out:
            try:
                with http.get(url, timeout=_TIMEOUT, stream=True) as response:
                    response.raise_for_status()
                    for chunk in response.iter_content(1 << 16):
                        sha1.update(chunk)
                        out.write(chunk)
            except requests.RequestException as exc:
                raise ToolDownloadFailed(f"cannot fetch {url}: {_reason(exc)}") from None
        if sha1.hexdigest() != expected_sha1:
            raise ToolDownloadFailed(
                f"{url} does not match its published SHA-1 ({sha1.hexdigest()} != {expected_sha1})"
            )
        os.chmod(temporary, 0o644)  # mkstemp makes it private; containers and other users read it
        os.replace(temporary, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def _reason(exc: requests.RequestException) -> str:
    if isinstance(exc, requests.HTTPError) and exc.response is not None:
        return f"HTTP {exc.response.status_code}"
    detail = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {detail[0][:200]}" if detail else type(exc).__name__
