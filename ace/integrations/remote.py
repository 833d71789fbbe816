"""A skillbook served over HTTP by `ace-eval serve` (`GET /v1/skillbook`), followed as its version moves.

`RemoteSkillbook.get()` asks again at most every `poll_seconds`, with `If-None-Match` (a 304 costs no body), and
waits at most `timeout` seconds for the answer: an agent's run is never held longer than that by the network.
When the server is down, slow or answers an error, the last good skillbook is kept, with a `RuntimeWarning` (once
per failure streak); before the first good answer that is an empty skillbook. Thread-safe.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
import warnings

from ace.core.skillbook import Skillbook

__all__ = ["RemoteSkillbook", "skillbook_url"]

_PATH = "/v1/skillbook"


def skillbook_url(url: str) -> str:
    """`http://host:4318` or `.../v1/skillbook` as the skillbook endpoint."""
    base = url.rstrip("/")
    return base if base.endswith(_PATH) else base + _PATH


class RemoteSkillbook:
    """The skillbook at `url` (a serve's base URL or its `/v1/skillbook`), polled with its ETag."""

    def __init__(self, url: str, *, token: str | None = None, poll_seconds: float = 30.0, timeout: float = 2.0) -> None:
        if poll_seconds < 0 or timeout <= 0:
            raise ValueError(f"poll_seconds must be >= 0 and timeout > 0, got {poll_seconds} and {timeout}")
        self.url = skillbook_url(url)
        self.poll_seconds = poll_seconds
        self.timeout = timeout
        self._headers = {"Accept": "application/json"} | ({"Authorization": f"Bearer {token}"} if token else {})
        self._lock = threading.Lock()
        self._skillbook = Skillbook()
        self._etag: str | None = None
        self._checked: float | None = None
        self._failing = False
        self.get()

    @property
    def version(self) -> int | None:
        """The served version last loaded (`None`: none yet)."""
        return int(self._etag.strip('"')) if self._etag and self._etag.strip('"').isdigit() else None

    def get(self) -> Skillbook:
        """The skillbook, asked again when `poll_seconds` have passed since the last answer or failure."""
        with self._lock:
            now = time.monotonic()
            if self._checked is not None and now - self._checked < self.poll_seconds:
                return self._skillbook
            self._checked = now
            try:
                self._poll()
                self._failing = False
            except (OSError, ValueError) as e:  # down, slow, refused, a body that is not a skillbook
                if not self._failing:
                    kept = f"version {self.version}" if self.version is not None else "no skills yet"
                    warnings.warn(f"kept {kept}: {self.url} did not answer ({e})", RuntimeWarning, stacklevel=2)
                self._failing = True
            return self._skillbook

    def _poll(self) -> None:
        headers = dict(self._headers) | ({"If-None-Match": self._etag} if self._etag else {})
        request = urllib.request.Request(self.url, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body = response.read()
                etag = response.headers.get("ETag")
        except urllib.error.HTTPError as e:
            if e.code == 304:
                return
            if e.code == 404:  # no version published yet: no skills, and no warning
                self._skillbook, self._etag = Skillbook(), None
                return
            raise OSError(f"HTTP {e.code}") from None
        self._skillbook = Skillbook.from_dict(json.loads(body), source=self.url)
        self._etag = etag
