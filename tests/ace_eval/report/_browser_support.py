"""A headless Chromium page that records console errors and every request (and blocks all but the page's own)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

CHROMIUM = next(
    filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"))), None
)
INSTALL = "apt-get update && apt-get install -y chromium; pip install playwright"


class Watched:
    """A page whose console errors, uncaught exceptions and requests are recorded; every request but the page's
    own file is aborted."""

    def __init__(self, browser: Any, url: str) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 860})
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.blocked: list[str] = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.url = url

    def _route(self, route: Any) -> None:
        if route.request.url == self.url.partition("#")[0]:
            route.continue_()
        else:
            self.blocked.append(route.request.url)
            route.abort()

    def open(self) -> Any:
        self.page.goto(self.url)
        return self.page


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium (start it after any `asyncio.run`: the sync API holds an event loop)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason=f"needs Playwright: {INSTALL}")
    with sync_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()
