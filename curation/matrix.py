"""The 4-way test matrix: cells, their runs and their combined outcome.

The runs themselves happen on :class:`runners.environments.sides.Side` (a built revision that runs its own
tests or another revision's test file).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runners import Coverage, TestResult, bounded

CELLS = ("OO", "ON", "NO", "NN")
"""Old/new test on old/new code: (test version, code version)."""
FLAKY = "flaky"
TIMEOUT = "timeout"


@dataclass
class Cell:
    """One cell of one test method: the outcome of every run, and the combined outcome."""

    runs: list[str] = field(default_factory=list)
    message: str = ""
    """The first run's message that says anything, whole (bounded)."""
    coverage: Coverage | None = None
    frames: set[str] = field(default_factory=set)
    """The Java source lines its failures' stacks passed through (:attr:`TestResult.frames`)."""

    @property
    def outcome(self) -> str:
        """``timeout`` when a run timed out, else the runs' common outcome, or ``flaky`` when they
        disagree. A test that hangs once is never a dependable task: it is not run again
        (:attr:`timed_out`), since every further run would cost the whole timeout again."""
        if not self.runs:
            return "not_run"
        if self.timed_out:
            return TIMEOUT
        return self.runs[0] if len(set(self.runs)) == 1 else FLAKY

    @property
    def timed_out(self) -> bool:
        """Whether a run timed out: the test's verdict is decided, and it runs no more."""
        return TIMEOUT in self.runs

    def add(self, result: TestResult, coverage: Coverage | None = None) -> None:
        self.runs.append(str(result.outcome))
        if result.message and not self.message:
            self.message = bounded(result.message.strip())
        if coverage is not None:
            self.coverage = coverage
        self.frames.update(result.frames)

    def as_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "runs": list(self.runs), "message": self.message}
