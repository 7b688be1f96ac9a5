"""coevo's version, as snapshots record it (pyproject.toml names the same)."""

__version__ = "0.1.0"
