"""Python of a revision's era: which CPython a revision declares, and which one it gets.

A revision declares the Pythons it runs on (``requires-python``, Trove classifiers, tox's
envlist, ``.python-version``, the versions its CI tests); coevo picks among the interpreters
it has (:func:`choose_python`): the newest declared one released before the revision's date,
since a project is written against the Pythons of its time. A revision that declares nothing
gets the newest Python released before its date. Without a date (a folder, not a commit) the
preference of :data:`PREFERENCE` decides, as before eras were known.

Pure functions: the interpreters present are passed in (pyenv's on the host, the base images'
in Docker).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime

from packaging.specifiers import InvalidSpecifier, SpecifierSet

RELEASES: dict[str, date] = {
    "3.5": date(2015, 9, 13),
    "3.6": date(2016, 12, 23),
    "3.7": date(2018, 6, 27),
    "3.8": date(2019, 10, 14),
    "3.9": date(2020, 10, 5),
    "3.10": date(2021, 10, 4),
    "3.11": date(2022, 10, 24),
    "3.12": date(2023, 10, 2),
    "3.13": date(2024, 10, 7),
    "3.14": date(2025, 10, 7),
}
"""CPython's minor versions and the day each was first released (its ``.0``)."""

PREFERENCE = ("3.11", "3.12", "3.13", "3.10", "3.9", "3.8", "3.7", "3.6")
"""Without a date: Debian bookworm's own first, then newer, then older."""


@dataclass(frozen=True)
class Declared:
    """The Pythons a revision says it runs on, and where it says so."""

    versions: tuple[str, ...]
    """Minor versions among :data:`RELEASES`, oldest first; empty when it declares none."""
    origin: str
    """``setup.py python_requires '>=3.6'``, ``the Trove classifiers``…; empty when none."""


def minor_key(version: str) -> tuple[int, int]:
    """``"3.10"`` → ``(3, 10)``, for ordering; anything unreadable sorts first."""
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def declared_pythons(requires: tuple[str, str] | None, listed: tuple[Iterable[str], str] | None) -> Declared:
    """What a revision declares: the versions ``requires`` (a specifier and where it was found)
    allows, narrowed to those ``listed`` (classifiers, tox, CI) when both say something."""
    allowed: list[str] | None = None
    origins: list[str] = []
    if requires is not None:
        try:
            specifier = SpecifierSet(requires[0])
        except InvalidSpecifier:
            specifier = None
        if specifier is not None:
            allowed = [v for v in RELEASES if _allows(specifier, v)]
            origins.append(f"{requires[1]} {requires[0]!r}")
    if listed is not None:
        named = {v for v in listed[0] if v in RELEASES}
        if named:
            narrowed = [v for v in (allowed if allowed is not None else RELEASES) if v in named]
            if narrowed or allowed is None:
                allowed = narrowed
                origins.append(listed[1])
    if not allowed:
        return Declared((), "")
    return Declared(tuple(sorted(allowed, key=minor_key)), " and ".join(origins))


def _allows(specifier: SpecifierSet, version: str) -> bool:
    return specifier.contains(f"{version}.0", prereleases=True) or specifier.contains(f"{version}.99")


def era_day(moment: datetime) -> date:
    """The UTC day of a commit: dates compare by day (releases are days, venvs are shared by day)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).date()


def packages_before(moment: datetime) -> str:
    """The instant pip's ``--uploaded-prior-to`` gets for a revision committed at ``moment``: the
    start of its UTC day, so revisions of one day share a venv and nothing uploaded after the
    commit is installed."""
    day = era_day(moment)
    return f"{day.isoformat()}T00:00:00Z"


def day_of(cutoff: str | None) -> date | None:
    """The day of a :func:`packages_before` value."""
    return date.fromisoformat(cutoff[:10]) if cutoff else None


def choose_python(
    declared: Declared, day: date | None, present: Iterable[str], where: str = ""
) -> tuple[str, str]:
    """The minor version to use among ``present``, and why (one line for the build record).

    Among the declared versions that are present, the newest released before ``day`` (or, for
    a revision older than all of them, the oldest); when none of the declared ones is present,
    the present one closest to what the revision asks for, preferring one released before
    ``day`` (a Python newer than the revision's packages may lack their wheels), then one not
    older than the oldest declared (``requires-python`` may exclude it), then the newer of two
    as close. A revision that declares nothing gets the newest present Python released before
    ``day``. ``where`` names the place (``pyenv``, ``Docker``) in the reason.
    """
    have = sorted(set(present), key=minor_key)
    if not have:
        raise ValueError("no Python present to choose from")
    at = f" ({where})" if where else ""
    if declared.versions:
        span = _span(declared.versions)
        usable = [v for v in declared.versions if v in have]
        if usable:
            chosen = _pick(usable, day)
            ideal = _pick(list(declared.versions), day)
            missing = "" if chosen == ideal else f"; {ideal} is not here"
            return chosen, f"python {chosen}{at}: {_why(chosen, day)} of {span} ({declared.origin}){missing}"
        asked = _pick(list(declared.versions), day)
        lowest = min(declared.versions, key=minor_key)
        chosen = min(
            have,
            key=lambda v: (
                _later(v, day),
                minor_key(v) < minor_key(lowest),
                abs(minor_key(v)[1] - minor_key(asked)[1]),
                -minor_key(v)[1],
            ),
        )
        return chosen, (
            f"python {chosen}{at}: the closest here to {asked}, {_why(asked, day)} of"
            f" {span} ({declared.origin}), none of which is here"
        )
    chosen = _pick(have, day)
    return chosen, f"python {chosen}{at}: {_why(chosen, day)} (the project declares no version)"


def _later(version: str, day: date | None) -> bool:
    """Whether ``version`` came out after ``day``: the packages of the day may have no wheels for it."""
    return day is not None and (version not in RELEASES or RELEASES[version] >= day)


def _why(chosen: str, day: date | None) -> str:
    if day is None:
        return "coevo's preferred (no date)"
    if RELEASES.get(chosen, day) < day:
        return f"the newest released before {day.isoformat()}"
    return f"the oldest (all were released after {day.isoformat()})"


def _pick(candidates: Sequence[str], day: date | None) -> str:
    if day is None:
        return next((v for v in PREFERENCE if v in candidates), max(candidates, key=minor_key))
    released = [v for v in candidates if v in RELEASES and RELEASES[v] < day]
    if released:
        return max(released, key=minor_key)
    return min(candidates, key=minor_key)


def _span(versions: Sequence[str]) -> str:
    """``3.6-3.9`` for consecutive versions, ``3.6, 3.9`` otherwise."""
    ordered = sorted(versions, key=minor_key)
    known = list(RELEASES)
    consecutive = all(
        v in known and w in known and known.index(w) == known.index(v) + 1
        for v, w in itertools.pairwise(ordered)
    )
    if len(ordered) > 2 and consecutive:
        return f"{ordered[0]}-{ordered[-1]}"
    return ", ".join(ordered)
