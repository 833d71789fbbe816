"""The progress bar of long runs (stderr): done / total, errors, elapsed and remaining time; `--verbose` adds
one line per finished item."""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import IO, Any

from tqdm import tqdm

__all__ = ["FirstErrors", "Progress"]

_BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]"
HEARTBEAT_SECONDS = 10.0
"""Where the bar cannot show (stderr is not a terminal: a log, CI), a line at most this often as items finish."""


class Progress:
    """A tqdm bar on `file` (default stderr) counting finished items and errors. Thread-safe.

    The bar shows itself only on a terminal (`show=None`); elsewhere (a log file, CI) a line `done/total` is
    written as items finish, at most every `heartbeat` seconds, and once at the end if one was. `show=False` is
    silent. The `--verbose` lines are written either way. Items already finished by an earlier, interrupted run
    start the count (`initial`).
    """

    def __init__(
        self,
        description: str,
        total: int,
        *,
        initial: int = 0,
        initial_errors: int = 0,
        verbose: bool = False,
        show: bool | None = None,
        file: IO[str] | None = None,
        heartbeat: float | None = None,
    ) -> None:
        self.description = description
        self.total = total
        self.done = initial
        self.errors = initial_errors
        self.verbose = verbose
        self._file = file if file is not None else sys.stderr
        self._lock = threading.Lock()
        disabled = _disabled(show, self._file)
        self._heartbeat = (HEARTBEAT_SECONDS if heartbeat is None else heartbeat) if disabled and show is None else None
        self._started = self._last_line = time.monotonic()
        self._lines = 0
        self._bar: tqdm[Any] = tqdm(
            total=total,
            initial=initial,
            desc=description,
            file=self._file,
            disable=disabled,
            bar_format=_BAR_FORMAT,
            dynamic_ncols=True,
            leave=True,
        )
        self._show_errors()

    def advance(self, *, error: bool = False, line: str | None = None) -> None:
        """One more item finished (`error` when it failed); with `verbose`, print `line` above the bar."""
        with self._lock:
            self.done += 1
            self.errors += error
            if self.verbose and line is not None:
                self._bar.write(f"[{self.done}/{self.total}] {line}", file=self._file)
            self._bar.update(1)
            self._show_errors()
            self._heartbeat_line(line)

    def _heartbeat_line(self, line: str | None) -> None:
        """Without a bar: `description: done/total` when `heartbeat` seconds passed since the last such line, and
        at the end when one was written (under `_lock`)."""
        if self._heartbeat is None or self.verbose:
            return
        now = time.monotonic()
        finished = self.done >= self.total
        if now - self._last_line < self._heartbeat and not (finished and self._lines):
            return
        self._last_line = now
        self._lines += 1
        errors = f", {self.errors} errors" if self.errors else ""
        last = f"; last: {line}" if line else ""
        elapsed = _clock(now - self._started)
        print(f"{self.description}: {self.done}/{self.total} done{errors} ({elapsed} elapsed){last}", file=self._file)

    def note(self, line: str, *, always: bool = False) -> None:
        """A message above the bar (only with `verbose`, unless `always`)."""
        if self.verbose or always:
            with self._lock:
                self._bar.write(line, file=self._file)

    def close(self) -> None:
        """Finish the bar."""
        with self._lock:
            self._bar.close()

    def _show_errors(self) -> None:
        self._bar.set_postfix_str(f"errors={self.errors}", refresh=False)

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{secs:02d}" if minutes >= 60 else f"{minutes:02d}:{secs:02d}"


def _disabled(show: bool | None, file: IO[str]) -> bool:
    if show is not None:
        return not show
    isatty = getattr(file, "isatty", None)
    return not (callable(isatty) and isatty())


class FirstErrors:
    """Prints the first error of each kind above the bar, once, also without `--verbose` (which prints them all)."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._seen: set[str] = set()

    def see(self, kind: str, where: str, error: str) -> None:
        """Report `error` (of `kind`, on `where`) if it is the first of its kind."""
        if self._progress.verbose or kind in self._seen:
            return
        self._seen.add(kind)
        if kind == "stopped":  # a budget or retry limit: its edits stand, as the summary says
            head, rest = f"stopped early on {where}: {error}", "further sessions stopped early are counted"
        else:
            head, rest = f"error ({kind}) on {where}: {error}", "further errors of this kind are counted"
        self._progress.note(f"{head}\n  ({rest}, not printed; --verbose prints each)", always=True)
