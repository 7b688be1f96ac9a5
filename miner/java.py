"""Java support: finds the methods of a ``.java`` file with tree-sitter-java.

:func:`parse_java` walks the type declarations of a compilation unit (classes,
interfaces, enums, records, annotation types, nested at any depth) and returns one
:class:`~miner.parsing.MethodInfo` per method or constructor. Code inside a method
body (lambdas, anonymous and local classes) belongs to that method and is never
listed on its own.

``JAVA`` is the ``java`` :class:`~miner.parsing.Language` (listed in :mod:`miner.languages`).
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from functools import cache

import tree_sitter_java
from tree_sitter import Language as TSLanguage
from tree_sitter import Node, Parser

from .errors import SourceSyntaxError
from .parsing import Language, MethodInfo, MethodScan, ParsedFile

# Node types of tree-sitter-java (0.23) this module relies on.
_TYPE_DECLARATIONS = frozenset(
    {
        "class_declaration",
        "interface_declaration",
        "enum_declaration",
        "record_declaration",
        "annotation_type_declaration",
    }
)
_METHOD_DECLARATIONS = frozenset(
    {"method_declaration", "constructor_declaration", "compact_constructor_declaration"}
)
# Bodies whose direct children are member declarations (``enum_body_declarations`` is
# the part of an enum body after the constants).
_MEMBER_BODIES = frozenset(
    {"class_body", "interface_body", "enum_body", "enum_body_declarations", "annotation_type_body"}
)
_COMMENTS = frozenset({"line_comment", "block_comment"})
# Literals kept as one token: their inner fragments do not cover all of their text
# (text blocks), and a literal is one token of the language anyway.
_ATOMIC_TOKENS = frozenset({"string_literal", "character_literal"})
_ANNOTATIONS = frozenset({"marker_annotation", "annotation"})

_TEST_ANNOTATIONS = frozenset({"Test", "ParameterizedTest", "RepeatedTest", "TestFactory", "TestTemplate"})
# ``var`` parses as a type_identifier but names no type.
_NOT_TYPES = frozenset({"var"})


@cache
def _ts_language() -> TSLanguage:
    """The tree-sitter Java grammar, loaded on first use."""
    return TSLanguage(tree_sitter_java.language())


# A Parser holds mutable state, so each thread gets its own (created on first use).
_local = threading.local()


def _parser() -> Parser:
    parser: Parser | None = getattr(_local, "parser", None)
    if parser is None:
        parser = Parser(_ts_language())
        _local.parser = parser
    return parser


def _decode(data: bytes) -> str:
    """UTF-8 text, or latin-1 for legacy files (latin-1 decodes any byte string)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


@dataclass(frozen=True)
class _TypeScope:
    """What a method needs to know about the types enclosing it."""

    container: str
    """Enclosing type names joined by dots."""
    type_params: frozenset[str]
    """Type variables declared by the enclosing types (not class references)."""
    junit3: bool
    """The innermost type is a class extending ``TestCase``."""
    record_params: Node | None = None
    """The record header's ``formal_parameters``, for compact constructors."""
    scan: str = "tests"
    """Whose bodies to scan for calls, type references and tokens: ``none``, ``tests`` or ``all``."""


def parse_java(source: bytes, scan: str = "tests") -> ParsedFile:
    """Parses a Java compilation unit and returns its methods and declared types.

    Calls, type references and tokens are filled for test methods (``scan="tests"``),
    every method (``"all"``) or none (``"none"``: the body scan is most of the
    parsing cost; :func:`scan_java_method` does it later for the few that need it).

    Raises :class:`~miner.errors.SourceSyntaxError` (with ``.line`` set, 1-based)
    when tree-sitter reports an ERROR or MISSING node.
    """
    tree = _parser().parse(source)
    root = tree.root_node
    if root.has_error:
        line = _first_error_line(root)
        raise SourceSyntaxError(f"syntax error at line {line}", line=line)

    methods: list[MethodInfo] = []
    classes: list[str] = []
    top = _TypeScope(container="", type_params=frozenset(), junit3=False, scan=scan)
    for child in root.named_children:
        if child.type in _TYPE_DECLARATIONS:
            _walk_type(source, child, top, methods, classes)
        elif child.type == "method_declaration":
            # Java 21+ implicitly declared classes allow methods at the top level.
            methods.append(_method_info(source, child, top))
    units = _numbered([m for m in methods if m.unit != "method"])
    return ParsedFile(
        methods=tuple(m for m in methods if m.unit == "method"), classes=tuple(classes), fields=units
    )


