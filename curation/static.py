"""What curation decides without running anything: test ids, refactorings, test-utility co-changes.

Refactoring checks compare *normalized token streams*: comments and layout are gone (the
parsers' tokens), the declared method's own name is a placeholder, and local names (a
lower-case identifier that is neither a keyword, a call, nor a member after a dot) are
renamed in order of first use. So renaming a test or a variable, reformatting, or editing a
comment is a refactoring; calling another method or changing a literal is not.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath

from miner.errors import SourceSyntaxError
from miner.files import FilePatterns, FileRole
from miner.gitlog import diff_blobs
from miner.parsing import Language
from runners import GitTree
from runners.environments.pruning import is_setup

_JAVA_KEYWORDS = frozenset(
    re.findall(
        r"\w+",
        """abstract assert boolean break byte case catch char class const continue default do double else
        enum extends final finally float for goto if implements import instanceof int interface long native
        new package private protected public return short static strictfp super switch synchronized this
        throw throws transient try void volatile while var yield record sealed permits non true false null""",
    )
)
_KEYWORDS = {"java": _JAVA_KEYWORDS, "python": frozenset(keyword.kwlist) | {"self", "cls"}}
_IDENTIFIER = re.compile(r"^[a-z_][A-Za-z0-9_]*$")
_PACKAGE = re.compile(rb"^\s*package\s+([\w.]+)\s*;", re.MULTILINE)


def runnable_id(language: str, test_file: str, file_source: bytes | None, key: str) -> str:
    """The id a build tool runs a test method by: ``pkg.Outer.Inner#method`` or a pytest node id."""
    qualified = key.split("(", 1)[0].split("#", 1)[0]
    container, _, name = qualified.rpartition(".")
    if language == "python":
        return "::".join([test_file, *filter(None, container.split(".")), name])
    found = _PACKAGE.search(file_source or b"")
    package = found.group(1).decode() if found else ""
    owner = container or Path(test_file).stem
    return f"{package + '.' if package else ''}{owner}#{name}"


def normalized(tokens: Sequence[str], language: str) -> tuple[str, ...]:
    """The token stream with the method's own name and its local names made positional."""
    keywords = _KEYWORDS.get(language, frozenset())
    names: dict[str, str] = {}
    out: list[str] = []
    declared = False
    for index, token in enumerate(tokens):
        following = tokens[index + 1] if index + 1 < len(tokens) else ""
        previous = tokens[index - 1] if index else ""
        if not declared and following == "(" and _IDENTIFIER.match(token) and token not in keywords:
            out.append("<method>")  # the first name before "(" is the declaration's
            declared = True
            continue
        if (
            _IDENTIFIER.match(token)
            and token not in keywords
            and following != "("
            and previous not in (".", "@")
        ):
            out.append(names.setdefault(token, f"<v{len(names)}>"))
            continue
        out.append(token)
    return tuple(out)


def is_refactoring(
    language: Language, old_source: str, new_source: str, renamed: Mapping[str, str] | None = None
) -> bool:
    """Whether two versions of a method differ only by layout, comments and renames: of its
    local names, or of the classes and modules the pair renamed (``renamed``, old name → new:
    :func:`renamed_units`), also where a string names them."""
    old_tokens = tuple(_renamed(token, renamed or {}) for token in language.scan(old_source)[2])
    return normalized(old_tokens, language.name) == normalized(language.scan(new_source)[2], language.name)


def renamed_units(repo: Path, rev1: str, rev2: str, language: Language) -> dict[str, str]:
    """The classes (Java) or modules (Python) the pair renamed with their files, old name → new:
    gson 45e5e141b1 renamed ``$Gson$Types.java`` to ``GsonTypes.java``, and every use of it."""
    suffix = ".java" if language.name == "java" else ".py"
    renamed = {}
    for change in diff_blobs(repo, rev1, rev2, None):
        if change.old_path and change.new_path and change.old_path != change.new_path:
            old, new = PurePosixPath(change.old_path), PurePosixPath(change.new_path)
            if old.suffix == new.suffix == suffix and old.stem != new.stem:
                renamed[old.stem] = new.stem
    return renamed


def _renamed(token: str, renamed: Mapping[str, str]) -> str:
    """``token`` with each renamed name in it (the token itself, or a whole name in a string, a
    nested class after it: ``"$Gson$Types$WildcardTypeImpl"``) renamed."""
    if token in renamed:
        return renamed[token]
    if not renamed or not _STRING.match(token):
        return token
    for old, new in renamed.items():
        token = re.sub(rf"(?<![\w$]){re.escape(old)}(?!\w)", new.replace("\\", "\\\\"), token)
    return token


