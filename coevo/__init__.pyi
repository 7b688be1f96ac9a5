"""coevo: a live benchmark of real test/code co-evolution. The front door: CLI and pipeline."""

from .pipeline import PipelineReport, run_pipeline

__version__: str

__all__ = ["PipelineReport", "run_pipeline"]