def _numbered(units: list[MethodInfo]) -> tuple[MethodInfo, ...]:
    """Units with unique keys: a class's second ``static {}`` block is ``Outer.<static>#2``."""
    seen: dict[str, int] = {}
    out = []
    for unit in units:
        seen[unit.key] = seen.get(unit.key, 0) + 1
        count = seen[unit.key]
        out.append(unit if count == 1 else dataclasses.replace(unit, key=f"{unit.key}#{count}"))
    return tuple(out)


_SCAN_PREFIX = b"record __Scan() {\n"


def scan_java_method(text: str) -> MethodScan:
    """Calls, type references and tokens of one method's source, parsed on its own.

    The method is wrapped in a record body (where methods, constructors and compact
    constructors are all allowed); a snippet that does not parse yields what tree-sitter
    recovered.
    """
    source = _SCAN_PREFIX + text.encode("utf-8", errors="surrogateescape") + b"\n}\n"
    root = _parser().parse(source).root_node
    decl = _first_method(root)
    if decl is None:
        return frozenset(), frozenset(), ()
    calls, type_refs, tokens = _scan_body(source, decl, _type_param_names(decl))
    return frozenset(calls), frozenset(type_refs), tuple(tokens)


def _first_method(root: Node) -> Node | None:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in _METHOD_DECLARATIONS:
            return node
        stack.extend(reversed(node.children))
    return None


def _first_error_line(root: Node) -> int:
    """1-based line of the first ERROR or MISSING node in document order."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            return node.start_point.row + 1
        # Only subtrees that contain an error can lead to one.
        stack.extend(reversed([c for c in node.children if c.has_error or c.is_missing]))
    return root.start_point.row + 1  # not reached when root.has_error


def _walk_type(
    source: bytes, decl: Node, outer: _TypeScope, methods: list[MethodInfo], classes: list[str]
) -> None:
    """Records a type declaration's name and methods, then its nested types, in source order."""
    name = _field_text(decl, "name")
    container = f"{outer.container}.{name}" if outer.container else name
    classes.append(container)
    scope = _TypeScope(
        container=container,
        type_params=outer.type_params | _type_param_names(decl),
        junit3=decl.type == "class_declaration" and _extends_test_case(decl),
        record_params=(decl.child_by_field_name("parameters") if decl.type == "record_declaration" else None),
        scan=outer.scan,
    )
    body = decl.child_by_field_name("body")
    if body is not None:
        _walk_members(source, body, scope, methods, classes)


def _walk_members(
    source: bytes, body: Node, scope: _TypeScope, methods: list[MethodInfo], classes: list[str]
) -> None:
    for member in body.named_children:
        if member.type in _METHOD_DECLARATIONS:
            methods.append(_method_info(source, member, scope))
        elif member.type in _TYPE_DECLARATIONS:
            _walk_type(source, member, scope, methods, classes)
        elif member.type in _MEMBER_BODIES:  # enum_body_declarations
            _walk_members(source, member, scope, methods, classes)
        elif member.type == "enum_constant":
            _walk_enum_constant(source, member, scope, methods, classes)
        elif member.type == "field_declaration":
            _walk_field_initializers(source, member, scope, methods, classes)
            methods += _field_units(source, member, scope)
        elif member.type in ("static_initializer", "block"):
            methods.append(
                _unit(source, member, scope, "<static>" if member.type == "static_initializer" else "<init>")
            )


def _walk_field_initializers(
    source: bytes, field: Node, scope: _TypeScope, methods: list[MethodInfo], classes: list[str]
) -> None:
    """Methods of anonymous classes assigned to fields, ``X = new Adapter() { ... }``, under ``Outer.X``.

    Such adapters are common (Gson's ``TypeAdapters``) and belong to no method.
    """
    for declarator in field.named_children:
        if declarator.type != "variable_declarator":
            continue
        value = declarator.child_by_field_name("value")
        if value is None or value.type != "object_creation_expression":
            continue
        body = next((c for c in value.named_children if c.type == "class_body"), None)
        if body is not None:
            _walk_anonymous(source, body, scope, _field_text(declarator, "name"), methods, classes)


