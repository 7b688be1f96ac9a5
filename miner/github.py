"""A small GitHub REST client that keeps to GitHub's rate limits and pays little for repeats.

Everything discovery asks GitHub goes through :class:`GitHubClient`, a seam taking a base URL
(GitHub Enterprise, or a fake on loopback in the tests), a ``requests`` session, a clock and a
random source; constructing it does no I/O. How it treats GitHub's answers:

- **primary limit**: an answer saying ``X-RateLimit-Remaining: 0`` makes the next request wait
  until ``X-RateLimit-Reset`` (a 403 or 429 saying so is retried after that wait);
- **secondary limit**: a 403 or 429 with ``Retry-After`` is retried after that many seconds;
- **transient faults**: a 5xx, a timeout or a dropped connection is retried with exponential
  backoff and jitter, a bounded number of times, then ends in :class:`GitHubError`;
- **conditional requests**: each answer's ``ETag`` and body are kept in a cache (the store's
  ``HttpCache`` table); the next GET of that URL sends ``If-None-Match`` and a 304, which costs
  no quota, reuses the kept body.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlencode, urljoin, urlsplit

import requests
from sqlmodel import select

from tasks import CoevoError, HttpCache, Store, utcnow

DEFAULT_API_URL = "https://api.github.com"
API_URL_ENV = "COEVO_GITHUB_API"
TOKEN_ENV = "GITHUB_TOKEN"
API_VERSION = "2022-11-28"
DEFAULT_TIMEOUT = 30.0
"""Seconds to wait for GitHub to answer one request before it counts as a transient fault."""
DEFAULT_RETRIES = 4
"""Retries of one request after a transient fault (5xx, timeout, dropped connection), and
separately after secondary or primary limits, before the client gives up."""
BACKOFF_BASE = 1.0
"""Seconds of the first backoff; each next one doubles (before jitter)."""
SECONDARY_DEFAULT_WAIT = 60.0
"""Seconds to wait on a 429 that names no ``Retry-After``, as GitHub's documentation asks."""

_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')


