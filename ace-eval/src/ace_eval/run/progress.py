"""The progress bar of long runs (stderr): done / total, errors, elapsed and remaining time; `--verbose` adds
one line per finished item."""

from __future__ import annotations

import sys
import threading
from types import TracebackType
from typing import IO, Any

from tqdm import tqdm

__all__ = ["FirstErrors", "Progress"]

_BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]"


class Progress:
    """A tqdm bar on `file` (default stderr) counting finished items and errors. Thread-safe.

    The bar shows itself only on a terminal (`show=None`); the `--verbose` lines are written either way.
    Items already finished by an earlier, interrupted run start the count (`initial`).
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
    ) -> None:
        self.description = description
        self.total = total
        self.done = initial
        self.errors = initial_errors
        self.verbose = verbose
        self._file = file if file is not None else sys.stderr
        self._lock = threading.Lock()
        self._bar: tqdm[Any] = tqdm(
            total=total,
            initial=initial,
            desc=description,
            file=self._file,
            disable=_disabled(show, self._file),
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