def _field_units(source: bytes, field: Node, scope: _TypeScope) -> list[MethodInfo]:
    """A field declaration as one unit per name it declares (``Outer.NAME``), its whole text each;
    not one initialized with an anonymous class."""
    return [
        _unit(source, field, scope, _field_text(declarator, "name"))
        for declarator in field.named_children
        if declarator.type == "variable_declarator" and not _anonymous_class(declarator)
    ]


def _anonymous_class(declarator: Node) -> bool:
    """``X = new Adapter() { … }``: its methods are units of their own (``Outer.X.read``)."""
    value = declarator.child_by_field_name("value")
    return value is not None and any(c.type == "class_body" for c in value.named_children)


def _unit(source: bytes, node: Node, scope: _TypeScope, name: str) -> MethodInfo:
    """Code outside methods (a field, an initializer block) as a unit ``parse_java`` lists apart."""
    return MethodInfo(
        key=f"{scope.container}.{name}" if scope.container else name,
        name=name,
        container=scope.container,
        start_line=node.start_point.row + 1,
        end_line=node.end_point.row + 1,
        source=_decode(source[node.start_byte : node.end_byte]),
        is_test=False,
        unit="field",
    )


def _walk_enum_constant(
    source: bytes, constant: Node, scope: _TypeScope, methods: list[MethodInfo], classes: list[str]
) -> None:
    """Methods of a constant-specific body, ``A { void f() {} }``, under ``Enum.A``.

    The body is an anonymous class, so it is not added to ``classes``; but it is
    not inside any method either, and different constants may override the same
    method, hence the constant name in the container.
    """
    body = constant.child_by_field_name("body")
    if body is not None:
        _walk_anonymous(source, body, scope, _field_text(constant, "name"), methods, classes)


def _walk_anonymous(
    source: bytes,
    body: Node,
    scope: _TypeScope,
    name: str,
    methods: list[MethodInfo],
    classes: list[str],
) -> None:
    """Members of an anonymous class body that belongs to no method, under ``Outer.name``."""
    inner = _TypeScope(
        container=f"{scope.container}.{name}", type_params=scope.type_params, junit3=False, scan=scope.scan
    )
    _walk_members(source, body, inner, methods, classes)


def _method_info(source: bytes, decl: Node, scope: _TypeScope) -> MethodInfo:
    name = _field_text(decl, "name")
    if decl.type == "compact_constructor_declaration":
        params = scope.record_params
    else:
        params = decl.child_by_field_name("parameters")
    param_types = _parameter_types(params) if params is not None else []
    qualified = f"{scope.container}.{name}" if scope.container else name
    is_test = _is_test(decl, scope, param_types)
    # The body scan (the costly part) serves test methods only: linking and refactoring checks.
    if scope.scan == "all" or (is_test and scope.scan == "tests"):
        type_params = scope.type_params | _type_param_names(decl)
        calls, type_refs, tokens = _scan_body(source, decl, type_params)
    else:
        calls, type_refs, tokens = set(), set(), []
    return MethodInfo(
        key=f"{qualified}({','.join(param_types)})",
        name=name,
        container=scope.container,
        start_line=decl.start_point.row + 1,
        end_line=decl.end_point.row + 1,
        source=_decode(source[decl.start_byte : decl.end_byte]),
        is_test=is_test,
        calls=frozenset(calls),
        type_refs=frozenset(type_refs),
        tokens=tuple(tokens),
    )


# --- signatures ---------------------------------------------------------------------


def _parameter_types(params: Node) -> list[str]:
    """The declared types of a ``formal_parameters`` node, normalized for keys."""
    types: list[str] = []
    for param in params.named_children:
        if param.type == "formal_parameter":
            type_node = param.child_by_field_name("type")
            if type_node is None:
                continue
            text = _render_type(type_node)
            # C-style array declarators, ``int xs[]``, belong to the type.
            dims = param.child_by_field_name("dimensions")
            if dims is not None:
                text += _render_dimensions(dims)
            types.append(text)
        elif param.type == "spread_parameter":
            # ``@A final String... rest``: modifiers, the type, ``...``, a declarator.
            type_node = next(
                (
                    c
                    for c in param.named_children
                    if c.type not in ("modifiers", "variable_declarator", *_ANNOTATIONS)
                    and c.type not in _COMMENTS
                ),
                None,
            )
            if type_node is not None:
                types.append(_render_type(type_node) + "...")
        # receiver_parameter (``Foo this``) is not part of the signature; comments skip.
    return types


