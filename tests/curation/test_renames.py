"""A class or module the pair renamed with its file: following the rename is refactoring.

gson 45e5e141b1 (2025) renamed ``$Gson$Types`` to ``GsonTypes`` and nothing else; three tests
that only followed the rename were update tasks (their old versions do not compile on the new
code), and the production methods they run, changed only by the rename, were not seen as
refactored.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from curation.static import is_refactoring, renamed_units
from miner.languages import get_language
from tasks import TestChangeKind
from tests.curation.small import mined_and_curated, records
from tests.gitrepo import GitRepo

JAVA = get_language("java")
GSON = {"$Gson$Types": "GsonTypes"}


@pytest.mark.parametrize(
    ("old", "new", "refactoring"),
    [
        ("Class<?> raw(Type t) { return $Gson$Types.getRawType(t); }",
         "Class<?> raw(Type t) { return GsonTypes.getRawType(t); }", True),
        ('void test() { assertThat(e).hasMessageThat().contains("$Gson$Types$WildcardTypeImpl"); }',
         'void test() { assertThat(e).hasMessageThat().contains("GsonTypes$WildcardTypeImpl"); }', True),
        # the rename is followed, and the method calls something else too
        ("Class<?> raw(Type t) { return $Gson$Types.getRawType(t); }",
         "Class<?> raw(Type t) { return GsonTypes.canonicalize(t); }", False),
        # a class the pair did not rename
        ("Class<?> raw(Type t) { return $Gson$Types.getRawType(t); }",
         "Class<?> raw(Type t) { return OtherTypes.getRawType(t); }", False),
        # only a whole name is renamed, in a string too
        ('String name() { return "My$Gson$Types"; }', 'String name() { return "MyGsonTypes"; }', False),
    ],
)  # fmt: skip
def test_following_a_rename_is_refactoring(old: str, new: str, refactoring: bool) -> None:
    assert is_refactoring(JAVA, old, new, GSON) is refactoring
    if refactoring:
        assert not is_refactoring(JAVA, old, new)  # without knowing the rename, it is a change


REPORT = "from calc import {module}\n\n\ndef summary(w, h):\n    return f'area {{{module}.area(w, h)}}'\n"
TESTS = (
    "from calc import {module}\nfrom calc.report import summary\n\n\n"
    "def test_area():\n    assert {module}.area(2, 3) == 6\n\n\n"
    "def test_summary():\n    assert summary(2, 3) == 'area 6'\n"
)


def test_tests_that_only_follow_a_renamed_module_make_no_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = GitRepo(tmp_path / "calc")
    repo.commit("base", "2024-05-01T10:00:00+00:00", {
        "requirements.txt": "# pytest only\n",
        "calc/__init__.py": "",
        "calc/shapes_util.py": "def area(w, h):\n    return w * h\n",
        "calc/report.py": REPORT.format(module="shapes_util"),
        "tests/test_report.py": TESTS.format(module="shapes_util"),
    })  # fmt: skip
    repo.commit(
        "rename",
        "2024-05-02T10:00:00+00:00",
        {
            "calc/report.py": REPORT.format(module="geometry"),
            "tests/test_report.py": TESTS.format(module="geometry"),
        },
        renames={"calc/shapes_util.py": "calc/geometry.py"},
    )
    lang = get_language("python")
    assert renamed_units(repo.path, repo.shas["base"], repo.shas["rename"], lang) == {
        "shapes_util": "geometry"
    }
    # Every kind: test_summary is an unchanged test of changed code.
    found = records(mined_and_curated(repo, tmp_path, monkeypatch, "python", kinds=tuple(TestChangeKind)))
    # Its old version does not import on the new code, but it changed only by the rename (a
    # lowercase name, as a local's would be, so this held before renames were known).
    assert str(found["test_area"].drop_reason) == "test_refactoring_only"
    # Unchanged, it runs report.summary, which changed only by the rename, in an f-string.
    assert str(found["test_summary"].drop_reason) == "deps_refactoring_only"
