"""Which files are test code and which are production code, per language and repository."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from enum import StrEnum
from fnmatch import fnmatchcase
from pathlib import PurePosixPath

from .parsing import Language

_DEFAULT_EXCLUDES: dict[str, tuple[str, ...]] = {
    "java": ("**/package-info.java", "package-info.java", "module-info.java", "**/module-info.java"),
    "python": (
        "setup.py", "noxfile.py", "docs/**", "doc/**", "examples/**", "**/migrations/**",
        "benchmarks/**", "bench/**",
    ),
}  # fmt: skip


_KNOWN_ROLES = 1 << 16
"""How many paths' roles :class:`FilePatterns` keeps (a history's distinct paths, usually fewer)."""


class FileRole(StrEnum):
    TEST = "test"
    PRODUCTION = "production"
    OTHER = "other"


@dataclass(frozen=True)
class FilePatterns:
    """Glob patterns that sort a repository's files into test code, production code and the rest.

    A pattern matches the whole path or, when it has no slash, the file name.
    ``*`` crosses directories, so ``src/test/**`` covers every file below it.
    """

    suffixes: tuple[str, ...]
    test_globs: tuple[str, ...]
    exclude_globs: tuple[str, ...] = ()
    _roles: dict[str, FileRole] = field(default_factory=dict, init=False, compare=False, repr=False)
    """Each path's role once computed: the selection pass and the analysis ask for the same paths
    again and again (every commit that touches a file, both sides of every pair)."""

    @classmethod
    def for_language(
        cls,
        language: Language,
        test_globs: tuple[str, ...] = (),
        exclude_globs: tuple[str, ...] = (),
    ) -> FilePatterns:
        """The language's defaults, with a repository's own test and exclude patterns when given."""
        return cls(
            suffixes=language.suffixes,
            test_globs=test_globs or language.test_globs,
            exclude_globs=exclude_globs or _DEFAULT_EXCLUDES.get(language.name, ()),
        )

    def role(self, path: str) -> FileRole:
        role = self._roles.get(path)
        if role is None:
            if len(self._roles) >= _KNOWN_ROLES:
                self._roles.clear()
            role = self._roles[path] = self._sorted(path)
        return role

    def _sorted(self, path: str) -> FileRole:
        if not path.endswith(self.suffixes) or _matches(path, self.exclude_globs):
            return FileRole.OTHER
        return FileRole.TEST if _matches(path, self.test_globs) else FileRole.PRODUCTION

    def under_tests(self, path: str) -> bool:
        """Whether a file of any kind (a ``.proto``, a resource) lies where the test code does."""
        return _matches(path, self.test_globs) and not _matches(path, self.exclude_globs)


def _matches(path: str, globs: tuple[str, ...]) -> bool:
    name = PurePosixPath(path).name
    return any(
        fnmatchcase(path, pattern) or ("/" not in pattern and fnmatchcase(name, pattern)) for pattern in globs
    )


@functools.lru_cache(maxsize=4096)
def file_stem(path: str) -> str:
    """``PurePosixPath(path).stem``, kept: the miner asks for the same few files' stems for every
    method it compares and every test it links."""
    return PurePosixPath(path).stem