def _render_type(node: Node) -> str:
    """A type as written, without whitespace, annotations or generic arguments."""
    kind = node.type
    if kind == "generic_type":
        base = next(c for c in node.named_children if c.type != "type_arguments")
        return _render_type(base)
    if kind == "scoped_type_identifier":
        parts = [
            _render_type(c)
            for c in node.named_children
            if c.type not in _ANNOTATIONS and c.type not in _COMMENTS
        ]
        return ".".join(parts)
    if kind == "array_type":
        element = node.child_by_field_name("element")
        dims = node.child_by_field_name("dimensions")
        text = _render_type(element) if element is not None else ""
        return text + (_render_dimensions(dims) if dims is not None else "")
    if kind == "annotated_type":
        rest = [c for c in node.named_children if c.type not in _ANNOTATIONS]
        return _render_type(rest[-1]) if rest else ""
    return "".join(_node_text(node).split())


def _render_dimensions(dims: Node) -> str:
    # ``dimensions`` may carry annotations (``int @A []``); only the brackets count.
    return "[]" * sum(1 for c in dims.children if c.type == "[")


def _type_param_names(decl: Node) -> frozenset[str]:
    """Names of the type variables a class or method declares, ``<T, U extends X>``."""
    params = decl.child_by_field_name("type_parameters")
    if params is None:
        return frozenset()
    names: set[str] = set()
    for param in params.named_children:
        if param.type == "type_parameter":
            ident = next((c for c in param.named_children if c.type == "type_identifier"), None)
            if ident is not None:
                names.add(_node_text(ident))
    return frozenset(names)


# --- test detection ------------------------------------------------------------------


def _is_test(decl: Node, scope: _TypeScope, param_types: list[str]) -> bool:
    modifiers = _modifiers(decl)
    if modifiers is not None:
        for child in modifiers.named_children:
            if child.type in _ANNOTATIONS:
                name_node = child.child_by_field_name("name")
                if name_node is not None and _simple_name(name_node) in _TEST_ANNOTATIONS:
                    return True
    # JUnit 3: public void testXxx() in a TestCase subclass.
    if not scope.junit3 or decl.type != "method_declaration" or param_types:
        return False
    return_type = decl.child_by_field_name("type")
    return (
        _field_text(decl, "name").startswith("test")
        and return_type is not None
        and return_type.type == "void_type"
        and modifiers is not None
        and any(c.type == "public" for c in modifiers.children)
    )


def _modifiers(decl: Node) -> Node | None:
    return next((c for c in decl.children if c.type == "modifiers"), None)


def _extends_test_case(class_decl: Node) -> bool:
    superclass = class_decl.child_by_field_name("superclass")
    if superclass is None:
        return False
    type_node = next((c for c in superclass.named_children if c.type not in _COMMENTS), None)
    return type_node is not None and _simple_name(type_node) == "TestCase"


# --- body scan -----------------------------------------------------------------------


def _scan_body(
    source: bytes, decl: Node, type_params: frozenset[str]
) -> tuple[set[str], set[str], list[str]]:
    """Calls, type references and tokens of a declaration, in one pass.

    Iterative rather than recursive: long expression chains (string concatenations)
    make trees deeper than Python's recursion limit.
    """
    calls: set[str] = set()
    type_refs: set[str] = set()
    tokens: list[str] = []
    # (node, qualifier): qualifier is True for the parts of a scoped type name
    # before its last identifier (``java`` and ``util`` in ``java.util.List``).
    stack: list[tuple[Node, bool]] = [(decl, False)]
    while stack:
        node, qualifier = stack.pop()
        kind = node.type
        if kind in _COMMENTS:
            continue
        if kind in _ATOMIC_TOKENS or node.child_count == 0:
            tokens.append(_decode(source[node.start_byte : node.end_byte]))
            if kind == "type_identifier" and not qualifier:
                type_refs.add(_node_text(node))
            continue

        if kind == "scoped_type_identifier":
            if not qualifier:
                type_refs.add(_simple_name(node))
            qualifier = True
        elif kind == "type_arguments":
            qualifier = False  # ``Outer<Foo>.Inner``: Foo is a reference of its own
        elif kind == "method_invocation":
            _add_if_named(calls, node.child_by_field_name("name"))
            _add_class_like_receiver(type_refs, node.child_by_field_name("object"))
        elif kind == "field_access":
            _add_class_like_receiver(type_refs, node.child_by_field_name("object"))
        elif kind == "object_creation_expression":
            type_node = node.child_by_field_name("type")
            if type_node is not None:
                calls.add(_simple_name(type_node))
        elif kind == "method_reference":
            _scan_method_reference(node, calls, type_refs)

        stack.extend((child, qualifier) for child in reversed(node.children))
    return calls, type_refs - type_params - _NOT_TYPES, tokens


