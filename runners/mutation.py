"""Mutation scores on focal methods.

Java: PIT runs from its command-line jar (see :meth:`runners.java.maven.MavenTool.mutation`); its
``mutations.xml`` is read here (no parser exists on PyPI). Its jars and their dependencies are
resolved once with Maven into the tool cache; images carry them.

Python: Cosmic Ray's operators make the mutants of the focal functions' lines (on the host: no
project code runs there), and :meth:`runners.python.pytest_tool.PytestTool.mutation` runs the tests
once per mutant, the mutant served by an import hook so the shared worktree is never changed.

Each mutant records which scored tests detected it, and a *control run* (the scored tests once
more on the unmutated code, in the same place, after the mutants) catches tests that pass only
once: a test that no longer passes gets credit for no mutant (:func:`after_control_run`).
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from tasks import InfrastructureError

from .java.tools import PIT_JUNIT5_VERSION, PIT_VERSION, pit_pom, tools_dir
from .results import UnreadableReport
from .sandbox.base import ExecResult

DETECTED = frozenset({"KILLED", "TIMED_OUT", "MEMORY_ERROR", "RUN_ERROR"})
"""PIT's statuses of a mutant the tests noticed."""
_PACKAGE = re.compile(rb"^\s*package\s+([\w.]+)\s*;", re.MULTILINE)
_UNIQUE_ID_SEGMENT = re.compile(r"\[([\w-]+):([^\]]*)\]")
_METHOD_OF_CLASS = re.compile(r"^(?:.*\.)?([\w$]+)(?:\[.*\])?\(([\w.$]+)\)$")
"""JUnit 4's description of a test: ``adds(demo.CalcTest)``, ``addsZero[0](demo.AddZeroTest)``."""


class PitUnavailable(InfrastructureError):
    """PIT's jars could not be resolved."""


@dataclass(frozen=True)
class FocalMethod:
    """A focal method as PIT names it."""

    file: str
    class_name: str
    """The binary name of its class (``pkg.Outer$Inner``)."""
    method: str
    """Its simple name (``<init>`` for a constructor)."""
    start: int
    end: int
    siblings: tuple[str, ...] = ()
    """The simple names of every method of its class (to leave the others out)."""


@dataclass(frozen=True)
class Mutant:
    class_name: str
    method: str
    line: int
    status: str
    mutator: str
    description: str
    tests_run: int | None = None
    """How many tests ran against it (PIT's ``numberOfTestsRun``; None when not reported)."""
    killing_tests: tuple[str, ...] = ()
    """The scored tests that detected it, by coevo's ids (``pkg.Class#method``, pytest node ids);
    empty when none did or it was not run."""
    ident: str = ""
    """PIT's identity of the mutant (class, method and descriptor, mutator, instruction indexes),
    as its report and its export write it (:func:`export_identity`); empty for Python."""
    asserted_by: tuple[str, ...] = ()
    """Those of ``killing_tests`` whose own check failed under it: an assertion of the test
    framework, or an exception the test's own code raised (not one that escaped from the code
    under test, nor a timeout). PIT cannot tell: :meth:`runners.java.maven.MavenTool.mutation` runs
    the tests again to find them; what no one found is none."""

    @property
    def evidence(self) -> tuple[str, ...]:
        """The tests this mutant's detection shows to check the focal code
        (:mod:`runners.scoring.success`)."""
        return self.asserted_by if self.detected else ()

    @property
    def detected(self) -> bool:
        """Whether the tests noticed it. PIT's ``RUN_ERROR`` with no test run is not: the minion
        had none of the tests its coverage phase mapped to the mutant, which happens when that
        phase ran the whole test class although PIT was asked for some of its methods (JUnit 4
        classes under the JUnit 5 plugin). Such a mutant is not covered by the tests scored."""
        if self.status == "RUN_ERROR" and self.tests_run == 0:
            return False
        return self.status in DETECTED


@dataclass(frozen=True)
class MutationResult:
    mutants: tuple[Mutant, ...]
    message: str = ""
    log: ExecResult | None = None
    complete: bool = True
    """False when mutants of the focal methods may exist that were not measured (PIT wrote no
    report, time ran out): no mutant then does not mean that the focal methods have none."""
    unstable: tuple[str, ...] = ()
    """Scored tests that did not pass the control run (see :func:`after_control_run`)."""

    @property
    def score(self) -> float | None:
        """The share of mutants detected (None when there was none)."""
        if not self.mutants:
            return None
        return sum(m.detected for m in self.mutants) / len(self.mutants)


def parse_mutations(report: bytes, scored: Sequence[str] = ()) -> list[Mutant]:
    """The mutants of a PIT ``mutations.xml``, with the tests that detected each.

    ``scored`` are the ids of the tests PIT was given (``pkg.Class#method``); PIT's names of
    tests (:func:`pit_test_id`) are matched to them. A full matrix (``--fullMutationMatrix``)
    names every killing test; a mutant detected with none named (``TIMED_OUT``: the minion was
    killed) was detected by each test that covers it and is not listed as succeeding (each
    scored test when PIT lists no covering test), as a Python timeout is.
    """
    try:
        return _mutants(ET.fromstring(report), scored)
    except (ET.ParseError, ValueError, TypeError) as exc:
        raise UnreadableReport(f"PIT's report is unreadable ({type(exc).__name__}: {exc})") from None


