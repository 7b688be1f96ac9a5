"""Installed JDKs, which one builds a revision, and which failures another JDK explains.

A JDK is found by its ``release`` file (``JAVA_VERSION="17.0.15"``) in ``/usr/lib/jvm/*``,
``$JAVA_HOME`` and the homes listed in ``$COEVO_JDKS`` (colon-separated).

A revision is built with the JDK of its era (:func:`plan_jdk`): the oldest of those at hand
that compiles the release its poms declare, its level raised when even that JDK no longer
compiles it. When the build then fails in a way another JDK explains (:func:`jdk_failure`:
a removed API, a class file too new, a level too old), it is tried once more with the
nearest JDK that avoids it (:func:`retry_jdk`). Each choice says why (:meth:`JdkPlan.choices`).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks import MissingToolchain

from ..buildtools import BuildChoice
from ..environments.envspec import EnvSpec

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


# --- the JDK of a revision's era ------------------------------------------------------------------

ERA_JDKS = (8, 11, 17, 21, 25)
"""The long-term JDKs, one per era of Java: what coevo's images provide."""
RELEASE_PROPERTY = "maven.compiler.release"
_RELEASE_FLAG_JDK = 9
"""javac's ``--release`` (what ``maven.compiler.release`` asks for) came with JDK 9."""
_TOOLS_JDK = 11
"""PIT, coevo's mutation tool, runs on Java 11 or later."""


@dataclass(frozen=True)
class JdkPlan:
    """Which JDK builds a revision and why, the compiler levels raised for it, and the retry
    that led to it: a pure value, recorded with the build and enough to build it again."""

    feature: int
    why: str
    raised: tuple[tuple[str, str], ...] = ()
    """Maven properties set on the command line (``maven.compiler.source``, ``7``): the level
    the poms declare is below the oldest this JDK compiles."""
    raised_why: str = ""
    retry_of: int | None = None
    """The JDK whose build failed before this one, when this plan is the retry."""
    retry_why: str = ""
    retry_by_build_files: bool = False
    """The retry's failure is decided by the build files alone, before any source compiles (a
    plugin's or the enforcer's required Java version): the same build files fail so whatever the
    sources, and a revision that has them can start with this plan (:mod:`runners.environments.revisions`)."""

    def maven_args(self) -> list[str]:
        """``-Dname=value`` for each raised level."""
        return [f"-D{name}={value}" for name, value in self.raised]

    def choices(self) -> tuple[BuildChoice, ...]:
        """The plan as lines of a build record."""
        found = [BuildChoice("jdk", str(self.feature), self.why)]
        if self.raised:
            levels = " ".join(f"{name}={value}" for name, value in self.raised)
            found.append(BuildChoice("level", levels, self.raised_why))
        if self.retry_of is not None:
            found.append(BuildChoice("retry", f"JDK {self.retry_of} -> JDK {self.feature}", self.retry_why))
        return tuple(found)

    def as_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> JdkPlan:
        """The plan :meth:`as_json` wrote (so a recorded build can be made again with it)."""
        return cls(
            feature=int(data["feature"]),
            why=str(data.get("why", "")),
            raised=tuple((str(name), str(value)) for name, value in data.get("raised", ())),
            raised_why=str(data.get("raised_why", "")),
            retry_of=None if data.get("retry_of") is None else int(data["retry_of"]),
            retry_why=str(data.get("retry_why", "")),
            retry_by_build_files=bool(data.get("retry_by_build_files", False)),
        )


def recorded_plan(choices: Iterable[BuildChoice]) -> JdkPlan | None:
    """The plan a build record says a revision was built with (:meth:`JdkPlan.choices` read
    back), so scoring or re-validating it later uses that JDK and those levels; None when the
    record names no JDK (a Python revision, one that found none)."""
    named = {choice.name: choice for choice in choices}
    jdk, level, retry = named.get("jdk"), named.get("level"), named.get("retry")
    if jdk is None or not jdk.value.isdigit():
        return None
    raised = tuple(tuple(item.split("=", 1)) for item in level.value.split()) if level else ()
    retried = re.fullmatch(r"JDK (\d+) -> JDK \d+", retry.value) if retry else None
    return JdkPlan(
        feature=int(jdk.value),
        why=jdk.why,
        raised=tuple((name, value) for name, value in raised),
        raised_why=level.why if level else "",
        retry_of=int(retried.group(1)) if retried else None,
        retry_why=retry.why if retry and retried else "",
    )


def oldest_level(feature: int) -> int:
    """The oldest source/target level JDK ``feature``'s javac still compiles (JEP 182)."""
    return Jdk(Path("/"), feature).oldest_release


