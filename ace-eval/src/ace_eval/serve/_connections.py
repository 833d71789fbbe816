"""The open connections of the server, so that stopping can close the idle ones (a client keeping a connection
alive would otherwise hold the server for the socket timeout) while the requests in flight finish, and so that
background work in the server's process (assembly) can give way to the requests in flight (`wait_quiet`)."""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Protocol

__all__ = ["Connections"]


class _Handler(Protocol):
    connection: socket.socket


class Connections:
    """Which connections are open and which of them is in the middle of a request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[int, tuple[_Handler, bool]] = {}
        self._quiet = threading.Event()
        self._quiet.set()
        self.stopping = False

    def opened(self, handler: _Handler) -> None:
        with self._lock:
            self._open[id(handler)] = (handler, False)

    def busy(self, handler: _Handler) -> None:
        with self._lock:
            self._open[id(handler)] = (handler, True)
            self._quiet.clear()

    def idle(self, handler: _Handler) -> None:
        with self._lock:
            if id(handler) in self._open:
                self._open[id(handler)] = (handler, False)
            self._update_quiet()

    def closed(self, handler: _Handler) -> None:
        with self._lock:
            self._open.pop(id(handler), None)
            self._update_quiet()

    def _update_quiet(self) -> None:
        if not any(busy for _, busy in self._open.values()):
            self._quiet.set()

    def wait_quiet(self, timeout: float) -> bool:
        """Wait until no request is in flight, at most `timeout` seconds; True when none is."""
        return self._quiet.wait(timeout) if timeout > 0 else self._quiet.is_set()

    def stop(self) -> None:
        """From now on connections close after their request; idle ones are shut for reading at once (the thread
        waiting for their next request line sees the end of the stream and ends)."""
        with self._lock:
            self.stopping = True
            idle = [handler for handler, busy in self._open.values() if not busy]
        for handler in idle:
            with contextlib.suppress(OSError):  # already closed by the client
                handler.connection.shutdown(socket.SHUT_RD)

    def __len__(self) -> int:
        with self._lock:
            return len(self._open)
