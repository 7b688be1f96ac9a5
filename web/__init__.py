"""The static site generator (planned)."""

__all__: list[str] = []
