"""Classification of one candidate from its matrix: the ARCHITECTURE.md table, as a pure function.

Checks run in a fixed order and the first that applies decides: a run that timed out or
disagreed with itself says nothing about the change, then the new test must pass on the new
code, the old test on the old code, the test must execute changed code, and that change must
be more than a refactoring. What is left gets its class.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tasks import DropReason, Label, TestChangeKind, Track

from .matrix import FLAKY

FAILING = frozenset({"fail", "error", "compile_error", "absent", "xfail"})
"""Outcomes that count as "the test does not pass" in a discriminating cell (an expected failure
ran and failed; a skipped test says nothing, and a cell that must pass asks for ``pass`` itself)."""
TRACKS = {Label.TEST_GENERATION: Track.GENERATION, Label.TEST_UPDATE_POSITIVE: Track.UPDATE}
"""The classes that become tasks, and their tracks; the other classes are kept as records."""
TRACK_OF_KIND = {TestChangeKind.INSERTED: Track.GENERATION, TestChangeKind.UPDATED: Track.UPDATE}
"""The track a candidate of each kind can become a task of; an unchanged test becomes none (at
best a negative record, ``test_update_negative``)."""
DEFAULT_KINDS = (TestChangeKind.INSERTED, TestChangeKind.UPDATED)
"""The kinds curation takes unless asked for all: those that can become tasks."""


@dataclass(frozen=True)
class Verdict:
    label: Label
    reason: DropReason | None = None
    detail: str = ""

    @staticmethod
    def drop(reason: DropReason, detail: str) -> Verdict:
        return Verdict(Label.DROPPED, reason, detail)


def cells_for(kind: TestChangeKind) -> tuple[str, ...]:
    """The cells a candidate needs: an inserted test has no old version; an unchanged one is its own."""
    if kind == TestChangeKind.INSERTED:
        return ("NO", "NN")
    if kind == TestChangeKind.UPDATED:
        return ("OO", "ON", "NO", "NN")
    return ("OO", "NN")


def classify(
    kind: TestChangeKind,
    cells: Mapping[str, str],
    has_focal: bool,
    coverage_measured: bool,
    deps_refactoring: bool = False,
    coverage_improved: bool = False,
    on_test_code: frozenset[str] = frozenset(),
    name_bound: frozenset[str] = frozenset(),
) -> Verdict:
    """The label (or drop) of a candidate whose cells ran.

    ``cells`` maps each cell of :func:`cells_for` to its outcome; ``has_focal`` says whether
    a changed production method was found (by coverage, or by static links when coverage
    measured nothing); ``deps_refactoring`` that every focal method only changed by refactoring;
    ``coverage_improved`` that the new test covers production lines the old one did not (ON);
    ``on_test_code`` names the cells whose failure names test code that changed in the pair
    (:mod:`runners.scoring.causes`): such a failure says nothing about the production change.
    ``name_bound`` names the cross cells (NO, ON) whose test also fails on its own revision run
    as the cross cell's copy, under another file name: their failure may be that name's.
    """
    needed = {cell: cells.get(cell, "not_run") for cell in cells_for(kind)}
    for cell, outcome in needed.items():
        if outcome == "timeout":
            return Verdict.drop(DropReason.TIMEOUT, f"{cell} timed out")
    for cell, outcome in needed.items():
        if outcome == FLAKY:
            return Verdict.drop(DropReason.FLAKY, f"{cell} gave different outcomes on reruns")
    if needed["NN"] != "pass":
        return Verdict.drop(DropReason.NEW_ON_NEW_NOT_PASS, f"NN {needed['NN']}")
    if kind != TestChangeKind.INSERTED and needed["OO"] != "pass":
        return Verdict.drop(DropReason.OLD_ON_OLD_NOT_PASS, f"OO {needed['OO']}")
    if not has_focal:
        if coverage_measured:
            return Verdict.drop(DropReason.NO_FOCAL_CODE, "the test executes no changed production method")
        return Verdict.drop(DropReason.NO_COVERAGE, "no coverage measured and no static link")
    if deps_refactoring:
        return Verdict.drop(DropReason.DEPS_REFACTORING_ONLY, "the focal methods changed only by refactoring")
    discriminating = "NO" if kind == TestChangeKind.INSERTED else "ON"
    if discriminating in on_test_code and needed.get(discriminating) in FAILING:
        return Verdict.drop(
            DropReason.OLD_FAILS_ON_TEST_CODE,
            f"{discriminating} {needed[discriminating]} on test code that changed with it",
        )
    for cell in ("ON", "NO"):
        if cell in name_bound and needed.get(cell) in FAILING:
            return Verdict.drop(
                DropReason.DEPENDS_ON_FILE_NAME,
                f"{cell} {needed[cell]}, and it fails on its own revision too under the copy's file name",
            )
    if kind == TestChangeKind.INSERTED:
        if needed["NO"] in FAILING:
            return Verdict(Label.TEST_GENERATION, detail=f"NO {needed['NO']}")
        return Verdict(Label.TEST_GENERATION_PASS_OLD, detail=f"NO {needed['NO']}")
    if kind == TestChangeKind.UPDATED:
        if needed["ON"] not in FAILING:
            improved = Label.TEST_REFINEMENT_COV_IMPROVE, Label.TEST_REFINEMENT_NO_COV_IMPROVE
            return Verdict(improved[0] if coverage_improved else improved[1], detail=f"ON {needed['ON']}")
        if needed["NO"] == "pass":
            return Verdict(Label.TEST_UPDATE_PASS_OLD, detail=f"ON {needed['ON']}, NO pass")
        return Verdict(Label.TEST_UPDATE_POSITIVE, detail=f"ON {needed['ON']}, NO {needed['NO']}")
    return Verdict(Label.TEST_UPDATE_NEGATIVE, detail="passes before and after its focal code changed")
