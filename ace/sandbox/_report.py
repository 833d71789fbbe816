"""The sandbox's report pipe, read by the parent while the child runs.

The child's audit hook writes each refusal as one line (`token<TAB>event<TAB>reason`) to a blocking pipe; read
only after the child ended, a pipe holds about 64 KiB and the hook would block (or, non-blocking, drop what did
not fit). Read here as it arrives, nothing is dropped and the parent's memory stays bounded.
"""

from __future__ import annotations

import asyncio
import os
import secrets

__all__ = ["ReportReader"]

_READ_CHUNK = 65_536
_KEPT_LINES = 64
"""Lines of this run kept (the isolation lines come first); the rest are counted in `more`."""
_MAX_LINE = 8_192
"""The hook's lines are at most ~2 KB; a longer one is the code's, counted once as forged."""


class ReportReader:
    """The report pipe, read while the child runs: this run's lines kept up to `_KEPT_LINES` (`more` counts the
    rest), lines without the token counted as `forged`. A context manager that closes the read end."""

    def __init__(self, fd: int, token: str) -> None:
        self.fd, self.token, self._mark = fd, token, token.encode()
        self.lines: list[str] = []
        self.more = self.forged = 0
        self._partial = b""
        self._skipping = False  # inside an overlong line: not the hook's
        self._loop: asyncio.AbstractEventLoop | None = None
        os.set_blocking(fd, False)

    def __enter__(self) -> ReportReader:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()
        os.close(self.fd)

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self.fd, self._readable)

    def stop(self) -> None:
        """Stop watching the pipe and take what is left in it (the child has exited)."""
        if self._loop is not None:
            self._loop.remove_reader(self.fd)
            self._loop = None
        self._read()

    def _readable(self) -> None:
        if not self._read(16) and self._loop is not None:  # end of file: stop being woken for it
            self._loop.remove_reader(self.fd)
            self._loop = None

    def _read(self, chunks: int = 1 << 30) -> bool:
        """Read what the pipe holds (at most `chunks` chunks); `False` at its end."""
        for _ in range(chunks):
            try:
                chunk = os.read(self.fd, _READ_CHUNK)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not chunk:
                if self._partial:
                    self._line(self._partial)
                self._partial = b""
                return False
            *lines, self._partial = (self._partial + chunk).split(b"\n")
            for line in lines:
                self._line(line)
            if len(self._partial) > _MAX_LINE:
                self._line(self._partial)
                self._partial, self._skipping = b"", True
        return True

    def _line(self, line: bytes) -> None:
        if self._skipping:  # the rest of an overlong line, already counted
            self._skipping = False
            return
        mark, tab, rest = line.partition(b"\t")
        if tab and secrets.compare_digest(mark, self._mark):
            if len(self.lines) < _KEPT_LINES:
                self.lines.append(rest.decode("utf-8", errors="replace"))
            else:
                self.more += 1
        elif line:
            self.forged += 1
