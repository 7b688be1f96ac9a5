"""The languages mining knows, in one table: adding Kotlin is a module that defines its
:class:`~miner.parsing.Language` and a row here; the miner looks languages up by name and never
branches on them."""

from __future__ import annotations

from .errors import UnknownLanguage
from .java import JAVA
from .parsing import Language
from .python import PYTHON

LANGUAGES: dict[str, Language] = {language.name: language for language in (JAVA, PYTHON)}
"""Every language by name."""


def get_language(name: str) -> Language:
    """The language called ``name``; raises :class:`UnknownLanguage`."""
    try:
        return LANGUAGES[name]
    except KeyError:
        known = ", ".join(sorted(LANGUAGES))
        raise UnknownLanguage(f"unknown language {name!r}; known: {known}") from None


def all_languages() -> list[Language]:
    """Every language, sorted by name."""
    return [LANGUAGES[name] for name in sorted(LANGUAGES)]
