"""The miner on a hand-built Java/Maven history: every commit's outcome and candidate, one by one."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import select

from miner import MineRequest, mine, production_diff
from tasks import (
    Candidate,
    FocalLink,
    MethodChange,
    MinedCommit,
    Repository,
    RevisionPair,
    RunStatus,
    Skip,
    Store,
    open_store,
)
from tests.miner.histories import ARITH_TEST, CALC, CALC_TEST, java_history

SHAPES_TEST = "src/test/java/demo/ShapesTest.java"
GREETER_TEST = "src/test/java/demo/GreeterTest.java"


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, dict[str, str]]:
    root = tmp_path_factory.mktemp("java")
    repo = java_history(root / "calc")
    store = open_store(root / "coevo.db")
    run = mine(store, MineRequest(location=str(repo.path)))
    assert run.status == RunStatus.COMPLETED
    return store, repo.shas


def _label(shas: dict[str, str], sha: str) -> str:
    return next(label for label, value in shas.items() if value == sha)


def test_candidates_are_exactly_the_expected_ones(mined: tuple[Store, dict[str, str]]) -> None:
    store, shas = mined
    with store.session() as s:
        rows = s.exec(select(Candidate, RevisionPair).join(RevisionPair)).all()
    found = {
        (_label(shas, pair.rev2), cand.test_file, cand.test_method, cand.change_kind) for cand, pair in rows
    }
    assert found == {
        ("inserted test", CALC_TEST, "CalculatorTest.testSubtract()", "inserted"),
        ("updated test", CALC_TEST, "CalculatorTest.testAdd()", "updated"),
        ("prod then tests 2h: tests", CALC_TEST, "CalculatorTest.testDivide()", "inserted"),
        ("feature: max", CALC_TEST, "CalculatorTest.testMax()", "inserted"),
        ("rename test class", ARITH_TEST, "ArithmeticTest.testMax()", "updated"),
        ("non-utf8 source", GREETER_TEST, "GreeterTest.greets()", "inserted"),
        ("syntax error", ARITH_TEST, "ArithmeticTest.testAbs()", "inserted"),
        ("modern java", SHAPES_TEST, "ShapesTest.describesShapes()", "inserted"),
        ("modern java", SHAPES_TEST, "ShapesTest.circleArea()", "inserted"),
        (
            "unchanged test, changed code",
            ARITH_TEST,
            "ArithmeticTest.testSubtractNegative()",
            "inserted",
        ),
        (
            "unchanged test, changed code",
            ARITH_TEST,
            "ArithmeticTest.testSubtract()",
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
        "feature: max": "paired",
        "rename test class": "paired",
        "non-utf8 source": "paired",
        "syntax error": "paired",
        "modern java": "paired",
        "unchanged test, changed code": "paired",
    }


def test_pairs_record_revisions_dates_and_span(mined: tuple[Store, dict[str, str]]) -> None:
    store, shas = mined
    with store.session() as s:
        pairs = {_label(shas, p.rev2): p for p in s.exec(select(RevisionPair)).all()}
        repo = Path(s.exec(select(Repository)).one().path)
        # Mining leaves the diff to the pairs that give tasks; the same text, asked for later.
        single_diff = production_diff(s, pairs["updated test"], repo)
    separate = pairs["prod then tests 2h: tests"]
    assert separate.rev1 == shas["docs"]
    assert separate.commits == [shas["prod then tests 2h: prod"], shas["prod then tests 2h: tests"]]
    assert separate.span_seconds == 2 * 3600
    single = pairs["updated test"]
    assert single.rev1 == shas["inserted test"]
    assert single.span_seconds == 0
    assert single.rev2_date is not None and single.rev2_date.tzinfo is not None
    assert single.rev2_date.isoformat() == "2024-03-03T09:00:00+00:00"
    assert single.rev2_utc_offset_minutes == 60
    assert single.rev2_author == "Ada Lovelace <ada@example.org>"
    assert single.production_diff == ""
    assert "Math.addExact" in single_diff
    assert single_diff.startswith(f"diff --git a/{CALC} b/{CALC}\n")
    assert "CalculatorTest" not in single_diff  # production files only
    # The feature branch commit pairs with its own parent, not with the merge.
    assert pairs["feature: max"].rev1 == shas["prod then tests 30h: tests"]


def test_production_changes_and_static_links(mined: tuple[Store, dict[str, str]]) -> None:
    store, shas = mined
    with store.session() as s:
        rows = s.exec(
            select(Candidate, FocalLink, MethodChange)
            .join(FocalLink, FocalLink.candidate_id == Candidate.id)  # type: ignore[arg-type]
            .join(MethodChange, FocalLink.method_change_id == MethodChange.id)  # type: ignore[arg-type]
        ).all()
        changes = s.exec(select(MethodChange, RevisionPair).join(RevisionPair)).all()
    links: dict[str, set[tuple[str, str]]] = {}
    for cand, link, change in rows:
        links.setdefault(cand.test_method, set()).add((change.method, link.provenance))
    assert links["CalculatorTest.testSubtract()"] == {
        ("Calculator.subtract(int,int)", "call"),
        ("Calculator.subtract(int,int)", "naming"),
    }
    assert links["ArithmeticTest.testMax()"] == {("Calculator.max(int,int)", "call")}
    # `new Greeter()` names the class, but the call to greet is the stronger link.
    assert links["GreeterTest.greets()"] == {
        ("Greeter.greet(String)", "call"),
        ("Greeter.greet(String)", "naming"),
    }
    assert ("Shapes.describeAll(List)", "call") in links["ShapesTest.describesShapes()"]
    assert ("Shapes.Circle.Circle(double)", "call") in links["ShapesTest.describesShapes()"]
    assert ("Shapes.Circle.area()", "call") in links["ShapesTest.circleArea()"]
    assert links["ArithmeticTest.testSubtract()"] == {("Calculator.subtract(int,int)", "call")}

    by_commit = {}
    for change, pair in changes:
        by_commit.setdefault(_label(shas, pair.rev2), set()).add((change.method, change.kind))
    assert by_commit["updated test"] == {("Calculator.add(int,int)", "changed")}
    assert by_commit["inserted test"] == {("Calculator.subtract(int,int)", "added")}
    assert by_commit["modern java"] >= {
        ("Shapes.describe(Shape)", "added"),
        ("Shapes.Circle.Circle(double)", "added"),
        ("Shapes.banner()", "added"),
    }
    (add_range,) = [(c.new_start, c.new_end) for c, p in changes if _label(shas, p.rev2) == "updated test"]
    assert add_range == (4, 6)


def test_sources_keep_old_and_new_versions(mined: tuple[Store, dict[str, str]]) -> None:
    store, _ = mined
    with store.session() as s:
        updated = s.exec(select(Candidate).where(Candidate.test_method == "CalculatorTest.testAdd()")).one()
        renamed = s.exec(select(Candidate).where(Candidate.test_method == "ArithmeticTest.testMax()")).one()
        greets = s.exec(select(Candidate).where(Candidate.test_method == "GreeterTest.greets()")).one()
        latin1_pair = s.exec(select(RevisionPair).where(RevisionPair.id == greets.pair_id)).one()
        latin1_diff = production_diff(s, latin1_pair, Path(s.exec(select(Repository)).one().path))
    assert updated.old_source is not None and "assertThrows" not in updated.old_source
    assert "assertThrows" in updated.new_source
    assert updated.old_source.startswith("@Test")
    assert renamed.old_test_file == CALC_TEST
    assert renamed.test_file == ARITH_TEST
    assert greets.old_source is None and greets.old_start is None
    # The latin-1 production file is mined, not skipped: its diff is kept (bytes that are not
    # UTF-8 become U+FFFD in the stored text) and its method is a change of the pair.
    assert "Greeter.java" in latin1_diff
    assert 'return "Caf\ufffd " + name;' in latin1_diff


def test_unparseable_file_is_a_recorded_skip(mined: tuple[Store, dict[str, str]]) -> None:
    store, shas = mined
    with store.session() as s:
        skips = s.exec(select(Skip)).all()
    assert [(_label(shas, k.sha), k.path, k.reason) for k in skips] == [
        ("syntax error", "src/main/java/demo/Broken.java", "syntax_error")
    ]
    assert "line 5" in skips[0].detail


def test_run_counts(mined: tuple[Store, dict[str, str]], tmp_path: Path) -> None:
    store, shas = mined
    from tasks import MiningRun

    with store.session() as s:
        (run,) = s.exec(select(MiningRun)).all()
    non_merge = len(shas) - 1
    assert run.commits_scanned == non_merge
    assert run.test_commits == 12
    assert run.pairs == 9
    assert run.candidates == 11
    assert run.skipped_files == 1
    # docs commits touch neither tests nor production code.
    assert run.commits_selected == non_merge - 2