def _mutants(root: ET.Element, scored: Sequence[str]) -> list[Mutant]:
    mutants = []
    for node in root.iter("mutation"):

        def text(tag: str, node: ET.Element = node) -> str:
            found = node.find(tag)
            return (found.text or "") if found is not None else ""

        def tests(tag: str) -> tuple[str, ...]:
            names = [name for name in text(tag).split("|") if name]
            return tuple(sorted({_scored_id(pit_test_id(name), scored) for name in names}))

        mutant = Mutant(
            class_name=text("mutatedClass"),
            method=text("mutatedMethod"),
            line=int(text("lineNumber") or 0),
            status=node.get("status", ""),
            mutator=text("mutator").rsplit(".", 1)[-1],
            description=text("description"),
            tests_run=int(ran) if (ran := node.get("numberOfTestsRun")) else None,
            ident=_identity(
                text("mutatedClass"),
                text("mutatedMethod"),
                text("methodDescription"),
                text("mutator"),
                [int(index.text or "") for index in node.iter("index")],
            ),
        )
        killers = tests("killingTests") or tests("killingTest")
        if mutant.detected and not killers:
            succeeding = set(tests("succeedingTests"))
            killers = tuple(t for t in tests("coveringTests") or tuple(scored) if t not in succeeding)
        mutants.append(dataclasses.replace(mutant, killing_tests=killers if mutant.detected else ()))
    return mutants


def _identity(class_name: str, method: str, descriptor: str, mutator: str, indexes: Sequence[int]) -> str:
    return f"{class_name}.{method}{descriptor}|{mutator}|{','.join(map(str, indexes))}"


_EXPORTED = re.compile(
    r"location=Location \[clazz=(?P<cls>[^,\]]+), method=(?P<method>[^,\]]+), "
    r"methodDesc=(?P<desc>[^\]]+)\], indexes=\[(?P<indexes>[\d, ]*)\], mutator=(?P<mutator>[^\]]+)\]"
)


def export_identity(details: bytes) -> str:
    """The identity (:attr:`Mutant.ident`) of a mutant PIT exported, from its ``details.txt``
    (``MutationDetails [id=MutationIdentifier [location=Location [clazz=demo.Calc, method=add,
    methodDesc=(II)I], indexes=[5], mutator=…MathMutator], …]``); empty when it is not that."""
    found = _EXPORTED.search(details.decode("utf-8", errors="replace"))
    if found is None:
        return ""
    indexes = [int(part) for part in found["indexes"].replace(" ", "").split(",") if part]
    return _identity(found["cls"], found["method"], found["desc"], found["mutator"], indexes)


def pit_test_id(name: str) -> str:
    """coevo's id (``pkg.Class#method``, nested classes joined by ``$``) of a test as PIT's
    report names it; the name itself when it is not recognised.

    Through the JUnit 5 plugin PIT names a test by its class and JUnit unique id:
    ``demo.CalcTest.[engine:junit-jupiter]/[class:demo.CalcTest]/[method:adds()]``,
    ``…/[test-template:addsZero(int)]/[test-template-invocation:#1]`` (parameterized),
    ``…/[engine:junit-vintage]/[runner:demo.CalcTest]/[test:adds(demo.CalcTest)]`` (JUnit 4);
    PIT's own JUnit 4 support by the description: ``demo.CalcTest.adds(demo.CalcTest)``.
    """
    segments = [(kind, unquote(value)) for kind, value in _UNIQUE_ID_SEGMENT.findall(name)]
    if not segments:
        found = _METHOD_OF_CLASS.match(name)
        return f"{found.group(2)}#{found.group(1)}" if found else name
    class_name, method = name.split(".[", 1)[0], ""
    for kind, value in segments:
        if kind in ("class", "runner"):
            class_name = value
        elif kind == "nested-class":
            class_name += "$" + value
        elif kind in ("method", "test-template", "test-factory"):
            method = value.split("(")[0]
        elif kind == "test" and (found := _METHOD_OF_CLASS.match(value)):
            method, class_name = found.group(1), found.group(2)
    if not method:  # another engine: its last segment names the test
        method = segments[-1][1].split("(")[0]
    return f"{class_name}#{method}"


def _scored_id(test: str, scored: Sequence[str]) -> str:
    """The scored id naming the same test (``a.Outer.Inner#m`` for ``a.Outer$Inner#m``)."""
    same = test.replace("$", ".")
    return next((t for t in scored if t.replace("$", ".") == same), test)


