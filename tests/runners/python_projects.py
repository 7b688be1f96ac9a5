"""Tiny real Python projects for the runner tests: a src-layout pyproject package and its tests."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "calc"
version = "0.1"

[project.optional-dependencies]
test = ["pytest"]

[tool.setuptools.packages.find]
where = ["src"]
"""

CALC_INIT = """\
from importlib.metadata import version

__version__ = version("calc")
"""

CALC_NEW_TEST = """\
from calc.core import mul


def test_mul():
    assert mul(2, 3) == 6
"""

CALC_CORE = """\
def add(a, b):
    return a + b


def sub(a, b):
    result = a - b
    return result
"""

CALC_TESTS = """\
import pytest

import calc
from calc.core import add, sub


def test_add():
    assert add(1, 2) == 3


def test_fail():
    assert add(1, 1) == 3


@pytest.fixture
def broken():
    raise RuntimeError("fixture broke")


def test_error(broken):
    pass


@pytest.mark.parametrize("a, b", [(1, 2), (2, 3)])
def test_param(a, b):
    assert add(a, b) == a + b


class TestCalc:
    def test_sub(self):
        assert sub(3, 1) == 2


@pytest.mark.skip(reason="not today")
def test_skipped():
    pass


def test_version_from_metadata():
    assert calc.__version__ == "0.1"
"""


def write(root: Path, files: Mapping[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root
