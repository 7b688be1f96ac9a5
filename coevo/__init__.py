"""coevo: a live benchmark of real test/code co-evolution. The front door: CLI and pipeline."""

__version__ = "0.1.0"

from .pipeline import PipelineReport, run_pipeline

__all__ = ["PipelineReport", "run_pipeline"]
