"""`ace-eval data fetch tau-bench`: download the public airline files, check their sha256, write atomically."""

from __future__ import annotations

import hashlib
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ace.core.storage import atomic_write
from ace.exceptions import RunError
from ace_eval.benchmarks.tau_bench.convert import TasksSourceError, tasks_json

__all__ = [
    "AIRLINE_FILES",
    "DEFAULT_REF",
    "UPSTREAM_REPO",
    "Downloader",
    "FetchError",
    "RemoteFile",
    "fetch_airline_data",
    "url_download",
]

UPSTREAM_REPO = "sierra-research/tau-bench"
DEFAULT_REF = "main"
_RAW_URL = "https://raw.githubusercontent.com/{repo}/{ref}/{path}"
_TIMEOUT_S = 60.0

Downloader = Callable[[str], bytes]
"""url -> body; raise `OSError` on failure."""


class FetchError(RunError, RuntimeError):
    """A download that failed or did not match its pinned checksum; the message names the file and the fix."""


@dataclass(frozen=True)
class RemoteFile:
    """One file of the data folder: where upstream keeps it and the sha256 of the file we write."""

    name: str
    path: str
    sha256: str
    from_python: bool = False
    """Upstream's file is a Python tasks module, converted to JSON (read with `ast`, never executed)."""


AIRLINE_FILES: tuple[RemoteFile, ...] = (
    RemoteFile(
        "flights.json",
        "tau_bench/envs/airline/data/flights.json",
        "444d7565c68434a3e3fb72efd717f9f9cd5c56dce227f6f56e078f1cb0ed233a",
    ),
    RemoteFile(
        "reservations.json",
        "tau_bench/envs/airline/data/reservations.json",
        "1cf0bbc58ad984be9de7c24dba6dd27393f94cdbd482d8524f6a54db1f561a8c",
    ),
    RemoteFile(
        "users.json",
        "tau_bench/envs/airline/data/users.json",
        "bd264e2a31e0fa35cdfef8987e70a0dd3776828b582fe90e7a44823a12eb4cea",
    ),
    RemoteFile(
        "wiki.md",
        "tau_bench/envs/airline/wiki.md",
        "56c335801c16e26b54f600f9db99eb04d31db477e86eb160341d5c66b796c5c8",
    ),
    RemoteFile(
        "tasks_test.json",
        "tau_bench/envs/airline/tasks_test.py",
        "fd7f8f3c8d06dd69ca10b6899e79d24b17c9ef9fb8da670a51bdc75227b0079c",
        from_python=True,
    ),
)
"""The checksums are those of the reference copy the project's tests run on."""


def url_download(url: str) -> bytes:
    """GET `url` with a timeout."""
    request = urllib.request.Request(url, headers={"User-Agent": "ace-eval"})
    with urllib.request.urlopen(request, timeout=_TIMEOUT_S) as response:
        body: bytes = response.read()
    return body


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _content(file: RemoteFile, body: bytes, url: str) -> bytes:
    if not file.from_python:
        return body
    try:
        return tasks_json(body.decode("utf-8"))
    except (TasksSourceError, UnicodeDecodeError) as e:
        raise FetchError(f"{url}: cannot read the tasks from it ({e}); nothing was written for {file.name}") from None


def fetch_airline_data(
    dest: str | Path,
    *,
    ref: str = DEFAULT_REF,
    download: Downloader | None = None,
    force: bool = False,
    verify: bool = True,
    on_file: Callable[[RemoteFile, str], None] | None = None,
) -> list[Path]:
    """Download every file of `AIRLINE_FILES` into `dest` and return their paths.

    A file already there with the pinned checksum is kept (unless `force`). Each file is checked before it
    is written, and written atomically, so an interrupted or refused fetch leaves no partial file.
    `on_file(file, status)` reports progress: "kept", "written". `download` defaults to `url_download`.
    """
    download = download or url_download
    folder = Path(dest)
    written: list[Path] = []
    for file in AIRLINE_FILES:
        target = folder / file.name
        if not force and target.is_file() and _sha256(target.read_bytes()) == file.sha256:
            written.append(target)
            if on_file:
                on_file(file, "kept")
            continue
        url = _RAW_URL.format(repo=UPSTREAM_REPO, ref=ref, path=file.path)
        try:
            body = download(url)
        except OSError as e:
            raise FetchError(f"could not download {file.name} from {url}: {e}; check the connection and retry") from e
        content = _content(file, body, url)
        digest = _sha256(content)
        if verify and digest != file.sha256:
            raise FetchError(
                f"{file.name} from {url} has sha256 {digest}, expected {file.sha256}: upstream changed it since "
                "the checksums were pinned. Nothing was written for it; fetch a revision that matches "
                "(--ref <commit>) or pass --no-verify to accept the new content"
            )

        def write(f: IO[bytes], content: bytes = content) -> None:
            f.write(content)

        atomic_write(target, write)
        written.append(target)
        if on_file:
            on_file(file, "written")
    return written
