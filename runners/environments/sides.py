"""A built revision that runs tests: its own, or another revision's version of a test file.

A *cross* run places the other test file beside the code and compiles just that file (Java:
``javac`` into a folder put first on the classpath; Python: a copy next to the original under
a unique name), so the worktree's own files are never changed and many runs (curation's
matrix cells, scoring an agent's test file) can share one built worktree. How is the language's
toolchain's (:mod:`runners.toolchains`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..buildtools import BuildTool, Coverage, TestRun
from ..mutation import MutationResult
from ..results import Outcome, TestResult
from ..sandbox.base import Sandbox
from ..toolchains import Toolchain, toolchain
from .environment import Environment
from .envspec import EnvSpec
from .pruning import alone


class Side:
    """A built revision of a repository, ready to run tests (network off)."""

    def __init__(
        self,
        environment: Environment,
        spec: EnvSpec,
        worktree: Path,
        repository: Path | None = None,
        judging: bool = False,
    ) -> None:
        """``repository``: the revision's own Maven repository when it is not beside ``worktree``
        (a judge tree is a copy elsewhere of a built worktree); ``judging``: ``worktree`` is a
        judge tree, whose tests run as an unprivileged user of their own."""
        self.environment = environment
        self.spec = spec
        self.worktree = worktree
        self.repository = repository
        self.judging = judging
        self._sandbox: Sandbox | None = None

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = self.environment.sandbox(self.worktree, self.repository, judging=self.judging)
        return self._sandbox

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None

    @property
    def tool(self) -> BuildTool:
        return self.environment.tool

    @property
    def toolchain(self) -> Toolchain:
        """The row of :data:`~runners.toolchains.TOOLCHAINS` that runs its tests."""
        return toolchain(self.spec.language)

    def runs_tests_of(self, test_file: str) -> bool:
        """Whether the module holding ``test_file`` built (a partial Maven build lacks some)."""
        return self.toolchain.runs_tests_of(self, test_file)

    def run(self, ids: Sequence[str], timeout: float, coverage: bool = False) -> TestRun:
        """The revision's own test methods."""
        return self.environment.tool.run_tests(self.sandbox, self.spec, ids, timeout, coverage=coverage)

    def run_cross(
        self,
        test_file: str,
        content: bytes,
        ids: Sequence[str],
        tag: str,
        timeout: float,
        coverage: bool = False,
    ) -> TestRun:
        """``ids`` of ``content`` (another revision's ``test_file``) run on this revision's code.

        Results come back under the ids asked for. When the file does not compile (Java) or import
        (Python) here, each method is run from the file cut down to it (:meth:`_one_by_one`); one
        that still does not gets ``compile_error`` with its first error.
        """
        run = self._run_whole(test_file, content, ids, tag, timeout, coverage)
        failed = [r for r in run.results if r.outcome != Outcome.ABSENT]
        if failed and all(r.outcome == Outcome.COMPILE_ERROR for r in failed):
            return self._one_by_one(test_file, content, run, tag, timeout, coverage)
        return run

    def _run_whole(
        self, test_file: str, content: bytes, ids: Sequence[str], tag: str, timeout: float, coverage: bool
    ) -> TestRun:
        return self.toolchain.run_cross(self, test_file, content, ids, tag, timeout, coverage)

    def mutation_score(
        self,
        test_file: str,
        content: bytes,
        tests: Sequence[str],
        focal: Sequence[dict],
        tag: str,
        timeout: float,
        only_focal: bool = True,
        baseline: TestRun | None = None,
    ) -> MutationResult | None:
        """What ``tests`` (ids of ``content``, another revision's ``test_file``, that
        :meth:`run_cross` ran under ``tag``) make of the focal methods' mutants; None when there
        is nothing to measure (no test, no focal method with a mutant). Mutants name the tests
        that detected them by ``tests``' ids. ``baseline``: that run, with coverage, so Python
        does not run the tests unmutated again.
        ``only_focal=False`` has PIT mutate the focal classes whole (to compare; the result is
        the same)."""
        if not tests:
            return None
        return self.toolchain.mutation(
            self, test_file, content, tests, focal, tag, timeout, only_focal, baseline
        )

    def _one_by_one(
        self, test_file: str, content: bytes, whole: TestRun, tag: str, timeout: float, coverage: bool
    ) -> TestRun:
        """The methods of ``whole`` (the file's run, which did not compile or import here) each run
        from the file cut down to it and what it uses (:func:`~runners.environments.pruning.alone`): a method
        that needs only what this revision has is judged on its own; one that does not keeps its
        error (the file's, when it cannot be cut)."""
        results: list[TestResult] = []
        covered: dict[str, Coverage] = {}
        for index, result in enumerate(whole.results):
            test = result.test
            name = self.toolchain.method_name(test)
            cut = alone(content, self.spec.language, name.split("[", 1)[0])
            if result.outcome != Outcome.COMPILE_ERROR or cut is None or cut == content:
                results.append(result)
                continue
            run = self._run_whole(test_file, cut, [test], f"{tag}_m{index}", timeout, coverage)
            results += [r for r in run.results if r.test == test]
            covered.update(run.coverage)
        return TestRun(tuple(results), covered)
