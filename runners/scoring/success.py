"""Strict success: a successful test method must also detect a mutant of the focal code.

Success (TestEvo-Bench's definition, kept for comparison) asks a method to pass on the new code,
to run a line of the changed (focal) code and, for generation, not to pass on the old code. A
method that calls the new code and asserts nothing meets all of that. StrictSuccess also asks
it to notice a change of that code, as TestGRAD's discriminating tests do. It fails closed:
strictness needs positive evidence, never the absence of a measurement. The checks, in order:

1. a method that is no success is no strict success;
2. detection is not ``asked`` of a method whose developer's version detects no focal mutant in
   the same environment (the gold check measures it, in coevo's own run of the gold): a change
   no mutant operator reaches (a new ``warnings.warn`` call) leaves nothing to detect, and every
   success of it is strict;
3. otherwise nothing measured is nothing shown: no mutation result, zero mutants, a run that is
   not complete (PIT wrote no report, time ran out) is no strict success, whatever the reason;
4. it is strict when the method is the evidence of a detected mutant
   (:attr:`~runners.mutation.Mutant.evidence`): its own check failed under the mutant — an
   exception that escapes from the code under test or a timeout detects nothing — after the
   control run took the credit away from tests that do not pass twice.
"""

from __future__ import annotations

from ..mutation import MutationResult


def strict_success(success: bool, test: str, mutation: MutationResult | None, asked: bool = True) -> bool:
    """Whether ``test`` (a runnable id: ``pkg.Class#method``, a pytest node id), a ``success``,
    detects a mutant of the focal methods in ``mutation`` (None: nothing was measured);
    ``asked``: whether the developer's own method detects one (rule 2)."""
    if not success:
        return False
    if not asked:
        return True
    if mutation is None or not mutation.complete:
        return False
    return any(test in mutant.evidence for mutant in mutation.mutants)
