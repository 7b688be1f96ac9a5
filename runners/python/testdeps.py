"""Test dependencies a Python revision declares outside its extras and requirement files.

Projects say what their tests need in the tools that run them: tox's ``deps``, ``extras`` and
``dependency_groups`` of the test environment (``tox.ini``, ``setup.cfg``'s ``[tox:tox]``,
``pyproject.toml``'s ``[tool.tox]``, ``tox.toml``), ``session.install(...)`` calls of the nox
sessions that run pytest (read with :mod:`ast`, never run; only literal arguments), and the
``pip install`` lines of the CI workflow jobs that run pytest. ``pyproject.toml``'s
``[dependency-groups]`` (PEP 735) are read here too: the tools name them (``--group tests``).
Options of pytest's ``addopts`` (and ini keys) that only a plugin understands
(``--asyncio-mode`` → pytest-asyncio, ``-n`` → pytest-xdist) name a need too: without the
plugin pytest refuses to start.

Everything here is read from a revision's files (:class:`~runners.environments.envspec.TreeReader`) and
returned as pip arguments with where they were found; nothing is built or run.
"""

from __future__ import annotations

import ast
import re
import shlex
import tomllib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from configparser import ConfigParser
from configparser import Error as ConfigError
from dataclasses import dataclass
from typing import TYPE_CHECKING

from packaging.requirements import InvalidRequirement, Requirement

if TYPE_CHECKING:
    from ..environments.worktree import TreeReader

_WORKFLOWS = ".github/workflows"
_TEST_ENVS = ("test", "tests", "testing", "py", "pytest", "unit", "unittests")
"""tox environments and nox sessions that run the tests, by name, when none is seen running pytest."""
_NOT_TEST_DEPENDENCIES = frozenset(
    {"pip", "setuptools", "wheel", "tox", "nox", "build", "twine", "virtualenv", "uv"}
)
"""Packaging and runner tools a CI job installs: coevo installs its own pip, and runs no tox."""
_KEPT_WITH_VALUE = {
    "-r": "-r",
    "--requirement": "-r",
    "-c": "-c",
    "--constraint": "-c",
    "-i": "--index-url",
    "--index-url": "--index-url",
    "--extra-index-url": "--extra-index-url",
    "-f": "--find-links",
    "--find-links": "--find-links",
}
_DROPPED_WITH_VALUE = frozenset(
    {
        "--progress-bar",
        "--upgrade-strategy",
        "-t",
        "--target",
        "--prefix",
        "--root",
        "--python-version",
        "--platform",
        "--abi",
        "--implementation",
        "--cache-dir",
        "--log",
        "--timeout",
        "--retries",
        "--trusted-host",
        "--src",
        "--python",
        "--no-binary",
        "--only-binary",
    }
)

_PLUGIN_OPTIONS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), plugin)
    for pattern, plugin in (
        (r"--asyncio-mode\b", "pytest-asyncio"),
        (r"-n\w*|--numprocesses|--maxprocesses|--dist", "pytest-xdist"),
        (r"(--cov|--cov-[\w-]+|--no-cov|--no-cov-on-fail)\b", "pytest-cov"),
        (r"(--timeout|--timeout-method)\b", "pytest-timeout"),
        (r"(--reruns|--reruns-delay|--only-rerun)\b", "pytest-rerunfailures"),
        (r"--benchmark-[\w-]+", "pytest-benchmark"),
        (r"(--randomly-[\w-]+|--randomly)\b", "pytest-randomly"),
        (r"(--html|--self-contained-html)\b", "pytest-html"),
        (r"--mypy\b", "pytest-mypy"),
        (r"--flake8\b", "pytest-flake8"),
        (r"--black\b", "pytest-black"),
        (r"--isort\b", "pytest-isort"),
        (r"--instafail\b", "pytest-instafail"),
        (r"(--forked|--boxed)\b", "pytest-forked"),
        (r"(--ds|--dc|--reuse-db|--create-db|--nomigrations|--no-migrations)\b", "pytest-django"),
        (r"--mpl(-[\w-]+)?\b", "pytest-mpl"),
        (r"(--doctest-plus|--doctest-rst)\b", "pytest-doctestplus"),
        (r"--hypothesis-[\w-]+", "hypothesis"),
    )
)
"""Command-line options only a plugin adds to pytest, and the distribution that provides it."""
_PLUGIN_MODULES = {
    "xdist": "pytest-xdist",
    "xdist.plugin": "pytest-xdist",
    "pytest_cov": "pytest-cov",
    "asyncio": "pytest-asyncio",
    "pytest_asyncio": "pytest-asyncio",
    "randomly": "pytest-randomly",
    "pytest_randomly": "pytest-randomly",
    "timeout": "pytest-timeout",
    "pytest_timeout": "pytest-timeout",
    "rerunfailures": "pytest-rerunfailures",
    "pytest_rerunfailures": "pytest-rerunfailures",
    "pytest_mock": "pytest-mock",
    "pytest_django": "pytest-django",
    "anyio": "anyio",
}
"""Modules named by ``-p`` and the distribution that provides them."""
_PLUGIN_INI_KEYS = {
    "asyncio_mode": "pytest-asyncio",
    "asyncio_default_fixture_loop_scope": "pytest-asyncio",
    "timeout": "pytest-timeout",
    "django_settings_module": "pytest-django",
    "env": "pytest-env",
    "mock_use_standalone_module": "pytest-mock",
}
"""ini keys only a plugin reads (pytest warns about unknown keys; with ``--strict-config`` it fails)."""


