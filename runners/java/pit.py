"""PIT's part of mutation: the focal methods as PIT names them, PIT's jars (resolved once with
Maven into the tool cache; images carry them) and its ``mutations.xml``, read here (no parser
exists on PyPI). PIT runs from its command-line jar: :meth:`runners.java.maven.MavenTool.mutation`."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from tasks import InfrastructureError

from ..mutation import Mutant
from ..results import UnreadableReport
from .tools import PIT_JUNIT5_VERSION, PIT_VERSION, pit_pom, tools_dir

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
