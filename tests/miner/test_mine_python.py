"""The miner on a hand-built Python/pytest history: every commit's outcome and candidate."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlmodel import select

from miner import MineRequest, mine
from tasks import (
    Candidate,
    FocalLink,
    MethodChange,
    MinedCommit,
    RevisionPair,
    Skip,
    Store,
    open_store,
)
from tests import cli
from tests.gitrepo import GitRepo
from tests.miner.histories import ARITH_PY_TEST, CORE_TEST, python_history

STACK_TEST = "tests/test_stack.py"


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, dict[str, str]]:
    root = tmp_path_factory.mktemp("python")
    repo = python_history(root / "calc")
    store = open_store(root / "coevo.db")
    run = mine(store, MineRequest(location=str(repo.path)))
    assert run.status == "completed"
    return store, repo.shas


def _label(shas: dict[str, str], sha: str) -> str:
    return next(label for label, value in shas.items() if value == sha)


def test_language_is_detected(mined: tuple[Store, dict[str, str]]) -> None:
    store, _ = mined
    from tasks import Repository

    with store.session() as s:
        (repo,) = s.exec(select(Repository)).all()
    assert (repo.name, repo.language) == ("calc", "python")


def test_candidates_are_exactly_the_expected_ones(mined: tuple[Store, dict[str, str]]) -> None:
    store, shas = mined
    with store.session() as s:
        rows = s.exec(select(Candidate, RevisionPair).join(RevisionPair)).all()
    found = {
        (_label(shas, pair.rev2), cand.test_file, cand.test_method, cand.change_kind) for cand, pair in rows
    }
    assert found == {
        ("inserted test", CORE_TEST, "test_subtract", "inserted"),
        ("updated test", CORE_TEST, "test_add", "updated"),
        ("prod then tests 2h: tests", STACK_TEST, "TestStack.test_push", "inserted"),
        ("prod then tests 2h: tests", STACK_TEST, "TestStack.test_pop", "inserted"),
        ("feature: divide", CORE_TEST, "test_divide", "inserted"),
        ("rename test module", ARITH_PY_TEST, "test_divide", "updated"),
        ("non-utf8 source", "tests/test_greet.py", "test_greet", "inserted"),
        ("syntax error", ARITH_PY_TEST, "test_abs_value", "inserted"),
        ("unchanged test, changed code", ARITH_PY_TEST, "test_add_floats", "inserted"),
        (
            "unchanged test, changed code",
            ARITH_PY_TEST,
            "test_add",
            "unchanged_with_changed_dependencies",
        ),
    }
    assert len(rows) == len(found)


def test_every_test_commit_has_its_outcome(mined: tuple[Store, dict[str, str]]) -> None:
    store, shas = mined
    with store.session() as s:
        outcomes = {_label(shas, m.sha): m.outcome for m in s.exec(select(MinedCommit)).all()}
    assert outcomes == {
        "initial": "root_commit",
        "inserted test": "paired",
        "updated test": "paired",
        "test-only refactor": "no_production_change",
        "prod then tests 2h: tests": "paired",
        "prod then tests 30h: tests": "no_production_change",
        "feature: divide": "paired",
        "rename test module": "paired",
        "non-utf8 source": "paired",
        "syntax error": "paired",
        "unchanged test, changed code": "paired",
    }


def test_pairs_and_links(mined: tuple[Store, dict[str, str]]) -> None:
    store, shas = mined
    with store.session() as s:
        pairs = {_label(shas, p.rev2): p for p in s.exec(select(RevisionPair)).all()}
        rows = s.exec(
            select(Candidate, FocalLink, MethodChange)
            .join(FocalLink, FocalLink.candidate_id == Candidate.id)  # type: ignore[arg-type]
            .join(MethodChange, FocalLink.method_change_id == MethodChange.id)  # type: ignore[arg-type]
        ).all()
    stack = pairs["prod then tests 2h: tests"]
    assert stack.rev1 == shas["test-only refactor"]
    assert stack.span_seconds == 2 * 3600
    assert stack.rev2_utc_offset_minutes == -240
    links: dict[str, set[tuple[str, str]]] = {}
    for cand, link, change in rows:
        links.setdefault(f"{cand.test_file}::{cand.test_method}", set()).add(
            (f"{change.file}::{change.method}", link.provenance)
        )
    assert links[f"{CORE_TEST}::test_subtract"] == {
        ("calc/core.py::subtract", "call"),
        ("calc/core.py::subtract", "naming"),
    }
    push = links[f"{STACK_TEST}::TestStack.test_push"]
    assert ("calc/stack.py::Stack.push", "call") in push
    assert ("calc/stack.py::Stack.push", "naming") in push
    assert ("calc/stack.py::Stack.__init__", "call") in push
    # test_push calls Stack's push and constructor: pop, which it never calls, is not linked.
    assert not any(method == "calc/stack.py::Stack.pop" for method, _ in push)
    # test_arith.py names no module "arith": the unchanged test is linked by its call alone.
    assert links[f"{ARITH_PY_TEST}::test_add"] == {("calc/core.py::add", "call")}


def test_sources_and_renames(mined: tuple[Store, dict[str, str]]) -> None:
    store, _ = mined
    with store.session() as s:
        renamed = s.exec(
            select(Candidate).where(
                Candidate.test_file == ARITH_PY_TEST, Candidate.test_method == "test_divide"
            )
        ).one()
    assert renamed.old_test_file == CORE_TEST
    assert renamed.old_source is not None and "pytest.raises" not in renamed.old_source
    assert "pytest.raises" in renamed.new_source


def test_unparseable_and_undecodable_files_are_recorded_skips(
    mined: tuple[Store, dict[str, str]],
) -> None:
    store, shas = mined
    with store.session() as s:
        skips = s.exec(select(Skip)).all()
    assert sorted((_label(shas, k.sha), k.path, k.reason) for k in skips) == [
        ("syntax error", "calc/broken.py", "syntax_error"),
        ("syntax error", "calc/legacy.py", "syntax_error"),
    ]
    legacy = next(k for k in skips if k.path == "calc/legacy.py")
    assert "utf-8" in legacy.detail.lower()


YAML_LINES = "".join(f"- key{n}: [{n}, {n + 1}]\n  nested{n}: value {n}\n" for n in range(12))


def test_a_side_is_parsed_only_when_its_name_then_is_python(tmp_path: Path) -> None:
    """A ``.yml`` renamed to ``.py`` (git sees a rename: the lines live on in a string) is a new
    Python file, not an old one with a syntax error; a ``.py`` renamed away loses its functions."""
    repo = GitRepo(tmp_path / "renames")
    repo.commit("initial", "2024-05-01T10:00:00+00:00", {
        "calc/core.py": "def double(x):\n    return x + x\n",
        "calc/legacy.py": "def old_helper():\n    return 1\n",
        "tests/data.yml": YAML_LINES,
    })  # fmt: skip
    repo.commit("renames", "2024-05-02T10:00:00+00:00", {
        "calc/core.py": "def double(x):\n    return 2 * x\n",
        "tests/test_data.py": f'from calc.core import double\n\nDATA = """\n{YAML_LINES}"""\n\n\n'
        "def test_double():\n    assert double(2) == 4\n",
    }, renames={"tests/data.yml": "tests/test_data.py", "calc/legacy.py": "calc/legacy.txt"})  # fmt: skip
    status = repo.git("show", "--name-status", "-M", "--format=", "HEAD")
    assert "R" in status.split("tests/data.yml")[0].splitlines()[-1]  # git saw the rename
    store = open_store(tmp_path / "coevo.db")
    mine(store, MineRequest(location=str(repo.path)))
    with store.session() as s:
        candidates = s.exec(select(Candidate)).all()
        changes = s.exec(select(MethodChange)).all()
        skips = s.exec(select(Skip)).all()
    assert skips == []
    assert [(c.test_file, c.old_test_file, c.test_method, c.change_kind) for c in candidates] == [
        ("tests/test_data.py", None, "test_double", "inserted")
    ]
    assert sorted((c.file, c.old_file, c.method, c.kind) for c in changes) == [
        ("calc/core.py", "calc/core.py", "double", "changed"),
        ("calc/legacy.py", "calc/legacy.py", "old_helper", "removed"),
    ]


def test_a_file_that_stays_broken_is_one_skip_row_even_mined_again(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "broken")
    test = "from calc.core import double\n\n\ndef test_double():\n    assert double(2) == 4\n"
    repo.commit("initial", "2024-05-01T10:00:00+00:00", {
        "calc/core.py": "def double(x):\n    return x + x\n", "tests/test_core.py": test,
    })  # fmt: skip
    repo.commit("breaks", "2024-05-02T10:00:00+00:00", {
        "calc/core.py": "def double(x):\n    return 2 * x\n",
        "calc/broken.py": "def broken(:\n    pass\n",
        "tests/test_core.py": test + "\n\ndef test_zero():\n    assert double(0) == 0\n",
    })  # fmt: skip
    repo.commit("still broken", "2024-05-03T10:00:00+00:00", {
        "calc/core.py": "def double(x):\n    return x * 2\n",
        "calc/broken.py": "def broken(:\n    return 1\n",
        "tests/test_core.py": test + "\n\ndef test_zero():\n    assert double(0) == 0 * 2\n",
    })  # fmt: skip
    store = open_store(tmp_path / "coevo.db")

    def skips() -> list[tuple[str, str, str]]:
        with store.session() as s:
            return sorted((_label(repo.shas, k.sha), k.path, k.reason) for k in s.exec(select(Skip)).all())

    # The first run stops before the second break: the second run meets "breaks" again as its
    # pair's old version, in another transaction.
    mine(store, MineRequest(location=str(repo.path), until=datetime(2024, 5, 2, 12, tzinfo=UTC)))
    assert skips() == [("breaks", "calc/broken.py", "syntax_error")]
    mine(store, MineRequest(location=str(repo.path)))
    expected = [
        ("breaks", "calc/broken.py", "syntax_error"),
        ("still broken", "calc/broken.py", "syntax_error"),
    ]
    assert skips() == expected
    mine(store, MineRequest(location=str(repo.path), since=datetime(2024, 4, 1, tzinfo=UTC)))
    assert skips() == expected


_LOUD = "always::SyntaxWarning,always::DeprecationWarning"
"""Warnings a default Python might hide, shown: the test holds on every version."""


def test_parser_warnings_are_recorded_and_never_printed(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "escapes")
    core = "import re\n\n\ndef digits(text):\n    return re.findall('\\d+', text)\n"
    test = "from calc.core import digits\n\n\ndef test_digits():\n    assert digits('a1') == ['1']\n"
    repo.commit("initial", "2024-05-01T10:00:00+00:00", {"calc/core.py": core, "tests/test_core.py": test})
    repo.commit("more", "2024-05-02T10:00:00+00:00", {
        "calc/core.py": core.replace("'\\d+'", "'\\d+|\\w'"),
        "tests/test_core.py": test + "\n\ndef test_word():\n    assert digits('a') == ['a']\n",
    })  # fmt: skip
    db = tmp_path / "coevo.db"
    # PYTHONWARNINGS is read as Python starts: a process of its own (cli.coevo sees it too).
    result = cli.coevo("mine", str(repo.path), "--db", str(db), env={**os.environ, "PYTHONWARNINGS": _LOUD})
    assert result.returncode == 0 and result.stderr == ""
    assert "2 candidates, 0 files skipped" in result.stdout
    with open_store(db).session() as s:
        notes = s.exec(select(Skip)).all()
    assert sorted((_label(repo.shas, k.sha), k.path, k.reason) for k in notes) == [
        ("initial", "calc/core.py", "syntax_warning"),  # the old side of the pair
        ("more", "calc/core.py", "syntax_warning"),
    ]
    assert all(k.detail.startswith("line 5: invalid escape sequence '\\d'") for k in notes)


def test_a_name_bound_both_by_an_assignment_and_a_def_is_one_change(tmp_path: Path) -> None:
    """attrs 2024 (``_compat.py``): ``if NEW: name = lib.name`` / ``else: def name(...)``, added in
    one commit, is one changed unit of the module (the function), not two rows under one name,
    which stopped mining with an integrity error."""
    repo = GitRepo(tmp_path / "twice")
    repo.commit("initial", "2024-05-01T10:00:00+00:00", {
        "calc/core.py": "import sys\n\n\ndef double(x):\n    return x + x\n",
    })  # fmt: skip
    repo.commit("both", "2024-05-02T10:00:00+00:00", {
        "calc/core.py": "import sys\n\nif sys.version_info >= (4,):\n    half = sys.half\nelse:\n\n"
        "    def half(x):\n        return x / 2\n\n\ndef double(x):\n    return x + x\n",
        "tests/test_core.py": "from calc.core import half\n\n\ndef test_half():\n    assert half(4) == 2\n",
    })  # fmt: skip
    store = open_store(tmp_path / "coevo.db")
    assert mine(store, MineRequest(location=str(repo.path))).status == "completed"
    with store.session() as s:
        changes = s.exec(select(MethodChange)).all()
        links = s.exec(select(FocalLink)).all()
    assert sorted((c.file, c.method, c.kind, c.unit) for c in changes) == [
        ("calc/core.py", "half", "added", "method")
    ]
    assert links and {link.method_change_id for link in links} == {changes[0].id}
