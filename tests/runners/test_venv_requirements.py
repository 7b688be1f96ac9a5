"""Requirement files installed in a venv's staging copy: ``-e .`` lines made plain.

A dated install gets the setuptools of the revision's day, and setuptools before 64 (2022) has no
PEP 660 hook, so ``pip install -e .`` fails where ``pip install .`` works (requests'
``requirements-dev.txt`` of 2022 holds ``-e .[socks]``). coevo installs the project itself plain
anyway (its modules are stripped afterwards, the worktree is imported instead).
"""

from __future__ import annotations

from pathlib import Path

from runners.python.venvs import _plain_requirement_files


def test_local_editables_in_requirement_files_are_made_plain(tmp_path: Path) -> None:
    copy = tmp_path / "project"
    (copy / "requirements").mkdir(parents=True)
    (copy / "requirements-dev.txt").write_text("-e .[socks]\npytest>=3\n-r requirements/extra.txt\n")
    (copy / "requirements" / "extra.txt").write_text(
        "--editable=./\n-e git+https://example.org/x.git#egg=x\n"
    )
    outside = tmp_path / "outside.txt"
    outside.write_text("-e .\n")
    _plain_requirement_files(copy, (("-r", "requirements-dev.txt"), ("-r", "../outside.txt")))
    assert (copy / "requirements-dev.txt").read_text() == ".[socks]\npytest>=3\n-r requirements/extra.txt\n"
    # A remote editable stays: only the project's own folder is installed plain.
    assert (copy / "requirements" / "extra.txt").read_text() == "./\n-e git+https://example.org/x.git#egg=x\n"
    assert outside.read_text() == "-e .\n"  # never written outside the copy