def after_control_run(
    result: MutationResult, tests: Sequence[str], passed: Collection[str]
) -> MutationResult:
    """``result`` once the scored ``tests`` ran again on the unmutated code after the mutants
    (the control run), ``passed`` being those that passed it.

    A test that passes its first run and fails every later one (it keeps state in a file) makes
    every mutant look killed. A test that did not pass the control run gets credit for no
    mutant: its kills are dropped, a mutant no other test detected counts as ``SURVIVED`` (a
    detected mutant naming no test was detected by all of them), and the message names it.
    """
    unstable = tuple(t for t in tests if t not in passed)
    if not unstable:
        return result
    mutants = []
    for mutant in result.mutants:
        if mutant.detected:
            kept = tuple(t for t in mutant.killing_tests or tests if t not in unstable)
            status = mutant.status if kept else "SURVIVED"
            asserted = tuple(t for t in mutant.asserted_by if t in kept)
            mutant = dataclasses.replace(mutant, killing_tests=kept, status=status, asserted_by=asserted)
        mutants.append(mutant)
    names = ", ".join(_test_name(t) for t in unstable)
    note = (
        f"{names} did not pass again on the unmutated code after the mutants (the control run): "
        f"no mutant counts as detected by {'it' if len(unstable) == 1 else 'them'}"
    )
    message = "; ".join(filter(None, [result.message, note]))
    return dataclasses.replace(result, mutants=tuple(mutants), message=message, unstable=unstable)


def _test_name(test: str) -> str:
    """A test's method name: the same in every copy of its file coevo runs."""
    return test.rsplit("::", 1)[-1].rsplit("#", 1)[-1]


def only_these_tests(source: bytes, language: str, names: Iterable[str]) -> bytes:
    """``source`` (a test file) without the test methods not named in ``names``.

    PIT is given the scored methods of a test class, but its coverage phase runs the whole
    class when it holds JUnit 4 tests, and maps mutants to tests its mutation phase then lacks.
    A class holding only the scored tests avoids that, and the time of the others.
    """
    from miner.languages import get_language

    keep = set(names)
    parsed = get_language(language).parse(source, scan="none")
    lines = source.decode("utf-8", errors="surrogateescape").splitlines(keepends=True)
    drop = sorted(
        (m for m in parsed.methods if m.is_test and m.name not in keep), key=lambda m: -m.start_line
    )
    for method in drop:
        lines[method.start_line - 1 : method.end_line] = []
    return "".join(lines).encode("utf-8", errors="surrogateescape")


def java_focal_methods(focal: Iterable[dict], sources: dict[str, bytes]) -> list[FocalMethod]:
    """PIT's names for task focal methods (``{"file", "method", "start", "end"}``) of Java files."""
    from miner.languages import get_language

    java = get_language("java")
    found = []
    for entry in focal:
        source = sources.get(entry["file"])
        if source is None or entry.get("start") is None:
            continue
        package = _PACKAGE.search(source)
        prefix = package.group(1).decode() + "." if package else ""
        qualified = entry["method"].split("(")[0]
        container, _, name = qualified.rpartition(".")
        outer = container or Path(entry["file"]).stem
        simple_class = outer.rsplit(".", 1)[-1]
        parsed = java.parse(source, scan="none")
        methods = [m for m in parsed.methods if m.container == container]
        siblings = tuple(sorted({"<init>" if m.name == simple_class else m.name for m in methods}))
        class_name = prefix + outer.replace(".", "$")
        if container and container not in parsed.classes:
            # An anonymous class (``Outer.FIELD`` holds ``new Adapter() {...}``): javac numbers
            # it (``Outer$13``), so PIT gets every nested class of the declared one; the focal
            # lines still pick the mutants.
            declared = container
            while declared and declared not in parsed.classes:
                declared = declared.rpartition(".")[0]
            class_name = prefix + (declared or Path(entry["file"]).stem).replace(".", "$") + "$*"
        method = "<init>" if name == simple_class else name
        if entry.get("unit", "method") != "method":
            # A field's initializer and a static block compile into the class initializer (static)
            # or the constructors (instance).
            text = source.decode("utf-8", errors="replace").splitlines()
            declared = " ".join(text[int(entry["start"]) - 1 : int(entry["end"])])
            static = name == "<static>" or re.search(r"\bstatic\b", declared) is not None
            method = "<clinit>" if static else "<init>"
        found.append(
            FocalMethod(
                file=entry["file"],
                class_name=class_name,
                method=method,
                start=int(entry["start"]),
                end=int(entry["end"]),
                siblings=siblings,
            )
        )
    return found


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


def pit_jars(cache: Path | None = None) -> list[Path]:
    """PIT's command line, its JUnit 5 plugin and their dependencies, resolved once on this host."""
    folder = (cache or tools_dir()) / f"pit-{PIT_VERSION}"
    done = folder / ".complete"
    if not done.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        pom = folder / "pom.xml"
        pom.write_text(pit_pom())
        result = subprocess.run(
            [
                "mvn",
                "-B",
                "-q",
                "-f",
                str(pom),
                "dependency:copy-dependencies",
                f"-DoutputDirectory={folder}",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            tail = (result.stdout + result.stderr).strip().splitlines()
            raise PitUnavailable(f"cannot resolve PIT {PIT_VERSION}: {tail[-1] if tail else 'mvn failed'}")
        done.write_text(f"{PIT_VERSION} {PIT_JUNIT5_VERSION}\n")
    return sorted(folder.glob("*.jar"))