def _scan_method_reference(node: Node, calls: set[str], type_refs: set[str]) -> None:
    """``Foo::bar`` calls ``bar``; ``Foo::new`` calls the constructor ``Foo``."""
    children = [c for c in node.children if c.type not in _COMMENTS]
    if len(children) < 2:
        return
    target, member = children[0], children[-1]
    if member.type == "new":
        if target.type != "array_type":  # ``int[]::new`` creates an array, calls nothing
            name = _simple_name(target)
            calls.add(name)
            type_refs.add(name)
    elif member.type == "identifier":
        calls.add(_node_text(member))
        # Type-shaped targets are type_identifiers, found by the walk; a plain
        # identifier target might be a variable, so it needs the class-name shape.
        _add_class_like_receiver(type_refs, target)


def _add_class_like_receiver(type_refs: set[str], receiver: Node | None) -> None:
    """Adds ``Calc`` for ``Calc.add(1, 2)`` / ``pkg.Calc.X``: the receiver looks like a class."""
    if receiver is None:
        return
    if receiver.type == "identifier":
        name = _node_text(receiver)
    elif receiver.type == "field_access":
        field = receiver.child_by_field_name("field")
        if field is None or field.type != "identifier":
            return
        name = _node_text(field)
    else:
        return
    if _looks_like_class(name):
        type_refs.add(name)


def _looks_like_class(name: str) -> bool:
    # Capitalized, but not an ALL_CAPS constant such as LOG or INSTANCE.
    return name[:1].isupper() and not (len(name) > 1 and name.isupper())


def _add_if_named(names: set[str], node: Node | None) -> None:
    if node is not None:
        names.add(_node_text(node))


# --- small node helpers --------------------------------------------------------------


def _node_text(node: Node) -> str:
    text = node.text
    return _decode(text) if text is not None else ""


def _field_text(node: Node, field: str) -> str:
    child = node.child_by_field_name(field)
    return _node_text(child) if child is not None else ""


def _simple_name(node: Node) -> str:
    """The last identifier of a (possibly qualified, generic or array) name or type."""
    kind = node.type
    if kind in ("scoped_identifier", "scoped_type_identifier"):
        named = [c for c in node.named_children if c.type not in _ANNOTATIONS]
        return _simple_name(named[-1]) if named else _node_text(node)
    if kind == "generic_type":
        base = next((c for c in node.named_children if c.type != "type_arguments"), None)
        return _simple_name(base) if base is not None else _node_text(node)
    if kind == "field_access":
        field = node.child_by_field_name("field")
        return _node_text(field) if field is not None else _node_text(node)
    if kind == "array_type":
        element = node.child_by_field_name("element")
        return _simple_name(element) if element is not None else _node_text(node)
    if kind == "annotated_type":
        rest = [c for c in node.named_children if c.type not in _ANNOTATIONS]
        return _simple_name(rest[-1]) if rest else _node_text(node)
    return _node_text(node)


JAVA = Language(
    name="java",
    suffixes=(".java",),
    scan=scan_java_method,
    test_globs=(
        "src/test/**",
        "**/src/test/**",
        "*Test.java",
        "*Tests.java",
        "Test*.java",
        "*IT.java",
        "*TestCase.java",
    ),
    parse=parse_java,
    build_files=("pom.xml", "mvnw"),
)
"""The Java language (a row of :data:`miner.languages.LANGUAGES`)."""
