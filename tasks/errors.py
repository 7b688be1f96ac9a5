"""The base of every error coevo reports to a user as one line."""


class CoevoError(Exception):
    """An error a user can cause and fix; the CLI prints its message as one line, no traceback."""


class InfrastructureError(CoevoError):
    """coevo's own machinery failed — no Docker daemon, an image or tool it could not make or fetch.

    Never a fact about a task or an agent: nothing is recorded for the unit that met it, the run
    stops with this one line, and the next run does that unit again.
    """


class MissingToolchain(CoevoError):
    """coevo cannot provide what a revision needs (a JDK for its release, a Python interpreter).

    The revision is ``env_failed`` with the toolchain named, never ``build_failed`` (a failure of
    the project itself); ``coevo curate --retry-env`` tries such pairs again.
    """
