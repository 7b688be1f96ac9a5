"""coevo: a live benchmark of real test/code co-evolution. The front door: CLI and pipeline."""

# The API is listed in __init__.pyi (what type checkers read); each name loads its module on first
# use, so the command line starts without loading the pipeline.
import lazy_loader

from .version import __version__ as __version__

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
