"""Installed JDKs, and which one builds a given Java release.

A JDK is found by its ``release`` file (``JAVA_VERSION="17.0.15"``) in ``/usr/lib/jvm/*``,
``$JAVA_HOME`` and the homes listed in ``$COEVO_JDKS`` (colon-separated).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tasks import MissingToolchain

JDKS_ENV = "COEVO_JDKS"
"""Extra JDK homes, colon-separated, searched before ``/usr/lib/jvm``."""
JVM_DIR = Path("/usr/lib/jvm")

_VERSION = re.compile(r'^JAVA_VERSION="?(?:1\.)?(\d+)', re.MULTILINE)
_RELEASE = re.compile(r"(?:1\.)?(\d+)")


class NoSuitableJdk(MissingToolchain):
    """No installed JDK can compile the Java release a revision asks for."""


@dataclass(frozen=True)
class Jdk:
    """One installed JDK."""

    home: Path
    feature: int
    """The feature release: 8, 11, 17, 25."""

    @property
    def java(self) -> Path:
        return self.home / "bin" / "java"

    @property
    def javac(self) -> Path:
        return self.home / "bin" / "javac"

    @property
    def oldest_release(self) -> int:
        """The oldest ``--release`` its javac still compiles (JEP 182: each JDK drops old ones)."""
        if self.feature >= 20:
            return 8
        if self.feature >= 12:
            return 7
        if self.feature >= 9:
            return 6
        return 5

    def compiles(self, release: int) -> bool:
        """Whether this JDK's javac can target ``release``."""
        return self.oldest_release <= release <= self.feature


def find_jdks(homes: Iterable[Path] | None = None) -> list[Jdk]:
    """The JDKs (with ``javac``) among ``homes``, or on this host; oldest first, each home once."""
    if homes is None:
        homes = _host_homes()
    found: dict[Path, Jdk] = {}
    for home in homes:
        jdk = _read_jdk(home.resolve())
        if jdk is not None:
            found.setdefault(jdk.home, jdk)
    return sorted(found.values(), key=lambda jdk: (jdk.feature, str(jdk.home)))


def choose_jdk(release: str, jdks: Sequence[Jdk] | None = None) -> Jdk:
    """The oldest installed JDK that compiles Java ``release`` (``"17"``, ``"1.8"``).

    The oldest fitting JDK is closest to what the project was written for, so it
    meets fewer removed APIs and new warnings-as-errors.
    """
    match = _RELEASE.fullmatch(release.strip())
    if match is None:
        raise NoSuitableJdk(f"{release!r} is not a Java release (expected e.g. 8, 1.8, 17)")
    wanted = int(match.group(1))
    candidates = find_jdks() if jdks is None else list(jdks)
    for jdk in sorted(candidates, key=lambda jdk: jdk.feature):
        if jdk.compiles(wanted):
            return jdk
    installed = ", ".join(f"{jdk.feature} ({jdk.home})" for jdk in candidates) or "none"
    raise NoSuitableJdk(
        f"no installed JDK compiles Java {wanted} (installed: {installed}); "
        f"install one or list its home in ${JDKS_ENV}"
    )


def _host_homes() -> list[Path]:
    homes = [Path(p) for p in os.environ.get(JDKS_ENV, "").split(":") if p]
    if os.environ.get("JAVA_HOME"):
        homes.append(Path(os.environ["JAVA_HOME"]))
    if JVM_DIR.is_dir():
        homes.extend(sorted(JVM_DIR.iterdir()))
    return homes


def _read_jdk(home: Path) -> Jdk | None:
    try:
        text = (home / "release").read_text(errors="replace")
    except OSError:
        return None
    match = _VERSION.search(text)
    if match is None or not (home / "bin" / "javac").is_file():
        return None
    return Jdk(home=home, feature=int(match.group(1)))
