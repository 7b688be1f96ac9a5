"""Packages whose API loads on first use (an ``__init__.pyi`` lists it): every name it lists
is what the package gives, whichever of its modules were imported first, and a command loads
only the stage it runs."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAZY = sorted(path.parent.name for path in ROOT.glob("*/__init__.pyi"))


def _stub_names(package: str) -> dict[str, str]:
    """Each name the stub imports → the module it comes from."""
    tree = ast.parse((ROOT / package / "__init__.pyi").read_text())
    return {
        alias.name: node.module or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def test_the_lazy_packages_are_the_ones_meant() -> None:
    """The tests below run once per stub found: a stub moved or renamed must not leave them empty."""
    assert LAZY == ["coevo", "miner", "runners", "web"]


@pytest.mark.parametrize("package", LAZY)
def test_no_listed_name_is_also_a_module_of_the_package(package: str) -> None:
    """Importing a module binds its name on the package: a function named as its module would
    then be the module, depending on what was imported first."""
    modules = {path.stem for path in (ROOT / package).glob("*.py")} | {
        path.parent.name for path in (ROOT / package).glob("*/__init__.py")
    }
    assert not set(_stub_names(package)) & modules


@pytest.mark.parametrize("package", LAZY)
def test_every_listed_name_is_the_object_its_module_defines(package: str) -> None:
    """Checked in a fresh interpreter, each name asked for after all the package's modules are
    imported (the order most likely to shadow a name)."""
    script = f"""
import importlib, json, pkgutil, sys, types
package = importlib.import_module({package!r})
for module in pkgutil.walk_packages(package.__path__, {package!r} + "."):
    if module.name.endswith(".__main__"):
        continue
    importlib.import_module(module.name)
names = json.loads(sys.argv[1])
wrong = {{name: repr(getattr(package, name)) for name, source in names.items()
          if getattr(package, name) is not getattr(sys.modules[{package!r} + "." + source], name)}}
print(json.dumps({{"wrong": wrong, "all": sorted(package.__all__)}}))
"""
    names = _stub_names(package)
    found = subprocess.run(
        [sys.executable, "-c", script, json.dumps(names)], capture_output=True, text=True, check=True
    )
    result = json.loads(found.stdout)
    assert result["wrong"] == {}
    assert result["all"] == sorted(names)


@pytest.mark.parametrize(
    ("command", "stage", "absent"),
    [
        (
            "tasks",
            "browsing",
            [
                "runners.environments.environment",
                "runners.sandbox.docker_sandbox",
                "miner.mining",
                "curation",
                "web.site",
            ],
        ),
        (
            "export",
            "publishing",
            [
                "runners.environments.environment",
                "runners.sandbox.docker_sandbox",
                "curation",
                "web.site",
                "docker",
            ],
        ),
        ("score", "scoring", ["curation", "web.site", "miner.discovery", "coevo.pipeline"]),
    ],
)
def test_a_command_loads_its_stage_only(command: str, stage: str, absent: list[str]) -> None:
    script = f"""
import json, sys, click
from coevo.cli import app
app.get_command(click.Context(app), {command!r})
print(json.dumps(sorted(sys.modules)))
"""
    found = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded = set(json.loads(found.stdout))
    assert f"coevo.cli.{stage}" in loaded
    assert not {name for name in absent if name in loaded}
