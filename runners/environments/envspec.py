"""EnvSpec: what a revision needs to build and run, detected from its files alone.

Detection reads a revision's tree through :class:`TreeReader` (a git revision or a
folder) and returns a pure value; nothing is built or run here.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import subprocess
import tomllib
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from configparser import ConfigParser
from configparser import Error as ConfigError
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath

from tasks import CoevoError

from ..python.pythons import RELEASES, Declared, choose_python, day_of, declared_pythons, packages_before
from ..python.testdeps import declared_test_installs, dependency_groups, plugin_needs
from .worktree import TreeReader

DEFAULT_JAVA = "17"
DEFAULT_PYTHON = "3.11"
_TEST_EXTRAS = ("test", "tests", "testing", "dev")
_REQUIREMENT_FILES = (
    "requirements.txt",
    "requirements-test.txt",
    "requirements-dev.txt",
    "test-requirements.txt",
    "dev-requirements.txt",
    "requirements/test.txt",
    "requirements/dev.txt",
    "requirements/testing.txt",
)
_WORKFLOWS = ".github/workflows"
_MAVEN_SETTINGS = (".mvn/extensions.xml", ".mvn/maven.config", ".mvn/jvm.config")
_POM_NS = re.compile(r"^\{[^}]*\}")
_DEFAULT_NOTE = f"java {DEFAULT_JAVA}: the default (the poms name no release)"


class BrokenBuildFile(CoevoError):
    """A build file (pom.xml, pyproject.toml) that cannot be read."""


class NoBuildFound(CoevoError):
    """A revision with no build that coevo knows (no pom.xml, no Python project files)."""


@dataclass(frozen=True)
class EnvSpec:
    """How to build and test one revision: a pure value, hashed into image tags."""

    language: str
    """``java`` or ``python``."""
    language_version: str
    """Java feature release (``"17"``) or Python minor version (``"3.11"``)."""
    build_tool: str
    """``maven``, ``maven-wrapper`` or ``pip``."""
    modules: tuple[str, ...] = ()
    """Maven modules, as folders relative to the root (``""`` is the root project)."""
    install: tuple[tuple[str, ...], ...] = ()
    """pip install argument lists, in order (Python)."""
    build_modules: tuple[str, ...] = ()
    """When set, only these Maven modules and the modules they need are built (``-pl … -am``)."""
    java_level: tuple[str, ...] = ()
    """Java: the properties that carry the compiler level the poms declare, which coevo sets on the
    command line to raise it when the JDK no longer compiles it; ``maven.compiler.release``
    among them means the build asks for javac's ``--release`` (JDK 9 and later)."""
    packages_before: str | None = None
    """Python: pip installs only releases uploaded before this instant (``--uploaded-prior-to``,
    ISO 8601 UTC): the start of the revision's commit day. None: today's releases."""
    pins: tuple[str, ...] = ()
    """Python: the environment recorded when the revision was curated (``name==version`` of every
    distribution, and ``python==3.9.18`` for the interpreter): a venv is rebuilt from these pins, not
    from the loose requirements, so a task scored later runs against what it was curated with.
    Empty: resolve afresh (as of ``packages_before``)."""
    python_declared: tuple[str, ...] = ()
    """Python: the minor versions the revision declares it runs on, oldest first (none: it names none)."""
    python_declared_by: str = field(default="", compare=False)
    """Where the revision declares them (``setup.py python_requires '>=3.6'``)."""
    notes: tuple[str, ...] = field(default=(), compare=False)
    """How each value was found, for `coevo env show`."""

    @property
    def base(self) -> str:
        """The base image key: ``java17``, ``python3.11``."""
        return f"{self.language}{self.language_version}"

    def module_for(self, path: str) -> str:
        """The Maven module holding ``path``: the longest module folder it lies under."""
        best = ""
        for module in self.modules:
            if module and (path == module or path.startswith(module + "/")) and len(module) > len(best):
                best = module
        return best


