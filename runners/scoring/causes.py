"""Why a test fails on code it was not written for: what it checks, or test code it lacks there.

A new test that fails on the old code makes a generation task only when the old code is what
it finds wanting: a behaviour (an assertion, an exception from production code) or production
API the old code lacks (a compile or import error naming production code). When it fails
because *test* code changed with it is missing there (a fixture not found, an import of a test
helper, a compile error naming a test class), any test using that helper would fail the same
way, and the failure says nothing about the production change: the candidate is dropped as
``old_fails_on_test_code``. So is a test that imports a library the other revision lacks (a
test dependency added with it: ``package com.google.common.truth.extensions.proto does not
exist``, ``No module named 'responses'``): a package that is none of the repository's own. The
same holds for an old test failing on the new code (ON).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from pathlib import Path, PurePosixPath

from ..environments.worktree import GitTree

BEHAVIOUR = "behaviour"
PRODUCTION_API = "production_api"
TEST_CODE = "test_code"

_FIXTURE = re.compile(r"fixture '([\w.]+)' not found")
_PY_IMPORT = (
    re.compile(r"No module named '([\w.]+)'"),
    re.compile(r"cannot import name '(\w+)' from '([\w.]+)'"),
    re.compile(r"module '([\w.]+)' has no attribute '(\w+)'"),
)
_JAVA_SYMBOL = re.compile(r"symbol:\s+(?:class|method|variable|interface|enum|record)\s+(\w+)")
_JAVA_LOCATION = re.compile(r"location:\s+(?:class|interface|variable \w+ of type)\s+([\w.$<>]+)")
_JAVA_PACKAGE = re.compile(r"package ([\w.]+) does not exist")
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")


def failure_cause(
    outcome: str, message: str, test_names: Collection[str], own: Collection[str] | None = None
) -> str:
    """:data:`TEST_CODE` when the failure names test code (``test_names``: what the pair's other
    test files define or are) or a package that is none of the repository's (``own``:
    :func:`own_packages`; None: not checked), :data:`PRODUCTION_API` for a compile or import error
    naming anything else, and :data:`BEHAVIOUR` otherwise."""
    if _FIXTURE.search(message):
        return TEST_CODE  # fixtures are test code, wherever they live
    if outcome not in ("compile_error", "error"):
        return BEHAVIOUR
    if own is not None and any(
        name not in own for name in [*_JAVA_PACKAGE.findall(message), *_NO_MODULE.findall(message)]
    ):
        return TEST_CODE  # a library the revision lacks: a dependency added with the test
    named = _named(message)
    if not named:
        if outcome == "error" and _mentions(message, test_names):
            return TEST_CODE  # an error in a set-up or fixture of another changed test file
        return PRODUCTION_API if outcome == "compile_error" else BEHAVIOUR
    if any(name in test_names or name.rsplit(".", 1)[-1] in test_names for name in named):
        return TEST_CODE
    return PRODUCTION_API


def names_of_test_code(paths_and_helpers: dict[str, Collection[str]]) -> frozenset[str]:
    """The names by which a failure can name test code: each changed test file's class or module
    (``FooTest``, ``tests.helpers``, ``helpers``) and the helpers it defines."""
    names: set[str] = set()
    for path, helpers in paths_and_helpers.items():
        pure = PurePosixPath(path)
        names.add(pure.stem)
        if pure.suffix == ".py":
            names.add(".".join(pure.with_suffix("").parts))
        names.update(helper for helper in helpers if not helper.startswith("<"))
    return frozenset(names)


def own_packages(paths: Iterable[str]) -> frozenset[str]:
    """The dotted names by which code can import the repository's own packages and modules: each
    run of a source file's folders (``src/test/java/com/acme/util`` gives ``com.acme.util``,
    ``acme.util``, ``com.acme``…) and, for Python, with its module (``flask.json.tag``)."""
    names: set[str] = set()
    for path in paths:
        pure = PurePosixPath(path)
        if pure.suffix not in (".java", ".py"):
            continue
        parts = list(pure.parent.parts)
        if pure.suffix == ".py" and pure.stem != "__init__":
            parts.append(pure.stem)
        for start in range(len(parts)):
            for end in range(start + 1, len(parts) + 1):
                names.add(".".join(parts[start:end]))
    return frozenset(names)


def packages_of(repo_path: Path, *revisions: str) -> frozenset[str]:
    """:func:`own_packages` of every file of ``revisions``: what curation and scoring check a
    failure on the other revision against."""
    return own_packages(path for revision in revisions for path in GitTree(repo_path, revision).files())


def _mentions(message: str, names: Collection[str]) -> bool:
    """Whether ``message`` names one of ``names`` as a word (names of three characters or more)."""
    words = set(re.findall(r"[\w.]+", message)) | set(re.findall(r"\w+", message))
    return any(len(name) >= 3 and name in words for name in names)


def _named(message: str) -> list[str]:
    """The modules, classes, methods and packages a compile or import error names."""
    found: list[str] = []
    for pattern in _PY_IMPORT:
        for match in pattern.finditer(message):
            found.extend(match.groups())
    found += _JAVA_SYMBOL.findall(message)
    found += [location.split("<", 1)[0] for location in _JAVA_LOCATION.findall(message)]
    found += _JAVA_PACKAGE.findall(message)
    return found