@dataclass(frozen=True)
class DeclaredInstall:
    """pip arguments a project's test setup installs, and where it says so."""

    args: tuple[str, ...]
    origin: str
    """``tox.ini [testenv] deps``, ``noxfile.py session tests``, ``.github/workflows/ci.yml job test``…"""
    extras: tuple[str, ...] = ()
    """Extras of the project itself it installs (``.[test]``, tox's ``extras``)."""
    groups: tuple[str, ...] = ()
    """Dependency groups of ``pyproject.toml`` it installs (``--group tests``, tox's
    ``dependency_groups``)."""


def declared_test_installs(tree: TreeReader) -> list[DeclaredInstall]:
    """What tox, nox and CI install for the tests, in that order, each with its origin."""
    found = [*_tox(tree), *_nox(tree), *_ci(tree)]
    return [install for install in found if install.args or install.extras or install.groups]


def dependency_groups(pyproject: Mapping[str, object] | None) -> dict[str, tuple[str, ...]]:
    """``pyproject.toml``'s ``[dependency-groups]`` (PEP 735): each group's requirements, with the
    groups it includes (``{include-group = "…"}``) expanded; names normalized. Entries that are
    neither a valid requirement nor an include, and includes of unknown groups or cycles, are
    left out."""
    table = (pyproject or {}).get("dependency-groups")
    if not isinstance(table, dict):
        return {}
    raw = {_normalize(str(name)): entries for name, entries in table.items() if isinstance(entries, list)}

    def expand(name: str, seen: tuple[str, ...]) -> list[str]:
        found: list[str] = []
        for entry in raw.get(name, []):
            if isinstance(entry, str) and _is_requirement(entry):
                found.append(entry)
            elif isinstance(entry, dict) and isinstance(entry.get("include-group"), str):
                included = _normalize(entry["include-group"])
                if included not in seen:
                    found += expand(included, (*seen, included))
        return found

    return {name: tuple(dict.fromkeys(expand(name, (name,)))) for name in raw}


def plugin_needs(tree: TreeReader) -> list[tuple[str, str]]:
    """Plugins the pytest configuration needs: (distribution, the option or key that needs it)."""
    config = pytest_config(tree)
    if config is None:
        return []
    origin, addopts, keys = config
    needs: dict[str, str] = {}
    tokens = _split(addopts)
    for index, token in enumerate(tokens):
        if token == "-p" and index + 1 < len(tokens):
            module = tokens[index + 1]
        elif token.startswith("-p") and len(token) > 2 and not token.startswith("-p="):
            module = token[2:]
        else:
            module = ""
        if module:
            plugin = _PLUGIN_MODULES.get(module)
            if plugin:
                needs.setdefault(plugin, f"{origin} addopts -p {module}")
            continue
        option = token.split("=", 1)[0]
        for pattern, plugin in _PLUGIN_OPTIONS:
            if pattern.fullmatch(option):
                needs.setdefault(plugin, f"{origin} addopts {token}")
                break
    for key in keys:
        plugin = _PLUGIN_INI_KEYS.get(key.lower())
        if plugin:
            needs.setdefault(plugin, f"{origin} {key}")
    return list(needs.items())


