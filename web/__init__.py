"""The static site: a store or a snapshot rendered as plain files (``coevo site``)."""

# The API is listed in __init__.pyi (what type checkers read); each name loads its module on first
# use, so a command imports only the parts it runs (coevo tasks need not load Docker or Maven).
import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
