"""Mutation scores on focal methods: PIT's ``mutations.xml``, read here (no parser exists on PyPI).

PIT runs from its command-line jar (see :meth:`runners.maven.MavenTool.mutation`). Its jars
and their dependencies are resolved once with Maven into the tool cache; images carry them.
"""

from __future__ import annotations

import re
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tasks import CoevoError

from .sandbox import ExecResult
from .tools import PIT_JUNIT5_VERSION, PIT_VERSION, tools_dir

DETECTED = frozenset({"KILLED", "TIMED_OUT", "MEMORY_ERROR", "RUN_ERROR"})
"""PIT's statuses of a mutant the tests noticed."""
_PACKAGE = re.compile(rb"^\s*package\s+([\w.]+)\s*;", re.MULTILINE)


class PitUnavailable(CoevoError):
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

    @property
    def detected(self) -> bool:
        return self.status in DETECTED


@dataclass(frozen=True)
class MutationResult:
    mutants: tuple[Mutant, ...]
    message: str = ""
    log: ExecResult | None = None

    @property
    def score(self) -> float | None:
        """The share of mutants detected (None when there was none)."""
        if not self.mutants:
            return None
        return sum(m.detected for m in self.mutants) / len(self.mutants)


def parse_mutations(report: bytes) -> list[Mutant]:
    """The mutants of a PIT ``mutations.xml``."""
    root = ET.fromstring(report)
    mutants = []
    for node in root.iter("mutation"):

        def text(tag: str, node: ET.Element = node) -> str:
            found = node.find(tag)
            return (found.text or "") if found is not None else ""

        mutants.append(
            Mutant(
                class_name=text("mutatedClass"),
                method=text("mutatedMethod"),
                line=int(text("lineNumber") or 0),
                status=node.get("status", ""),
                mutator=text("mutator").rsplit(".", 1)[-1],
                description=text("description"),
            )
        )
    return mutants


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
        methods = [m for m in java.parse(source, scan="none").methods if m.container == container]
        siblings = tuple(sorted({"<init>" if m.name == simple_class else m.name for m in methods}))
        found.append(
            FocalMethod(
                file=entry["file"],
                class_name=prefix + outer.replace(".", "$"),
                method="<init>" if name == simple_class else name,
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
        from .images import PIT, _templates  # the pom the images use

        folder.mkdir(parents=True, exist_ok=True)
        pom = folder / "pom.xml"
        pom.write_text(_templates.get_template("pit-pom.xml.j2").render(**PIT))
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
