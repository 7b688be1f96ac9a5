"""Mutants and mutation results, whatever the language: which scored tests detected each mutant,
and the *control run* (the scored tests once more on the unmutated code, in the same place, after
the mutants), which catches tests that pass only once: a test that no longer passes gets credit
for no mutant (:func:`after_control_run`).

The mutants themselves: Java's from PIT (:mod:`runners.java.pit`), Python's from Cosmic Ray's
operators (:mod:`runners.python.mutants`); :mod:`runners.toolchains` names each language's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from .sandbox.base import ExecResult

DETECTED = frozenset({"KILLED", "TIMED_OUT", "MEMORY_ERROR", "RUN_ERROR"})
"""PIT's statuses of a mutant the tests noticed."""


@dataclass(frozen=True)
class Mutant:
    class_name: str
    method: str
    line: int
    status: str
    mutator: str
    description: str
    tests_run: int | None = None
    """How many tests ran against it (PIT's ``numberOfTestsRun``; None when not reported)."""
    killing_tests: tuple[str, ...] = ()
    """The scored tests that detected it, by coevo's ids (``pkg.Class#method``, pytest node ids);
    empty when none did or it was not run."""
    ident: str = ""
    """PIT's identity of the mutant (class, method and descriptor, mutator, instruction indexes),
    as its report and its export write it (:func:`~runners.java.pit.export_identity`); empty for Python."""
    asserted_by: tuple[str, ...] = ()
    """Those of ``killing_tests`` whose own check failed under it: an assertion of the test
    framework, or an exception the test's own code raised (not one that escaped from the code
    under test, nor a timeout). PIT cannot tell: :meth:`runners.java.maven.MavenTool.mutation` runs
    the tests again to find them; what no one found is none."""

    @property
    def evidence(self) -> tuple[str, ...]:
        """The tests this mutant's detection shows to check the focal code
        (:mod:`runners.scoring.success`)."""
        return self.asserted_by if self.detected else ()

    @property
    def detected(self) -> bool:
        """Whether the tests noticed it. PIT's ``RUN_ERROR`` with no test run is not: the minion
        had none of the tests its coverage phase mapped to the mutant, which happens when that
        phase ran the whole test class although PIT was asked for some of its methods (JUnit 4
        classes under the JUnit 5 plugin). Such a mutant is not covered by the tests scored."""
        if self.status == "RUN_ERROR" and self.tests_run == 0:
            return False
        return self.status in DETECTED


@dataclass(frozen=True)
class MutationResult:
    mutants: tuple[Mutant, ...]
    message: str = ""
    log: ExecResult | None = None
    complete: bool = True
    """False when mutants of the focal methods may exist that were not measured (PIT wrote no
    report, time ran out): no mutant then does not mean that the focal methods have none."""
    unstable: tuple[str, ...] = ()
    """Scored tests that did not pass the control run (see :func:`after_control_run`)."""

    @property
    def score(self) -> float | None:
        """The share of mutants detected (None when there was none)."""
        if not self.mutants:
            return None
        return sum(m.detected for m in self.mutants) / len(self.mutants)


def after_control_run(
    result: MutationResult, tests: Sequence[str], passed: Collection[str]
) -> MutationResult:
    """``result`` once the scored ``tests`` ran again on the unmutated code after the mutants
    (the control run), ``passed`` being those that passed it.

    A test that passes its first run and fails every later one (it keeps state in a file) makes
    every mutant look killed. A test that did not pass the control run gets credit for no
    mutant: its kills are dropped, a mutant no other test detected counts as ``SURVIVED`` (a
    detected mutant naming no test was detected by all of them), and the message names it.
    """
    unstable = tuple(t for t in tests if t not in passed)
    if not unstable:
        return result
    mutants = []
    for mutant in result.mutants:
        if mutant.detected:
            kept = tuple(t for t in mutant.killing_tests or tests if t not in unstable)
            status = mutant.status if kept else "SURVIVED"
            asserted = tuple(t for t in mutant.asserted_by if t in kept)
            mutant = dataclasses.replace(mutant, killing_tests=kept, status=status, asserted_by=asserted)
        mutants.append(mutant)
    names = ", ".join(_test_name(t) for t in unstable)
    note = (
        f"{names} did not pass again on the unmutated code after the mutants (the control run): "
        f"no mutant counts as detected by {'it' if len(unstable) == 1 else 'them'}"
    )
    message = "; ".join(filter(None, [result.message, note]))
    return dataclasses.replace(result, mutants=tuple(mutants), message=message, unstable=unstable)


def _test_name(test: str) -> str:
    """A test's method name: the same in every copy of its file coevo runs."""
    return test.rsplit("::", 1)[-1].rsplit("#", 1)[-1]
