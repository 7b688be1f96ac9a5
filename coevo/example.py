"""`coevo example DIR`: a tiny Python project with a short real history, to try coevo end to end.

Its commits hold one case each: a new function with its new test (a test-generation task),
a changed behaviour with its repaired test (a test-update task), a test-only refactoring,
and a production change whose tests did not change.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tasks import CoevoError

_AUTHOR = {"GIT_AUTHOR_NAME": "Grace Hopper", "GIT_AUTHOR_EMAIL": "grace@example.org"}
_COMMITTER = {"GIT_COMMITTER_NAME": "Grace Hopper", "GIT_COMMITTER_EMAIL": "grace@example.org"}

_SHAPES_V1 = '''"""Areas of simple shapes."""


def square(side):
    return side * side


def rectangle(width, height):
    return width * height
'''
_SHAPES_V2 = (
    _SHAPES_V1
    + """

def triangle(base, height):
    return base * height / 2
"""
)
_SHAPES_V3 = _SHAPES_V2.replace(
    "def rectangle(width, height):\n    return width * height\n",
    "def rectangle(width, height):\n"
    "    if width < 0 or height < 0:\n"
    '        raise ValueError("negative side")\n'
    "    return width * height\n",
)
_SHAPES_V4 = _SHAPES_V3.replace("    return side * side\n", "    return side**2\n")
_TESTS_V1 = """import pytest

from shapes import rectangle, square


def test_square():
    assert square(3) == 9


def test_rectangle():
    assert rectangle(2, 3) == 6
    assert rectangle(-2, 3) == -6
"""
_TESTS_V2 = (
    _TESTS_V1.replace(
        "from shapes import rectangle, square", "from shapes import rectangle, square, triangle"
    )
    + """

def test_triangle():
    assert triangle(4, 3) == 6
"""
)
_TESTS_V3 = _TESTS_V2.replace(
    "    assert rectangle(-2, 3) == -6\n",
    "    with pytest.raises(ValueError):\n        rectangle(-2, 3)\n",
)
_TESTS_V4 = _TESTS_V3.replace(
    "def test_square():\n    assert square(3) == 9\n",
    "def test_square():\n    area = square(3)\n    assert area == 9\n",
)

_HISTORY = (
    ("Shapes: square and rectangle", "2026-09-01T10:00:00+00:00", _SHAPES_V1, _TESTS_V1),
    ("Add triangle areas", "2026-09-15T10:00:00+00:00", _SHAPES_V2, _TESTS_V2),
    ("Reject negative sides", "2026-10-01T10:00:00+00:00", _SHAPES_V3, _TESTS_V3),
    ("Tidy a test", "2026-10-02T10:00:00+00:00", _SHAPES_V3, _TESTS_V4),
    ("Square with a power", "2026-10-20T10:00:00+00:00", _SHAPES_V4, _TESTS_V4),
)


def write_example(path: Path) -> bool:
    """Creates the example repository at ``path``; False when it is already there.

    ``path`` must not exist, be empty, or hold this example already.
    """
    if path.exists() and any(path.iterdir()):
        if _is_example(path):
            return False
        raise CoevoError(f"{path} exists and is not empty: choose a new folder for the example")
    path.mkdir(parents=True, exist_ok=True)
    _git(path, "init", "-q", "-b", "main")
    (path / "requirements.txt").write_text("# the tests need nothing beyond pytest\n")
    for message, date, shapes, tests in _HISTORY:
        (path / "shapes.py").write_text(shapes)
        (path / "tests").mkdir(exist_ok=True)
        (path / "tests" / "test_shapes.py").write_text(tests)
        _git(path, "add", "-A")
        _git(path, "commit", "-q", "-m", message, date=date)
    return True


def _is_example(path: Path) -> bool:
    command = ["git", "-C", str(path), "log", "--reverse", "--format=%s"]
    log = subprocess.run(command, capture_output=True, text=True, check=False)
    return log.returncode == 0 and log.stdout.splitlines() == [message for message, *_ in _HISTORY]


def _git(path: Path, *args: str, date: str | None = None) -> None:
    env = {**os.environ, **_AUTHOR, **_COMMITTER, "GIT_CONFIG_GLOBAL": os.devnull}
    if date:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    result = subprocess.run(
        ["git", "-C", str(path), *args], env=env, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise CoevoError(f"git {args[0]} failed in {path}: {result.stderr.strip()}")
