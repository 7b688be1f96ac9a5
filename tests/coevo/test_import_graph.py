"""No import circles among coevo's own modules.

The graph holds every import of a coevo package's module, at any depth (inside functions, under
``TYPE_CHECKING``), read from the sources with :mod:`ast`: an edge from a module to each of its
packages' modules it names. A package loaded on first use (``lazy_loader`` and an
``__init__.pyi``) imports the modules its stub names when one of its names is used: the stub's
imports are the package's edges."""

from __future__ import annotations

import ast
import graphlib
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("coevo", "curation", "miner", "runners", "tasks", "web")


def module_files(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Every module of ``packages`` under ``root`` by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _sources(path: Path) -> list[Path]:
    """A module's source; a package's ``__init__.py`` and, when it has one, its stub."""
    stub = path.with_suffix(".pyi")
    return [path, stub] if path.name == "__init__.py" and stub.is_file() else [path]


def _named(module: str, path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The dotted names an import statement in ``module`` loads: modules, or names in a module
    (``from p import x``: ``p.x``, the module ``p/x.py`` if there is one, else a name of ``p``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join(filter(None, [*package, node.module or ""]))
    return [f"{base}.{alias.name}" for alias in node.names]


def import_graph(root: Path, packages: Iterable[str]) -> dict[str, set[str]]:
    """Module → the modules of ``packages`` it imports (itself aside)."""
    modules = module_files(root, packages)
    graph: dict[str, set[str]] = {module: set() for module in modules}
    for module, path in modules.items():
        for source in _sources(path):
            for node in ast.walk(ast.parse(source.read_bytes(), filename=str(source))):
                if not isinstance(node, ast.Import | ast.ImportFrom):
                    continue
                for name in _named(module, path, node):
                    while name and name not in modules:  # an attribute of a module: that module
                        name = name.rpartition(".")[0]
                    if name and name != module:
                        graph[module].add(name)
    return graph


def circle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle of ``graph`` (``[a, b, a]``: a imports b, b imports a), or ``[]``."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return []


def test_coevo_has_no_import_circle() -> None:
    graph = import_graph(ROOT, PACKAGES)
    assert len(graph) > 60, sorted(graph)  # the walk found coevo's modules
    assert "runners.java.maven" in graph["runners"]  # the stub's imports are the lazy package's edges
    found = circle(graph)
    assert not found, "an import circle: " + " -> ".join(reversed(found))


MAY_USE = {
    "tasks": set(),
    "miner": {"tasks"},
    "runners": {"tasks", "miner"},
    "curation": {"tasks", "miner", "runners"},
    "web": {"tasks", "curation", "runners"},
    "coevo": {"tasks", "miner", "runners", "curation", "web"},
}
"""Which part may import which (docs/architecture.md's table)."""


def test_each_part_uses_only_the_parts_below_it() -> None:
    graph = import_graph(ROOT, PACKAGES)
    used = {(m, t) for m, targets in graph.items() for t in targets if m.split(".")[0] != t.split(".")[0]}
    wrong = sorted(f"{m} -> {t}" for m, t in used if t.split(".")[0] not in MAY_USE[m.split(".")[0]])
    assert not wrong, wrong
    rows = [
        line
        for line in (ROOT / "docs" / "architecture.md").read_text().splitlines()
        if line.startswith("| `")
    ]
    for part, parts in MAY_USE.items():
        row = next(line for line in rows if line.startswith(f"| `{part}` | "))  # the doc says the same
        assert {p for p in PACKAGES if f"`{p}`" in row.split("|")[2]} == parts, row


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_a_circle_is_found_at_any_depth_and_through_a_package(tmp_path: Path) -> None:
    """The check fails on a circle made by a deferred import, one under ``TYPE_CHECKING``, one
    through a lazy package's stub, and one through a package's ``__init__``; not on a chain."""
    chain = {"p/__init__.py": "", "p/a.py": "from .b import x\n", "p/b.py": "import p.c\n", "p/c.py": ""}
    _write(tmp_path, chain)
    assert circle(import_graph(tmp_path, ["p"])) == []
    cases = {
        "deferred": {"p/c.py": "def f():\n    from p.a import y\n"},
        "typing": {"p/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import y\n"},
        "stub": {"p/__init__.pyi": "from .a import x\n", "p/c.py": "from p import x\n"},
        "package": {"p/__init__.py": "from .a import x\n", "p/c.py": "from . import x\n"},
    }
    for name, change in cases.items():
        case = tmp_path / name
        _write(case, chain | change)
        found = circle(import_graph(case, ["p"]))
        assert "p.a" in found, (name, found)
