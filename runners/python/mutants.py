"""Python's mutants: Cosmic Ray's operators make the mutants of the focal functions' lines (on the
host: no project code runs there); :meth:`runners.python.pytest_tool.PytestTool.mutation` runs
the tests once per mutant, each written over its module in a judge tree of the mutation phase's
own (the shared worktree is never changed)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# PIT's default mutators, in Python: one replacement per operator, as PIT's MATH and
# NEGATE_CONDITIONALS do, rather than Cosmic Ray's every-operator-by-every-other (11 mutants per ``+``).
PYTHON_OPERATORS = (
    *(f"core/ReplaceComparisonOperator_{a}_{b}" for a, b in (
        ("Lt", "LtE"), ("LtE", "Lt"), ("Gt", "GtE"), ("GtE", "Gt"),  # CONDITIONALS_BOUNDARY
        ("Eq", "NotEq"), ("NotEq", "Eq"), ("Lt", "GtE"), ("LtE", "Gt"), ("Gt", "LtE"), ("GtE", "Lt"),
        ("Is", "IsNot"), ("IsNot", "Is"),  # NEGATE_CONDITIONALS
    )),
    *(f"core/ReplaceBinaryOperator_{a}_{b}" for a, b in (
        ("Add", "Sub"), ("Sub", "Add"), ("Mul", "Div"), ("Div", "Mul"), ("FloorDiv", "Mul"), ("Mod", "Mul"),
        ("Pow", "Mul"), ("BitAnd", "BitOr"), ("BitOr", "BitAnd"), ("BitXor", "BitAnd"),
        ("LShift", "RShift"), ("RShift", "LShift"),  # MATH
    )),
    "core/ReplaceUnaryOperator_USub_UAdd",  # INVERT_NEGS
    "core/ReplaceUnaryOperator_Delete_Not",
    "core/AddNot",
    "core/ReplaceTrueWithFalse",  # TRUE_RETURNS, FALSE_RETURNS and boolean conditions
    "core/ReplaceFalseWithTrue",
    "core/ReplaceAndWithOr",
    "core/ReplaceOrWithAnd",
    "core/NumberReplacer",
    "core/ZeroIterationForLoop",
    "core/ReplaceBreakWithContinue",
    "core/ReplaceContinueWithBreak",
)  # fmt: skip


@dataclass(frozen=True)
class PythonMutant:
    """One mutated version of a focal function's module."""

    file: str
    function: str
    line: int
    operator: str
    occurrence: int
    source: bytes
    """The whole module, mutated."""
    statement: int | None = None
    """The first line of the innermost statement holding it: the line coverage.py reports as
    run when the mutated code runs (None when unknown, or in a def's or class's header)."""


def python_mutants(focal: Iterable[dict], sources: dict[str, bytes]) -> list[PythonMutant]:
    """Cosmic Ray's mutants (:data:`PYTHON_OPERATORS`) on the lines of task focal functions.

    A module that is not UTF-8 or does not parse gets none; a mutant that does not compile is
    left out (PIT's non-viable mutants are not counted either).
    """
    import cosmic_ray.plugins
    from cosmic_ray.ast import ast_nodes, get_ast
    from cosmic_ray.mutating import mutate_code

    spans: dict[str, list[tuple[int, int, str]]] = {}
    for entry in focal:
        if entry.get("start") is not None and entry["file"] in sources:
            spans.setdefault(entry["file"], []).append(
                (int(entry["start"]), int(entry["end"]), entry["method"].split("(")[0])
            )
    mutants = []
    for path, ranges in sorted(spans.items()):
        try:
            code = sources[path].decode("utf-8")
            module = get_ast(code)
        except (UnicodeDecodeError, SyntaxError, ValueError):
            continue
        nodes = list(ast_nodes(module))
        statement_of = _statement_lines(code)
        for name in PYTHON_OPERATORS:
            operator = cosmic_ray.plugins.get_operator(name)()
            positions = [start for node in nodes for start, _ in operator.mutation_positions(node)]
            for occurrence, (line, _column) in enumerate(positions):
                function = next((f for start, end, f in ranges if start <= line <= end), None)
                if function is None:
                    continue
                mutated = mutate_code(code, operator, occurrence)
                if mutated is None or mutated == code:
                    continue
                try:
                    compile(mutated, path, "exec", dont_inherit=True)
                except (SyntaxError, ValueError):
                    continue
                mutants.append(PythonMutant(path, function, line, name.removeprefix("core/"), occurrence,
                                            mutated.encode("utf-8"), statement_of.get(line)))  # fmt: skip
    return mutants


def _statement_lines(code: str) -> dict[int, int]:
    """Each line's innermost enclosing statement's first line (an ``if``'s or loop's header
    lines map to its own first line; a def's or class's header lines to none); empty when
    this Python cannot parse the module."""
    import ast

    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return {}
    statements = [node for node in ast.walk(tree) if isinstance(node, ast.stmt)]
    spans = sorted(
        ((node.lineno, node.end_lineno or node.lineno) for node in statements),
        key=lambda span: span[1] - span[0],
        reverse=True,
    )
    lines: dict[int, int] = {}
    for start, end in spans:  # widest first, so inner statements overwrite outer ones
        for number in range(start, end + 1):
            lines[number] = start
    # A def's or class's header (decorators, defaults, annotations) runs at import, outside any
    # test's coverage context, yet what it computes is used by the tests: no line to go by.
    for node in statements:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            for number in range(first, node.body[0].lineno):
                lines.pop(number, None)
    return lines
