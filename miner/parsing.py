"""What mining reads from a source file: its methods and other code units (:class:`ParsedFile`), and
what a language is to the miner (:class:`Language`: suffixes, test patterns, parser). The
languages themselves are listed in :mod:`miner.languages`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class MethodInfo:
    """One method (or function) found in a source file.

    ``key`` identifies the method inside its file across revisions: the
    qualified name plus the parameter types for languages with overloading.
    """

    key: str
    """Qualified name inside the file, e.g. ``Outer.Inner.add(int,String)`` or ``TestCalc.test_add``."""
    name: str
    """The simple name, e.g. ``add``; for a constructor, the class name."""
    container: str
    """The enclosing classes joined by dots, e.g. ``Outer.Inner``; empty for module functions."""
    start_line: int
    """First line, 1-based, including decorators and annotations."""
    end_line: int
    """Last line, 1-based, inclusive."""
    source: str
    """The method's text exactly as in the file (decoded)."""
    is_test: bool
    """True when the method is a test by the language's conventions (JUnit annotations, pytest names)."""
    calls: frozenset[str] = field(default_factory=frozenset)
    """Simple names of methods and constructors invoked in the body.

    Parsers must fill ``calls``, ``type_refs`` and ``tokens`` for test methods; for production
    methods they may leave them empty (the Python parser does, to keep large modules cheap).
    """
    type_refs: frozenset[str] = field(default_factory=frozenset)
    """Simple names of classes (types) referenced in the body."""
    tokens: tuple[str, ...] = ()
    """The method's tokens without comments and whitespace: compares code modulo formatting."""
    unit: str = "method"
    """``method``; or, for code outside methods (:attr:`ParsedFile.fields`), ``field`` (a Java field
    or initializer block, a Python class attribute) or ``module`` (a Python module-level
    assignment): ``name`` is the assigned name (``<static>``, ``<init>`` for Java blocks)."""


@dataclass(frozen=True)
class ParsedFile:
    """The methods of one file at one revision."""

    methods: tuple[MethodInfo, ...]
    classes: tuple[str, ...] = ()
    fields: tuple[MethodInfo, ...] = ()
    """Code outside methods that production changes can be made of: fields, constants, initializer
    blocks, module-level assignments (``unit`` says which)."""
    """Qualified names of the classes declared in the file."""
    warnings: tuple[str, ...] = ()
    """What the parser warned about (Python's ``SyntaxWarning``): recorded, never printed."""

    def by_key(self) -> dict[str, MethodInfo]:
        return {method.key: method for method in self.methods}


MethodScan = tuple[frozenset[str], frozenset[str], tuple[str, ...]]
"""(calls, type references, tokens) of one method."""


@dataclass(frozen=True)
class Language:
    """A language the miner can walk: its file suffixes, default test patterns and parser."""

    name: str
    suffixes: tuple[str, ...]
    test_globs: tuple[str, ...]
    """Glob patterns (matched on the whole path and on the file name) that make a file test code."""
    parse: Callable[..., ParsedFile]
    """``parse(source: bytes, scan="tests")``: a file's methods; raises
    :class:`miner.errors.SourceSyntaxError`. ``scan`` (``none``, ``tests``, ``all``) says whose
    bodies to scan for calls, type references and tokens."""
    scan: Callable[[str], MethodScan]
    """Calls, type references and tokens of one method's source text, for methods parsed unscanned."""
    build_files: tuple[str, ...] = ()
    """File names that show a repository uses this language's build (``pom.xml``, ``pyproject.toml``)."""
