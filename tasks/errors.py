"""The base of every error coevo reports to a user as one line."""


class CoevoError(Exception):
    """An error a user can cause and fix; the CLI prints its message as one line, no traceback."""
