"""A Python cross cell runs a copy of the test file under another name: a failure that is that
name's alone is no verdict.

attrs 75723b7720 (2025) made a generation task of ``test_normalized_unicode_attr_args``, which
expects ``repr(C(1))`` to start ``<tests.test_make.ü object``. On the old code it failed only
because NO ran it as ``tests.test_coevo_p20_0_NO__test_make``: the old code made the same repr.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.curation.small import mined_and_curated, records
from tests.gitrepo import GitRepo

NAMING_V1 = "def describe(obj, short=False):\n    return type(obj).__module__ + '.' + type(obj).__name__\n"
NAMING_V2 = (
    "def describe(obj, short=False):\n    if short:\n        return type(obj).__name__\n"
    "    return type(obj).__module__ + '.' + type(obj).__name__\n"
)
TESTS = (
    "from calc.naming import describe\n\n\nclass Point:\n    pass\n\n\n"
    "def test_full():\n    assert describe(Point()) == 'tests.test_naming.Point'\n\n\n"
    "def test_short():\n    assert describe(Point(), short=True) == 'Point'\n"
)


def test_a_failure_on_the_old_code_that_is_the_copys_names_is_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = GitRepo(tmp_path / "calc")
    repo.commit("base", "2024-05-01T10:00:00+00:00", {
        "requirements.txt": "# pytest only\n",
        "calc/__init__.py": "",
        "calc/naming.py": NAMING_V1,
        "tests/__init__.py": "",
        "tests/test_other.py": "def test_nothing():\n    assert True\n",
    })  # fmt: skip
    repo.commit(
        "change", "2024-05-02T10:00:00+00:00", {"calc/naming.py": NAMING_V2, "tests/test_naming.py": TESTS}
    )
    found = records(mined_and_curated(repo, tmp_path, monkeypatch, "python"))
    full, short = found["test_full"], found["test_short"]
    # On the old code, under its own name, test_full passes: the old describe gave the same.
    assert str(full.cells["NO"]["outcome"]) == "fail"
    assert "tests.test_coevo_" in full.cells["NO"]["message"]
    assert (str(full.label), str(full.drop_reason)) == ("dropped", "depends_on_file_name")
    assert full.detail.startswith("NO fail, and it fails on its own revision too under the copy's file name")
    # Its failure names the copy too, but the new code under the same name passes: genuine.
    assert "tests.test_coevo_" in short.cells["NO"]["message"]
    assert (str(short.label), short.drop_reason) == ("test_generation", None)
