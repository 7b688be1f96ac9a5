"""Environments, sandboxes, build tools and scoring (issues 3 and 5)."""

__all__: list[str] = []
