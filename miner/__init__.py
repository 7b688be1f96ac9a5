"""Mining: a repository's git history → method-level test/code co-evolution candidates."""

from .changes import MethodDelta, ParseCache, method_deltas
from .errors import LanguageNotDetected, NotARepository, SourceSyntaxError, UnknownLanguage
from .files import FilePatterns, FileRole
from .gitlog import FileChange, LogCommit, iter_log
from .languages import Language, MethodInfo, ParsedFile, all_languages, get_language
from .links import ProductionMethod, static_links
from .mine import Miner, MineRequest, Progress, identify_repositories, mine, register_repository
from .pairs import DEFAULT_WINDOW, PairPlan, plan_pairs
from .source import (
    ROOT_PREFIX,
    canonical_remote,
    clone_path,
    default_clone_root,
    detect_language,
    is_url,
    local_checkout,
    origin_remote,
    repository_identity,
)

__all__ = [
    "DEFAULT_WINDOW",
    "ROOT_PREFIX",
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
    "canonical_remote",
    "clone_path",
    "default_clone_root",
    "detect_language",
    "get_language",
    "identify_repositories",
    "is_url",
    "iter_log",
    "local_checkout",
    "method_deltas",
    "mine",
    "origin_remote",
    "plan_pairs",
    "register_repository",
    "repository_identity",
    "static_links",
]
