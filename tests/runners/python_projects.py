"""Tiny real Python projects for the runner tests: a src-layout pyproject package and its tests."""

from __future__ import annotations

import textwrap
import zipfile
from collections.abc import Mapping
from pathlib import Path

from tests.gitrepo import GitRepo

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


# --- Histories of their time ---------------------------------------------------------------------

TLS_SETUP = """\
from setuptools import setup

setup(
    name="tlsconf",
    version="0.1",
    packages=["tlsconf"],
    python_requires=">=3.6",
    install_requires=["urllib3"],
    extras_require={"test": ["pytest"]},
)
"""

TLS_INIT = """\
from urllib3.util.ssl_ import DEFAULT_CIPHERS


def ciphers():
    return DEFAULT_CIPHERS.split(":")
"""

TLS_TEST = """\
from tlsconf import ciphers


def test_ciphers():
    assert any("ECDHE" in cipher for cipher in ciphers())
"""

TLS_TESTS = ["tests/test_tlsconf.py::test_ciphers"]


def tls_history(path: Path) -> GitRepo:
    """A project of June 2021 that imports ``urllib3.util.ssl_.DEFAULT_CIPHERS`` and leaves urllib3
    unpinned: urllib3 2.0 (April 2023) removed that name, so today's urllib3 breaks it. Declares
    Python 3.6+: its era's newest is 3.9 (3.10 came out in October 2021)."""
    repo = GitRepo(path)
    repo.commit(
        "tls",
        "2021-06-15T10:00:00+02:00",
        {"setup.py": TLS_SETUP, "tlsconf/__init__.py": TLS_INIT, "tests/test_tlsconf.py": TLS_TEST},
    )
    return repo


def src_pyproject(name: str, requires_python: str, tables: str = "") -> str:
    """A setuptools ``pyproject.toml`` of a ``src/`` layout, with more ``tables`` before its
    package finder's."""
    return (
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{name}"\nversion = "0.1"\nrequires-python = "{requires_python}"\n\n'
        f'{tables}[tool.setuptools.packages.find]\nwhere = ["src"]\n'
    )


TICKER_PYPROJECT = src_pyproject("ticker", ">=3.8")

TICKER_TOX = """\
[tox]
envlist = py311, py312

[testenv]
deps =
    pytest
    pytest-asyncio
commands = pytest {posargs}

[pytest]
addopts = --asyncio-mode=strict
"""

TICKER_INIT = """\
import asyncio


async def tick(n):
    await asyncio.sleep(0)
    return n + 1
"""

TICKER_TEST = """\
import pytest

from ticker import tick


@pytest.mark.asyncio
async def test_tick():
    assert await tick(1) == 2
"""

TICKER_TESTS = ["tests/test_ticker.py::test_tick"]


def ticker_history(path: Path) -> GitRepo:
    """A project of March 2024 whose test plugin, pytest-asyncio, is declared only in ``tox.ini``,
    where its ``addopts = --asyncio-mode=strict`` also needs it: without it pytest does not start."""
    repo = GitRepo(path)
    repo.commit(
        "ticker",
        "2024-03-01T12:00:00+00:00",
        {
            "pyproject.toml": TICKER_PYPROJECT,
            "tox.ini": TICKER_TOX,
            "src/ticker/__init__.py": TICKER_INIT,
            "tests/test_ticker.py": TICKER_TEST,
        },
    )
    return repo


GROUPED_PYPROJECT = src_pyproject(
    "grouped",
    ">=3.9",
    "[dependency-groups]\n"
    'runner = ["pytest>=8"]\n'
    """test-deps = [{include-group = "runner"}, 'six; python_version >= "3"', "not a requirement!"]\n"""
    'docs = ["sphinx"]\n\n',
)

GROUPED_TOX = """\
[tox]
env_list = py3{12,13}-tests, docs

[testenv]
dependency_groups =
    tests: test-deps
    docs: docs
commands =
    tests: pytest {posargs}
"""

GROUPED_TESTS = ["tests/test_grouped.py::test_shout"]


def grouped_history(path: Path) -> GitRepo:
    """A project of June 2025 whose test dependency (six) is declared only in a PEP 735
    dependency group, ``test-deps``, which includes another; tox names that group for its
    ``tests`` environments (a factor-conditional line) and another for its docs."""
    repo = GitRepo(path)
    repo.commit(
        "grouped",
        "2025-06-02T12:00:00+00:00",
        {
            "pyproject.toml": GROUPED_PYPROJECT,
            "tox.ini": GROUPED_TOX,
            "src/grouped/__init__.py": "def shout(text):\n    return text.upper()\n",
            "tests/test_grouped.py": (
                "import six\n\nfrom grouped import shout\n\n\n"
                "def test_shout():\n    assert shout(six.text_type('a')) == 'A'\n"
            ),
        },
    )
    return repo


# --- A local package index ----------------------------------------------------------------------

HALVES_DEPENDENCY = "coevo-halves"
"""A distribution only the test's wheel folder has (PyPI has no such name)."""


def write_wheel(folder: Path, version: str, module: str) -> Path:
    """A pure-Python wheel of :data:`HALVES_DEPENDENCY` ``version`` whose module ``halves`` is
    ``module``: what a folder index (``PIP_FIND_LINKS``) serves, with no upload time."""
    folder.mkdir(parents=True, exist_ok=True)
    dist_info = f"coevo_halves-{version}.dist-info"
    files = {
        "halves/__init__.py": module,
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {HALVES_DEPENDENCY}\nVersion: {version}\n",
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: coevo-tests\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = "".join(f"{name},,\n" for name in [*files, f"{dist_info}/RECORD"])
    path = folder / f"coevo_halves-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for name, text in {**files, f"{dist_info}/RECORD": record}.items():
            wheel.writestr(name, text)
    return path


HALVES_1 = "def half(x):\n    return x / 2\n"
HALVES_2 = "def halved(x):\n    return x / 2\n"
"""2.0 renamed ``half``: a breaking release made after the project's commits."""

SPLIT_V1 = """\
from halves import half


def halve(x):
    return half(x)
"""
SPLIT_V2 = (
    SPLIT_V1
    + """

def quarter(x):
    return half(half(x))
"""
)
SPLIT_TEST_V1 = """\
from split import halve


def test_halve():
    assert halve(4) == 2
"""
SPLIT_TEST_V2 = (
    SPLIT_TEST_V1.replace("import halve", "import halve, quarter")
    + """

def test_quarter():
    assert quarter(8) == 2
"""
)


def split_history(path: Path) -> GitRepo:
    """A project of May 2024 that needs :data:`HALVES_DEPENDENCY` unpinned and adds ``quarter``
    with its test (a test-generation task) in its second commit."""
    repo = GitRepo(path)
    requirements = {"requirements.txt": f"{HALVES_DEPENDENCY}\n"}
    repo.commit("halve", "2024-05-01T10:00:00+00:00", {**requirements, "split.py": SPLIT_V1,
                                                       "tests/test_split.py": SPLIT_TEST_V1})  # fmt: skip
    repo.commit("quarter", "2024-05-02T10:00:00+00:00", {"split.py": SPLIT_V2,
                                                         "tests/test_split.py": SPLIT_TEST_V2})  # fmt: skip
    return repo
