"""Strict success: a successful test method must also detect a mutant of the focal code.

Success (TestEvo-Bench's definition, kept for comparison) asks a method to pass on the new code,
to run a line of the changed (focal) code and, for generation, not to pass on the old code. A
method that calls the new code and asserts nothing meets all of that. StrictSuccess also asks
it to notice a change of that code, as TestGRAD's discriminating tests do. The checks, in order:

1. a method that is no success is no strict success;
2. when the focal methods have no mutant (nothing was measured: no mutant operator applies, or
   coevo could not name the focal methods for the mutation tool), every success is strict: there
   is nothing to detect;
3. when mutants may exist that were not measured and none was (PIT wrote no report), it is no
   strict success: nothing shows that the method detects anything;
4. otherwise it is strict when the method is among the killing tests of a detected mutant, after
   the control run took the credit away from tests that do not pass twice;
5. but detection is not ``asked`` of a method whose developer's version detects no focal mutant
   in the same environment (the gold check measures it): a change no mutant operator reaches
   (a new ``warnings.warn`` call) leaves nothing to detect, and every success of it is strict.
"""

from __future__ import annotations

from .mutation import MutationResult


def strict_success(success: bool, test: str, mutation: MutationResult | None, asked: bool = True) -> bool:
    """Whether ``test`` (a runnable id: ``pkg.Class#method``, a pytest node id), a ``success``,
    detects a mutant of the focal methods in ``mutation`` (None: they have no mutant); ``asked``:
    whether the developer's own method detects one (rule 5)."""
    if not success:
        return False
    if not asked or mutation is None or (not mutation.mutants and mutation.complete):
        return True
    return any(mutant.detected and test in mutant.killing_tests for mutant in mutation.mutants)