def detect_env(tree: TreeReader, language: str, committed: datetime | None = None) -> EnvSpec:
    """The EnvSpec of a revision for ``language`` (``java`` or ``python``).

    ``committed`` is the revision's committer date: a Python revision gets its dependencies as
    of that day and the Python of its era (:mod:`runners.python.pythons`).
    """
    if language == "java":
        return _detect_java(tree)
    if language == "python":
        return _detect_python(tree, committed)
    raise NoBuildFound(f"no environment detection for language {language!r}")


def commit_date(repo: Path, revision: str) -> datetime | None:
    """The committer date of ``revision`` (with its zone), or None when git cannot tell."""
    result = subprocess.run(
        ["git", "-C", str(repo), "show", "-s", "--format=%cI", revision],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    try:
        return datetime.fromisoformat(result.stdout.strip()) if result.returncode == 0 else None
    except ValueError:
        return None


def resolve_python(spec: EnvSpec, present: Iterable[str], where: str) -> EnvSpec:
    """``spec`` with the Python to use among the ``present`` minor versions (pyenv's, the base
    images'), chosen by :func:`~runners.python.pythons.choose_python`; the reason is its last note. A task's
    recorded interpreter (``python==`` among its pins) comes first when it is present."""
    recorded = next((pin.removeprefix("python==") for pin in spec.pins if pin.startswith("python==")), "")
    minor = ".".join(recorded.split(".")[:2])
    if minor and minor in set(present):
        why = f"python {minor} ({where}): recorded with the task (python {recorded})"
        return dataclasses.replace(spec, language_version=minor, notes=(*spec.notes, why))
    declared = Declared(spec.python_declared, spec.python_declared_by)
    version, why = choose_python(declared, day_of(spec.packages_before), present, where)
    return dataclasses.replace(spec, language_version=version, notes=(*spec.notes, why))


def maven_build_files(tree: TreeReader, spec: EnvSpec) -> dict[str, bytes]:
    """The files that decide a Maven build's dependencies: every module's pom and ``.mvn/`` settings.

    A deps image is keyed by these, so a source change reuses it and a pom change rebuilds it.
    """
    found: dict[str, bytes] = {}
    for module in spec.modules or ("",):
        path = f"{module}/pom.xml" if module else "pom.xml"
        content = tree.read(path)
        if content is not None:
            found[path] = content
    for path in _MAVEN_SETTINGS:
        content = tree.read(path)
        if content is not None:
            found[path] = content
    return found


_WRAPPER_PROPERTIES = ".mvn/wrapper/maven-wrapper.properties"
_REPOSITORY_TAGS = ("repository", "pluginRepository")


def maven_download_urls(tree: TreeReader, spec: EnvSpec) -> list[str]:
    """Where a revision's Maven build says it downloads from, besides Maven Central: its poms'
    repositories (:func:`maven_repository_urls`) and its wrapper's ``distributionUrl``/``wrapperUrl``."""
    urls = maven_repository_urls(maven_build_files(tree, spec))
    wrapper = (tree.read(_WRAPPER_PROPERTIES) or b"").decode("utf-8", errors="replace")
    for line in wrapper.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() in ("distributionUrl", "wrapperUrl"):
            urls.append(value.strip().replace("\\:", ":"))
    return urls


def maven_repository_urls(build_files: Mapping[str, bytes]) -> list[str]:
    """The ``<repository>``/``<pluginRepository>`` URLs of the poms among ``build_files`` (profiles
    included; URLs built from properties are skipped). Repositories that only parent or dependency
    poms declare are not seen."""
    urls: list[str] = []
    for path, content in build_files.items():
        if not path.endswith("pom.xml"):
            continue
        try:
            root = ET.fromstring(content)
        except ET.ParseError:
            continue
        for node in root.iter():
            if _POM_NS.sub("", node.tag) in _REPOSITORY_TAGS:
                url = next((c.text for c in node if _POM_NS.sub("", c.tag) == "url"), None)
                if url and "${" not in url:
                    urls.append(url.strip())
    return urls


# --- Java ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Pom:
    path: str
    properties: dict[str, str]
    parent_path: str | None
    modules: tuple[str, ...]
    compiler: dict[str, str]
    """The maven-compiler-plugin's ``release``/``source``/``target`` configuration."""


def _detect_java(tree: TreeReader) -> EnvSpec:
    root = _read_pom(tree, "pom.xml")
    if root is None:
        raise NoBuildFound("no pom.xml at the repository root: coevo builds Java with Maven")
    build_tool = "maven-wrapper" if tree.exists("mvnw") else "maven"
    modules = tuple(_module_folders(tree, root))
    # One JDK serves every module, so it must reach the highest release any of them asks for.
    chains = [_pom_chain(tree, pom) for pom in _module_poms(tree, modules)]
    releases = [_java_release(chain) for chain in chains]
    version, note = max(releases, key=lambda found: (found[1] != _DEFAULT_NOTE, int(found[0])))
    level = tuple(dict.fromkeys(name for chain in chains for name in _java_level(chain)))
    return EnvSpec(
        language="java",
        language_version=version,
        build_tool=build_tool,
        modules=modules,
        java_level=level,
        notes=(note, f"build: {build_tool}", f"modules: {', '.join(m or '.' for m in modules)}"),
    )


def _read_pom(tree: TreeReader, path: str) -> _Pom | None:
    data = tree.read(path)
    if data is None:
        return None
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        raise BrokenBuildFile(f"{path} is not well-formed XML: {exc}") from None

    def child(node: ET.Element | None, name: str) -> ET.Element | None:
        if node is None:
            return None
        return next((c for c in node if _POM_NS.sub("", c.tag) == name), None)

    def children(node: ET.Element | None, name: str) -> list[ET.Element]:
        return [] if node is None else [c for c in node if _POM_NS.sub("", c.tag) == name]

    properties = {_POM_NS.sub("", p.tag): (p.text or "").strip() for p in (child(root, "properties") or [])}
    parent = child(root, "parent")
    parent_path: str | None = None
    if parent is not None:
        relative = child(parent, "relativePath")
        relative_text = "../pom.xml" if relative is None else (relative.text or "").strip()
        if relative_text:
            parent_path = _join_pom(path, relative_text)
    compiler: dict[str, str] = {}
    for plugins in (
        child(child(root, "build"), "plugins"),
        child(child(child(root, "build"), "pluginManagement"), "plugins"),
    ):
        for plugin in children(plugins, "plugin"):
            artifact = child(plugin, "artifactId")
            if artifact is not None and (artifact.text or "").strip() == "maven-compiler-plugin":
                for key in ("release", "source", "target"):
                    value = child(child(plugin, "configuration"), key)
                    if value is not None and value.text and key not in compiler:
                        compiler[key] = value.text.strip()
    modules = tuple((m.text or "").strip() for m in children(child(root, "modules"), "module"))
    return _Pom(path, properties, parent_path, modules, compiler)


def _join_pom(pom_path: str, relative: str) -> str:
    base = PurePosixPath(pom_path).parent
    parts: list[str] = [] if str(base) == "." else list(base.parts)
    for part in PurePosixPath(relative).parts:
        if part == "..":
            if parts:
                parts.pop()
        elif part != ".":
            parts.append(part)
    joined = "/".join(parts)
    return joined if joined.endswith(".xml") else f"{joined}/pom.xml".lstrip("/")


def _pom_chain(tree: TreeReader, pom: _Pom) -> list[_Pom]:
    """The pom and its parents inside the repository, child first."""
    chain = [pom]
    seen = {pom.path}
    while chain[-1].parent_path and chain[-1].parent_path not in seen:
        parent = _read_pom(tree, chain[-1].parent_path)
        if parent is None:
            break
        seen.add(parent.path)
        chain.append(parent)
    return chain


def _module_poms(tree: TreeReader, modules: tuple[str, ...]) -> Iterable[_Pom]:
    for module in modules:
        pom = _read_pom(tree, f"{module}/pom.xml" if module else "pom.xml")
        if pom is not None:
            yield pom


def _module_folders(tree: TreeReader, pom: _Pom, prefix: str = "", depth: int = 0) -> Iterable[str]:
    yield prefix
    if depth > 5:
        return
    for module in pom.modules:
        folder = str(PurePosixPath(prefix) / module) if prefix else module
        folder = folder.removesuffix("/pom.xml")
        child = _read_pom(tree, f"{folder}/pom.xml")
        if child is not None:
            yield from _module_folders(tree, child, folder, depth + 1)


def _java_release(chain: list[_Pom]) -> tuple[str, str]:
    """The Java release a pom chain asks for, and where it was found."""
    properties: dict[str, str] = {}
    for pom in reversed(chain):  # children override parents
        properties.update(pom.properties)
    candidates: list[tuple[str, str]] = []
    for pom in chain:
        for key in ("release", "source", "target"):
            if key in pom.compiler:
                candidates.append((pom.compiler[key], f"{pom.path} maven-compiler-plugin <{key}>"))
    for key in ("maven.compiler.release", "maven.compiler.source", "maven.compiler.target", "java.version"):
        if key in properties:
            candidates.append((properties[key], f"{chain[0].path} property {key}"))
    for raw, origin in candidates:
        value = _resolve_properties(raw, properties)
        match = re.fullmatch(r"(?:1\.)?(\d+)", value.strip())
        if match:
            return match.group(1), f"java {match.group(1)} from {origin}"
    return DEFAULT_JAVA, _DEFAULT_NOTE


_LEVEL_PROPERTIES = ("maven.compiler.release", "maven.compiler.source", "maven.compiler.target")


def _java_level(chain: list[_Pom]) -> tuple[str, ...]:
    """The properties that set a pom chain's compiler level: ``maven.compiler.*`` (``release`` only
    when the chain uses it) and the properties its compiler plugin's ``<release>``/``<source>``/
    ``<target>`` name, except ``java.*`` ones, which are also the JVM's own system properties."""
    properties = {key for pom in chain for key in pom.properties}
    configured = {key: value for pom in reversed(chain) for key, value in pom.compiler.items()}
    declared = any(key in properties for key in (*_LEVEL_PROPERTIES, "java.version")) or bool(configured)
    if not declared:
        return ()
    uses_release = "release" in configured or "maven.compiler.release" in properties
    names = [name for name in _LEVEL_PROPERTIES if uses_release or name != "maven.compiler.release"]
    for value in configured.values():
        names += [name for name in re.findall(r"\$\{([^}]+)\}", value) if not name.startswith("java.")]
    return tuple(dict.fromkeys(names))


def _resolve_properties(value: str, properties: dict[str, str], depth: int = 0) -> str:
    if depth > 10:
        return value
    resolved = re.sub(r"\$\{([^}]+)\}", lambda m: properties.get(m.group(1), m.group(0)), value)
    return resolved if resolved == value else _resolve_properties(resolved, properties, depth + 1)


# --- Python -------------------------------------------------------------------------------------


def _detect_python(tree: TreeReader, committed: datetime | None) -> EnvSpec:
    notes: list[str] = []
    pyproject = _read_toml(tree, "pyproject.toml")
    setup_cfg = _read_cfg(tree, "setup.cfg")
    setup_py = (tree.read("setup.py") or b"").decode("utf-8", errors="replace")
    has_project = pyproject is not None or setup_cfg is not None or bool(setup_py)
    requirements = [name for name in _REQUIREMENT_FILES if tree.exists(name)]
    if not has_project and not requirements:
        raise NoBuildFound("no pyproject.toml, setup.py, setup.cfg or requirements file")

    declared_installs = declared_test_installs(tree)
    install: list[tuple[str, ...]] = []
    if has_project:
        available = _extras(pyproject, setup_cfg, setup_py)
        named = [e for d in declared_installs for e in d.extras if e in available]
        extras = list(dict.fromkeys([*[e for e in _TEST_EXTRAS if e in available], *named]))
        target = f".[{','.join(extras)}]" if extras else "."
        install.append(("-e", target))
        notes.append(f"install: pip install -e {target}")
        groups = dependency_groups(pyproject)
        wanted = [
            g for g in (*_TEST_EXTRAS, *(g for d in declared_installs for g in d.groups)) if g in groups
        ]
        chosen = list(dict.fromkeys(wanted))
        requirements_of_groups = tuple(dict.fromkeys(r for g in chosen for r in groups[g]))
        if requirements_of_groups:
            install.append(requirements_of_groups)
            notes.append(
                f"install: pip install {shlex.join(requirements_of_groups)} "
                f"(pyproject.toml [dependency-groups] {', '.join(chosen)})"
            )
    for name in requirements:
        install.append(("-r", name))
        notes.append(f"install: pip install -r {name}")
    for found in declared_installs:
        args = _new_arguments(found.args, install)
        if args:
            install.append(args)
            notes.append(f"install: pip install {' '.join(args)} ({found.origin})")
    plugins = [(plugin, why) for plugin, why in plugin_needs(tree) if not _installs(install, plugin)]
    if plugins:
        install.append(tuple(plugin for plugin, _ in plugins))
        notes += [f"install: {plugin} (pytest needs it for {why})" for plugin, why in plugins]

    declared = _declared_pythons(tree, pyproject, setup_cfg, setup_py)
    cutoff = packages_before(committed) if committed is not None else None
    version, why = choose_python(declared, day_of(cutoff), RELEASES)
    notes.insert(0, why)
    if committed is not None and cutoff:
        notes.insert(1, f"dependencies: as of {cutoff[:10]} (committed {committed.isoformat()})")
    return EnvSpec(
        language="python",
        language_version=version,
        build_tool="pip",
        install=tuple(install),
        packages_before=cutoff,
        python_declared=declared.versions,
        python_declared_by=declared.origin,
        notes=tuple(notes),
    )


def _new_arguments(args: tuple[str, ...], install: list[tuple[str, ...]]) -> tuple[str, ...]:
    """``args`` without the requirement files and requirements already installed by ``install``."""
    kept: list[str] = []
    index = 0
    while index < len(args):
        word = args[index]
        if word.startswith("-") and index + 1 < len(args):
            pair = (word, args[index + 1])
            if not any(group[i : i + 2] == pair for group in install for i in range(len(group) - 1)):
                kept += pair
            index += 2
            continue
        if not any(word in group for group in install):
            kept.append(word)
        index += 1
    return tuple(kept)


def _installs(install: list[tuple[str, ...]], distribution: str) -> bool:
    """Whether a requirement of ``distribution`` is named outright in the install arguments."""
    wanted = re.sub(r"[-_.]+", "-", distribution).lower()
    for group in install:
        for word in group:
            name = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", word)
            if name and re.sub(r"[-_.]+", "-", name.group(0)).lower() == wanted:
                return True
    return False


def _read_toml(tree: TreeReader, path: str) -> dict | None:
    data = tree.read(path)
    if data is None:
        return None
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BrokenBuildFile(f"{path} is not valid TOML: {exc}") from None


def _read_cfg(tree: TreeReader, path: str) -> ConfigParser | None:
    data = tree.read(path)
    if data is None:
        return None
    parser = ConfigParser(interpolation=None)
    try:
        parser.read_string(data.decode("utf-8", errors="replace"))
    except ConfigError as exc:
        raise BrokenBuildFile(f"{path} is not a valid config file: {exc}") from None
    return parser


def _extras(pyproject: dict | None, setup_cfg: ConfigParser | None, setup_py: str) -> set[str]:
    """The extras the project defines."""
    available: set[str] = set()
    if pyproject:
        available |= set((pyproject.get("project", {}).get("optional-dependencies") or {}).keys())
    if setup_cfg is not None and setup_cfg.has_section("options.extras_require"):
        available |= set(setup_cfg.options("options.extras_require"))
    match = re.search(r"extras_require\s*=\s*\{([^}]*)\}", setup_py)
    if match:
        available |= set(re.findall(r"['\"]([\w.-]+)['\"]\s*:", match.group(1)))
    return available


def _declared_pythons(
    tree: TreeReader,
    pyproject: dict | None,
    setup_cfg: ConfigParser | None,
    setup_py: str,
) -> Declared:
    """The Pythons the project declares: its ``requires-python`` narrowed to the versions it lists."""
    requires: tuple[str, str] | None = None
    if pyproject and pyproject.get("project", {}).get("requires-python"):
        requires = (pyproject["project"]["requires-python"], "pyproject.toml requires-python")
    elif setup_cfg is not None and setup_cfg.has_option("options", "python_requires"):
        requires = (setup_cfg.get("options", "python_requires"), "setup.cfg python_requires")
    elif match := re.search(r"python_requires\s*=\s*['\"]([^'\"]+)['\"]", setup_py):
        requires = (match.group(1), "setup.py python_requires")
    return declared_pythons(requires, _listed_versions(tree, pyproject, setup_cfg, setup_py))


def _listed_versions(
    tree: TreeReader,
    pyproject: dict | None,
    setup_cfg: ConfigParser | None,
    setup_py: str,
) -> tuple[set[str], str] | None:
    classifiers: list[str] = list((pyproject or {}).get("project", {}).get("classifiers") or [])
    if setup_cfg is not None and setup_cfg.has_option("metadata", "classifiers"):
        classifiers += setup_cfg.get("metadata", "classifiers").splitlines()
    classifiers += re.findall(r"Programming Language :: Python :: 3\.\d+", setup_py)
    versions = {m for c in classifiers for m in re.findall(r"Python :: (3\.\d+)", c)}
    if versions:
        return versions, "the Trove classifiers"
    tox = _read_cfg(tree, "tox.ini")
    if tox is not None and tox.has_option("tox", "envlist"):
        found = {f"3.{m}" for m in re.findall(r"py3(\d+)", tox.get("tox", "envlist"))}
        if found:
            return found, "tox.ini envlist"
    version_file = (tree.read(".python-version") or b"").decode().strip()
    if match := re.match(r"(3\.\d+)", version_file):
        return {match.group(1)}, ".python-version"
    return _ci_versions(tree)


def _ci_versions(tree: TreeReader) -> tuple[set[str], str] | None:
    """Python versions the project's CI tests on: ``python-version`` values in GitHub workflows
    (matrix lists included), or the ``python`` list of ``.travis.yml``."""
    found: set[str] = set()
    for name in tree.list_dir(_WORKFLOWS):
        if name.endswith((".yml", ".yaml")):
            text = (tree.read(f"{_WORKFLOWS}/{name}") or b"").decode(errors="replace")
            for line in re.findall(r"python-versions?\s*:\s*(.+)", text):
                found |= set(re.findall(r"""["']?\b(3\.\d+)\b""", line))
    if found:
        return found, "the GitHub workflows' python-version"
    travis = (tree.read(".travis.yml") or b"").decode(errors="replace")
    block = re.search(r"^python:\s*\n((?:\s+-.*\n?)+)|^python:\s*\[(.*)\]", travis, re.MULTILINE)
    if block:
        found = set(re.findall(r"\b(3\.\d+)\b", block.group(1) or block.group(2)))
    return (found, ".travis.yml python") if found else None