def plan_jdk(spec: EnvSpec, available: Iterable[int], source: str = "installed") -> JdkPlan:
    """The JDK of the revision's era among ``available`` (features): the oldest that compiles
    the Java release its poms declare (JDK 9 or later when they ask for javac's ``--release``),
    with the declared level raised to the oldest that JDK compiles when it is below that.

    ``source`` says where the JDKs are (``installed``, ``in coevo's images``); raises
    :class:`NoSuitableJdk` when none is new enough.
    """
    release = _release_of(spec.language_version)
    lowest = _lowest_jdk(spec, release)
    features = sorted(set(available))
    fitting = [feature for feature in features if feature >= lowest]
    if not fitting:
        listed = ", ".join(map(str, features)) or "none"
        hint = f"; install one or list its home in ${JDKS_ENV}" if source == "installed" else ""
        raise NoSuitableJdk(f"no {_jdks(source)} compiles Java {release} (JDK {listed}){hint}")
    return _plan(spec, release, fitting[0], source)


def retry_jdk(
    plan: JdkPlan, spec: EnvSpec, output: str, available: Iterable[int], source: str = "installed"
) -> JdkPlan | None:
    """The JDK to try once more with when the build with ``plan`` failed in a way another JDK
    explains (:func:`jdk_failure` of its ``output``); None when none does, or this was the retry.

    The new JDK is the nearest to the failed one that avoids the failure and still compiles
    the declared release. Raises :class:`NoSuitableJdk` when such a JDK exists among
    :data:`ERA_JDKS` but not among the installed ones: what coevo lacks, not the revision's fault.
    """
    if plan.retry_of is not None:
        return None
    failure = jdk_failure(output, plan.feature)
    if failure is None:
        return None
    release = _release_of(spec.language_version)
    declared = bool(spec.java_level)
    # Poms that declare no level build with the compiler plugin's default one, which every JDK
    # of coevo's eras compiles: the default release is no bound.
    lowest = _lowest_jdk(spec, release) if declared else ERA_JDKS[0]

    def fits(feature: int) -> bool:
        return (
            feature != plan.feature
            and feature >= max(lowest, failure.oldest or 0)
            and (failure.newest is None or feature <= failure.newest)
        )

    candidates = [feature for feature in sorted(set(available)) if fits(feature)]
    if not candidates:
        possible = [feature for feature in ERA_JDKS if fits(feature)]
        if possible and source == "installed":
            raise NoSuitableJdk(
                f"JDK {plan.feature} cannot build it ({failure.why}) and no installed JDK can: it needs "
                f"JDK {_span(failure, lowest)}; install one or list its home in ${JDKS_ENV}"
            )
        return None
    newer = failure.oldest is not None and failure.oldest > plan.feature
    chosen = candidates[0] if newer else candidates[-1]
    retried = _plan(spec, release, chosen, source) if declared else JdkPlan(chosen, "")
    direction = "newer" if newer else "older"
    why = f"the nearest {_jdks(source)} {direction} than JDK {plan.feature} that avoids its failure"
    return dataclasses.replace(
        retried,
        why=why + (f", that compiles Java {release}" if declared else ""),
        retry_of=plan.feature,
        retry_why=f"the build with JDK {plan.feature} failed: {failure.why}",
        retry_by_build_files=failure.by_build_files,
    )


def tools_jdk(jdk: Jdk, jdks: Sequence[Jdk]) -> Jdk:
    """The JDK that runs PIT for a build made with ``jdk``: itself, unless it is older than Java 11,
    which PIT needs; then the oldest installed one that is not."""
    if jdk.feature >= _TOOLS_JDK:
        return jdk
    newer = [other for other in jdks if other.feature >= _TOOLS_JDK]
    return min(newer, key=lambda other: other.feature) if newer else jdk


def _plan(spec: EnvSpec, release: int, feature: int, source: str) -> JdkPlan:
    lowest = _lowest_jdk(spec, release)
    era = next((jdk for jdk in ERA_JDKS if jdk >= lowest), None)
    oldest = oldest_level(feature)
    if not spec.java_level:
        why = f"the poms declare no Java level: the oldest {_jdks(source)} that compiles Java {release}"
    elif release < oldest:
        why = f"the oldest {_jdks(source)}; none compiles Java {release} any more"
    else:
        why = f"the oldest {_jdks(source)} that compiles Java {release}"
    if lowest > release:
        why += " with --release (maven.compiler.release), which javac has since JDK 9"
    if era is not None and era < feature:
        why += f"; JDK {era} is not {source}"
    if release >= oldest or not spec.java_level:
        return JdkPlan(feature, why)
    raised = tuple((name, str(oldest)) for name in spec.java_level)
    raised_why = f"the poms declare Java {release}, older than the oldest level JDK {feature} compiles"
    return JdkPlan(feature, why, raised, raised_why)