def changed_test_helpers(
    repo: Path, rev1: str, rev2: str, patterns: FilePatterns, language: Language
) -> dict[str, dict[str, tuple[str, tuple[str, ...]]]]:
    """Every test file added, changed or removed rev1 → rev2 (by its new path, a removed one by its
    old) → its non-test methods added or changed: {method key: (name, tokens)}, maybe none.

    Set-up methods (``@Before``, ``setUp``, an autouse fixture…:
    :func:`runners.environments.pruning.is_setup`) are named ``<setup>``: they run around every
    test of their file without being called. Fixtures are functions, so they are here by their
    names. A ``.proto`` where the tests are
    gives its messages, enums and services added or changed: protoc makes test classes (Java) or
    ``_pb2`` modules (Python) of them (:func:`_proto_types`).
    """
    found: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {}
    for change in diff_blobs(repo, rev1, rev2, None):
        path = change.new_path or change.old_path
        if path is not None and path.endswith(".proto") and patterns.under_tests(path):
            old_types = _proto_types(GitTree(repo, rev1).read(change.old_path)) if change.old_path else {}
            new_types = _proto_types(GitTree(repo, rev2).read(change.new_path)) if change.new_path else {}
            found[path] = {
                name: (name, tokens) for name, tokens in new_types.items() if old_types.get(name) != tokens
            }
            continue
        if path is None or patterns.role(path) != FileRole.TEST:
            continue
        old = file_helpers(language, GitTree(repo, rev1).read(change.old_path)) if change.old_path else {}
        new = file_helpers(language, GitTree(repo, rev2).read(change.new_path)) if change.new_path else {}
        found[path] = {
            key: (method_name, tokens)
            for key, (method_name, tokens) in new.items()
            if key not in old or normalized(old[key][1], language.name) != normalized(tokens, language.name)
        }
    return found


_PROTO_TYPE = re.compile(r"\b(?:message|enum|service)\s+(\w+)\s*\{")
_PROTO_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


def _proto_types(source: bytes | None) -> dict[str, tuple[str, ...]]:
    """The messages, enums and services a protobuf file declares (nested ones too): name → the
    words and symbols of its body. A test's ``.proto`` is test code: protoc makes classes of it
    (gson's ``src/test/proto/bag.proto`` gives ``Bag.ProtoWithAnnotations``) that tests use."""
    if source is None:
        return {}
    text = _PROTO_COMMENT.sub(" ", source.decode("utf-8", errors="replace"))
    types: dict[str, tuple[str, ...]] = {}
    for match in _PROTO_TYPE.finditer(text):
        depth, end = 1, match.end()
        while depth and end < len(text):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            end += 1
        types[match.group(1)] = tuple(re.findall(r"\w+|[^\w\s]", text[match.end() : end]))
    return types


def uses_changed_helper(
    test_file: str,
    test_tokens: Iterable[str],
    helpers: dict[str, dict[str, tuple[str, tuple[str, ...]]]],
    own: Mapping[str, tuple[str, tuple[str, ...]]] | None = None,
) -> str | None:
    """The changed test code in *another* file a test depends on (called, named, or named in a
    string: ``lazy_fixture("server")``, ``request.getfixturevalue("server")``,
    ``@pytest.mark.usefixtures("server")``), if any: by itself or through the helpers and set-ups
    of its own file, changed or not (``own``: :func:`file_helpers` of that file), so a test that
    calls its file's ``roundTrip``, which names a message added to a test ``.proto``, depends on it.

    A changed autouse fixture of a ``conftest.py`` runs around every test below it, most of them
    untouched by its change (flask's ``leak_detector``): it is no use by itself. Where it does
    decide a cell, the failure happens in it and names it (:func:`~runners.scoring.causes.failure_cause`).

    Helpers of the test's own file are not: the agent writes that whole file, so they are part of
    its answer (:func:`same_file_helpers`).
    """
    names = _reach(_names(test_tokens), own or {})[1]
    for file, changed in sorted(helpers.items()):
        if file == test_file:
            continue
        for key, (name, _) in sorted(changed.items()):
            if name in names:
                return f"{file}::{key}"
    return None


def same_file_helpers(
    test_file: str, test_tokens: Iterable[str], helpers: dict[str, dict[str, tuple[str, tuple[str, ...]]]]
) -> list[str]:
    """The keys of the changed helpers of the test's own file that belong to its answer: those it
    uses, those they use in turn, and the file's changed set-ups."""
    return sorted(_reach(_names(test_tokens), helpers.get(test_file, {}))[0])


def _reach(names: set[str], helpers: Mapping[str, tuple[str, tuple[str, ...]]]) -> tuple[set[str], set[str]]:
    """The keys of ``helpers`` (key → (name, tokens)) that ``names`` reach, in turn through what
    they name, with the set-ups; and every name reached."""
    reached: set[str] = set()
    names = names | {"<setup>"}
    while pending := {key for key, (name, _) in helpers.items() if key not in reached and name in names}:
        reached |= pending
        for key in pending:
            names |= _names(helpers[key][1])
    return reached, names - {"<setup>"}


_STRING = re.compile(r"""^[rRbBuUfF]{0,2}(\"{3}|'{3}|"|')(.*)\1$""", re.DOTALL)


def _names(tokens: Iterable[str]) -> set[str]:
    """The tokens, and the contents of their string literals (names given as strings)."""
    found = set()
    for token in tokens:
        found.add(token)
        literal = _STRING.match(token)
        if literal:
            found.add(literal.group(2))
    return found


def file_helpers(language: Language, source: bytes | None) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Non-test methods of a test file (helpers, fixtures, set-ups): key → (name, tokens); set-ups
    are named ``<setup>``. Nothing for a file that does not parse."""
    if source is None:
        return {}
    try:
        parsed = language.parse(source, scan="all")
    except (SourceSyntaxError, UnicodeDecodeError, ValueError):
        return {}
    helpers: dict[str, tuple[str, tuple[str, ...]]] = {}
    for method in parsed.methods:
        if method.is_test:
            continue
        name = "<setup>" if is_setup(method) else method.name
        helpers[method.key] = (name, method.tokens)
    return helpers
