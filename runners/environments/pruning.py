"""A test file cut down to one test method and what it uses: judging methods one by one.

When another revision's test file does not compile (Java) or import (Python) on this revision's
code, one method's use of an API the code lacks would otherwise fail every method of the file.
Each method is then judged on its own: the file without the other test methods, and without the
helpers, fields and imports its method does not use (transitively). Set-ups stay: they run before
it. A method whose own code needs what the revision lacks still fails, for its own reason.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from miner.errors import SourceSyntaxError
from miner.languages import get_language
from miner.parsing import MethodInfo, ParsedFile

SETUP_ANNOTATION = re.compile(r"@(Before|After)(Each|All|Class)?\b|@pytest\.fixture\(\s*autouse\s*=\s*True")
"""What makes a method run around every test of its file without being called (JUnit, pytest)."""
SETUP_NAMES = frozenset(
    {"setUp", "tearDown", "setup_method", "teardown_method", "setup_function", "teardown_function",
     "setup_class", "teardown_class", "setup_module", "teardown_module", "setup", "teardown"}
)  # fmt: skip
_WORD = re.compile(r"[A-Za-z_]\w*")
_JAVA_IMPORT = re.compile(r"^\s*import\s+(static\s+)?([\w.]+?)(\.\*)?\s*;", re.MULTILINE)


def alone(source: bytes, language: str, name: str) -> bytes | None:
    """``source`` with test method ``name`` and what it uses only; None when it cannot be cut
    (it does not parse, or has no such test)."""
    try:
        parsed = get_language(language).parse(source, scan="all")
    except (SourceSyntaxError, UnicodeDecodeError, ValueError):
        return None
    tests = [m for m in parsed.methods if m.is_test]
    kept = [m for m in tests if m.name == name]
    if not kept:
        return None
    others = [m for m in parsed.methods if not m.is_test]
    setups = [m for m in others if is_setup(m)]
    used = _words(m.source for m in (*kept, *setups)) | _frame_words(source, language, parsed)
    helpers = {m.key for m in setups}
    fields = {f.key for f in parsed.fields if f.name.startswith("<")}  # initializer blocks run anyway
    used |= _words(f.source for f in parsed.fields if f.key in fields)
    while True:
        more = [m for m in others if m.key not in helpers and m.name in used]
        more += [f for f in parsed.fields if f.key not in fields and f.name in used]
        if not more:
            break
        for unit in more:
            (fields if unit in parsed.fields else helpers).add(unit.key)
            used |= _words([unit.source])
    drop = [m for m in tests if m.name != name]
    drop += [m for m in others if m.key not in helpers]
    drop += [f for f in parsed.fields if f.key not in fields]
    lines = source.decode("utf-8", errors="surrogateescape").splitlines(keepends=True)
    edits = removals(source, language, [(m.start_line, m.end_line) for m in drop])
    edits |= _unused_imports(source, language, used)
    for (start, end), kept_line in sorted(edits.items(), reverse=True):
        # Line numbers stay as they were: a compiler's or pytest's line still points at the file.
        lines[start - 1 : end] = [kept_line + "\n"] + ["\n"] * (end - start)
    return "".join(lines).encode("utf-8", errors="surrogateescape")


def removals(source: bytes, language: str, spans: Iterable[tuple[int, int]]) -> dict[tuple[int, int], str]:
    """What stays on the first line of each removed line span of ``source``: nothing, or in Python
    ``pass`` where the removal would leave a block without a statement (a class whose methods all
    go; ``except ImportError:`` whose only line was a dropped field, as in requests' tests)."""
    edits = dict.fromkeys(spans, "")
    if language == "java":
        return edits
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return edits
    lines = source.decode("utf-8", errors="surrogateescape").splitlines()

    def removed(statement: ast.stmt) -> tuple[int, int] | None:
        end = statement.end_lineno or statement.lineno
        return next((s for s in edits if s[0] <= statement.lineno and end <= s[1]), None)

    for node in ast.walk(tree):
        if isinstance(node, ast.Module):
            continue  # an empty module is still one
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list) or not block or not isinstance(block[0], ast.stmt):
                continue
            by = [removed(statement) for statement in block]
            if all(by):
                first = min(span for span in by if span)
                line = lines[first[0] - 1]
                edits[first] = line[: len(line) - len(line.lstrip())] + "pass"
    return edits


def is_setup(method: MethodInfo) -> bool:
    """Whether a method runs around every test of its file without being called."""
    return method.name in SETUP_NAMES or bool(SETUP_ANNOTATION.search(method.source))


def _words(sources: Iterable[str]) -> set[str]:
    return {word for source in sources for word in _WORD.findall(source)}


_JAVA_COMMENT_OR_STRING = re.compile(  # a string first: // in one is no comment
    r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|/\*.*?\*/|//[^\n]*', re.DOTALL
)


def _frame_words(source: bytes, language: str, parsed: ParsedFile) -> set[str]:
    """Names that what every cut keeps refers to: the classes' annotations, decorators and headers
    (``@SetSystemProperty(key = KEY)``, ``extends Base<T>``), so that their imports and fields stay.

    Java: the file without its methods, fields, imports, comments and strings. Python: the decorators,
    bases and keywords of its classes (the rest of a module is functions, fields and imports)."""
    if language != "java":
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            return set()
        classes = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
        parts = [part for c in classes for part in (*c.decorator_list, *c.bases, *c.keywords)]
        return {n.id for part in parts for n in ast.walk(part) if isinstance(n, ast.Name)}
    lines = source.decode("utf-8", errors="replace").splitlines(keepends=True)
    for unit in (*parsed.methods, *parsed.fields):
        lines[unit.start_line - 1 : unit.end_line] = ["\n"] * (unit.end_line - unit.start_line + 1)
    return _words([_JAVA_COMMENT_OR_STRING.sub(" ", _JAVA_IMPORT.sub("", "".join(lines)))])


def _unused_imports(source: bytes, language: str, used: set[str]) -> dict[tuple[int, int], str]:
    """Imports that bind names not in ``used``, by line span: what stays of each (``""``: nothing;
    Python's ``from m import a, b`` keeps the names used). Wildcards stay."""
    edits: dict[tuple[int, int], str] = {}
    if language == "java":
        text = source.decode("utf-8", errors="replace")
        for match in _JAVA_IMPORT.finditer(text):
            if not match.group(3) and match.group(2).rsplit(".", 1)[-1] not in used:
                line = text.count("\n", 0, match.start(2)) + 1
                edits[(line, line)] = ""
        return edits
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return edits
    for node in tree.body:
        if not isinstance(node, ast.Import | ast.ImportFrom) or any(a.name == "*" for a in node.names):
            continue
        kept = [a for a in node.names if (a.asname or a.name).split(".")[0] in used]
        if len(kept) == len(node.names):
            continue
        span = (node.lineno, node.end_lineno or node.lineno)
        if not kept:
            edits[span] = ""
        elif isinstance(node, ast.ImportFrom):
            edits[span] = ast.unparse(ast.ImportFrom(module=node.module, names=kept, level=node.level))
        else:
            edits[span] = ast.unparse(ast.Import(names=kept))
    return edits