def pytest_config(tree: TreeReader) -> tuple[str, str, list[str]] | None:
    """The pytest configuration pytest itself would read first: (file, addopts, ini keys).

    pytest's order: ``pytest.ini``, ``pyproject.toml`` with ``[tool.pytest.ini_options]``,
    ``tox.ini`` with ``[pytest]``, ``setup.cfg`` with ``[tool:pytest]``.
    """
    ini = _ini(tree, "pytest.ini")
    if ini is not None and ini.has_section("pytest"):
        return "pytest.ini", ini.get("pytest", "addopts", fallback=""), ini.options("pytest")
    pyproject = _toml(tree, "pyproject.toml")
    options = ((pyproject or {}).get("tool", {}).get("pytest", {}) or {}).get("ini_options")
    if isinstance(options, dict):
        addopts = options.get("addopts", "")
        if isinstance(addopts, list):
            addopts = " ".join(shlex.quote(str(item)) for item in addopts)
        return "pyproject.toml", str(addopts), list(options)
    for path, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        ini = _ini(tree, path)
        if ini is not None and ini.has_section(section):
            return path, ini.get(section, "addopts", fallback=""), ini.options(section)
    return None


# --- pip arguments --------------------------------------------------------------------------------


def pip_arguments(tokens: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The pip arguments worth keeping from an install command's words, the extras of the
    project itself they install (``.[test]``, ``-e .[dev]``) and the dependency groups they name
    (``--group tests``, pip's and uv's option).

    Requirements, requirement and constraint files, index and find-links options are kept;
    other options, unexpanded variables (``$X``, ``${{ matrix.x }}``, ``{env:X}``), the project
    itself and packaging tools (pip, setuptools, tox…) are dropped.
    """
    args: list[str] = []
    extras: list[str] = []
    groups: list[str] = []
    words = list(tokens)
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if "$" in word or "{" in word or "}" in word:
            continue
        option, equals, value = word.partition("=")
        if word in _KEPT_WITH_VALUE or (equals and option in _KEPT_WITH_VALUE and option.startswith("--")):
            if not equals:
                if index >= len(words):
                    break
                value = words[index]
                index += 1
            if "$" not in value and "{" not in value:
                args += [_KEPT_WITH_VALUE[option if equals else word], value]
            continue
        if option == "--group":
            if not equals:
                value = words[index] if index < len(words) else ""
                index += 1
            if value and "$" not in value:
                groups.append(_normalize(value.rsplit(":", 1)[-1]))  # [path:]group
            continue
        if re.fullmatch(r"-[rc]\S+", word):  # -rrequirements.txt
            args += [word[:2], word[2:]]
            continue
        if word in ("-e", "--editable") or word.startswith("--editable="):
            target = word.split("=", 1)[1] if "=" in word else (words[index] if index < len(words) else "")
            if "=" not in word:
                index += 1
            local = _local_extras(target)
            if local is not None:
                extras += local
            elif target and "$" not in target:
                args += ["-e", target]
            continue
        if word in _DROPPED_WITH_VALUE:
            index += 1
            continue
        if word.startswith("-"):
            continue
        local = _local_extras(word)
        if local is not None:
            extras += local
            continue
        if "://" in word:
            args.append(word)
            continue
        try:
            requirement = Requirement(word)
        except InvalidRequirement:
            continue
        if _normalize(requirement.name) not in _NOT_TEST_DEPENDENCIES:
            args.append(word)
    return tuple(args), tuple(dict.fromkeys(extras)), tuple(dict.fromkeys(groups))


def _is_requirement(text: str) -> bool:
    try:
        Requirement(text)
    except InvalidRequirement:
        return False
    return True


def _local_extras(target: str) -> list[str] | None:
    """The extras of a local project argument (``.``, ``.[test]``, ``./``), None for anything else."""
    match = re.fullmatch(r"\.?\.?/?(?:\{toxinidir\})?/?(?:\[([\w,\s.-]*)\])?", target.strip())
    if not target.strip() or match is None:
        return None
    return [extra.strip() for extra in (match.group(1) or "").split(",") if extra.strip()]


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=True)
    except ValueError:
        return text.split()


# --- tox ------------------------------------------------------------------------------------------


def _tox(tree: TreeReader) -> list[DeclaredInstall]:
    for path in ("tox.ini", "setup.cfg"):
        ini = _ini(tree, path)
        if ini is None or (path == "setup.cfg" and not ini.has_section("tox:tox")):
            continue
        return _tox_ini(ini, path)
    pyproject = _toml(tree, "pyproject.toml") or {}
    tox = pyproject.get("tool", {}).get("tox")
    if isinstance(tox, dict):
        legacy = tox.get("legacy_tox_ini")
        if isinstance(legacy, str):
            ini = _parse_ini(legacy)
            return _tox_ini(ini, "pyproject.toml [tool.tox] legacy_tox_ini") if ini is not None else []
        return _tox_toml(tox, "pyproject.toml [tool.tox]")
    native = _toml(tree, "tox.toml")
    return _tox_toml(native, "tox.toml") if native else []


def _tox_ini(ini: ConfigParser, origin: str) -> list[DeclaredInstall]:
    base = "testenv"
    section = next((f"testenv:{name}" for name in _TEST_ENVS if ini.has_section(f"testenv:{name}")), base)
    if not ini.has_section(section) and not ini.has_section(base):
        return []

    def value(key: str) -> tuple[str, str]:
        for name in (section, base):
            if ini.has_section(name) and ini.has_option(name, key):
                return ini.get(name, key), name
        return "", section

    values = {key: value(key) for key in ("deps", "extras", "dependency_groups")}
    words: list[str] = []
    for line in _substituted(ini, values["deps"][0]):
        words += _split(line) if line.startswith("-") else [line]
    args, local, local_groups = pip_arguments(words)

    def named(key: str) -> list[str]:
        return [
            word for line in _substituted(ini, values[key][0]) for word in re.split(r"[,\s]+", line) if word
        ]

    key = next((key for key, (text, _) in values.items() if text), "deps")
    return [
        DeclaredInstall(
            args,
            f"{origin} [{values[key][1]}] {key}",
            (*local, *named("extras")),
            (*local_groups, *map(_normalize, named("dependency_groups"))),
        )
    ]


def _substituted(ini: ConfigParser, text: str, depth: int = 0) -> Iterator[str]:
    """Lines of a tox multi-line value: ``{[section]key}`` replaced, ``{toxinidir}`` made ``.``;
    a factor-conditional line is kept (without its factors) when a factor names a test
    environment (``tests: hypothesis``), left out otherwise (``py38: mock``), as are lines with
    other substitutions."""
    for raw in text.splitlines():
        line = raw.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        reference = re.fullmatch(r"\{\[([^\]]+)\]([\w-]+)\}", line)
        if reference:
            section, key = reference.groups()
            if depth < 3 and ini.has_option(section, key):
                yield from _substituted(ini, ini.get(section, key), depth + 1)
            continue
        factors = re.match(r"^([\w{},!.-]+):\s+", line)
        if factors and "://" not in line:
            if not set(re.split(r"[,-]", factors.group(1))) & set(_TEST_ENVS):
                continue
            line = line[factors.end() :]
        line = line.replace("{toxinidir}", ".")
        if "{" not in line:
            yield line


def _tox_toml(tox: Mapping[str, object], origin: str) -> list[DeclaredInstall]:
    envs = tox.get("env") if isinstance(tox.get("env"), dict) else {}
    assert isinstance(envs, dict)
    chosen = next((name for name in _TEST_ENVS if isinstance(envs.get(name), dict)), None)
    tables = [(f"env.{chosen}", envs[chosen])] if chosen else []
    tables.append(("env_run_base", tox.get("env_run_base") or {}))

    def value(key: str) -> tuple[str, list]:
        """The first of the tables' ``key`` that is a list, and the table's name."""
        return next(
            ((name, t[key]) for name, t in tables if isinstance(t, dict) and isinstance(t.get(key), list)),
            ("", []),
        )

    values = {key: value(key) for key in ("deps", "extras", "dependency_groups")}
    words: list[str] = []
    for item in values["deps"][1]:
        if isinstance(item, str):
            words += _split(item) if item.startswith("-") else [item.replace("{tox_root}", ".")]
    args, local, local_groups = pip_arguments(words)
    named = [e for e in values["extras"][1] if isinstance(e, str)]
    named_groups = [_normalize(g) for g in values["dependency_groups"][1] if isinstance(g, str)]
    key = next((key for key, (name, _) in values.items() if name), "deps")
    where = f"{origin} {values[key][0] or 'env_run_base'} {key}"
    return [DeclaredInstall(args, where, (*local, *named), (*local_groups, *named_groups))]


# --- nox ------------------------------------------------------------------------------------------


def _nox(tree: TreeReader) -> list[DeclaredInstall]:
    source = tree.read("noxfile.py")
    if source is None:
        return []
    try:
        module = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    sessions = [node for node in ast.walk(module) if isinstance(node, ast.FunctionDef) and _is_session(node)]
    running = [s for s in sessions if _runs_pytest(s)] or [s for s in sessions if s.name in _TEST_ENVS]
    found: list[DeclaredInstall] = []
    for session in running:
        words = [word for call in _session_calls(session, "install") for word in _literal_args(call)]
        args, extras, groups = pip_arguments(words)
        found.append(DeclaredInstall(args, f"noxfile.py session {session.name}", extras, groups))
    return found


def _is_session(function: ast.FunctionDef) -> bool:
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (isinstance(target, ast.Attribute) and target.attr == "session") or (
            isinstance(target, ast.Name) and target.id == "session"
        ):
            return True
    return False


def _session_calls(function: ast.FunctionDef, method: str) -> Iterator[ast.Call]:
    """Calls ``<session>.<method>(...)`` on the session argument of a nox session function."""
    if not function.args.args:
        return
    session = function.args.args[0].arg
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == method
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == session
        ):
            yield node


def _literal_args(call: ast.Call) -> list[str]:
    """The call's positional arguments that are string literals (others cannot be known unrun)."""
    return [arg.value for arg in call.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]


def _runs_pytest(function: ast.FunctionDef) -> bool:
    words = [word for call in _session_calls(function, "run") for word in _literal_args(call)]
    return any(re.search(r"\bpy\.?test\b", word) for word in words)


# --- CI -------------------------------------------------------------------------------------------


def _ci(tree: TreeReader) -> list[DeclaredInstall]:
    found: list[DeclaredInstall] = []
    for name in tree.list_dir(_WORKFLOWS):
        if not name.endswith((".yml", ".yaml")):
            continue
        text = (tree.read(f"{_WORKFLOWS}/{name}") or b"").decode("utf-8", errors="replace")
        for job, lines in _jobs(text):
            body = "\n".join(lines)
            if not re.search(r"\bpy\.?test\b", body):
                continue
            words = [word for command in _pip_installs(lines) for word in command]
            args, extras, groups = pip_arguments(words)
            if args or extras or groups:
                found.append(DeclaredInstall(args, f"{_WORKFLOWS}/{name} job {job}", extras, groups))
    return found


def _jobs(text: str) -> Iterator[tuple[str, list[str]]]:
    """Each job of a GitHub workflow and its lines, found by indentation (no YAML parser needed
    for this: a job is a key one level under the top-level ``jobs:``)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if re.match(r"^jobs:\s*(#.*)?$", line)), None)
    if start is None:
        return
    indent: int | None = None
    job: str | None = None
    body: list[str] = []
    for line in lines[start + 1 :]:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        depth = len(line) - len(line.lstrip())
        if depth == 0:
            break
        if indent is None:
            indent = depth
        if depth == indent:
            if job is not None:
                yield job, body
            match = re.match(r"\s*['\"]?([\w.-]+)['\"]?\s*:", line)
            job, body = (match.group(1) if match else "?"), []
        elif depth > indent:
            body.append(line)
    if job is not None:
        yield job, body


def _pip_installs(lines: Sequence[str]) -> Iterator[list[str]]:
    """The words after ``pip install`` in a job's commands (continuation lines joined)."""
    logical: list[str] = []
    for line in lines:
        if logical and logical[-1].endswith("\\"):
            logical[-1] = logical[-1][:-1] + " " + line.strip()
        else:
            logical.append(line.strip())
    for line in logical:
        line = re.sub(r"\$\{\{.*?\}\}", " $expression ", line)  # ${{ matrix.x }}: unknown unrun
        for command in re.split(r"&&|\|\||;|\|", line):
            match = re.search(r"(?:^|[\s:'\"-])pip3?\s+install\s+(.*)$", command)
            if match:
                yield _split(match.group(1).strip().strip("'\""))


# --- reading files ----------------------------------------------------------------------------------


def _ini(tree: TreeReader, path: str) -> ConfigParser | None:
    data = tree.read(path)
    return None if data is None else _parse_ini(data.decode("utf-8", errors="replace"))


def _parse_ini(text: str) -> ConfigParser | None:
    parser = ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except ConfigError:
        return None
    return parser


def _toml(tree: TreeReader, path: str) -> dict | None:
    data = tree.read(path)
    if data is None:
        return None
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