def _lowest_jdk(spec: EnvSpec, release: int) -> int:
    """The oldest JDK that can build ``release`` as the poms ask for it."""
    return max(release, _RELEASE_FLAG_JDK) if RELEASE_PROPERTY in spec.java_level else release


def _jdks(source: str) -> str:
    return "installed JDK" if source == "installed" else f"JDK {source}"


def _release_of(text: str) -> int:
    match = _RELEASE.fullmatch(text.strip())
    if match is None:
        raise NoSuitableJdk(f"{text!r} is not a Java release (expected e.g. 8, 1.8, 17)")
    return int(match.group(1))


def _span(failure: JdkFailure, lowest: int) -> str:
    low = max(lowest, failure.oldest or 0)
    if failure.newest is None:
        return f"{low} or later"
    return f"{failure.newest}" if low >= failure.newest else f"{low} to {failure.newest}"


# --- failures another JDK explains ---------------------------------------------------------------


@dataclass(frozen=True)
class JdkFailure:
    """Why a build failed on its JDK, and which JDKs would not fail so."""

    why: str
    oldest: int | None = None
    """JDKs before this one cannot compile or run what the build needs."""
    newest: int | None = None
    """JDKs after this one lack what the build needs."""
    by_build_files: bool = False
    """Decided by the build files alone, before any source compiles (a required Java version)."""


_REMOVED_APIS: tuple[tuple[str, int, str], ...] = (
    ("javax.xml.bind", 10, "JAXB"),
    ("javax.activation", 10, "JavaBeans Activation"),
    ("javax.xml.ws", 10, "JAX-WS"),
    ("javax.jws", 10, "JAX-WS"),
    ("javax.xml.soap", 10, "SAAJ"),
    ("javax.annotation.Generated", 10, "Common Annotations"),
    ("javax.annotation.PostConstruct", 10, "Common Annotations"),
    ("javax.annotation.PreDestroy", 10, "Common Annotations"),
    ("javax.annotation.Resource", 10, "Common Annotations"),
    ("javax.rmi.CORBA", 10, "CORBA"),
    ("org.omg", 10, "CORBA"),
    ("sun.misc.BASE64Encoder", 8, "an internal API"),
    ("sun.misc.BASE64Decoder", 8, "an internal API"),
    ("sun.reflect.Reflection", 8, "an internal API"),
    ("com.sun.javadoc", 12, "the old doclet API"),
    ("com.sun.tools.doclets", 12, "the old doclet API"),
    ("java.util.jar.Pack200", 13, "Pack200"),
    ("jdk.nashorn", 14, "Nashorn"),
    ("java.rmi.activation", 16, "RMI activation"),
    ("java.lang.Compiler", 20, "java.lang.Compiler"),
)
"""(package or class, the last JDK that had it, what it is): APIs JDKs removed."""
_STRONG_ENCAPSULATION_LAST = 15
"""JDK 16 denied by default the reflective access to JDK internals that 9 to 15 warned about."""
_TOOLS_JAR_LAST = 8

_LEVEL_TOO_OLD = re.compile(
    r"(?:Source|Target) option (?:1\.)?(\d+) is no longer supported|source release (?:1\.)?(\d+) "
    r"(?:is )?no longer supported|release version (?:1\.)?(\d+) not supported|invalid (?:source|target) "
    r"release: (?:1\.)?(\d+)"
)
_NO_RELEASE_FLAG = re.compile(r"invalid flag: --release")
_CLASS_TOO_NEW = re.compile(
    r"class file has wrong version (\d+)\.0, should be \d+\.0"
    r"|compiled by a more recent version of the Java Runtime \(class file version (\d+)\.0\)"
    r"|UnsupportedClassVersionError: \S+ : Unsupported major\.minor version (\d+)\.0"
)
_JAVA_REQUIRED = re.compile(
    r"Required Java version (?:1\.)?(\d+)\S* is not met by current version"
    r"|Detected JDK [Vv]ersion:? \S+.*? is not in the allowed range \[(?:1\.)?(\d+)"
)
"""A plugin's prerequisite (Maven's ``requiredJavaVersion``) or the enforcer's ``requireJavaVersion``
rule: the lowest JDK the build accepts."""
_MISSING_PACKAGE = re.compile(r"package ([\w.]+) does not exist")
_MISSING_CLASS = re.compile(r"symbol:\s+class (\w+)\s*\n\s*location:\s+package ([\w.]+)")
_ENCAPSULATION = re.compile(
    r"InaccessibleObjectException|does not \"?opens [\w.]+\"? to unnamed module"
    r"|IllegalAccessError: class \S+ .*cannot access class \S+ \(in module [\w.]+\) because module "
    r"[\w.]+ does not export"
)
_OLD_PROCESSOR = re.compile(
    r"(?:NoSuchFieldError|NoSuchMethodError|NoClassDefFoundError)[^\n]*com[./]sun[./]tools[./]javac"
)
_TOOLS_JAR = re.compile(r"com\.sun:tools:jar|[/\\]lib[/\\]tools\.jar")
_ASM_TOO_OLD = re.compile(r"Unsupported class file major version (\d+)")
_LOG_PREFIX = re.compile(r"^\[(?:ERROR|WARNING|INFO)\] ?", re.MULTILINE)