class GitHubError(CoevoError):
    """GitHub (or the server at ``--api-url``) did not give a usable answer; the message names the
    request's path and what went wrong, in one line."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Clock(Protocol):
    """Time as the client sees it: the tests pass one whose ``sleep`` only moves ``now``."""

    def now(self) -> float:
        """Seconds since the epoch."""
        ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The real clock."""

    def now(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@dataclass(frozen=True)
class CachedAnswer:
    """A kept answer to a GET: what ``If-None-Match`` sends and what a 304 gives back."""

    etag: str
    body: str
    link: str | None


class ResponseCache(Protocol):
    """Where the client keeps ETags and bodies between runs."""

    def get(self, url: str) -> CachedAnswer | None: ...

    def put(self, url: str, answer: CachedAnswer) -> None: ...


class StoreCache:
    """A :class:`ResponseCache` in the store's ``HttpCache`` table, so a discovery next week
    revalidates what this one read."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, url: str) -> CachedAnswer | None:
        with self.store.session() as session:
            row = session.get(HttpCache, url)
            return None if row is None else CachedAnswer(row.etag, row.body, row.link)

    def put(self, url: str, answer: CachedAnswer) -> None:
        with self.store.session() as session:
            row = session.exec(select(HttpCache).where(HttpCache.url == url)).first() or HttpCache(
                url=url, etag=answer.etag, body=answer.body
            )
            row.etag, row.body, row.link, row.fetched_at = answer.etag, answer.body, answer.link, utcnow()
            session.add(row)


@dataclass(frozen=True)
class Page:
    """One answer: its JSON, where the next page is (None on the last), and whether it came from
    the cache (a 304)."""

    data: Any
    next_url: str | None
    cached: bool = False


class GitHubClient:
    """GETs against GitHub's REST API (see the module docstring for how it treats limits and faults).

    ``remaining`` is the quota the last answer reported (None before any), ``requests`` the
    requests sent and ``not_modified`` how many of them GitHub answered with 304.
    """

    def __init__(
        self,
        base_url: str = DEFAULT_API_URL,
        token: str | None = None,
        session: requests.Session | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        cache: ResponseCache | None = None,
        retries: int = DEFAULT_RETRIES,
    ) -> None:
        self.base_url = base_url.rstrip("/") + "/"
        self.token = token
        self.session = session or requests.Session()
        self.clock: Clock = clock or SystemClock()
        self.rng = rng or random.Random()
        self.timeout = timeout
        self.cache = cache
        self.retries = retries
        self.remaining: int | None = None
        self.requests = 0
        self.not_modified = 0
        self._reset_at: float | None = None

    def url(self, path: str, params: Mapping[str, Any] | None = None) -> str:
        """The absolute URL of ``path`` (already absolute: as given) with ``params`` as its query."""
        url = path if "://" in path else urljoin(self.base_url, path.lstrip("/"))
        if params:
            url += ("&" if "?" in url else "?") + urlencode(params)
        return url

    def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        """The JSON GitHub answers to a GET of ``path``."""
        return self.page(path, params).data

    def exists(self, path: str) -> bool:
        """Whether GitHub has ``path``: True on 200, False on 404 (a file in a repository)."""
        try:
            self.page(path)
        except GitHubError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def paginate(
        self, path: str, params: Mapping[str, Any] | None = None, limit: int | None = None
    ) -> Iterator[Any]:
        """The items of ``path`` page after page, following ``Link: rel="next"``, at most ``limit``.

        An answer that is a list gives its elements; a search answer (an object) its ``items``.
        No page is fetched once ``limit`` items were given.
        """
        url: str | None = self.url(path, params)
        given = 0
        while url is not None and (limit is None or given < limit):
            page = self.page(url)
            items = page.data.get("items", []) if isinstance(page.data, dict) else page.data
            if not isinstance(items, list):
                raise GitHubError(f"{_where(url)} returned no list of items")
            for item in items:
                if limit is not None and given >= limit:
                    return
                given += 1
                yield item
            url = page.next_url

    def page(self, path: str, params: Mapping[str, Any] | None = None) -> Page:
        """One GET of ``path``, with every wait and retry the module docstring promises."""
        url = self.url(path, params)
        cached = self.cache.get(url) if self.cache is not None else None
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if cached is not None:
            headers["If-None-Match"] = cached.etag
        faults = limits = 0
        while True:
            self._wait_for_reset()
            try:
                self.requests += 1
                response = self.session.get(url, headers=headers, timeout=self.timeout)
            except (requests.Timeout, requests.ConnectionError) as exc:
                faults += 1
                what = "timed out" if isinstance(exc, requests.Timeout) else "connection failed"
                self._back_off(faults, f"GET {_where(url)} {what}")
                continue
            self._note_quota(response)
            status = response.status_code
            if status == 304 and cached is not None:
                self.not_modified += 1
                return Page(_parse(cached.body, url), _next(cached.link), cached=True)
            if status in (403, 429) and self._limited(response):
                limits += 1
                if limits > self.retries:
                    raise GitHubError(f"GET {_where(url)}: still rate limited after {limits} waits", status)
                continue
            if status >= 500:
                faults += 1
                self._back_off(faults, f"GET {_where(url)} answered {status}", status)
                continue
            if status >= 400 or status == 304:
                raise GitHubError(f"GET {_where(url)} answered {status}{_message(response)}", status)
            data = _parse(response.text, url)
            etag = response.headers.get("ETag")
            if self.cache is not None and etag:
                self.cache.put(url, CachedAnswer(etag, response.text, response.headers.get("Link")))
            return Page(data, _next(response.headers.get("Link")))

    def _note_quota(self, response: requests.Response) -> None:
        remaining = response.headers.get("X-RateLimit-Remaining")
        if remaining is None or not remaining.isdigit():
            return
        self.remaining = int(remaining)
        reset = response.headers.get("X-RateLimit-Reset")
        if self.remaining == 0 and reset is not None and reset.isdigit():
            self._reset_at = float(reset)

    def _limited(self, response: requests.Response) -> bool:
        """Whether a 403/429 is a rate limit (then the wait is arranged: the caller retries)."""
        if self._reset_at is not None:
            return True  # the primary limit: _wait_for_reset waits before the retry
        retry_after = response.headers.get("Retry-After")
        if retry_after is not None and retry_after.strip().isdigit():
            self._wait(float(retry_after))
            return True
        if response.status_code == 429:
            self._wait(SECONDARY_DEFAULT_WAIT)
            return True
        return False

    def _wait_for_reset(self) -> None:
        if self._reset_at is None:
            return
        self._wait(self._reset_at - self.clock.now())
        self._reset_at = None

    def _back_off(self, attempt: int, what: str, status: int | None = None) -> None:
        """Waits before retry ``attempt`` of a transient fault: ``BACKOFF_BASE * 2**(attempt-1)``,
        its upper half drawn at random so many clients do not retry in step; gives up with
        :class:`GitHubError` after ``retries`` retries."""
        if attempt > self.retries:
            raise GitHubError(f"{what} ({attempt} attempts); try again later", status)
        ceiling = BACKOFF_BASE * 2 ** (attempt - 1)
        self._wait(ceiling / 2 + self.rng.uniform(0, ceiling / 2))

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self.clock.sleep(seconds)


def _where(url: str) -> str:
    """The path (and query) of ``url``: what an error line names."""
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _parse(body: str, url: str) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        raise GitHubError(f"GET {_where(url)} returned malformed JSON") from None


def _next(link: str | None) -> str | None:
    match = _NEXT.search(link or "")
    return match.group(1) if match else None


def _message(response: requests.Response) -> str:
    """GitHub's own ``message`` from an error answer, after a colon; nothing when it has none."""
    try:
        message = response.json().get("message")
    except (ValueError, AttributeError):
        return ""
    return f": {message}" if isinstance(message, str) and message else ""
