"""Curation by execution: the test matrix, classification and drop reasons (issue 4)."""

__all__: list[str] = []
