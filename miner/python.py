"""Python support: pytest file conventions and a method parser on the standard ``ast``."""

from __future__ import annotations

import ast
import contextlib
import io
import textwrap
import tokenize
import warnings

from .errors import SourceSyntaxError
from .parsing import Language, MethodInfo, MethodScan, ParsedFile

_SKIPPED_TOKENS = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
}


def parse_python(source: bytes, scan: str = "tests") -> ParsedFile:
    """Lists the functions and methods of a Python module.

    Functions nested inside functions belong to their enclosing function (as
    lambdas do in Java); methods of nested classes are listed with the dotted
    class path. Raises :class:`SourceSyntaxError` for code ``ast`` rejects,
    including undecodable bytes without a coding cookie. ``scan`` says whose bodies
    to scan for calls, type references and tokens (``none``, ``tests``, ``all``).
    """
    try:
        tree, warned = _parse_quietly(source)
    except SyntaxError as exc:
        raise SourceSyntaxError(f"syntax error at line {exc.lineno}: {exc.msg}", exc.lineno) from None
    except ValueError as exc:  # e.g. NUL bytes
        raise SourceSyntaxError(f"unparseable source: {exc}") from None
    text = _decode(source)
    lines = text.splitlines(keepends=True)
    collector = _Collector(lines, scan)
    collector.visit_body(tree.body, container=(), unittest_classes=set())
    return ParsedFile(
        methods=tuple(collector.methods),
        classes=tuple(collector.classes),
        warnings=warned,
        fields=tuple(collector.fields),
    )


def _parse_quietly(source: str | bytes) -> tuple[ast.Module, tuple[str, ...]]:
    """``ast.parse`` with the warnings old sources raise (invalid escapes: ``SyntaxWarning``, a
    ``DeprecationWarning`` before 3.12) caught: mined code is data, its warnings are no user's."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tree = ast.parse(source)
    return tree, tuple(dict.fromkeys(f"line {w.lineno}: {w.message} ({w.category.__name__})" for w in caught))


def scan_python_function(text: str) -> MethodScan:
    """Calls, capitalised names and tokens of one function's source, parsed on its own."""
    try:
        tree, _ = _parse_quietly(textwrap.dedent(text))  # its file's parse recorded the warnings
    except SyntaxError:
        return frozenset(), frozenset(), _tokens(text)
    node = next((n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)), tree)
    calls, type_refs = _references(node)
    return calls, type_refs, _tokens(text, tree)


def _decode(source: bytes) -> str:
    """Decodes as Python would: the coding cookie if any, else UTF-8."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        return source.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return source.decode("utf-8", errors="replace")


class _Collector:
    def __init__(self, lines: list[str], scan: str) -> None:
        self.lines = lines
        self.scan = scan
        self.methods: list[MethodInfo] = []
        self.fields: list[MethodInfo] = []
        self.classes: list[str] = []
        self._seen: dict[str, int] = {}
        self._seen_fields: dict[str, int] = {}

    def visit_body(
        self, body: list[ast.stmt], container: tuple[str, ...], unittest_classes: set[str]
    ) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                qualified = (*container, node.name)
                self.classes.append(".".join(qualified))
                is_unittest = any(_base_name(base) in _UNITTEST_BASES for base in node.bases) or any(
                    _base_name(base) in unittest_classes for base in node.bases
                )
                if is_unittest:
                    unittest_classes = unittest_classes | {node.name}
                self.visit_body(node.body, qualified, unittest_classes)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                # `@overload` stubs only declare types; the implementation that follows is the method.
                if not any(_base_name(d) == "overload" for d in node.decorator_list):
                    self._add(node, container, unittest_classes)
            elif isinstance(node, ast.If | ast.Try):
                # Definitions guarded by ``if sys.version_info`` or ``try: import`` still count.
                for block in _blocks(node):
                    self.visit_body(block, container, unittest_classes)
            elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                self._add_assignment(node, container)

    def _add_assignment(
        self, node: ast.Assign | ast.AnnAssign | ast.AugAssign, container: tuple[str, ...]
    ) -> None:
        """A module-level assignment or class attribute, by the first name it assigns."""
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        if not names:
            return  # ``obj.attr = …``, ``table[k] = …``: no name of its own
        start, end = node.lineno, node.end_lineno or node.lineno
        source = "".join(self.lines[start - 1 : end])
        key = self._unique(".".join((*container, names[0])), self._seen_fields)
        self.fields.append(
            MethodInfo(
                key=key,
                name=names[0],
                container=".".join(container),
                start_line=start,
                end_line=end,
                source=source,
                is_test=False,
                tokens=_tokens(source),
                unit="field" if container else "module",
            )
        )

    @staticmethod
    def _unique(key: str, seen: dict[str, int]) -> str:
        """``key``, or ``key#2``… for a name defined again (property setters, conditional defs)."""
        count = seen.get(key, 0) + 1
        seen[key] = count
        return f"{key}#{count}" if count > 1 else key

    def _add(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        container: tuple[str, ...],
        unittest_classes: set[str],
    ) -> None:
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        end = node.end_lineno or node.lineno
        source = "".join(self.lines[start - 1 : end])
        # A redefinition (property setters, conditional defs) gets its own key.
        key = self._unique(".".join((*container, node.name)), self._seen)
        class_name = container[-1] if container else ""
        is_test = node.name.startswith("test") and (
            not container or class_name.startswith("Test") or class_name in unittest_classes
        )
        # References and tokens serve linking and refactoring checks of tests only; skipping them for
        # production code keeps parsing large modules cheap.
        scanned = self.scan == "all" or (is_test and self.scan == "tests")
        calls, type_refs = _references(node) if scanned else (frozenset(), frozenset())
        self.methods.append(
            MethodInfo(
                key=key,
                name=node.name,
                container=".".join(container),
                start_line=start,
                end_line=end,
                source=source,
                is_test=is_test,
                calls=calls,
                type_refs=type_refs,
                tokens=_tokens(source) if scanned else (),
            )
        )


