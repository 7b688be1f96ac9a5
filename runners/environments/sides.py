"""A built revision that runs tests: its own, or another revision's version of a test file.

A *cross* run places the other test file beside the code and compiles just that file (Java:
``javac`` into a folder put first on the classpath; Python: a copy next to the original under
a unique name), so the worktree's own files are never changed and many runs (curation's
matrix cells, scoring an agent's test file) can share one built worktree.
"""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ..buildtools import BuildResult, Coverage, TestRun
from ..java.maven import MavenTool
from ..mutation import MutationResult, java_focal_methods, only_these_tests, python_mutants
from ..python.pytest_tool import PytestTool
from ..results import Outcome, TestResult
from ..sandbox.base import Sandbox
from .environment import Environment
from .envspec import EnvSpec
from .pruning import alone

_CROSS_ROOT = ".coevo/cross"


COPY_PREFIX = "test_coevo_"
"""How the copy of a Python test file that :meth:`Side.run_cross` runs under a tag begins:
``test_coevo_<tag>__test_make.py`` beside ``test_make.py`` (a method run alone: tag
``<tag>_m<i>``), so its module's name differs (``tests.test_coevo_<tag>__test_make``) and a test
that checks that name fails there alone."""


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

    def runs_tests_of(self, test_file: str) -> bool:
        """Whether the module holding ``test_file`` built (a partial Maven build lacks some)."""
        tool = self.environment.tool
        if not isinstance(tool, MavenTool):
            return True
        return self.spec.module_for(test_file) in tool.built_modules(self.sandbox, self.spec)

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
        if self.spec.language == "java":
            return self._run_cross_java(test_file, content, ids, tag, timeout, coverage)
        return self._run_cross_python(test_file, content, ids, tag, timeout, coverage)

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
        tool = self.environment.tool
        if not tests:
            return None
        sources = {f["file"]: data for f in focal if (data := self.sandbox.read_file(f["file"])) is not None}
        if isinstance(tool, PytestTool):
            mutants = python_mutants(focal, sources)
            if not mutants:
                return None
            with self._placed_python(test_file, content, tests, tag) as placed:
                if baseline is not None:  # under the ids of the placed copy
                    baseline = TestRun(
                        tuple(
                            dataclasses.replace(r, test=placed[r.test])
                            for r in baseline.results
                            if r.test in placed
                        ),
                        {placed[test]: lines for test, lines in baseline.coverage.items() if test in placed},
                        baseline.log,
                    )
                result = tool.mutation(
                    self.sandbox, self.spec, list(placed.values()), mutants, timeout, baseline
                )
            back = {placed_id: test for test, placed_id in placed.items()}  # the file's own ids
            return dataclasses.replace(
                result,
                mutants=tuple(
                    dataclasses.replace(
                        m,
                        killing_tests=tuple(back.get(t, t) for t in m.killing_tests),
                        asserted_by=tuple(back.get(t, t) for t in m.asserted_by),
                    )
                    for m in result.mutants
                ),
                unstable=tuple(back.get(t, t) for t in result.unstable),
            )
        assert isinstance(tool, MavenTool)
        methods = java_focal_methods(focal, sources)
        if not methods:
            return None
        test_class, names = tests[0].split("#")[0], [test.split("#")[1] for test in tests]
        # Compiled where the run on this tree's code would put it (a judge tree is fresh for each
        # phase): the test's class location says nothing of the phase.
        classes = f"{_CROSS_ROOT}/{tag}/classes"
        pruned = only_these_tests(content, "java", names)
        if not self._compile_java(test_file, pruned, tag, timeout).ok:
            self._compile_java(test_file, content, tag, timeout)  # PIT gets the whole class
        return tool.mutation(
            self.sandbox,
            self.spec,
            test_class,
            names,
            methods,
            timeout,
            module=self.spec.module_for(test_file),
            extra_classpath=[classes],
            only_focal=only_focal,
        )

    def _run_cross_java(
        self, test_file: str, content: bytes, ids: Sequence[str], tag: str, timeout: float, coverage: bool
    ) -> TestRun:
        tool = self.environment.tool
        assert isinstance(tool, MavenTool)
        compiled = self._compile_java(test_file, content, tag, timeout)
        if not compiled.ok:
            return TestRun(tuple(TestResult(t, Outcome.COMPILE_ERROR, compiled.message) for t in ids))
        classes = f"{_CROSS_ROOT}/{tag}/classes"
        module = self.spec.module_for(test_file)
        return tool.run_tests(
            self.sandbox, self.spec, ids, timeout, coverage=coverage, module=module, extra_classpath=[classes]
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
            name = test.split("#", 1)[1] if self.spec.language == "java" else test.rsplit("::", 1)[-1]
            cut = alone(content, self.spec.language, name.split("[", 1)[0])
            if result.outcome != Outcome.COMPILE_ERROR or cut is None or cut == content:
                results.append(result)
                continue
            run = self._run_whole(test_file, cut, [test], f"{tag}_m{index}", timeout, coverage)
            results += [r for r in run.results if r.test == test]
            covered.update(run.coverage)
        return TestRun(tuple(results), covered)

    def _compile_java(self, test_file: str, content: bytes, tag: str, timeout: float) -> BuildResult:
        """``content`` compiled once into ``.coevo/cross/<tag>/classes``, against this revision."""
        tool = self.environment.tool
        assert isinstance(tool, MavenTool)
        source = f"{_CROSS_ROOT}/{tag}/src/{test_file}"
        classes = f"{_CROSS_ROOT}/{tag}/classes"
        if self.sandbox.read_file(source) == content and self.sandbox.read_file(f"{classes}/.ok") is not None:
            return BuildResult(True, "")
        self.sandbox.write_file(source, content)
        module = self.spec.module_for(test_file)
        compiled = tool.compile_test_file(
            self.sandbox, self.spec, source, classpath_module=module, timeout=timeout, output_dir=classes
        )
        if compiled.ok:
            self.sandbox.write_file(f"{classes}/.ok", b"")
        return compiled

    def _run_cross_python(
        self, test_file: str, content: bytes, ids: Sequence[str], tag: str, timeout: float, coverage: bool
    ) -> TestRun:
        with self._placed_python(test_file, content, ids, tag) as placed:
            run = self.run(list(placed.values()), timeout, coverage)
        back = {placed_id: test for test, placed_id in placed.items()}
        results = tuple(dataclasses.replace(r, test=back.get(r.test, r.test)) for r in run.results)
        missing = tuple(
            TestResult(t, Outcome.ABSENT, "not a test of this file") for t in ids if t not in placed
        )
        cover = {back.get(test, test): lines for test, lines in run.coverage.items()}
        return TestRun(results + missing, cover, run.log)

    @contextmanager
    def _placed_python(
        self, test_file: str, content: bytes, ids: Sequence[str], tag: str
    ) -> Iterator[dict[str, str]]:
        """``content`` beside ``test_file`` under a unique name while the block runs; yields the
        ids of ``test_file`` asked for, each with its id in the placed copy."""
        folder, name = posixpath.split(test_file)
        placed = posixpath.join(folder, f"{COPY_PREFIX}{tag}__{name}")
        target = self.worktree / placed
        # Through the sandbox: the build or an earlier test may have left a link at that path.
        self.sandbox.write_file(placed, content)
        try:
            yield {test: placed + test[len(test_file) :] for test in ids if test.startswith(test_file + "::")}
        finally:
            target.unlink(missing_ok=True)
