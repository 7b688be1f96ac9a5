"""A site served on loopback by a server the test starts, and headless Chromium to read it."""

from __future__ import annotations

import functools
import http.server
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CHROMIUM

ARTIFACTS = (
    Path(os.environ.get("COEVO_ARTIFACTS", Path(__file__).resolve().parents[2] / "artifacts")) / "site"
)
"""Where screenshots of the pages are kept for a person to look at."""
_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]  # fmt: skip


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def serve() -> Iterator[Callable[[Path], str]]:
    """Serves a folder on 127.0.0.1 (a fresh port); returns its base URL."""
    servers: list[http.server.ThreadingHTTPServer] = []

    def start(folder: Path) -> str:
        handler = functools.partial(_Quiet, directory=str(folder))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_port}/"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@dataclass
class Watched:
    """A page with what it said: console errors, uncaught exceptions, dialogs, and the bytes of
    every response."""

    page: Any
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)
    transferred: list[tuple[str, int]] = field(default_factory=list)

    def goto(self, url: str) -> None:
        self.page.goto(url)
        self.page.wait_for_load_state("networkidle")

    def shot(self, name: str) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def browser_page(chromium: Any) -> Iterator[Watched]:
    """A fresh page (its own context: no cache shared with another test) that records errors."""
    context = chromium.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    watched = Watched(page)
    page.on(
        "console", lambda message: watched.errors.append(message.text) if message.type == "error" else None
    )
    page.on("pageerror", lambda error: watched.errors.append(f"uncaught: {error}"))

    def dialog(d: Any) -> None:
        watched.dialogs.append(d.message)
        d.dismiss()

    page.on("dialog", dialog)

    def finished(request: Any) -> None:
        sizes = request.sizes()
        watched.transferred.append((request.url, sizes["responseBodySize"] + sizes["responseHeadersSize"]))

    page.on("requestfinished", finished)
    yield watched
    context.close()