def jdk_failure(output: str, jdk: int) -> JdkFailure | None:
    """Why a build on JDK ``jdk`` failed, when another JDK explains it; None otherwise.

    Checked in order, the first that matches deciding: a level this javac does not know (a newer
    JDK) or no longer compiles (an older one); a class file newer than this JDK reads (a newer
    JDK); a plugin or enforcer rule that requires a newer JDK; an API this JDK removed, by the
    compiler's "package … does not exist" or "cannot find symbol … location: package" (an older
    JDK); reflection into JDK internals that JDK 16
    denies (``InaccessibleObjectException``, Lombok's ``IllegalAccessError``: 15 or older); an
    annotation processor that reaches into an older javac (Lombok before 1.18.30 on JDK 21: an
    older JDK); ``tools.jar``, gone after JDK 8; a bytecode library too old for this JDK's class
    files.
    """
    text = _LOG_PREFIX.sub("", output)
    if match := _LEVEL_TOO_OLD.search(text):
        level = int(next(group for group in match.groups() if group))
        if level > jdk:
            return JdkFailure(f"JDK {jdk} does not compile Java {level}: {match.group(0)}", oldest=level)
        older = [feature for feature in range(8, jdk) if oldest_level(feature) <= level]
        if not older:
            return None
        return JdkFailure(f"JDK {jdk} no longer compiles Java {level}: {match.group(0)}", newest=max(older))
    if _NO_RELEASE_FLAG.search(text):
        return JdkFailure(f"javac {jdk} has no --release flag", oldest=_RELEASE_FLAG_JDK)
    if match := _CLASS_TOO_NEW.search(text):
        version = int(next(group for group in match.groups() if group))
        if version - 44 > jdk:
            return JdkFailure(
                f"a class file is for Java {version - 44}, newer than JDK {jdk}: {match.group(0)}",
                oldest=version - 44,
            )
    if match := _JAVA_REQUIRED.search(text):
        version = int(next(group for group in match.groups() if group))
        if version > jdk:
            why = f"the build requires JDK {version}: {match.group(0)[:160]}"
            return JdkFailure(why, oldest=version, by_build_files=True)
    for name in [*_MISSING_PACKAGE.findall(text), *(f"{p}.{c}" for c, p in _MISSING_CLASS.findall(text))]:
        for api, last, what in _REMOVED_APIS:
            if (name == api or name.startswith(api + ".")) and jdk > last:
                return JdkFailure(f"{name} ({what}) was removed from the JDK after {last}", newest=last)
    if jdk > _STRONG_ENCAPSULATION_LAST and (match := _ENCAPSULATION.search(text)):
        return JdkFailure(
            f"JDK {jdk} denies reflection into its internals ({match.group(0)[:120]})",
            newest=_STRONG_ENCAPSULATION_LAST,
        )
    if match := _OLD_PROCESSOR.search(text):
        return JdkFailure(
            f"an annotation processor was made for an older javac than JDK {jdk}'s ({match.group(0)[:120]})",
            newest=jdk - 1,
        )
    if jdk > _TOOLS_JAR_LAST and (match := _TOOLS_JAR.search(text)):
        return JdkFailure(f"the build needs tools.jar, which JDK 9 removed ({match.group(0)})", newest=8)
    if match := _ASM_TOO_OLD.search(text):
        version = int(match.group(1))
        if version - 44 <= jdk:
            return JdkFailure(
                f"a tool of the build cannot read Java {version - 44} class files", newest=version - 45
            )
    return None
