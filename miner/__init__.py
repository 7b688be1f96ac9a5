"""Mining: a repository's git history → method-level test/code co-evolution candidates."""

from .changes import MethodDelta, ParseCache, method_deltas
from .errors import LanguageNotDetected, NotARepository, SourceSyntaxError, UnknownLanguage
from .files import FilePatterns, FileRole
from .gitlog import FileChange, LogCommit, iter_log
from .languages import Language, MethodInfo, ParsedFile, all_languages, get_language
from .links import ProductionMethod, static_links
from .mine import Miner, MineRequest, Progress, mine, register_repository
from .pairs import DEFAULT_WINDOW, PairPlan, plan_pairs
from .source import detect_language, is_url, local_checkout

__all__ = [
    "DEFAULT_WINDOW",
    "FileChange",
    "FilePatterns",
    "FileRole",
    "Language",
    "LanguageNotDetected",
    "LogCommit",
    "MethodDelta",
    "MethodInfo",
    "MineRequest",
    "Miner",
    "NotARepository",
    "PairPlan",
    "ParseCache",
    "ParsedFile",
    "ProductionMethod",
    "Progress",
    "SourceSyntaxError",
    "UnknownLanguage",
    "all_languages",
    "detect_language",
    "get_language",
    "is_url",
    "iter_log",
    "local_checkout",
    "method_deltas",
    "mine",
    "plan_pairs",
    "register_repository",
    "static_links",
]