_UNITTEST_BASES = {"TestCase", "IsolatedAsyncioTestCase", "AsyncTestCase"}


def _base_name(base: ast.expr) -> str:
    if isinstance(base, ast.Attribute):
        return base.attr
    if isinstance(base, ast.Name):
        return base.id
    return ""


def _blocks(node: ast.If | ast.Try) -> list[list[ast.stmt]]:
    if isinstance(node, ast.If):
        return [node.body, node.orelse]
    return [node.body, *(handler.body for handler in node.handlers), node.orelse, node.finalbody]


def _references(node: ast.AST) -> tuple[frozenset[str], frozenset[str]]:
    """Names called in a function body, and capitalised names (classes by convention)."""
    calls: set[str] = set()
    type_refs: set[str] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Call):
            name = _base_name(child.func)
            if name:
                calls.add(name)
        elif isinstance(child, ast.Name) and child.id[:1].isupper():
            type_refs.add(child.id)
        elif isinstance(child, ast.Attribute) and child.attr[:1].isupper():
            type_refs.add(child.attr)
    return frozenset(calls), frozenset(type_refs)


def _tokens(source: str, tree: ast.AST | None = None) -> tuple[str, ...]:
    """Tokens of the code as ``ast`` reads it, without comments and layout: the quotes, ``u``
    prefixes, parentheses and trailing commas a formatter changes are no change (black reformatted
    all of requests' tests in 2a6f290bc0). Falls back to the tokens as written where the snippet
    does not parse (a Python 2 one), and to words where it does not tokenize. ``tree``: the
    parse of ``source`` dedented, where the caller has it (its constants lose their ``u`` here)."""
    text = textwrap.dedent(source)
    with contextlib.suppress(SyntaxError, ValueError, RecursionError):
        tree = tree or _parse_quietly(text)[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant):
                node.kind = None  # u"x" is "x" (pyupgrade's rewrite, in the same requests commit)
        text = ast.unparse(tree)
    try:
        readline = io.StringIO(text).readline
        return tuple(
            tok.string for tok in tokenize.generate_tokens(readline) if tok.type not in _SKIPPED_TOKENS
        )
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return tuple(source.split())


PYTHON = Language(
    name="python",
    suffixes=(".py",),
    scan=scan_python_function,
    test_globs=(
        "test_*.py",
        "*_test.py",
        "tests/**",
        "**/tests/**",
        "test/**",
        "**/test/**",
        "conftest.py",
    ),
    parse=parse_python,
    build_files=("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "tox.ini"),
)
