"""Errors a user can cause while mining; each carries a one-line message."""

from __future__ import annotations

from tasks import CoevoError


class NotARepository(CoevoError):
    """The path or URL given is not a git repository coevo can open."""


class UnknownLanguage(CoevoError):
    """A language name that no module registered."""


class LanguageNotDetected(CoevoError):
    """``--language auto`` found neither Java nor Python sources in the repository."""


class SourceSyntaxError(CoevoError):
    """A source file that its language's parser rejects."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line
