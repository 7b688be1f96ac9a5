"""A small fake GitHub on loopback: a real HTTP server answering as GitHub's REST API does.

It holds repositories (licence, root files, commits in the last year), paginates with ``Link``
headers, reports a quota in ``X-RateLimit-*`` headers against an injected clock, answers
``If-None-Match`` with 304 (which, as on GitHub, costs no quota), and can be told to answer a
path's next requests otherwise (:meth:`FakeGitHub.inject`): a rate limit, a 5xx, a body that is
not JSON, a slow answer.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

NOW = 1_750_000_000.0
"""The fake clock's start: 2025-06-15T15:06:40Z."""


class FakeClock:
    """Time that moves only when the client sleeps; every wait is recorded."""

    def __init__(self, start: float = NOW) -> None:
        self.time = start
        self.waits: list[float] = []

    def now(self) -> float:
        return self.time

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.time += seconds


@dataclass
class FakeRepo:
    full_name: str
    stars: int = 100
    licence: str | None = "MIT"
    fork: bool = False
    archived: bool = False
    files: tuple[str, ...] = ("pom.xml",)
    commits: int = 80
    """Commits since the ``since`` the client asks for."""

    def search_item(self) -> dict[str, Any]:
        licence = None if self.licence is None else {"key": self.licence.lower(), "spdx_id": self.licence}
        return {
            "full_name": self.full_name,
            "clone_url": f"https://github.com/{self.full_name}.git",
            "html_url": f"https://github.com/{self.full_name}",
            "stargazers_count": self.stars,
            "license": licence,
            "fork": self.fork,
            "archived": self.archived,
            "pushed_at": "2025-06-01T10:00:00Z",
        }


@dataclass
class Reply:
    """An answer to inject. ``status`` None: the normal answer, with ``headers`` added to it."""

    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: str = ""
    delay: float = 0.0


@dataclass
class Seen:
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    status: int


class FakeGitHub:
    """The fake's state; :func:`serve` runs it."""

    def __init__(self, clock: FakeClock, repos: list[FakeRepo], page_size: int = 100) -> None:
        self.clock = clock
        self.repos = repos
        self.page_size = page_size
        self.remaining = 5000
        self.injected: dict[str, list[Reply]] = {}
        self.seen: list[Seen] = []
        """Answered requests, in the order answered."""
        self.arrived: Counter[str] = Counter()
        """Requests per path as they arrive (a slow answer's is counted before it is answered)."""
        self.base = ""
        self.lock = threading.Lock()

    def inject(self, path: str, *replies: Reply) -> None:
        """The next requests of ``path`` get ``replies``, one each, before the normal answers."""
        self.injected.setdefault(path, []).extend(replies)

    def hits(self, path: str) -> int:
        return sum(1 for seen in self.seen if seen.path == path)

    @property
    def costly(self) -> int:
        """Requests that cost quota: every answer but a 304."""
        return sum(1 for seen in self.seen if seen.status != 304)

    def answer(
        self, path: str, query: dict[str, str], headers: dict[str, str]
    ) -> tuple[int, dict[str, str], str]:
        with self.lock:
            self.arrived[path] += 1
            injected = self.injected.get(path)
            reply = injected.pop(0) if injected else Reply()
        if reply.delay:
            time.sleep(reply.delay)  # the one real wait: longer than the client's timeout
        if reply.status is not None:
            status, extra, body = reply.status, dict(reply.headers), reply.body
        else:
            status, extra, body = self._normal(path, query)
            extra.update(reply.headers)
            if reply.body:
                body = reply.body
        etag = '"' + hashlib.sha256(body.encode()).hexdigest()[:16] + '"'
        if status == 200 and headers.get("If-None-Match") == etag:
            status, body = 304, ""
        elif status != 304:
            self.remaining = max(self.remaining - 1, 0)
        quota = {
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Reset": str(int(self.clock.now()) + 3600),
        }
        quota.update(extra)
        if status in (200, 304):
            quota["ETag"] = etag
        with self.lock:
            self.seen.append(Seen(path, query, headers, status))
        return status, quota, body

    def _normal(self, path: str, query: dict[str, str]) -> tuple[int, dict[str, str], str]:
        parts = path.strip("/").split("/")
        if path == "/search/repositories":
            return self._paged(path, query, [repo.search_item() for repo in self.repos], search=True)
        repo = next((r for r in self.repos if parts[1:3] == r.full_name.split("/")), None)
        if repo is None or parts[0] != "repos":
            return 404, {}, json.dumps({"message": "Not Found"})
        if len(parts) == 3:
            return 200, {}, json.dumps(repo.search_item())
        if parts[3:4] == ["contents"]:
            name = "/".join(parts[4:])
            if name in repo.files:
                return 200, {}, json.dumps({"name": name, "path": name, "type": "file"})
            return 404, {}, json.dumps({"message": "Not Found"})
        if parts[3:] == ["commits"]:
            assert "since" in query, "the commits of the last year are asked with since="
            commits = [{"sha": f"{n:040x}"} for n in range(repo.commits)]
            return self._paged(path, query, commits, search=False)
        return 404, {}, json.dumps({"message": "Not Found"})

    def _paged(
        self, path: str, query: dict[str, str], items: list[Any], search: bool
    ) -> tuple[int, dict[str, str], str]:
        size = min(int(query.get("per_page", 30)), self.page_size)
        page = int(query.get("page", 1))
        chunk = items[(page - 1) * size : page * size]
        last = max((len(items) + size - 1) // size, 1)
        links = []
        if page < last:
            links.append(f'<{self.base}{path}?{urlencode({**query, "page": page + 1})}>; rel="next"')
            links.append(f'<{self.base}{path}?{urlencode({**query, "page": last})}>; rel="last"')
        headers = {"Link": ", ".join(links)} if links else {}
        body = {"total_count": len(items), "incomplete_results": False, "items": chunk} if search else chunk
        return 200, headers, json.dumps(body)


@contextmanager
def serve(fake: FakeGitHub) -> Iterator[str]:
    """Runs ``fake`` on 127.0.0.1 (a free port) and gives its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
            status, headers, body = fake.answer(parts.path, query, dict(self.headers.items()))
            data = body.encode()
            try:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up on a slow answer: that is the point of it

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.block_on_close = False
    fake.base = f"http://127.0.0.1:{server.server_port}"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield fake.base
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
